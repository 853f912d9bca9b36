"""Landmark points Z for the Nystrom approximation K ~= K(X, Z) K(Z, Z)^+ K(Z, X).

Three recipes:

``"kmeans"``
    The LLSVM / LASN recipe: a few Lloyd iterations of k-means (not run to convergence) on at
    most ``max_samples`` points, the centres are the landmarks. Zhang et al. show the Nystrom
    error is bounded by the k-means quantization error, so rough centres already beat uniform
    sampling. The papers use the *first* 20,000 points; we draw a uniform random subset
    instead, because many data files are sorted by label.
``"kmeans++"``
    The k-means++ seeds themselves (D^2 sampling, no Lloyd step): data points spread out over
    the set, cheaper than ``"kmeans"`` for large k and still far better than uniform.
``"uniform"``
    k distinct training points drawn uniformly without replacement (the classical Nystrom).

k-means itself is scikit-learn's (``KMeans`` / ``kmeans_plusplus``); nothing is re-implemented.
"""
import warnings

import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from ..utils._threads import one_blas_thread

LANDMARK_METHODS = ("kmeans", "kmeans++", "uniform")


def check_n_landmarks(n_landmarks, n_samples):
    """Return k clipped to ``n_samples`` (with a warning); raise if k < 1 or not an integer."""
    if isinstance(n_landmarks, bool) or not isinstance(n_landmarks, (int, np.integer)):
        raise TypeError(f"n_components must be an integer, got {n_landmarks!r}")
    if n_landmarks < 1:
        raise ValueError(f"n_components must be >= 1, got {n_landmarks}")
    if n_landmarks > n_samples:
        warnings.warn(f"n_components={n_landmarks} > n_samples={n_samples}: using "
                      f"n_components={n_samples} (every point is a landmark)",
                      UserWarning, stacklevel=3)
        return int(n_samples)
    return int(n_landmarks)


def select_landmarks(X, n_landmarks, method="kmeans", *, max_samples=20000, n_iter=5,
                     random_state=None):
    """Choose k landmark points from (a sample of) X.

    Inner helper: X must already be validated (finite float64, shape (n, d)) and
    ``1 <= n_landmarks <= n``; see :func:`check_n_landmarks`.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_landmarks : int
        Number k of landmarks.
    method : {"kmeans", "kmeans++", "uniform"}
    max_samples : int, default 20000
        k-means (and k-means++) run on a uniform random subset of at most this many points
        (never fewer than k).
    n_iter : int, default 5
        Lloyd iterations for ``"kmeans"`` (the papers stop early on purpose).
    random_state : int, RandomState or None

    Returns
    -------
    Z : ndarray of shape (n_landmarks, n_features)
        The landmarks. Rows may coincide when X has fewer than k distinct points; the
        eigenvalue cutoff of the feature map absorbs the resulting rank deficiency.
    """
    rng = check_random_state(random_state)
    n = X.shape[0]
    k = int(n_landmarks)
    if method == "uniform":
        return X[np.sort(rng.choice(n, size=k, replace=False))].copy()
    m = min(n, max(int(max_samples), k))
    S = X if m == n else X[np.sort(rng.choice(n, size=m, replace=False))]
    seed = rng.randint(np.iinfo(np.int32).max)
    if method == "kmeans++":
        with one_blas_thread():  # see below
            Z, _ = kmeans_plusplus(S, n_clusters=k, random_state=seed)
        return np.ascontiguousarray(Z)
    if method != "kmeans":
        raise ValueError(f"landmarks must be one of {LANDMARK_METHODS}, got {method!r}")
    if k == m:
        return S.copy()  # every point is its own centre; Lloyd would return S anyway
    # Random (Forgy) initialisation as in LLSVM: k-means++ seeding costs O(m k log k d),
    # which dominates the few Lloyd sweeps for the k in the thousands the papers use.
    km = KMeans(n_clusters=k, init="random", n_init=1, max_iter=int(n_iter), tol=0.0,
                algorithm="lloyd", random_state=seed)
    # KMeans limits BLAS to one thread with a save/restore context of its own, which is
    # process-wide: two fits in two threads would leave BLAS at one thread for good. Inside
    # our composing limit (utils._threads) it saves and restores the limited count instead.
    with warnings.catch_warnings(), one_blas_thread():
        # fewer distinct points than k, or not converged after n_iter sweeps: both expected
        warnings.simplefilter("ignore", ConvergenceWarning)
        km.fit(S)
    return np.ascontiguousarray(km.cluster_centers_, dtype=np.float64)
