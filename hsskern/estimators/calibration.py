"""Platt scaling, the probability model of every classifier here (``probability=True``).

Platt (1999) maps a decision value f to P(y = +1 | f) = 1 / (1 + exp(A f + B)), fitting A and
B by maximum likelihood on decision values the model did not train on, against the smoothed
targets (N+ + 1) / (N+ + 2) for positives and 1 / (N- + 2) for negatives. The fit below is
the Newton method with backtracking line search of Lin, Lin & Weng (2007), written to never
evaluate exp of a positive number — the method LIBSVM uses. The held-out decision values come
from :func:`cross_val_decision`: stratified folds, one ``prepare`` and one ``path`` per fold
through the path protocol, so every backend and every C of a path share one code.

Multiclass one-vs-one (SVC's): one sigmoid per pair of classes, on the held-out values of
that pair's points, and LIBSVM's pairwise coupling
(:func:`~hsskern.solvers.paths.pairwise.pairwise_coupling`) for the class probabilities.
One-vs-rest: one sigmoid per class, and the class probabilities are the sigmoids normalised
to sum to 1.
"""
import numpy as np
from scipy.special import expit, logsumexp

__all__ = ["sigmoid_fit", "sigmoid_log_proba", "sigmoid_proba", "cross_val_decision",
           "N_FOLDS"]

#: the internal folds of the probability fit (LIBSVM's five)
N_FOLDS = 5

# Lin, Lin & Weng's constants: Newton stops when both gradient entries are below _EPS; the
# line search gives up below _MIN_STEP; _SIGMA keeps the Hessian positive definite
_MAX_ITER = 100
_MIN_STEP = 1e-10
_SIGMA = 1e-12
_EPS = 1e-5


def _objective(f, t, w, A, B):
    """The negative log-likelihood sum_i w_i [t_i z_i + log(1 + exp(-z_i))], z = A f + B,
    evaluated without overflow (the two branches are the same function)."""
    z = A * f + B
    pos = z >= 0
    out = np.where(pos, t * z + np.log1p(np.exp(-np.abs(z))),
                   (t - 1.0) * z + np.log1p(np.exp(-np.abs(z))))
    return float(np.dot(w, out))


def sigmoid_fit(f, y, sample_weight=None):
    """Platt's sigmoid (A, B) for decision values ``f`` and labels ``y`` in {-1, +1}.

    Parameters
    ----------
    f : ndarray of shape (n,)
        Held-out decision values (positive: the +1 class).
    y : ndarray of shape (n,)
        Labels, > 0 for the positive class.
    sample_weight : ndarray of shape (n,) or None
        Weights of the likelihood terms (and of the class counts in Platt's targets), so an
        integer weight is a repeated point; None: all 1 (Platt's and LIBSVM's fit).

    Returns
    -------
    A, B : float
        P(y = +1 | f) = 1 / (1 + exp(A f + B)); A < 0 when larger decision values are more
        likely positive.
    """
    f = np.asarray(f, dtype=np.float64)
    pos = np.asarray(y) > 0
    w = np.ones(f.size) if sample_weight is None else np.asarray(sample_weight, np.float64)
    n_pos, n_neg = float(w[pos].sum()), float(w[~pos].sum())
    # Platt's smoothed targets: a point is never fitted as certain
    t = np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    fval = _objective(f, t, w, A, B)
    for _ in range(_MAX_ITER):
        z = A * f + B
        # p = 1 / (1 + exp(z)) and q = 1 - p, each from exp of a non-positive number
        e = np.exp(-np.abs(z))
        p = np.where(z >= 0, e, 1.0) / (1.0 + e)
        q = np.where(z >= 0, 1.0, e) / (1.0 + e)
        d2 = w * p * q
        h11 = _SIGMA + float(np.dot(d2, f * f))
        h22 = _SIGMA + float(d2.sum())
        h21 = float(np.dot(d2, f))
        d1 = w * (t - p)
        g1, g2 = float(np.dot(d1, f)), float(d1.sum())
        if abs(g1) < _EPS and abs(g2) < _EPS:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= _MIN_STEP:  # backtracking: sufficient decrease (Armijo, 1e-4)
            newA, newB = A + step * dA, B + step * dB
            newf = _objective(f, t, w, newA, newB)
            if newf < fval + 1e-4 * step * gd:
                A, B, fval = newA, newB, newf
                break
            step /= 2.0
        if step < _MIN_STEP:  # no decrease along the Newton direction: at the optimum
            break
    return A, B


def sigmoid_log_proba(D, A, B):
    """Log class probabilities from decision values, shape (m, n_classes).

    Parameters
    ----------
    D : ndarray of shape (m,) or (m, 1) for two classes, (m, k) for k one-vs-rest classes
    A, B : ndarray of shape (1,) or (k,)
        One sigmoid per decision column.

    Two classes: column 1 is log P(+1 | f) = -log(1 + exp(A f + B)), column 0 its
    complement. One-vs-rest: log of sigmoid_k(f_k) / sum_j sigmoid_j(f_j).
    """
    D = np.asarray(D, dtype=np.float64)
    if D.ndim == 1:
        D = D[:, None]
    Z = D * np.asarray(A) + np.asarray(B)  # (m, r)
    if Z.shape[1] == 1:
        z = Z[:, 0]
        return np.column_stack([-np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)])
    log_s = -np.logaddexp(0.0, Z)
    return log_s - logsumexp(log_s, axis=1, keepdims=True)


def sigmoid_proba(D, A, B):
    """Class probabilities (rows sum to 1), as :func:`sigmoid_log_proba`."""
    D = np.asarray(D, dtype=np.float64)
    if D.ndim == 1:
        D = D[:, None]
    Z = D * np.asarray(A) + np.asarray(B)
    if Z.shape[1] == 1:
        return np.column_stack([expit(Z[:, 0]), expit(-Z[:, 0])])
    return np.exp(sigmoid_log_proba(D, A, B))


def cross_val_decision(backend, X, Y, Cs, splits, weights=None):
    """Held-out decision values of every training point, for every C.

    Each split's training part is prepared once and solved along all of ``Cs`` by the
    backend (path protocol), and its test part decided by that model.

    Parameters
    ----------
    backend : a path-protocol backend
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, r)
        Label columns in {-1, +1}.
    Cs : sequence
        Ascending C values (``[None]`` for a backend without C).
    splits : list of (train, test) index arrays
        Disjoint test parts covering every point.
    weights : ndarray of shape (n,) or None
        Per-point weights (> 0) for the backend's ``path``.

    Returns
    -------
    ndarray of shape (len(Cs), n, r)
        A column whose training part holds a single label gets +1 or -1 (that label) on the
        test part, as LIBSVM does. For a one-vs-one backend (``backend.one_vs_one``) and
        more than two classes, r is the number of pairs (the backend gives a pair of one
        class its constant).
    """
    if getattr(backend, "one_vs_one", False) and Y.shape[1] > 1:
        return _cross_val_pairwise(backend, X, Y, Cs, splits, weights)
    n, r = Y.shape
    D = np.empty((len(Cs), n, r))
    for train, test in splits:
        Yt = Y[train]
        has_pos, has_neg = (Yt > 0).any(axis=0), (Yt < 0).any(axis=0)
        D[:, test, :] = np.where(has_pos, 1.0, -1.0)
        cols = np.flatnonzero(has_pos & has_neg)
        if cols.size == 0:
            continue
        Yc = np.ascontiguousarray(Yt[:, cols])
        prepared = backend.prepare(X[train], Yc)
        if weights is None:
            solutions = backend.path(prepared, Yc, Cs)
        else:
            solutions = backend.path(prepared, Yc, Cs, weights=weights[train])
        dec = backend.model(prepared, solutions).decision(X[test])  # (S, m, |cols|)
        del prepared
        for s in range(len(Cs)):
            D[s, test[:, None], cols[None, :]] = dec[s]
    return D


def _cross_val_pairwise(backend, X, Y, Cs, splits, weights):
    """:func:`cross_val_decision` for a one-vs-one backend: every pair's values."""
    k = Y.shape[1]
    D = np.empty((len(Cs), Y.shape[0], k * (k - 1) // 2))
    for train, test in splits:
        Yt = np.ascontiguousarray(Y[train])
        prepared = backend.prepare(X[train], Yt)
        if weights is None:
            solutions = backend.path(prepared, Yt, Cs)
        else:
            solutions = backend.path(prepared, Yt, Cs, weights=weights[train])
        D[:, test, :] = backend.model(prepared, solutions).decision(X[test])
        del prepared
    return D
