"""Solvers, on two floors: :mod:`.engines` solve one problem each (the exact decomposition,
the cached SMO, the dual ADMMs, the semismooth Newton, FPC's ADMM, LIBLINEAR, the dense GP and
ridge solves) and know nothing of paths; :mod:`.paths` hold the path protocol's backends,
which prepare once and walk a C (or nu) grid through the engines (:mod:`.paths.path`), and
the plan that decides a fit's route (:mod:`.paths.plan`)."""
from .engines.admm import ADMMResult, default_beta, svm_dual_admm, svm_dual_admm_path
from .engines.decomposition import Decomposition, DecompositionOptions
from .engines.exact import ExactResult, solve_block
from .engines.fpc_admm import FPCADMMResult, fpc_admm, fpc_factor, gram_matrix, hinge_prox
from .engines.interface import BlockEngine, CachedEngine, DualProblem, DualStart
from .engines.liblinear import l1svm_liblinear
from .engines.ssn import (NewtonPathResult, NewtonResult, l2svm_newton, l2svm_newton_path,
                          l2svm_objective)
from .paths.fpc_path import FPCBackend
from .paths.hss_path import HSSBackend, HSSProblem, hss_svm_path, prepare_hss
from .paths.nystrom_path import NystromBackend
from .paths.path import FeatureModel, KernelExpansion, PathSolution, check_Cs
from .paths.ridge_path import RidgeBackend, ridge_path
from .paths.sparse_path import SparseCholeskyBackend
from .paths.svr_path import SVRBackend, hss_svr_path, svr_dual_admm

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
