"""Kernel functions and the matrix-free :class:`KernelOperator` (dense points) and
:class:`SparseRowsKernelOperator` (scipy sparse rows)."""
from .functions import KERNELS, Kernel, make_kernel
from ._surface import ShiftedKernelOperator
from .operator import (CrossKernelOperator, KernelOperator, StoredKernelOperator, distinct_rows,
                       gaussian_expansion, single_far)
from .factory import frozen, kernel_operator
from .sparse_rows import (SparseRowsCrossKernelOperator, SparseRowsKernelOperator,
                          StoredSparseRowsKernelOperator, rows_operator)

__all__ = ["KERNELS", "Kernel", "make_kernel", "KernelOperator", "ShiftedKernelOperator",
           "CrossKernelOperator", "StoredKernelOperator", "distinct_rows", "gaussian_expansion",
           "single_far", "kernel_operator", "frozen",
           "SparseRowsKernelOperator", "SparseRowsCrossKernelOperator",
           "StoredSparseRowsKernelOperator", "rows_operator"]
