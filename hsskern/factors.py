"""The factor protocol shared by every factorization of a shifted kernel matrix A + beta I.

A *factor* is an immutable object built once from a (symmetric positive semi-definite) kernel
matrix ``A`` and a shift ``beta > 0``; solvers (the dual ADMM of :mod:`hsskern.solvers.engines.admm`)
only ever talk to this protocol, so the HSS ``ULVFactor``, sparse Cholesky factors and the dense
reference below are interchangeable:

``beta`` : float
    The shift the factor was built with.
``shape`` : tuple (n, n)
    (optional for solvers: they take n from the labels)
``solve(b)`` : ndarray (n,) or (n, r) -> same shape
    ``(A + beta I)^{-1} b``; a block of right-hand sides is solved in one call.
``logdet()`` : float
    ``log det(A + beta I)``.
``memory_bytes()`` : int
    Bytes held by the factor.
``as_linear_operator()`` : scipy LinearOperator
    ``b -> (A + beta I)^{-1} b``; usable as the ``M=`` preconditioner of
    :func:`scipy.sparse.linalg.cg`.
``inverse_diagonal()`` : ndarray (n,), optional
    ``diag((A + beta I)^{-1})`` (leave-one-out for kernel ridge); the HSS ``ULVFactor``,
    :class:`DenseCholeskyFactor` and :class:`LowRankShiftFactor` have it.

:class:`DenseCholeskyFactor` is the exact reference for small n (tests, and
``HSSSVC(options=HSSSVCOptions(approximation="exact"))``); :class:`LowRankShiftFactor`
factors F F^T + beta I for a tall F (a Nystrom approximation) by the Woodbury identity.
"""
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import LinearOperator

from .exceptions import NotPositiveDefiniteError
from .utils._memory import check_memory
from .utils.validation import check_positive

__all__ = ["Factor", "DenseCholeskyFactor", "LowRankShiftFactor", "factor_linear_operator"]


@runtime_checkable
class Factor(Protocol):
    """Structural type of a factorization of ``A + beta I`` (see the module docstring)."""

    beta: float
    shape: tuple

    def solve(self, b): ...

    def logdet(self): ...

    def memory_bytes(self): ...

    def as_linear_operator(self): ...


def factor_linear_operator(factor):
    """``b -> factor.solve(b)`` as a symmetric scipy ``LinearOperator`` (``cg``'s ``M=``)."""
    n = factor.shape[0]
    return LinearOperator((n, n), matvec=factor.solve, rmatvec=factor.solve,
                          matmat=factor.solve, rmatmat=factor.solve, dtype=np.float64)


class DenseCholeskyFactor:
    """Dense Cholesky factor of ``A + beta I`` for small n: the exact reference factor.

    Parameters
    ----------
    A : ndarray of shape (n, n), or an operator
        Symmetric matrix. An object with ``to_dense()`` (a
        :class:`~hsskern.kernels.KernelOperator`) is densified; any other scipy
        ``LinearOperator`` is applied to the identity. Only the lower triangle is read.
    beta : float
        Shift, > 0.
    memory_budget : int, optional
        Bytes allowed for the dense work arrays (default: 80% of available memory); the request
        (two n x n float64 arrays) is checked before allocating.

    Raises
    ------
    ValueError
        If ``beta <= 0`` or ``A`` is not square.
    NotPositiveDefiniteError
        If ``A + beta I`` is not numerically positive definite; ``suggested_beta`` carries the
        smallest shift that makes it so (from the smallest eigenvalue of ``A``, with a margin).
    MemoryBudgetError
        If the dense arrays would not fit.
    """

    def __init__(self, A, beta, memory_budget=None):
        beta = check_positive(beta, "beta")
        n = A.shape[0]
        if len(A.shape) != 2 or A.shape[1] != n:
            raise ValueError(f"A must be square, got shape {A.shape}")
        check_memory(2 * 8 * n * n, f"a dense Cholesky factor of a {n} x {n} matrix",
                     budget=memory_budget,
                     hint='use the HSS factor (approximation="hss") for large n')
        M = _dense(A, n)  # a fresh array we own
        M[np.diag_indices(n)] += beta
        try:
            L = scipy.linalg.cholesky(M, lower=True, overwrite_a=True, check_finite=False)
        except np.linalg.LinAlgError:
            L = None
        if L is None or not np.isfinite(L).all():
            raise _not_pd(_dense(A, n), beta) from None
        self._L = L
        self._beta = beta
        self.shape = (n, n)

    @property
    def beta(self):
        """The shift beta."""
        return self._beta

    def solve(self, b):
        """Solve ``(A + beta I) x = b``.

        Parameters
        ----------
        b : array-like of shape (n,) or (n, r)

        Returns
        -------
        x : ndarray of the shape of ``b``
        """
        b = np.asarray(b, dtype=np.float64)
        if b.shape[0] != self.shape[0]:
            raise ValueError(f"b has {b.shape[0]} rows, the factor {self.shape[0]}")
        return scipy.linalg.cho_solve((self._L, True), b, check_finite=False)

    def logdet(self):
        """``log det(A + beta I)`` from the diagonal of the Cholesky factor."""
        return 2.0 * float(np.sum(np.log(np.diag(self._L))))

    def inverse_diagonal(self):
        """The diagonal of ``(A + beta I)^{-1}``, shape (n,): the squared column norms of
        ``L^{-1}`` (one triangular inversion, O(n^3 / 3); an n x n work array)."""
        Linv, info = scipy.linalg.lapack.dtrtri(self._L, lower=1)
        if info != 0:  # L has a positive diagonal, so this cannot happen for a real factor
            raise np.linalg.LinAlgError(f"dtrtri failed (info={info})")
        Linv = np.tril(Linv)  # dtrtri leaves the other triangle as it found it
        return np.einsum("ij,ij->j", Linv, Linv)

    def memory_bytes(self):
        """Bytes held (the n x n triangular factor is stored densely)."""
        return int(self._L.nbytes)

    def as_linear_operator(self):
        """``(A + beta I)^{-1}`` as a scipy ``LinearOperator`` (for ``cg(..., M=...)``)."""
        return factor_linear_operator(self)

    def __repr__(self):
        return f"<DenseCholeskyFactor n={self.shape[0]} beta={self._beta:g}>"


class LowRankShiftFactor:
    """The factor of ``F F^T + beta I`` for a tall F (n x k, k << n), by Woodbury.

    With M = beta I_k + F^T F = L L^T: ``(F F^T + beta I)^{-1} = (I - F M^{-1} F^T) / beta``,
    ``log det = (n - k) log beta + log det M``, and diag of the inverse
    ``(1 - ||L^{-1} F_i||^2) / beta``. A new shift costs one k x k Cholesky (pass ``gram`` =
    F^T F to reuse it); a solve O(n k) per right-hand side.

    Parameters
    ----------
    F : ndarray of shape (n, k)
    beta : float, > 0
    gram : ndarray of shape (k, k) or None
        F^T F, computed when None.
    """

    def __init__(self, F, beta, gram=None):
        beta = check_positive(beta, "beta")
        F = np.asarray(F, dtype=np.float64)
        if F.ndim != 2:
            raise ValueError(f"F must be 2-D, got shape {F.shape}")
        gram = F.T @ F if gram is None else gram
        M = gram + beta * np.eye(F.shape[1])
        self._L = scipy.linalg.cholesky(M, lower=True, check_finite=False)
        self._F = F
        self._gram = gram
        self._beta = beta
        self.shape = (F.shape[0], F.shape[0])

    @property
    def beta(self):
        """The shift beta."""
        return self._beta

    def shifted(self, beta):
        """The factor of ``F F^T + beta I`` for another shift (F^T F reused)."""
        return LowRankShiftFactor(self._F, beta, self._gram)

    def solve(self, b):
        """Solve ``(F F^T + beta I) x = b`` for b of shape (n,) or (n, r)."""
        b = np.asarray(b, dtype=np.float64)
        if b.shape[0] != self.shape[0]:
            raise ValueError(f"b has {b.shape[0]} rows, the factor {self.shape[0]}")
        z = scipy.linalg.cho_solve((self._L, True), self._F.T @ b, check_finite=False)
        return (b - self._F @ z) / self._beta

    def reduced_solve(self, b):
        """Solve the k x k system ``(F^T F + beta I) x = b`` for b of shape (k,) or (k, m)
        (F^T (F F^T + beta I)^{-1} F = I - beta (F^T F + beta I)^{-1}: what a Nystrom
        model's predictive variance needs)."""
        return scipy.linalg.cho_solve((self._L, True), np.asarray(b, dtype=np.float64),
                                      check_finite=False)

    def logdet(self):
        """``log det(F F^T + beta I)``."""
        n, k = self._F.shape
        return (n - k) * np.log(self._beta) + 2.0 * float(np.sum(np.log(np.diag(self._L))))

    def inverse_diagonal(self):
        """The diagonal of ``(F F^T + beta I)^{-1}``, shape (n,), in O(n k^2)."""
        W = scipy.linalg.solve_triangular(self._L, self._F.T, lower=True, check_finite=False)
        return (1.0 - np.einsum("ij,ij->j", W, W)) / self._beta

    def memory_bytes(self):
        """Bytes held: F, F^T F and the k x k factor."""
        return int(self._F.nbytes + self._gram.nbytes + self._L.nbytes)

    def as_linear_operator(self):
        """``(F F^T + beta I)^{-1}`` as a scipy ``LinearOperator`` (for ``cg(..., M=...)``)."""
        return factor_linear_operator(self)

    def __repr__(self):
        return (f"<LowRankShiftFactor n={self.shape[0]} rank={self._F.shape[1]} "
                f"beta={self._beta:g}>")


def _dense(A, n):
    if isinstance(A, np.ndarray):
        return np.array(A, dtype=np.float64, order="F")
    if hasattr(A, "to_dense"):
        return np.asfortranarray(A.to_dense())
    if hasattr(A, "toarray"):  # scipy sparse
        return np.asfortranarray(A.toarray(), dtype=np.float64)
    return np.asfortranarray(A @ np.eye(n))


def _not_pd(A, beta):
    # symmetrise the lower triangle Cholesky read, then look at the spectrum it actually has
    A = np.tril(A) + np.tril(A, -1).T
    finite = np.isfinite(A).all()
    if not finite:
        return NotPositiveDefiniteError(
            "A + beta I is not positive definite: A contains NaN or infinity", None)
    lam_min = float(scipy.linalg.eigvalsh(A, subset_by_index=[0, 0])[0])
    scale = max(float(np.abs(np.diag(A)).max(initial=0.0)), 1e-300)
    # a safety margin so the suggested shift survives rounding in the next factorization
    suggested = max(-lam_min, 0.0) + max(1e-8 * scale, 1e-12)
    suggested = max(suggested, 2.0 * beta) if suggested <= beta else suggested
    return NotPositiveDefiniteError(
        f"A + beta I is not positive definite for beta={beta:g} (smallest eigenvalue of A is "
        f"{lam_min:.3g}); use beta >= {suggested:.3g}", suggested)
