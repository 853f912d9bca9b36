# cython: language_level=3
"""Blocked kernel evaluation.

Every public routine here computes entries k(a_i, b_j) tile by tile and never holds more than
one (row-tile x column-tile) buffer per thread. Inputs are trusted: C-contiguous float64
(float32 for ``matvec_sym_single``), indices in range (validated by the Python layer).

Distances are accumulated directly, sum_k (a_ik - b_jk)^2, rather than through the
|a|^2 + |b|^2 - 2 a.b expansion: the expansion loses all relative accuracy for nearby points
with large norms, and HSS compression and the ULV factor need the small entries right. The
columns are read from the transposed point array so the inner loop is contiguous and
vectorizes (and exp() vectorizes through libmvec under -ffast-math).

The Gaussian kernel also has a BLAS route (``matmat_gauss``, ``gather_gauss``): on centered
points the squared distance is |a|^2 + |b|^2 - 2 a.b with a.b from dgemm. For the Gaussian an
absolute error delta in the squared distance is a *relative* error gamma * delta in the entry,
small or large, so the route keeps the small entries right whenever gamma times the rounding
bound of the expansion is tiny. The Python layer checks that bound point by point: the
distances between two of the few points whose norm breaks it (outliers far from the mean)
are summed directly inside the tiles, and where many do the whole product stays on the
direct sums.
With d in the tens, dgemm's distances cost a fraction of the direct ones.
"""
cimport openmp
from cython cimport floating
from cython.parallel cimport prange, parallel, threadid
from libc.math cimport exp, sqrt, pow
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dgemm, sgemm

import numpy as np

from ..utils._memory import format_bytes

from ._kinds cimport (COMPACT, GAUSSIAN, LAPLACIAN, POLYNOMIAL, SIGMOID, copy_upper_down,
                      exp_scaled, of_dot)

KIND_CODES = {"gaussian": GAUSSIAN, "laplacian": LAPLACIAN,
              "polynomial": POLYNOMIAL, "compact_gaussian": COMPACT, "sigmoid": SIGMOID}


def _no_scratch(Py_ssize_t doubles, what="scratch"):
    """MemoryError's message when malloc fails for ``doubles`` float64 of scratch."""
    return (f"could not allocate {format_bytes(8 * doubles)} for {what} of a kernel "
            f"evaluation (the process is out of memory or address space)")


# rows per tile; columns per tile are chosen by the caller from the memory budget
DEF ROW_TILE = 32

# Gathered blocks (gather_block, gather_gauss) use OpenMP threads only above this much work,
# entries x (d + 8): about 1e6 entries at d = 8. A parallel region
# must wait for every thread to arrive, so it costs microseconds on idle cores but up to a
# scheduler time slice when another process holds a core; HSS compression evaluates
# thousands of blocks of 1e3-1e6 entries one after another, so only blocks long enough to
# hide that wait are split.
DEF GATHER_PARALLEL_WORK = 16000000


# The fused product for the exponential kernels (Gaussian, Laplacian), one right-hand side,
# d <= FUSED_MAX_D: four rows at a time, each column's squared distances to them summed in
# registers, the entries exponentiated and multiplied into the rows' sums (and, for the
# symmetric product, into the column's) in one `omp simd` loop. The row-buffer route (`_row`)
# stores and reloads every distance d times and the entries once more; this one reads each
# column once per four rows and writes nothing but the column sums. gcc vectorizes the loop
# with the vector exp only when the distance loop's length is a constant (and ran it 1.5x
# slower over an array of row pointers than over one strided array), so the features are
# padded to D = 4, 8 or 12 with zeros (the rows in a 4 x 12 local copy, the columns in a copy
# when d is not a multiple of 4): exact zeros added to every distance. `clamp`: some entry may
# underflow (the caller's bound), so the argument is clamped at -708 and the entry set to 0
# below it, as `exp_scaled` does, which keeps the vector exp on its fast path.
cdef extern from *:
    """
    #include <math.h>
    #define HSSKERN_FUSED_MAX_D 12

    /* The fused loop for one floating type T (suffix S: _d double, _f float; EXP and SQRT
       its libm functions; FLOOR the exponent below which exp underflows). */
    #define HSSKERN_DEFINE_FUSED(T, S, EXP, SQRT, FLOOR) \\
    static inline __attribute__((always_inline)) T hsskern_entry##S(int lap, int clamp, \\
            T g, T s) { \\
        T t = lap ? -g * SQRT(s) : -g * s; \\
        if (!clamp) \\
            return EXP(t); \\
        return t > FLOOR ? EXP(t > FLOOR ? t : FLOOR) : (T) 0; \\
    } \\
    static inline __attribute__((always_inline)) void hsskern_fused_core##S(int lap, \\
            int clamp, int withcol, int D, T g, const T *a, const T *bt, Py_ssize_t ldb, \\
            Py_ssize_t j0, Py_ssize_t j1, const T *v, const T *vr, T *racc, T *col) { \\
        const T *a0 = a, *a1 = a + HSSKERN_FUSED_MAX_D, *a2 = a + 2 * HSSKERN_FUSED_MAX_D; \\
        const T *a3 = a + 3 * HSSKERN_FUSED_MAX_D; \\
        T s0 = 0, s1 = 0, s2 = 0, s3 = 0; \\
        T v0 = vr[0], v1 = vr[1], v2 = vr[2], v3 = vr[3]; \\
        _Pragma("omp simd reduction(+:s0, s1, s2, s3)") \\
        for (Py_ssize_t j = j0; j < j1; j++) { \\
            T d0 = 0, d1 = 0, d2 = 0, d3 = 0; \\
            for (int k = 0; k < D; k++) { \\
                T b = bt[k * ldb + j]; \\
                T t0 = a0[k] - b, t1 = a1[k] - b, t2 = a2[k] - b, t3 = a3[k] - b; \\
                d0 += t0 * t0; d1 += t1 * t1; d2 += t2 * t2; d3 += t3 * t3; \\
            } \\
            T e0 = hsskern_entry##S(lap, clamp, g, d0), e1 = hsskern_entry##S(lap, clamp, g, d1); \\
            T e2 = hsskern_entry##S(lap, clamp, g, d2), e3 = hsskern_entry##S(lap, clamp, g, d3); \\
            T vj = v[j]; \\
            s0 += e0 * vj; s1 += e1 * vj; s2 += e2 * vj; s3 += e3 * vj; \\
            if (withcol) \\
                col[j] += e0 * v0 + e1 * v1 + e2 * v2 + e3 * v3; \\
        } \\
        racc[0] += s0; racc[1] += s1; racc[2] += s2; racc[3] += s3; \\
    } \\
    static void hsskern_fused_rows##S(int lap, int clamp, int D, T g, const T *a, \\
            const T *bt, Py_ssize_t ldb, Py_ssize_t j0, Py_ssize_t j1, const T *v, \\
            const T *vr, T *racc, T *col) { \\
        HSSKERN_DISPATCH(hsskern_fused_core##S) \\
    }

    /* every (lap, clamp, col, D) its own instance: the loop body has no run-time branch */
    #define HSSKERN_CORE(F, L, C, W, DD) F(L, C, W, DD, g, a, bt, ldb, j0, j1, v, vr, racc, col)
    #define HSSKERN_BY_D(F, L, C, W) \\
        if (D == 4) HSSKERN_CORE(F, L, C, W, 4); \\
        else if (D == 8) HSSKERN_CORE(F, L, C, W, 8); \\
        else HSSKERN_CORE(F, L, C, W, 12);
    #define HSSKERN_DISPATCH(F) \\
        if (lap) { \\
            if (clamp) { if (col) { HSSKERN_BY_D(F, 1, 1, 1) } else { HSSKERN_BY_D(F, 1, 1, 0) } } \\
            else       { if (col) { HSSKERN_BY_D(F, 1, 0, 1) } else { HSSKERN_BY_D(F, 1, 0, 0) } } \\
        } else { \\
            if (clamp) { if (col) { HSSKERN_BY_D(F, 0, 1, 1) } else { HSSKERN_BY_D(F, 0, 1, 0) } } \\
            else       { if (col) { HSSKERN_BY_D(F, 0, 0, 1) } else { HSSKERN_BY_D(F, 0, 0, 0) } } \\
        }

    /* racc[r] += sum_j k(a_r, b_j) v[j] over the columns j0 <= j < j1, for the four rows a_r
       (a: 4 x HSSKERN_FUSED_MAX_D, zero-padded) and the columns' features bt[k * ldb + j]
       (k < D); with col, also col[j] += sum_r k(a_r, b_j) vr[r]. */
    HSSKERN_DEFINE_FUSED(double, _d, exp, sqrt, -708.0)
    HSSKERN_DEFINE_FUSED(float, _f, expf, sqrtf, -87.0f)
    """
    enum: FUSED_MAX_D "HSSKERN_FUSED_MAX_D"
    void _fused_rows_d "hsskern_fused_rows_d"(
        int lap, int clamp, int D, double g, const double* a, const double* bt, Py_ssize_t ldb,
        Py_ssize_t j0, Py_ssize_t j1, const double* v, const double* vr, double* racc,
        double* col) noexcept nogil
    void _fused_rows_f "hsskern_fused_rows_f"(
        int lap, int clamp, int D, float g, const float* a, const float* bt, Py_ssize_t ldb,
        Py_ssize_t j0, Py_ssize_t j1, const float* v, const float* vr, float* racc,
        float* col) noexcept nogil


#: The fused product's largest number of features (Python's view of FUSED_MAX_D).
FUSED_MAX_FEATURES = FUSED_MAX_D


cdef inline void _fused_rows(int lap, int clamp, int D, floating g, const floating* a,
                             const floating* bt, Py_ssize_t ldb, Py_ssize_t j0, Py_ssize_t j1,
                             const floating* v, const floating* vr, floating* racc,
                             floating* col) noexcept nogil:
    if floating is double:
        _fused_rows_d(lap, clamp, D, g, a, bt, ldb, j0, j1, v, vr, racc, col)
    else:
        _fused_rows_f(lap, clamp, D, g, a, bt, ldb, j0, j1, v, vr, racc, col)


cdef inline void _row(int kind, const double* p, const double* a, const double* bt,
                      Py_ssize_t ldb, Py_ssize_t m, Py_ssize_t d, double* out) noexcept nogil:
    """out[j] = k(a, b_j) for j < m, where b_j is column j of bt (d x m, row stride ldb)."""
    cdef Py_ssize_t j, k
    cdef double ak, t
    cdef const double* bk
    memset(out, 0, m * sizeof(double))
    if kind == POLYNOMIAL or kind == SIGMOID:
        for k in range(d):
            ak = a[k]
            bk = bt + k * ldb
            for j in range(m):
                out[j] += ak * bk[j]
        of_dot(kind, p, out, m)
        return
    for k in range(d):
        ak = a[k]
        bk = bt + k * ldb
        for j in range(m):
            t = ak - bk[j]
            out[j] += t * t
    _of_squared(kind, p, out, m)


cdef double _columns_radius(const floating* bt, Py_ssize_t n, Py_ssize_t d,
                           double* c) noexcept nogil:
    """c = the mean of the columns of bt (d x n, C order); returns their largest distance
    from it: with a row's own distance to c, a bound on its distance to any column."""
    cdef Py_ssize_t j, k
    cdef double s, t, r2 = 0.0
    for k in range(d):
        s = 0.0
        for j in range(n):
            s = s + bt[k * n + j]
        c[k] = s / n
    for j in range(n):
        s = 0.0
        for k in range(d):
            t = bt[k * n + j] - c[k]
            s = s + t * t
        if s > r2:
            r2 = s
    return sqrt(r2)


cdef void _fused_tile(int kind, floating g, const floating* A, Py_ssize_t i0, Py_ssize_t i1,
                      Py_ssize_t d, const floating* bt, Py_ssize_t ldb, Py_ssize_t j0,
                      Py_ssize_t j1, Py_ssize_t jc, const floating* v, floating* out,
                      floating* col, const double* c, double radius) noexcept nogil:
    """out[i] += sum_{j0 <= j < j1} k(a_i, b_j) v[j] for the rows i0 <= i < i1 of A (row-major,
    d columns), Gaussian or Laplacian, columns bt (D x ldb, :func:`padded_columns`); with
    ``col``, also col[j] += sum_i k(a_i, b_j) v[i] for jc <= j < j1. Four rows a call of the
    fused loop; a short last group repeats a row with weight 0 and drops its sums. A group
    takes the clamped exp only where its distance bound (row spread + ``radius``, the columns'
    around ``c``) allows an underflow (at exp(-700) in double, exp(-80) in single)."""
    cdef floating a[4 * FUSED_MAX_D]
    cdef floating vr[4]
    cdef floating racc[4]
    cdef Py_ssize_t i, r, k, jm, src
    cdef int D = <int> ((d + 3) // 4 * 4)
    cdef double ra, s, t, x
    # the bound is exact arithmetic on the inputs; the slack covers the loop's own rounding
    cdef double floor = 700.0 if floating is double else 80.0
    cdef double slack = (1.0 + 1e-12) if floating is double else (1.0 + 1e-5)
    cdef int lap = kind == LAPLACIAN, clamp
    memset(a, 0, sizeof(a))
    i = i0
    while i < i1:
        ra = 0.0
        for r in range(4):
            src = i + r if i + r < i1 else i
            # v is indexed by columns; only the symmetric product (col) has rows among them
            vr[r] = v[src] if (col != NULL and i + r < i1) else 0.0
            racc[r] = 0.0
            s = 0.0
            for k in range(d):
                a[r * FUSED_MAX_D + k] = A[src * d + k]
                t = A[src * d + k] - c[k]
                s = s + t * t
            if s > ra:
                ra = s
        x = sqrt(ra) + radius
        clamp = g * (x if lap else x * x) * slack >= floor
        jm = j1 if col == NULL else (jc if jc < j1 else j1)
        if jm > j0:
            _fused_rows(lap, clamp, D, g, a, bt, ldb, j0, jm, v, vr, racc, NULL)
        if jm < j1:
            _fused_rows(lap, clamp, D, g, a, bt, ldb, jm if jm > j0 else j0, j1, v, vr, racc,
                        col)
        for r in range(4):
            if i + r < i1:
                out[i + r] += racc[r]
        i += 4


cdef inline void _of_squared(int kind, const double* p, double* out,
                             Py_ssize_t m) noexcept nogil:
    """out[j] = k at the squared distance out[j], for the distance kernels."""
    cdef Py_ssize_t j
    cdef double r, t
    if kind == GAUSSIAN:
        exp_scaled(out, m, -p[0])
    elif kind == LAPLACIAN:
        for j in range(m):
            out[j] = sqrt(out[j])
        exp_scaled(out, m, -p[0])
    else:  # COMPACT: (1 - r / (3 sigma))_+^l exp(-r^2 / (2 sigma^2))
        for j in range(m):
            r = sqrt(out[j])
            t = 1.0 - r * p[1]
            if t > 0.0:
                out[j] = pow(t, p[2]) * exp(-p[0] * out[j])
            else:
                out[j] = 0.0


def of_squared_distances(int kind, const double[::1] params, double[::1] d2):
    """d2[j] = k at squared distance d2[j], in place, as the evaluators compute it (Gaussian,
    Laplacian and compact kernels): the table of a stored matrix of distance codes."""
    if d2.shape[0]:
        _of_squared(kind, &params[0], &d2[0], d2.shape[0])


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


cdef inline void _check_rows(double[:, :] out) except *:
    """Raises unless each row of ``out`` is contiguous (the evaluators write rows by pointer)."""
    if out.shape[1] > 1 and out.strides[1] != sizeof(double):
        raise ValueError(f"out's rows must be contiguous (strides {out.strides[0]}, "
                         f"{out.strides[1]})")


# rows of a chunk of a gathered block (a thread's unit of work)
DEF GATHER_ROWS = 64


cdef void _rows_chunk(int kind, const double* p, const double* rows, const double* bt,
                      Py_ssize_t n, Py_ssize_t d, double* o, Py_ssize_t ld, Py_ssize_t c0,
                      Py_ssize_t c1, bint upper) noexcept nogil:
    # rows [c0, c1) of a gathered block (from the diagonal on with ``upper``, then copied
    # onto the lower triangle)
    cdef Py_ssize_t a, s
    for a in range(c0, c1):
        s = a if upper else 0
        _row(kind, p, rows + a * d, bt + s, n, n - s, d, o + a * ld + s)
    if upper:
        copy_upper_down(o, ld, c0, c1, c0, n)


def gather_block(int kind, const double[::1] params, const double[:, ::1] X,
                 const Py_ssize_t[::1] I, const Py_ssize_t[::1] J, double[:, :] out,
                 bint upper=False):
    """out[a, b] = k(X[I[a]], X[J[b]]) without forming anything larger than the block.

    This is the entry extractor HSS compression calls for many small blocks, so it gathers
    rows and transposed columns into scratch buffers itself instead of going through numpy
    fancy indexing. ``upper`` (I and J equal): each row from its diagonal on, half the work of
    the diagonal blocks the SVM decomposition asks for, and each chunk of rows copied onto
    the lower triangle while it is in cache: the block comes back exactly symmetric.
    ``out``'s rows may be a stride apart; their entries are contiguous.
    """
    cdef Py_ssize_t m = I.shape[0], n = J.shape[0], d = X.shape[1]
    cdef Py_ssize_t a, b, k, c, nchunk, ld = out.strides[0] // sizeof(double)
    cdef const double* p = &params[0]
    cdef double* bt
    cdef double* rows
    if m == 0 or n == 0:
        return
    if upper and m != n:
        raise ValueError(f"upper asks for a square block, got {m} x {n}")
    _check_rows(out)
    bt = <double*> malloc(d * n * sizeof(double))
    rows = <double*> malloc(d * m * sizeof(double))
    if bt == NULL or rows == NULL:
        free(bt)
        free(rows)
        raise MemoryError(_no_scratch(d * (m + n)))
    with nogil:
        for b in range(n):
            for k in range(d):
                bt[k * n + b] = X[J[b], k]
        for a in range(m):
            for k in range(d):
                rows[a * d + k] = X[I[a], k]
        nchunk = (m + GATHER_ROWS - 1) // GATHER_ROWS
        if m * n * (d + 8) > GATHER_PARALLEL_WORK:
            # dynamic: with ``upper`` the chunks shrink, so equal static shares would not balance
            for c in prange(nchunk, schedule="dynamic"):
                _rows_chunk(kind, p, rows, bt, n, d, &out[0, 0], ld, c * GATHER_ROWS,
                            min(m, (c + 1) * GATHER_ROWS), upper)
        else:
            for c in range(nchunk):
                _rows_chunk(kind, p, rows, bt, n, d, &out[0, 0], ld, c * GATHER_ROWS,
                            min(m, (c + 1) * GATHER_ROWS), upper)
        free(bt)
        free(rows)


def padded_columns(BT):
    """BT (d x n, float64 or float32) with zero rows up to a multiple of 4 (itself when d is
    one): the fused loop's features. Allocated here, where a failed allocation raises
    MemoryError."""
    cdef Py_ssize_t d = BT.shape[0]
    if d % 4 == 0:
        return BT
    out = np.zeros(((d + 3) // 4 * 4, BT.shape[1]), dtype=np.asarray(BT).dtype)
    out[:d] = BT
    return out


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
    cdef int no_tile = 0
    cdef int* failed = &no_tile  # set by a thread whose tile malloc failed
    cdef double* orow
    cdef const double* vrow
    cdef double acc, kij
    cdef const double[:, ::1] padded
    if m == 0 or r == 0:
        return
    out[:, :] = 0.0
    if n == 0:
        return
    if col_tile > n:
        col_tile = n
    if r == 1 and (kind == GAUSSIAN or kind == LAPLACIAN) and d <= FUSED_MAX_D:
        padded = padded_columns(BT)
        with nogil:
            _matvec_fused(kind, p[0], &A[0, 0], m, &padded[0, 0], n, d, &V[0, 0], &out[0, 0],
                          col_tile)
        return
    with nogil, parallel():
        tile = <double*> malloc(ROW_TILE * col_tile * sizeof(double))
        if tile == NULL:
            failed[0] = 1
        for t in prange(n_row_tiles, schedule="dynamic"):
            if tile == NULL:  # this thread could not get its tile: raised below
                continue
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
    if no_tile:
        raise MemoryError(_no_scratch(ROW_TILE * col_tile, "a thread's tile"))


def matmat_sym(int kind, const double[::1] params, const double[:, ::1] A,
               const double[:, ::1] AT, const double[:, ::1] V, double[:, :, ::1] bufs,
               Py_ssize_t col_tile):
    """bufs summed over axis 0 = K(A, A) @ V, each entry of the symmetric K computed once.

    Row tile [i0, i1) takes the columns from i0 on: its rows get every column's
    contribution, the columns past i1 (rows of later tiles) get the transposed one. Those
    rows belong to other threads' tiles, so each thread accumulates into bufs[thread]
    (zeroed by the caller, n x r). Half the kernel entries of :func:`matmat`.
    """
    cdef Py_ssize_t n = A.shape[0], d = A.shape[1], r = V.shape[1]
    cdef Py_ssize_t n_row_tiles = (n + ROW_TILE - 1) // ROW_TILE
    cdef Py_ssize_t t, i0, i1, i, j0, j1, j, jt, c, w, tid
    cdef const double* p = &params[0]
    cdef double* tile
    cdef int no_tile = 0
    cdef int* failed = &no_tile  # set by a thread whose tile malloc failed
    cdef double* trow
    cdef double* buf
    cdef double* orow
    cdef const double* vrow
    cdef double acc, kij, vi
    cdef const double[:, ::1] padded
    if n == 0 or r == 0:
        return
    if col_tile < ROW_TILE:
        col_tile = ROW_TILE
    if r == 1 and (kind == GAUSSIAN or kind == LAPLACIAN) and d <= FUSED_MAX_D:
        padded = padded_columns(AT)
        with nogil:
            _matvec_sym_fused(kind, p[0], &A[0, 0], &padded[0, 0], n, d, &V[0, 0], bufs,
                              col_tile)
        return
    with nogil, parallel():
        tile = <double*> malloc(ROW_TILE * col_tile * sizeof(double))
        if tile == NULL:
            failed[0] = 1
        # round-robin, not dynamic: which thread sums which tile, and so the rounding of
        # the result, must not change from call to call
        for t in prange(n_row_tiles, schedule="static", chunksize=1):
            if tile == NULL:  # this thread could not get its tile: raised below
                continue
            tid = threadid()
            buf = &bufs[tid, 0, 0]
            i0 = t * ROW_TILE
            i1 = i0 + ROW_TILE
            if i1 > n:
                i1 = n
            j0 = i0
            while j0 < n:
                j1 = j0 + col_tile
                if j1 > n:
                    j1 = n
                w = j1 - j0
                jt = i1 - j0 if j0 < i1 else 0  # the tile's first column past the rows' own
                for i in range(i0, i1):
                    _row(kind, p, &A[i, 0], &AT[0, j0], n, w, d, tile + (i - i0) * col_tile)
                for i in range(i0, i1):
                    trow = tile + (i - i0) * col_tile
                    if r == 1:
                        acc = 0.0
                        vi = V[i, 0]
                        for j in range(w):
                            acc = acc + trow[j] * V[j0 + j, 0]
                        buf[i] += acc
                        for j in range(jt, w):
                            buf[j0 + j] += trow[j] * vi
                    else:
                        orow = buf + i * r
                        vrow = &V[i, 0]
                        for j in range(w):
                            kij = trow[j]
                            for c in range(r):
                                orow[c] += kij * V[j0 + j, c]
                        for j in range(jt, w):
                            kij = trow[j]
                            orow = buf + (j0 + j) * r
                            for c in range(r):
                                orow[c] += kij * vrow[c]
                j0 = j1
        free(tile)
    if no_tile:
        raise MemoryError(_no_scratch(ROW_TILE * col_tile, "a thread's tile"))


cdef void _matvec_fused(int kind, floating g, const floating* A, Py_ssize_t m,
                       const floating* b, Py_ssize_t n, Py_ssize_t d, const floating* v,
                       floating* out, Py_ssize_t col_tile) noexcept nogil:
    """out (m) = K(A, B) v through the fused loop, the threads over row tiles (out zeroed);
    b the columns, padded (D x n, :func:`padded_columns`)."""
    cdef Py_ssize_t n_row_tiles = (m + ROW_TILE - 1) // ROW_TILE, t, i0, i1, j0, j1
    cdef double c[FUSED_MAX_D]
    cdef double radius = _columns_radius(b, n, d, c)
    for t in prange(n_row_tiles, schedule="dynamic"):
        i0 = t * ROW_TILE
        i1 = i0 + ROW_TILE if i0 + ROW_TILE < m else m
        j0 = 0
        while j0 < n:
            j1 = j0 + col_tile if j0 + col_tile < n else n
            _fused_tile(kind, g, A, i0, i1, d, b, n, j0, j1, j1, v, out, NULL, c, radius)
            j0 = j1


cdef void _matvec_sym_fused(int kind, floating g, const floating* A, const floating* b,
                            Py_ssize_t n, Py_ssize_t d, const floating* v,
                            floating[:, :, ::1] bufs, Py_ssize_t col_tile) noexcept nogil:
    """bufs summed over axis 0 = K(A, A) v through the fused loop, each entry computed once
    (the tiling and the per-thread buffers of :func:`matmat_sym`); b the points transposed and
    padded (D x n, :func:`padded_columns`)."""
    cdef Py_ssize_t n_row_tiles = (n + ROW_TILE - 1) // ROW_TILE, t, i0, i1, j0, j1
    cdef floating* buf
    cdef double c[FUSED_MAX_D]
    cdef double radius = _columns_radius(b, n, d, c)
    for t in prange(n_row_tiles, schedule="static", chunksize=1):
        buf = &bufs[threadid(), 0, 0]
        i0 = t * ROW_TILE
        i1 = i0 + ROW_TILE if i0 + ROW_TILE < n else n
        j0 = i0
        while j0 < n:
            j1 = j0 + col_tile if j0 + col_tile < n else n
            _fused_tile(kind, g, A, i0, i1, d, b, n, j0, j1, i1, v, buf, buf, c, radius)
            j0 = j1


def matvec_sym_single(int kind, double g, const float[:, ::1] A, const float[:, ::1] BT,
                      const float[:, ::1] V, float[:, :, ::1] bufs, Py_ssize_t col_tile):
    """bufs summed over axis 0 = K(A, A) v in single precision: :func:`matmat_sym`'s fused
    product for one vector (Gaussian or Laplacian, d <= FUSED_MAX_D) with float32 points,
    entries and sums. BT: the points transposed with zero rows up to a multiple of 4 (as
    :func:`padded_columns`); V: n x 1; bufs: threads x n x 1, zeroed."""
    cdef Py_ssize_t n = A.shape[0], d = A.shape[1]
    if n == 0:
        return
    if col_tile < ROW_TILE:
        col_tile = ROW_TILE
    with nogil:
        _matvec_sym_fused(kind, <float> g, &A[0, 0], &BT[0, 0], n, d, &V[0, 0], bufs, col_tile)


def max_threads():
    """OpenMP's thread count for the next parallel region (the size of bufs' first axis)."""
    return openmp.omp_get_max_threads()


cdef inline double _direct_sq(const double* a, const double* b, Py_ssize_t ldb,
                              int d) noexcept nogil:
    """|a - b|^2 summed directly, b strided by ldb."""
    cdef double s = 0.0, e
    cdef int k
    for k in range(d):
        e = a[k] - b[k * ldb]
        s = s + e * e
    return s


cdef void _gauss_tile(double gamma, const double* a, Py_ssize_t lda, const double* an,
                      Py_ssize_t mb, const double* bt, Py_ssize_t ldb, const double* bn,
                      Py_ssize_t w, int d, double* t, Py_ssize_t ldt,
                      const unsigned char* afar, Py_ssize_t aoff,
                      const unsigned char* bfar, Py_ssize_t boff) noexcept nogil:
    """t (mb x w, row stride ldt) = Gaussian of centered rows a (mb x d) and columns bt (d x w).

    dgemm is called in column-major terms: t^T = bt^T a^T, i.e. (w x mb) = (w x d)(d x mb).
    The squared distances between a row flagged in ``afar[aoff:]`` and a column flagged in
    ``bfar[boff:]`` (NULL: none), two points whose norms would cost the expansion its
    accuracy, are summed directly instead.
    Called from OpenMP threads: the caller keeps BLAS itself single-threaded.
    """
    cdef int M = <int> w, N = <int> mb, K = d
    cdef int LDB = <int> ldb, LDA = <int> lda, LDT = <int> ldt
    cdef double alpha = -2.0, zero = 0.0
    cdef Py_ssize_t i, j, k, q, nfc = 0
    cdef double* row
    cdef double ai, s
    cdef Py_ssize_t* fj = NULL
    cdef double* fc = NULL
    dgemm("N", "N", &M, &N, &K, &alpha, <double*> bt, &LDB, <double*> a, &LDA, &zero, t, &LDT)
    if afar != NULL and bfar != NULL:
        afar = afar + aoff
        bfar = bfar + boff
        for j in range(w):
            nfc = nfc + bfar[j]
        if nfc:  # the far columns, gathered contiguous (else read strided, d times an entry)
            fj = <Py_ssize_t*> malloc(nfc * sizeof(Py_ssize_t))
            fc = <double*> malloc(nfc * d * sizeof(double))
            if fj != NULL and fc != NULL:
                q = 0
                for j in range(w):
                    if bfar[j]:
                        fj[q] = j
                        for k in range(d):
                            fc[q * d + k] = bt[k * ldb + j]
                        q = q + 1
    for i in range(mb):
        row = t + i * ldt
        ai = an[i]
        for j in range(w):
            s = ai + bn[j] + row[j]
            row[j] = s if s > 0.0 else 0.0
        if nfc and afar[i]:
            if fj != NULL and fc != NULL:
                for q in range(nfc):
                    row[fj[q]] = _direct_sq(a + i * lda, fc + q * d, 1, d)
            else:
                for j in range(w):
                    if bfar[j]:
                        row[j] = _direct_sq(a + i * lda, bt + j, ldb, d)
        exp_scaled(row, w, -gamma)
    free(fj)
    free(fc)


cdef void _gauss_tile_single(double gamma, const float* a, Py_ssize_t lda, const double* an,
                             Py_ssize_t mb, const float* bt, Py_ssize_t ldb, const double* bn,
                             Py_ssize_t w, int d, double* t, Py_ssize_t ldt,
                             float* s) noexcept nogil:
    """:func:`_gauss_tile` with the cross term a.b by sgemm on float32 coordinates (into the
    scratch ``s``, mb x w), the norms, the sum and the exponential in double: LIBSVM's
    ``Qfloat`` precision, within the caller's float32 bound (no far flags: the caller
    computes the far points' columns with the double tile). Half the bytes and twice the
    SIMD width of dgemm.
    """
    cdef int M = <int> w, N = <int> mb, K = d, LDB = <int> ldb, LDA = <int> lda, LDS = <int> w
    cdef float alpha = -2.0, zero = 0.0
    cdef Py_ssize_t i, j
    cdef double* row
    cdef const float* srow
    cdef double ai, v
    sgemm("N", "N", &M, &N, &K, &alpha, <float*> bt, &LDB, <float*> a, &LDA, &zero, s, &LDS)
    for i in range(mb):
        row = t + i * ldt
        srow = s + i * w
        ai = an[i]
        for j in range(w):
            v = ai + bn[j] + srow[j]
            row[j] = v if v > 0.0 else 0.0
        exp_scaled(row, w, -gamma)


cdef inline const unsigned char* _flags(const unsigned char[::1] far) noexcept nogil:
    return &far[0] if far.shape[0] > 0 else NULL


def matmat_gauss(double gamma, const floating[:, ::1] A, const double[::1] an,
                 const floating[:, ::1] BT, const double[::1] bn, const double[:, ::1] V,
                 double[:, ::1] out, Py_ssize_t row_tile, Py_ssize_t col_tile,
                 const unsigned char[::1] afar, const unsigned char[::1] bfar):
    """out = K(A, B) @ V for the Gaussian through dgemm, tile by tile.

    A (m x d) and BT (d x n) are centered by the same vector, an / bn their squared row /
    column norms, afar / bfar the rows and columns whose distances are summed directly
    (empty: none; see :func:`_gauss_tile`). Threads own row tiles (OpenMP); within a tile
    the distances and the product with V are single-threaded BLAS calls (the caller limits
    BLAS to one thread, the pattern scikit-learn's pairwise reductions use), the
    exponentials a vectorized loop. Extra memory: one row_tile x col_tile tile per thread.
    float32 A and BT: the cross terms by sgemm (:func:`_gauss_tile_single`; ``afar`` and
    ``bfar`` must then be empty), a float32 scratch tile more per thread.
    """
    cdef Py_ssize_t m = A.shape[0], n = BT.shape[1], d = A.shape[1], r = V.shape[1]
    cdef Py_ssize_t n_row_tiles, t, i0, j0, mb, w
    cdef int R = <int> r, MB, W
    cdef double one = 1.0
    cdef double* tile
    cdef float* s32 = NULL
    cdef int no_tile = 0
    cdef int* failed = &no_tile  # set by a thread whose tile malloc failed
    cdef const unsigned char* af = _flags(afar)
    cdef const unsigned char* bf = _flags(bfar)
    if m == 0 or r == 0:
        return
    out[:, :] = 0.0
    if n == 0:
        return
    if row_tile > m:
        row_tile = m
    if col_tile > n:
        col_tile = n
    n_row_tiles = (m + row_tile - 1) // row_tile
    with nogil, parallel():
        tile = <double*> malloc(row_tile * col_tile * sizeof(double))
        s32 = NULL
        if floating is float:
            s32 = <float*> malloc(row_tile * col_tile * sizeof(float))
            if s32 == NULL:
                free(tile)
                tile = NULL
        if tile == NULL:
            failed[0] = 1
        for t in prange(n_row_tiles, schedule="dynamic"):
            if tile == NULL:  # this thread could not get its tile: raised below
                continue
            i0 = t * row_tile
            mb = row_tile if i0 + row_tile <= m else m - i0
            j0 = 0
            while j0 < n:
                w = col_tile if j0 + col_tile <= n else n - j0
                if floating is float:
                    _gauss_tile_single(gamma, &A[i0, 0], d, &an[i0], mb, &BT[0, j0], n,
                                       &bn[j0], w, <int> d, tile, w, s32)
                else:
                    _gauss_tile(gamma, &A[i0, 0], d, &an[i0], mb, &BT[0, j0], n, &bn[j0], w,
                                <int> d, tile, w, af, i0, bf, j0)
                # out[i0:i0+mb] += tile @ V[j0:j0+w]  (column-major: out^T += V^T tile^T)
                MB = <int> mb
                W = <int> w
                dgemm("N", "N", &R, &MB, &W, &one, <double*> &V[j0, 0], &R, tile, &W, &one,
                      &out[i0, 0], &R)
                j0 = j0 + w
        free(tile)
        free(s32)
    if no_tile:
        raise MemoryError(_no_scratch(row_tile * col_tile, "a thread's tile"))


def matmat_gauss_sym(double gamma, const double[:, ::1] A, const double[::1] an,
                     const double[:, ::1] AT, const double[:, ::1] V, double[:, :, ::1] bufs,
                     Py_ssize_t row_tile, Py_ssize_t col_tile, const unsigned char[::1] far):
    """bufs summed over axis 0 = K(A, A) @ V for the Gaussian, from the upper half of K.

    K is symmetric, so each entry is computed once: row tile [i0, i0 + mb) takes the columns
    from i0 on; its diagonal block adds K[I, I] V[I], each tile T right of it adds both
    T V[J] to rows I and T^T V[I] to rows J. Rows J belong to other threads' row tiles, so
    every thread accumulates into its own bufs[thread] (zeroed by the caller; n x r each).
    Half the exponentials and distances of :func:`matmat_gauss`.
    """
    cdef Py_ssize_t n = A.shape[0], d = A.shape[1], r = V.shape[1]
    cdef Py_ssize_t n_row_tiles, t, i0, j0, mb, w, tid
    cdef int R = <int> r, MB, W, LDT
    cdef double one = 1.0
    cdef double* tile
    cdef int no_tile = 0
    cdef int* failed = &no_tile  # set by a thread whose tile malloc failed
    cdef double* buf
    cdef const unsigned char* ff = _flags(far)
    if n == 0 or r == 0:
        return
    if row_tile > n:
        row_tile = n
    if col_tile < row_tile:
        col_tile = row_tile
    n_row_tiles = (n + row_tile - 1) // row_tile
    with nogil, parallel():
        tile = <double*> malloc(row_tile * col_tile * sizeof(double))
        if tile == NULL:
            failed[0] = 1
        # round-robin, not dynamic: which thread sums which tile, and so the rounding of
        # the result, must not change from call to call
        for t in prange(n_row_tiles, schedule="static", chunksize=1):
            if tile == NULL:  # this thread could not get its tile: raised below
                continue
            tid = threadid()
            buf = &bufs[tid, 0, 0]
            i0 = t * row_tile
            mb = row_tile if i0 + row_tile <= n else n - i0
            MB = <int> mb
            j0 = i0
            while j0 < n:
                w = col_tile if j0 + col_tile <= n else n - j0
                W = <int> w
                LDT = <int> w
                _gauss_tile(gamma, &A[i0, 0], d, &an[i0], mb, &AT[0, j0], n, &an[j0], w,
                            <int> d, tile, w, ff, i0, ff, j0)
                # rows I: buf[i0:i0+mb] += T @ V[j0:j0+w] (column-major: buf^T += V^T T^T)
                dgemm("N", "N", &R, &MB, &W, &one, <double*> &V[j0, 0], &R, tile, &W, &one,
                      buf + i0 * r, &R)
                # rows J past the diagonal block: buf[J] += T^T V[I]; the diagonal block's
                # own columns [i0, i0 + mb) are already whole (its rows added both halves)
                if j0 + w > i0 + mb:
                    W = <int> (j0 + w - (i0 + mb) if j0 < i0 + mb else w)
                    dgemm("N", "T", &R, &W, &MB, &one, <double*> &V[i0, 0], &R,
                          tile + (w - W), &LDT, &one, buf + (j0 + w - W) * r, &R)
                j0 = j0 + w
        free(tile)
    if no_tile:
        raise MemoryError(_no_scratch(row_tile * col_tile, "a thread's tile"))


# columns of a gathered block's tile: 64 x 512 doubles (256 KB) stay in L2 from the dgemm
# through the exponentials to the mirrored copy
DEF GATHER_COLS = 512


cdef void _gauss_chunk(double gamma, const floating* rows, Py_ssize_t d, const double* an,
                       const floating* bt, Py_ssize_t n, const double* bn, double* o,
                       Py_ssize_t ld, Py_ssize_t c0, Py_ssize_t mb, bint upper,
                       const unsigned char* af, const unsigned char* bf,
                       float* s32) noexcept nogil:
    # rows [c0, c0 + mb) of the block in tiles of GATHER_COLS columns; ``upper``: from the
    # diagonal on, each tile copied onto the lower triangle while it is in cache (rows
    # below the chunk at its columns: no other chunk writes there). float32 points: the
    # cross terms by sgemm through the thread's scratch tile ``s32``
    cdef Py_ssize_t s = c0 if upper else 0, j0, w
    j0 = s
    while j0 < n:
        w = GATHER_COLS if j0 + GATHER_COLS <= n else n - j0
        if floating is float:
            _gauss_tile_single(gamma, rows + c0 * d, d, an + c0, mb, bt + j0, n, bn + j0, w,
                               <int> d, o + c0 * ld + j0, ld, s32)
        else:
            _gauss_tile(gamma, rows + c0 * d, d, an + c0, mb, bt + j0, n, bn + j0, w,
                        <int> d, o + c0 * ld + j0, ld, af, c0, bf, j0)
        if upper:
            copy_upper_down(o, ld, c0, c0 + mb, j0, j0 + w)
        j0 = j0 + w


def gather_gauss(double gamma, const floating[:, ::1] Xc, const double[::1] xn,
                 const Py_ssize_t[::1] I, const Py_ssize_t[::1] J, double[:, :] out,
                 bint upper=False, const unsigned char[::1] far=None,
                 Py_ssize_t chunk_rows=64):
    """out[a, b] = exp(-gamma |x_I[a] - x_J[b]|^2) from centered points Xc and norms xn.

    The caller keeps BLAS single-threaded; large blocks are split over OpenMP threads by rows.
    ``upper`` (I and J equal): each chunk of rows starts at its own diagonal, so only the upper
    triangle and the diagonal tiles are computed (about half the dgemm and the exponentials),
    and each tile is copied onto the lower triangle while it is in cache: the block comes
    back exactly symmetric. ``far`` (None or empty: none): the points whose distances are
    summed directly (see :func:`_gauss_tile`). ``out``'s rows may be a stride apart; their
    entries are contiguous. float32 ``Xc``: the cross terms by sgemm
    (:func:`_gauss_tile_single`; ``far`` must then be empty). ``chunk_rows``: the rows of a
    chunk, one GEMM call per GATHER_COLS columns.
    """
    cdef Py_ssize_t m = I.shape[0], n = J.shape[0], d = Xc.shape[1]
    cdef Py_ssize_t a, b, k, c, c0, nchunk, ld = out.strides[0] // sizeof(double)
    cdef floating* bt
    cdef floating* rows
    cdef float* s32 = NULL  # a thread's float32 tile (float32 points only)
    cdef Py_ssize_t scratch = chunk_rows * GATHER_COLS if floating is float else 0
    cdef int no_scratch = 0
    cdef int* lacking = &no_scratch  # set by a thread without its scratch (not a private)
    cdef double* an
    cdef double* bn
    cdef unsigned char* af = NULL
    cdef unsigned char* bf = NULL
    cdef bint flagged = far is not None and far.shape[0] > 0
    if m == 0 or n == 0:
        return
    if upper and m != n:
        raise ValueError(f"upper asks for a square block, got {m} x {n}")
    _check_rows(out)
    bt = <floating*> malloc(d * n * sizeof(floating))
    rows = <floating*> malloc(d * m * sizeof(floating))
    an = <double*> malloc(m * sizeof(double))
    bn = <double*> malloc(n * sizeof(double))
    if flagged:
        af = <unsigned char*> malloc(m)
        bf = <unsigned char*> malloc(n)
    if (bt == NULL or rows == NULL or an == NULL or bn == NULL
            or (flagged and (af == NULL or bf == NULL))):
        free(bt)
        free(rows)
        free(an)
        free(bn)
        free(af)
        free(bf)
        raise MemoryError(_no_scratch((d + 1) * (m + n)))
    with nogil:
        for b in range(n):
            bn[b] = xn[J[b]]
            for k in range(d):
                bt[k * n + b] = Xc[J[b], k]
        for a in range(m):
            an[a] = xn[I[a]]
            for k in range(d):
                rows[a * d + k] = Xc[I[a], k]
        if flagged:
            for a in range(m):
                af[a] = far[I[a]]
            for b in range(n):
                bf[b] = far[J[b]]
        nchunk = (m + chunk_rows - 1) // chunk_rows
        if m * n * (d + 8) > GATHER_PARALLEL_WORK:
            with parallel():
                s32 = <float*> malloc(scratch * sizeof(float)) if scratch else NULL
                if scratch and s32 == NULL:
                    lacking[0] = 1
                for c in prange(nchunk, schedule="dynamic"):
                    if scratch and s32 == NULL:  # raised below
                        continue
                    c0 = c * chunk_rows
                    _gauss_chunk(gamma, rows, d, an, bt, n, bn, &out[0, 0], ld, c0,
                                 chunk_rows if c0 + chunk_rows <= m else m - c0, upper,
                                 af, bf, s32)
                free(s32)
        else:
            s32 = <float*> malloc(scratch * sizeof(float)) if scratch else NULL
            if scratch and s32 == NULL:
                lacking[0] = 1
            else:
                for c in range(nchunk):
                    c0 = c * chunk_rows
                    _gauss_chunk(gamma, rows, d, an, bt, n, bn, &out[0, 0], ld, c0,
                                 chunk_rows if c0 + chunk_rows <= m else m - c0, upper,
                                 af, bf, s32)
            free(s32)
        free(bt)
        free(rows)
        free(an)
        free(bn)
        free(af)
        free(bf)
    if no_scratch:
        raise MemoryError(_no_scratch(chunk_rows * GATHER_COLS // 2, "a chunk's float32 tile"))


def mirror_upper(double[:, :] out):
    """Copy the strict upper triangle of a square block onto the lower one (64 x 64 tiles;
    rows may be a stride apart)."""
    cdef Py_ssize_t m = out.shape[0], i0, j0, i, j, i1, j1
    cdef Py_ssize_t ld = out.strides[0] // sizeof(double)
    cdef double* o
    if m < 2:
        return
    _check_rows(out)
    o = &out[0, 0]
    with nogil:
        for i0 in range(0, m, 64):
            i1 = i0 + 64 if i0 + 64 < m else m
            for j0 in range(i0, m, 64):
                j1 = j0 + 64 if j0 + 64 < m else m
                for i in range(i0, i1):
                    for j in range(j0 if j0 > i else i + 1, j1):
                        o[j * ld + i] = o[i * ld + j]


# Reads from a stored kernel (StoredKernelOperator) are memory-bound: threads pay only on
# blocks past this many entries (a parallel region's wait for a busy core costs more below)
DEF TAKE_PARALLEL_ENTRIES = 1000000
# columns of the running sum per thread in add_rows: 16 KB, it stays in L1 while rows stream
DEF ADD_CHUNK = 2048


ctypedef fused stored_t:
    double          # the kernel's entries
    unsigned char   # squared-distance codes: entry = table[code]


def take_block(const stored_t[:, ::1] Kd, const double[::1] table, const Py_ssize_t[::1] I,
               const Py_ssize_t[::1] J, double[:, ::1] out):
    """out[a, b] = Kd[I[a], J[b]]: a block gathered from a stored kernel matrix (through
    ``table`` when it holds codes: one byte an entry, a row of 25,000 points is 25 KB and its
    gathers stay in cache; ``table`` unused otherwise)."""
    cdef Py_ssize_t m = I.shape[0], n = J.shape[0], a, b
    cdef const stored_t* row
    if m == 0 or n == 0:
        return
    if m * n > TAKE_PARALLEL_ENTRIES:
        for a in prange(m, nogil=True, schedule="static"):
            row = &Kd[I[a], 0]
            for b in range(n):
                if stored_t is double:
                    out[a, b] = row[J[b]]
                else:
                    out[a, b] = table[row[J[b]]]
    else:
        with nogil:
            for a in range(m):
                row = &Kd[I[a], 0]
                for b in range(n):
                    if stored_t is double:
                        out[a, b] = row[J[b]]
                    else:
                        out[a, b] = table[row[J[b]]]


def add_rows(const stored_t[:, ::1] Kd, const double[::1] table, const Py_ssize_t[::1] rows,
             const double[::1] c, double[::1] t):
    """t += sum_j c[j] Kd[rows[j], :len(t)] (entries through ``table`` for codes, as
    :func:`take_block`): for a symmetric Kd (or symmetric in its first len(t) rows and
    columns, as a working-set block in a wider buffer), t += Kd[:len(t), rows] @ c, reading
    whole rows (contiguous) rather than gathering columns. Threads split t's entries; each
    entry's sum runs over ``rows`` in order whatever the thread count."""
    cdef Py_ssize_t n = t.shape[0], k = rows.shape[0], nchunk, ch, lo, hi, i, j
    cdef double cj
    cdef const stored_t* row
    if n == 0 or k == 0:
        return
    nchunk = (n + ADD_CHUNK - 1) // ADD_CHUNK
    if n * k > TAKE_PARALLEL_ENTRIES and nchunk > 1:
        for ch in prange(nchunk, nogil=True, schedule="static"):
            lo = ch * ADD_CHUNK
            hi = lo + ADD_CHUNK if lo + ADD_CHUNK < n else n
            for j in range(k):
                cj = c[j]
                row = &Kd[rows[j], 0]
                for i in range(lo, hi):
                    if stored_t is double:
                        t[i] += cj * row[i]
                    else:
                        t[i] += cj * table[row[i]]
    else:
        with nogil:
            for j in range(k):
                cj = c[j]
                row = &Kd[rows[j], 0]
                for i in range(n):
                    if stored_t is double:
                        t[i] += cj * row[i]
                    else:
                        t[i] += cj * table[row[i]]


def squared_distance_bytes(const floating[:, ::1] G, const floating[::1] sq_rows,
                           const floating[::1] sq, unsigned char[:, ::1] out):
    """out[i, j] = sq_rows[i] + sq[j] - 2 G[i, j]: squared distances from a Gram block, for
    integer points whose squared distances are known to fit a byte (exact there)."""
    cdef Py_ssize_t m = G.shape[0], n = G.shape[1], i, j
    cdef floating si
    for i in prange(m, nogil=True, schedule="static"):
        si = sq_rows[i]
        for j in range(n):
            out[i, j] = <unsigned char> (si + sq[j] - 2 * G[i, j])
