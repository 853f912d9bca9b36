import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from hsskern.estimators.cv import make_splits
from hsskern.estimators.hss_svc import HSSSVC, HSSSVCCV
from hsskern.exceptions import MemoryBudgetError
from hsskern import HSSSVCOptions
from hsskern.kernels import make_kernel
from hsskern.solvers.paths.hss_path import HSSBackend
from hsskern.options import PathSettings


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # the matrices here are tiny: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


EXACT = dict(options=HSSSVCOptions(approximation="exact"))
# the ADMM itself (solve_exact=False): exact solve is tested in test_refine.py
TIGHT = dict(options=HSSSVCOptions(approximation="exact", solve_exact=False,
                                   admm_max_iter=5000), tol=1e-5)


def _data(n=300, seed=0):
    X, y = make_classification(n, 4, n_informative=3, n_redundant=0, random_state=seed,
                               class_sep=0.8)
    return X[:200], y[:200], X[200:], y[200:]


# tol=1e-10: the exact solve then stops at a KKT gap of 1e-10, so the sample-weight checks
# (integer weights = repeated rows, compared to rtol 1e-7) see the exact SVM; at the default
# gap of 1e-3 the two fits agree only to LIBSVM's tolerance. A fixed width (h=1): the
# default gamma="scale" follows X's variance, which repeated rows change (scikit-learn's
# own SVC fails that check for this reason)
@parametrize_with_checks([HSSSVC(h=1.0, options=HSSSVCOptions(approximation="exact"),
                                 tol=1e-10),
                          HSSSVCCV(
                              h=1.0, options=HSSSVCOptions(approximation="exact"),
                              Cs=2, cv=0.25, tol=1e-10)])
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_decision_matches_sklearn_svc():
    X, y, Xt, yt = _data()
    m = HSSSVC(h=1.5, C=1.0, **TIGHT).fit(X, y)
    ref = SVC(C=1.0, gamma=1 / (2 * 1.5 ** 2), tol=1e-8).fit(X, y)
    # stated tolerance: 2e-3 absolute on O(1) decision values at an optimality gap of 1e-5
    np.testing.assert_allclose(m.decision_function(Xt), ref.decision_function(Xt), atol=2e-3)
    assert np.mean(m.predict(Xt) == ref.predict(Xt)) >= 0.99


def test_gamma_and_h_spellings_agree():
    X, y, Xt, _ = _data()
    a = HSSSVC(h=2.0, **EXACT).fit(X, y).decision_function(Xt)
    b = HSSSVC(gamma=1 / 8, **EXACT).fit(X, y).decision_function(Xt)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="either h or gamma"):
        HSSSVC(h=1.0, gamma=1.0, **EXACT).fit(X, y)


def test_multiclass_ovr_equals_per_class_binary():
    X, y = make_blobs(240, centers=4, n_features=3, random_state=0, cluster_std=2.5)
    labels = np.array(["ant", "bee", "cat", "dog"])[y]  # string labels
    # fixed iteration count and beta: the block run and the binary runs do identical arithmetic
    opts = HSSSVCOptions(adaptive_beta=False, solve_exact=False, approximation="exact",
                         admm_max_iter=60)
    fixed = dict(C=2.0, tol=None, options=opts)
    m = HSSSVC(C=2.0, tol=None, options=opts.replace(multiclass="ovr")).fit(X, labels)
    assert list(m.classes_) == ["ant", "bee", "cat", "dog"]
    dec = m.decision_function(X)
    assert dec.shape == (240, 4) and m.dual_coef_.shape[0] == 4
    for k, c in enumerate(m.classes_):
        yb = np.where(labels == c, c, "rest")
        b = HSSSVC(**fixed).fit(X, yb)
        # binary: positive class is classes_[1]; "rest" sorts after the animal names
        sign = -1.0 if b.classes_[1] == "rest" else 1.0
        np.testing.assert_allclose(dec[:, k], sign * b.decision_function(X), atol=1e-9)
    assert set(m.predict(X)) <= set(m.classes_)
    assert m.score(X, labels) > 0.8


def test_fit_path_models_equal_individual_warm_fits():
    X, y, Xt, _ = _data()
    Cs = [0.1, 1.0, 10.0]
    models = HSSSVC(**TIGHT).fit_path(X, y, Cs)
    assert [m.C for m in models] == Cs
    for m in models:
        single = HSSSVC(C=m.C, **TIGHT).fit(X, y)
        np.testing.assert_allclose(m.decision_function(Xt), single.decision_function(Xt),
                                   atol=5e-3)
    assert models[0].fit_time_["factor"] > 0 and models[1].fit_time_["factor"] == 0


def test_fitted_attributes_and_support():
    X, y, Xt, _ = _data()
    m = HSSSVC(C=0.5, **EXACT).fit(X, y)
    assert m.support_vectors_.shape == (len(m.support_), X.shape[1])
    np.testing.assert_array_equal(m.support_vectors_, X[m.support_])
    assert m.dual_coef_.shape == (1, len(m.support_))
    assert np.all(np.abs(m.dual_coef_) <= 0.5 + 1e-12)
    assert m.intercept_.shape == (1,) and m.n_iter_.shape == (1,)
    assert {"kernel", "factor", "admm", "bias"} <= set(m.fit_time_)
    assert m.hss_["approximation"] == "exact"


def test_pickle_round_trip_identical():
    X, y, Xt, _ = _data()
    m = HSSSVC(**EXACT).fit(X, y)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.decision_function(Xt), m2.decision_function(Xt))
    cv = HSSSVCCV(Cs=3, **EXACT).fit(X, y)
    cv2 = pickle.loads(pickle.dumps(cv))
    np.testing.assert_array_equal(cv.predict(Xt), cv2.predict(Xt))


def test_cv_picks_best_validation_c_and_refits():
    X, y, Xt, yt = _data()
    cv = HSSSVCCV(Cs=[0.01, 1.0, 100.0], h=[0.5, 2.0], cv=3, random_state=0,
                  options=EXACT["options"].replace(admm_max_iter=30)).fit(X, y)
    res = cv.cv_results_
    assert len(res["mean_test_score"]) == 6
    best = np.argmax(res["mean_test_score"])
    assert cv.C_ == res["param_C"][best] and cv.h_ == res["param_h"][best]
    assert res["rank_test_score"][best] == 1
    np.testing.assert_allclose(res["mean_test_score"],
                               np.mean([res[f"split{k}_test_score"] for k in range(3)], axis=0))
    assert cv.best_estimator_.C == cv.C_
    np.testing.assert_array_equal(cv.predict(Xt), cv.best_estimator_.predict(Xt))


def test_cv_scores_equal_independent_holdout_fits():
    X, y, _, _ = _data()
    cv = HSSSVCCV(Cs=[0.1, 10.0], cv=0.3, random_state=1, refit=False, **EXACT).fit(X, y)
    (tr, va), = make_splits(cv.cv, X, y, cv.random_state)
    # the path is warm-started; the independent fits are cold: agree to the ADMM tolerance
    for C, s in zip(cv.cv_results_["param_C"], cv.cv_results_["mean_test_score"]):
        m = HSSSVC(C=C, **EXACT).fit(X[tr], y[tr])
        assert abs(m.score(X[va], y[va]) - s) <= 0.03
    with pytest.raises(AttributeError, match="refit=False"):
        cv.predict(X)


@pytest.mark.parametrize("bad, match", [
    (dict(C=0.0), "C"), (dict(C=-1.0), "C"), (dict(options__beta=0.0), "beta"),
    (dict(options__beta=-2.0), "beta"), (dict(kernel="tanh"), "kernel"),
])
def test_bad_parameters(bad, match):
    X, y, _, _ = _data()
    with pytest.raises(ValueError, match=match):
        HSSSVC(**EXACT).set_params(**bad).fit(X, y)


def test_bad_data():
    X, y, _, _ = _data()
    with pytest.raises(ValueError, match="2 classes"):
        HSSSVC(**EXACT).fit(X, np.ones(len(y)))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HSSSVC(**EXACT).fit(Xn, y)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        HSSSVC(**EXACT).fit(Xi, y)
    m = HSSSVC(**EXACT).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        m.predict(Xn)


def test_fewer_samples_than_a_leaf():
    X, y, Xt, _ = _data()
    m = HSSSVC(options=HSSSVCOptions(leaf_size=512, approximation="exact")).fit(X[:20], y[:20])
    assert m.predict(Xt).shape == (len(Xt),)


def test_exact_memory_guard():
    # the dense kernel and its factor: 2 x 8 n^2 bytes, refused against the budget first
    X, y, _, _ = _data()
    n = len(X)
    with pytest.raises(MemoryBudgetError, match="exact"):
        HSSSVC(memory_budget=16 * n * n - 1, **EXACT).fit(X, y)
    HSSSVC(memory_budget=16 * n * n, **EXACT).fit(X, y)


def test_hss_tight_matches_svc_labels():
    X, y = make_classification(1500, 5, n_informative=4, n_redundant=0, random_state=2)
    Xt = X[1000:]
    m = HSSSVC(h=1.0, C=1.0,
               options=HSSSVCOptions(rel_tol=1e-8, abs_tol=1e-10, max_rank=1000, leaf_size=64,
                                     solve_exact=False, admm_max_iter=3000),
               tol=1e-4, random_state=0).fit(X[:1000], y[:1000])
    ref = SVC(C=1.0, gamma=0.5, tol=1e-6).fit(X[:1000], y[:1000])
    assert np.mean(m.predict(Xt) == ref.predict(Xt)) >= 0.99
    assert "max_rank" in m.hss_


def test_hss_fewer_samples_than_a_leaf_and_pickle():
    X, y, Xt, _ = _data()
    m = HSSSVC(options=HSSSVCOptions(leaf_size=512), random_state=0).fit(X[:50], y[:50])
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.predict(Xt), m2.predict(Xt))


def test_hss_cv_runs():
    X, y, Xt, _ = _data()
    cv = HSSSVCCV(Cs=3, random_state=0, options=HSSSVCOptions(leaf_size=32)).fit(X, y)
    assert cv.predict(Xt).shape == (len(Xt),)


def test_a_skipped_exact_step_is_named_in_the_warning():
    """solve_exact="auto" past exact_limit leaves the ADMM's answer: the warning says the exact
    decomposition was skipped and what solves it exactly, not only "raise max_iter"."""
    X, y, _, _ = _data()
    y = np.where(y == 1, 1.0, -1.0)
    backend = HSSBackend(make_kernel("gaussian", h=1.0),
                         HSSSVCOptions(start="admm", approximation="exact", solve_exact="auto",
                                       admm_max_iter=2),
                         PathSettings(exact_limit=1.0))
    prob = backend.prepare(X, y[:, None])
    with pytest.warns(ConvergenceWarning, match="exact decomposition was skipped") as rec:
        sol = backend.path(prob, y[:, None], [10.0])[0]
    assert sol.info["exact"][0].skipped and "ExactSVC" in str(rec[0].message)


def test_unconverged_admm_warns_and_paper_mode_does_not():
    X, y, _, _ = _data()
    admm = HSSSVCOptions(approximation="exact", solve_exact=False)
    with pytest.warns(ConvergenceWarning,
                      match="within admm_max_iter=2 ADMM iterations") as rec:
        HSSSVC(C=10.0, options=admm.replace(admm_max_iter=2)).fit(X, y)
    assert "Raise options.admm_max_iter" in str(rec[0].message)
    with pytest.warns(ConvergenceWarning, match=r"2 of 3 C value"):
        HSSSVC(options=admm.replace(admm_max_iter=10), tol=1e-6).fit_path(
            X, y, [1e-6, 10.0, 100.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        HSSSVC(options=admm.replace(admm_max_iter=2), tol=None).fit(X, y)
        HSSSVC(**TIGHT).fit(X, y)


def test_indefinite_approximation_is_named_in_the_warning():
    X, y = make_classification(1500, 8, n_informative=6, random_state=4)
    # a capped rank on a wide kernel: the ID approximation is indefinite, beta = 1e-6 fails
    with pytest.warns(ConvergenceWarning, match="indefinite") as rec:
        HSSSVC(h=2.0, C=100.0,
               options=HSSSVCOptions(beta=1e-6, rel_tol=0.3, max_rank=3, leaf_size=32,
                                     solve_exact=False, admm_max_iter=20),
               random_state=0).fit(X, y)
    msg = [str(w.message) for w in rec if w.category is ConvergenceWarning]
    assert len(msg) == 1 and "beta had to stay" in msg[0] and "tighten rel_tol" in msg[0]


def test_hss_memory_budget_is_checked_before_any_work():
    # 2e6 x 8 would need ~100 GB: refused from the estimate, before compression starts (the
    # HSS route by name: "auto" grows this one fit's exact SVM in stages, in far less memory)
    import time
    X = np.zeros((2_000_000, 8))
    X[:, 0] = np.arange(len(X)) % 7
    y = (X[:, 0] > 3).astype(int)
    t0 = time.perf_counter()
    with pytest.raises(MemoryBudgetError, match="HSS fit on 2000000 points x 8 features"):
        HSSSVC(memory_budget=4e9, options=HSSSVCOptions(start="admm")).fit(X, y)
    assert time.perf_counter() - t0 < 5.0
    # a small fit reports the range it was checked against (the HSS route by name: "auto"
    # takes the decomposition from zero at this n, which has no HSS to estimate)
    Xs, ys, _, _ = _data()
    m = HSSSVC(options=HSSSVCOptions(leaf_size=32, start="admm"), random_state=0).fit(Xs, ys)
    est, low = m.hss_["memory_estimate"], m.hss_["memory_estimate_low"]
    assert est["peak"] >= max(m.hss_["memory_bytes"], m.hss_["factor_memory_bytes"])
    assert low["peak"] < est["peak"]
    # a budget between the two ends: the fit runs, and says the ranks could overrun it
    between = (low["peak"] + est["peak"]) / 2
    with pytest.warns(UserWarning, match="up to .* if the ranks reach max_rank=500"):
        m2 = HSSSVC(options=HSSSVCOptions(leaf_size=32, start="admm"), random_state=0,
                    memory_budget=between).fit(Xs, ys)
    np.testing.assert_array_equal(m2.decision_function(Xs), m.decision_function(Xs))


def test_admm_refactors_that_fail_run_no_lanczos(monkeypatch):
    """The ADMM moves beta past a failed shift by itself; the suggested shift (a Lanczos run
    for H's smallest eigenvalue, minutes at 10^6 points) is computed only where it is used."""
    import hsskern.hss.ulv as ulv
    from hsskern.exceptions import NotPositiveDefiniteError
    from hsskern.hss import HSSMatrix, HSSOptions
    from hsskern.kernels import make_kernel
    from hsskern.solvers import hss_svm_path, prepare_hss

    suggested, failed = [], []
    suggest, build = ulv._suggest_beta, HSSMatrix.factor

    def counted_suggest(hss, beta):
        suggested.append(beta)
        return suggest(hss, beta)

    def counted_build(self, beta, **kw):
        try:
            return build(self, beta, **kw)
        except NotPositiveDefiniteError:
            failed.append(beta)
            raise

    monkeypatch.setattr(ulv, "_suggest_beta", counted_suggest)
    monkeypatch.setattr(HSSMatrix, "factor", counted_build)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=3000) > 0, 1.0, -1.0)
    # a loose approximation, indefinite below a shift of order 0.1, and a large C
    with warnings.catch_warnings():  # the rank cap is the point here
        warnings.simplefilter("ignore", UserWarning)
        problem = prepare_hss(X, make_kernel("gaussian", h=0.3), hss_options=HSSOptions(
            rel_tol=1e-1, abs_tol=1e-2, max_rank=20, leaf_size=64, random_state=0))
    suggested.clear()
    sols = hss_svm_path(problem, y[:, None], [1.0, 100.0, 1e4],
                        options=HSSSVCOptions(solve_exact=False, admm_max_iter=100), warn=False)
    assert failed  # the ADMM did try a shift that fails
    assert not suggested
    assert all(np.isfinite(s.dual_coef).all() for s in sols)
    with pytest.raises(NotPositiveDefiniteError) as exc:  # a direct call still suggests
        problem.refactor(failed[0])
    assert exc.value.suggested_beta > failed[0]
