"""ULV-type factorization of H + beta I for a symmetric HSS matrix H (Chandrasekaran-Gu-Pals).

Bottom-up, each node t has a dense block A_t (at a leaf D_t + beta I; at a parent the two
children's reduced blocks coupled by U_a B U_b^T) and a basis F_t through which alone it talks
to the rest of the matrix. An orthogonal Q_t with Q_t^T F_t = [R_t; 0] splits the node's
variables into k_t = min(m_t, r_t) that interact with the outside and m_t - k_t that do not;
the latter are eliminated by a Cholesky factor L_t of their block, and the Schur complement
(k_t x k_t) with basis R_t is passed to the parent. The root block is factored by a dense
Cholesky. Work O(n r^2), memory O(n r) beyond the leaf blocks; beta only enters the leaves,
so refactoring for another beta never recompresses.
"""
import numpy as np
import scipy.linalg as sla
from scipy.linalg.lapack import dormqr as _dormqr, dtrtrs as _dtrtrs
from scipy.sparse.linalg import LinearOperator
from threadpoolctl import ThreadpoolController

from ..exceptions import NotPositiveDefiniteError
from ..utils.validation import check_positive


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

    Raises
    ------
    NotPositiveDefiniteError
        If H + beta I is not numerically positive definite (an indefinite approximation with a
        small beta); ``suggested_beta`` carries a shift that makes it definite.
    """

    def __init__(self, hss, beta):
        beta = check_positive(beta, "beta")
        self._hss = hss
        self._beta = beta
        self._n = hss.shape[0]
        try:
            with _one_blas_thread():  # small blocks, see compress
                self._factor()
        except np.linalg.LinAlgError as exc:
            suggested = _suggest_beta(hss, beta)
            raise NotPositiveDefiniteError(
                f"H + beta*I is not positive definite for beta={beta:g} (the HSS "
                f"approximation is indefinite); use beta >= {suggested:.3g} or a tighter "
                f"compression tolerance", suggested_beta=suggested) from exc

    @property
    def beta(self):
        return self._beta

    @property
    def shape(self):
        return (self._n, self._n)

    def _factor(self):
        hss = self._hss
        tree = hss.tree
        nn = tree.n_nodes
        left, right = tree.left, tree.right
        self._Q = [None] * nn     # Householder (reflectors, tau); None: nothing eliminated
        self._L = [None] * nn     # Cholesky factor of the eliminated block
        self._W = [None] * nn     # L^{-1} A21
        self._k = np.zeros(nn, dtype=np.intp)  # rows of the reduced block passed up
        Dh = [None] * nn
        Fh = [None] * nn
        for t in range(nn - 1, -1, -1):
            a, b = left[t], right[t]
            if a < 0:
                A = hss.D[t].copy()
                A[np.diag_indices_from(A)] += self._beta
                F = hss.U[t]
            else:
                C = Fh[a] @ hss.B[t] @ Fh[b].T
                A = np.block([[Dh[a], C], [C.T, Dh[b]]])
                F = None if t == 0 else sla.block_diag(Fh[a], Fh[b]) @ hss.U[t]
                Dh[a] = Dh[b] = Fh[a] = Fh[b] = None
            if t == 0:
                self._root = sla.cholesky(A, lower=True, check_finite=False)
                break
            m, r = F.shape
            k = min(m, r)
            self._k[t] = k
            if k == m:  # the basis spans everything: nothing to eliminate here
                Dh[t], Fh[t] = A, F
                continue
            # Householder form: Q is never formed, applying it costs O(m^2 k), not O(m^3)
            (qr, tau), R = sla.qr(F, mode="raw", check_finite=False)
            Q = (qr[:, :k].copy(order="F"), tau[:k].copy())
            At = _apply_q(Q, _apply_q(Q, A, "T").T, "T")  # Q^T A Q (A symmetric)
            L = sla.cholesky(At[k:, k:], lower=True, check_finite=False)
            W = sla.solve_triangular(L, At[k:, :k], lower=True, check_finite=False)
            Dh[t] = At[:k, :k] - W.T @ W
            Fh[t] = R[:k]
            self._Q[t], self._L[t], self._W[t] = Q, L, W

    def solve(self, b):
        """Solve (H + beta I) x = b for a vector (n,) or a block (n, k) of right-hand sides."""
        b = np.asarray(b, dtype=np.float64)
        if b.shape[0] != self._n or b.ndim not in (1, 2):
            raise ValueError(f"b must have shape ({self._n},) or ({self._n}, k), got {b.shape}")
        vec = b.ndim == 1
        B = b.reshape(self._n, -1)
        tree = self._hss.tree
        X = np.empty_like(B)
        with _one_blas_thread():  # per-node BLAS-2 calls: threads only add wake-up latency
            X[tree.perm] = self._solve_tree_order(B[tree.perm])
        return X.ravel() if vec else X

    def _solve_tree_order(self, Bp):
        tree = self._hss.tree
        nn = tree.n_nodes
        left, right, lo, hi = tree.left, tree.right, tree.lo, tree.hi
        red = [None] * nn   # reduced right-hand side passed up
        y2 = [None] * nn    # L^{-1} (eliminated part), kept for the backward pass
        for t in range(nn - 1, 0, -1):
            a = left[t]
            rhs = Bp[lo[t]:hi[t]] if a < 0 else np.vstack((red[a], red[right[t]]))
            if a >= 0:
                red[a] = red[right[t]] = None
            Q = self._Q[t]
            if Q is None:
                red[t] = rhs
                continue
            k = self._k[t]
            z = _apply_q(Q, rhs, "T")
            y2[t] = _trsolve(self._L[t], z[k:], 0)
            red[t] = z[:k] - self._W[t].T @ y2[t]
        if left[0] < 0:
            return sla.cho_solve((self._root, True), Bp, check_finite=False)
        rhs = np.vstack((red[left[0]], red[right[0]]))
        sol = [None] * nn
        sol[0] = sla.cho_solve((self._root, True), rhs, check_finite=False)
        X = np.empty_like(Bp)
        for t in range(nn):
            x = sol[t]
            sol[t] = None
            if t > 0 and self._Q[t] is not None:
                k = self._k[t]
                x2 = _trsolve(self._L[t], y2[t] - self._W[t] @ x, 1)
                x = _apply_q(self._Q[t], np.vstack((x, x2)), "N")
            a = left[t]
            if a < 0:
                X[lo[t]:hi[t]] = x
            else:
                ka = self._k[a]
                sol[a], sol[right[t]] = x[:ka], x[ka:]
        return X

    def logdet(self):
        """log det(H + beta I), from the Cholesky factors (orthogonal transforms have |det| 1)."""
        total = 2.0 * np.log(np.diag(self._root)).sum()
        for L in self._L:
            if L is not None:
                total += 2.0 * np.log(np.diag(L)).sum()
        return float(total)

    def memory_bytes(self):
        """Bytes held by the factor (not counting the HSS matrix it refers to)."""
        total = self._root.nbytes + self._k.nbytes
        for group in (self._Q, self._L, self._W):
            total += sum(_nbytes(a) for a in group if a is not None)
        return total

    def as_linear_operator(self):
        """(H + beta I)^{-1} as a LinearOperator, e.g. the ``M=`` preconditioner of scipy's cg."""
        return LinearOperator(self.shape, matvec=self.solve, matmat=self.solve,
                              rmatvec=self.solve, dtype=np.float64)

    def __repr__(self):
        return (f"<ULVFactor n={self._n} beta={self._beta:g} "
                f"memory={self.memory_bytes() / 2**20:.1f} MB>")


_CONTROLLER = []


def _one_blas_thread():
    """Limit BLAS to one thread; the controller is built once (a fresh one costs ~ms)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


def _nbytes(a):
    return sum(x.nbytes for x in a) if isinstance(a, tuple) else a.nbytes


def _trsolve(L, b, trans):
    """L^{-1} b (trans 0) or L^{-T} b (trans 1), L lower triangular; raw LAPACK, because the
    solve visits every node and scipy's checked wrapper costs more than the arithmetic."""
    x, info = _dtrtrs(L, b, lower=1, trans=trans)
    return x


def _apply_q(Q, C, trans):
    """Q^T C (trans "T") or Q C (trans "N") for Q in Householder form, via LAPACK ormqr."""
    qr, tau = Q
    C = np.array(C, order="F", dtype=np.float64)  # ormqr overwrites its input
    cq, _, info = _dormqr(b"L", trans.encode(), qr, tau, C, max(1, 64 * C.shape[1]),
                          overwrite_c=1)
    return cq


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
