# cython: language_level=3
"""Symbolic Cholesky analysis: nnz(L) for a given ordering, in O(nnz(L)) time and O(n) memory.

Used to refuse a factorization that would not fit *before* CHOLMOD allocates it. Row k of L
is the union of the elimination-tree paths from each i < k with A[i, k] != 0 up to k (the
"row subtree"), so marking nodes while climbing counts it exactly (Davis, Direct Methods for
Sparse Linear Systems, 4.1-4.3; cs_etree). Inputs are trusted: a CSC pattern of the
*permuted* symmetric matrix with both triangles stored.
"""
import numpy as np


def cholesky_nnz(const int[::1] indptr, const int[::1] indices):
    """Number of nonzeros of the Cholesky factor L of a symmetric pattern (diagonal included)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, k, p, i, inext
    cdef long long total = 0, count
    parent_a = np.full(n, -1, dtype=np.intp)
    ancestor_a = np.full(n, -1, dtype=np.intp)
    mark_a = np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] parent = parent_a
    cdef Py_ssize_t[::1] ancestor = ancestor_a
    cdef Py_ssize_t[::1] mark = mark_a
    with nogil:
        # elimination tree with path compression through ``ancestor``
        for k in range(n):
            for p in range(indptr[k], indptr[k + 1]):
                i = indices[p]
                while i != -1 and i < k:
                    inext = ancestor[i]
                    ancestor[i] = k
                    if inext == -1:
                        parent[i] = k
                    i = inext
        # row counts: climb from each i < k in column k until a node already marked for k
        for k in range(n):
            mark[k] = k
            count = 1
            for p in range(indptr[k], indptr[k + 1]):
                i = indices[p]
                if i >= k:
                    continue
                while mark[i] != k:
                    mark[i] = k
                    count += 1
                    i = parent[i]
            total += count
    return int(total)
