"""HSS compression of a kernel matrix, bottom-up over the cluster tree.

``method="ann"`` (HSS-ANN): each node's off-diagonal block row K(I, outside) is sampled at the
columns its points' nearest neighbours point to (the dominant entries of a decaying kernel)
plus a few random columns, and compressed by a row interpolative decomposition (column-pivoted
QR, truncated by ``rel_tol``/``abs_tol``, capped by ``max_rank``). Only entries of K are
evaluated: O(n r^2) work after the neighbour search.

``method="sketch"``: the same bottom-up interpolative decompositions applied to random
samples K @ Omega taken with blocked products (Martinsson's randomized HSS construction).
Costs O(n^2 p) kernel evaluations; meant as an accuracy reference and for operators without
useful geometry.

In both, a parent works on the union of its children's skeletons, coupling blocks come from
``K[J_a, J_b]`` and leaf blocks from ``K[I, I]``.
"""
import time
import warnings

import numpy as np
import scipy.linalg as sla
from threadpoolctl import threadpool_limits

from ..cluster.neighbors import knn
from ..cluster.tree import build_cluster_tree
from ..options import HSSOptions
from ..utils.progress import Progress
from .matrix import HSSMatrix

#: pivots at or below this are treated as zero whatever abs_tol says
_NEGLIGIBLE = 1e-200
#: rounds of sample growth per node (bounded: never an open-ended loop)
_MAX_SAMPLE_ROUNDS = 4


def _row_id(M, rel_tol, abs_tol, max_rank):
    """Row interpolative decomposition M ~= U @ M[p[:k]] by pivoted QR of M^T.

    Returns (U, rows, achieved, tol) where ``rows`` are row indices of M, U has identity rows
    at ``rows``, ``achieved`` is the first dropped pivot relative to the largest and ``tol``
    the absolute truncation threshold used.
    """
    m, s = M.shape
    if m == 0 or s == 0:
        return np.zeros((m, 0)), np.zeros(0, np.intp), 0.0, abs_tol
    R, P = sla.qr(M.T, mode="r", pivoting=True, check_finite=False)
    diag = np.abs(np.diag(R))
    if diag[0] <= max(abs_tol, _NEGLIGIBLE):
        # the sampled block row is negligible: rank 0. Keeping a pivot of ~1e-300 would
        # overflow R11^{-1} R12 to inf and put NaNs in H (tiny widths underflow the kernel)
        return np.zeros((m, 0)), np.zeros(0, np.intp), 0.0, abs_tol
    tol = max(rel_tol * diag[0], abs_tol)
    k = int(np.searchsorted(-diag, -tol, side="right"))  # diag is non-increasing
    k = max(1, min(k, max_rank))
    achieved = float(diag[k] / diag[0]) if k < len(diag) else 0.0
    U = np.empty((m, k))
    U[P[:k]] = np.eye(k)
    if k < m:
        T = sla.solve_triangular(R[:k, :k], R[:k, k:], check_finite=False)
        U[P[k:]] = T.T
    return U, P[:k].astype(np.intp), achieved, tol


class _ColumnSampler:
    """Chooses a node's sample columns among its points' neighbours outside the node."""

    def __init__(self, neighbors, iperm):
        self.neighbors = neighbors
        self.iperm = iperm

    def _outside(self, cols, lo, hi):
        pos = self.iperm[cols]
        return cols[(pos < lo) | (pos >= hi)]

    def neighbor_columns(self, rows, lo, hi, count):
        """The ``count`` columns outside [lo, hi) most often among the neighbours of ``rows``."""
        if self.neighbors.shape[1] == 0 or count <= 0:
            return np.zeros(0, np.intp)
        cand = self._outside(self.neighbors[rows].ravel(), lo, hi)
        if len(cand) == 0:
            return cand
        vals, counts = np.unique(cand, return_counts=True)
        if len(vals) <= count:
            return vals
        # the first neighbours of many rows score highest; ties keep the closest order
        top = np.argpartition(-counts, count - 1)[:count]
        return vals[top]


def compress(K, options=None, **kwargs):
    """Build an HSS approximation of the kernel matrix ``K``.

    Parameters
    ----------
    K : KernelOperator
        Only ``K.points`` (for the tree and neighbours) and ``K._submatrix`` (entries) are used
        by the "ann" method; "sketch" also uses blocked products ``K @ Omega``.
    options : HSSOptions, optional
    **kwargs
        Overrides of individual ``HSSOptions`` fields.

    Returns
    -------
    HSSMatrix
    """
    if options is None:
        options = HSSOptions(**kwargs)
    elif kwargs:
        from dataclasses import replace
        options = replace(options, **kwargs)
    # Per-node QRs are small: threaded BLAS gains nothing there, and its spin-waiting threads
    # starve the OpenMP threads of the kernel evaluation (measured 5x slower at n = 50,000
    # with 2 BLAS threads). Kernel tiles keep all OpenMP threads.
    with threadpool_limits(limits=1, user_api="blas"):
        return _compress(K, options)


def _compress(K, options):
    X = K.points
    n = X.shape[0]
    rng = np.random.default_rng(options.random_state)
    timings = {}

    t0 = time.perf_counter()
    tree = build_cluster_tree(X, options.leaf_size, options.split, rng)
    timings["tree"] = time.perf_counter() - t0

    if options.method == "ann":
        t0 = time.perf_counter()
        k = min(options.n_neighbors, n - 1)
        if k > 0:
            neighbors, _ = knn(X, k, n_iter=options.ann_iterations, random_state=rng)
        else:
            neighbors = np.zeros((n, 0), np.intp)
        timings["neighbors"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        gens = _compress_ann(K, tree, neighbors, options, rng)
        timings["compression"] = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        gens = _compress_sketch(K, tree, options, rng)
        timings["compression"] = time.perf_counter() - t0
    D, U, B, J, err = gens
    capped = np.flatnonzero(err > 0)
    if len(capped):
        ranks = np.array([0 if j is None else len(j) for j in J])
        hit = capped[ranks[capped] >= options.max_rank]
        if len(hit):
            warnings.warn(
                f"HSS compression: {len(hit)} node(s) reached max_rank={options.max_rank} "
                f"before rel_tol={options.rel_tol:g}/abs_tol={options.abs_tol:g}; largest "
                f"estimated node error {err[hit].max():.2e}. Raise max_rank or loosen the "
                "tolerances.", stacklevel=2)
    return HSSMatrix(tree, D, U, B, J, err, options, timings, kernel=K.kernel)


def _leaf_and_coupling(K, tree, t, J, D, B):
    if tree.left[t] < 0:
        idx = tree.indices(t)
        D[t] = K._submatrix(idx, idx)
        return idx
    a, b = tree.left[t], tree.right[t]
    B[t] = K._submatrix(J[a], J[b])
    return np.concatenate((J[a], J[b]))


def _compress_ann(K, tree, neighbors, opt, rng):
    n = tree.n_points
    nn = tree.n_nodes
    D, U, B, J = [None] * nn, [None] * nn, [None] * nn, [None] * nn
    err = np.zeros(nn)
    iperm = tree.inverse_perm()
    perm = tree.perm
    sampler = _ColumnSampler(neighbors, iperm)
    progress = Progress(nn, "HSS compression", opt.verbose, min_total=2000)
    for t in range(nn - 1, -1, -1):  # children before parents
        cand = _leaf_and_coupling(K, tree, t, J, D, B)
        progress.update()
        if t == 0:
            break
        lo, hi = tree.lo[t], tree.hi[t]
        m = len(cand)
        if m == 0:
            U[t], J[t] = np.zeros((0, 0)), np.zeros(0, np.intp)
            continue
        # neighbours (the dominant near field), random columns of the sibling (the next
        # interaction out, which neighbour lists in dense clusters do not reach) and random
        # columns of the whole complement (the far field)
        par = tree.parent[t]
        sib = tree.right[par] if tree.left[par] == t else tree.left[par]
        sib_pos = tree.lo[sib] + rng.choice(tree.hi[sib] - tree.lo[sib],
                                            size=min(opt.n_random, tree.hi[sib] - tree.lo[sib]),
                                            replace=False)
        cols = np.union1d(np.union1d(sampler.neighbor_columns(cand, lo, hi, opt.max_rank + m),
                                     perm[sib_pos]),
                          _random_outside(perm, lo, hi, n, opt.n_random, rng))
        n_out = n - (hi - lo)
        if 2 * len(cols) >= n_out:  # nearly everything: sample the whole block row
            cols = _all_outside(perm, lo, hi)
        M = K._submatrix(cand, cols)
        n_check = max(opt.n_random, 8)
        for last in range(_MAX_SAMPLE_ROUNDS - 1, -1, -1):
            Ut, rows, achieved, tol = _row_id(M, opt.rel_tol, opt.abs_tol, opt.max_rank)
            if len(cols) == n_out or Ut.shape[1] >= opt.max_rank:
                break
            # a posteriori check on fresh random columns: the neighbour sample can miss the
            # smooth far field; on failure, grow the sample geometrically (bounded rounds)
            V = np.setdiff1d(_random_outside(perm, lo, hi, n, n_check, rng), cols,
                             assume_unique=True)
            if len(V) == 0:
                break
            MV = K._submatrix(cand, V)
            resid = np.linalg.norm(MV - Ut @ MV[rows], axis=0)
            if resid.max() <= 2.0 * tol:
                break
            achieved = max(achieved, float(resid.max() / max(tol, 1e-300)) * opt.rel_tol)
            if last == 0:
                break
            # extend the sample, evaluating only columns not seen yet (V's are reused)
            extra = np.setdiff1d(_random_outside(perm, lo, hi, n, len(cols), rng),
                                 np.concatenate((cols, V)))
            if 2 * (len(cols) + len(V) + len(extra)) >= n_out:
                cols = _all_outside(perm, lo, hi)
                M = K._submatrix(cand, cols)
            else:
                cols = np.concatenate((cols, V, extra))
                M = np.hstack((M, MV, K._submatrix(cand, extra)))
            n_check *= 2
        U[t], J[t], err[t] = Ut, cand[rows], achieved
    progress.close()
    return D, U, B, J, err


def _all_outside(perm, lo, hi):
    return np.concatenate((perm[:lo], perm[hi:]))


def _random_outside(perm, lo, hi, n, count, rng):
    n_out = n - (hi - lo)
    count = min(count, n_out)
    if count <= 0:
        return np.zeros(0, np.intp)
    pos = rng.choice(n_out, size=count, replace=False)
    pos = np.where(pos >= lo, pos + (hi - lo), pos)
    return perm[pos]


def _compress_sketch(K, tree, opt, rng):
    """Randomized HSS construction from samples S = K @ Omega (Martinsson 2011).

    Bottom-up, node t needs K(rows_t, outside_t) @ Omega(outside_t): at a leaf that is
    S(I_t) - D_t Omega(I_t); at a parent it is the children's skeleton rows of their samples
    minus the sibling coupling B @ (U^T Omega) of the other child. The sample count grows
    (bounded) until every node's rank is revealed.
    """
    n = tree.n_points
    p = min(n, max(opt.max_rank, 32) + 16)
    for _ in range(_MAX_SAMPLE_ROUNDS):
        gens, revealed = _sketch_once(K, tree, opt, rng, p)
        if revealed or p >= n:
            return gens
        p = min(n, 2 * p)
    return gens


def _sketch_once(K, tree, opt, rng, p):
    n = tree.n_points
    nn = tree.n_nodes
    perm = tree.perm
    Omega = rng.standard_normal((n, p))
    S = K.matmat(Omega)[perm]  # samples in tree order
    Om = Omega[perm]
    D, U, B, J = [None] * nn, [None] * nn, [None] * nn, [None] * nn
    err = np.zeros(nn)
    samp = [None] * nn    # K(rows_t, outside_t) Omega(outside_t), rows = candidates of t
    omt = [None] * nn     # U_t^T Omega(I_t) (skeleton-space random matrix)
    revealed = True
    for t in range(nn - 1, -1, -1):
        cand = _leaf_and_coupling(K, tree, t, J, D, B)
        if t == 0:
            break
        lo, hi = tree.lo[t], tree.hi[t]
        if tree.left[t] < 0:
            St = S[lo:hi] - D[t] @ Om[lo:hi]
            Ot = Om[lo:hi]
        else:
            a, b = tree.left[t], tree.right[t]
            St = np.vstack((samp[a] - B[t] @ omt[b], samp[b] - B[t].T @ omt[a]))
            Ot = np.vstack((omt[a], omt[b]))
            samp[a] = samp[b] = omt[a] = omt[b] = None
        Ut, rows, achieved, _ = _row_id(St, opt.rel_tol, opt.abs_tol, opt.max_rank)
        if Ut.shape[1] >= p - 8 and Ut.shape[1] < opt.max_rank:
            revealed = False
        U[t], J[t], err[t] = Ut, cand[rows], achieved
        samp[t] = St[rows]
        omt[t] = Ut.T @ Ot
    return (D, U, B, J, err), revealed
