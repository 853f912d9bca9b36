"""Memory of a one-vs-one fit: the pairs prepared one at a time per worker and dropped once
solved (``PairwiseBackend(release=True)``, a fit's), and fits under small memory limits."""
import gc
import threading
import weakref

import numpy as np
import pytest

from hsskern import NuSVC, SVC
from hsskern.estimators.hss_svc import HSSSVC
from hsskern.solvers.paths.pairwise import PairwiseBackend


def _blobs(seed, k, per_class, d=4):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d)) * 2.0
    y = np.repeat(np.arange(k), per_class)
    X = centers[y] + 1.5 * rng.normal(size=(y.size, d))
    perm = rng.permutation(y.size)
    return X[perm], y[perm]


def _one_vs_rest(y, k):
    Y = -np.ones((y.size, k))
    Y[np.arange(y.size), y] = 1.0
    return Y


def test_released_pairs_are_the_held_pairs_bit_for_bit():
    """Preparing each pair on its worker when it is solved (and dropping it) changes no bit
    of the answer, nor the pairs' statistics; a second path call prepares them again."""
    X, y = _blobs(2, 4, 30)
    y[y == 3] = 2  # a class with no point: its pairs are untrained either way
    Y = _one_vs_rest(y, 4)
    est = HSSSVC(gamma=0.5, tol=1e-6)
    inner = est._make_backend(X, [1.0], purpose="fit").inner
    out = []
    for release in (False, True):
        b = PairwiseBackend(inner, n_jobs=2, release=release)
        prepared = b.prepare(X, Y)
        assert prepared.deferred == release
        sols = b.path(prepared, Y, [0.5, 2.0])
        out.append((prepared, sols, b.model(prepared, sols).decision(X)))
    (held, s_held, d_held), (rel, s_rel, d_rel) = out
    assert all(pr is None for pr in rel.problems)  # nothing kept past the path
    for a, b in zip(s_held, s_rel):
        np.testing.assert_array_equal(a.dual_coef, b.dual_coef)
        np.testing.assert_array_equal(a.intercept, b.intercept)
    np.testing.assert_array_equal(d_held, d_rel)
    assert [s is None for s in rel.stats["pairs"]] == [s is None for s in held.stats["pairs"]]
    for a, b in zip(held.stats["pairs"], rel.stats["pairs"]):
        assert a is None or a["start"] == b["start"]
    assert set(rel.timings) == set(held.timings)
    again = PairwiseBackend(inner, n_jobs=1, release=True)
    np.testing.assert_array_equal(again.path(rel, Y, [0.5, 2.0])[1].dual_coef,
                                  s_held[1].dual_coef)


class _Counting:
    """A backend that counts its live preparations (weak references), the most at once."""

    def __init__(self, inner):
        self.inner, self.kernel = inner, inner.kernel
        self.alive = self.most = 0
        self.lock = threading.Lock()

    def _gone(self):
        with self.lock:
            self.alive -= 1

    def prepare(self, X, Y):
        prepared = self.inner.prepare(X, Y)
        with self.lock:
            self.alive += 1
            self.most = max(self.most, self.alive)
        weakref.finalize(prepared, self._gone)
        return prepared

    def path(self, prepared, Y, Cs, weights=None):
        gc.collect()  # a dropped preparation is counted gone before the next is made
        return self.inner.path(prepared, Y, Cs, weights)


def test_released_pairs_are_held_one_per_worker():
    X, y = _blobs(3, 6, 25)
    Y = _one_vs_rest(y, 6)
    inner = HSSSVC(gamma=0.5)._make_backend(X, [1.0], purpose="fit").inner
    for release, most in ((True, 2), (False, 15)):
        counting = _Counting(inner)
        b = PairwiseBackend(counting, n_jobs=2, release=release)
        b.path(b.prepare(X, Y), Y, [1.0])
        assert counting.most <= most and (release or counting.most == most)


@pytest.mark.parametrize("cls", [HSSSVC, SVC, NuSVC])
def test_every_one_vs_one_fit_releases_its_pairs(cls):
    # the drop-in SVC held all 45 of fashion_mnist's pairs (10.8 GB) where HSSSVC released
    X, y = _blobs(5, 3, 40)
    est = cls(gamma=0.5).fit(X, y)  # NuSVC's backend reads the classes' mass of a fit
    assert est._make_backend(X, [1.0], purpose="fit").release
    assert not est._make_backend(X, [1.0], purpose="path").release


def test_a_fit_releases_its_pairs():
    X, y = _blobs(5, 3, 40)
    est = HSSSVC(gamma=0.5)
    est.fit(X, y)
    pairs = est.hss_["pairs"]
    assert len(pairs) == 3 and all(p is not None and "start" in p for p in pairs)
    assert est.fit_time_ and all(v >= 0 for v in est.fit_time_.values())


def test_a_fit_under_a_small_memory_budget_is_the_default_fit():
    """A memory budget far below the default (a few rows of cache per pair) gives the
    default fit's model to the solver's tolerance."""
    X, y = _blobs(8, 3, 120, d=6)
    tol = 1e-6
    base = HSSSVC(gamma=0.3, tol=tol).fit(X, y)
    small = HSSSVC(gamma=0.3, tol=tol, memory_budget=2e6).fit(X, y)
    Xt = np.random.default_rng(0).normal(size=(200, 6)) * 2.0
    bound = 8 * np.sqrt(tol * 1.0 * X.shape[0])  # svm_reference.gap_tol at C = 1
    np.testing.assert_allclose(small.decision_function(Xt), base.decision_function(Xt),
                               atol=bound)
    assert np.mean(small.predict(Xt) == base.predict(Xt)) >= 0.99
