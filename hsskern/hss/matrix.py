"""The HSS matrix: generators stored per node of the cluster tree, applied in O(n r).

Symmetric, with nested interpolative bases (U = V):

* leaf t: ``D[t] = K(I_t, I_t)`` (tree order) and ``U[t]`` of shape (|I_t|, r_t);
* internal t with children a, b: ``U[t]`` of shape (r_a + r_b, r_t) acting on the children's
  skeletons, and the coupling ``B[t] = K(J_a, J_b)``;
* ``J[t]``: the r_t skeleton points of t (original indices), a subset of its children's.

The block of H between sibling subtrees a and b is ``Ubig_a B[t] Ubig_b^T`` where
``Ubig`` is the product of the nested U's down to the leaves.
"""
import numpy as np
from scipy.sparse.linalg import LinearOperator

from ..utils._memory import check_memory
from ..utils._threads import one_blas_thread
from ._ulv import hss_apply


class HSSMatrix(LinearOperator):
    """Hierarchically semi-separable approximation H of a symmetric kernel matrix.

    Built by :func:`hsskern.hss.compress`. A ``LinearOperator`` in the user's point order;
    the cluster-tree permutation is kept inside.

    Attributes
    ----------
    tree : ClusterTree
    D, U, B, J : list of ndarray (None where a node has no such generator)
    node_error : ndarray of float, shape (n_nodes,)
        Estimated relative error of each node's interpolative decomposition (the first
        dropped pivot over the largest; 0 where the rank was not truncated).
    options : HSSOptions
    timings : dict
        Seconds per phase of the construction.
    """

    def __init__(self, tree, D, U, B, J, node_error, options, timings, kernel=None):
        self.tree = tree
        # the compiled product reads the generators in place: C-contiguous float64 (no copy
        # for what compress builds)
        self.D, self.U, self.B = ([None if g is None else np.ascontiguousarray(g, np.float64)
                                   for g in group] for group in (D, U, B))
        self.J = J
        self.node_error = node_error
        self.options = options
        self.timings = dict(timings)
        self.kernel = kernel
        n = tree.n_points
        super().__init__(dtype=np.float64, shape=(n, n))

    # -- application -----------------------------------------------------------------------
    def _matmat(self, X):
        X = np.asarray(X, dtype=np.float64)
        tree = self.tree
        Xp = X[tree.perm]
        Yp = self._apply_tree_order(Xp)
        out = np.empty_like(Yp)
        out[tree.perm] = Yp
        return out

    def _matvec(self, x):
        return self._matmat(np.reshape(x, (-1, 1))).ravel()

    def _adjoint(self):
        return self

    def _transpose(self):
        return self

    def _apply_tree_order(self, Xp):
        """H @ Xp with rows in tree order: upward pass, sibling coupling, downward pass, one
        compiled walk over the tree (``_ulv.hss_apply``)."""
        Xp = np.ascontiguousarray(Xp, dtype=np.float64)
        Y = np.empty_like(Xp)
        tree = [np.ascontiguousarray(a, dtype=np.intp)
                for a in (self.tree.left, self.tree.right, self.tree.lo, self.tree.hi)]
        with one_blas_thread():  # a few small gemms per node: threads only add wake-ups
            hss_apply(self.D, self.U, self.B, *tree, Xp, Y)
        return Y

    # -- inspection ------------------------------------------------------------------------
    def ranks(self):
        """Rank (number of skeleton points) of every node, -1 at the root."""
        return np.array([-1 if j is None else len(j) for j in self.J])

    @property
    def max_rank(self):
        r = self.ranks()
        return int(r.max()) if len(r) > 1 else 0

    def ranks_per_level(self):
        """Largest rank on each level of the tree (root level excluded)."""
        ranks = self.ranks()
        return [int(ranks[self.tree.level == lev].max())
                for lev in range(1, self.tree.depth)]

    def memory_bytes(self):
        """Bytes held by the generators and the tree."""
        total = self.tree.memory_bytes()
        for group in (self.D, self.U, self.B, self.J):
            total += sum(a.nbytes for a in group if a is not None)
        return total

    def stats(self):
        """Summary for logs and estimators: ranks, memory, timings, error estimate."""
        return {
            "n": self.shape[0],
            "n_nodes": self.tree.n_nodes,
            "depth": self.tree.depth,
            "max_rank": self.max_rank,
            "ranks_per_level": self.ranks_per_level(),
            "memory_bytes": self.memory_bytes(),
            "max_node_error": float(self.node_error.max()) if len(self.node_error) else 0.0,
            "timings": dict(self.timings),
        }

    def to_dense(self, max_bytes=2 * 2**30):
        """Dense H in the user's order (small n only)."""
        n = self.shape[0]
        check_memory(8 * n * n, f"to_dense() of a {n} x {n} HSS matrix", budget=max_bytes)
        return self._matmat(np.eye(n))

    def factor(self, beta, *, suggest=True):
        """ULV factorization of H + beta I (beta > 0); reuses this compression.

        ``suggest``: on an indefinite H + beta I, compute a working shift for the error
        (:class:`~hsskern.hss.ulv.ULVFactor`).

        Returns
        -------
        ULVFactor
        """
        from .ulv import ULVFactor
        return ULVFactor(self, beta, suggest=suggest)

    def __repr__(self):
        return (f"<HSSMatrix n={self.shape[0]} nodes={self.tree.n_nodes} "
                f"max_rank={self.max_rank} memory={self.memory_bytes() / 2**20:.1f} MB>")
