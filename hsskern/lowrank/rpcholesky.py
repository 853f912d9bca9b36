"""Randomly pivoted Cholesky: a low-rank F F^T <= K from k kernel columns, chosen by K itself.

Block RPCholesky (Chen, Epperly, Tropp & Webber, "Randomly pivoted Cholesky", CPAM 2024;
the block variant of their section 2): draw a block of pivots with probability proportional to
the diagonal of the residual K - F F^T, add the Nystrom approximation of the residual on those
columns, repeat. The residual stays positive semi-definite (a Nystrom approximation never
exceeds the matrix), so F F^T + beta I <= K + beta I for every beta: as a preconditioner of
K + beta I its eigenvalues lie in [1, 1 + lambda_max(K - F F^T) / beta], whatever the data.
Sampling by the residual diagonal puts pivots where the approximation is still poor (rare
clusters, outliers) rather than where the points are dense, which k-means landmarks and
uniform sampling do not.

Cost: k columns of K (n k kernel entries), O(n k^2) flops, 8 n k bytes for F. The block's
own Nystrom step uses an eigendecomposition of the residual on the pivots and drops its
eigenvalues below 1e-10 of K's largest diagonal entry: duplicate or nearly duplicate pivots
add nothing rather than breaking a Cholesky, and no column is scaled by more than 1e5 (the
residual there is at rounding level, and the map to new points would amplify its error).
"""
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.utils import check_random_state

from ..utils._memory import check_memory

__all__ = ["rp_cholesky", "nystrom_on_pivots", "RPCholesky"]

_EIG_CUTOFF = 1e-10


class RPCholesky(NamedTuple):
    """What :func:`rp_cholesky` returns."""

    F: np.ndarray
    """(n, r), r <= rank: F F^T <= K."""
    pivots: np.ndarray
    """The columns of K that were read (a dropped eigenvalue is a read column that added no
    column to F, so there may be more than r)."""
    residual: np.ndarray
    """diag(K - F F^T) >= 0, shape (n,); its sum bounds ||K - F F^T||_2."""
    weights: object = None
    """With ``return_map``: W of shape (len(pivots), r) with F = K[:, pivots] W, so a new
    point x has the feature row k(x, pivots) W (the Nystrom extension: F's own row at a
    training point); else None."""


def rp_cholesky(K, rank, *, block_size=None, random_state=None, memory_budget=None,
                return_map=False):
    """A rank-``rank`` (at most) F with F F^T <= K, by block randomly pivoted Cholesky.

    Parameters
    ----------
    K : KernelOperator
        Symmetric positive semi-definite (its ``diag()`` and ``submatrix(I, J)`` are read:
        ``rank`` columns, never the whole matrix).
    rank : int
        Columns of F, >= 1 (fewer when the residual's trace reaches rounding level first).
    block_size : int or None
        Pivots drawn per block; None: ``max(1, min(200, rank // 10))``.
    random_state : int, RandomState or None
    memory_budget : float or None
        Bytes allowed for F and the block's columns (checked before any kernel entry).
    return_map : bool, default False
        Also track W with F = K[:, pivots] W (O(rank^3) flops, 8 rank^2 bytes more): what
        extends the features to new points.

    Returns
    -------
    RPCholesky
        ``(F, pivots, residual, weights)``.
    """
    n = K.shape[0]
    rank = int(min(rank, n))
    if rank < 1:
        raise ValueError(f"rank must be >= 1, got {rank}")
    b = int(block_size) if block_size is not None else max(1, min(200, rank // 10))
    check_memory(8 * n * (rank + 2 * b) + (16 * rank * rank if return_map else 0),
                 f"a rank-{rank} randomly pivoted Cholesky factor of "
                 f"{n} points", memory_budget, hint="lower the rank (n_components)")
    rng = check_random_state(random_state)
    resid = np.asarray(K.diag(), dtype=np.float64).copy()
    scale = float(resid.max(initial=0.0))
    floor = 1e-14 * max(resid.sum(), np.finfo(float).tiny)
    # column-major, and every block computed transposed (pivots x n): the update is the wide
    # product F[S] F^T, the new columns are written contiguously, nothing is transposed in memory
    F = np.empty((n, rank), order="F")
    r = 0
    pivots = []
    blocks = []  # per block: the rows of W on its pivots and on all earlier pivots
    rows = np.arange(n)
    while r < rank and resid.sum() > floor:
        m = min(b, rank - r, np.count_nonzero(resid > 0))
        S = np.unique(rng.choice(n, size=m, replace=True, p=resid / resid.sum()))
        GT = K.submatrix(S, rows)  # the residual's rows on S: K[S, :] - F[S] F^T
        GT -= F[S, :r] @ F[:, :r].T
        w, U = np.linalg.eigh((GT[:, S] + GT[:, S].T) / 2)
        keep = w > _EIG_CUTOFF * max(w[-1], scale)
        keep &= w > 0
        V = U[:, keep] / np.sqrt(w[keep])
        if return_map:  # Fb = (K[:, S] - F F[S]^T) V = K[:, S] V - K[:, earlier] W (F[S]^T V)
            blocks.append((V, F[S, :r].T @ V))
        FbT = V.T @ GT
        F[:, r:r + FbT.shape[0]] = FbT.T
        r += FbT.shape[0]
        pivots.append(S)
        resid -= np.einsum("ij,ij->j", FbT, FbT)
        np.maximum(resid, 0.0, out=resid)
        resid[S] = 0.0  # exact on its pivots (up to rounding)
        if not keep.any():
            break  # the residual on the drawn pivots is rounding: nothing left to take
    F = F if r == rank else F[:, :r].copy(order="F")  # no 8 n k byte copy at the full rank
    piv = np.concatenate(pivots) if pivots else np.empty(0, int)
    return RPCholesky(F, piv, resid, _weights(blocks, piv.size, r) if return_map else None)


def _weights(blocks, n_pivots, r):
    """W with F = K[:, pivots] W from the blocks' (V, F[S]^T V): block upper triangular."""
    W = np.zeros((n_pivots, r))
    p = c = 0
    for V, B in blocks:
        W[:p, c:c + V.shape[1]] = -W[:p, :c] @ B
        W[p:p + V.shape[0], c:c + V.shape[1]] = V
        p, c = p + V.shape[0], c + V.shape[1]
    return W


def nystrom_on_pivots(K, pivots, *, memory_budget=None):
    """The Nystrom approximation F F^T = K[:, P] K[P, P]^+ K[P, :] <= K on given columns P.

    For the same inducing points at another kernel width (a GP's width search): K[P, P] is
    factored by a pivoted Cholesky (LAPACK ``pstrf``) that stops where the remaining
    diagonal falls below 1e-10 of K's largest, so a nearly dependent column is left out
    rather than amplified, and F = K[:, P'] L^{-T} on the columns P' it kept. Cost: n |P|
    kernel entries and one n x |P| triangular solve in place (O(n |P|^2)); memory 8 n |P|
    bytes.

    Returns
    -------
    RPCholesky
        ``weights`` = L^{-T} with F = K[:, pivots] weights; ``pivots`` the kept columns.
    """
    n = K.shape[0]
    pivots = np.asarray(pivots, dtype=np.intp)
    k = pivots.size
    check_memory(8 * n * k + 24 * k * k, f"a rank-{k} Nystrom approximation of {n} points",
                 memory_budget, hint="lower the rank (n_components)")
    diag = np.asarray(K.diag(), dtype=np.float64)
    A = K.submatrix(pivots, pivots)
    c, piv, rank, _ = scipy.linalg.lapack.dpstrf(
        (A + A.T) / 2, tol=_EIG_CUTOFF * float(diag.max(initial=0.0)), lower=1)
    kept = pivots[piv[:rank] - 1]
    L = np.tril(c[:rank, :rank])
    # the columns in pivot order, (n, r) C-contiguous: its transpose is the Fortran (r, n)
    # that the in-place triangular solve L^{-1} C^T = F^T wants
    F = K.submatrix(np.arange(n), kept)
    F = scipy.linalg.blas.dtrsm(1.0, L, F.T, side=0, lower=1, overwrite_b=1).T
    resid = np.maximum(diag - np.einsum("ij,ij->i", F, F), 0.0)
    resid[kept] = 0.0
    W = scipy.linalg.solve_triangular(L, np.eye(rank), lower=True, trans="T")
    return RPCholesky(F, kept, resid, W)
