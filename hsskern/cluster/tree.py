"""Binary cluster tree over the points, stored as flat arrays indexed by node id.

The tree owns the permutation: node ``t`` holds the points ``perm[lo[t]:hi[t]]``; the user's
array is never reordered. Nodes are numbered in breadth-first order, so the root is 0 and
every child has a larger id than its parent (reverse id order is a valid bottom-up order).
"""
from dataclasses import dataclass

import numpy as np

from ..utils._scaling import distance_scale


@dataclass(frozen=True)
class ClusterTree:
    """A binary tree of index ranges.

    Attributes
    ----------
    perm : ndarray of intp, shape (n,)
        Permutation: position p of the tree order holds point ``perm[p]``.
    lo, hi : ndarray of intp, shape (n_nodes,)
        Node t holds positions ``lo[t]:hi[t]`` of the tree order.
    left, right : ndarray of intp, shape (n_nodes,)
        Children (-1 at leaves).
    parent : ndarray of intp, shape (n_nodes,)
        Parent (-1 at the root).
    level : ndarray of intp, shape (n_nodes,)
        Depth (0 at the root).
    """

    perm: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    level: np.ndarray

    @property
    def n_nodes(self):
        return len(self.lo)

    @property
    def n_points(self):
        return len(self.perm)

    @property
    def depth(self):
        return int(self.level.max()) + 1

    def is_leaf(self, t):
        return self.left[t] < 0

    def leaves(self):
        return np.flatnonzero(self.left < 0)

    def indices(self, t):
        """Original point indices held by node t."""
        return self.perm[self.lo[t]:self.hi[t]]

    def inverse_perm(self):
        """Position of each original point in the tree order."""
        ip = np.empty_like(self.perm)
        ip[self.perm] = np.arange(len(self.perm))
        return ip

    def memory_bytes(self):
        return sum(a.nbytes for a in (self.perm, self.lo, self.hi, self.left, self.right,
                                      self.parent, self.level))


def _split_2means(P, rng, n_iter=8):
    """Boolean mask of one side of a 2-means split of the rows of P, or None if degenerate."""
    n = len(P)
    # seed with a far pair: a random point, the point farthest from it, and the farthest
    # from that one -- cheap and robust against an unlucky pair of close seeds
    a = P[rng.integers(n)]
    c1 = P[np.argmax(((P - a) ** 2).sum(1))]
    c2 = P[np.argmax(((P - c1) ** 2).sum(1))]
    total = P.sum(0)
    mask = None
    for _ in range(n_iter):
        # |p - c1|^2 <= |p - c2|^2  <=>  2 p.(c2 - c1) <= |c2|^2 - |c1|^2: one matvec
        new = 2.0 * (P @ (c2 - c1)) <= c2 @ c2 - c1 @ c1
        if mask is not None and np.array_equal(new, mask):
            break
        mask = new
        k = mask.sum()
        if k == 0 or k == n:
            return None
        s1 = mask.astype(np.float64) @ P  # centroids without copying the two halves
        c1 = s1 / k
        c2 = (total - s1) / (n - k)
    return mask


def _split_direction(P, direction):
    proj = P @ direction
    med = np.median(proj)
    mask = proj < med
    k = mask.sum()
    if k == 0 or k == len(P):
        return None
    return mask


def _split_pca(P, rng, n_iter=10):
    Pc = P - P.mean(0)
    v = rng.standard_normal(P.shape[1])
    for _ in range(n_iter):  # power iteration on Pc^T Pc, never forming it
        v = Pc.T @ (Pc @ v)
        nv = np.linalg.norm(v)
        if nv == 0:
            return None
        v /= nv
    return _split_direction(Pc, v)


def _split_kd(P):
    spread = P.max(0) - P.min(0)
    e = np.zeros(P.shape[1])
    e[int(np.argmax(spread))] = 1.0
    return _split_direction(P, e)


def build_cluster_tree(X, leaf_size=128, split="2means", random_state=None):
    """Recursive bisection of the rows of X until every leaf holds at most ``leaf_size`` points.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Points (trusted: finite float64).
    leaf_size : int
    split : {"2means", "pca", "kd"}
        Bisection rule. A split that puts every point on one side (e.g. duplicate points)
        falls back to cutting the node's range in half, so every internal node has two
        non-empty children and the depth stays O(log n).
    random_state : None, int or Generator

    Returns
    -------
    ClusterTree
    """
    rng = np.random.default_rng(random_state)
    n = X.shape[0]
    if distance_scale(X) != 1.0:
        # the split rules form |c|^2 and P @ c, which overflow (every split degenerating to
        # halves) for points far from the origin or of extreme extent; only the partition is
        # kept, so a centered, rescaled copy serves (ordinary inputs are used as they are)
        Xc = X - (X.min(axis=0) / 2 + X.max(axis=0) / 2)
        X = Xc / distance_scale(Xc)
    perm = np.arange(n, dtype=np.intp)
    lo, hi, left, right, parent, level = [0], [n], [-1], [-1], [-1], [0]
    t = 0
    while t < len(lo):  # breadth-first
        a, b = lo[t], hi[t]
        if b - a > leaf_size:
            idx = perm[a:b]
            P = X[idx]
            if split == "2means":
                mask = _split_2means(P, rng)
            elif split == "pca":
                mask = _split_pca(P, rng)
            else:
                mask = _split_kd(P)
            if mask is None:
                mid = (b - a) // 2
            else:
                order = np.argsort(~mask, kind="stable")
                perm[a:b] = idx[order]
                mid = int(mask.sum())
            for ca, cb in ((a, a + mid), (a + mid, b)):
                lo.append(ca)
                hi.append(cb)
                left.append(-1)
                right.append(-1)
                parent.append(t)
                level.append(level[t] + 1)
            left[t] = len(lo) - 2
            right[t] = len(lo) - 1
        t += 1
    as_i = lambda v: np.asarray(v, dtype=np.intp)  # noqa: E731
    return ClusterTree(perm, as_i(lo), as_i(hi), as_i(left), as_i(right), as_i(parent),
                       as_i(level))
