"""Compactly supported kernels: sparse Gram assembly and sparse Cholesky factors."""
from .cholesky import SparseCholeskyFactor, has_cholmod, sparse_cholesky, symbolic_nnz
from .gram import compact_cross_gram, compact_gram, estimate_gram
from .svm import linear_svm_on_factor

__all__ = ["SparseCholeskyFactor", "sparse_cholesky", "symbolic_nnz", "has_cholmod",
           "compact_gram", "compact_cross_gram", "estimate_gram", "linear_svm_on_factor"]
