"""Small problems start at the exact decomposition (HSSSVC's ``start``, issue 22).

``start="decomposition"`` (what ``"auto"`` picks for n <= RouteOptions.small_n) builds no
approximation, no factor and runs no ADMM: the first C is solved by the exact decomposition
from alpha = 0, every later C from the previous solution scaled. The reference is
scikit-learn's SVC (LIBSVM): both stop at a KKT gap eps = 1e-10, and two feasible points at gap eps
differ in the kernel part of their decision values by at most 2 * 2 sqrt(eps sum_i C w_i)
(the bound of tests/test_weights.py's module docstring), asserted at every C of a path,
weighted and one-vs-rest. The working sets' block is the route's only large buffer: the
memory budget caps it, and refuses the route when not even small working sets fit.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_blobs
from sklearn.utils._param_validation import InvalidParameterError

from hsskern.estimators.hss_svc import HSSSVC, HSSSVCCV
from hsskern.exceptions import MemoryBudgetError
from hsskern.kernels import kernel_operator, make_kernel
from hsskern.solvers.paths.hss_path import HSSBackend, hss_svm_path, prepare_decomposition
from hsskern.solvers.paths.plan import RouteOptions, decomposition_memory
from svm_reference import assert_same_svm, binary_problem, gap_tol, svc
from hsskern import HSSSVCOptions
from hsskern.options import PathSettings


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # tiny matrices: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


EPS = 1e-10
CS = np.logspace(-2, 3, 6)


def _tol(C, w):
    return gap_tol(EPS, C, w)


def _svc(C, h, **kw):
    return svc(C, h, EPS, **kw)


_binary = binary_problem


def _decomposition_route(m):
    # no approximation was built and no ADMM iteration ran
    assert m.hss_["start"] == "decomposition" and m.hss_["approximation"] is None
    assert "compress" not in m.fit_time_ and "factor" not in m.fit_time_
    assert np.all(m.admm_["objective"] != m.admm_["objective"])  # NaN: no ADMM objective


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 160), h=st.sampled_from([0.7, 1.5]),
       start=st.sampled_from(["auto", "decomposition"]))
def test_every_C_of_the_path_is_svcs_svm(seed, n, h, start):
    X, y, rng = _binary(seed, n)
    Xt = rng.normal(size=(40, 3))
    models = HSSSVC(h=h, options=HSSSVCOptions(start=start), tol=EPS).fit_path(X, y, CS)
    y_pm = np.where(y == 1, 1.0, -1.0)
    for m, C in zip(models, CS):
        assert m.C == C
        _decomposition_route(m)
        ref = _svc(C, h).fit(X, y)
        assert_same_svm(m, ref, X, (X, Xt), y_pm, C * np.ones(n), _tol(C, np.ones(n)))
        np.testing.assert_array_equal(m.predict(Xt), np.where(m.decision_function(Xt) > 0,
                                                              m.classes_[1], m.classes_[0]))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["sample", "balanced", "both"]))
def test_weighted_path_is_svcs_weighted_svm_at_every_C(seed, kind):
    # LIBSVM's weighted C: point i's bound C w_i, zeros included (never a support vector)
    X, y, rng = _binary(seed, 90)
    sw = None
    if kind in ("sample", "both"):
        sw = rng.uniform(0.2, 3.0, 90)
        sw[rng.choice(90, 18, replace=False)] = 0.0
        sw[:2] = 1.0
    cw = "balanced" if kind in ("balanced", "both") else None
    models = HSSSVC(class_weight=cw, h=1.0,
                    options=HSSSVCOptions(start="decomposition"), tol=EPS).fit_path(
        X, y, CS, sample_weight=sw)
    w = (np.ones(90) if sw is None else sw) * models[0].class_weight_[y]
    y_pm = np.where(y == 1, 1.0, -1.0)
    for m, C in zip(models, CS):
        _decomposition_route(m)
        ref = _svc(C, 1.0).fit(X, y, sample_weight=w)
        assert_same_svm(m, ref, X, (X,), y_pm, C * w, _tol(C, w))
        assert not np.any(w[m.support_] == 0)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), weighted=st.booleans())
def test_one_vs_rest_columns_are_svcs_binary_svms_at_every_C(seed, weighted):
    X, y = make_blobs(100, centers=3, n_features=2, cluster_std=2.0, random_state=seed)
    labels = np.array(["x", "y", "z"])[y]
    cw = {"x": 2.0, "z": 0.5} if weighted else None
    models = HSSSVC(class_weight=cw, h=1.0, tol=EPS,
                    options=HSSSVCOptions(multiclass="ovr")).fit_path(X, labels, CS[:4])
    w = models[0].class_weight_[y]
    for m, C in zip(models, CS[:4]):
        _decomposition_route(m)
        assert m.decision_function(X).shape == (100, 3)
        for k, c in enumerate(m.classes_):
            ref = _svc(C, 1.0).fit(X, labels == c, sample_weight=w)
            assert_same_svm(m, ref, X, (X,), np.where(labels == c, 1.0, -1.0), C * w,
                        _tol(C, w), k=k)


@pytest.mark.parametrize("C", [0.05, 3.0, 300.0])
def test_single_fit_reaches_its_C_from_zero_and_matches_the_admm_route(C):
    # fit's continuation (C / 1000, ..., C) starts from zero too; the ADMM route solves the
    # same SVM, so the two routes agree to the tolerance
    X, y, rng = _binary(5, 150)
    Xt = rng.normal(size=(50, 3))
    dec = HSSSVC(C=C, h=1.0, tol=EPS).fit(X, y)
    _decomposition_route(dec)
    adm = HSSSVC(C=C, h=1.0, tol=EPS, options=HSSSVCOptions(start="admm"),
                 random_state=0).fit(X, y)
    assert adm.hss_["start"] == "admm" and adm.hss_["approximation"] == "hss"
    tol = _tol(C, np.ones(150))
    np.testing.assert_allclose(dec.decision_function(Xt) - dec.intercept_[0],
                               adm.decision_function(Xt) - adm.intercept_[0], atol=2 * tol)
    assert_same_svm(dec, _svc(C, 1.0).fit(X, y), X, (Xt,), np.where(y == 1, 1.0, -1.0),
                C * np.ones(150), tol)


def test_auto_rule():
    kern = make_kernel("gaussian", h=1.0)
    b = HSSBackend(kern, HSSSVCOptions(start="auto"))
    small_n = RouteOptions().small_n
    assert b.resolve_start(small_n, 10) == "decomposition"
    assert b.resolve_start(small_n + 1, 10) == "admm"
    assert b.resolve_start(100, 1000) == "decomposition"
    # the explicit options win, and auto keeps the ADMM where the user asked for its pieces
    assert HSSBackend(kern, HSSSVCOptions(start="admm")).resolve_start(100, 3) == "admm"
    starts = {"decomposition": HSSSVCOptions(start="decomposition"),
              "no exact step": HSSSVCOptions(start="auto", solve_exact=False),
              "dense": HSSSVCOptions(start="auto", approximation="exact")}
    assert HSSBackend(kern, starts["decomposition"]).resolve_start(10 ** 6, 3) == "decomposition"
    assert HSSBackend(kern, starts["no exact step"]).resolve_start(100, 3) == "admm"
    assert HSSBackend(kern, starts["dense"]).resolve_start(100, 3) == "admm"
    # solve_exact="auto" would skip a start above exact_limit: auto keeps the ADMM there
    assert HSSBackend(kern, HSSSVCOptions(start="auto"),
                      PathSettings(exact_limit=100.0 ** 2 - 1)).resolve_start(100, 3) == "admm"
    # the backend's own default is the ADMM route (the SVR's prepare needs the factor)
    assert HSSBackend(kern).resolve_start(100, 3) == "admm"
    with pytest.raises(ValueError, match="start must be one of"):
        HSSBackend(kern, HSSSVCOptions(start="zero")).resolve_start(100, 3)


def test_explicit_options_keep_working():
    X, y, _ = _binary(3, 120)
    m = HSSSVC(
        options=HSSSVCOptions(solve_exact=False),
        random_state=0).fit(X, y)  # ADMM only: auto keeps the ADMM
    assert m.hss_["start"] == "admm" and m.n_iter_[0] >= 1
    m = HSSSVC(options=HSSSVCOptions(approximation="exact")).fit(X, y)
    assert m.hss_["start"] == "admm" and m.hss_["approximation"] == "exact"
    with pytest.raises(ValueError, match="solve_exact=False needs start=.admm."):
        HSSSVC(options=HSSSVCOptions(start="decomposition", solve_exact=False)).fit(X, y)
    with pytest.raises(InvalidParameterError, match="start"):
        HSSSVC(options=HSSSVCOptions(start="zero")).fit(X, y)
    # the path function refuses to run the ADMM on a problem without an approximation
    prob = prepare_decomposition(X, make_kernel("gaussian", h=1.0))
    with pytest.raises(ValueError, match="solve_exact=False needs the ADMM"):
        hss_svm_path(prob, np.where(y == 1, 1.0, -1.0)[:, None], [1.0],
                     options=HSSSVCOptions(solve_exact=False))
    with pytest.raises(ValueError, match="no approximation to factor"):
        prob.refactor(1.0)
    # the CV's folds and refit take the rule too
    cv = HSSSVCCV(Cs=[0.1, 10.0], random_state=0).fit(X, y)
    assert cv.best_estimator_.hss_["start"] == "decomposition"


def test_memory_budget_caps_the_working_sets_and_refuses_when_too_small():
    n, d = 600, 3
    X, y, rng = _binary(8, n, d)
    kern = make_kernel("gaussian", h=1.0)
    full = decomposition_memory(n, d, n)
    assert prepare_decomposition(X, kern, memory_budget=full).stats["max_chunk"] == n
    # a budget for 300-point working sets: the cap, within the budget, and still the exact SVM
    budget = decomposition_memory(n, d, 300) + 100
    prob = prepare_decomposition(X, kern, memory_budget=budget)
    q = prob.stats["max_chunk"]
    assert q == 300 and decomposition_memory(n, d, q) <= budget
    assert prob.stats["memory_estimate"]["peak"] <= budget
    y_pm = np.where(y == 1, 1.0, -1.0)
    # the block decomposition's working sets are what the budget caps
    sols = hss_svm_path(prob, y_pm[:, None], CS, settings=PathSettings(tol=EPS, engine="block"))
    Kd = kernel_operator(X, kern).to_dense()
    for sol, C in zip(sols, CS):
        rr = sol.info["exact"][0]
        assert rr.converged and max(rr.ws_sizes) <= q
        ref = _svc(C, 1.0).fit(X, y)
        ref_coef = np.zeros(n)
        ref_coef[ref.support_] = ref.dual_coef_[0]
        # the kernel parts of the decision values at the training points
        np.testing.assert_allclose(Kd @ sol.dual_coef[:, 0], Kd @ ref_coef,
                                   atol=_tol(C, np.ones(n)))
    # the estimator passes its budget: the same cap
    m = HSSSVC(options=HSSSVCOptions(start="decomposition"), memory_budget=budget).fit(X, y)
    assert m.hss_["max_chunk"] == 300
    # too small for working sets of 256 points: refused before any work, with the numbers
    small = decomposition_memory(n, d, 255)
    with pytest.raises(MemoryBudgetError, match="600 points x 3 features.*256 points"):
        prepare_decomposition(X, kern, memory_budget=small)
    with pytest.raises(MemoryBudgetError, match="more than the"):
        HSSSVC(options=HSSSVCOptions(start="decomposition"), memory_budget=small).fit(X, y)


def test_small_problems_run_on_one_thread_and_give_the_threads_back():
    # below SERIAL_N the decomposition's products run serially (a waiting second thread
    # cost more than it saved); the caller's thread pools are as they were afterwards
    from threadpoolctl import threadpool_info

    from hsskern.solvers.engines.interface import BlockEngine, CachedEngine
    seen = []
    engines = (BlockEngine, CachedEngine)  # either engine of the exact route
    real = {cls: cls.solve for cls in engines}

    def spy(cls):
        def run(self, *a, **kw):
            if cls is CachedEngine:  # sets its own count, without a thread-pool scan
                seen.append([self.options.threads])
            else:
                seen.append(sorted({p["num_threads"] for p in threadpool_info()}))
            return real[cls](self, *a, **kw)
        return run
    X, y, _ = _binary(4, 200)
    before = [(p["prefix"], p["num_threads"]) for p in threadpool_info()]
    for cls in engines:
        setattr(cls, "solve", spy(cls))
    try:
        HSSSVC(options=HSSSVCOptions(start="decomposition")).fit_path(X, y, CS[:3])
    finally:
        for cls in engines:
            setattr(cls, "solve", real[cls])
    assert seen and all(s == [1] for s in seen)
    assert [(p["prefix"], p["num_threads"]) for p in threadpool_info()] == before
