"""HSS approximation of a kernel matrix (HSS-ANN compression) and its ULV factorization.

>>> H = compress(K, HSSOptions(rel_tol=1e-2))   # K: a KernelOperator
>>> F = H.factor(beta=100.0)                     # ULV of H + beta I, reusable for any rhs
>>> x = F.solve(b)
"""
from ..options import HSSOptions
from .compress import compress
from .matrix import HSSMatrix
from .memory import estimate_memory
from .ulv import ULVFactor

__all__ = ["HSSOptions", "compress", "HSSMatrix", "ULVFactor", "estimate_memory"]
