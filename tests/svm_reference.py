"""Checks that a fitted classifier holds SVC's SVM, shared by the weight and small-n tests."""
import numpy as np


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
