"""Checks that a fitted classifier holds SVC's SVM, shared by the weight, small-n and
stored-kernel tests."""
import numpy as np
from sklearn.svm import SVC


def gap_tol(eps, C, w):
    """Kernel-part tolerance between two solutions at KKT gap ``eps`` with bounds C w_i:
    each is within 2 sqrt(eps sum_i C w_i) of the optimum (tests/test_weights.py), with a
    factor 2 of margin."""
    return 4 * 2 * np.sqrt(eps * C * np.sum(w))


def svc(C, h, eps, **kw):
    """LIBSVM's SVC with the Gaussian of width h, stopped at gap ``eps``."""
    return SVC(C=C, gamma=1 / (2 * h * h), tol=eps, **kw)


def binary_problem(seed, n, d=3, threshold=0.4):
    """Overlapping two-class points (labels 0/1, both present): free SVs on both sides."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > threshold, 1, 0)
    y[:2] = [0, 1]
    return X, y, rng


def b_interval(g, y, alpha, bound):
    """[lb, ub]: the intercepts optimal with this alpha (g = y - f, f without intercept):
    a free point's g bounds b on both sides, a bounded point's on one."""
    e = 1e-9 * bound
    live = bound > 0
    lo, hi = live & (alpha <= e), live & (alpha >= bound - e)
    free, pos = live & ~lo & ~hi, y > 0
    lower = np.concatenate([g[free], g[lo & pos], g[hi & ~pos]])
    upper = np.concatenate([g[free], g[lo & ~pos], g[hi & pos]])
    return lower.max(), upper.min()


def assert_same_svm(m, ref, X, Zs, y_pm, bound, tol, k=0, b_ref=None):
    """Column k of HSSSVC ``m`` is the SVM of SVC ``ref`` (module docstring): the kernel
    parts of the decision values within ``tol`` on every Z, both intercepts optimal."""
    b = m.intercept_[k]
    b_ref = ref.intercept_[0] if b_ref is None else b_ref

    def dec(est, Z):
        D = est.decision_function(Z)
        return D[:, k] if D.ndim == 2 else D
    for Z in Zs:
        np.testing.assert_allclose(dec(m, Z) - b, ref.decision_function(Z) - b_ref,
                                   atol=tol)
    coef = np.zeros(X.shape[0])
    coef[m.support_] = m.dual_coef_[k]
    lb, ub = b_interval(y_pm - (dec(m, X) - b), y_pm, np.abs(coef), bound)
    assert lb - tol <= b <= ub + tol
    assert lb - tol <= b_ref <= ub + tol
    return coef
