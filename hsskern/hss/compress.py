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
import sys
import time
import warnings
from itertools import accumulate

import numpy as np

from ..cluster.neighbors import choose_method, knn
from ..cluster.tree import build_cluster_tree
from ..options import HSSOptions
from ..utils._threads import one_blas_thread
from ..utils.progress import Progress
from . import _compress_ops as _ops
from .matrix import HSSMatrix

#: pivots at or below this are treated as zero whatever abs_tol says
_NEGLIGIBLE = 1e-200
#: rounds of sample growth per node (bounded: never an open-ended loop)
_MAX_SAMPLE_ROUNDS = 4
#: near strata (sibling, parent's sibling) sampled through their skeletons
_SKELETON_STRATA = 2
#: nodes kept per far stratum in the descent to its nodes nearest t
_FAR_BEAM = 2
#: probe columns per far target in the a posteriori check
_FAR_PROBES = 3
#: far targets probed per node (the nearest of all strata's finalists)
_FAR_KEEP = 4
#: verbose: a note on a level still running after this many seconds since the last line
_LEVEL_NOTE_SECONDS = 20.0


def _nbr_budget(opt, m):
    return min(opt.max_rank, 2 * m) + 2 * opt.n_random


def _row_id(M, rel_tol, abs_tol, max_rank, col_norms=None):
    """Row interpolative decomposition M ~= U @ M[p[:k]] by pivoted QR of M^T.

    Returns (U, rows, achieved, tol) where ``rows`` are row indices of M, U has identity rows
    at ``rows``, ``achieved`` is the first dropped pivot relative to the largest and ``tol``
    the absolute truncation threshold used. Rank: the pivots >= tol (at least 1, at most
    ``max_rank``); a block whose largest pivot is <= max(abs_tol, 1e-200) has rank 0.
    ``col_norms``, if given, receives the norms of M's columns.
    """
    return _ops.row_id(np.ascontiguousarray(M, dtype=np.float64), rel_tol, abs_tol, max_rank,
                       _NEGLIGIBLE, col_norms)


def compress(K, options=None, **kwargs):
    """Build an HSS approximation of the kernel matrix ``K``.

    Parameters
    ----------
    K : KernelOperator
        Only ``K.points`` (for the tree and neighbours) and ``K.submatrix`` (entries) are used
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
    # starve the OpenMP threads of the kernel evaluation. Kernel tiles keep all OpenMP threads.
    with one_blas_thread():  # composes with concurrent fits (see utils._threads)
        return _compress(K, options)


class _PhaseLog:
    """One line on stderr when a phase starts or ends (``verbose >= 1``): a long compression
    says within a second what it is doing, not only once the per-node loop starts."""

    def __init__(self, verbose):
        self.on = verbose >= 1
        self.t0 = time.perf_counter()

    def __call__(self, msg):
        if self.on:
            print(f"[hss {time.perf_counter() - self.t0:7.1f} s] {msg}", file=sys.stderr,
                  flush=True)


def _compress(K, options):
    X = K.points
    n = X.shape[0]
    rng = np.random.default_rng(options.random_state)
    timings = {}
    log = _PhaseLog(options.verbose)
    log(f"compressing {n} x {n} {K.kernel!r} ({X.shape[1]} features, method "
        f"{options.method!r}): cluster tree, leaf_size={options.leaf_size}")

    t0 = time.perf_counter()
    tree = build_cluster_tree(X, options.leaf_size, options.split, rng)
    timings["tree"] = time.perf_counter() - t0
    log(f"tree: {tree.n_nodes} nodes, depth {tree.depth}")

    if options.method == "ann":
        t0 = time.perf_counter()
        k = min(options.n_neighbors, n - 1)
        if k > 0:
            log(f"neighbours: {k} per point ({choose_method(n, X.shape[1], k)}, "
                f"{options.ann_iterations} trees)")
            neighbors = knn(X, k, n_iter=options.ann_iterations, random_state=rng)[0]
        else:
            neighbors = np.zeros((n, 0), np.intp)
        timings["neighbors"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        # neighbour choice, stratified draws and unions of columns (compiled: see
        # _compress_ops for why NumPy set operations are too slow here). The sampler keeps the
        # lists as 32-bit tree positions, so the n x k intp array (and the distances, never
        # read) need not live through the compression: 16 n k bytes, 1 GB at n = 1e6
        sampler = _ops.ColumnSampler(np.ascontiguousarray(neighbors, dtype=np.intp),
                                     tree.perm, tree.inverse_perm())
        del neighbors
        log(f"compressing {tree.n_nodes} nodes bottom-up, level {tree.depth - 1} to 1 "
            f"(max_rank={options.max_rank}, rel_tol={options.rel_tol:g})")
        gens = _compress_ann(K, tree, sampler, options, rng, log)
        timings["compression"] = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        log("compressing by randomized sampling K @ Omega")
        gens = _compress_sketch(K, tree, options, rng)
        timings["compression"] = time.perf_counter() - t0
    D, U, B, J, err = gens
    if log.on:
        nbytes = sum(a.nbytes for g in (D, U, B, J) for a in g if a is not None)
        log(f"done: max rank {max((len(j) for j in J if j is not None), default=0)}, "
            f"generators {nbytes / 2**20:.0f} MB")
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
        D[t] = K.submatrix(idx, idx)
        return idx
    a, b = tree.left[t], tree.right[t]
    B[t] = K.submatrix(J[a], J[b])
    return np.concatenate((J[a], J[b]))


def _near_strata_roots(tree, t, count):
    """The sibling of t, then of its parent, ... (at most ``count`` nodes)."""
    out = []
    while tree.parent[t] >= 0 and len(out) < count:
        par = tree.parent[t]
        out.append(tree.right[par] if tree.left[par] == t else tree.left[par])
        t = par
    return out


def _strata(tree, t):
    """Position ranges [lo, hi) of the siblings of t and of each of its ancestors, as an
    (s, 2) array.

    They partition the complement of t, nearest (in the tree) first: the sibling, the
    parent's sibling, and so on up to a child of the root.
    """
    out = []
    while tree.parent[t] >= 0:
        par = tree.parent[t]
        sib = tree.right[par] if tree.left[par] == t else tree.left[par]
        out.append((tree.lo[sib], tree.hi[sib]))
        t = par
    return np.array(out, dtype=np.intp).reshape(-1, 2)


def _skeleton_frontier(tree, J, v, out):
    """Append to ``out`` the columns that stand for subtree v: the skeletons of its shallowest
    already-compressed nodes, or all points of an uncompressed leaf.

    A compressed node w satisfies K(I_w, outside_w) ~= U_w K(J_w, outside_w), so by symmetry
    every column of K(rows, I_w) with rows outside w is (to the ID tolerance) a combination of
    the columns at J_w: r_w columns reveal the whole subtree, however far its points are from
    the rows' neighbour lists.
    """
    if J[v] is not None:
        out.append(J[v])
    elif tree.left[v] < 0:
        out.append(tree.indices(v))
    else:
        _skeleton_frontier(tree, J, tree.left[v], out)
        _skeleton_frontier(tree, J, tree.right[v], out)


def _node_boxes(X, tree):
    """Bounding boxes (lower, upper), each of shape (n_nodes, d), of every node's points."""
    nn, d = tree.n_nodes, X.shape[1]
    blo, bhi = np.empty((nn, d)), np.empty((nn, d))
    leaves = tree.leaves()
    leaves = leaves[np.argsort(tree.lo[leaves])]  # leaves tile the tree order
    Xp = X[tree.perm]
    blo[leaves] = np.minimum.reduceat(Xp, tree.lo[leaves], axis=0)
    bhi[leaves] = np.maximum.reduceat(Xp, tree.lo[leaves], axis=0)
    for t in np.flatnonzero(tree.left >= 0)[::-1]:  # children before parents
        a, b = tree.left[t], tree.right[t]
        np.minimum(blo[a], blo[b], out=blo[t])
        np.maximum(bhi[a], bhi[b], out=bhi[t])
    return blo, bhi


def _far_targets(X, tree, first, beam=_FAR_BEAM, keep=_FAR_KEEP):
    """For every node t, the ``beam`` nodes nearest to t (by bounding box, then centre) in each
    stratum from index ``first`` on, found by a beam descent from the stratum's root to leaves
    or to the level below t (compressed before t, so their skeletons exist).

    The far strata are otherwise sampled only at random, which misses the few points of a far
    stratum that lie next to t in space: a 2-means tree in 1-3 d often puts a point just past
    t's edge into a distant subtree (a node's nearest outside point, with a kernel entry of
    1e-2, can sit in the stratum of the root's child). Returns (offsets, targets,
    box_lo, box_hi): the targets of node t are ``targets[offsets[t]:offsets[t + 1]]``. All
    pairs descend together: O(n_nodes log^2 n) work, each level's ranking one compiled pass
    (_compress_ops.nearest_per_group).
    """
    nn = tree.n_nodes
    left, right, parent, level = tree.left, tree.right, tree.parent, tree.level
    T, W = [], []
    cur = np.arange(nn)  # the ancestor of each node whose sibling is stratum j
    for j in range(tree.depth):
        nodes = np.flatnonzero(parent[cur] >= 0)
        if len(nodes) == 0:
            break
        a = cur[nodes]
        par = parent[a]
        if j >= first:
            T.append(nodes)
            W.append(np.where(left[par] == a, right[par], left[par]))
        cur[nodes] = par
    if not T:
        return np.zeros(nn + 1, np.intp), np.zeros(0, np.intp), None, None
    T, W = np.concatenate(T), np.concatenate(W)
    blo, bhi = _node_boxes(X, tree)
    cen = 0.5 * (blo + bhi)
    G = np.arange(len(T))  # beam entries: (pair G, node W) for the pair's node T[G]
    Tn = T
    while True:
        act = (left[W] >= 0) & (level[W] < level[Tn] + 1)
        if not act.any():
            break
        # expand every open node into both children, then keep the best `beam` per pair
        G = np.concatenate((G[~act], G[act], G[act]))
        W = np.concatenate((W[~act], left[W[act]], right[W[act]]))
        G, W = _ops.nearest_per_group(G, T[G], W, blo, bhi, cen, beam)
        Tn = T[G]
    # of all strata's finalists, only the `keep` nearest t are probed: most strata are far in
    # space too, and each probe costs kernel entries and an interpolation check
    T, W = _ops.nearest_per_group(Tn, Tn, W, blo, bhi, cen, keep)
    offsets = np.searchsorted(T, np.arange(nn + 1))
    return offsets, W, blo, bhi


def _far_probes(X, tree, J, targets, blo, bhi, t, sampled, per_target=_FAR_PROBES):
    """A few probe columns from each far-strata target of t.

    A target's columns are its skeleton (or its points, for a leaf not yet compressed); its
    probes are its points nearest to t's box (ties, inside the box: nearest its centre) among
    those not marked in ``sampled``: the largest unsampled entries of the target for a
    decaying kernel. Probes join the a posteriori check, and only probes the node's ID fails
    to interpolate join the sample: with a wide kernel many far targets are significant but
    already spanned by the sampled columns, so adding every target up front is as accurate
    and much slower.
    """
    groups = [J[w] if J[w] is not None else tree.indices(w) for w in targets]
    # offsets by itertools (np.cumsum of a list went through NumPy's slow wrapping path)
    starts = np.array([0, *accumulate(map(len, groups))], np.intp)
    if starts[-1] == 0:
        return np.zeros(0, np.intp)
    probes, _ = _ops.nearest_to_box(X, np.concatenate(groups), starts, blo[t], bhi[t],
                                    sampled, per_target)
    return probes


def _compress_ann(K, tree, sampler, opt, rng, log=None):
    n = tree.n_points
    nn = tree.n_nodes
    D, U, B, J = [None] * nn, [None] * nn, [None] * nn, [None] * nn
    err = np.zeros(nn)
    # verbose 1: a line per level (_level_done); 2: also the per-node progress bar
    progress = Progress(nn, "HSS compression", opt.verbose - 1, min_total=2000)
    level_start = (tree.level[nn - 1], nn - 1, time.perf_counter())
    quiet_until = time.perf_counter() + _LEVEL_NOTE_SECONDS
    # Random columns are drawn per stratum of the complement (sibling, parent's sibling,
    # ...), not uniformly: a uniform draw almost never lands in the medium range that a
    # node's neighbour lists do not reach (e.g. lists swamped by duplicate points) when the
    # kernel has decayed to zero over most of the complement. Every stratum is sampled,
    # nearest ones most: O(log n) columns a node, O(n (r + log n)) kernel entries in all.
    iperm = tree.inverse_perm()
    far_off, far_w, blo, bhi = _far_targets(K.points, tree, _SKELETON_STRATA)
    far = dict(off=far_off, w=far_w, lo=blo, hi=bhi,
               sampled=np.zeros(n, np.uint8))  # marks a node's sample while probes are chosen
    for t in range(nn - 1, -1, -1):  # children before parents
        if log is not None and tree.level[t] != level_start[0]:
            level_start = _level_done(log, tree, J, t, level_start)
            quiet_until = time.perf_counter() + _LEVEL_NOTE_SECONDS
        elif log is not None and time.perf_counter() > quiet_until:  # a long level
            lev, last, _ = level_start
            log(f"level {lev}: {last - t} of {np.count_nonzero(tree.level == lev)} nodes")
            quiet_until = time.perf_counter() + _LEVEL_NOTE_SECONDS
        cand = _leaf_and_coupling(K, tree, t, J, D, B)
        progress.update()
        if t == 0:
            break
        if len(cand) == 0:
            U[t], J[t] = np.zeros((0, 0)), np.zeros(0, np.intp)
            continue
        sample = _first_sample(K, tree, sampler, opt, rng, t, cand, J, far)
        Ut, rows, achieved = _sample_until_revealed(K, tree, sampler, opt, rng, t, cand,
                                                    iperm, *sample)
        U[t], J[t], err[t] = Ut, cand[rows], achieved
    progress.close()
    return D, U, B, J, err


def _first_sample(K, tree, sampler, opt, rng, t, cand, J, far):
    """Node t's first column sample of its block row K(cand, outside t): its neighbours',
    a draw per far stratum, and the near strata through their skeletons; with a few probe
    columns of the far strata's nodes nearest to t for the checks.

    Returns ``(strata, base, counts, cols, M, probes, MP)``: the strata, each one's least
    and current draw, the sampled columns and K(cand, cols), the probes and their block."""
    n = tree.n_points
    lo, hi = tree.lo[t], tree.hi[t]
    m = len(cand)
    strata = _strata(tree, t)
    # the near strata (sibling, parent's sibling) through their compressed descendants:
    # nodes are numbered breadth-first, so every node one level below t is compressed
    # and the recursion stops there (at most 2 + 4 nodes, O(r) columns each)
    skel = []
    near = _near_strata_roots(tree, t, _SKELETON_STRATA)
    for w in near:
        _skeleton_frontier(tree, J, w, skel)
    base = np.full(len(strata), max(opt.n_random // 2, 2))
    base[0] = max(opt.n_random, 2)
    counts = base.copy()
    counts[:len(near)] = 0  # covered by their skeletons; still checked below
    cols = sampler.union([sampler.neighbor_columns(cand, lo, hi, _nbr_budget(opt, m)),
                          sampler.draw_strata(strata, counts, rng), *skel])
    n_out = n - (hi - lo)
    if 2 * len(cols) >= n_out:  # nearly everything: sample the whole block row
        cols = _all_outside(tree.perm, lo, hi)
    M = K.submatrix(cand, cols)
    probes, MP = np.zeros(0, np.intp), np.zeros((m, 0))
    off, sampled = far["off"], far["sampled"]
    if len(cols) < n_out and off[t] < off[t + 1]:
        sampled[cols] = 1
        probes = _far_probes(K.points, tree, J, far["w"][off[t]:off[t + 1]],
                             far["lo"], far["hi"], t, sampled)
        sampled[cols] = 0
        MP = K.submatrix(cand, probes)
    return strata, base, counts, cols, M, probes, MP


def _sample_until_revealed(K, tree, sampler, opt, rng, t, cand, iperm, strata, base, counts,
                           cols, M, probes, MP):
    """The interpolative decomposition of node t's sampled block row, the sample grown
    until fresh columns and the far probes are interpolated as well as the sampled ones
    (at most ``_MAX_SAMPLE_ROUNDS`` samples). Returns ``(U_t, rows, achieved tolerance)``."""
    lo, hi = tree.lo[t], tree.hi[t]
    m = len(cand)
    n_out = tree.n_points - (hi - lo)
    oversample = 4  # significant sampled columns the ID must leave unused
    n_sig_prev = -1
    for last in range(_MAX_SAMPLE_ROUNDS - 1, -1, -1):
        col_norms = np.empty(M.shape[1])
        Ut, rows, achieved, tol = _row_id(M, opt.rel_tol, opt.abs_tol, opt.max_rank,
                                          col_norms)
        k = Ut.shape[1]
        if len(cols) == n_out or k >= opt.max_rank:
            break
        # (1) the sample must reveal the rank: an ID that uses nearly every significant
        # sampled column may be missing directions that no sampled column carries
        n_sig = int(np.count_nonzero(col_norms > tol))
        starved = k < m and k + oversample > n_sig and n_sig > n_sig_prev
        n_sig_prev = n_sig
        # (2) a posteriori check on fresh columns drawn per stratum: every unsampled
        # column must be interpolated about as well as the sampled ones
        V = sampler.draw_strata(strata, np.maximum(np.maximum(counts, base) // 2, 4), rng,
                                exclude=(cols,))
        if len(V):
            MV = K.submatrix(cand, V)
            rv = _ops.interp_residual(MV, Ut, rows)
            resid = rv.max()
        else:
            MV, rv, resid = np.zeros((m, 0)), np.zeros(0), 0.0
        # (3) the far strata's nodes nearest to t, through a few probe columns each
        far_fail = np.zeros(0, bool)
        if len(probes):
            rp = _ops.interp_residual(MP, Ut, rows)
            far_fail = rp > 2.0 * tol
            resid = max(resid, rp.max())
        if resid <= 2.0 * tol and not starved:
            break
        if resid > 2.0 * tol:
            achieved = max(achieved, float(resid / max(tol, 1e-300)) * opt.rel_tol)
        if last == 0:
            break
        # grow the sample, keeping V (already evaluated): quadruple the share of the
        # strata where a check column failed (the missed directions live there), double
        # every stratum's share when the sample was merely starved
        v_fail = rv > 2.0 * tol
        if v_fail.any():
            pos = iperm[V[v_fail]][:, None]
            lo_s, hi_s = strata.T
            hit = ((lo_s <= pos) & (pos < hi_s)).any(axis=0)
            counts[hit] = 4 * np.maximum(counts[hit], base[hit])
        elif starved:
            counts = 2 * np.maximum(counts, base)
        if v_fail.any() or starved:  # V excludes cols: together they are what was seen
            extra = sampler.draw_strata(strata, counts, rng, exclude=(cols, V))
        else:  # only far probes failed: they alone join the sample (a new stratified
            extra = np.zeros(0, np.intp)  # draw would not target what they missed)
        # failing probes join the sample with their evaluated columns; the rest stay probes
        add = far_fail & ~np.isin(probes, V)
        P_add, MP_add = probes[add], MP[:, add]
        probes, MP = probes[~far_fail], MP[:, ~far_fail]
        if 2 * (len(cols) + len(V) + len(P_add) + len(extra)) >= n_out:
            cols = _all_outside(tree.perm, lo, hi)
            M = K.submatrix(cand, cols)
        else:
            cols = np.concatenate((cols, V, P_add, extra))
            M = np.hstack((M, MV, MP_add, K.submatrix(cand, extra)))
    return Ut, rows, achieved


def _level_done(log, tree, J, t, level_start):
    """Log the level just finished (nodes t + 1 .. its last, in breadth-first ids) and start
    timing the next."""
    lev, last, t0 = level_start
    ranks = [len(J[v]) for v in range(t + 1, last + 1) if J[v] is not None]
    log(f"level {lev}: {last - t} nodes, ranks {min(ranks, default=0)}-"
        f"{max(ranks, default=0)} ({time.perf_counter() - t0:.1f} s)")
    return tree.level[t], t, time.perf_counter()


def _all_outside(perm, lo, hi):
    return np.concatenate((perm[:lo], perm[hi:]))


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
