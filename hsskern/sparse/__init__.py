"""Compactly supported kernels: sparse Gram assembly and sparse Cholesky factors."""
from .cholesky import SparseCholeskyFactor, has_cholmod, sparse_cholesky, symbolic_nnz
from .gram import (assemble_compact_gram, check_gram_budget, compact_cross_gram,
                   compact_cross_gram_apply, compact_gram, compact_kernel, estimate_gram)
from .svm import linear_svm_on_factor

__all__ = ["SparseCholeskyFactor", "sparse_cholesky", "symbolic_nnz", "has_cholmod",
           "compact_gram", "compact_cross_gram", "compact_cross_gram_apply", "compact_kernel",
           "assemble_compact_gram", "check_gram_budget", "estimate_gram",
           "linear_svm_on_factor"]
