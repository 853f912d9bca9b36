"""scikit-learn estimators, one per backend."""
from .fpc import FPCClassifier, FPCClassifierCV
from .hss_svc import HSSSVC, HSSSVCCV
from .nystrom import NystromSVC, NystromSVCCV
from .sparse_cholesky import SparseCholeskySVC

__all__ = ["HSSSVC", "HSSSVCCV", "NystromSVC", "NystromSVCCV", "SparseCholeskySVC",
           "FPCClassifier", "FPCClassifierCV"]
