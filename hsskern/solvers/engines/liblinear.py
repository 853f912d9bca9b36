"""L1-loss (hinge) linear SVM on precomputed features through scikit-learn's LIBLINEAR.

The hinge loss is not differentiable, so the semismooth Newton method does not apply; LIBLINEAR's
dual coordinate descent (``LinearSVC(loss="hinge", dual=True)``) is the standard solver for it
(LLSVM's choice). The intercept convention matches :mod:`hsskern.solvers.engines.ssn`: a constant feature
s = ``intercept_scaling``, so b is penalised by (b / s)^2 / 2.
"""
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from ...utils._threads import LIBLINEAR_LOCK


@dataclass(frozen=True)
class LiblinearResult:
    """Outcome of :func:`l1svm_liblinear`.

    Attributes
    ----------
    w : ndarray of shape (n_features,)
    b : float
    C : float
    objective : float
        1/2 (|w|^2 + (b/s)^2) + C sum_i max(0, 1 - y_i (F_i . w + b)).
    n_iter : int
        LIBLINEAR iterations (passes of coordinate descent).
    converged : bool
    time : float
    """

    w: np.ndarray
    b: float
    C: float
    objective: float
    n_iter: int
    converged: bool
    time: float


def l1svm_objective(F, y, C, w, b=0.0, intercept_scaling=1.0, sample_weight=None):
    """Primal hinge-loss objective with LIBLINEAR's regularized intercept (point i's loss
    weighted by ``sample_weight[i]``, default 1)."""
    r = np.maximum(1.0 - np.asarray(y, dtype=np.float64) * (F @ w + b), 0.0)
    bias = 0.0 if intercept_scaling == 0 else (b / intercept_scaling) ** 2
    loss = r.sum() if sample_weight is None else np.dot(sample_weight, r)
    return 0.5 * (w.dot(w) + bias) + C * loss


def l1svm_liblinear(F, y, C=1.0, *, tol=1e-4, max_iter=1000, intercept_scaling=1.0,
                    random_state=None, sample_weight=None):
    """Train the hinge-loss linear SVM on features F with LIBLINEAR's dual coordinate descent.

    Parameters
    ----------
    F : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    C : float, default 1.0
    tol : float, default 1e-4
        LIBLINEAR's stopping tolerance (projected-gradient gap).
    max_iter : int, default 1000
    intercept_scaling : float, default 1.0
        Constant feature s; 0 fits no intercept.
    random_state : int, RandomState or None
        Order of the coordinate sweeps.
    sample_weight : ndarray of shape (n_samples,), optional
        Per-point loss weights (LIBLINEAR's per-instance C: point i's dual bound is C w_i);
        validated by the caller. None: all 1.

    Returns
    -------
    LiblinearResult
    """
    t0 = time.perf_counter()
    s = float(intercept_scaling)
    model = LinearSVC(loss="hinge", dual=True, C=C, tol=tol, max_iter=max_iter,
                      fit_intercept=s > 0, intercept_scaling=s if s > 0 else 1.0,
                      random_state=random_state)
    with warnings.catch_warnings(record=True) as caught, LIBLINEAR_LOCK:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(F, y, sample_weight=sample_weight)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    w = model.coef_.ravel().copy()
    b = float(model.intercept_[0]) if s > 0 else 0.0
    n_iter = int(np.max(model.n_iter_))
    return LiblinearResult(w=w, b=b, C=float(C),
                           objective=float(l1svm_objective(F, y, C, w, b, s, sample_weight)),
                           n_iter=n_iter, converged=converged, time=time.perf_counter() - t0)
