# cython: language_level=3
"""LIBSVM's SMO on the whole dual, with kernel rows computed on demand and cached.

The dual has LIBSVM's general form: min 1/2 a^T Q a + p^T a over 0 <= a_t <= C_t,
y^T a = const, with Q_st = y_s y_t k(x_m(s), x_m(t)) for a map m from variables to points
(the identity for the classifier, 2n variables on n points for epsilon-SVR). Every step
updates a pair chosen by the second-order rule of Fan, Chen and Lin (JMLR 2005) and the
gradient from the pair's two rows of Q.

Rows come from an LRU cache of rows of the current active length (LIBSVM's Cache): a row
is computed, from the point coordinates, only for the entries it lacks. Shrinking moves the
variables that cannot enter a violating pair behind the active ones, as LIBSVM does, by
swapping variables: every per-variable array, the columns of the coordinates and the
entries of the cached rows are swapped together, so a row stays a prefix over the active
variables. The gradient of the shrunk variables is rebuilt from G_bar (the bounded
variables' share of Q a) and the free variables' rows.

The solver loop is serial (its passes are short); a row long enough is split between
threads. No infinities are used: the module is built with -ffast-math (the vector exp),
which assumes finite values, so the empty extremes are +-_HUGE.
"""
cimport openmp
from cython.parallel cimport prange
from libc.math cimport sqrt, exp, pow
from libc.stdlib cimport realloc, free
from libc.string cimport memcpy, memset
from scipy.linalg.cython_blas cimport sgemv

import numpy as np

from hsskern.kernels._kinds cimport (GAUSSIAN, LAPLACIAN, POLYNOMIAL, SIGMOID, exp_scaled,
                                     of_dot)

cdef double _HUGE = 1e300
cdef double _TAU = 1e-12
# columns per chunk of a row: a chunk's partial sums stay in L1 across the d passes
cdef enum:
    _CHUNK = 512
# rows between retries of the slower thread count (see Engine._team_size)
cdef enum:
    _PROBE_FIRST = 8
    _PROBE_MAX = 256
cdef enum:
    _LOWER = 0
    _UPPER = 1
    _FREE = 2

ctypedef struct Row:
    void* data  # float or double entries (Engine.single)
    Py_ssize_t length
    Py_ssize_t prev
    Py_ssize_t nxt


# the cached rows' entry type: float (LIBSVM's Qfloat) or double; the gradient is double
ctypedef fused qfloat:
    float
    double


cdef inline double _at(const void* row, Py_ssize_t t, bint single) noexcept nogil:
    return (<const float*> row)[t] if single else (<const double*> row)[t]


cdef inline void _axpy(const qfloat* q, double s, double* out, Py_ssize_t lo,
                       Py_ssize_t hi) noexcept nogil:
    """out[k] += s q[k], lo <= k < hi, summed in double."""
    cdef Py_ssize_t k
    for k in range(lo, hi):
        out[k] += s * q[k]


cdef inline void _axpy2(const qfloat* qi, const qfloat* qj, double si, double sj, double* out,
                        Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        out[k] += qi[k] * si + qj[k] * sj


cdef inline void _swap_entries(qfloat* q, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    cdef qfloat tmp = q[i]
    q[i] = q[j]
    q[j] = tmp


cdef inline void _store(const double* src, void* dst, Py_ssize_t j0, Py_ssize_t j1,
                        bint single) noexcept nogil:
    """A computed stretch of a row into its cached entries (rounded to float if single)."""
    cdef Py_ssize_t j
    cdef float* f = <float*> dst
    cdef double* g = <double*> dst
    if single:
        for j in range(j0, j1):
            f[j] = <float> src[j]
    else:
        for j in range(j0, j1):
            g[j] = src[j]


cdef inline void _low_scan(const qfloat* Qi, const double* y, const double* G,
                           const double* QD, const char* st, double* ob, Py_ssize_t n,
                           double Gmax, double Kii, double yi, double* Gmax2,
                           double* omin) noexcept nogil:
    """The selection's I_low pass: the extreme of y G and each candidate's second-order
    gain -(Gmax + yG)^2 / quad into ``ob`` (branchless: vectorized)."""
    cdef Py_ssize_t t
    cdef double g, gd, quad, o, m2 = Gmax2[0], om = omin[0]
    for t in range(n):
        g = y[t] * G[t] if st[t] != (y[t] < 0) else -_HUGE
        m2 = g if g > m2 else m2
        gd = Gmax + g
        quad = Kii + QD[t] - 2.0 * yi * y[t] * Qi[t]
        quad = quad if quad > 0 else _TAU
        o = -(gd * gd) / quad if gd > 0 else _HUGE
        ob[t] = o
        om = o if o < om else om
    Gmax2[0], omin[0] = m2, om


cdef inline void _dot_columns(const double* a, const double* xt, Py_ssize_t ldx,
                              Py_ssize_t d, Py_ssize_t c0, Py_ssize_t c1,
                              double* out) noexcept nogil:
    """out[j] += a.x_j for c0 <= j < c1, four features a pass: the chunk of ``out`` is
    loaded and stored once per four multiply-adds, not once per one."""
    cdef Py_ssize_t j, k = 0
    cdef double a0, a1, a2, a3
    cdef const double* b0
    cdef const double* b1
    cdef const double* b2
    cdef const double* b3
    while k + 4 <= d:
        a0, a1, a2, a3 = a[k], a[k + 1], a[k + 2], a[k + 3]
        b0 = xt + k * ldx
        b1 = b0 + ldx
        b2 = b1 + ldx
        b3 = b2 + ldx
        for j in range(c0, c1):
            out[j] += (a0 * b0[j] + a1 * b1[j]) + (a2 * b2[j] + a3 * b3[j])
        k += 4
    while k < d:
        a0 = a[k]
        b0 = xt + k * ldx
        for j in range(c0, c1):
            out[j] += a0 * b0[j]
        k += 1


cdef void _single_dots(const float* xt32, Py_ssize_t ldx, Py_ssize_t d, Py_ssize_t i,
                       Py_ssize_t j0, Py_ssize_t j1, float* dots) noexcept nogil:
    """dots[j] = x_i.x_j for j0 <= j < j1 in float32 (sgemv on the float32 coordinates
    xt32, d x ldx): the columns are the matrix (column-major, by d, leading dimension ldx)
    and x_i its column i read with stride ldx. Half the bytes streamed of the double loop,
    twice the SIMD width; the caller bounds the rounding (cached_smo.py). One sgemv per
    _CHUNK columns from j0: a row split between threads (at chunk ends) makes the same
    calls as one thread, so no entry depends on the team (BLAS may order a longer call's
    sums by its length)."""
    cdef int m, n = <int> d, lda = <int> ldx, inc = <int> ldx, one = 1
    cdef float alpha = 1.0, zero = 0.0
    cdef Py_ssize_t c0 = j0
    while c0 < j1:
        m = <int> (_CHUNK if c0 + _CHUNK <= j1 else j1 - c0)
        sgemv("N", &m, &n, &alpha, <float*> xt32 + c0, &lda, <float*> xt32 + i, &inc, &zero,
              dots + c0, &one)
        c0 += _CHUNK


cdef void _kernel_columns(int kind, const double* prm, const double* a, const double* xt,
                          Py_ssize_t ldx, Py_ssize_t d, const double* y, double yi,
                          Py_ssize_t j0, Py_ssize_t j1, const double* xn, double an,
                          const unsigned char* far, double* out,
                          const float* dots=NULL) noexcept nogil:
    """out[j] = yi y[j] k(a, x_j) for j0 <= j < j1, x_j column j of xt (d x ldx). With
    ``xn`` (the columns' squared norms, ``an`` a's; Gaussian only) the squared distances are
    an + xn[j] - 2 a.x_j: one multiply-add an entry and feature instead of a subtraction
    too (the caller checks that the expansion's rounding is negligible), except to the
    columns flagged in ``far`` (given for a far row a only: the kernel operator's rule),
    summed directly. ``dots`` (with ``xn`` only): the inner products a.x_j computed
    already in float32 (:func:`_single_dots`); the norms, the expansion and the far
    columns' direct sums stay in double."""
    cdef Py_ssize_t c0, c1, j, k, w
    cdef double ak, t, r
    cdef const double* bk
    c0 = j0
    while c0 < j1:
        c1 = c0 + _CHUNK if c0 + _CHUNK < j1 else j1
        w = c1 - c0
        memset(out + c0, 0, w * sizeof(double))
        if kind == POLYNOMIAL or kind == SIGMOID:
            _dot_columns(a, xt, ldx, d, c0, c1, out)
            of_dot(kind, prm, out + c0, w)
        else:
            if xn != NULL:
                if dots != NULL:
                    for j in range(c0, c1):
                        out[j] = dots[j]
                else:
                    _dot_columns(a, xt, ldx, d, c0, c1, out)
                for j in range(c0, c1):
                    t = an + xn[j] - 2.0 * out[j]
                    out[j] = t if t > 0.0 else 0.0
                if far != NULL:
                    for j in range(c0, c1):
                        if far[j]:
                            out[j] = 0.0
                            for k in range(d):
                                t = a[k] - xt[k * ldx + j]
                                out[j] += t * t
            else:
                for k in range(d):
                    ak = a[k]
                    bk = xt + k * ldx
                    for j in range(c0, c1):
                        t = ak - bk[j]
                        out[j] += t * t
            if kind == GAUSSIAN:
                exp_scaled(out + c0, w, -prm[0])
            elif kind == LAPLACIAN:
                for j in range(c0, c1):
                    out[j] = sqrt(out[j])
                exp_scaled(out + c0, w, -prm[0])
            else:  # COMPACT
                for j in range(c0, c1):
                    r = sqrt(out[j])
                    t = 1.0 - r * prm[1]
                    out[j] = pow(t, prm[2]) * exp(-prm[0] * out[j]) if t > 0.0 else 0.0
        for j in range(c0, c1):
            out[j] = out[j] * (yi * y[j])
        c0 = c1


cdef class Engine:
    """The solver state of one dual (see :func:`solve`); trusted inputs, permuted in place."""

    cdef Py_ssize_t l, d, active_size, left, n_threads, isz
    cdef int kind
    cdef bint single  # rows cached as float (computed in double, LIBSVM's Qfloat)
    cdef double tol, par_work
    cdef bint shrinking, unshrunk, nu
    cdef long interval, max_iter
    cdef double* y
    cdef double* p
    cdef double* C
    cdef double* alpha
    cdef double* G
    cdef double* G_bar
    cdef double* QD
    cdef double* xt
    cdef float* xt32  # the coordinates in float32 (inner products by sgemv), or NULL
    cdef float* d_buf  # a row's float32 inner products (with xt32)
    cdef double* prm
    cdef double* a_buf
    cdef double* o_buf  # the selection's second-order gains, one per active variable
    cdef double* r_buf  # a row computed in double before it is rounded to float (single)
    cdef double* xn  # the variables' squared norms (the expanded distances), or NULL
    cdef unsigned char* far  # the variables whose mutual distances are summed directly, or NULL
    cdef char* status
    cdef Py_ssize_t* active_set
    cdef Row* rows
    cdef object keep  # the arrays behind the pointers
    cdef object act  # the original index of the variable at each position
    cdef public long rows_computed, entries_computed, row_requests
    cdef double rate[2]  # seconds per unit of row work on one thread [0], on the team [1]
    cdef long since, probe_gap

    def __cinit__(self):
        self.rows = NULL

    def __dealloc__(self):
        cdef Py_ssize_t t
        if self.rows != NULL:
            for t in range(self.l + 1):
                free(self.rows[t].data)
            free(self.rows)

    def __init__(self, int kind, double[::1] params, double[:, ::1] xt, double[::1] y,
                 double[::1] p, double[::1] C, double[::1] alpha, double[::1] G,
                 double[::1] G_bar, double[::1] QD, double cache_entries, double tol,
                 bint shrinking, long interval, long max_iter, int n_threads,
                 double par_work, double[::1] xn=None, bint nu=False,
                 unsigned char[::1] far=None, bint single=False, float[:, ::1] xt32=None):
        """``cache_entries`` (the 11th argument) counts row entries: bytes / 4 with
        ``single`` (rows cached as float), / 8 without. ``xt32`` (with ``xn`` only): ``xt``
        rounded to float32, whose inner products (sgemv) give the expanded distances' cross
        term; the engine swaps it with ``xt``."""
        cdef Py_ssize_t t, l = y.shape[0]
        self.l, self.d, self.kind = l, xt.shape[0], kind
        self.keep = (params, xt, y, p, C, alpha, G, G_bar, QD)
        self.prm, self.xt = &params[0], &xt[0, 0]
        self.y, self.p, self.C = &y[0], &p[0], &C[0]
        self.alpha, self.G, self.G_bar, self.QD = &alpha[0], &G[0], &G_bar[0], &QD[0]
        st = np.empty(l, dtype=np.int8)
        act = np.arange(l, dtype=np.intp)
        abuf = np.empty(max(self.d, 1))
        obuf = np.empty(max(l, 1))
        rbuf = np.empty(max(l, 1) if single else 1)
        use32 = xt32 is not None and xn is not None
        if use32 and (xt32.shape[0] != self.d or xt32.shape[1] != l):
            raise ValueError(f"xt32 must have xt's shape ({self.d}, {l})")
        dbuf = np.empty(max(l, 1) if use32 else 1, dtype=np.float32)
        self.keep = self.keep + (st, abuf, obuf, xn, far, rbuf, xt32, dbuf)
        self.xt32 = &xt32[0, 0] if use32 and l > 0 and self.d > 0 else NULL
        cdef float[::1] dbv = dbuf
        self.d_buf = &dbv[0]
        self.single = single
        self.isz = sizeof(float) if single else sizeof(double)
        self.xn = &xn[0] if xn is not None else NULL
        self.far = &far[0] if xn is not None and far is not None and far.shape[0] else NULL
        self.act = act
        cdef signed char[::1] stv = st
        cdef Py_ssize_t[::1] actv = act
        cdef double[::1] abv = abuf
        cdef double[::1] obv = obuf
        cdef double[::1] rbv = rbuf
        self.r_buf = &rbv[0]
        self.status = <char*> &stv[0]
        self.active_set = &actv[0]
        self.a_buf = &abv[0]
        self.o_buf = &obv[0]
        self.active_size = l
        # at least two whole rows: the pair's two rows are then never evicted by each other
        self.left = <Py_ssize_t> max(cache_entries, 2.0 * l)
        self.tol, self.shrinking, self.interval, self.max_iter = tol, shrinking, interval, max_iter
        self.n_threads, self.par_work = max(1, n_threads), par_work
        self.unshrunk = False
        self.nu = nu
        self.rate[0] = self.rate[1] = 0.0
        self.since, self.probe_gap = 0, _PROBE_FIRST
        self.rows_computed = self.entries_computed = self.row_requests = 0
        self.rows = <Row*> realloc(NULL, (l + 1) * sizeof(Row))
        if self.rows == NULL:
            raise MemoryError(f"the row cache's table of {l + 1} rows")
        for t in range(l + 1):
            self.rows[t].data = NULL
            self.rows[t].length = 0
        self.rows[l].prev = self.rows[l].nxt = l  # the LRU list's sentinel
        for t in range(l):
            self._set_status(t)

    # --- the cache -------------------------------------------------------------------
    cdef inline void _lru_delete(self, Py_ssize_t t) noexcept nogil:
        self.rows[self.rows[t].prev].nxt = self.rows[t].nxt
        self.rows[self.rows[t].nxt].prev = self.rows[t].prev

    cdef inline void _lru_insert(self, Py_ssize_t t) noexcept nogil:
        # at the tail: the most recently used
        cdef Py_ssize_t s = self.l
        self.rows[t].nxt = s
        self.rows[t].prev = self.rows[s].prev
        self.rows[self.rows[t].prev].nxt = t
        self.rows[s].prev = t

    cdef inline void _drop(self, Py_ssize_t t) noexcept nogil:
        free(self.rows[t].data)
        self.left += self.rows[t].length
        self.rows[t].data = NULL
        self.rows[t].length = 0

    cdef void* _row(self, Py_ssize_t i, Py_ssize_t length) except NULL nogil:
        """Row i of Q over the first ``length`` variables, from the cache where it has them."""
        cdef Row* h = &self.rows[i]
        cdef Py_ssize_t more, start, old
        cdef void* buf
        self.row_requests += 1
        if h.length:
            self._lru_delete(i)
        more = length - h.length
        start = length
        if more > 0:
            while self.left < more:
                old = self.rows[self.l].nxt
                self._lru_delete(old)
                self._drop(old)
            buf = realloc(h.data, length * self.isz)
            if buf == NULL:
                with gil:
                    raise MemoryError(f"a kernel row of {length} entries")
            h.data = buf
            self.left -= more
            start = h.length
            h.length = length
        self._lru_insert(i)
        if start < length:
            self._compute(i, start, length, h.data)
        return h.data

    cdef void _compute(self, Py_ssize_t i, Py_ssize_t j0, Py_ssize_t j1,
                       void* dest) noexcept nogil:
        """Entries j0 <= j < j1 of row i into ``dest``: in double, rounded to float after
        when the rows are single (LIBSVM computes Q in double and caches it as float)."""
        cdef Py_ssize_t k, part, nt = 1, lo, hi, nch
        cdef Py_ssize_t l = self.l, d = self.d
        cdef double work = (j1 - j0) * (d + 8.0), t0
        cdef double an = self.xn[i] if self.xn != NULL else 0.0
        cdef const unsigned char* far = (self.far if self.far != NULL and self.far[i]
                                         else NULL)
        cdef bint timed = False
        cdef double* out = self.r_buf if self.single else <double*> dest
        for k in range(d):
            self.a_buf[k] = self.xt[k * l + i]
        self.rows_computed += 1
        self.entries_computed += j1 - j0
        if self.n_threads > 1 and work >= self.par_work:
            nt, timed = self._team_size(), True
            t0 = openmp.omp_get_wtime()
        if nt > 1:
            # the parts end on the chunks of one thread's pass: every entry is computed in
            # the same vector lane or scalar tail whatever the team, so a row does not
            # depend on the thread count the timing chose
            nch = (j1 - j0 + _CHUNK - 1) // _CHUNK
            for part in prange(nt, num_threads=nt, schedule="static"):
                lo = j0 + _CHUNK * (nch * part // nt)
                hi = j0 + _CHUNK * (nch * (part + 1) // nt)
                if hi > j1:
                    hi = j1
                if self.xt32 != NULL:
                    _single_dots(self.xt32, l, d, i, lo, hi, self.d_buf)
                _kernel_columns(self.kind, self.prm, self.a_buf, self.xt, l, d, self.y,
                                self.y[i], lo, hi, self.xn, an, far, out,
                                self.d_buf if self.xt32 != NULL else NULL)
        else:
            if self.xt32 != NULL:
                _single_dots(self.xt32, l, d, i, j0, j1, self.d_buf)
            _kernel_columns(self.kind, self.prm, self.a_buf, self.xt, l, d, self.y,
                            self.y[i], j0, j1, self.xn, an, far, out,
                            self.d_buf if self.xt32 != NULL else NULL)
        if self.single:
            _store(out, dest, j0, j1, True)
        if timed:
            t0 = (openmp.omp_get_wtime() - t0) / work
            k = 0 if nt == 1 else 1
            self.rate[k] = t0 if self.rate[k] == 0.0 else 0.7 * self.rate[k] + 0.3 * t0

    cdef inline Py_ssize_t _team_size(self) noexcept nogil:
        """Threads for the next long row: whichever count was measured faster, the other
        tried again after _PROBE_FIRST rows, then after twice as many, up to _PROBE_MAX (a
        core busy with another process makes a split row wait for it: then one is faster)."""
        cdef Py_ssize_t fast
        if self.rate[1] == 0.0:
            return self.n_threads
        if self.rate[0] == 0.0:
            return 1
        fast = self.n_threads if self.rate[1] <= self.rate[0] else 1
        self.since += 1
        if self.since >= self.probe_gap:
            self.since = 0
            self.probe_gap = min(2 * self.probe_gap, _PROBE_MAX)
            return 1 if fast > 1 else self.n_threads
        return fast

    cdef void _swap(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
        """Variables i and j trade places everywhere, cached rows included."""
        cdef Py_ssize_t k, t, l = self.l
        cdef double tmp
        cdef float tmp32
        cdef char c
        cdef void* dp
        cdef Row* h
        if i == j:
            return
        self.y[i], self.y[j] = self.y[j], self.y[i]
        self.p[i], self.p[j] = self.p[j], self.p[i]
        self.C[i], self.C[j] = self.C[j], self.C[i]
        self.alpha[i], self.alpha[j] = self.alpha[j], self.alpha[i]
        self.G[i], self.G[j] = self.G[j], self.G[i]
        self.G_bar[i], self.G_bar[j] = self.G_bar[j], self.G_bar[i]
        self.QD[i], self.QD[j] = self.QD[j], self.QD[i]
        if self.xn != NULL:
            self.xn[i], self.xn[j] = self.xn[j], self.xn[i]
        if self.far != NULL:
            self.far[i], self.far[j] = self.far[j], self.far[i]
        c = self.status[i]
        self.status[i] = self.status[j]
        self.status[j] = c
        self.active_set[i], self.active_set[j] = self.active_set[j], self.active_set[i]
        for k in range(self.d):
            tmp = self.xt[k * l + i]
            self.xt[k * l + i] = self.xt[k * l + j]
            self.xt[k * l + j] = tmp
        if self.xt32 != NULL:
            for k in range(self.d):
                tmp32 = self.xt32[k * l + i]
                self.xt32[k * l + i] = self.xt32[k * l + j]
                self.xt32[k * l + j] = tmp32
        # the rows themselves
        if self.rows[i].length:
            self._lru_delete(i)
        if self.rows[j].length:
            self._lru_delete(j)
        dp = self.rows[i].data
        self.rows[i].data = self.rows[j].data
        self.rows[j].data = dp
        t = self.rows[i].length
        self.rows[i].length = self.rows[j].length
        self.rows[j].length = t
        if self.rows[i].length:
            self._lru_insert(i)
        if self.rows[j].length:
            self._lru_insert(j)
        # the entries of every cached row: a row holding only one of the two is dropped
        if i > j:
            i, j = j, i
        t = self.rows[l].nxt
        while t != l:
            h = &self.rows[t]
            k = h.nxt
            if h.length > i:
                if h.length > j:
                    if self.single:
                        _swap_entries(<float*> h.data, i, j)
                    else:
                        _swap_entries(<double*> h.data, i, j)
                else:
                    self._lru_delete(t)
                    self._drop(t)
            t = k

    # --- the solver ------------------------------------------------------------------
    cdef inline void _set_status(self, Py_ssize_t t) noexcept nogil:
        if self.alpha[t] >= self.C[t]:
            self.status[t] = _UPPER
        elif self.alpha[t] <= 0:
            self.status[t] = _LOWER
        else:
            self.status[t] = _FREE

    cdef int _select(self, Py_ssize_t* out_i, Py_ssize_t* out_j, double* gap) except -1 nogil:
        """LIBSVM's second-order working-set selection over the active variables; 1 when
        they satisfy the stopping rule (``gap`` = m(a) - M(a) over them), else 0.

        Each extreme is a branchless pass (vectorized) and then the last variable that
        attains it, which is LIBSVM's choice among ties (its ``>=`` / ``<=`` scans)."""
        cdef Py_ssize_t t, i = -1, j = -1, n = self.active_size
        cdef double Gmax = -_HUGE, Gmax2 = -_HUGE, omin = _HUGE, g, gd, quad, o, Kii, yi
        cdef double* y = self.y
        cdef double* G = self.G
        cdef double* QD = self.QD
        cdef double* ob = self.o_buf
        cdef char* st = self.status
        cdef void* Qi = NULL
        # I_up: y > 0 below its upper bound, y < 0 above its lower one (status codes
        # _LOWER = 0, _UPPER = 1: "status != (y > 0)"); the candidate's value is -y G
        for t in range(n):
            g = -y[t] * G[t] if st[t] != (y[t] > 0) else -_HUGE
            Gmax = g if g > Gmax else Gmax
        if Gmax > -_HUGE:
            t = n - 1
            while t > 0 and not (st[t] != (y[t] > 0) and -y[t] * G[t] == Gmax):
                t -= 1
            i = t
        if i >= 0:
            Qi = self._row(i, n)
            Kii = QD[i]
            yi = y[i]
            # I_low: "status != (y < 0)"; the value is y G, the gain -(Gmax + yG)^2 / quad
            if self.single:
                _low_scan(<float*> Qi, y, G, QD, st, ob, n, Gmax, Kii, yi, &Gmax2, &omin)
            else:
                _low_scan(<double*> Qi, y, G, QD, st, ob, n, Gmax, Kii, yi, &Gmax2, &omin)
            if omin < _HUGE:
                t = n - 1
                while t > 0 and ob[t] != omin:
                    t -= 1
                j = t
        else:  # no variable can move up: the gap is still the lower side's extreme
            for t in range(n):
                g = y[t] * G[t] if st[t] != (y[t] < 0) else -_HUGE
                Gmax2 = g if g > Gmax2 else Gmax2
        gap[0] = Gmax + Gmax2
        if Gmax + Gmax2 < self.tol or j < 0:
            return 1
        out_i[0] = i
        out_j[0] = j
        return 0

    cdef inline bint _shrinkable(self, Py_ssize_t t, double Gmax1, double Gmax2) noexcept nogil:
        if self.status[t] == _UPPER:
            return (-self.G[t] > Gmax1) if self.y[t] > 0 else (-self.G[t] > Gmax2)
        if self.status[t] == _LOWER:
            return (self.G[t] > Gmax2) if self.y[t] > 0 else (self.G[t] > Gmax1)
        return False

    cdef int _shrink(self) except -1 nogil:
        cdef Py_ssize_t t
        cdef double Gmax1 = -_HUGE, Gmax2 = -_HUGE  # max of -yG over I_up, of yG over I_low
        cdef double* G = self.G
        for t in range(self.active_size):
            if self.y[t] > 0:
                if self.status[t] != _UPPER and -G[t] >= Gmax1:
                    Gmax1 = -G[t]
                if self.status[t] != _LOWER and G[t] >= Gmax2:
                    Gmax2 = G[t]
            else:
                if self.status[t] != _UPPER and -G[t] >= Gmax2:
                    Gmax2 = -G[t]
                if self.status[t] != _LOWER and G[t] >= Gmax1:
                    Gmax1 = G[t]
        if not self.unshrunk and Gmax1 + Gmax2 <= 10.0 * self.tol:
            self.unshrunk = True  # once, near the end: every variable back with its gradient
            self._reconstruct()
            self.active_size = self.l
        t = 0
        while t < self.active_size:
            if self._shrinkable(t, Gmax1, Gmax2):
                self.active_size -= 1
                while self.active_size > t:
                    if not self._shrinkable(self.active_size, Gmax1, Gmax2):
                        self._swap(t, self.active_size)
                        break
                    self.active_size -= 1
            t += 1
        return 0

    cdef int _reconstruct(self) except -1 nogil:
        """The inactive variables' gradient from G_bar and the free variables' rows."""
        cdef Py_ssize_t i, j, n = self.active_size, l = self.l, nr_free = 0
        cdef void* Qi
        cdef double s
        if n == l:
            return 0
        for j in range(n, l):
            self.G[j] = self.G_bar[j] + self.p[j]
        for j in range(n):
            if self.status[j] == _FREE:
                nr_free += 1
        # whichever reads fewer entries: the inactive rows over the active part, or the
        # free variables' whole rows
        if nr_free * l > 2 * n * (l - n):
            for i in range(n, l):
                Qi = self._row(i, n)
                s = 0.0
                for j in range(n):
                    if self.status[j] == _FREE:
                        s += self.alpha[j] * _at(Qi, j, self.single)
                self.G[i] += s
        else:
            for i in range(n):
                if self.status[i] == _FREE:
                    Qi = self._row(i, l)
                    if self.single:
                        _axpy(<float*> Qi, self.alpha[i], self.G, n, l)
                    else:
                        _axpy(<double*> Qi, self.alpha[i], self.G, n, l)
        return 0

    cdef int _update_pair(self, Py_ssize_t i, Py_ssize_t j) except -1 nogil:
        cdef Py_ssize_t k, n = self.active_size, l = self.l
        cdef void* Qi = self._row(i, n)
        cdef void* Qj = self._row(j, n)
        cdef double* alpha = self.alpha
        cdef double Ci = self.C[i], Cj = self.C[j], ai = alpha[i], aj = alpha[j]
        cdef double quad, delta, diff, s, dai, daj
        cdef bint ui, uj
        if self.y[i] != self.y[j]:
            quad = self.QD[i] + self.QD[j] + 2.0 * _at(Qi, j, self.single)
            if quad <= 0:
                quad = _TAU
            delta = (-self.G[i] - self.G[j]) / quad
            diff = ai - aj
            alpha[i] = ai + delta
            alpha[j] = aj + delta
            if diff > 0:
                if alpha[j] < 0:
                    alpha[j] = 0.0
                    alpha[i] = diff
            elif alpha[i] < 0:
                alpha[i] = 0.0
                alpha[j] = -diff
            if diff > Ci - Cj:
                if alpha[i] > Ci:
                    alpha[i] = Ci
                    alpha[j] = Ci - diff
            elif alpha[j] > Cj:
                alpha[j] = Cj
                alpha[i] = Cj + diff
        else:
            quad = self.QD[i] + self.QD[j] - 2.0 * _at(Qi, j, self.single)
            if quad <= 0:
                quad = _TAU
            delta = (self.G[i] - self.G[j]) / quad
            s = ai + aj
            alpha[i] = ai - delta
            alpha[j] = aj + delta
            if s > Ci:
                if alpha[i] > Ci:
                    alpha[i] = Ci
                    alpha[j] = s - Ci
            elif alpha[j] < 0:
                alpha[j] = 0.0
                alpha[i] = s
            if s > Cj:
                if alpha[j] > Cj:
                    alpha[j] = Cj
                    alpha[i] = s - Cj
            elif alpha[i] < 0:
                alpha[i] = 0.0
                alpha[j] = s
        dai = alpha[i] - ai
        daj = alpha[j] - aj
        if self.single:
            _axpy2(<float*> Qi, <float*> Qj, dai, daj, self.G, n)
        else:
            _axpy2(<double*> Qi, <double*> Qj, dai, daj, self.G, n)
        ui = self.status[i] == _UPPER
        uj = self.status[j] == _UPPER
        self._set_status(i)
        self._set_status(j)
        # G_bar follows the variables that reached or left their upper bound (whole rows)
        if ui != (self.status[i] == _UPPER):
            Qi = self._row(i, l)
            self._bar(Qi, -Ci if ui else Ci)
        if uj != (self.status[j] == _UPPER):
            Qj = self._row(j, l)
            self._bar(Qj, -Cj if uj else Cj)
        return 0

    cdef inline void _bar(self, const void* Q, double s) noexcept nogil:
        """G_bar += s Q (a variable reached or left its bound s; Q its whole row)."""
        if self.single:
            _axpy(<const float*> Q, s, self.G_bar, 0, self.l)
        else:
            _axpy(<const double*> Q, s, self.G_bar, 0, self.l)

    cdef long _solve(self, double* gap) except -1 nogil:
        cdef long it = 0, counter
        cdef Py_ssize_t i = 0, j = 0
        counter = min(self.l, self.interval) + 1
        while it < self.max_iter:
            counter -= 1
            if counter == 0:
                counter = min(self.l, self.interval)
                if self.shrinking:
                    self._shrink_nu() if self.nu else self._shrink()
            if self._pick(&i, &j, gap):
                # converged on the active part: every variable back, the test on all
                self._reconstruct()
                self.active_size = self.l
                if self._pick(&i, &j, gap):
                    return it
                counter = 1  # shrink at the next step
            it += 1
            self._update_pair(i, j)
        if self.active_size < self.l:
            self._reconstruct()
            self.active_size = self.l
        self._pick(&i, &j, gap)
        return it

    cdef inline int _pick(self, Py_ssize_t* i, Py_ssize_t* j, double* gap) except -1 nogil:
        if self.nu:
            return self._select_nu(i, j, gap)
        return self._select(i, j, gap)

    # --- the nu variant (LIBSVM's Solver_NU): both variables of a pair share a label, so
    # y^T a and e^T a stay fixed; selection, shrinking and rho work within each label's set
    cdef int _select_nu(self, Py_ssize_t* out_i, Py_ssize_t* out_j,
                        double* gap) except -1 nogil:
        cdef Py_ssize_t t, ip = -1, jn = -1, j = -1, n = self.active_size
        cdef double Gmaxp = -_HUGE, Gmaxp2 = -_HUGE, Gmaxn = -_HUGE, Gmaxn2 = -_HUGE
        cdef double omin = _HUGE, g, gd, quad, o
        cdef double* y = self.y
        cdef double* G = self.G
        cdef double* QD = self.QD
        cdef char* st = self.status
        cdef void* Qp = NULL
        cdef void* Qn = NULL
        for t in range(n):
            if y[t] > 0:
                if st[t] != _UPPER and -G[t] >= Gmaxp:
                    Gmaxp = -G[t]
                    ip = t
            elif st[t] != _LOWER and G[t] >= Gmaxn:
                Gmaxn = G[t]
                jn = t
        if ip >= 0:
            Qp = self._row(ip, n)
        if jn >= 0:
            Qn = self._row(jn, n)
        for t in range(n):
            if y[t] > 0:
                if st[t] != _LOWER:
                    g = G[t]
                    if g >= Gmaxp2:
                        Gmaxp2 = g
                    gd = Gmaxp + g
                    if gd > 0 and ip >= 0:
                        quad = QD[ip] + QD[t] - 2.0 * _at(Qp, t, self.single)
                        o = -(gd * gd) / (quad if quad > 0 else _TAU)
                        if o <= omin:
                            omin = o
                            j = t
            elif st[t] != _UPPER:
                g = -G[t]
                if g >= Gmaxn2:
                    Gmaxn2 = g
                gd = Gmaxn + g
                if gd > 0 and jn >= 0:
                    quad = QD[jn] + QD[t] - 2.0 * _at(Qn, t, self.single)
                    o = -(gd * gd) / (quad if quad > 0 else _TAU)
                    if o <= omin:
                        omin = o
                        j = t
        gap[0] = Gmaxp + Gmaxp2 if Gmaxp + Gmaxp2 > Gmaxn + Gmaxn2 else Gmaxn + Gmaxn2
        if gap[0] < self.tol or j < 0:
            return 1
        out_i[0] = ip if y[j] > 0 else jn
        out_j[0] = j
        return 0

    cdef inline bint _shrinkable_nu(self, Py_ssize_t t, double Gmax1, double Gmax2,
                                    double Gmax3, double Gmax4) noexcept nogil:
        if self.status[t] == _UPPER:
            return (-self.G[t] > Gmax1) if self.y[t] > 0 else (-self.G[t] > Gmax4)
        if self.status[t] == _LOWER:
            return (self.G[t] > Gmax2) if self.y[t] > 0 else (self.G[t] > Gmax3)
        return False

    cdef int _shrink_nu(self) except -1 nogil:
        cdef Py_ssize_t t
        # per label: max of -G over the variables that can grow, of G over those that can shrink
        cdef double Gmax1 = -_HUGE, Gmax2 = -_HUGE, Gmax3 = -_HUGE, Gmax4 = -_HUGE
        cdef double* G = self.G
        for t in range(self.active_size):
            if self.status[t] != _UPPER:
                if self.y[t] > 0:
                    Gmax1 = -G[t] if -G[t] > Gmax1 else Gmax1
                else:
                    Gmax4 = -G[t] if -G[t] > Gmax4 else Gmax4
            if self.status[t] != _LOWER:
                if self.y[t] > 0:
                    Gmax2 = G[t] if G[t] > Gmax2 else Gmax2
                else:
                    Gmax3 = G[t] if G[t] > Gmax3 else Gmax3
        if not self.unshrunk and max(Gmax1 + Gmax2, Gmax3 + Gmax4) <= 10.0 * self.tol:
            self.unshrunk = True
            self._reconstruct()
            self.active_size = self.l
        t = 0
        while t < self.active_size:
            if self._shrinkable_nu(t, Gmax1, Gmax2, Gmax3, Gmax4):
                self.active_size -= 1
                while self.active_size > t:
                    if not self._shrinkable_nu(self.active_size, Gmax1, Gmax2, Gmax3, Gmax4):
                        self._swap(t, self.active_size)
                        break
                    self.active_size -= 1
            t += 1
        return 0

    def rho_nu(self):
        """LIBSVM's Solver_NU offsets: (rho, r) = ((r1 - r2) / 2, (r1 + r2) / 2), r1 and r2
        each label's mean G over its free variables (else the midpoint of its bounds)."""
        cdef Py_ssize_t t, k
        cdef double[2] ub, lb, s
        cdef long[2] nf
        cdef double r[2]
        for k in range(2):
            ub[k], lb[k], s[k], nf[k] = _HUGE, -_HUGE, 0.0, 0
        for t in range(self.l):
            k = 0 if self.y[t] > 0 else 1
            if self.status[t] == _UPPER:
                lb[k] = max(lb[k], self.G[t])
            elif self.status[t] == _LOWER:
                ub[k] = min(ub[k], self.G[t])
            else:
                nf[k] += 1
                s[k] += self.G[t]
        for k in range(2):
            r[k] = s[k] / nf[k] if nf[k] > 0 else 0.5 * (ub[k] + lb[k])
        return 0.5 * (r[0] - r[1]), 0.5 * (r[0] + r[1])

    def run(self):
        """Solve; returns (iterations, final gap over all variables)."""
        cdef double gap = 0.0
        cdef long it
        with nogil:
            it = self._solve(&gap)
        return it, gap

    def rho(self):
        """LIBSVM's rho: the mean of y G over the free variables, else the midpoint of the
        bounds the bounded ones put on it."""
        cdef Py_ssize_t t, nr_free = 0
        cdef double ub = _HUGE, lb = -_HUGE, sum_free = 0.0, yG
        for t in range(self.l):
            yG = self.y[t] * self.G[t]
            if self.status[t] == _UPPER:
                if self.y[t] < 0:
                    ub = min(ub, yG)
                else:
                    lb = max(lb, yG)
            elif self.status[t] == _LOWER:
                if self.y[t] > 0:
                    ub = min(ub, yG)
                else:
                    lb = max(lb, yG)
            else:
                nr_free += 1
                sum_free += yG
        if nr_free > 0:
            return sum_free / nr_free
        return 0.5 * (ub + lb)

    def order(self):
        """The original index of the variable at each position."""
        return np.array(self.act, copy=True)

    def preload(self, Q):
        """Every row of Q cached whole before the first run, from the caller's l x l matrix
        Q_st = y_s y_t k(x_s, x_t) in the variables' original order (C-contiguous, float32
        with single rows, float64 without): the engine then computes no row (a kernel
        matrix whose blocks several problems share, :mod:`hsskern.solvers.paths.pairwise`). The
        rows take l^2 of the cache's entries (a ValueError when it holds fewer)."""
        cdef Py_ssize_t t, l = self.l
        cdef float[:, ::1] q32
        cdef double[:, ::1] q64
        cdef const void* src
        cdef void* buf
        if self.row_requests:
            raise ValueError("preload comes before the first run (the rows' original order)")
        if tuple(Q.shape) != (l, l):
            raise ValueError(f"preload takes a {l} x {l} matrix, got {tuple(Q.shape)}")
        if self.single:
            q32 = Q
        else:
            q64 = Q
        if self.left < l * l:
            raise ValueError(f"the row cache holds {self.left} entries, not the {l * l} of "
                             "every row")
        for t in range(l):
            if self.rows[t].length:
                self._lru_delete(t)
                self._drop(t)
            buf = realloc(NULL, l * self.isz)
            if buf == NULL:
                raise MemoryError(f"a kernel row of {l} entries")
            src = <const void*> &q32[t, 0] if self.single else <const void*> &q64[t, 0]
            memcpy(buf, src, l * self.isz)
            self.rows[t].data = buf
            self.rows[t].length = l
            self.left -= l
            self._lru_insert(t)

    def reset(self, double[::1] C, double[::1] alpha, double[::1] G, double[::1] G_bar,
              double tol, long max_iter):
        """A new problem on the same points, labels and linear term (the next C of a path):
        its bounds, start and gradients, given in the current positions' order
        (:meth:`order`). The cached rows of Q stay: they depend on none of these."""
        cdef Py_ssize_t t
        if C.shape[0] != self.l or alpha.shape[0] != self.l or G.shape[0] != self.l \
                or G_bar.shape[0] != self.l:
            raise ValueError(f"reset takes {self.l} bounds, alphas and gradients")
        self.keep = self.keep[:4] + (C, alpha, G, G_bar) + self.keep[8:]
        self.C, self.alpha, self.G, self.G_bar = &C[0], &alpha[0], &G[0], &G_bar[0]
        self.tol, self.max_iter = tol, max_iter
        self.active_size = self.l
        self.unshrunk = False
        for t in range(self.l):
            self._set_status(t)


def max_threads():
    """OpenMP's thread count for the next parallel region."""
    return openmp.omp_get_max_threads()
