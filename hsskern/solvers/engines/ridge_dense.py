"""The dense route of the exact kernel ridge solver: scikit-learn's ``KernelRidge`` solve.

Where conjugate gradients cannot reach the tolerance (alpha so small that K + alpha I is
numerically singular; a preconditioner too poor), where the problem is weighted, or where
alpha = 0, the exact solver of :mod:`~hsskern.solvers.paths.ridge_path` solves the system densely
for n up to ``dense_max_n`` (and within the memory budget): a Cholesky factor of
S K S + alpha I (S = diag(sqrt(w)), the identity unweighted), and where that fails (K
singular to rounding, alpha tiny or 0) the least-squares solution, as ``KernelRidge`` does.
The weighted problem min sum_i w_i (y_i - f(x_i))^2 + alpha ||f||^2 has the dual
coefficients c = S (S K S + alpha I)^{-1} S y; a point of weight 0 gets c_i = 0.
"""
import warnings

import numpy as np
import scipy.linalg

from ...utils._memory import resolve_budget

__all__ = ["dense_ridge", "dense_memory", "dense_fits"]


def dense_memory(n):
    """Bytes of the dense route on n points: K, the (weighted, shifted) copy, its factor or
    the least-squares fallback's copy, and a product for the residual."""
    return 4 * 8 * n * n


def dense_fits(n, dense_max_n, memory_budget):
    """Whether the dense route is open: n <= ``dense_max_n`` and its arrays fit the budget."""
    budget = resolve_budget(memory_budget)
    return n <= dense_max_n and (budget is None or dense_memory(n) <= budget)


def dense_ridge(Kd, Y, alpha, weights=None):
    """c solving (K + alpha W^{-1}) c = y on the points of positive weight (0 elsewhere).

    Parameters
    ----------
    Kd : ndarray of shape (n, n)
        The dense kernel (not modified).
    Y : ndarray of shape (n, k)
    alpha : float >= 0
    weights : ndarray of shape (n,) or None

    Returns
    -------
    coef : ndarray of shape (n, k)
    residual : ndarray of shape (k,)
        The relative residual ||(S K S + alpha I) S^{-1} c - S y|| / ||S y|| per column.
    """
    n, k = Y.shape
    keep = np.arange(n) if weights is None else np.flatnonzero(weights > 0)
    s = np.ones(keep.size) if weights is None else np.sqrt(weights[keep])
    K = Kd[np.ix_(keep, keep)]
    A = K * np.outer(s, s)
    B = Y[keep] * s[:, None]
    A[np.diag_indices_from(A)] += alpha
    try:
        factor = scipy.linalg.cho_factor(A, lower=True, overwrite_a=False,
                                         check_finite=False)
        Z = scipy.linalg.cho_solve(factor, B, check_finite=False)
        if not np.all(np.isfinite(Z)):
            raise np.linalg.LinAlgError("a non-finite Cholesky solution")
        del factor
    except np.linalg.LinAlgError:
        # K singular to rounding at this alpha: KernelRidge's least-squares solution, and
        # its warning
        warnings.warn("Singular matrix in solving dual problem (K + alpha I is not "
                      f"numerically positive definite at alpha={alpha:g}). Using "
                      "least-squares solution instead.", stacklevel=4)
        Z = scipy.linalg.lstsq(A, B, check_finite=False)[0]
    R = A @ Z - B
    del A
    bnorm = np.linalg.norm(B, axis=0)
    residual = np.divide(np.linalg.norm(R, axis=0), bnorm, out=np.zeros(k), where=bnorm > 0)
    coef = np.zeros((n, k))
    coef[keep] = Z * s[:, None]
    return coef, residual


def dense_loo(Kd, Y, alpha, weights):
    """Leave-one-out residuals y_i - f_{-i}(x_i) of the weighted ridge problem, (n, k).

    Leaving point i out of the weighted problem removes row i of the scaled one (S K S +
    alpha I) z = S y, whose leave-one-out residual is z_i / (A^{-1})_ii; point i's own is
    that over s_i. A point of weight 0 does not move the model: its residual is y_i - f(x_i).
    """
    keep = np.flatnonzero(weights > 0)
    s = np.sqrt(weights[keep])
    A = Kd[np.ix_(keep, keep)] * np.outer(s, s)
    A[np.diag_indices_from(A)] += alpha
    Ainv = scipy.linalg.pinvh(A)  # K singular to rounding at small alpha: the pseudo-inverse
    Z = Ainv @ (Y[keep] * s[:, None])
    E = Y - Kd[:, keep] @ (Z * s[:, None])
    E[keep] = Z / np.diag(Ainv)[:, None] / s[:, None]
    return E
