"""One-vs-one pairs on the cached SMO: small pairs solved together straight on the engine
(``PairwiseBackend(small_pairs=True)``) give the wrapped backend's solutions bit for bit."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsskern import SVC
from hsskern.solvers import pairwise
from hsskern.solvers.pairwise import PairwiseBackend


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
    blocked = replace(inner, hss=replace(inner.hss, engine="block"))
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
