# cython: language_level=3
"""Compressed-column assembly of compact-kernel Gram matrices from neighbour pair lists.

The k-d tree hands back pairs (i, j) in traversal order. Going through numpy for the
distances, the kernel values and the (i, j) -> CSC conversion costs a sort and several
nnz-sized temporaries; here it is one counting pass and one fill pass over the pairs.
The pair kernels are the compact Gaussian of ``hsskern.kernels._eval`` (same formula, same
params layout: [1/(2 sigma^2), 1/(3 sigma), l]), evaluated per pair because the tile routines
there are for dense blocks.

Inputs are trusted: C-contiguous float64 points, int64 pairs within range.
"""
from cython.parallel cimport prange, parallel
from libc.math cimport exp, sqrt, pow
from libc.stdlib cimport malloc, free

import numpy as np
cimport numpy as cnp

from ..utils._memory import format_bytes

cnp.import_array()


def _no_scratch(Py_ssize_t nbytes, what="scratch"):
    """MemoryError's message when malloc fails for ``nbytes`` of scratch."""
    return (f"could not allocate {format_bytes(nbytes)} for {what} of the sparse Gram "
            f"assembly (the process is out of memory or address space)")


ctypedef fused index_t:
    int
    long long


cdef inline double _compact(const double* a, const double* b, Py_ssize_t d,
                            const double* p) noexcept nogil:
    cdef double r2 = 0.0, t
    cdef Py_ssize_t k
    for k in range(d):
        t = a[k] - b[k]
        r2 = r2 + t * t
    t = 1.0 - sqrt(r2) * p[1]
    if t <= 0.0:
        return 0.0
    return pow(t, p[2]) * exp(-p[0] * r2)


def pair_values(const double[:, ::1] A, const double[:, ::1] B, const Py_ssize_t[:, ::1] pairs,
                const double[::1] params, double[::1] out):
    """out[t] = k(A[pairs[t, 0]], B[pairs[t, 1]]) for the compact Gaussian."""
    cdef Py_ssize_t npairs = pairs.shape[0], d = A.shape[1], t
    cdef const double* p = &params[0]
    if npairs == 0:
        return
    if npairs < 20000:  # a thread team costs more than it saves on small lists
        with nogil:
            for t in range(npairs):
                out[t] = _compact(&A[pairs[t, 0], 0], &B[pairs[t, 1], 0], d, p)
        return
    for t in prange(npairs, nogil=True, schedule="static"):
        out[t] = _compact(&A[pairs[t, 0], 0], &B[pairs[t, 1], 0], d, p)


def column_counts(const Py_ssize_t[:, ::1] pairs, const double[::1] values, Py_ssize_t n,
                  bint symmetric, Py_ssize_t[::1] counts):
    """counts[c] += nonzero entries the pairs put in column c (mirrored too if symmetric)."""
    cdef Py_ssize_t t, npairs = pairs.shape[0]
    with nogil:
        for t in range(npairs):
            if values[t] != 0.0:
                counts[pairs[t, 1]] += 1
                if symmetric:
                    counts[pairs[t, 0]] += 1


def fill_columns(const Py_ssize_t[:, ::1] pairs, const double[::1] values, bint symmetric,
                 bint unit_diagonal, index_t[::1] indptr, index_t[::1] indices,
                 double[::1] data):
    """Scatter the nonzero pair values into CSC arrays, then sort every column by row index.

    ``indptr`` must already hold the column starts (from :func:`column_counts`, plus one
    diagonal entry per column when ``unit_diagonal``).
    """
    cdef Py_ssize_t t, c, i, j, npairs = pairs.shape[0], ncols = indptr.shape[0] - 1
    cdef Py_ssize_t maxlen = 0
    cdef index_t* pos = <index_t*> malloc((ncols + 1) * sizeof(index_t))
    if pos == NULL:
        raise MemoryError(_no_scratch((ncols + 1) * sizeof(index_t), "the column positions"))
    with nogil:
        for c in range(ncols):
            pos[c] = indptr[c]
            if indptr[c + 1] - indptr[c] > maxlen:
                maxlen = indptr[c + 1] - indptr[c]
            if unit_diagonal:
                indices[pos[c]] = <index_t> c
                data[pos[c]] = 1.0
                pos[c] += 1
        for t in range(npairs):
            if values[t] != 0.0:
                i = pairs[t, 0]
                j = pairs[t, 1]
                indices[pos[j]] = <index_t> i
                data[pos[j]] = values[t]
                pos[j] += 1
                if symmetric:
                    indices[pos[i]] = <index_t> j
                    data[pos[i]] = values[t]
                    pos[i] += 1
    free(pos)
    _sort_columns(indptr, indices, data, maxlen)


cdef int _sort_columns(index_t[::1] indptr, index_t[::1] indices, double[::1] data,
                       Py_ssize_t maxlen) except -1:
    """Sort each column's (row, value) pairs by row; per-thread scratch, columns in parallel."""
    cdef Py_ssize_t ncols = indptr.shape[0] - 1, c
    cdef index_t* ki
    cdef double* kv
    cdef int no_scratch = 0
    cdef int* failed = &no_scratch  # set by a thread whose scratch malloc failed
    if maxlen <= 1:
        return 0
    if indptr[ncols] < 20000:
        ki = <index_t*> malloc(maxlen * sizeof(index_t))
        kv = <double*> malloc(maxlen * sizeof(double))
        if ki == NULL or kv == NULL:
            free(ki)
            free(kv)
            raise MemoryError(_no_scratch(maxlen * (sizeof(index_t) + 8)))
        with nogil:
            for c in range(ncols):
                _merge_sort(&indices[indptr[c]], &data[indptr[c]], indptr[c + 1] - indptr[c],
                            ki, kv)
        free(ki)
        free(kv)
        return 0
    with nogil, parallel():
        ki = <index_t*> malloc(maxlen * sizeof(index_t))
        kv = <double*> malloc(maxlen * sizeof(double))
        if ki == NULL or kv == NULL:
            failed[0] = 1
        for c in prange(ncols, schedule="dynamic", chunksize=256):
            if ki == NULL or kv == NULL:  # raised below
                continue
            _merge_sort(&indices[indptr[c]], &data[indptr[c]], indptr[c + 1] - indptr[c],
                        ki, kv)
        free(ki)
        free(kv)
    if no_scratch:
        raise MemoryError(_no_scratch(maxlen * (sizeof(index_t) + 8),
                                      "a thread's merge buffer"))
    return 0


cdef void _merge_sort(index_t* idx, double* val, Py_ssize_t n, index_t* ti,
                      double* tv) noexcept nogil:
    """Bottom-up merge sort of idx (carrying val), insertion sort for short runs."""
    cdef Py_ssize_t i, j, k, w, lo, mid, hi, a, b
    cdef index_t x
    cdef double y
    cdef Py_ssize_t RUN = 16
    lo = 0
    while lo < n:
        hi = lo + RUN if lo + RUN < n else n
        for i in range(lo + 1, hi):
            x = idx[i]
            y = val[i]
            j = i - 1
            while j >= lo and idx[j] > x:
                idx[j + 1] = idx[j]
                val[j + 1] = val[j]
                j -= 1
            idx[j + 1] = x
            val[j + 1] = y
        lo = hi
    w = RUN
    while w < n:
        lo = 0
        while lo < n - w:
            mid = lo + w
            hi = lo + 2 * w if lo + 2 * w < n else n
            if idx[mid - 1] > idx[mid]:
                a = lo
                b = mid
                k = 0
                while a < mid and b < hi:
                    if idx[a] <= idx[b]:
                        ti[k] = idx[a]
                        tv[k] = val[a]
                        a += 1
                    else:
                        ti[k] = idx[b]
                        tv[k] = val[b]
                        b += 1
                    k += 1
                while a < mid:
                    ti[k] = idx[a]
                    tv[k] = val[a]
                    a += 1
                    k += 1
                while b < hi:
                    ti[k] = idx[b]
                    tv[k] = val[b]
                    b += 1
                    k += 1
                for i in range(k):
                    idx[lo + i] = ti[i]
                    val[lo + i] = tv[i]
            lo += 2 * w
        w *= 2
