"""One-vs-one pairs on the cached SMO: small pairs solved together straight on the engine
(``PairwiseBackend(small_pairs=True)``) give the wrapped backend's solutions bit for bit."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits

from hsskern import SVC
from hsskern.solvers.paths import pairwise
from hsskern.solvers.paths.pairwise import PairwiseBackend
from hsskern.solvers.paths.plan import RouteOptions, pair_workers, shares_pair_blocks
from hsskern.utils._threads import usable_cores


def _blobs(seed, k, per_class, d=5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d)) * 2.0
    y = np.repeat(np.arange(k), per_class + rng.integers(0, 8, size=k))
    X = centers[y] + 1.5 * rng.normal(size=(y.size, d))
    perm = rng.permutation(y.size)
    return X[perm], y[perm]


def _one_vs_rest(y, k):
    Y = -np.ones((y.size, k))
    Y[np.arange(y.size), y] = 1.0
    return Y


def _inner(X, **params):
    return SVC(**params)._make_backend(X, [1.0], purpose="fit").inner


def _solve(backend, X, Y, Cs, weights=None):
    prepared = backend.prepare(X, Y)
    return prepared, backend.path(prepared, Y, Cs, weights)


def _assert_same(a, b):
    for sa, sb in zip(a, b):
        np.testing.assert_array_equal(sa.dual_coef, sb.dual_coef)
        np.testing.assert_array_equal(sa.intercept, sb.intercept)
        np.testing.assert_array_equal(sa.n_iter, sb.n_iter)
        np.testing.assert_array_equal(sa.converged, sb.converged)
        np.testing.assert_array_equal(sa.gap, sb.gap)
        assert sa.info["route"] == sb.info["route"]
        assert set(sa.info) == set(sb.info)
        assert set(sa.timings) == set(sb.timings)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), k=st.integers(3, 5), per=st.integers(8, 40),
       C=st.sampled_from([0.1, 1.0, 30.0]), weighted=st.booleans(), n_jobs=st.sampled_from([1, 2]))
def test_small_pairs_are_the_wrapped_pairs_bit_for_bit(seed, k, per, C, weighted, n_jobs):
    X, y = _blobs(seed, k, per)
    Y = _one_vs_rest(y, k)
    w = np.random.default_rng(seed).uniform(0.2, 3.0, y.size) if weighted else None
    inner = _inner(X, gamma=0.3)
    fast = PairwiseBackend(inner, n_jobs=n_jobs)
    prepared, got = _solve(fast, X, Y, [C], w)
    assert prepared.cached is not None  # the fast path was taken
    held, want = _solve(PairwiseBackend(inner, n_jobs=n_jobs, small_pairs=False), X, Y, [C], w)
    assert held.cached is None
    _assert_same(got, want)
    assert got[0].info["route"] == ("cached SMO",) * (k * (k - 1) // 2)
    for a, b in zip(prepared.stats["pairs"], held.stats["pairs"]):
        assert a["n"] == b["n"] and a["start"] == b["start"]
        assert a["plan"]["engine"] == b["plan"]["engine"] == "cached"


def test_a_path_or_a_missing_class_on_small_pairs():
    """Several C (the pairs prepared on their workers, as release does) and a class with no
    point (its pairs untrained, a constant decision) give the held pairs' answers."""
    X, y = _blobs(3, 4, 25)
    y[y == 3] = 2
    Y = _one_vs_rest(y, 4)
    inner = _inner(X, gamma=0.5)
    for Cs in ([1.0], [0.5, 2.0]):
        prepared, got = _solve(PairwiseBackend(inner, n_jobs=2), X, Y, Cs)
        assert prepared.cached is not None and not prepared.deferred
        _, want = _solve(PairwiseBackend(inner, n_jobs=2, small_pairs=False), X, Y, Cs)
        _assert_same(got, want)
        assert [s is None for s in prepared.stats["pairs"]] == [False, False, True, False,
                                                                True, True]


def test_no_fast_path_where_the_plan_is_not_the_cached_engine():
    X, y = _blobs(4, 3, 30)
    Y = _one_vs_rest(y, 3)
    inner = _inner(X)
    blocked = replace(inner, hss=replace(inner.hss,
                                         settings=inner.hss.settings.replace(engine="block")))
    prepared = PairwiseBackend(blocked).prepare(X, Y)
    assert prepared.cached is None and prepared.problems[0] is not None


def test_svc_fit_takes_the_fast_path_with_the_same_model(monkeypatch):
    """A default SVC on small multiclass data solves its pairs straight on the engine (no
    per-pair preparation past the two it plans from) and fits the model it fits without."""
    X, y = _blobs(5, 5, 40)
    calls = []
    real = pairwise.solve_classifier
    monkeypatch.setattr(pairwise, "solve_classifier",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    fast = SVC().fit(X, y)
    assert len(calls) == 10 and fast.route_ == "cached SMO"
    monkeypatch.setattr(PairwiseBackend, "_cached_pairs", lambda *a: None)
    slow = SVC().fit(X, y)
    assert len(calls) == 10
    np.testing.assert_array_equal(fast.dual_coef_, slow.dual_coef_)
    np.testing.assert_array_equal(fast.intercept_, slow.intercept_)
    np.testing.assert_array_equal(fast.support_, slow.support_)
    assert set(fast.fit_time_) == set(slow.fit_time_)


def test_an_unconverged_pair_warns_on_the_fast_path():
    X, y = _blobs(6, 3, 40)
    with pytest.warns(Warning, match="max_iter=3"):
        m = SVC(max_iter=3).fit(X, y)
    assert m.fit_status_ == 1


# --- the classes' kernel blocks shared by the pairs (ClassBlocks) ---------------------------

def _sharing(inner, min_features=1):
    """The wrapped backend with the plan's feature threshold for shared blocks moved."""
    route = RouteOptions(pair_blocks_min_features=min_features)
    return replace(inner, hss=replace(inner.hss, route=route))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), k=st.integers(3, 5), per=st.integers(8, 40),
       C=st.sampled_from([0.3, 1.0, 30.0]), weighted=st.booleans(), n_jobs=st.sampled_from([1, 2]))
def test_shared_blocks_give_the_pairs_solved_alone_to_tolerance(seed, k, per, C, weighted,
                                                                  n_jobs):
    """Pairs on their classes' shared blocks (entries by BLAS products, not the engine's
    rows: equal to rounding) reach the solutions of the pairs solved alone to the solver's
    tolerance, not bit for bit: at tol = 1e-10 the dual coefficients agree to 1e-6 C."""
    X, y = _blobs(seed, k, per)
    Y = _one_vs_rest(y, k)
    w = np.random.default_rng(seed).uniform(0.2, 3.0, y.size) if weighted else None
    inner = _inner(X, gamma=0.3, tol=1e-10)
    shared = PairwiseBackend(_sharing(inner), n_jobs=n_jobs)
    prepared, got = _solve(shared, X, Y, [C], w)
    assert prepared.cached.share_blocks
    alone, want = _solve(PairwiseBackend(inner, n_jobs=n_jobs), X, Y, [C], w)
    assert not alone.cached.share_blocks  # 5 features: below the default threshold
    np.testing.assert_allclose(got[0].dual_coef, want[0].dual_coef, rtol=0, atol=1e-6 * C)
    np.testing.assert_allclose(got[0].intercept, want[0].intercept, rtol=0, atol=1e-6)
    assert got[0].converged.all() and (got[0].gap <= 1e-10).all()
    # no row was computed by the engine: every row came from the blocks
    assert all(rr.kernel_entries["rows"] == 0 for rr in got[0].info["exact"])


def test_shared_blocks_at_svcs_tolerance_predict_as_the_pairs_alone():
    """At SVC's tol (float32 rows, LIBSVM's Qfloat) the shared blocks' model predicts as the
    pairs solved alone, its decision values within the tolerance's reach."""
    X, y = _blobs(11, 6, 60, d=8)
    Y = _one_vs_rest(y, 6)
    inner = _inner(X)
    prepared, got = _solve(PairwiseBackend(_sharing(inner), n_jobs=2), X, Y, [1.0])
    assert prepared.cached.share_blocks
    _, want = _solve(PairwiseBackend(inner, n_jobs=2), X, Y, [1.0])
    Dg = PairwiseBackend(inner).model(prepared, got).decision(X)[0]
    Dw = PairwiseBackend(inner).model(prepared, want).decision(X)[0]
    np.testing.assert_allclose(Dg, Dw, rtol=0, atol=2e-2)
    assert np.mean(pairwise.vote(Dg, 6) == pairwise.vote(Dw, 6)) >= 0.995


def test_a_cache_too_small_for_the_blocks_evicts_rows_and_gets_the_same_model():
    """A row cache well below the pairs' matrices: no shared blocks, the engine evicts rows
    and computes them again, and the model is the one of the default cache (to tol)."""
    X, y = _blobs(12, 4, 150, d=6)
    Y = _one_vs_rest(y, 4)
    inner = _inner(X, tol=1e-8)
    prepared, want = _solve(PairwiseBackend(_sharing(inner), n_jobs=2), X, Y, [1.0])
    assert prepared.cached.share_blocks
    small = _inner(X, tol=1e-8, cache_size=0.02)  # 20 KB: a few rows of ~300 entries
    prepared, got = _solve(PairwiseBackend(_sharing(small), n_jobs=2), X, Y, [1.0])
    assert not prepared.cached.share_blocks
    exact_results = got[0].info["exact"]
    sizes = [prepared.rows[p].size for p in prepared.live()]
    # rows computed again after their eviction: more entries than every row once
    assert any(rr.kernel_entries["rows"] > l * l for rr, l in zip(exact_results, sizes))
    np.testing.assert_allclose(got[0].dual_coef, want[0].dual_coef, rtol=0, atol=1e-5)
    np.testing.assert_allclose(got[0].intercept, want[0].intercept, rtol=0, atol=1e-5)


def test_a_fit_under_small_memory_limits_gets_the_default_model():
    """cache_size and memory_budget far below their defaults (200 MB, 80 % of the free
    memory): the same model as the default fit, to the solver's tolerance."""
    X, y = _blobs(13, 5, 120, d=6)
    ref = SVC(tol=1e-8).fit(X, y)
    low = SVC(tol=1e-8, cache_size=0.05, memory_budget=2 ** 22).fit(X, y)
    np.testing.assert_array_equal(low.support_, ref.support_)
    np.testing.assert_allclose(low.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-5)
    np.testing.assert_allclose(low.intercept_, ref.intercept_, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(low.predict(X), ref.predict(X))


def test_the_plan_shares_blocks_only_where_it_pays_and_fits():
    route = RouteOptions()
    wide = route.pair_blocks_min_features
    assert shares_pair_blocks(wide, "gaussian", 1e6, 2e8, route)
    assert not shares_pair_blocks(784, "gaussian", 1e6, 2e8, route)  # measured: no gain
    assert not shares_pair_blocks(wide, "laplacian", 1e6, 2e8, route)  # no BLAS product
    assert not shares_pair_blocks(wide, "gaussian", 3e8, 2e8, route)  # past the cache
    assert not shares_pair_blocks(wide, "gaussian", 1e6, None, route)
    with pytest.raises(ValueError, match="pair_blocks_min_features"):
        RouteOptions(pair_blocks_min_features=0)


@pytest.mark.parametrize("sizes, d, expect", [
    ([360] * 45, 64, 1),      # digits' pairs: 3.7e8, one worker
    ([1478] * 15, 36, 2),     # satimage's: 1.2e9, every core
    ([1458] * 45, 256, 2),    # usps': 2.4e10
    ([100, 100], 10_000, 1),  # few small pairs, wide: 2e8
])
def test_the_plan_runs_small_pairs_on_one_worker(sizes, d, expect):
    assert pair_workers(sizes, d, 2, RouteOptions()) == expect
    assert pair_workers(sizes, d, 2, RouteOptions(parallel_pairs_min_work=0)) == 2


def test_small_pairs_take_the_plans_workers(monkeypatch):
    X, y = load_digits(return_X_y=True)
    seen = []
    real = pairwise.thread_map
    monkeypatch.setattr(pairwise, "thread_map",
                        lambda fn, tasks, workers, **kw: seen.append(workers) or
                        real(fn, tasks, workers, **kw))
    ours = SVC().fit(X, y)
    assert seen[-1] == 1  # digits' pairs: below parallel_pairs_min_work
    monkeypatch.setattr(pairwise, "pair_workers", lambda sizes, d, cores, route: cores)
    ref = SVC().fit(X, y)
    assert seen[-1] == usable_cores()
    np.testing.assert_array_equal(ours.dual_coef_, ref.dual_coef_)  # the same pairs' SMO
