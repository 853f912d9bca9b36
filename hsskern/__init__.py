"""hsskern: kernel SVMs on millions of points without forming the n x n kernel matrix."""
from .exceptions import (CompressionError, HsskernError, MemoryBudgetError,
                         NotPositiveDefiniteError)
from .kernels import Kernel, KernelOperator, kernel_operator, make_kernel

__version__ = "0.1.0"

__all__ = [
    "kernel_operator", "make_kernel", "Kernel", "KernelOperator",
    "HsskernError", "MemoryBudgetError", "CompressionError", "NotPositiveDefiniteError",
]
