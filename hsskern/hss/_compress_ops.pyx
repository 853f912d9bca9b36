# cython: language_level=3
"""Compiled inner steps of HSS-ANN compression (compress.py).

A node's compression is a few small dense operations (a pivoted QR, kernel tiles) wrapped in
set bookkeeping on index arrays: which neighbour columns to sample, unions of sampled
columns, random draws minus what is already sampled. With np.unique / np.isin / np.union1d
every such step costs tens of microseconds of sorting and temporaries, per node, which adds
up to a large share of the compression phase. Here each is one
pass over the indices with scratch arrays of size n, allocated once per compression and
reset entry by entry after each use, so no step costs O(n). The row ID calls LAPACK
directly for the same reason: scipy's wrappers around these small factorizations cost half
as much again as the factorizations.

Inputs are trusted (intp indices in range; compress.py makes them).
"""
from libc.math cimport fabs, sqrt
from libc.stdlib cimport malloc, free
from scipy.linalg.cython_lapack cimport dgeqp3
from scipy.linalg.cython_blas cimport dtrsm, dgemm
from cython.parallel cimport prange

from hsskern.utils._bestk cimport best_k_insert

import numpy as np


cdef extern from *:
    void __builtin_prefetch(const void* addr) noexcept nogil


cdef void _sort(int* a, Py_ssize_t n) noexcept nogil:
    """Ascending in-place sort (quicksort, insertion sort below 16 elements)."""
    cdef Py_ssize_t i, j, lo, hi
    cdef int x, p
    while n > 16:
        # median of three as pivot, Hoare's partition
        i = n // 2
        if a[i] < a[0]:
            a[i], a[0] = a[0], a[i]
        if a[n - 1] < a[0]:
            a[n - 1], a[0] = a[0], a[n - 1]
        if a[n - 1] < a[i]:
            a[n - 1], a[i] = a[i], a[n - 1]
        p = a[i]
        lo = -1
        hi = n
        while True:
            lo += 1
            while a[lo] < p:
                lo += 1
            hi -= 1
            while a[hi] > p:
                hi -= 1
            if lo >= hi:
                break
            a[lo], a[hi] = a[hi], a[lo]
        # recurse into the smaller part, loop on the larger: O(log n) stack
        if hi + 1 < n - hi - 1:
            _sort(a, hi + 1)
            a = a + hi + 1
            n = n - hi - 1
        else:
            _sort(a + hi + 1, n - hi - 1)
            n = hi + 1
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef void _select(long long* a, Py_ssize_t n, Py_ssize_t kth) noexcept nogil:
    """Reorder the distinct values a[:n] so that a[:kth] are the kth smallest (Hoare's
    quickselect, median of three; O(n) on average)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, i, j, mid
    cdef long long p
    while hi > lo:
        mid = lo + (hi - lo) // 2
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        p = a[mid]
        i = lo - 1
        j = hi + 1
        while True:
            i += 1
            while a[i] < p:
                i += 1
            j -= 1
            while a[j] > p:
                j -= 1
            if i >= j:
                break
            a[i], a[j] = a[j], a[i]
        # a[lo..j] <= p <= a[j+1..hi]: keep the side holding position kth - 1
        if kth - 1 <= j:
            hi = j
        else:
            lo = j + 1


cdef object _as_intp(const int* a, Py_ssize_t n):
    out = np.empty(n, np.intp)
    cdef Py_ssize_t[::1] ov = out
    cdef Py_ssize_t i
    for i in range(n):
        ov[i] = a[i]
    return out


cdef class ColumnSampler:
    """A node's sample columns: neighbours outside the node, random draws per stratum of its
    complement, and unions of such sets. One instance per compression.

    Holds the neighbour lists in tree order (``nbt[p, j]``: tree position of the j-th
    neighbour of the point at position p; points of a node and their neighbours then sit in
    nearby memory, where scanning by original index jumped around arrays of size n) and the
    scratch arrays of size n. Between calls every ``slot`` entry is -1. Not thread-safe.
    """
    cdef readonly Py_ssize_t n, k
    cdef const Py_ssize_t[::1] perm
    cdef const Py_ssize_t[::1] iperm
    cdef int[:, ::1] nbt
    cdef int[::1] slot   # candidate number of a position / mark of a column; -1 free
    cdef int[::1] buf    # candidates, in order met (positions) or distinct columns
    cdef int[::1] cnt    # rows listing each candidate
    cdef int[::1] rsum   # sum of each candidate's ranks in the lists that hold it
    cdef int[::1] hist   # counts of counts
    cdef long long[::1] ties  # (rank sum, number) keys of the candidates tied at the cut
    cdef int[::1] rowpos # tree positions of the rows being scanned
    cdef unsigned char[::1] keep

    def __init__(self, const Py_ssize_t[:, ::1] neighbors, const Py_ssize_t[::1] perm,
                 const Py_ssize_t[::1] iperm):
        cdef Py_ssize_t n = perm.shape[0], k = neighbors.shape[1], p, j, r
        if n >= 2 ** 31:
            raise ValueError("ColumnSampler indexes points with 32-bit integers")
        self.n, self.k = n, k
        self.perm, self.iperm = perm, iperm
        self.nbt = np.empty((n, k), np.intc)
        self.slot = np.full(n, -1, np.intc)
        self.buf = np.empty(n, np.intc)
        self.cnt = np.empty(n, np.intc)
        self.rsum = np.empty(n, np.intc)
        self.hist = np.empty(n + 1, np.intc)
        self.ties = np.empty(n, np.longlong)
        self.rowpos = np.empty(n + 1, np.intc)
        self.keep = np.empty(n, np.uint8)
        cdef int[:, ::1] nbt = self.nbt
        if k:
            for p in prange(n, nogil=True, schedule="static"):
                r = perm[p]
                for j in range(k):
                    nbt[p, j] = <int> iperm[neighbors[r, j]]

    def neighbor_columns(self, const Py_ssize_t[::1] rows, Py_ssize_t lo, Py_ssize_t hi,
                         Py_ssize_t count, Py_ssize_t per_row=1):
        """Up to ``count`` columns outside the positions [lo, hi) among the neighbours of
        ``rows``, sorted.

        Every row keeps its ``per_row`` nearest outside neighbours (its largest entries: a
        frequency ranking alone drops a point that only one row sees, and with a narrow
        kernel that one entry can be the whole row's norm); the rest of the budget goes to
        the columns listed by most rows. Ties go to the column nearer to the rows that list it
        (smaller sum of its ranks in their neighbour lists, a proxy for larger entries of the
        block row), then to the one met first scanning the rows in order.
        The result exceeds ``count`` when the per-row columns alone do, and is every outside
        neighbour when they are at most ``count``. O(len(rows) k).
        """
        cdef Py_ssize_t m = rows.shape[0], k = self.k, a, j, seen, rest
        cdef Py_ssize_t n_keep = 0, n_out = 0
        cdef int p, s, nu = 0, top, c, c_min
        cdef Py_ssize_t above, need, n_ties = 0
        cdef int* slot = &self.slot[0]
        cdef int* buf = &self.buf[0]
        cdef int* cnt = &self.cnt[0]
        cdef int* rsum = &self.rsum[0]
        cdef long long* ties = &self.ties[0]
        cdef int* hist = &self.hist[0]
        cdef unsigned char* keep = &self.keep[0]
        cdef const Py_ssize_t* perm = &self.perm[0]
        cdef const Py_ssize_t* iperm = &self.iperm[0]
        cdef const int* nrow
        cdef const int* nbt = &self.nbt[0, 0] if self.nbt.shape[0] and k else NULL
        cdef int* rowpos = &self.rowpos[0]
        cdef size_t width = <size_t> (hi - lo)
        if k == 0 or count <= 0 or m == 0:
            return np.zeros(0, np.intp)
        with nogil:
            # Outside neighbours in order met, numbered through slot (indexed by position).
            # Plain pointers: the extension builds with -fno-strict-aliasing, so memoryview
            # fields of self would be reloaded after every store. The scan waits on memory
            # (scattered rows of an n x k array), not on arithmetic: row positions are
            # gathered first and the next row's list is prefetched
            for a in range(m):
                rowpos[a] = <int> iperm[rows[a]]
            for a in range(m):
                nrow = nbt + <size_t> rowpos[a] * k
                if a + 1 < m:
                    for j in range(0, k, 16):
                        __builtin_prefetch(nbt + <size_t> rowpos[a + 1] * k + j)
                seen = 0
                for j in range(k):
                    p = nrow[j]
                    if <size_t> (p - lo) < width:  # lo <= p < hi
                        continue
                    s = slot[p]
                    if s < 0:
                        s = nu
                        slot[p] = s
                        buf[s] = p
                        cnt[s] = 0
                        rsum[s] = 0
                        keep[s] = 0
                        nu += 1
                    cnt[s] += 1
                    rsum[s] += <int> j
                    if seen < per_row:
                        if not keep[s]:
                            keep[s] = 1
                            n_keep += 1
                        seen += 1
            for s in range(nu):
                slot[buf[s]] = -1
            if nu <= count:
                n_out = nu
            else:
                rest = count - n_keep
                if rest > 0:
                    # the best `rest` of the others (more candidates than that remain) without
                    # sorting them all: the count c_min such that those above it are fewer
                    # than `rest` (a histogram of counts), then the best of those at c_min
                    # by (rank sum, number met) through a quickselect on packed keys
                    top = 0
                    for s in range(nu):
                        if cnt[s] > top:
                            top = cnt[s]
                    for c in range(top + 1):
                        hist[c] = 0
                    for s in range(nu):
                        if not keep[s]:
                            hist[cnt[s]] += 1
                    c_min = top
                    above = 0
                    while above + hist[c_min] < rest:
                        above += hist[c_min]
                        c_min -= 1
                    need = rest - above
                    for s in range(nu):
                        if keep[s] or cnt[s] < c_min:
                            continue
                        if cnt[s] > c_min:
                            keep[s] = 1
                        else:
                            ties[n_ties] = (<long long> rsum[s] << 32) | s
                            n_ties += 1
                    _select(ties, n_ties, need)
                    for j in range(need):
                        keep[<int> (ties[j] & <long long> 0xFFFFFFFF)] = 1
                # kept candidates to the front (in place: n_out <= s)
                for s in range(nu):
                    if keep[s]:
                        buf[n_out] = buf[s]
                        n_out += 1
            for j in range(n_out):
                buf[j] = <int> perm[buf[j]]
            _sort(buf, n_out)
        return _as_intp(buf, n_out)

    cdef void _mark(self, list arrays, int value):
        """slot[c] = value for every column c in the arrays (-1 unmarks)."""
        cdef const Py_ssize_t[::1] v
        cdef Py_ssize_t i
        for x in arrays:
            v = x
            for i in range(v.shape[0]):
                self.slot[v[i]] = value

    cdef inline Py_ssize_t _take(self, const Py_ssize_t* v, Py_ssize_t len_v,
                                 Py_ssize_t nu) noexcept nogil:
        """Append to buf[nu:] the columns of v not yet marked (marking them); new nu."""
        cdef Py_ssize_t i, c
        for i in range(len_v):
            c = v[i]
            if self.slot[c] < 0:
                self.slot[c] = 1
                self.buf[nu] = <int> c
                nu += 1
        return nu

    cdef object _finish(self, Py_ssize_t nu, list exclude):
        """Unmark everything, return buf[:nu] sorted."""
        cdef Py_ssize_t i
        self._mark(exclude, -1)
        with nogil:
            for i in range(nu):
                self.slot[self.buf[i]] = -1
            _sort(&self.buf[0], nu)
        return _as_intp(&self.buf[0], nu)

    def union(self, arrays, exclude=()):
        """The sorted distinct columns of the intp arrays ``arrays`` that are in none of the
        arrays ``exclude`` (np.setdiff1d(np.unique(np.concatenate(arrays)), ...) without
        sorting the inputs)."""
        cdef Py_ssize_t nu = 0
        cdef const Py_ssize_t[::1] v
        cdef list excl = [np.ascontiguousarray(x, dtype=np.intp) for x in exclude]
        self._mark(excl, 0)
        for x in arrays:
            v = np.ascontiguousarray(x, dtype=np.intp)
            if v.shape[0]:
                nu = self._take(&v[0], v.shape[0], nu)
        return self._finish(nu, excl)

    def draw_strata(self, const Py_ssize_t[:, ::1] strata, const Py_ssize_t[::1] counts, rng,
                    exclude=()):
        """Random columns, about ``counts[j]`` from the tree positions [strata[j, 0],
        strata[j, 1]) (all of them when that is at least half), none in the arrays
        ``exclude``; sorted and distinct.

        One draw with replacement for all strata, ``rng.random(total)`` used stratum after
        stratum (a per-stratum ``rng.choice`` was a tenth of the compression time in Python
        overhead); repeats are dropped, so a stratum may give slightly fewer columns.
        """
        cdef Py_ssize_t ns = strata.shape[0], j, lo, size, c, i, t = 0, nu = 0, total = 0
        cdef const double[::1] u
        for j in range(ns):
            size = strata[j, 1] - strata[j, 0]
            c = counts[j]
            if c > 0 and 2 * c < size:
                total += c
        if total:
            u = rng.random(total)
        cdef list excl = [np.ascontiguousarray(x, dtype=np.intp) for x in exclude]
        self._mark(excl, 0)
        with nogil:
            for j in range(ns):
                lo = strata[j, 0]
                size = strata[j, 1] - lo
                c = counts[j]
                if c <= 0 or size <= 0:
                    continue
                if 2 * c >= size:
                    nu = self._take(&self.perm[lo], size, nu)
                else:
                    for i in range(c):
                        nu = self._take(&self.perm[lo + <Py_ssize_t> (u[t] * size)], 1, nu)
                        t += 1
        return self._finish(nu, excl)


def row_id(const double[:, ::1] M, double rel_tol, double abs_tol, Py_ssize_t max_rank,
           double negligible, double[::1] col_norms=None):
    """Row interpolative decomposition M ~= U @ M[rows] by LAPACK's pivoted QR (dgeqp3) of M^T.

    Returns (U, rows, achieved, tol) as compress._row_id documents. Calls dgeqp3 and dtrsm
    directly: around small blocks, scipy's qr() and solve_triangular() (workspace query, R
    copied out through np.triu, checks) plus diag / eye / searchsorted add a large fraction
    to the cost of the factorization itself.

    ``col_norms`` (length M.shape[1]), if given, receives the Euclidean norms of M's columns,
    summed in row order as np.linalg.norm(M, axis=0) does: computed while M is copied for
    LAPACK, instead of another two passes over M.
    """
    cdef Py_ssize_t m = M.shape[0], s = M.shape[1], i, j, k, nd, lo_i, hi_i, mid
    cdef int S = <int> s, N = <int> m, LDA = <int> s, lwork = -1, info = 0, K, NK
    cdef double wq, tol, d0, achieved, one = 1.0
    cdef double v
    cdef double* cn
    if col_norms is not None:
        col_norms[:] = 0.0
    if m == 0 or s == 0:
        return np.zeros((m, 0)), np.zeros(0, np.intp), 0.0, abs_tol
    # M's row-major buffer is M^T in column-major order (s x m, leading dimension s)
    A = np.empty((m, s))
    cdef double[:, ::1] Av = A
    cdef double* a = &Av[0, 0]
    with nogil:
        if col_norms is None:
            for i in range(m):
                for j in range(s):
                    a[i * s + j] = M[i, j]
        else:
            cn = &col_norms[0]
            for i in range(m):
                for j in range(s):
                    v = M[i, j]
                    a[i * s + j] = v
                    cn[j] += v * v
            for j in range(s):
                cn[j] = sqrt(cn[j])
    jpvt_arr = np.zeros(m, dtype=np.intc)
    cdef int[::1] jpvt = jpvt_arr
    nd = s if s < m else m
    tau_arr = np.empty(nd)
    cdef double[::1] tau = tau_arr
    dgeqp3(&S, &N, a, &LDA, &jpvt[0], &tau[0], &wq, &lwork, &info)
    lwork = <int> wq
    work_arr = np.empty(max(lwork, 1))
    cdef double[::1] work = work_arr
    dgeqp3(&S, &N, a, &LDA, &jpvt[0], &tau[0], &work[0], &lwork, &info)
    if info != 0:
        raise ValueError(f"dgeqp3 failed (info={info})")
    d0 = fabs(a[0])
    if d0 <= max(abs_tol, negligible):
        # the sampled block row is negligible: rank 0. Keeping a pivot of ~1e-300 would
        # overflow R11^{-1} R12 to inf and put NaNs in H (tiny widths underflow the kernel)
        return np.zeros((m, 0)), np.zeros(0, np.intp), 0.0, abs_tol
    tol = max(rel_tol * d0, abs_tol)
    # rank = pivots >= tol, by bisection as np.searchsorted does (|R_ii| is non-increasing
    # up to rounding; the same search keeps the same answer when it is not)
    lo_i = 0
    hi_i = nd
    while lo_i < hi_i:
        mid = lo_i + ((hi_i - lo_i) >> 1)
        if fabs(a[mid + mid * s]) < tol:
            hi_i = mid
        else:
            lo_i = mid + 1
    k = max(1, min(lo_i, max_rank))
    achieved = fabs(a[k + k * s]) / d0 if k < nd else 0.0
    U = np.zeros((m, k))
    cdef double[:, ::1] Uv = U
    rows = np.empty(k, np.intp)
    cdef Py_ssize_t[::1] rv = rows
    K = <int> k
    NK = <int> (m - k)
    with nogil:
        for i in range(k):
            rv[i] = jpvt[i] - 1
            Uv[rv[i], i] = 1.0
        if k < m:
            # T = R11^{-1} R12 in place of R12; U[p[k + j], i] = T[i, j]
            dtrsm("L", "U", "N", "N", &K, &NK, &one, a, &LDA, a + k * s, &LDA)
            for j in range(m - k):
                for i in range(k):
                    Uv[jpvt[k + j] - 1, i] = a[i + (k + j) * s]
    return U, rows, achieved, tol


def interp_residual(const double[:, :] MX, const double[:, ::1] U,
                    const Py_ssize_t[::1] rows):
    """Norms of the columns of MX - U @ MX[rows]: how well a row ID (U, rows) interpolates
    the columns MX of the same block row. One gather, one dgemm, one pass for the norms
    (the NumPy expression makes four temporaries and as many calls, per node)."""
    cdef Py_ssize_t m = MX.shape[0], nv = MX.shape[1], k = U.shape[1], i, j
    cdef int V = <int> nv, Mi = <int> m, Ki = <int> k
    cdef double minus_one = -1.0, one = 1.0
    out = np.zeros(nv)
    cdef double[::1] ov = out
    if nv == 0 or m == 0:
        return out
    R = np.empty((m, nv))
    cdef double[:, ::1] Rv = R
    G = np.empty((max(k, 1), nv))
    cdef double[:, ::1] Gv = G
    with nogil:
        for i in range(m):
            for j in range(nv):
                Rv[i, j] = MX[i, j]
        if k > 0:
            for i in range(k):
                for j in range(nv):
                    Gv[i, j] = MX[rows[i], j]
            # column-major view: R^T (nv x m) -= G^T (nv x k) U^T (k x m)
            dgemm("N", "N", &V, &Mi, &Ki, &minus_one, &Gv[0, 0], &V, <double*> &U[0, 0], &Ki,
                  &one, &Rv[0, 0], &V)
        for i in range(m):
            for j in range(nv):
                ov[j] += Rv[i, j] * Rv[i, j]
        for j in range(nv):
            ov[j] = sqrt(ov[j])
    return out


def nearest_per_group(const Py_ssize_t[::1] group, const Py_ssize_t[::1] T,
                      const Py_ssize_t[::1] W, const double[:, ::1] blo,
                      const double[:, ::1] bhi, const double[:, ::1] cen, Py_ssize_t k):
    """Of the pairs (node T[i], candidate W[i]) in groups ``group[i]``, the ``k`` candidates of
    each group nearest to their T: by squared bounding-box gap, then (overlapping boxes all
    have gap 0, as clusters in d >= 2 do) by squared centre distance, then by input order.
    Returns the kept (group, W), in group order, nearest first within a group.

    What np.lexsort over all pairs did, but by a counting sort on the group and a k-slot
    insertion per group, without (pairs x d) temporaries: the far-target descent calls it
    once per tree level on O(n_nodes log n) pairs.
    """
    cdef Py_ssize_t N = group.shape[0], d = blo.shape[1], i, j, g, q, c, n_out = 0
    cdef Py_ssize_t n_groups = 0, a, b
    cdef double gap, u, key1, key2
    for i in range(N):
        if group[i] + 1 > n_groups:
            n_groups = group[i] + 1
    start_arr = np.zeros(n_groups + 1, np.intp)
    order_arr = np.empty(N, np.intp)
    out_g = np.empty(N, np.intp)
    out_w = np.empty(N, np.intp)
    k1_arr = np.empty(max(k, 1))
    k2_arr = np.empty(max(k, 1))
    bi_arr = np.empty(max(k, 1), np.intp)
    cdef Py_ssize_t[::1] start = start_arr, order = order_arr, og = out_g, ow = out_w
    # keys and input index of the pairs kept so far in a group, nearest first
    cdef double[::1] k1 = k1_arr, k2 = k2_arr
    cdef Py_ssize_t[::1] bi = bi_arr
    if k <= 0 or N == 0:
        return out_g[:0], out_w[:0]
    with nogil:
        # stable counting sort by group: order lists the pairs group by group, input order
        for i in range(N):
            start[group[i] + 1] += 1
        for g in range(n_groups):
            start[g + 1] += start[g]
        for i in range(N):
            order[start[group[i]]] = i
            start[group[i]] += 1
        a = 0
        for g in range(n_groups):
            b = start[g]  # start[g] now ends group g
            c = 0
            for q in range(a, b):
                i = order[q]
                key1 = 0.0
                key2 = 0.0
                for j in range(d):
                    gap = blo[W[i], j] - bhi[T[i], j]
                    u = blo[T[i], j] - bhi[W[i], j]
                    if u > gap:
                        gap = u
                    if gap < 0.0:
                        gap = 0.0
                    key1 += gap * gap
                    u = cen[W[i], j] - cen[T[i], j]
                    key2 += u * u
                c = best_k_insert(&k1[0], &k2[0], &bi[0], c, k, key1, key2, i)
            for q in range(c):
                i = bi[q]
                og[n_out] = group[i]
                ow[n_out] = W[i]
                n_out += 1
            a = b
    return out_g[:n_out], out_w[:n_out]


def nearest_to_box(const double[:, ::1] X, const Py_ssize_t[::1] cols,
                   const Py_ssize_t[::1] starts, const double[::1] box_lo,
                   const double[::1] box_hi, const unsigned char[::1] skip, Py_ssize_t per):
    """The ``per`` points of each group nearest to a box, skipping points marked in ``skip``.

    Group g is ``cols[starts[g]:starts[g + 1]]`` (indices into X). Points are ranked by squared
    distance to the box, ties (points inside it) by squared distance to its centre. For the
    far-strata probes of HSS-ANN compression: one pass, no temporaries of size
    len(cols) x d.

    Returns (sel, grp): the chosen points (values of ``cols``) and their group numbers.
    """
    cdef Py_ssize_t g, ng = starts.shape[0] - 1, d = X.shape[1], i, c, j, q, cnt, tot = 0
    cdef double gap, key1, key2, v, u
    sel = np.empty(ng * per, dtype=np.intp)
    grp = np.empty(ng * per, dtype=np.intp)
    cdef Py_ssize_t[::1] sel_v = sel, grp_v = grp
    cdef double* k1 = <double*>malloc(per * sizeof(double))
    cdef double* k2 = <double*>malloc(per * sizeof(double))
    cdef Py_ssize_t* kc = <Py_ssize_t*>malloc(per * sizeof(Py_ssize_t))
    if k1 == NULL or k2 == NULL or kc == NULL:
        free(k1); free(k2); free(kc)
        raise MemoryError()
    with nogil:
        for g in range(ng):
            cnt = 0
            for i in range(starts[g], starts[g + 1]):
                c = cols[i]
                if skip[c]:
                    continue
                key1 = 0.0
                key2 = 0.0
                for j in range(d):
                    v = X[c, j]
                    gap = box_lo[j] - v
                    if v - box_hi[j] > gap:
                        gap = v - box_hi[j]
                    if gap > 0:
                        key1 += gap * gap
                    u = v - 0.5 * (box_lo[j] + box_hi[j])
                    key2 += u * u
                cnt = best_k_insert(k1, k2, kc, cnt, per, key1, key2, c)
            for q in range(cnt):
                sel_v[tot] = kc[q]
                grp_v[tot] = g
                tot += 1
    free(k1); free(k2); free(kc)
    return sel[:tot], grp[:tot]
