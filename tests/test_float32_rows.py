"""float32 kernel rows in the single-fit engine (LIBSVM's ``Qfloat``): the SMO's solution
equals the float64 rows' to the solver's tolerance, the double certificate's gap is a
double-precision one, and the returned model decides in double."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsskern.estimators.exact_svc import ExactSVC
from hsskern.kernels import kernel_operator, make_kernel
from hsskern.solvers.cached_smo import SMOOptions, solve_dual
from svm_reference import gap_tol


def _gap(K, y, alpha, ub):
    """m(a) - M(a) over all points, from alpha alone, in double."""
    v = y - K @ (y * alpha)
    up = ((y > 0) & (alpha < ub)) | ((y < 0) & (alpha > 0))
    low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < ub))
    return v[up].max() - v[low].min()


def _data(seed, n, d, dup):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if dup:  # a quarter of the rows repeat others (the rows' entries 1 to the last bit)
        X[rng.integers(0, n, n // 4)] = X[rng.integers(0, n, n // 4)]
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0.2, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return X, y


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 220), d=st.sampled_from([2, 30, 120]),
       gamma_factor=st.sampled_from([0.02, 1.0, 20.0]), C=st.sampled_from([0.5, 1.0, 30.0]),
       dup=st.booleans())
def test_float32_rows_solve_the_float64_problem(seed, n, d, gamma_factor, C, dup):
    """Many features (the expanded distances) or few, a wide or a narrow kernel, duplicate
    rows: float32 rows give the float64 rows' SVM to LIBSVM's tolerance."""
    X, y = _data(seed, n, d, dup)
    kern = make_kernel("gaussian", gamma=gamma_factor / d)
    K = kernel_operator(X, kern).to_dense()
    tol = 1e-3
    f64 = solve_dual(X, kern, y, C, options=SMOOptions(tol=tol, row_dtype="float64"))
    f32 = solve_dual(X, kern, y, C, options=SMOOptions(tol=tol, row_dtype="float32"))
    assert f64.converged and f32.converged
    assert np.all(f32.alpha >= 0) and np.all(f32.alpha <= C)
    assert abs(y @ f32.alpha) <= 1e-9 * max(1.0, C * n)
    # each cached entry within 2^-24 of its double: each gradient entry within
    # 2^-24 sum(alpha), so the gap in double within twice that of the reported one
    slack = 2.0 ** -23 * f32.alpha.sum()
    assert _gap(K, y, f32.alpha, C) < tol + slack + 1e-12
    assert _gap(K, y, f64.alpha, C) < tol * (1 + 1e-6) + 1e-12
    bound = gap_tol(tol + slack, C, np.ones(n))
    np.testing.assert_allclose(K @ (y * f32.alpha), K @ (y * f64.alpha), atol=bound)
    obj = [0.5 * (y * a) @ K @ (y * a) - a.sum() for a in (f32.alpha, f64.alpha)]
    assert abs(obj[0] - obj[1]) <= 2 * (tol + slack) * C * n


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(60, 200), d=st.sampled_from([3, 40]),
       C=st.sampled_from([1.0, 100.0]))
def test_double_certificate_is_a_double_gap(seed, n, d, C):
    """With the certificate the gap and rho are the double gradient's: the gap recomputed
    from alpha in double is the one returned, and below tol."""
    X, y = _data(seed, n, d, False)
    kern = make_kernel("gaussian", gamma=1.0 / d)
    K = kernel_operator(X, kern).to_dense()
    opts = SMOOptions(tol=1e-3, row_dtype="float32", double_certificate=True)
    res = solve_dual(X, kern, y, C, options=opts)
    true_gap = _gap(K, y, res.alpha, C)
    assert res.converged and true_gap < 1e-3
    assert abs(true_gap - res.gap) <= 1e-9 * max(1.0, C * n)
    np.testing.assert_allclose(res.G, y * (K @ (y * res.alpha)) - 1.0, atol=1e-9 * C * n)


def test_the_switch_and_its_default():
    """"auto" is float32 at SVC's tol and float64 below it; float32 rows hold twice the
    rows in the same cache (fewer recomputed); a bad value names the choices."""
    assert SMOOptions().single_rows and SMOOptions(tol=1e-3).row_bytes == 4
    assert not SMOOptions(tol=1e-6).single_rows and SMOOptions(tol=1e-6).row_bytes == 8
    assert SMOOptions(tol=1e-6, row_dtype="float32").single_rows
    assert not SMOOptions(row_dtype="float64").single_rows
    with pytest.raises(ValueError, match="row_dtype"):
        SMOOptions(row_dtype="half")
    X, y = _data(3, 600, 20, False)
    kern = make_kernel("gaussian", gamma=0.05)
    cache = SMOOptions(cache_bytes=8 * 600 * 60, shrinking=False)  # 60 double rows
    f64 = solve_dual(X, kern, y, 10.0, options=replace(cache, row_dtype="float64"))
    f32 = solve_dual(X, kern, y, 10.0, options=replace(cache, row_dtype="float32"))
    assert f32.stats["rows_computed"] < f64.stats["rows_computed"]
    assert not np.array_equal(f32.alpha, f64.alpha)  # float rows did change the steps
    again = solve_dual(X, kern, y, 10.0, options=replace(cache, row_dtype="float64"))
    np.testing.assert_array_equal(again.alpha, f64.alpha)  # float64: the old engine's bits


def test_the_models_decision_values_are_double_sums():
    """The fitted model's decision values are K(X, SV) dual_coef + intercept in double,
    whatever precision the SMO cached its rows in."""
    X, y = _data(11, 300, 30, True)
    est = ExactSVC(C=1.0, gamma=1.0 / 30).fit(X, y)
    Xt = np.random.default_rng(1).normal(size=(50, 30))
    K = kernel_operator(est.support_vectors_, make_kernel("gaussian", gamma=1.0 / 30))
    ref = K.cross(Xt) @ est.dual_coef_[0] + est.intercept_[0]
    ref = np.asarray(ref).ravel()
    np.testing.assert_allclose(est.decision_function(Xt), ref, rtol=1e-12, atol=1e-12)


def test_double_certificate_along_a_session():
    """A C path on one engine (its session): each C's certified gap is a double one."""
    X, y = _data(4, 150, 20, True)
    kern = make_kernel("gaussian", gamma=0.05)
    K = kernel_operator(X, kern).to_dense()
    opts = SMOOptions(tol=1e-3, row_dtype="float32", double_certificate=True)
    session, alpha = {}, None
    for C in (0.5, 5.0, 50.0):
        res = solve_dual(X, kern, y, C, alpha, options=opts, session=session)
        assert res.converged and _gap(K, y, res.alpha, C) < 1e-3
        assert abs(_gap(K, y, res.alpha, C) - res.gap) <= 1e-9 * C * y.size
        alpha = res.alpha
