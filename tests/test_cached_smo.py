"""The single-fit engine (LIBSVM's SMO with a row cache and shrinking) holds SVC's SVM.

Two feasible points at KKT gap eps differ in the kernel part of their decision values by at
most 2 * 2 sqrt(eps sum_i C_i) (tests/svm_reference.py, ``gap_tol``), and each one's dual
objective is within eps sum_i C_i of the optimum; both are asserted against scikit-learn's
SVC (LIBSVM) at tol = 1e-3 and 1e-8. The gap is recomputed here, from the returned alpha
alone, over all points. Cache eviction, shrinking, a warm start and the route choice change
no answer beyond those bounds.
"""
import functools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.svm import SVC, SVR

import hsskern.estimators.hss_svc as hss_svc
from hsskern.estimators.hss_svc import HSSSVC
from hsskern.kernels import gaussian_expansion, kernel_operator, make_kernel
from hsskern.solvers.engines.cached_smo import (SMOOptions, bounded_options, solve_cached,
                                        engine_cache, solve_dual)
from hsskern.solvers.paths.hss_path import HSSBackend, resolve_engine
from hsskern.solvers.paths.plan import RouteOptions, engine_for, plan_fit
from hsskern.solvers.engines.exact import continuation_start
from hsskern.options import HSSSVCOptions, PathSettings
from svm_reference import gap_tol


def _problem(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0.3, 1.0, -1.0)
    y[:2] = [-1.0, 1.0]
    return X, y, rng


def _gap(K, y, alpha, ub):
    """m(a) - M(a) over all points of the classifier's dual, from alpha alone."""
    v = y - K @ (y * alpha)  # -y G
    up = ((y > 0) & (alpha < ub)) | ((y < 0) & (alpha > 0))
    low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < ub))
    return v[up].max() - v[low].min()


def _f32_slack(options, alpha):
    """What float32 rows may add to the gap in double: each cached entry is within 2^-24
    of the Gaussian's (|k| <= 1), so each gradient entry within 2^-24 sum(alpha), twice."""
    return 2.0 ** -23 * np.sum(alpha) if options.single_rows else 0.0


def _dual(K, y, alpha):
    c = y * alpha
    return 0.5 * c @ (K @ c) - alpha.sum()


def _svc_alpha(ref, n):
    a = np.zeros(n)
    a[ref.support_] = np.abs(ref.dual_coef_[0])
    return a


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(20, 150), d=st.integers(1, 5),
       C=st.sampled_from([0.1, 1.0, 100.0]), gamma=st.sampled_from([0.1, 0.5, 2.0]),
       weighted=st.booleans())
def test_solution_is_svcs(seed, n, d, C, gamma, weighted):
    X, y, rng = _problem(seed, n, d)
    kern = make_kernel("gaussian", gamma=gamma)
    K = kernel_operator(X, kern).to_dense()
    w = rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n)
    ub = C * w
    for tol in (1e-3, 1e-8):
        opts = SMOOptions(tol=tol)
        res = solve_dual(X, kern, y, ub, options=opts)
        ref = SVC(C=C, gamma=gamma, tol=tol).fit(X, y, sample_weight=w if weighted else None)
        assert res.converged and res.gap < tol
        assert np.all(res.alpha >= 0) and np.all(res.alpha <= ub)
        assert abs(y @ res.alpha) <= 1e-9 * max(1.0, ub.sum())
        assert _gap(K, y, res.alpha, ub) < tol * (1 + 1e-6) + 1e-12 + _f32_slack(opts, res.alpha)
        a_ref = _svc_alpha(ref, n)
        bound = gap_tol(tol, 1.0, ub)
        np.testing.assert_allclose(K @ (y * res.alpha), K @ (y * a_ref), atol=bound)
        assert abs(_dual(K, y, res.alpha) - _dual(K, y, a_ref)) <= 2 * tol * ub.sum()
        if tol == 1e-8:  # the bias too: at a free support vector both decision values sit
            # within tol of its margin, so the offsets differ by the kernel parts' bound at most
            # (1e-4 relative was seen exceeded at d = 1, the kernel nearly singular)
            assert abs(res.rho + ref.intercept_[0]) <= bound + 2 * tol


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(60, 200), C=st.sampled_from([1.0, 50.0]))
def test_cache_shrinking_and_threads_change_no_answer(seed, n, C):
    X, y, _ = _problem(seed, n, 3)
    kern = make_kernel("gaussian", gamma=0.5)
    K = kernel_operator(X, kern).to_dense()
    base = solve_dual(X, kern, y, C, options=SMOOptions(tol=1e-8))
    variants = {
        "two rows cached": SMOOptions(tol=1e-8, cache_bytes=0),  # evicts nearly every step
        "no shrinking": SMOOptions(tol=1e-8, shrinking=False),
        "shrink every 7 steps": SMOOptions(tol=1e-8, shrink_interval=7),
        "rows split on two threads": SMOOptions(tol=1e-8, threads=2, parallel_work=0),
    }
    bound = gap_tol(1e-8, C, np.ones(n))
    for name, opts in variants.items():
        res = solve_dual(X, kern, y, C, options=opts)
        assert res.gap < 1e-8, name
        assert _gap(K, y, res.alpha, C) < 1e-8 * (1 + 1e-6), name
        np.testing.assert_allclose(K @ (y * res.alpha), K @ (y * base.alpha), atol=bound,
                                   err_msg=name)
    small = solve_dual(X, kern, y, C, options=SMOOptions(tol=1e-8, cache_bytes=0))
    assert small.stats["rows_computed"] > base.stats["rows_computed"]  # it did evict


@pytest.mark.parametrize("d", [3, 20])  # direct sums; the expanded distances
def test_a_row_split_between_threads_is_bitwise_one_threads(d):
    """The team a row is split between (chosen by timing) changes no bit of the answer:
    every entry is computed in the same vector lane or scalar tail either way."""
    X, y, _ = _problem(7, 1700, d)
    kern = make_kernel("gaussian", gamma=1.0 / d)
    one = solve_dual(X, kern, y, 10.0, options=SMOOptions(threads=1))
    two = solve_dual(X, kern, y, 10.0, options=SMOOptions(threads=2, parallel_work=0))
    assert one.stats["rows_computed"] > 10
    np.testing.assert_array_equal(one.alpha, two.alpha)
    assert one.rho == two.rho and one.n_iter == two.n_iter


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 160))
def test_warm_start_along_C(seed, n):
    """The continuation's start (the previous C's solution scaled, with or without its
    decision values) reaches the cold start's solution."""
    X, y, _ = _problem(seed, n, 2)
    kern = make_kernel("gaussian", gamma=1.0)
    Kop = kernel_operator(X, kern)
    K = Kop.to_dense()
    prev = solve_cached(Kop, y, 1.0, tol=1e-8)
    _, a0, f0 = continuation_start(prev, 10.0, ray=False)
    cold = solve_cached(Kop, y, 10.0, tol=1e-8)
    for f in (f0, None):
        warm = solve_cached(Kop, y, 10.0, a0, f=f, tol=1e-8)
        assert warm.converged and _gap(K, y, warm.alpha, 10.0) < 1e-8 * (1 + 1e-6)
        np.testing.assert_allclose(warm.decision - warm.bias, K @ (y * warm.alpha),
                                   atol=1e-9 * n)
        np.testing.assert_allclose(warm.decision, cold.decision,
                                   atol=gap_tol(1e-8, 10.0, np.ones(n)))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 200), cache=st.sampled_from([0, 2 ** 20]),
       warm=st.booleans())
def test_a_session_along_C_keeps_the_rows_and_changes_no_answer(seed, n, cache, warm):
    """Solves sharing one engine (its cached rows kept, its variables in the order the last
    solve left them) reach each C's SVM as fresh solves do, from zero or a scaled start,
    and compute fewer kernel entries when the cache holds the rows."""
    X, y, rng = _problem(seed, n, 3)
    kern = make_kernel("gaussian", gamma=0.7)
    Kop = kernel_operator(X, kern)
    K = Kop.to_dense()
    w = rng.uniform(0.5, 2.0, size=n)
    opts = SMOOptions(tol=1e-8, cache_bytes=cache)
    session, fresh_entries, kept_entries, prev = {}, 0, 0, None
    for C in (0.3, 3.0, 30.0):
        a = f = None
        if warm and prev is not None:
            _, a, f = continuation_start(prev, 10.0, ray=False)
        kept = solve_cached(Kop, y, C, a, weights=w, f=f, tol=1e-8, options=opts,
                             session=session)
        fresh = solve_cached(Kop, y, C, a, weights=w, f=f, tol=1e-8, options=opts)
        prev = kept
        assert kept.converged and _gap(K, y, kept.alpha, C * w) < 1e-8 * (1 + 1e-6)
        np.testing.assert_allclose(kept.decision, fresh.decision,
                                   atol=gap_tol(1e-8, C, w))
        kept_entries += kept.kernel_entries["rows"]
        fresh_entries += fresh.kernel_entries["rows"]
    if cache:  # the whole kernel fits: the later solves compute no row the first had
        assert kept_entries < fresh_entries


def test_svr_form():
    """2n variables on n points (index), p = eps -+ z: the epsilon-SVR of scikit-learn."""
    rng = np.random.default_rng(3)
    n = 80
    X = rng.normal(size=(n, 2))
    z = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    eps, C, gamma = 0.1, 5.0, 0.5
    kern = make_kernel("gaussian", gamma=gamma)
    y = np.concatenate([np.ones(n), -np.ones(n)])
    p = np.concatenate([eps - z, eps + z])
    index = np.concatenate([np.arange(n), np.arange(n)])
    res = solve_dual(X, kern, y, C, p, index=index, options=SMOOptions(tol=1e-8))
    coef = res.alpha[:n] - res.alpha[n:]
    K = kernel_operator(X, kern).to_dense()
    ref = SVR(C=C, epsilon=eps, gamma=gamma, tol=1e-8).fit(X, z)
    np.testing.assert_allclose(K @ coef - res.rho, ref.predict(X), atol=1e-4)


@pytest.mark.parametrize("engine", ["cached", "block"])
def test_route_forced_each_way_is_svcs_svm(engine):
    """The same fit through each engine of the exact route (the path protocol, weighted,
    two C of a path): SVC's SVM at both."""
    X, y, rng = _problem(7, 300, 3)
    w = rng.uniform(0.5, 2.0, size=300)
    kern = make_kernel("gaussian", gamma=0.5)
    backend = HSSBackend(kern,
                         HSSSVCOptions(start="decomposition", solve_exact=True),
                         PathSettings(tol=1e-8, engine=engine))
    prob = backend.prepare(X, y[:, None])
    assert resolve_engine(prob, engine) == engine
    sols = backend.path(prob, y[:, None], [1.0, 10.0], weights=w)
    K = kernel_operator(X, kern).to_dense()
    for sol in sols:
        ref = SVC(C=sol.C, gamma=0.5, tol=1e-8).fit(X, y, sample_weight=w)
        coef = sol.dual_coef[:, 0]
        assert sol.converged[0] and _gap(K, y, np.abs(coef), sol.C * w) < 1e-8 * (1 + 1e-6)
        np.testing.assert_allclose(K @ coef, ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(1e-8, sol.C, w))
        rr = sol.info["exact"][0]
        assert (rr.kernel_entries.get("rows") is not None) == (engine == "cached")


def _routes_are_svcs_svm(X, y, cases):
    """For each (SMO options, route options, expected route): the one-fit preparation takes
    that route and its solution at C = 1 is SVC's SVM; returns the preparations."""
    kern = make_kernel("gaussian", gamma=0.5)
    K = kernel_operator(X, kern).to_dense()
    ref = SVC(C=1.0, gamma=0.5, tol=1e-8).fit(X, y)
    probs = []
    for opts, rules, route in cases:
        backend = HSSBackend(kern,
                             HSSSVCOptions(start="decomposition", solve_exact=True, smo=opts),
                             PathSettings(tol=1e-8),
                             route=rules)
        prob = backend.prepare(X, y[:, None])
        assert resolve_engine(prob, "auto") == route == prob.stats["plan"]["engine"]
        coef = backend.path(prob, y[:, None], [1.0])[0].dual_coef[:, 0]
        assert _gap(K, y, np.abs(coef), 1.0) < 1e-8 * (1 + 1e-6)
        np.testing.assert_allclose(K @ coef, ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(1e-8, 1.0, np.ones(y.size)))
        probs.append(prob)
    return probs


def test_the_measured_support_vector_share_decides_the_route():
    """Easy data (two far clusters: a few support vectors) that the assumed share (a quarter
    of the points) would send to the block route with this cache: the share measured on a
    subsample sends it to the cached engine; without the probe it stays on the block route.
    Both routes give SVC's SVM."""
    rng = np.random.default_rng(5)
    n = 3000
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = rng.normal(size=(n, 2)) + 3.0 * y[:, None]
    # a cache the assumed quarter's rows overcommit past the bound of directly summed rows
    rules = RouteOptions(probe_points=500)
    small = SMOOptions(cache_bytes=8.0 * n * n * 0.25 / (2 * rules.direct_overcommit))
    assert engine_for(n, 2, rules, small.cache_bytes, None, expanded=False)[0] == "block"
    probed, _ = _routes_are_svcs_svm(X, y, [(small, rules, "cached"),
                                            (small, replace(rules, probe_points=0), "block")])
    assert 0 < probed.stats["sv_share"] < rules.sv_share
    # the share measured on 500 points, corrected down for 3,000
    plan = probed.stats["plan"]
    assert plan["sv_share"] < plan["measured_share"] == probed.stats["sv_share"]


def test_a_measured_share_above_the_assumed_one_sends_the_fit_to_the_block_route():
    """Hard data (overlapping classes: most points support vectors) that the assumed share
    would keep on the cached engine with this cache: the share measured on a subsample
    sends it to the block route; without the probe it stays cached. Both give SVC's SVM."""
    rng = np.random.default_rng(6)
    n = 3000
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = rng.normal(size=(n, 2)) + 0.1 * y[:, None]
    # the rule keeps the cached engine while 8 n^2 share <= overcommit x cache: share 0.3
    rules = RouteOptions(probe_points=500)
    small = SMOOptions(cache_bytes=8.0 * n * n * 0.3 / rules.direct_overcommit)
    assert engine_for(n, 2, rules, small.cache_bytes, None, expanded=False)[0] == "cached"
    probed, _ = _routes_are_svcs_svm(X, y, [(small, rules, "block"),
                                            (small, replace(rules, probe_points=0), "cached")])
    assert probed.stats["plan"]["sv_share"] > 0.3


def test_estimator_reaches_the_engine_with_class_weight():
    X, y, _ = _problem(11, 400, 4)
    m = HSSSVC(gamma="scale", class_weight={-1.0: 2.0, 1.0: 0.5}, tol=1e-8).fit(X, y)
    ref = SVC(gamma="scale", class_weight={-1.0: 2.0, 1.0: 0.5}, tol=1e-8).fit(X, y)
    assert m.admm_["exact"][0].kernel_entries.get("rows") is not None  # cached engine
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), atol=1e-4)
    assert np.array_equal(m.predict(X), ref.predict(X))


def test_rule_and_memory_bound():
    opts, rules = SMOOptions(), RouteOptions()
    assert engine_for(2000, 10, rules, engine_cache(2000, 10, opts, None), None)[0] == "cached"
    # a budget that holds not even the points' copy and two rows: the block route
    assert engine_cache(20000, 10, opts, 8 * 20000 * 10) is None
    assert plan_fit(20000, 10, route=rules, cache_bytes=None, max_chunk=4000,
                    measured_share=0.0).engine == "block"
    capped = bounded_options(opts, 10000, 10, 8 * 10000 * 10 * 3 + 50 * 2 ** 20)
    assert capped.cache_bytes < opts.cache_bytes
    assert bounded_options(opts, 1000, 10, None).cache_bytes == opts.cache_bytes


def test_points_past_max_points_bytes_take_the_block_route_with_the_same_svm():
    """Every cached row streams all the points: past ``max_points_bytes`` the rule takes the
    block decomposition, before any probe of the support vectors (it could not change the
    answer), and the SVM is SVC's on either route."""
    n, d = 600, 12
    X, y, _ = _problem(21, n, d)
    opts, cache = RouteOptions(), SMOOptions().cache_bytes
    assert engine_for(n, d, replace(opts, max_points_bytes=8 * n * d), cache, None)[0] == "cached"
    tight = replace(opts, max_points_bytes=8 * n * d - 1)
    assert engine_for(n, d, tight, cache, None)[0] == "block"
    assert engine_for(n, d, tight, cache, 0.0)[0] == "block"
    kern = make_kernel("gaussian", gamma=0.2)
    K = kernel_operator(X, kern).to_dense()
    ref = SVC(C=2.0, gamma=0.2, tol=1e-8).fit(X, y)
    for o, route in ((opts, "cached"), (tight, "block")):
        backend = HSSBackend(kern,
                             HSSSVCOptions(start="decomposition", solve_exact=True),
                             PathSettings(tol=1e-8),
                             route=replace(o, probe_points=200))
        prob = backend.prepare(X, y[:, None])
        assert resolve_engine(prob, "auto") == route
        if route == "block":
            assert prob.stats["sv_share"] is None  # no probe
        coef = backend.path(prob, y[:, None], [2.0])[0].dual_coef[:, 0]
        assert _gap(K, y, np.abs(coef), 2.0) < 1e-8 * (1 + 1e-6)
        np.testing.assert_allclose(K @ coef, ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(1e-8, 2.0, np.ones(n)))


def test_expanded_distances_change_no_answer():
    """Rows from |a|^2 + |b|^2 - 2 a.b (many features) hold the same SVM as direct sums."""
    X, y, _ = _problem(5, 150, 16)
    X[:, 3] += 50.0  # far from the origin: the centering keeps the expansion accurate
    kern = make_kernel("gaussian", gamma=0.05)
    K = kernel_operator(X, kern).to_dense()
    direct = solve_dual(X, kern, y, 2.0, options=SMOOptions(tol=1e-8, expand_min_features=99))
    expanded = solve_dual(X, kern, y, 2.0, options=SMOOptions(tol=1e-8))
    assert _gap(K, y, expanded.alpha, 2.0) < 1e-8 * (1 + 1e-6)
    np.testing.assert_allclose(K @ (y * expanded.alpha), K @ (y * direct.alpha),
                               atol=gap_tol(1e-8, 2.0, np.ones(150)))


def test_far_points_mutual_distances_are_summed_directly():
    """A few points far from the rest (one rare feature, z-scored): the rows keep the
    expansion, the far points' mutual distances summed directly (the kernel operator's rule),
    and the SVM is the direct sums' one. Close to each other and of both labels, the far
    points are support vectors whose mutual entries the expansion would get wrong by ~1e-4."""
    X, y, rng = _problem(6, 150, 16)
    X[:4] = 1e6 * np.eye(16)[3] + 0.5 * rng.normal(size=(4, 16))
    y[:4] = [1.0, -1.0, 1.0, -1.0]
    kern = make_kernel("gaussian", gamma=0.05)
    assert np.flatnonzero(gaussian_expansion(kern, X)[2]).tolist() == [0, 1, 2, 3]
    K = kernel_operator(X, kern).to_dense()
    direct = solve_dual(X, kern, y, 2.0, options=SMOOptions(tol=1e-8, expand_min_features=99))
    expanded = solve_dual(X, kern, y, 2.0, options=SMOOptions(tol=1e-8))
    assert np.all(expanded.alpha[:4] > 0)
    assert _gap(K, y, expanded.alpha, 2.0) < 1e-8 * (1 + 1e-6)
    np.testing.assert_allclose(K @ (y * expanded.alpha), K @ (y * direct.alpha),
                               atol=gap_tol(1e-8, 2.0, np.ones(150)))


@pytest.mark.parametrize("nu", [0.2, 0.5])
def test_nu_variant_is_nusvcs(nu):
    """Solver_NU from LIBSVM's nu-SVC start (each label's alphas summing to nu l / 2, p = 0,
    bounds 1) holds scikit-learn's NuSVC: its dual coefficients are y alpha / r with
    sum alpha = nu l fixed, which gives its r and alpha; the kernel parts and objectives are
    compared at the gap's bounds (before the division by r, which can be ~1e-4)."""
    from sklearn.svm import NuSVC
    X, y, _ = _problem(9, 120, 2)
    kern = make_kernel("gaussian", gamma=0.7)
    alpha = np.zeros(y.size)
    for label in (1.0, -1.0):
        left = nu * y.size / 2
        for i in np.flatnonzero(y == label):
            alpha[i] = min(1.0, left)
            left -= alpha[i]
    tol = 1e-8
    res = solve_dual(X, kern, y, 1.0, np.zeros(y.size), alpha, nu=True,
                     options=SMOOptions(tol=tol))
    assert res.converged
    np.testing.assert_allclose([y @ res.alpha, res.alpha.sum()], [y @ alpha, alpha.sum()],
                               atol=1e-9)
    K = kernel_operator(X, kern).to_dense()
    ref = NuSVC(nu=nu, gamma=0.7, tol=tol).fit(X, y)
    c = np.zeros(y.size)
    c[ref.support_] = ref.dual_coef_[0]
    r_ref = alpha.sum() / np.abs(c).sum()
    a_ref = np.abs(c) * r_ref
    np.testing.assert_allclose(res.r, r_ref, rtol=1e-3)
    np.testing.assert_allclose(K @ (y * res.alpha), K @ (y * a_ref),
                               atol=gap_tol(tol, 1.0, np.ones(y.size)))
    obj = [0.5 * (y * a) @ K @ (y * a) for a in (res.alpha, a_ref)]
    assert abs(obj[0] - obj[1]) <= 2 * tol * y.size
    dec = (K @ (y * res.alpha) - res.rho) / res.r  # the margin's free points at |f| = 1
    free = (res.alpha > 1e-9) & (res.alpha < 1 - 1e-9)
    np.testing.assert_allclose(np.abs(dec[free]), 1.0, atol=tol / res.r)


@pytest.mark.parametrize("name, kw", [("poly", dict(degree=3, gamma=0.5, coef0=1.0)),
                                      ("linear", {}), ("sigmoid", dict(gamma=0.1, coef0=0.0))])
def test_dot_product_kernels_are_svcs(name, kw):
    X, y, _ = _problem(13, 120, 3)
    kern = make_kernel(name, **kw)
    K = kernel_operator(X, kern).to_dense()
    res = solve_dual(X, kern, y, 1.0, options=SMOOptions(tol=1e-8))
    ref = SVC(kernel=name, C=1.0, tol=1e-8, **kw).fit(X, y)
    assert res.converged
    if name != "sigmoid":  # indefinite: a KKT point, not a unique one
        np.testing.assert_allclose(K @ (y * res.alpha),
                                   ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(1e-8, 1.0, np.ones(120)))
    assert _gap(K, y, res.alpha, 1.0) < 1e-8 * (1 + 1e-6)


def test_callable_kernel_takes_the_block_route():
    X, y, _ = _problem(2, 80, 2)
    kern = make_kernel(lambda A, B: A @ B.T)
    with pytest.raises(ValueError, match="block"):
        solve_dual(X, kern, y, 1.0)
    backend = HSSBackend(kern, HSSSVCOptions(start="decomposition", solve_exact=True))
    prob = backend.prepare(X, y[:, None])
    assert resolve_engine(prob, "auto") == "block"


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 120), svr=st.booleans(),
       share=st.sampled_from([0.0, 0.05, 0.5, 1.0]))
def test_start_gradient_equals_the_dense_product(seed, n, svr, share):
    """A warm start's G = Q alpha + p and G_bar (the bounded variables' share) from the
    product over the points with a nonzero coefficient equal the dense ones, for the
    classifier's form and the SVR's 2 l variables on l points (``index``)."""
    from hsskern.solvers.engines.cached_smo import _start_gradient
    X, y, rng = _problem(seed, n, 3)
    kern = make_kernel("gaussian", gamma=0.5)
    K = kernel_operator(X, kern).to_dense()
    index = np.concatenate([np.arange(n), np.arange(n)]) if svr else None
    l = 2 * n if svr else n
    yv = np.concatenate([np.ones(n), -np.ones(n)]) if svr else y
    upper = np.full(l, 2.0)
    alpha = np.where(rng.random(l) < share, rng.choice([0.5, 2.0], l), 0.0)
    p = rng.normal(size=l)
    G, G_bar = _start_gradient(X, kern, yv, p, upper, alpha, index, None)
    Kl = K if index is None else K[np.ix_(index, index)]
    np.testing.assert_allclose(G, yv * (Kl @ (yv * alpha)) + p, atol=1e-12 * (1 + l))
    np.testing.assert_allclose(G_bar, yv * (Kl @ np.where(alpha >= upper, yv * upper, 0.0)),
                               atol=1e-12 * (1 + l))


def test_past_small_n_a_measured_share_takes_the_decomposition_with_the_same_svm(monkeypatch):
    """Past small_n points one fit (``probe_C``) measures its support vectors' share and
    starts from zero while n x n_SV is within ``exact_limit``; a path (no ``probe_C``), or
    a share over the limit, keeps the ADMM route. Both routes hold SVC's SVM."""
    n, d, C = 900, 3, 2.0
    X, y, _ = _problem(23, n, d)
    kern = make_kernel("gaussian", gamma=0.3)
    base = HSSBackend(kern,
                      HSSSVCOptions(start="auto", solve_exact=True),
                      PathSettings(tol=1e-8),
                      route=RouteOptions(probe_points=200, small_n=500))
    assert base.resolve_start(n, d) == "admm"
    assert base.resolve_start(n, d, sv_share=base.exact_limit / n ** 2) == "decomposition"
    assert base.resolve_start(n, d, sv_share=1.01 * base.exact_limit / n ** 2) == "admm"
    K = kernel_operator(X, kern).to_dense()
    ref = SVC(C=C, gamma=0.3, tol=1e-8).fit(X, y)
    routes = {}
    for probe_C, limit in ((C, base.exact_limit), (None, base.exact_limit), (C, 1.0)):
        backend = replace(base, settings=base.settings.replace(probe_C=probe_C,
                                                               exact_limit=limit))
        prob = backend.prepare(X, y[:, None])
        routes[probe_C, limit] = prob.start
        if prob.start == "decomposition":  # the share measured, passed on to the engine rule
            assert 0 < prob.stats["sv_share"] < 1
        coef = backend.path(prob, y[:, None], [C])[0].dual_coef[:, 0]
        assert _gap(K, y, np.abs(coef), C) < 1e-8 * (1 + 1e-6)
        np.testing.assert_allclose(K @ coef, ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(1e-8, C, np.ones(n)))
    assert routes == {(C, base.exact_limit): "decomposition", (None, base.exact_limit): "admm",
                      (C, 1.0): "admm"}


def test_one_fit_probes_the_start_and_a_path_does_not(monkeypatch):
    """HSSSVC.fit passes its C to the start's probe, fit_path none: past small_n (patched
    down) the fit starts from zero with the share it measured, the path takes the ADMM."""
    X, y, _ = _problem(24, 2600, 3)
    monkeypatch.setattr(hss_svc, "HSSBackend", functools.partial(
        HSSBackend, route=RouteOptions(small_n=1000)))
    est = HSSSVC(C=1.0, gamma=0.3).fit(X, y)
    assert est.hss_["start"] == "decomposition" and 0 < est.hss_["sv_share"] < 1
    path = HSSSVC(gamma=0.3).fit_path(X, y, [1.0])[0]
    assert path.hss_["start"] != "decomposition"
    ref = SVC(C=1.0, gamma=0.3).fit(X, y)
    for m in (est, path):
        assert np.mean(m.predict(X) == ref.predict(X)) >= 0.999
