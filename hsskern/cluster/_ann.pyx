# cython: language_level=3
"""Approximate k-nearest neighbours by a forest of random projection trees.

Each tree splits a node at the median of the points' projections onto the difference of two
random points of the node (a data-adapted direction, as in Annoy / PyNNDescent, balanced by the
median so every leaf holds between leaf_size/2 and leaf_size points). All pairs inside a leaf are
candidates. Every point keeps its best k candidates in a bounded max-heap (one row per point), so
memory is O(n k) whatever the number of trees. An optional neighbour-of-neighbour round
(NN-descent's main idea) then offers each point the nearest neighbours of its neighbours. The
randomized-tree iterations follow Xiao & Biros (reference [42] of the seed), as STRUMPACK does.

Inputs are trusted (C-contiguous float64, 1 <= k <= n - 1, leaf_size >= 2k + 1, so every leaf
holds at least k + 1 points; neighbors.py ensures it). Heaps hold squared distances summed
directly over coordinates, sum_c (x_ic - x_jc)^2: the expansion |x|^2 + |y|^2 - 2 x.y loses
nearby points with large norms. (The leaf tiles and the descent round group the sum
differently, so one pair may differ in the last bit between phases; duplicates are detected by
index, never by distance, so that is harmless.)

Parallel safety: within one tree the leaves partition the points, so a thread that owns a leaf
owns the heap rows of its points; the descent round reads a frozen copy of the graph and
writes only the row of the point it handles. Results are therefore independent of the thread
count and schedule.
"""
from cython.parallel cimport prange, parallel
from libc.math cimport sqrt, INFINITY
from libc.stdlib cimport malloc, free
from libc.stdint cimport uint64_t

import numpy as np

from ..utils._memory import format_bytes


def _no_scratch(Py_ssize_t words, what):
    """MemoryError's message when malloc fails for ``words`` 8-byte words of scratch."""
    return (f"could not allocate {format_bytes(8 * words)} for {what} of the nearest-"
            f"neighbour search (the process is out of memory or address space)")


cdef inline uint64_t _rand(uint64_t* s) noexcept nogil:
    # splitmix64: tiny, good enough for choosing split points, and reproducible per tree
    s[0] += <uint64_t>0x9E3779B97F4A7C15ULL
    cdef uint64_t z = s[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline void _sift_down(double* hd, Py_ssize_t* hi, Py_ssize_t k, Py_ssize_t p,
                            double dist, Py_ssize_t j) noexcept nogil:
    """Place (dist, j) at heap position p and restore the max-heap below it."""
    cdef Py_ssize_t c
    while True:
        c = 2 * p + 1
        if c >= k:
            break
        if c + 1 < k and hd[c + 1] > hd[c]:
            c = c + 1
        if hd[c] <= dist:
            break
        hd[p] = hd[c]
        hi[p] = hi[c]
        p = c
    hd[p] = dist
    hi[p] = j


cdef inline bint _push(double* hd, Py_ssize_t* hi, Py_ssize_t k, double dist,
                       Py_ssize_t j, bint check) noexcept nogil:
    """Offer candidate j at squared distance dist to a max-heap of size k; True if taken.

    ``check`` scans the row for j first; callers skip it when j cannot already be there.
    The scan is branch-free so it vectorizes (it only runs for candidates that beat the root).
    """
    cdef Py_ssize_t t
    cdef int found = 0
    if dist >= hd[0]:
        return False
    if check:
        for t in range(k):
            found = found | (hi[t] == j)
        if found:
            return False
    _sift_down(hd, hi, k, 0, dist, j)
    return True


cdef inline double _sqdist(const double* a, const double* b, Py_ssize_t d) noexcept nogil:
    # four running sums: without -ffast-math a single sum is one long dependency chain, and
    # the descent round is bound by this loop in high dimension
    cdef Py_ssize_t c, d4 = d - d % 4
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, t0, t1, t2, t3
    for c in range(0, d4, 4):
        t0 = a[c] - b[c]
        t1 = a[c + 1] - b[c + 1]
        t2 = a[c + 2] - b[c + 2]
        t3 = a[c + 3] - b[c + 3]
        s0 = s0 + t0 * t0
        s1 = s1 + t1 * t1
        s2 = s2 + t2 * t2
        s3 = s3 + t3 * t3
    for c in range(d4, d):
        t0 = a[c] - b[c]
        s0 = s0 + t0 * t0
    return (s0 + s1) + (s2 + s3)


cdef void _select(double* a, Py_ssize_t* idx, Py_ssize_t l, Py_ssize_t r, Py_ssize_t kth,
                  uint64_t* rng) noexcept nogil:
    """Reorder a[l..r] (inclusive) and idx alike so a[kth] is the kth smallest (Wirth/Hoare).

    Hoare-style partitioning stops on equal keys, so many duplicate projections (repeated
    points) do not degrade it to quadratic time; the pivot is random.
    """
    cdef Py_ssize_t i, j, p, ti
    cdef double x, t
    while l < r:
        p = l + <Py_ssize_t>(_rand(rng) % <uint64_t>(r - l + 1))
        t = a[p]; a[p] = a[kth]; a[kth] = t
        ti = idx[p]; idx[p] = idx[kth]; idx[kth] = ti
        x = a[kth]
        i = l
        j = r
        while True:
            while a[i] < x:
                i = i + 1
            while x < a[j]:
                j = j - 1
            if i <= j:
                t = a[i]; a[i] = a[j]; a[j] = t
                ti = idx[i]; idx[i] = idx[j]; idx[j] = ti
                i = i + 1
                j = j - 1
            if i > j:
                break
        if j < kth:
            l = i
        if kth < i:
            r = j


cdef Py_ssize_t _build_tree(const double[:, ::1] X, Py_ssize_t* perm, Py_ssize_t leaf_size,
                            uint64_t seed, Py_ssize_t* leaf_lo, double* proj,
                            double* w) noexcept nogil:
    """Permute perm (0..n-1) so each leaf is a contiguous run; write leaf starts, return count."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t stack_lo[256]
    cdef Py_ssize_t stack_hi[256]
    cdef Py_ssize_t top = 0, n_leaves = 0, lo, hi, m, mid, a, b, t, c, tries
    cdef uint64_t rng = seed
    cdef double nrm, s
    cdef const double* xa
    cdef const double* xb
    cdef const double* xt
    for t in range(n):
        perm[t] = t
    stack_lo[0] = 0
    stack_hi[0] = n
    top = 1
    while top > 0:
        top = top - 1
        lo = stack_lo[top]
        hi = stack_hi[top]
        m = hi - lo
        if m <= leaf_size:
            leaf_lo[n_leaves] = lo
            n_leaves = n_leaves + 1
            continue
        nrm = 0.0
        tries = 0
        while nrm == 0.0 and tries < 4:
            a = perm[lo + <Py_ssize_t>(_rand(&rng) % <uint64_t>m)]
            b = perm[lo + <Py_ssize_t>(_rand(&rng) % <uint64_t>m)]
            xa = &X[a, 0]
            xb = &X[b, 0]
            nrm = 0.0
            for c in range(d):
                w[c] = xa[c] - xb[c]
                nrm = nrm + w[c] * w[c]
            tries = tries + 1
        if nrm == 0.0:
            # a node of (mostly) repeated points: any direction gives a valid, balanced split
            for c in range(d):
                w[c] = <double>(_rand(&rng) >> 11) * (1.0 / 9007199254740992.0) - 0.5
        for t in range(lo, hi):
            xt = &X[perm[t], 0]
            s = 0.0
            for c in range(d):
                s = s + xt[c] * w[c]
            proj[t] = s
        mid = lo + m // 2
        _select(proj, perm, lo, hi - 1, mid, &rng)
        # depth <= log2(n) + 1 and each level leaves one pending sibling: 256 is ample
        stack_lo[top] = mid
        stack_hi[top] = hi
        stack_lo[top + 1] = lo
        stack_hi[top + 1] = mid
        top = top + 2
    leaf_lo[n_leaves] = n
    return n_leaves


def forest_knn(const double[:, ::1] X, Py_ssize_t k, Py_ssize_t n_trees, Py_ssize_t leaf_size,
               const unsigned long long[::1] seeds, double[:, ::1] hd, Py_ssize_t[:, ::1] hi):
    """Merge all leaf pairs of ``n_trees`` random projection trees into the heaps (hd, hi).

    X: (n, d); hd, hi: (n, k) max-heaps of squared distances / indices (inf / -1 when empty),
    updated in place; seeds: (n_trees,) one PRNG seed per tree.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t max_leaves = n // (leaf_size // 2 if leaf_size >= 2 else 1) + 2
    cdef Py_ssize_t[:, ::1] perms = np.empty((n_trees, n), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] leaves = np.empty((n_trees, max_leaves + 1), dtype=np.intp)
    cdef Py_ssize_t[::1] n_leaves = np.empty(n_trees, dtype=np.intp)
    cdef Py_ssize_t tr, li, lo, m, i, j, c, pi, nl
    cdef double* proj
    cdef double* w
    cdef double* xt
    cdef double* out
    cdef const double* row
    cdef int no_scratch = 0
    cdef int* failed = &no_scratch  # set by a thread whose scratch malloc failed
    if n_trees == 0:
        return
    with nogil, parallel():
        proj = <double*> malloc(n * sizeof(double))
        w = <double*> malloc(d * sizeof(double))
        if proj == NULL or w == NULL:
            failed[0] = 1
        for tr in prange(n_trees, schedule="dynamic"):
            if proj == NULL or w == NULL:  # raised below
                continue
            n_leaves[tr] = _build_tree(X, &perms[tr, 0], leaf_size, seeds[tr],
                                       &leaves[tr, 0], proj, w)
        free(proj)
        free(w)
    if no_scratch:
        raise MemoryError(_no_scratch(n + d, "a thread's tree projections"))
    for tr in range(n_trees):
        nl = n_leaves[tr]
        with nogil, parallel():
            xt = <double*> malloc(leaf_size * d * sizeof(double))
            out = <double*> malloc(leaf_size * leaf_size * sizeof(double))
            if xt == NULL or out == NULL:
                failed[0] = 1
            for li in prange(nl, schedule="dynamic"):
                if xt == NULL or out == NULL:  # raised below
                    continue
                lo = leaves[tr, li]
                m = leaves[tr, li + 1] - lo
                _leaf_distances(X, &perms[tr, lo], m, xt, out)
                for i in range(m):
                    pi = perms[tr, lo + i]
                    row = out + i * m
                    if tr == 0:
                        # empty heaps and no repeated pair within a tree: fill, heapify, then
                        # offer the rest without membership scans
                        c = 0
                        for j in range(m):
                            if j != i and c < k:
                                hd[pi, c] = row[j]
                                hi[pi, c] = perms[tr, lo + j]
                                c = c + 1
                        for j in range(k // 2 - 1, -1, -1):
                            _sift_down(&hd[pi, 0], &hi[pi, 0], k, j, hd[pi, j], hi[pi, j])
                        c = 0
                        for j in range(m):
                            if j != i:
                                if c >= k:
                                    _push(&hd[pi, 0], &hi[pi, 0], k, row[j], perms[tr, lo + j], False)
                                c = c + 1
                    else:
                        for j in range(m):
                            if j != i:
                                _push(&hd[pi, 0], &hi[pi, 0], k, row[j], perms[tr, lo + j], True)
            free(xt)
            free(out)
        if no_scratch:
            raise MemoryError(_no_scratch(leaf_size * (leaf_size + d), "a thread's leaf tile"))


cdef void _leaf_distances(const double[:, ::1] X, const Py_ssize_t* pts, Py_ssize_t m,
                          double* xt, double* out) noexcept nogil:
    """out (m x m) = squared distances among the leaf points, computed once per pair."""
    cdef Py_ssize_t d = X.shape[1], i, j, c
    cdef const double* xi
    cdef const double* row
    cdef double a, t
    # leaf points transposed (d x m) so the inner loop runs over contiguous j
    for j in range(m):
        xi = &X[pts[j], 0]
        for c in range(d):
            xt[c * m + j] = xi[c]
    for i in range(m):
        out[i * m + i] = 0.0
        for j in range(i + 1, m):
            out[i * m + j] = 0.0
        xi = &X[pts[i], 0]
        for c in range(d):
            a = xi[c]
            row = xt + c * m
            for j in range(i + 1, m):
                t = a - row[j]
                out[i * m + j] = out[i * m + j] + t * t
        for j in range(i + 1, m):
            out[j * m + i] = out[i * m + j]


cdef void _sort_row(double* dd, Py_ssize_t* ii, Py_ssize_t k) noexcept nogil:
    """Insertion sort by (distance, index): rows are short (k) and the order is deterministic."""
    cdef Py_ssize_t a, b, ti
    cdef double td
    for a in range(1, k):
        td = dd[a]
        ti = ii[a]
        b = a - 1
        while b >= 0 and (dd[b] > td or (dd[b] == td and ii[b] > ti)):
            dd[b + 1] = dd[b]
            ii[b + 1] = ii[b]
            b = b - 1
        dd[b + 1] = td
        ii[b + 1] = ti


cdef void _heap_sort(double* hd, Py_ssize_t* hi, Py_ssize_t k) noexcept nogil:
    """Turn a max-heap row into ascending order in O(k log k)."""
    cdef Py_ssize_t e, ti
    cdef double td
    for e in range(k - 1, 0, -1):
        td = hd[e]
        ti = hi[e]
        hd[e] = hd[0]
        hi[e] = hi[0]
        _sift_down(hd, hi, e, 0, td, ti)


def sort_rows(double[:, ::1] hd, Py_ssize_t[:, ::1] hi, bint heaps=False):
    """Sort every row of (hd, hi) ascending by (distance, index), in place.

    ``heaps``: the rows are max-heaps, so a heap sort first leaves the insertion sort (which
    settles ties by index) only O(k) work.
    """
    cdef Py_ssize_t n = hd.shape[0], k = hd.shape[1], i
    for i in prange(n, nogil=True, schedule="static"):
        if heaps:
            _heap_sort(&hd[i, 0], &hi[i, 0], k)
        _sort_row(&hd[i, 0], &hi[i, 0], k)


def snapshot(double[:, ::1] hd, Py_ssize_t[:, ::1] hi, Py_ssize_t m):
    """The m nearest entries of every heap row, ascending: a frozen graph for :func:`descend`.

    Rows are sorted in place into *descending* order, which is still a valid max-heap, so the
    heaps need no copy (at n = 10^6, k = 64 a copy of both arrays would be 1 GB).
    """
    cdef Py_ssize_t n = hd.shape[0], k = hd.shape[1], i, t, ti
    cdef double td
    if m > k:
        m = k
    cdef Py_ssize_t[:, ::1] near = np.empty((n, m), dtype=np.intp)
    for i in prange(n, nogil=True, schedule="static"):
        _heap_sort(&hd[i, 0], &hi[i, 0], k)
        _sort_row(&hd[i, 0], &hi[i, 0], k)
        for t in range(m):
            near[i, t] = hi[i, t]
        for t in range(k // 2):
            td = hd[i, t]; hd[i, t] = hd[i, k - 1 - t]; hd[i, k - 1 - t] = td
            ti = hi[i, t]; hi[i, t] = hi[i, k - 1 - t]; hi[i, k - 1 - t] = ti
    return np.asarray(near)


def descend(const double[:, ::1] X, const Py_ssize_t[:, ::1] near, double[:, ::1] hd,
           Py_ssize_t[:, ::1] hi):
    """One neighbour-of-neighbour round: offer point i the m nearest neighbours of each of its
    m nearest neighbours, from ``near`` (n, m), a frozen sorted copy of the graph's front.
    Returns the number of heap updates.

    A per-thread stamp array skips candidates already seen for i (neighbours of neighbours
    overlap heavily), so each distinct candidate costs one distance.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = hd.shape[1], m = near.shape[1]
    cdef Py_ssize_t i, t, s, j, l, q, updates = 0
    cdef Py_ssize_t* stamp
    cdef double dist
    cdef int no_stamp = 0
    cdef int* failed = &no_stamp  # set by a thread whose stamp malloc failed
    with nogil, parallel():
        stamp = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
        if stamp == NULL:
            failed[0] = 1
        else:
            for q in range(n):
                stamp[q] = -1
        for i in prange(n, schedule="dynamic", chunksize=64):
            if stamp == NULL:  # raised below
                continue
            # row i of the heaps is written only by this iteration, so it is still the
            # pre-round state here
            stamp[i] = i
            for t in range(k):
                stamp[hi[i, t]] = i
            for t in range(m):
                j = near[i, t]
                for s in range(m):
                    l = near[j, s]
                    if stamp[l] == i:
                        continue
                    stamp[l] = i
                    dist = _sqdist(&X[i, 0], &X[l, 0], d)
                    if _push(&hd[i, 0], &hi[i, 0], k, dist, l, False):
                        updates += 1
        free(stamp)
    if no_stamp:
        raise MemoryError(_no_scratch(n, "a thread's stamp array"))
    return updates


def finish(double[:, ::1] hd, Py_ssize_t[:, ::1] hi, const Py_ssize_t[::1] order):
    """Turn the heaps over the points X[order] into the result, in place.

    Afterwards hd holds distances and hi neighbour indices in the caller's point order: row p
    moves to row order[p], indices are mapped through order, distances square-rooted, rows
    sorted by (distance, index). The row permutation follows cycles with one spare row, so
    no second (n, k) pair of arrays is needed.
    """
    cdef Py_ssize_t n = hd.shape[0], k = hd.shape[1], p, t, q, s
    cdef double* cd
    cdef Py_ssize_t* ci
    cdef double td
    cdef Py_ssize_t ti
    cdef unsigned char[::1] done = np.zeros(n, dtype=np.uint8)
    for p in prange(n, nogil=True, schedule="static"):
        _heap_sort(&hd[p, 0], &hi[p, 0], k)
        for t in range(k):
            hd[p, t] = sqrt(hd[p, t])
            hi[p, t] = order[hi[p, t]]
        # sort after the square root: two squared distances can round to one distance
        _sort_row(&hd[p, 0], &hi[p, 0], k)
    if k == 0:
        return
    cd = <double*> malloc(k * sizeof(double))
    ci = <Py_ssize_t*> malloc(k * sizeof(Py_ssize_t))
    if cd == NULL or ci == NULL:
        free(cd)
        free(ci)
        raise MemoryError(_no_scratch(2 * k, "a spare row"))
    with nogil:
        for s in range(n):
            if done[s]:
                continue
            # carry row s along its cycle: it belongs at order[s], whose row moves on, ...
            for t in range(k):
                cd[t] = hd[s, t]
                ci[t] = hi[s, t]
            p = s
            while True:
                q = order[p]
                for t in range(k):
                    td = hd[q, t]; hd[q, t] = cd[t]; cd[t] = td
                    ti = hi[q, t]; hi[q, t] = ci[t]; ci[t] = ti
                done[q] = 1
                p = q
                if q == s:
                    break
        free(cd)
        free(ci)


def tree_order(const double[:, ::1] X, Py_ssize_t leaf_size, unsigned long long seed):
    """Leaf order of one random projection tree: a spatially coherent permutation of 0..n-1.

    Running the search on X[order] puts most neighbours close in memory, which is what makes
    the random row accesses of the descent round cache hits.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t[::1] perm = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] leaves = np.empty(n // (leaf_size // 2 if leaf_size >= 2 else 1) + 3,
                                           dtype=np.intp)
    cdef double[::1] proj = np.empty(n, dtype=np.float64)
    cdef double[::1] w = np.empty(d, dtype=np.float64)
    with nogil:
        _build_tree(X, &perm[0], leaf_size, seed, &leaves[0], &proj[0], &w[0])
    return np.asarray(perm)
