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
eigenvalues below 1e-10 of the largest: duplicate or nearly duplicate pivots add nothing
rather than breaking a Cholesky.
"""
import numpy as np
from sklearn.utils import check_random_state

from ..utils._memory import check_memory

__all__ = ["rp_cholesky"]

_EIG_CUTOFF = 1e-10


def rp_cholesky(K, rank, *, block_size=None, random_state=None, memory_budget=None):
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

    Returns
    -------
    F : ndarray of shape (n, r), r <= rank
    pivots : ndarray of int, shape (r_p,)
        The columns of K that were read (r_p >= r: a dropped eigenvalue is a read column
        that added no column to F).
    residual : ndarray of shape (n,)
        diag(K - F F^T) >= 0; its sum bounds ||K - F F^T||_2.
    """
    n = K.shape[0]
    rank = int(min(rank, n))
    if rank < 1:
        raise ValueError(f"rank must be >= 1, got {rank}")
    b = int(block_size) if block_size is not None else max(1, min(200, rank // 10))
    check_memory(8 * n * (rank + 2 * b), f"a rank-{rank} randomly pivoted Cholesky factor of "
                 f"{n} points", memory_budget, hint="lower the rank (n_components)")
    rng = check_random_state(random_state)
    resid = np.asarray(K.diag(), dtype=np.float64).copy()
    floor = 1e-14 * max(resid.sum(), np.finfo(float).tiny)
    F = np.empty((n, rank))
    r = 0
    pivots = []
    rows = np.arange(n)
    while r < rank and resid.sum() > floor:
        m = min(b, rank - r, np.count_nonzero(resid > 0))
        S = np.unique(rng.choice(n, size=m, replace=True, p=resid / resid.sum()))
        G = K.submatrix(rows, S)
        G -= F[:, :r] @ F[S, :r].T
        w, U = np.linalg.eigh((G[S] + G[S].T) / 2)
        keep = w > _EIG_CUTOFF * max(w[-1], 0.0)
        keep &= w > 0
        Fb = G @ (U[:, keep] / np.sqrt(w[keep]))
        F[:, r:r + Fb.shape[1]] = Fb
        r += Fb.shape[1]
        pivots.append(S)
        resid -= np.einsum("ij,ij->i", Fb, Fb)
        np.maximum(resid, 0.0, out=resid)
        resid[S] = 0.0  # exact on its pivots (up to rounding)
        if not keep.any():
            break  # the residual on the drawn pivots is rounding: nothing left to take
    F = F if r == rank else F[:, :r].copy()  # no 8 n k byte copy when the rank was reached
    return F, np.concatenate(pivots) if pivots else np.empty(0, int), resid
