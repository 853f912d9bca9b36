# cython: language_level=3
"""Blocked kernel evaluation.

Every public routine here computes entries k(a_i, b_j) tile by tile and never holds more than
one (row-tile x column-tile) buffer per thread. Inputs are trusted: C-contiguous float64,
indices in range (validated by the Python layer).

Distances are accumulated directly, sum_k (a_ik - b_jk)^2, rather than through the
|a|^2 + |b|^2 - 2 a.b expansion: the expansion loses all relative accuracy for nearby points
with large norms, and HSS compression and the ULV factor need the small entries right. The
columns are read from the transposed point array so the inner loop is contiguous and
vectorizes (and exp() vectorizes through libmvec under -ffast-math).
"""
from cython.parallel cimport prange, parallel
from libc.math cimport exp, sqrt, pow
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

cdef enum:
    GAUSSIAN = 0
    LAPLACIAN = 1
    POLYNOMIAL = 2
    COMPACT = 3

KIND_CODES = {"gaussian": GAUSSIAN, "laplacian": LAPLACIAN,
              "polynomial": POLYNOMIAL, "compact_gaussian": COMPACT}

# rows per tile; columns per tile are chosen by the caller from the memory budget
DEF ROW_TILE = 32


DEF POW_CHUNK = 64


cdef inline void _ipow_inplace(double* out, Py_ssize_t m, double c, int e) noexcept nogil:
    """out[j] = (c + out[j])^e for an integer e >= 1, by exponentiation by squaring.

    Generic pow() costs ~20-40 ns an element and does not vectorize; squaring takes
    floor(log2 e) + popcount(e) - 1 multiplies that do. The bit loop is outside the element loop,
    over chunks held on the stack, so every inner loop is a plain vectorizable multiply. Results
    differ from pow() by a few ulps (one rounding per multiply instead of one overall).
    """
    cdef double base[POW_CHUNK]
    cdef Py_ssize_t j0, j, w
    cdef int bits
    j0 = 0
    while j0 < m:
        w = m - j0
        if w > POW_CHUNK:
            w = POW_CHUNK
        for j in range(w):
            base[j] = c + out[j0 + j]
        bits = e
        # lowest set bit: start the product from the right power of the base
        while not (bits & 1):
            for j in range(w):
                base[j] = base[j] * base[j]
            bits >>= 1
        for j in range(w):
            out[j0 + j] = base[j]
        bits >>= 1
        while bits:
            for j in range(w):
                base[j] = base[j] * base[j]
            if bits & 1:
                for j in range(w):
                    out[j0 + j] *= base[j]
            bits >>= 1
        j0 += w


cdef inline void _row(int kind, const double* p, const double* a, const double* bt,
                      Py_ssize_t ldb, Py_ssize_t m, Py_ssize_t d, double* out) noexcept nogil:
    """out[j] = k(a, b_j) for j < m, where b_j is column j of bt (d x m, row stride ldb)."""
    cdef Py_ssize_t j, k
    cdef double ak, t, r, s
    cdef const double* bk
    memset(out, 0, m * sizeof(double))
    if kind == POLYNOMIAL:
        for k in range(d):
            ak = a[k]
            bk = bt + k * ldb
            for j in range(m):
                out[j] += ak * bk[j]
        if p[1] == 1.0:
            for j in range(m):
                out[j] = p[0] + out[j]
        elif p[1] == 2.0:
            for j in range(m):
                t = p[0] + out[j]
                out[j] = t * t
        elif p[1] >= 3.0 and p[1] <= 64.0 and p[1] == <double> (<int> p[1]):
            _ipow_inplace(out, m, p[0], <int> p[1])
        else:
            for j in range(m):
                out[j] = pow(p[0] + out[j], p[1])
        return
    for k in range(d):
        ak = a[k]
        bk = bt + k * ldb
        for j in range(m):
            t = ak - bk[j]
            out[j] += t * t
    if kind == GAUSSIAN:
        s = -p[0]
        for j in range(m):
            out[j] = exp(s * out[j])
    elif kind == LAPLACIAN:
        s = -p[0]
        for j in range(m):
            out[j] = exp(s * sqrt(out[j]))
    else:  # COMPACT: (1 - r / (3 sigma))_+^l exp(-r^2 / (2 sigma^2))
        for j in range(m):
            r = sqrt(out[j])
            t = 1.0 - r * p[1]
            if t > 0.0:
                out[j] = pow(t, p[2]) * exp(-p[0] * out[j])
            else:
                out[j] = 0.0


def block(int kind, const double[::1] params, const double[:, ::1] A,
          const double[:, ::1] BT, double[:, ::1] out, bint parallel_ok=True):
    """out[i, j] = k(A[i], BT[:, j]) for a dense block (A: m x d, BT: d x n)."""
    cdef Py_ssize_t m = A.shape[0], n = BT.shape[1], d = A.shape[1]
    cdef Py_ssize_t i
    cdef const double* p = &params[0]
    if m == 0 or n == 0:
        return
    if parallel_ok and m * n * (d + 8) > 200000:
        for i in prange(m, nogil=True, schedule="static"):
            _row(kind, p, &A[i, 0], &BT[0, 0], n, n, d, &out[i, 0])
    else:
        with nogil:
            for i in range(m):
                _row(kind, p, &A[i, 0], &BT[0, 0], n, n, d, &out[i, 0])


def gather_block(int kind, const double[::1] params, const double[:, ::1] X,
                 const Py_ssize_t[::1] I, const Py_ssize_t[::1] J, double[:, ::1] out):
    """out[a, b] = k(X[I[a]], X[J[b]]) without forming anything larger than the block.

    This is the entry extractor HSS compression calls for many small blocks, so it gathers
    rows and transposed columns into scratch buffers itself instead of going through numpy
    fancy indexing.
    """
    cdef Py_ssize_t m = I.shape[0], n = J.shape[0], d = X.shape[1]
    cdef Py_ssize_t a, b, k
    cdef const double* p = &params[0]
    cdef double* bt
    cdef double* rows
    if m == 0 or n == 0:
        return
    with nogil:
        bt = <double*> malloc(d * n * sizeof(double))
        rows = <double*> malloc(d * m * sizeof(double))
        for b in range(n):
            for k in range(d):
                bt[k * n + b] = X[J[b], k]
        for a in range(m):
            for k in range(d):
                rows[a * d + k] = X[I[a], k]
        if m * n * (d + 8) > 200000:
            for a in prange(m, schedule="static"):
                _row(kind, p, rows + a * d, bt, n, n, d, &out[a, 0])
        else:
            for a in range(m):
                _row(kind, p, rows + a * d, bt, n, n, d, &out[a, 0])
        free(bt)
        free(rows)


def matmat(int kind, const double[::1] params, const double[:, ::1] A,
           const double[:, ::1] BT, const double[:, ::1] V, double[:, ::1] out,
           Py_ssize_t col_tile):
    """out = K(A, B) @ V, tile by tile; K(A, B) is never formed.

    A: m x d rows, BT: d x n transposed columns, V: n x r, out: m x r (overwritten).
    Each thread owns a ROW_TILE x col_tile scratch tile and whole output rows, so there are
    no write conflicts and extra memory is n_threads * ROW_TILE * col_tile doubles.
    """
    cdef Py_ssize_t m = A.shape[0], n = BT.shape[1], d = A.shape[1], r = V.shape[1]
    cdef Py_ssize_t n_row_tiles = (m + ROW_TILE - 1) // ROW_TILE
    cdef Py_ssize_t t, i0, i1, i, j0, j1, j, c, w
    cdef const double* p = &params[0]
    cdef double* tile
    cdef double* orow
    cdef const double* vrow
    cdef double acc, kij
    if m == 0 or r == 0:
        return
    out[:, :] = 0.0
    if n == 0:
        return
    if col_tile > n:
        col_tile = n
    with nogil, parallel():
        tile = <double*> malloc(ROW_TILE * col_tile * sizeof(double))
        for t in prange(n_row_tiles, schedule="dynamic"):
            i0 = t * ROW_TILE
            i1 = i0 + ROW_TILE
            if i1 > m:
                i1 = m
            j0 = 0
            while j0 < n:
                j1 = j0 + col_tile
                if j1 > n:
                    j1 = n
                w = j1 - j0
                for i in range(i0, i1):
                    _row(kind, p, &A[i, 0], &BT[0, j0], n, w, d, tile + (i - i0) * col_tile)
                if r == 1:
                    for i in range(i0, i1):
                        acc = 0.0
                        orow = tile + (i - i0) * col_tile
                        for j in range(w):
                            acc = acc + orow[j] * V[j0 + j, 0]
                        out[i, 0] += acc
                else:
                    for i in range(i0, i1):
                        orow = &out[i, 0]
                        for j in range(w):
                            kij = tile[(i - i0) * col_tile + j]
                            vrow = &V[j0 + j, 0]
                            for c in range(r):
                                orow[c] += kij * vrow[c]
                j0 = j1
        free(tile)
