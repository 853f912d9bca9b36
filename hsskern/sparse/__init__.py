"""Compactly supported kernels: sparse Gram assembly and sparse Cholesky factors."""
