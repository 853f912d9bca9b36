"""scikit-learn estimators, one per backend."""
from .fpc import FPCClassifier, FPCClassifierCV
from .hss_svc import HSSSVC, HSSSVCCV
from .nystrom import NystromSVC, NystromSVCCV

__all__ = ["HSSSVC", "HSSSVCCV", "NystromSVC", "NystromSVCCV", "FPCClassifier",
           "FPCClassifierCV"]
