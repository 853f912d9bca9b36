"""k-nearest neighbours of every point, for the column sampling of HSS-ANN compression.

HSS-ANN (Chávez et al., IPDPS 2020, used by Cipolla & Gondzio §3.1) samples, for each cluster, the kernel
columns of its points' nearest neighbours: those hold the dominant off-diagonal entries. The
neighbours need not be exact, but the search must be cheap — the C++ reference spends 68–90 % of
its compression time here.

``method="rptree"`` (approximate) runs, on the points put in the leaf order of one random
projection tree (so neighbours are close in memory):

1. ``n_iter`` random projection trees (split at the median of the projections onto the
   difference of two random points of the node, leaves of at most ``leaf_size`` points); all
   pairs inside a leaf are candidates and every point keeps its best k in a bounded heap;
2. ``descent_rounds`` neighbour-of-neighbour rounds (the main idea of NN-descent): point i is offered
   the ``n_explore`` nearest neighbours of each of its ``n_explore`` nearest neighbours.

Every candidate distance is exact, so returned distances are exact and only the neighbour set
is approximate. Memory is O(n k) (plus one n-permutation per tree); nothing n x n is formed.
"""
import numpy as np
from scipy.spatial import cKDTree

from ..exceptions import HsskernError
from ..utils._scaling import distance_scale
from . import _ann

__all__ = ["knn", "knn_memory_bytes", "choose_method"]

_METHODS = ("auto", "exact", "rptree")
_MAX_LEAF = 2048


def knn(X, k, method="auto", n_iter=5, random_state=None, *, leaf_size=None, descent_rounds=1,
        n_explore=32):
    """k nearest neighbours of every row of X among the other rows (Euclidean).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        C-contiguous float64 points, finite (trusted: validation is the caller's job). Any
        finite scale works: points whose extent would over- or underflow squared distances
        are searched at an exact power-of-two rescaling (same neighbours, same distances).
    k : int
        Number of neighbours, >= 1. If ``n - 1 < k`` the result has ``n - 1`` columns.
    method : {"auto", "exact", "rptree"}
        ``"exact"``: ``scipy.spatial.cKDTree``. ``"rptree"``: random projection forest plus
        neighbour-of-neighbour descent (approximate). ``"auto"``: see :func:`choose_method`.
    n_iter : int
        Number of random projection trees (STRUMPACK's ``ann_iterations``); at least one is
        built.
    random_state : None, int, numpy Generator or RandomState
        Seeds the trees; equal seeds give identical results whatever the thread count.
    leaf_size : int, optional
        Largest leaf of the projection trees; default ``max(2 k + 2, 64)``, raised to
        ``2 k + 1`` if smaller and capped at ``max(2048, 2 k + 1)``. Leaves hold at least
        ``k + 1`` points, so one tree already fills every heap. Each thread keeps one
        ``leaf_size**2`` float64 tile.
    descent_rounds : int
        Neighbour-of-neighbour rounds after the trees (0 disables them).
    n_explore : int
        A descent round offers point i the ``n_explore`` nearest neighbours of each of its
        ``n_explore`` nearest neighbours (at most ``n_explore**2`` candidates, capped by k).
        At a budget of 1024 candidates, the square 32 x 32 gave the best recall of the shapes
        tried (bench/neighbors.py).

    Returns
    -------
    idx : ndarray of shape (n, k') intp
        Neighbour indices, self excluded, each row sorted by (distance, index); ``k' = min(k,
        n - 1)``.
    dist : ndarray of shape (n, k') float64
        The matching Euclidean distances (exact for the returned pairs; ``inf`` only for a
        distance beyond the float64 range).

    Raises
    ------
    HsskernError
        Internal error: a neighbour index outside [0, n) (never handed on to compiled code).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    X = np.ascontiguousarray(X, dtype=np.float64)  # no copy for the trusted (usual) input
    n, d = X.shape
    k = max(min(int(k), n - 1), 0)
    if k == 0:
        return np.empty((n, 0), dtype=np.intp), np.empty((n, 0), dtype=np.float64)
    if method == "auto":
        method = choose_method(n, d, k)
    # distances of X / s are exact multiples of those of X and stay in [0, 2 sqrt(d)]: with
    # overflowing distances cKDTree reports index n and the heaps keep their -1 sentinels
    s = distance_scale(X)
    Xs = X if s == 1.0 else X / s
    if method == "exact":
        idx, dist = _exact(Xs, k)
    else:
        idx, dist = _rptree(Xs, k, n_iter, random_state, leaf_size, descent_rounds, n_explore)
    _check_neighbors(idx, n)
    if s != 1.0:
        with np.errstate(over="ignore"):
            dist *= s
    return idx, dist


def _check_neighbors(idx, n):
    # O(n k) and cheap next to the search: compiled samplers index arrays with these
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = np.argwhere((idx < 0) | (idx >= n))[0]
        raise HsskernError(
            f"internal error: the neighbour search returned index {idx[tuple(bad)]} for point "
            f"{bad[0]}, outside [0, {n}); please report this with the input")


def choose_method(n, d, k):
    """The method ``knn(method="auto")`` uses for n points in d dimensions.

    ``"exact"`` (cKDTree) when ``d <= 3`` or ``n <= 2000``, else ``"rptree"``.

    Why: a kd-tree prunes well only in very low dimension. Up to d = 3 it is as fast as the
    projection trees, so the exact answer is free; from d = 4 the projection trees are ahead
    and the gap widens with d (in high dimension the kd-tree degenerates to brute force).
    Below n = 2000 both are negligible. The crossover was measured at k = 64
    (bench/neighbors.py, "crossover" table); ``k`` is accepted for future rules.
    """
    return "exact" if d <= 3 or n <= 2000 else "rptree"


def knn_memory_bytes(n, d, k, method="auto", n_iter=5, leaf_size=None, n_explore=32,
                     n_threads=2):
    """Upper estimate of the peak extra memory of :func:`knn`, in bytes, before running it.

    For callers that check a memory budget before allocating (``check_memory``). Counts the
    result (n, k') pair, the working arrays and the per-thread tiles; ``method="auto"`` is
    resolved as :func:`knn` would.

    Returns
    -------
    int
    """
    k = max(min(int(k), n - 1), 0)
    if method == "auto":
        method = choose_method(n, d, k) if k else "exact"
    if method == "exact":
        # tree (points + index) ; query output (n, k+1) of float64 + intp ; self mask ;
        # the compacted (n, k) result
        return int(n * (d + 2) * 8 + n * (k + 1) * 17 + n * k * 16)
    leaf = max(2 * k + 2, 64) if leaf_size is None else int(leaf_size)
    leaf = max(min(leaf, _MAX_LEAF), 2 * k + 1)
    trees = max(int(n_iter), 1)
    return int(n * k * 16                           # heaps, which become the result
               + n * d * 8                          # points in tree order
               + trees * n * 8 + n * 8              # one permutation per tree + the order
               + n * min(n_explore, k) * 8          # frozen front of the graph
               + n_threads * (leaf * leaf + leaf * d + n) * 8)


def _exact(X, k):
    n = X.shape[0]
    dist, idx = cKDTree(X).query(X, k + 1, workers=-1)
    # Drop self by index, not by column: with exact duplicates the point itself may sit at any
    # of the zero-distance columns, or be crowded out of the k + 1 returned altogether (then
    # the last column, also at distance 0, is the surplus one).
    is_self = idx == np.arange(n)[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    keep = ~is_self
    idx = np.ascontiguousarray(idx[keep].reshape(n, k), dtype=np.intp)
    dist = np.ascontiguousarray(dist[keep].reshape(n, k))
    _ann.sort_rows(dist, idx)
    return idx, dist


def _rptree(X, k, n_iter, random_state, leaf_size, descent_rounds, n_explore):
    n = X.shape[0]
    if leaf_size is None:
        leaf_size = max(2 * k + 2, 64)
    # each thread holds a leaf_size^2 distance tile: cap it (32 MB) unless k needs more
    leaf_size = max(min(int(leaf_size), _MAX_LEAF), 2 * k + 1)
    if isinstance(random_state, np.random.RandomState):  # what sklearn's check_random_state gives
        random_state = random_state.randint(np.iinfo(np.int32).max)
    rng = np.random.default_rng(random_state)
    seeds = rng.integers(0, np.iinfo(np.uint64).max, n_iter + 1, dtype=np.uint64,
                         endpoint=True)
    order = _ann.tree_order(X, leaf_size, seeds[0])
    Xo = X[order]
    hd = np.full((n, k), np.inf)
    hi = np.full((n, k), -1, dtype=np.intp)
    # at least one tree: it is what fills every heap with k candidates
    _ann.forest_knn(Xo, k, max(int(n_iter), 1), leaf_size, seeds[1:] if n_iter >= 1
                    else seeds[:1], hd, hi)
    for _ in range(descent_rounds):
        near = _ann.snapshot(hd, hi, n_explore)
        updates = _ann.descend(Xo, near, hd, hi)
        del near
        if updates == 0:
            break
    # finish maps every index through ``order`` (unchecked): an unfilled heap slot (-1) must
    # not get there
    _check_neighbors(hi, n)
    _ann.finish(hd, hi, order)
    idx, dist = hi, hd
    return idx, dist
