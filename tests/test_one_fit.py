"""One fit past the reach of the HSS route's exact step: the exact SVM grown in stages
(hsskern.solvers.paths.one_fit).

The real boundary is 10^5 points and 10^10 kernel entries; the tests move it down (small_n,
the backend's exact_limit, the probe's and the subsample's sizes) to reach the same route on
a few thousand points.
"""
import functools
import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from sklearn.datasets import make_classification
from sklearn.svm import SVC

import hsskern.estimators.hss_svc as hss_svc
from hsskern import HSSSVC, HSSSVCOptions, kernel_operator
from hsskern.kernels import make_kernel
from hsskern.solvers.engines.admm import kkt_violation
from hsskern.solvers.paths.exact_path import ExactBackend
from hsskern.solvers.paths.hss_path import HSSBackend
from hsskern.solvers.paths.one_fit import OneFitBackend
from hsskern.solvers.paths.plan import RouteOptions
from hsskern.options import PathSettings


@pytest.fixture
def small_reach(monkeypatch):
    """The boundaries scaled to 500 points: past them, and past 10^4 entries, one fit probes
    300 points and grows its stages from 200."""
    def backend(kernel, options, settings, **kw):
        return HSSBackend(kernel, options, settings.replace(exact_limit=1e4),
                          route=RouteOptions(probe_points=300, small_n=500), **kw)

    def staged(kernel, options, settings, **kw):
        return ExactBackend(kernel, options.replace(subsample=200), settings, **kw)

    monkeypatch.setattr(hss_svc, "HSSBackend", backend)
    monkeypatch.setattr(hss_svc, "ExactBackend", staged)


def _data(n, seed, classes=2):
    return make_classification(n, 4, n_informative=3, n_redundant=0, n_classes=classes,
                               n_clusters_per_class=1, random_state=seed, flip_y=0.1)


def _starts(est):
    s = est.hss_
    return {p["start"] for p in s["pairs"] if p is not None} if "pairs" in s else {s["start"]}


# the fixture only patches constants, the same for every example
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(seed=103, logC=0.125, classes=3)  # a point on one pair's boundary
@given(seed=st.integers(0, 10_000), logC=st.floats(-0.5, 1.5), classes=st.sampled_from([2, 3]))
def test_one_fit_past_the_reach_is_svc_grown_in_stages(small_reach, seed, logC, classes):
    X, y = _data(1500, seed, classes)
    C, gamma = 10.0 ** logC, 1.0 / (X.shape[1] * X.var())
    # "ovo": the pairs' own decision values (the "ovr" shape adds votes, which a point on a
    # pair's boundary flips by 1 within the solvers' tolerance)
    est = HSSSVC(C=C, gamma=gamma, random_state=seed, decision_function_shape="ovo").fit(X, y)
    assert _starts(est) == {"staged"}
    assert np.isnan(est.beta_).all()
    assert all(r.converged and r.gap < 1e-3 for r in est.admm_["exact"])
    ref = SVC(C=C, gamma=gamma, decision_function_shape="ovo").fit(X, y)
    assert np.mean(est.predict(X) == ref.predict(X)) >= 0.99
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X),
                               atol=5e-2 * max(1.0, C ** 0.5))
    if classes == 2:  # LIBSVM's stopping test over all points, on the dense kernel
        yy = np.where(y == est.classes_[1], 1.0, -1.0)
        coef = np.zeros(len(y))
        coef[est.support_] = est.dual_coef_[0]
        f = kernel_operator(X, make_kernel("gaussian", gamma=gamma)).to_dense() @ coef
        assert kkt_violation(f[:, None], yy[:, None], (yy * coef)[:, None], C)[0] < 1e-3 + 1e-9
        assert abs(coef.sum()) < 1e-9 * C * len(y)


def test_a_staged_fit_reproduces_and_pickles(small_reach):
    X, y = _data(1200, 3)
    a = HSSSVC(random_state=0, gamma="scale").fit(X, y)
    b = HSSSVC(random_state=0, gamma="scale").fit(X, y)
    assert a.hss_["start"] == "staged" and a.hss_["stages"] == (200, 400, 800, 1200)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.decision_function(X), a.decision_function(X))


def test_a_path_and_an_explicit_start_are_not_staged(small_reach):
    X, y = _data(1200, 4)
    assert HSSSVC(gamma="scale").fit_path(X, y, [1.0])[0].hss_["start"] == "admm"
    est = HSSSVC(gamma="scale", options=HSSSVCOptions(start="admm")).fit(X, y)
    assert est.hss_["start"] == "admm"


def test_the_stage_limit_and_solve_exact_choose_the_route(monkeypatch):
    """"auto" grows stages while n^2 x share is within stage_limit, solve_exact=True at any
    share; an unmeasured share, an explicit start or no exact step keep the HSS start."""
    kern = make_kernel("gaussian", gamma=0.5)
    n, limit, small = 1000, 1e5, RouteOptions(small_n=500, stage_limit=1e6)
    fit = OneFitBackend(HSSBackend(kern,
                                   HSSSVCOptions(start="auto", solve_exact="auto"),
                                   PathSettings(exact_limit=limit, probe_C=1.0),
                                   route=small), ExactBackend(kern))
    assert fit.resolve_start(n, 3, 0.5) == "staged"  # 5e5 entries: past solve_exact, within stages
    assert fit.resolve_start(n, 3, 0.05) == "decomposition"  # 5e4: from zero
    assert fit.resolve_start(n, 3, 2.0) == "admm"  # past the stage limit
    assert fit.resolve_start(n, 3, None) == "admm"
    # from zero by the HSS rule, but n^2 x share >= 4e4
    many = replace(fit, hss=replace(fit.hss, route=replace(small, stage_min=4e4)))
    assert many.resolve_start(n, 3, 0.05) == "staged"
    assert many.resolve_start(n, 3, 0.03) == "decomposition"
    exact = OneFitBackend(HSSBackend(kern,
                                     HSSSVCOptions(start="auto", solve_exact=True),
                                     PathSettings(probe_C=1.0, exact_limit=limit),
                                     route=small), ExactBackend(kern))
    assert exact.resolve_start(n, 3, 2.0) == "staged"
    for hss in (HSSBackend(kern,
                           HSSSVCOptions(start="admm", solve_exact="auto"),
                           PathSettings(exact_limit=limit)),
                HSSBackend(kern,
                           HSSSVCOptions(start="auto", solve_exact=False),
                           PathSettings(exact_limit=limit))):
        assert OneFitBackend(hss, ExactBackend(kern)).resolve_start(n, 3, 0.5) == "admm"


def test_below_small_n_many_support_vectors_are_grown_in_stages_from_a_quarter(monkeypatch):
    """Short of small_n the fit probes its share once n^2 reaches stage_min, and grows the
    SVM in stages from a quarter of the points when n^2 x share does; SVC's SVM either way."""
    X, y = _data(1600, 7)
    gamma = 1.0 / (X.shape[1] * X.var())

    def route(stage_min):  # a probe of fewer points than n
        monkeypatch.setattr(hss_svc, "HSSBackend", functools.partial(
            HSSBackend, route=RouteOptions(probe_points=300, stage_min=stage_min)))

    ref = SVC(gamma=gamma).fit(X, y)
    starts = {}
    for stage_min in (1e5, 1e12):
        route(stage_min)
        est = HSSSVC(gamma=gamma, random_state=0).fit(X, y)
        starts[stage_min] = est.hss_["start"]
        assert np.mean(est.predict(X) == ref.predict(X)) >= 0.99
        np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X),
                                   atol=5e-2)
    assert starts == {1e5: "staged", 1e12: "decomposition"}
    assert est.hss_.get("stages") is None
    route(1e5)
    assert HSSSVC(gamma=gamma).fit(X, y).hss_["stages"] == (400, 800, 1600)


@pytest.mark.parametrize("options", [None, HSSSVCOptions(start="admm")])
def test_a_fit_at_random_state_none_reproduces_as_sklearns_svc(small_reach, options):
    # scikit-learn's SVC fits the same model every time (its random_state seeds only the
    # probability folds); the staged route's subsample and the ADMM route's randomized
    # compression are the route's, so at random_state=None they take a fixed seed
    X, y = _data(1200, 5)
    a, b = (HSSSVC(gamma="scale", options=options).fit(X, y) for _ in range(2))
    assert _starts(a) == ({"staged"} if options is None else {"admm"})
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
