"""float32 kernel rows in the single-fit engine (LIBSVM's ``Qfloat``), and their Gaussian
inner products by sgemv in float32 (``cross_dtype``): the SMO's solution equals the float64
rows' to the solver's tolerance (within the error bound of ``single_cross_terms``), the
double certificate's gap is a double-precision one, and the returned model decides in
double."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsskern.estimators.exact_svc import ExactSVC
from hsskern.kernels import gaussian_expansion, kernel_operator, make_kernel
from hsskern.solvers.engines.cached_smo import SMOOptions, single_cross_terms, solve_dual
from svm_reference import gap_tol


def _gap(K, y, alpha, ub):
    """m(a) - M(a) over all points, from alpha alone, in double."""
    v = y - K @ (y * alpha)
    up = ((y > 0) & (alpha < ub)) | ((y < 0) & (alpha > 0))
    low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < ub))
    return v[up].max() - v[low].min()


def _entry_bound(X, kern, K):
    """Each entry's error bound with float32 rows and float32 inner products: Qfloat's
    rounding u K_ij and the cross term's gamma (d + 2) u (|a|^2 + |b|^2) K_ij (centered
    points as the engine's expansion centers them; no expansion: Qfloat's alone)."""
    u = 2.0 ** -24
    exp = gaussian_expansion(kern, X) if X.shape[1] >= SMOOptions().expand_min_features \
        else None
    if exp is None:
        return u * np.abs(K)
    xn = exp[1]
    return np.abs(K) * (u + kern.gamma * (X.shape[1] + 2) * u * (xn[:, None] + xn[None]))


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
    # each cached entry within its bound E_ij of its double (Qfloat's rounding and the
    # float32 inner product's): each gradient entry within sum_j alpha_j E_ij, so the gap in
    # double within twice that of the reported one
    slack = 2.0 * (_entry_bound(X, kern, K) @ f32.alpha).max()
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


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(60, 240), d=st.sampled_from([100, 300]),
       gamma_factor=st.sampled_from([0.01, 1.0, 30.0]), C=st.sampled_from([0.5, 1.0, 30.0]),
       dup=st.booleans())
def test_float32_inner_products_solve_the_float64_problem(seed, n, d, gamma_factor, C, dup):
    """Many features, wide and narrow kernels, duplicate rows: the inner products by sgemv
    in float32 give the double inner products' SVM, and the float64 rows', to LIBSVM's
    tolerance widened by the derived bound; the double certificate closes the gap in
    double."""
    X, y = _data(seed, n, d, dup)
    kern = make_kernel("gaussian", gamma=gamma_factor / d)
    K = kernel_operator(X, kern).to_dense()
    tol, rows32 = 1e-3, SMOOptions(tol=1e-3, row_dtype="float32")
    s32 = solve_dual(X, kern, y, C, options=replace(rows32, cross_dtype="float32"))
    d64 = solve_dual(X, kern, y, C, options=replace(rows32, cross_dtype="float64"))
    f64 = solve_dual(X, kern, y, C, options=SMOOptions(tol=tol, row_dtype="float64"))
    assert s32.converged and d64.converged and f64.converged
    assert np.all(s32.alpha >= 0) and np.all(s32.alpha <= C)
    assert abs(y @ s32.alpha) <= 1e-9 * max(1.0, C * n)
    slack = 2.0 * (_entry_bound(X, kern, K) @ s32.alpha).max()
    assert _gap(K, y, s32.alpha, C) < tol + slack + 1e-12
    bound = gap_tol(tol + slack, C, np.ones(n))
    for other in (d64, f64):
        np.testing.assert_allclose(K @ (y * s32.alpha), K @ (y * other.alpha), atol=bound)
    cert = solve_dual(X, kern, y, C, options=replace(rows32, cross_dtype="float32",
                                                     double_certificate=True))
    assert cert.converged and _gap(K, y, cert.alpha, C) < tol


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.sampled_from([12, 100, 784]),
       gamma_factor=st.sampled_from([0.01, 1.0, 30.0]), shift=st.sampled_from([0.0, 50.0]))
def test_the_float32_cross_term_within_its_bound(seed, d, gamma_factor, shift):
    """The derivation: Gaussian entries from float32 inner products (any summation order:
    NumPy's sgemm here, the engine's sgemv) and double norms are within
    gamma (d + 2) u (|a|^2 + |b|^2) relative of the double ones, on centered points (an
    offset ``shift`` is centered away)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, d)) * rng.uniform(0.1, 3.0, d) + shift
    X[40:60] = X[:20]  # duplicates: distance 0 in double
    gamma = gamma_factor / d
    Xc = X - X.mean(axis=0)
    xn = np.einsum("ij,ij->i", Xc, Xc)
    D64 = np.maximum(xn[:, None] + xn[None] - 2.0 * Xc @ Xc.T, 0.0)
    X32 = Xc.astype(np.float32)
    D32 = np.maximum(xn[:, None] + xn[None] - 2.0 * (X32 @ X32.T).astype(np.float64), 0.0)
    rel = np.abs(np.expm1(-gamma * (D32 - D64)))  # |K32 - K64| / K64
    bound = gamma * (d + 2) * 2.0 ** -24 * (xn[:, None] + xn[None])
    assert np.all(rel <= 1.01 * bound + 1e-15)


def test_far_points_and_the_fallback():
    """A point whose norm alone passes the bound is flagged far (its distances to the other
    far points then summed in double); past a quarter of far points, no float32 inner
    products; the double expansion's own far flags are kept."""
    d, kern = 100, make_kernel("gaussian", gamma=0.5)
    limit = SMOOptions().float32_max_rel_error / (0.5 * 2.0 * (d + 2) * 2.0 ** -24)
    xn = np.full(40, 0.5 * limit)
    xn[[3, 7]] = 2.0 * limit
    far = single_cross_terms(kern, xn, None, d)
    assert far.dtype == np.uint8 and np.flatnonzero(far).tolist() == [3, 7]
    own = np.zeros(40, dtype=np.uint8)
    own[5] = 1
    assert np.flatnonzero(single_cross_terms(kern, xn, own, d)).tolist() == [3, 5, 7]
    assert single_cross_terms(kern, np.full(40, 0.5 * limit), None, d).size == 0
    xn[:11] = 2.0 * limit
    assert single_cross_terms(kern, xn, None, d) is None
    # the options' fields move both thresholds
    assert single_cross_terms(kern, xn, None, d, SMOOptions(float32_max_far_share=0.5)).any()
    loose = SMOOptions(float32_max_rel_error=4.0 * SMOOptions().float32_max_rel_error)
    assert single_cross_terms(kern, xn, None, d, loose).size == 0


def test_a_far_cluster_solves_as_in_double():
    """Points far from the others (their norms past the float32 bound, so flagged far): the
    float32 inner products still give the double SVM to the tolerance."""
    X, y = _data(5, 200, 120, False)
    X[:20] += 40.0  # a far cluster: gamma |x|^2 well past the float32 limit
    kern = make_kernel("gaussian", gamma=0.3 / 120)
    K = kernel_operator(X, kern).to_dense()
    xn = gaussian_expansion(kern, X)[1]
    assert single_cross_terms(kern, xn, None, 120).any()
    rows32 = SMOOptions(tol=1e-3, row_dtype="float32")
    s32 = solve_dual(X, kern, y, 1.0, options=replace(rows32, cross_dtype="float32"))
    d64 = solve_dual(X, kern, y, 1.0, options=replace(rows32, cross_dtype="float64"))
    slack = 2.0 * (_entry_bound(X, kern, K) @ s32.alpha).max()
    assert _gap(K, y, s32.alpha, 1.0) < 1e-3 + slack
    np.testing.assert_allclose(K @ (y * s32.alpha), K @ (y * d64.alpha),
                               atol=gap_tol(1e-3 + slack, 1.0, np.ones(200)))


def test_the_inner_products_switch():
    """"auto" follows the rows (float32 products with float32 rows, double with double
    ones); float32 products do change the steps on wide data; float64 products with float32
    rows are deterministic (the rows LIBSVM's way: computed in double, rounded); a bad
    value names the choices."""
    assert SMOOptions().single_cross and not SMOOptions(tol=1e-6).single_cross
    assert SMOOptions(row_dtype="float32", cross_dtype="float64").single_cross is False
    assert SMOOptions(row_dtype="float64", cross_dtype="float32").single_cross
    with pytest.raises(ValueError, match="cross_dtype"):
        SMOOptions(cross_dtype="half")
    with pytest.raises(ValueError, match="float32_max_rel_error"):
        SMOOptions(float32_max_rel_error=0.0)
    with pytest.raises(ValueError, match="float32_max_far_share"):
        SMOOptions(float32_max_far_share=1.5)
    X, y = _data(8, 300, 200, True)
    kern = make_kernel("gaussian", gamma=1.0 / 200)
    rows32 = SMOOptions(tol=1e-3, row_dtype="float32", shrinking=False)
    a = solve_dual(X, kern, y, 10.0, options=replace(rows32, cross_dtype="float64"))
    b = solve_dual(X, kern, y, 10.0, options=replace(rows32, cross_dtype="float64"))
    c = solve_dual(X, kern, y, 10.0, options=replace(rows32, cross_dtype="float32"))
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert not np.array_equal(a.alpha, c.alpha)


def test_the_certificate_covers_float32_inner_products_on_float64_rows():
    """float32 inner products with float64 rows (asked for): the double certificate runs
    for them too, and its gap is the double one."""
    X, y = _data(9, 160, 150, True)
    kern = make_kernel("gaussian", gamma=1.0 / 150)
    K = kernel_operator(X, kern).to_dense()
    opts = SMOOptions(tol=1e-3, row_dtype="float64", cross_dtype="float32",
                      double_certificate=True)
    res = solve_dual(X, kern, y, 5.0, options=opts)
    assert res.converged and _gap(K, y, res.alpha, 5.0) < 1e-3
    # the engine's own gap here differs from the double one by 4e-8
    assert abs(_gap(K, y, res.alpha, 5.0) - res.gap) <= 1e-12 * 5.0 * y.size


def test_a_row_split_between_threads_is_bitwise_one_threads():
    """float32 inner products: a row split between threads makes the same sgemv calls (one
    per chunk) as one thread, so the team changes no bit (one sgemv over the whole row and
    one per thread's part differed here by 0.2 in an alpha)."""
    X, y = _data(3, 3000, 150, True)
    kern = make_kernel("gaussian", gamma=1.0 / 150)
    one = solve_dual(X, kern, y, 1.0, options=SMOOptions(threads=1))
    two = solve_dual(X, kern, y, 1.0, options=SMOOptions(threads=2, parallel_work=0))
    assert SMOOptions().single_cross and one.stats["rows_computed"] > 100
    np.testing.assert_array_equal(one.alpha, two.alpha)
    assert one.rho == two.rho and one.n_iter == two.n_iter
