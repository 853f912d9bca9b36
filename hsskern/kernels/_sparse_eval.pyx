# cython: language_level=3
"""Kernel entries straight from sparse (CSR) rows.

A block K(Y[I], X[J]) is computed row by row: the inner products y_i . x_j of one row i with
every column point come from an inverted index of X[J] (for each feature k, the positions b
of the column points that have it, with their values, built once per block by
:func:`columns`): row i walks its own nonzeros and, for each, the list of its feature.
That costs sum_k nnz_k(Y[I]) nnz_k(X[J]) multiply-adds, never more than the
|I| nnz(X[J]) of dotting every column row against a dense copy of row i, and as little as a
fraction `density` of it on sparse data (only the pairs of nonzeros that meet are touched).

The kernel is then a function of (|y_i|^2, |x_j|^2, y_i . x_j): the squared distance is
|y|^2 + |x|^2 - 2 y.x (clamped at 0; exactly 0 for a point against itself). Its absolute
rounding error is below e = (nnz_y + nnz_x + 4) u (|y|^2 + |x|^2) (u the unit roundoff;
both norms and the dot are sums of at most that many terms). A pair whose entry that error
could move by more than ``tol`` relatively -- gamma e for the Gaussian, gamma e / |y - x|
for the Laplacian, both parts for the compact Gaussian: nearby points with large norms,
narrow kernels -- is recomputed by the direct sum over the union of the two rows' features,
whose terms are all >= 0 (no cancellation), as the dense evaluator computes every distance.
Rows must be canonical: sorted column indices without duplicates (the Python layer makes
them so).

Inputs are trusted: float64 values, Py_ssize_t indices in range, norms of the same data
(validated by the Python layer). The kernel formulas are those of :mod:`._eval`, with the
same parameter layout and kind codes.
"""
from cython.parallel cimport prange, parallel
cimport openmp
from libc.math cimport exp, sqrt, pow
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

from ..utils._memory import format_bytes

# the kernel codes are _eval's (``Kernel.code``), from the one shared definition
from ._kinds cimport (COMPACT, GAUSSIAN, LAPLACIAN, POLYNOMIAL, SIGMOID, copy_upper_down,
                      exp_scaled, of_dot)

DEF UNIT_ROUNDOFF = 1.1102230246251565e-16
# Blocks use OpenMP threads above this many entries (enough exp and index walks to pay for a
# parallel region): a parallel region waits for a busy core, which smaller blocks do not hide.
DEF PARALLEL_ENTRIES = 200000


def _no_scratch(Py_ssize_t words, what="scratch"):
    """MemoryError's message when malloc fails for ``words`` 8-byte words of scratch."""
    return (f"could not allocate {format_bytes(8 * words)} for {what} of a sparse-rows "
            f"kernel evaluation (the process is out of memory or address space)")


cdef inline double _merge_sq(const double* av, const Py_ssize_t* ai, Py_ssize_t na,
                             const double* bv, const Py_ssize_t* bi,
                             Py_ssize_t nb) noexcept nogil:
    """|a - b|^2 summed over the union of two sorted index lists: every term >= 0."""
    cdef Py_ssize_t i = 0, j = 0
    cdef double s = 0.0, t
    while i < na and j < nb:
        if ai[i] == bi[j]:
            t = av[i] - bv[j]
            i += 1
            j += 1
        elif ai[i] < bi[j]:
            t = av[i]
            i += 1
        else:
            t = bv[j]
            j += 1
        s += t * t
    while i < na:
        s += av[i] * av[i]
        i += 1
    while j < nb:
        s += bv[j] * bv[j]
        j += 1
    return s


cdef inline void _gaussian_distances(double g, double tol, const double* yd,
                                     const Py_ssize_t* yi, Py_ssize_t y0, Py_ssize_t y1,
                                     double na, Py_ssize_t ia, const double* xd,
                                     const Py_ssize_t* xi, const Py_ssize_t* xp,
                                     const Py_ssize_t* J, const double* xnJ,
                                     const Py_ssize_t* nzJ, Py_ssize_t s, Py_ssize_t n,
                                     bint same, double* row) noexcept nogil:
    """:func:`_row`'s squared distances for the Gaussian, in passes the compiler
    vectorizes: the distances and whether any entry fails the bound, then the direct sums
    of those that do (rare) and a point's zero distance to itself. The same values as the
    general loop, which branches on every entry."""
    cdef Py_ssize_t b, nza = y1 - y0
    cdef double d2, nb, e
    cdef int bad = 0
    for b in range(s, n):
        nb = xnJ[b]
        d2 = na + nb - 2.0 * row[b]
        row[b] = d2 if d2 > 0.0 else 0.0
        e = (nza + nzJ[b] + 4) * UNIT_ROUNDOFF * (na + nb)
        bad |= g * e > tol
    if bad:
        for b in range(s, n):
            e = (nza + nzJ[b] + 4) * UNIT_ROUNDOFF * (na + xnJ[b])
            if g * e > tol and not (same and J[b] == ia):
                row[b] = _merge_sq(yd + y0, yi + y0, nza, xd + xp[J[b]], xi + xp[J[b]],
                                   nzJ[b])
    if same:
        for b in range(s, n):
            if J[b] == ia:
                row[b] = 0.0


cdef void _row(int kind, const double* p, double tol,
               const double* yd, const Py_ssize_t* yi, Py_ssize_t y0, Py_ssize_t y1,
               double na, Py_ssize_t ia,
               const Py_ssize_t* cptr, const Py_ssize_t* crow, const double* cval,
               const double* xd, const Py_ssize_t* xi, const Py_ssize_t* xp,
               const Py_ssize_t* J, const double* xnJ, const Py_ssize_t* nzJ,
               Py_ssize_t s, Py_ssize_t n, bint same, double* row) noexcept nogil:
    """row[b] = k(y, x_J[b]) for s <= b < n; y is the CSR row yd/yi[y0:y1] of squared norm
    na (index ia among the column points' when ``same``)."""
    cdef Py_ssize_t t, u, lo, b, jb, nza = y1 - y0
    cdef double v, d2, nb, e, r, q, g
    cdef bint sv
    memset(row + s, 0, (n - s) * sizeof(double))
    # inner products from the inverted index; the lists hold positions b in increasing
    # order, walked from the end so that the upper triangle (b >= s) stops early
    for t in range(y0, y1):
        v = yd[t]
        lo = cptr[yi[t]]
        u = cptr[yi[t] + 1] - 1
        while u >= lo:
            b = crow[u]
            if b < s:
                break
            row[b] += v * cval[u]
            u -= 1
    if kind == POLYNOMIAL or kind == SIGMOID:
        of_dot(kind, p, row + s, n - s)
        return
    g = p[0]
    if kind == GAUSSIAN:
        _gaussian_distances(g, tol, yd, yi, y0, y1, na, ia, xd, xi, xp, J, xnJ, nzJ, s, n,
                            same, row)
        exp_scaled(row + s, n - s, -g)
        return
    for b in range(s, n):
        jb = J[b]
        if same and jb == ia:
            row[b] = 0.0
            continue
        nb = xnJ[b]
        d2 = na + nb - 2.0 * row[b]
        d2 = d2 if d2 > 0.0 else 0.0
        e = (nza + nzJ[b] + 4) * UNIT_ROUNDOFF * (na + nb)
        if kind == GAUSSIAN:
            sv = g * e <= tol
        elif kind == LAPLACIAN:
            sv = g * g * e * e <= tol * tol * d2
        else:  # COMPACT: the Gaussian factor and the support factor (1 - r / (3 sigma))^l
            r = sqrt(d2)
            q = 1.0 - r * p[1]
            sv = (g * e <= 0.5 * tol and
                  p[2] * p[1] * e <= 0.5 * tol * (q if q > 0.0 else -q) * r)
        if not sv:
            d2 = _merge_sq(yd + y0, yi + y0, nza, xd + xp[jb], xi + xp[jb], nzJ[b])
        row[b] = d2
    if kind == LAPLACIAN:
        for b in range(s, n):
            row[b] = sqrt(row[b])
        exp_scaled(row + s, n - s, -g)
    else:
        for b in range(s, n):
            r = sqrt(row[b])
            q = 1.0 - r * p[1]
            if q > 0.0:
                row[b] = pow(q, p[2]) * exp(-p[0] * row[b])
            else:
                row[b] = 0.0


def row_norms(const double[::1] data, const Py_ssize_t[::1] indptr):
    """Squared norms of the CSR rows, each summed in the order of its nonzeros."""
    cdef Py_ssize_t m = indptr.shape[0] - 1, i, t
    cdef double acc
    out = np.empty(m)
    cdef double[::1] o = out
    with nogil:
        for i in range(m):
            acc = 0.0
            for t in range(indptr[i], indptr[i + 1]):
                acc = acc + data[t] * data[t]
            o[i] = acc
    return out


def columns(const double[::1] data, const Py_ssize_t[::1] indices,
            const Py_ssize_t[::1] indptr, const Py_ssize_t[::1] J, Py_ssize_t d):
    """The inverted index of the rows X[J]: (ptr, pos, val) with, for feature k, the
    positions b (increasing) of the rows J[b] holding it in ``pos[ptr[k]:ptr[k + 1]]`` and
    their values in ``val``. Costs O(nnz(X[J]) + d)."""
    cdef Py_ssize_t n = J.shape[0], b, t, k, nnz = 0
    for b in range(n):
        nnz += indptr[J[b] + 1] - indptr[J[b]]
    ptr_a = np.zeros(d + 1, dtype=np.intp)
    pos_a = np.empty(nnz, dtype=np.intp)
    val_a = np.empty(nnz)
    cdef Py_ssize_t[::1] ptr = ptr_a, pos = pos_a
    cdef double[::1] val = val_a
    cdef Py_ssize_t* nxt = <Py_ssize_t*> malloc((d + 1) * sizeof(Py_ssize_t))
    if nxt == NULL:
        raise MemoryError(_no_scratch(d + 1))
    with nogil:
        for b in range(n):
            for t in range(indptr[J[b]], indptr[J[b] + 1]):
                ptr[indices[t] + 1] += 1
        for k in range(d):
            ptr[k + 1] += ptr[k]
        for k in range(d):
            nxt[k] = ptr[k]
        for b in range(n):
            for t in range(indptr[J[b]], indptr[J[b] + 1]):
                k = indices[t]
                pos[nxt[k]] = b
                val[nxt[k]] = data[t]
                nxt[k] += 1
        free(nxt)
    return ptr_a, pos_a, val_a


# rows of a diagonal block's chunk: 64 rows of 4,000 entries (2 MB) are still in cache when
# they are copied onto the lower triangle
DEF UPPER_ROWS = 64


def block(int kind, const double[::1] params, double tol,
          const double[::1] ydata, const Py_ssize_t[::1] yind, const Py_ssize_t[::1] yptr,
          const double[::1] ynorm, const Py_ssize_t[::1] I,
          const double[::1] xdata, const Py_ssize_t[::1] xind, const Py_ssize_t[::1] xptr,
          const double[::1] xnorm, const Py_ssize_t[::1] J,
          const Py_ssize_t[::1] cptr, const Py_ssize_t[::1] cpos, const double[::1] cval,
          double[:, :] out, bint same=False, bint upper=False):
    """out[a, b] = k(y_I[a], x_J[b]) for the CSR rows Y (ydata, yind, yptr) and X, with
    (cptr, cpos, cval) = ``columns(X, J)``.

    ``same``: Y is X (a point against itself is at distance exactly 0). ``upper`` (I and J
    equal): each row from its diagonal on, and each chunk of rows copied onto the lower
    triangle while it is in cache (:func:`_upper_chunk`): the block comes back exactly
    symmetric. ``out``'s rows may be a stride apart; their entries are contiguous.
    """
    cdef Py_ssize_t m = I.shape[0], n = J.shape[0], a, b, c, ia, nchunk
    cdef Py_ssize_t ld = out.strides[0] // sizeof(double)
    cdef const double* p = &params[0]
    cdef double* xnJ
    cdef Py_ssize_t* nzJ
    if m == 0 or n == 0:
        return
    if n > 1 and out.strides[1] != sizeof(double):
        raise ValueError(f"out's rows must be contiguous (strides {out.strides[0]}, "
                         f"{out.strides[1]})")
    if upper and m != n:
        raise ValueError(f"upper asks for a square block, got {m} x {n}")
    xnJ = <double*> malloc(n * sizeof(double))
    nzJ = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    if xnJ == NULL or nzJ == NULL:
        free(xnJ)
        free(nzJ)
        raise MemoryError(_no_scratch(2 * n))
    with nogil:
        for b in range(n):
            xnJ[b] = xnorm[J[b]]
            nzJ[b] = xptr[J[b] + 1] - xptr[J[b]]
        if upper:
            nchunk = (m + UPPER_ROWS - 1) // UPPER_ROWS
            if m * n > PARALLEL_ENTRIES:  # dynamic: the chunks shrink down the triangle
                for c in prange(nchunk, schedule="dynamic"):
                    _upper_chunk(kind, p, tol, &ydata[0], &yind[0], &yptr[0], &ynorm[0],
                                 &I[0], &xdata[0], &xind[0], &xptr[0], &J[0], n, &cptr[0],
                                 &cpos[0], &cval[0], xnJ, nzJ, same, &out[0, 0], ld,
                                 c * UPPER_ROWS)
            else:
                for c in range(nchunk):
                    _upper_chunk(kind, p, tol, &ydata[0], &yind[0], &yptr[0], &ynorm[0],
                                 &I[0], &xdata[0], &xind[0], &xptr[0], &J[0], n, &cptr[0],
                                 &cpos[0], &cval[0], xnJ, nzJ, same, &out[0, 0], ld,
                                 c * UPPER_ROWS)
        elif m * n > PARALLEL_ENTRIES:
            for a in prange(m, schedule="dynamic", chunksize=8):
                ia = I[a]
                _row(kind, p, tol, &ydata[0], &yind[0], yptr[ia], yptr[ia + 1], ynorm[ia], ia,
                     &cptr[0], &cpos[0], &cval[0], &xdata[0], &xind[0], &xptr[0], &J[0],
                     xnJ, nzJ, 0, n, same, &out[a, 0])
        else:
            for a in range(m):
                ia = I[a]
                _row(kind, p, tol, &ydata[0], &yind[0], yptr[ia], yptr[ia + 1], ynorm[ia], ia,
                     &cptr[0], &cpos[0], &cval[0], &xdata[0], &xind[0], &xptr[0], &J[0],
                     xnJ, nzJ, 0, n, same, &out[a, 0])
    free(xnJ)
    free(nzJ)


cdef void _upper_chunk(int kind, const double* p, double tol, const double* ydata,
                       const Py_ssize_t* yind, const Py_ssize_t* yptr, const double* ynorm,
                       const Py_ssize_t* I, const double* xdata, const Py_ssize_t* xind,
                       const Py_ssize_t* xptr, const Py_ssize_t* J, Py_ssize_t n,
                       const Py_ssize_t* cptr, const Py_ssize_t* cpos, const double* cval,
                       const double* xnJ, const Py_ssize_t* nzJ, bint same, double* o,
                       Py_ssize_t ld, Py_ssize_t c0) noexcept nogil:
    # rows [c0, c0 + UPPER_ROWS) of a diagonal block from their diagonal on, then copied
    # onto the rows below at their columns (which no other chunk writes)
    cdef Py_ssize_t c1 = c0 + UPPER_ROWS, a, ia
    if c1 > n:
        c1 = n
    for a in range(c0, c1):
        ia = I[a]
        _row(kind, p, tol, ydata, yind, yptr[ia], yptr[ia + 1], ynorm[ia], ia, cptr, cpos,
             cval, xdata, xind, xptr, J, xnJ, nzJ, a, n, same, o + a * ld)
    copy_upper_down(o, ld, c0, c1, c0, n)


def matmat(int kind, const double[::1] params, double tol,
           const double[::1] ydata, const Py_ssize_t[::1] yind, const Py_ssize_t[::1] yptr,
           const double[::1] ynorm,
           const double[::1] xdata, const Py_ssize_t[::1] xind, const Py_ssize_t[::1] xptr,
           const double[::1] xnorm,
           const Py_ssize_t[::1] cptr, const Py_ssize_t[::1] cpos, const double[::1] cval,
           const double[:, ::1] V, double[:, ::1] out, bint same=False):
    """out = K(Y, X) @ V, one kernel row at a time; K is never formed.

    (cptr, cpos, cval) = ``columns(X, arange(n))``. Each thread owns one row buffer of n
    entries and whole output rows (no write conflicts): extra memory n_threads * n doubles.
    Threads only above PARALLEL_ENTRIES entries.
    """
    cdef Py_ssize_t m = yptr.shape[0] - 1, n = xptr.shape[0] - 1, r = V.shape[1]
    cdef Py_ssize_t a, b, c
    cdef const double* p = &params[0]
    cdef double* buf
    cdef int no_buf = 0
    cdef int* failed = &no_buf  # set by a thread whose buffer malloc failed
    cdef double* orow
    cdef const double* vrow
    cdef double acc, kab
    if m == 0 or r == 0:
        return
    out[:, :] = 0.0
    if n == 0:
        return
    J_a = np.arange(n, dtype=np.intp)
    nz_a = np.diff(np.asarray(xptr))
    cdef const Py_ssize_t[::1] J = J_a
    cdef const Py_ssize_t[::1] nz = nz_a
    # small products (a few validation rows against the changed columns) on this thread
    cdef int nt = 1 if m * n <= PARALLEL_ENTRIES else openmp.omp_get_max_threads()
    with nogil, parallel(num_threads=nt):
        buf = <double*> malloc(n * sizeof(double))
        if buf == NULL:
            failed[0] = 1
        for a in prange(m, schedule="dynamic", chunksize=4):
            if buf == NULL:  # this thread could not get its row buffer: raised below
                continue
            _row(kind, p, tol, &ydata[0], &yind[0], yptr[a], yptr[a + 1], ynorm[a], a,
                 &cptr[0], &cpos[0], &cval[0], &xdata[0], &xind[0], &xptr[0], &J[0],
                 &xnorm[0], &nz[0], 0, n, same, buf)
            if r == 1:
                acc = 0.0
                for b in range(n):
                    acc = acc + buf[b] * V[b, 0]
                out[a, 0] = acc
            else:
                orow = &out[a, 0]
                for b in range(n):
                    kab = buf[b]
                    vrow = &V[b, 0]
                    for c in range(r):
                        orow[c] += kab * vrow[c]
        free(buf)
    if no_buf:
        raise MemoryError(_no_scratch(n, "a thread's row buffer"))
