"""ULV-type factorization of H + beta I for a symmetric HSS matrix H (Chandrasekaran-Gu-Pals).

Bottom-up, each node t has a dense block A_t (at a leaf D_t + beta I; at a parent the two
children's reduced blocks coupled by U_a B U_b^T) and a basis F_t through which alone it talks
to the rest of the matrix. An orthogonal Q_t with Q_t^T F_t = [R_t; 0] splits the node's
variables into k_t = min(m_t, r_t) that interact with the outside and m_t - k_t that do not;
the latter are eliminated by a Cholesky factor L_t of their block, and the Schur complement
(k_t x k_t) with basis R_t is passed to the parent. The root block is factored by a dense
Cholesky. Work O(n r^2), memory O(n r) beyond the leaf blocks; beta only enters the leaves,
so refactoring for another beta never recompresses.

Both the factorization and the solve are compiled loops over the tree (``_ulv.pyx``): the
blocks are a few dozen rows, so a Python loop would spend more time in call overhead than in
arithmetic. The solve needs Q_t, L_t and W_t = L_t^{-1} A21 only through one m_t x m_t
product M_t per node (``_ulv`` module docstring), and all of them live in one flat array
addressed by per-node offsets.
"""
import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import LinearOperator

from ..exceptions import NotPositiveDefiniteError
from ..utils._threads import one_blas_thread
from ..utils.validation import check_positive
from ._ulv import factor_tree, plan, solve_tree


class ULVFactor:
    """Factor of H + beta I; build it with ``HSSMatrix.factor(beta)``. Immutable.

    Follows the factor protocol shared with ``DenseCholeskyFactor`` and
    ``SparseCholeskyFactor``: ``beta``, ``solve(b)``, ``logdet()``, ``memory_bytes()``,
    ``as_linear_operator()``.

    Parameters
    ----------
    hss : HSSMatrix
    beta : float
        Shift, > 0.
    suggest : bool, default True
        On failure, compute the shift ``suggested_beta`` (a Lanczos run for H's smallest
        eigenvalue: minutes at 10^6 points). False when the caller only needs to know that
        this beta fails (``suggested_beta`` is then None).

    Raises
    ------
    NotPositiveDefiniteError
        If H + beta I is not numerically positive definite (an indefinite approximation with a
        small beta); ``suggested_beta`` carries a shift that makes it definite.
    """

    def __init__(self, hss, beta, *, suggest=True):
        beta = check_positive(beta, "beta")
        self._hss = hss
        self._beta = beta
        self._n = hss.shape[0]
        try:
            with one_blas_thread():  # small blocks, see compress
                self._factor()
        except np.linalg.LinAlgError as exc:
            suggested = _suggest_beta(hss, beta) if suggest else None
            hint = f"use beta >= {suggested:.3g}" if suggest else "use a larger beta"
            raise NotPositiveDefiniteError(
                f"H + beta*I is not positive definite for beta={beta:g} (the HSS "
                f"approximation is indefinite); {hint} or a tighter compression tolerance",
                suggested_beta=suggested) from exc

    @property
    def beta(self):
        return self._beta

    @property
    def shape(self):
        return (self._n, self._n)

    def _factor(self):
        hss = self._hss
        tree = self._tree_arrays = tuple(np.ascontiguousarray(x, dtype=np.intp) for x in (
            hss.tree.left, hss.tree.right, hss.tree.parent, hss.tree.lo, hss.tree.hi,
            hss.tree.perm))
        left, right, _, lo, hi, _ = tree
        rank = np.array([0 if u is None else u.shape[1] for u in hss.U], dtype=np.intp)
        # Every node's blocks go, column-major, into one flat array addressed by offsets
        # (sizes are known from the ranks alone), so both the factorization and the solve
        # walk the tree in compiled code without a Python object per block.
        self._m, self._k, self._off, size = plan(left, right, lo, hi, rank)
        self._data = np.empty(size)

        def c_order(group):
            return [None if g is None else np.ascontiguousarray(g, dtype=np.float64)
                    for g in group]
        self._logdet = float(factor_tree(c_order(hss.D), c_order(hss.U), c_order(hss.B),
                                         self._beta, left, right, self._m, self._k,
                                         self._off, self._data))

    def solve(self, b):
        """Solve (H + beta I) x = b for a vector (n,) or a block (n, k) of right-hand sides.

        O(n r) per column: both tree sweeps run in compiled code (``_ulv.solve_tree``).
        """
        b = np.asarray(b, dtype=np.float64)
        if b.shape[0] != self._n or b.ndim not in (1, 2):
            raise ValueError(f"b must have shape ({self._n},) or ({self._n}, k), got {b.shape}")
        vec = b.ndim == 1
        B = np.ascontiguousarray(b.reshape(self._n, -1))
        X = np.empty_like(B)
        if B.shape[1] > 0:
            with one_blas_thread():  # per-node BLAS-2 calls: threads only add wake-up latency
                solve_tree(self._data, self._m, self._k, self._off, *self._tree_arrays, B, X)
        return X.ravel() if vec else X

    def _solve_reference(self, b):
        """The same two sweeps in numpy, one node at a time: the reference the compiled
        tree walk is tested against (slow: Python overhead on every node)."""
        B = np.asarray(b, dtype=np.float64).reshape(self._n, -1)
        left, right, parent, lo, hi, perm = self._tree_arrays
        nn = len(self._m)
        Z = [None] * nn
        for t in range(nn - 1, -1, -1):
            a, m, k = left[t], self._m[t], self._k[t]
            if a < 0:
                Z[t] = B[perm[lo[t]:hi[t]]].copy()
            else:
                Z[t] = np.vstack((Z[a][:self._k[a]], Z[right[t]][:self._k[right[t]]]))
            if t == 0:
                Z[0] = sla.cho_solve((self._block(0, m), True), Z[0])
            elif k < m:
                Z[t] = self._block(t, m).T @ Z[t]
        X = np.empty_like(B)
        for t in range(nn):
            m, k = self._m[t], self._k[t]
            if t > 0:
                p = parent[t]
                row0 = 0 if left[p] == t else self._k[left[p]]
                Z[t][:k] = Z[p][row0:row0 + k]
                if k < m:
                    Z[t] = self._block(t, m) @ Z[t]
            if left[t] < 0:
                X[perm[lo[t]:hi[t]]] = Z[t]
        return X.reshape(np.shape(b))

    def _block(self, t, m):
        """Node t's m x m block: its M, or at the root its Cholesky factor."""
        off = self._off[t]
        return self._data[off:off + m * m].reshape((m, m), order="F")

    def logdet(self):
        """log det(H + beta I), from the Cholesky factors (orthogonal transforms have |det| 1)."""
        return self._logdet

    def inverse_diagonal(self):
        """The diagonal of (H + beta I)^{-1}, shape (n,), in O(n r^2 depth) without n solves.

        The forward sweep of :meth:`solve` is a linear map F with (H + beta I)^{-1} =
        F^T G F, where G is the identity on the rows each node eliminates (they are already
        ``L^{-1}`` of the eliminated part, see ``_ulv``) and (L_0 L_0^T)^{-1} on the root's
        rows. So the i-th diagonal entry is |F e_i|^2 summed over the eliminated rows plus
        |L_0^{-1} (F e_i)_root|^2, and F e_i is nonzero only on the path from i's leaf to the
        root. Each leaf sends its identity block up its path: at an ancestor the reduced rows
        of one child meet one block of M^T (m x k_child), one gemm of m x k_child x leaf
        size. Memory: one leaf-sized block at a time.
        """
        with one_blas_thread():  # small gemms: threads only add wake-up latency
            return self._inverse_diagonal()

    def _inverse_diagonal(self):
        left, right, parent, lo, hi, perm = self._tree_arrays
        out = np.empty(self._n)
        root_L = self._block(0, self._m[0]) if self._m[0] else None
        for leaf in np.flatnonzero(left < 0):
            m_leaf = hi[leaf] - lo[leaf]
            acc = np.zeros(m_leaf)
            Z = np.eye(m_leaf)
            t, rows = leaf, None  # rows: where Z's rows sit in node t's stacked block
            while True:
                m, k = self._m[t], self._k[t]
                if t == 0:
                    if m:
                        full = Z
                        if rows is not None:
                            full = np.zeros((m, m_leaf))
                            full[rows] = Z
                        W = sla.solve_triangular(root_L, full, lower=True,
                                                 check_finite=False)
                        acc += np.einsum("ij,ij->j", W, W)
                    break
                if k < m:
                    Mt = self._block(t, m)
                    W = (Mt[rows].T if rows is not None else Mt.T) @ Z
                    acc += np.einsum("ij,ij->j", W[k:], W[k:])
                    Z = W[:k]
                elif rows is not None:  # nothing eliminated: the stacked block passes up
                    full = np.zeros((m, m_leaf))
                    full[rows] = Z
                    Z = full
                p = parent[t]
                row0 = 0 if left[p] == t else self._k[left[p]]
                rows = slice(row0, row0 + Z.shape[0])
                t = p
            out[perm[lo[leaf]:hi[leaf]]] = acc
        return out

    def memory_bytes(self):
        """Bytes held by the factor (not counting the HSS matrix it refers to)."""
        return int(self._data.nbytes + self._m.nbytes + self._k.nbytes + self._off.nbytes)

    def as_linear_operator(self):
        """(H + beta I)^{-1} as a LinearOperator, e.g. the ``M=`` preconditioner of scipy's cg."""
        return LinearOperator(self.shape, matvec=self.solve, matmat=self.solve,
                              rmatvec=self.solve, dtype=np.float64)

    def __repr__(self):
        return (f"<ULVFactor n={self._n} beta={self._beta:g} "
                f"memory={self.memory_bytes() / 2**20:.1f} MB>")


def _suggest_beta(hss, beta):
    """A shift that makes H + beta I definite: beyond the most negative eigenvalue of H."""
    from scipy.sparse.linalg import eigsh
    n = hss.shape[0]
    try:
        if n <= 2000:
            lam = np.linalg.eigvalsh(hss.to_dense())[0]
        else:
            lam = eigsh(hss, k=1, which="SA", tol=1e-3, return_eigenvectors=False)[0]
    except Exception:  # the estimate is advisory; never mask the real error
        return 10.0 * beta
    return max(1.1 * max(-lam, 0.0), 2.0 * beta)
