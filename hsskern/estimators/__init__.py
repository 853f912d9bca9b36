"""scikit-learn estimators, one per backend."""
from .fpc import FPCClassifier, FPCClassifierCV
from .hss_svc import HSSSVC, HSSSVCCV

__all__ = ["HSSSVC", "HSSSVCCV", "FPCClassifier", "FPCClassifierCV"]
