"""Solvers: plain functions over factors or feature matrices, returning result objects."""
from .admm import ADMMResult, default_beta, svm_dual_admm, svm_dual_admm_path
from .fpc_admm import FPCADMMResult, fpc_admm, fpc_factor, hinge_prox

__all__ = ["ADMMResult", "default_beta", "svm_dual_admm", "svm_dual_admm_path",
           "FPCADMMResult", "fpc_admm", "fpc_factor", "hinge_prox"]
