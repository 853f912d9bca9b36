"""Kernel functions and the matrix-free :class:`KernelOperator`."""
from .functions import KERNELS, Kernel, make_kernel
from .operator import (CrossKernelOperator, KernelOperator, ShiftedKernelOperator,
                       StoredKernelOperator, kernel_operator)

__all__ = ["KERNELS", "Kernel", "make_kernel", "KernelOperator", "ShiftedKernelOperator",
           "CrossKernelOperator", "StoredKernelOperator", "kernel_operator"]
