"""hsskern: kernel SVMs on millions of points without forming the n x n kernel matrix.

scikit-learn's SVMs, with their signatures, defaults and answers (change the import):
:class:`SVC` (its grid search: :class:`SVCCV`), :class:`SVR`, :class:`NuSVC`,
:class:`NuSVR`, :class:`OneClassSVM`; each fit picks its route and names it in ``route_``.
Estimators with hsskern's routes in view: :class:`HSSSVC`, :class:`HSSSVCCV` (HSS + ULV + dual ADMM),
:class:`NystromSVC`, :class:`NystromSVCCV` (Nystrom features + semismooth Newton / LIBLINEAR),
:class:`SparseCholeskySVC` (compact kernel + sparse Cholesky feature map),
:class:`FPCClassifier`, :class:`FPCClassifierCV` (polynomial features + proximal ADMM);
regression on the same HSS factor: :class:`HSSKernelRidge`, :class:`HSSKernelRidgeCV` (kernel
ridge, direct or exact by preconditioned CG), :class:`HSSGaussianProcessRegressor` (likelihood
from the factor's logdet), :class:`HSSSVR`, :class:`HSSSVRCV` (epsilon-SVR: dual ADMM, then LIBSVM's exact
answer by decomposition).
Building blocks: :func:`kernel_operator`, :func:`hsskern.hss.compress`,
:class:`DenseCholeskyFactor`, :class:`HSSOptions`.
"""
from .estimators import (ExactSVC, FPCClassifier, FPCClassifierCV, HSSGaussianProcessRegressor,
                         HSSKernelRidge, HSSKernelRidgeCV, HSSSVC, HSSSVCCV, HSSSVR, HSSSVRCV,
                         NuSVC, NuSVR, NystromSVC, NystromSVCCV, OneClassSVM,
                         SparseCholeskySVC, SVC, SVCCV, SVR)
from .exceptions import (HsskernError, MemoryBudgetError, NotPositiveDefiniteError,
                         TimeBudgetError)
from .factors import DenseCholeskyFactor
from .kernels import Kernel, KernelOperator, kernel_operator, make_kernel
from .lowrank import NystromFeatures
from .options import (ExactSVCOptions, GPOptions, HSSOptions, HSSSVCOptions, HSSSVROptions,
                      NystromSVCOptions, OneClassSVMOptions, RidgeOptions)
from .sparse import SparseCholeskyFactor
from ._version import __version__

__all__ = [
    "SVC", "SVCCV", "SVR", "HSSSVC", "HSSSVCCV", "ExactSVC", "NystromSVC", "NystromSVCCV", "NystromFeatures",
    "SparseCholeskySVC", "FPCClassifier", "FPCClassifierCV",
    "HSSKernelRidge", "HSSKernelRidgeCV", "HSSGaussianProcessRegressor", "HSSSVR", "HSSSVRCV",
    "OneClassSVM", "NuSVC", "NuSVR",
    "kernel_operator", "make_kernel", "Kernel", "KernelOperator",
    "HSSOptions", "HSSSVCOptions", "HSSSVROptions", "ExactSVCOptions", "RidgeOptions",
    "GPOptions", "NystromSVCOptions", "OneClassSVMOptions", "DenseCholeskyFactor",
    "SparseCholeskyFactor",
    "HsskernError", "MemoryBudgetError", "NotPositiveDefiniteError", "TimeBudgetError",
]
