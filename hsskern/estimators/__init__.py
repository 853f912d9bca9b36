"""scikit-learn estimators, one per backend (classifiers, and kernel ridge / GP / SVR regressors)."""
from .exact_svc import ExactSVC
from .fpc import FPCClassifier, FPCClassifierCV
from .gaussian_process import HSSGaussianProcessRegressor
from .hss_svc import HSSSVC, HSSSVCCV
from .kernel_ridge import HSSKernelRidge, HSSKernelRidgeCV
from .nu_svm import NuSVC, NuSVR
from .nystrom import NystromSVC, NystromSVCCV
from .one_class import OneClassSVM
from .sparse_cholesky import SparseCholeskySVC
from .svc import SVC, SVCCV
from .svr import SVR, HSSSVR, HSSSVRCV

__all__ = ["SVC", "SVCCV", "SVR", "ExactSVC", "HSSSVC", "HSSSVCCV", "NystromSVC", "NystromSVCCV", "SparseCholeskySVC",
           "FPCClassifier", "FPCClassifierCV", "HSSKernelRidge", "HSSKernelRidgeCV",
           "HSSGaussianProcessRegressor", "HSSSVR", "HSSSVRCV", "OneClassSVM", "NuSVC",
           "NuSVR"]
