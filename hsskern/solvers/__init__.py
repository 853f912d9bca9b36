"""Solvers: plain functions over factors or feature matrices, returning result objects, and
the path protocol's backends (prepare once, solve every C, decide; :mod:`.path`)."""
from .admm import ADMMResult, default_beta, svm_dual_admm, svm_dual_admm_path
from .decomposition import Decomposition, DecompositionOptions
from .engines import BlockEngine, CachedEngine, DualProblem, DualStart
from .fpc_admm import FPCADMMResult, fpc_admm, fpc_factor, gram_matrix, hinge_prox
from .fpc_path import FPCBackend
from .hss_path import HSSBackend, HSSProblem, hss_svm_path, prepare_hss
from .liblinear import l1svm_liblinear
from .nystrom_path import NystromBackend
from .path import FeatureModel, KernelExpansion, PathSolution, check_Cs
from .exact import ExactResult, solve_block
from .ridge_path import RidgeBackend, ridge_path
from .sparse_path import SparseCholeskyBackend
from .svr_path import SVRBackend, hss_svr_path, svr_dual_admm
from .ssn import (NewtonPathResult, NewtonResult, l2svm_newton, l2svm_newton_path,
                  l2svm_objective)

__all__ = ["ADMMResult", "default_beta", "svm_dual_admm", "svm_dual_admm_path",
           "FPCADMMResult", "fpc_admm", "fpc_factor", "gram_matrix", "hinge_prox",
           "NewtonResult", "NewtonPathResult", "l2svm_newton", "l2svm_newton_path",
           "l2svm_objective", "l1svm_liblinear", "ExactResult", "solve_block",
           "Decomposition", "DecompositionOptions", "DualProblem", "DualStart", "BlockEngine",
           "CachedEngine",
           "PathSolution", "KernelExpansion", "FeatureModel", "check_Cs",
           "HSSBackend", "HSSProblem", "prepare_hss", "hss_svm_path", "NystromBackend",
           "SparseCholeskyBackend", "FPCBackend", "RidgeBackend", "ridge_path",
           "SVRBackend", "hss_svr_path", "svr_dual_admm"]
