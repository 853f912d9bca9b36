"""Linear SVM on the rows of a sparse Cholesky factor, and recovery of the kernel expansion.

With P (K + beta I) P^T = L L^T, row i of L is the feature vector of point perm[i]; a linear SVM
on those rows (LIBLINEAR) is the kernel SVM for K + beta I. Its weights w satisfy
w = L^T D_P lambda (the stationarity condition, thesis eq. (42)), so one sparse triangular solve
L^T a = w gives a = D_P lambda = (y * lambda) in permuted order, and the decision function at a
new point z is  sum_i a_i k(x_i, z) + b  with the *unshifted* sparse kernel (beta only touches
k(x_i, x_i)). Dividing by y is never needed: the expansion uses y * lambda directly.

One factor serves every C and every class (K + beta I does not depend on the labels).
"""
from dataclasses import dataclass

import numpy as np
from sklearn.svm import LinearSVC

from ..utils._threads import LIBLINEAR_LOCK


@dataclass
class CholeskySVMResult:
    """Result of :func:`linear_svm_on_factor` for one C.

    Attributes
    ----------
    C : float
    dual_coef : ndarray of shape (n_models, n)
        a = y * lambda per one-vs-rest model, in the *original* point order.
    intercept : ndarray of shape (n_models,)
    coef : ndarray of shape (n_models, n)
        Linear weights on the factor's rows (permuted order).
    n_iter : int
        LIBLINEAR iterations (max over the OvR models).
    linear_model : LinearSVC
        The fitted linear model on ``features``.
    """

    C: float
    dual_coef: np.ndarray
    intercept: np.ndarray
    coef: np.ndarray
    n_iter: int
    linear_model: LinearSVC


def factor_features(factor):
    """Rows of L (CSR, permuted order): the feature vectors of the points ``factor.perm``."""
    F = factor.L.tocsr()
    F.sort_indices()
    return F


def linear_svm_on_factor(factor, codes, C, *, features=None, loss="squared_hinge", dual="auto",
                         tol=1e-4, max_iter=1000, intercept_scaling=1.0, random_state=None,
                         sample_weight=None):
    """Train LIBLINEAR on the rows of ``factor.L`` and recover the dual coefficients.

    Parameters
    ----------
    factor : SparseCholeskyFactor
    codes : ndarray of int of shape (n,)
        Class codes 0..k-1 in the original point order (k >= 2).
    C : float
    features : csr_matrix of shape (n, n), optional
        ``factor_features(factor)``, passed in to reuse it across C.
    loss, dual, tol, max_iter, intercept_scaling, random_state
        Passed to :class:`sklearn.svm.LinearSVC` (one-vs-rest for k > 2); ``dual="auto"``
        means the dual coordinate descent here.
    sample_weight : ndarray of shape (n,), optional
        Per-point weights in the original point order (LIBLINEAR's per-instance C: point i's
        dual bound is C w_i, so lambda_i in [0, C w_i] and the recovery is unchanged);
        validated by the caller. None: all 1.

    Returns
    -------
    CholeskySVMResult
    """
    F = factor_features(factor) if features is None else features
    if loss == "hinge" or dual == "auto":
        # LIBLINEAR solves the hinge loss only in the dual. For the squared hinge the dual
        # coordinate descent costs O(nnz(L)) per epoch on these very sparse rows, far less than
        # the primal trust-region Newton scikit-learn's "auto" picks when n_samples == n_features.
        dual = True
    model = LinearSVC(C=C, loss=loss, dual=dual, tol=tol, max_iter=max_iter,
                      intercept_scaling=intercept_scaling, random_state=random_state)
    with LIBLINEAR_LOCK:  # its generator is process-wide (utils._threads)
        model.fit(F, codes[factor.perm],
                  sample_weight=None if sample_weight is None else sample_weight[factor.perm])
    W = np.ascontiguousarray(model.coef_.T)  # (n, n_models), permuted order
    A_perm = factor.solve_Lt(W)
    A = np.empty_like(A_perm)
    A[factor.perm] = A_perm
    return CholeskySVMResult(C=float(C), dual_coef=np.ascontiguousarray(A.T),
                             intercept=np.asarray(model.intercept_, dtype=np.float64).copy(),
                             coef=np.asarray(model.coef_), n_iter=int(np.max(model.n_iter_)),
                             linear_model=model)
