"""One-vs-one multiclass (SVC's): predictions, decision values, layout and probabilities
against scikit-learn's SVC; the pairwise coupling against a direct solution of its problem;
one-vs-rest kept as an option."""
import pickle
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC
from sklearn.utils.multiclass import _ovr_decision_function

from hsskern.estimators.exact_svc import ExactSVC
from hsskern.estimators.hss_svc import HSSSVC, HSSSVCCV
from hsskern.solvers.paths.pairwise import (PairwiseBackend, class_pairs, ovr_scores,
                                      pairwise_coupling, vote)
from svm_reference import gap_tol
from hsskern import HSSSVCOptions, ExactSVCOptions

EPS = 1e-8  # the KKT gap both sides stop at


def blobs(seed, k, per_class, d=3, spread=1.5, labels=None):
    """k overlapping Gaussian classes of ``per_class`` points each (labels 0..k-1 or
    ``labels``), shuffled."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d)) * 2.0
    y = np.repeat(np.arange(k), per_class)
    X = centers[y] + spread * rng.normal(size=(y.size, d))
    perm = rng.permutation(y.size)
    X, y = X[perm], y[perm]
    if labels is not None:
        y = np.asarray(labels)[y]
    return X, y, rng


def pair_tolerance(y, classes, C, w=None):
    """Per pair, the decision-value tolerance of two solutions at gap EPS
    (svm_reference.gap_tol over the pair's bounds), plus the intercepts' share."""
    w = np.ones(y.size) if w is None else w
    return np.array([gap_tol(EPS, C, w[(y == classes[i]) | (y == classes[j])]) + 1e-6
                     for i, j in class_pairs(classes.size)])


def assert_same_as_svc(est, ref, X, Z, y, C, w=None):
    """est's one-vs-one model is SVC's: pairwise values within the gap's tolerance, and
    the same prediction and "ovr" values wherever no pair is within it of 0."""
    tol = pair_tolerance(y, ref.classes_, C, w)
    est.set_params(decision_function_shape="ovo")
    ref.decision_function_shape = "ovo"
    D, Dref = est.decision_function(Z), ref.decision_function(Z)
    assert D.shape == Dref.shape == (Z.shape[0], len(tol))
    assert np.all(np.abs(D - Dref) <= tol)
    sure = np.all(np.abs(Dref) > tol, axis=1)
    np.testing.assert_array_equal(est.predict(Z)[sure], ref.predict(Z)[sure])
    est.set_params(decision_function_shape="ovr")
    ref.decision_function_shape = "ovr"
    Do, Doref = est.decision_function(Z), ref.decision_function(Z)
    assert Do.shape == (Z.shape[0], ref.classes_.size)
    # votes equal on the sure rows; the squashed confidences move by at most the values'
    np.testing.assert_allclose(Do[sure], Doref[sure], atol=tol.sum() / 3 + 1e-12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), k=st.integers(3, 5), per=st.integers(10, 30),
       C=st.sampled_from([0.5, 1.0, 10.0]), gamma=st.sampled_from([0.1, 0.5, 2.0]))
def test_ovo_equals_svc(seed, k, per, C, gamma):
    X, y, rng = blobs(seed, k, per)
    Z = np.vstack([X, rng.normal(size=(20, X.shape[1])) * 3])
    ref = SVC(C=C, gamma=gamma, tol=EPS).fit(X, y)
    est = HSSSVC(C=C, gamma=gamma, tol=EPS).fit(X, y)
    assert_same_as_svc(est, ref, X, Z, y, C)
    assert est.intercept_.shape == ref.intercept_.shape == (k * (k - 1) // 2,)
    assert est.n_iter_.shape == ref.n_iter_.shape


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), k=st.integers(3, 4), per=st.integers(10, 25),
       balanced=st.booleans(), with_sw=st.booleans())
def test_ovo_weights_equal_svc(seed, k, per, balanced, with_sw):
    X, y, rng = blobs(seed, k, per, labels=["a", "b", "c", "d"][:k])
    if balanced:  # unequal classes, so "balanced" weighs them differently
        keep = (y != "a") | (rng.random(y.size) < 0.6)
        X, y = X[keep], y[keep]
        cw = "balanced"
    else:
        cw = {"a": 2.0, "b": 0.5}
    sw = rng.uniform(0.2, 3.0, y.size) if with_sw else None
    if with_sw:
        sw[rng.random(y.size) < 0.1] = 0.0  # dropped points
        for c in np.unique(y):  # every class keeps weight
            sw[np.flatnonzero(y == c)[0]] = 1.0
    C, gamma = 1.0, 0.5
    ref = SVC(C=C, gamma=gamma, tol=EPS, class_weight=cw).fit(X, y, sample_weight=sw)
    est = HSSSVC(C=C, gamma=gamma, tol=EPS, class_weight=cw).fit(X, y, sample_weight=sw)
    cw_vec = ref.class_weight_[np.searchsorted(ref.classes_, y)]
    w = cw_vec * (1.0 if sw is None else sw)
    assert_same_as_svc(est, ref, X, X, y, C, w)
    np.testing.assert_allclose(est.class_weight_, ref.class_weight_)


def test_ovo_layout_equals_svc():
    """support_, n_support_, dual_coef_ and intercept_ as SVC's on well-separated classes
    (a unique solution, the same support set at a tight gap)."""
    X, y, _ = blobs(3, 4, 25, spread=0.6)
    ref = SVC(C=1.0, gamma=0.5, tol=EPS).fit(X, y)
    for est in (HSSSVC(C=1.0, gamma=0.5, tol=EPS),
                ExactSVC(C=1.0, gamma=0.5, tol=EPS,
                         options=ExactSVCOptions(validation_fraction=0.0))):
        est.fit(X, y)
        np.testing.assert_array_equal(est.support_, ref.support_)
        np.testing.assert_array_equal(est.n_support_, ref.n_support_)
        assert est.n_support_.dtype == ref.n_support_.dtype
        assert est.dual_coef_.shape == ref.dual_coef_.shape == (3, ref.support_.size)
        np.testing.assert_allclose(est.dual_coef_, ref.dual_coef_, atol=1e-4)
        np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=1e-4)
        np.testing.assert_array_equal(est.support_vectors_, ref.support_vectors_)
        # decision_function is the layout's expansion, as SVC's
        est.set_params(decision_function_shape="ovo")
        np.testing.assert_allclose(est.decision_function(X), _expansion(est, X), atol=1e-10)


def _expansion(est, Z):
    """The pairwise values from SVC's layout: pair (i, j) takes class i's vectors from row
    j - 1 and class j's from row i."""
    from sklearn.metrics.pairwise import rbf_kernel
    K = rbf_kernel(est.support_vectors_, Z, gamma=est.gamma)
    start = np.concatenate([[0], np.cumsum(est.n_support_)])
    out = []
    for p, (i, j) in enumerate(class_pairs(est.classes_.size)):
        si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
        out.append(est.dual_coef_[j - 1, si] @ K[si] + est.dual_coef_[i, sj] @ K[sj]
                   + est.intercept_[p])
    return np.column_stack(out)


def test_exact_svc_ovo_equals_svc():
    X, y, rng = blobs(7, 3, 30)
    ref = SVC(C=2.0, gamma=0.3, tol=EPS).fit(X, y)
    est = ExactSVC(C=2.0, gamma=0.3, tol=EPS,
                   options=ExactSVCOptions(validation_fraction=0.0)).fit(X, y)
    assert_same_as_svc(est, ref, X, X, y, 2.0)
    assert est.gap_.shape == (3,) and len(est.selected_) == 3 and len(est.stages_) == 3


def test_vote_and_ties():
    # a cycle: 0 beats 1, 1 beats 2, 2 beats 0 -> one vote each -> the lowest index
    D = np.array([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(vote(D, 3), [0, 0, 2])  # 0.0 votes j, as LIBSVM
    rng = np.random.default_rng(0)
    for k in (3, 4, 6):
        D = rng.normal(size=(50, k * (k - 1) // 2))
        np.testing.assert_allclose(ovr_scores(D, k), _ovr_decision_function(D < 0, -D, k))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(2, 6))
def test_pairwise_coupling_solves_its_problem(seed, k):
    """The coupled p minimises p'Qp on the simplex: the KKT system [[Q, 1], [1', 0]]
    [p; b] = [0; 1] solved directly, against the iteration at a tight eps; at LIBSVM's
    eps within its stopping bound."""
    rng = np.random.default_rng(seed)
    m = 20
    R = rng.uniform(0.01, 0.99, size=(m, k * (k - 1) // 2))
    P = pairwise_coupling(R, k, eps=1e-12, max_iter=10000)
    r = np.zeros((k, k))
    for s in range(m):
        for p, (i, j) in enumerate(class_pairs(k)):
            r[i, j], r[j, i] = R[s, p], 1 - R[s, p]
        Q = np.array([[sum(r[o, t] ** 2 for o in range(k) if o != t) if t == j
                       else -r[j, t] * r[t, j] for j in range(k)] for t in range(k)])
        A = np.block([[Q, np.ones((k, 1))], [np.ones((1, k)), np.zeros((1, 1))]])
        direct = np.linalg.solve(A, np.r_[np.zeros(k), 1.0])[:k]
        np.testing.assert_allclose(P[s], direct, atol=1e-9)
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    loose = pairwise_coupling(R, k)  # LIBSVM's stopping rule
    np.testing.assert_allclose(loose, P, atol=0.05)
    np.testing.assert_allclose(loose.sum(axis=1), 1.0)


@pytest.mark.filterwarnings("ignore:.*probability.*:FutureWarning")
@pytest.mark.filterwarnings("ignore:Attribute `prob:FutureWarning")
def test_predict_proba_ovo():
    X, y, rng = blobs(11, 4, 40, spread=1.2)
    Z = X[:60]
    est = HSSSVC(C=1.0, gamma=0.5, tol=1e-6, probability=True, random_state=0).fit(X, y)
    ref = SVC(C=1.0, gamma=0.5, tol=1e-6, probability=True, random_state=0).fit(X, y)
    assert est.probA_.shape == ref.probA_.shape == (6,)
    P, Pref = est.predict_proba(Z), ref.predict_proba(Z)
    assert P.shape == (60, 4)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(est.predict_log_proba(Z)), P, rtol=1e-12)
    # the internal folds differ (LIBSVM shuffles its own): close, not equal
    assert np.mean(np.abs(P - Pref)) < 0.05
    assert np.mean(np.argmax(P, 1) == np.argmax(Pref, 1)) >= 0.9
    # the coupling of this model's own sigmoids, computed here from the pairwise values
    est.set_params(decision_function_shape="ovo")
    D = est.decision_function(Z)
    R = np.clip(1 / (1 + np.exp(D * est.probA_ + est.probB_)), 1e-7, 1 - 1e-7)
    np.testing.assert_allclose(P, pairwise_coupling(R, 4), rtol=1e-10)


def test_ovr_option_is_one_vs_rest():
    """multiclass="ovr": column k is the binary SVM of class k against the rest."""
    X, y, _ = blobs(5, 3, 25)
    est = HSSSVC(C=1.0, gamma=0.5, tol=EPS, options=HSSSVCOptions(multiclass="ovr")).fit(X, y)
    D = est.decision_function(X)
    assert D.shape == (X.shape[0], 3) and est.dual_coef_.shape[0] == 3
    for c in range(3):
        ref = SVC(C=1.0, gamma=0.5, tol=EPS).fit(X, (y == c).astype(int))
        np.testing.assert_allclose(D[:, c], ref.decision_function(X),
                                   atol=gap_tol(EPS, 1.0, np.ones(y.size)) + 1e-6)
    np.testing.assert_array_equal(est.predict(X), np.argmax(D, axis=1))
    with pytest.raises(ValueError, match='multiclass="ovo" or decision_function_shape'):
        HSSSVC(options=HSSSVCOptions(multiclass="ovr"), decision_function_shape="ovo").fit(X, y)


def test_binary_unchanged_by_multiclass():
    X, y, _ = blobs(2, 2, 30)
    a = HSSSVC(gamma=0.5, tol=EPS).fit(X, y)
    b = HSSSVC(gamma=0.5, tol=EPS,
               options=HSSSVCOptions(multiclass="ovr"), decision_function_shape="ovo").fit(X, y)
    assert a.decision_function(X).shape == (X.shape[0],)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_threads_change_no_answer():
    """The pool of pairs gives the serial answer, exactly."""
    X, y, _ = blobs(9, 5, 20)
    est = HSSSVC(gamma=0.5, tol=1e-6)
    base = est._make_backend(X, [est.C], purpose="fit").inner
    Y = -np.ones((y.size, 5))
    Y[np.arange(y.size), y] = 1
    out = []
    for n_jobs in (1, 2):
        b = PairwiseBackend(base, n_jobs=n_jobs)
        prepared = b.prepare(X, Y)
        sol = b.path(prepared, Y, [1.0])
        out.append(b.model(prepared, sol).decision(X))
    np.testing.assert_array_equal(out[0], out[1])


def test_fit_path_pickle_and_cv():
    X, y, _ = blobs(4, 3, 25)
    Cs = [0.3, 3.0]
    models = HSSSVC(gamma=0.5, tol=EPS).fit_path(X, y, Cs)
    for m, C in zip(models, Cs):
        ref = SVC(C=C, gamma=0.5, tol=EPS).fit(X, y)
        assert_same_as_svc(m, ref, X, X, y, C)
    m = pickle.loads(pickle.dumps(models[0]))
    np.testing.assert_array_equal(m.dual_coef_, models[0].dual_coef_)
    np.testing.assert_array_equal(m.decision_function(X), models[0].decision_function(X))
    # the fold scorer votes: the CV accuracies are those of one-vs-one fits on the folds
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    cv = HSSSVCCV(Cs=Cs, gamma=0.5, tol=EPS, cv=folds).fit(X, y)
    for s, (tr, te) in enumerate(folds):
        for c, C in enumerate(Cs):
            acc = HSSSVC(C=C, gamma=0.5, tol=EPS).fit(X[tr], y[tr]).score(X[te], y[te])
            assert cv.cv_results_[f"split{s}_test_score"][c] == pytest.approx(acc)


@pytest.mark.parametrize("scoring, n_jobs", [(None, None), (None, 1), ("balanced_accuracy", 2)])
def test_param_grid_equals_grid_search_cv(scoring, n_jobs):
    """HSSSVCCV(param_grid=...) is GridSearchCV(HSSSVC(), param_grid) on the same folds:
    the candidates in its order, its scores, its ranks and its best_params_."""
    from sklearn.model_selection import GridSearchCV
    X, y, _ = blobs(6, 3, 20, spread=2.0)
    grid = [{"C": [0.1, 1.0, 10.0], "gamma": [0.2, "scale"]}, {"C": [2.0]}]
    folds = list(StratifiedKFold(3, shuffle=True, random_state=1).split(X, y))
    ours = HSSSVCCV(param_grid=grid, scoring=scoring, n_jobs=n_jobs, gamma=0.5, tol=EPS,
                    cv=folds).fit(X, y)
    ref = GridSearchCV(HSSSVC(gamma=0.5, tol=EPS), grid, scoring=scoring, cv=folds).fit(X, y)
    assert ours.cv_results_["params"] == ref.cv_results_["params"]
    for key in ["mean_test_score", "std_test_score", "rank_test_score"] + \
            [f"split{s}_test_score" for s in range(3)]:
        np.testing.assert_allclose(ours.cv_results_[key], ref.cv_results_[key],
                                   rtol=0, atol=1e-12, err_msg=key)
    assert list(ours.cv_results_["param_C"]) == list(ref.cv_results_["param_C"])
    assert set(ref.cv_results_) <= set(ours.cv_results_)
    assert ours.best_params_ == ref.best_params_ and ours.best_index_ == ref.best_index_
    assert ours.best_score_ == pytest.approx(ref.best_score_)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


def test_param_grid_errors():
    X, y, _ = blobs(6, 3, 10)
    with pytest.raises(ValueError, match="not parameters of HSSSVC"):
        HSSSVCCV(param_grid={"C": [1.0], "Cs": [2]}).fit(X, y)
    with pytest.raises(ValueError, match="with param_grid give the widths in it"):
        HSSSVCCV(param_grid={"C": [1.0]}, gamma=[0.1, 1.0]).fit(X, y)
    with pytest.raises(ValueError):  # a bad value is refused before any work
        HSSSVCCV(param_grid={"C": [-1.0]}).fit(X, y)


def test_cs_spelling_with_scoring_scores_as_the_fold_scorer():
    """The old Cs / width spelling still searches (width, C) in its order; with a scoring
    its fits are fit_path's, whose accuracy is the fold scorer's."""
    X, y, _ = blobs(8, 3, 20, spread=2.0)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=2).split(X, y))
    kw = dict(Cs=[0.3, 3.0], gamma=[0.2, 1.0], tol=EPS, cv=folds)
    a = HSSSVCCV(**kw).fit(X, y)
    b = HSSSVCCV(scoring="accuracy", **kw).fit(X, y)
    assert a.cv_results_["params"] == b.cv_results_["params"]
    assert [p["gamma"] for p in a.cv_results_["params"]] == [0.2, 0.2, 1.0, 1.0]
    for s in range(3):
        np.testing.assert_allclose(a.cv_results_[f"split{s}_test_score"],
                                   b.cv_results_[f"split{s}_test_score"], atol=1e-12)
    assert a.best_params_ == b.best_params_


def test_time_budget_is_shared_by_the_pairs(monkeypatch):
    """ExactSVC's max_time bounds the whole fit: each of the P pairs gets workers / P of it."""
    from hsskern.solvers.paths.exact_path import ExactBackend
    seen = []
    original = ExactBackend.path

    def recording(self, *args, **kwargs):
        seen.append((self.settings.max_time, self.settings.started))
        return original(self, *args, **kwargs)
    monkeypatch.setattr(ExactBackend, "path", recording)
    X, y, _ = blobs(12, 4, 15)
    est = ExactSVC(gamma=0.5, max_time=60.0, options=ExactSVCOptions(validation_fraction=0.0))
    backend = est._make_backend(X, [est.C], purpose="fit")
    Y = -np.ones((y.size, 4))
    Y[np.arange(y.size), y] = 1
    for n_jobs in (1, 2):
        seen.clear()
        inner = backend.inner
        b = PairwiseBackend(replace(inner, settings=inner.settings.replace(started=None)),
                            n_jobs=n_jobs)
        b.path(b.prepare(X, Y), Y, [1.0])
        assert seen == [(pytest.approx(60.0 * n_jobs / 6), None)] * 6
    # a budget counted from the fit's start: the pairs share what is left of it
    seen.clear()
    started = backend.inner.settings.replace(started=time.perf_counter() - 30.0)
    b = PairwiseBackend(replace(backend.inner, settings=started), n_jobs=2)
    b.path(b.prepare(X, Y), Y, [1.0])
    assert all(t == pytest.approx(30.0 * 2 / 6, abs=0.5) and s is None for t, s in seen)


def test_a_failing_pair_raises_its_error():
    X, y, _ = blobs(13, 4, 10)
    with pytest.raises(ValueError, match="needs solve_exact=True"):
        HSSSVC(options=HSSSVCOptions(start="decomposition", solve_exact=False)).fit(X, y)
