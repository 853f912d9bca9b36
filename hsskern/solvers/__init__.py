"""Solvers: plain functions over factors or feature matrices, returning result objects."""
from .admm import ADMMResult, default_beta, svm_dual_admm, svm_dual_admm_path
from .fpc_admm import FPCADMMResult, fpc_admm, fpc_factor, hinge_prox
from .liblinear import l1svm_liblinear
from .refine import RefineResult, refine_exact
from .ssn import (NewtonPathResult, NewtonResult, l2svm_newton, l2svm_newton_path,
                  l2svm_objective)

__all__ = ["ADMMResult", "default_beta", "svm_dual_admm", "svm_dual_admm_path",
           "FPCADMMResult", "fpc_admm", "fpc_factor", "hinge_prox",
           "NewtonResult", "NewtonPathResult", "l2svm_newton", "l2svm_newton_path",
           "l2svm_objective", "l1svm_liblinear", "RefineResult", "refine_exact"]
