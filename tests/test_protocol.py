"""The path protocol and the shared estimator base: one contract on every backend."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_classification
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils.multiclass import check_classification_targets

from hsskern import (HSSSVCOptions, FPCClassifier, FPCClassifierCV, HSSSVC, HSSSVCCV, NystromSVC,
                     NystromSVCCV, SparseCholeskySVC)
from hsskern.estimators.base import _check_class_labels, labels_from_decision
from hsskern.solvers.paths.path import PathSolution, check_Cs

# small, fast settings of every estimator that has a C
WITH_C = [
    HSSSVC(options=HSSSVCOptions(approximation="exact"), h=1.0),
    HSSSVC(h=1.0, options=HSSSVCOptions(leaf_size=32), random_state=0),
    NystromSVC(h=1.0, n_components=30, random_state=0),
    SparseCholeskySVC(sigma=1.5),
]
CV = [
    HSSSVCCV(
        options=HSSSVCOptions(approximation="exact"),
        Cs=[0.1, 1.0], h=[0.7, 1.5], cv=3, random_state=0),
    NystromSVCCV(h=1.0, n_components=30, Cs=[0.1, 1.0], cv=3, random_state=0),
    FPCClassifierCV(degrees=[1, 2], cv=3, random_state=0),
]
ALL = WITH_C + [FPCClassifier(degree=2)] + CV


def _ids(ests):
    return [type(e).__name__ + ("-exact" if getattr(e, "approximation", "") == "exact" else "")
            for e in ests]


def _data(n=150, classes=2, seed=0):
    if classes == 2:
        X, y = make_classification(n, 4, n_informative=3, n_redundant=0, random_state=seed)
    else:
        X, y = make_blobs(n, n_features=3, centers=classes, cluster_std=2.0, random_state=seed)
    return X, np.array(["neg", "pos", "third", "fourth"])[y]


@pytest.mark.parametrize("est", WITH_C, ids=_ids(WITH_C))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_fit_path_contract(est, n_classes):
    """fit_path: fitted copies in increasing C whatever the order given, each equal to
    a model of its C; self left unfitted; the shared preparation counted once."""
    est = clone(est)
    X, y = _data(classes=n_classes)
    Cs = [10.0, 0.1, 1.0]
    models = est.fit_path(X, y, Cs)
    assert [m.C for m in models] == sorted(Cs)
    assert all(m is not est for m in models)
    assert not [k for k in vars(est) if k.endswith("_") or k == "_model"]
    for m in models:
        assert m.get_params() == {**est.get_params(), "C": m.C}
        assert m.decision_function(X).shape == ((len(X),) if n_classes == 2
                                                else (len(X), n_classes))
        np.testing.assert_array_equal(m.classes_, np.unique(y))
    prep = [k for k in models[0].fit_time_ if models[0].fit_time_[k] > 0
            and k in models[1].fit_time_ and models[1].fit_time_[k] == 0]
    assert prep, "the first model carries the preparation time, the others do not"


@pytest.mark.parametrize("est", WITH_C, ids=_ids(WITH_C))
def test_fit_path_validates_Cs_before_any_work(est):
    est = clone(est)
    X, y = _data()
    for bad in ([], 5, [1.0, -1.0], [np.nan], "1", [[1.0, 2.0]]):
        with pytest.raises(ValueError, match="C"):
            est.fit_path(X, y, bad)
    assert not hasattr(est, "classes_")


@pytest.mark.parametrize("est", ALL, ids=_ids(ALL))
def test_tie_rule_is_svcs_everywhere(est):
    """A decision of exactly 0 predicts classes_[0], as SVC, on every estimator."""
    X, y = _data()
    est = clone(est).fit(X, y)
    model = est.best_estimator_ if hasattr(est, "best_estimator_") else est

    class Zero:
        def decision(self, X):
            return np.zeros((1, len(X), 1))
    model._model = Zero()
    assert np.all(est.predict(X[:7]) == est.classes_[0])


def test_labels_from_decision():
    classes = np.array(["a", "b", "c"])
    np.testing.assert_array_equal(labels_from_decision(classes[:2], np.array([-1, 0, 1e-300])),
                                  ["a", "a", "b"])
    # one-vs-rest: the first largest score wins a tie
    np.testing.assert_array_equal(labels_from_decision(classes, np.array([[1, 1, 0],
                                                                          [0, 2, 2]])),
                                  ["a", "b"])


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    hnp.arrays(st.sampled_from([np.float64, np.float32]), st.integers(0, 6),
               elements=st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                                  st.integers(-3, 3).map(float), st.just(2.0 ** 40))),
    hnp.arrays(st.sampled_from([np.int8, np.int64, np.uint8, np.bool_]), st.integers(0, 6))))
def test_label_check_fast_path_agrees_with_sklearn(y):
    """The label check that skips type detection for integer-valued labels accepts and
    refuses exactly what scikit-learn's ``check_classification_targets`` does."""
    def outcome(check):
        try:
            check(y)
        except ValueError as exc:
            return type(exc)
        return None
    assert outcome(_check_class_labels) == outcome(check_classification_targets)


def test_default_options_are_built_once():
    a, b = HSSSVC(), HSSSVC(C=10.0)
    assert a._options() is b._options()
    assert a._options() == HSSSVCOptions()
    given_opts = HSSSVCOptions(leaf_size=32)
    assert HSSSVC(options=given_opts)._options() is given_opts


@pytest.mark.parametrize("est", ALL, ids=_ids(ALL))
def test_fit_starts_from_nothing(est):
    """A second fit on other data leaves exactly the attributes a fresh fit would."""
    X1, y1 = _data(classes=3, seed=1)
    X2, y2 = _data(n=120, classes=2, seed=2)
    X2 = X2[:, :3]
    a = clone(est)
    if hasattr(a, "fit_path"):
        a.fit_path(X1, y1, [0.1, 1.0])
    a.fit(X1, y1)
    if "refit" in a.get_params():
        a.set_params(refit=False)
    a.fit(X2, y2)
    fresh = clone(a).fit(X2, y2)
    fitted = lambda e: sorted(k for k in vars(e) if k.endswith("_"))  # noqa: E731
    assert fitted(a) == fitted(fresh)
    np.testing.assert_array_equal(a.classes_, fresh.classes_)
    if hasattr(a, "best_estimator_") or not hasattr(a, "cv_results_"):
        np.testing.assert_array_equal(a.predict(X2), fresh.predict(X2))


GRIDSEARCH_KEYS = {"params", "mean_test_score", "std_test_score", "rank_test_score",
                   "mean_fit_time", "std_fit_time", "split0_test_score", "split1_test_score",
                   "split2_test_score"}


@pytest.mark.parametrize("est", CV, ids=_ids(CV))
def test_cv_results_in_gridsearchcv_format(est):
    X, y = _data()
    est = clone(est).fit(X, y)
    res = est.cv_results_
    assert GRIDSEARCH_KEYS <= set(res)
    n = len(res["params"])
    for k in GRIDSEARCH_KEYS - {"params"}:
        assert res[k].shape == (n,), k
    for name in res["params"][0]:
        assert [p[name] for p in res["params"]] == list(res[f"param_{name}"])
    np.testing.assert_allclose(res["mean_test_score"],
                               np.mean([res[f"split{s}_test_score"] for s in range(3)], axis=0))
    # GridSearchCV's tie-break: the first of the best in grid order
    best = res["mean_test_score"].max()
    assert est.best_index_ == int(np.flatnonzero(res["mean_test_score"] == best)[0])
    assert res["rank_test_score"][est.best_index_] == 1
    assert est.best_params_ == res["params"][est.best_index_]
    assert est.best_score_ == best


def test_hss_cv_equals_gridsearchcv_of_exact_fits():
    """With the exact decomposition every C of the warm path is the exact SVM: the search
    scores what GridSearchCV's independent cold fits score, on the same splits."""
    X, y = make_classification(240, 4, n_informative=3, n_redundant=0, random_state=5,
                               flip_y=0.05)
    splits = list(KFold(3, shuffle=True, random_state=0).split(X, y))
    Cs, hs = [0.1, 1.0, 10.0], [0.7, 1.5]
    ours = HSSSVCCV(
        options=HSSSVCOptions(approximation="exact", solve_exact=True), Cs=Cs, h=hs, cv=splits).fit(X, y)
    ref = GridSearchCV(HSSSVC(
        options=HSSSVCOptions(approximation="exact", solve_exact=True)), {"h": hs, "C": Cs},
                       cv=splits).fit(X, y)
    mine = {(p["h"], p["C"]): s for p, s in zip(ours.cv_results_["params"],
                                                ours.cv_results_["mean_test_score"])}
    for p, s in zip(ref.cv_results_["params"], ref.cv_results_["mean_test_score"]):
        # a held-out point within the solvers' tolerance of the boundary may flip: 1 of 80
        assert abs(mine[p["h"], p["C"]] - s) <= 1 / 80 + 1e-12


def test_path_solution_is_immutable_and_pickles():
    sol = PathSolution(C=1.0, intercept=[0.5], n_iter=3, converged=True, gap=1e-4,
                       dual_coef=np.ones((4, 1)), timings={"admm": 1.0}, info={"x": 1})
    with pytest.raises(ValueError):
        sol.dual_coef[0, 0] = 2.0
    with pytest.raises(AttributeError):
        sol.C = 2.0
    with pytest.raises(TypeError):
        sol.timings["admm"] = 0.0
    back = pickle.loads(pickle.dumps(sol))
    np.testing.assert_array_equal(back.dual_coef, sol.dual_coef)
    assert back.info["x"] == 1 and back.n_iter.tolist() == [3]
    with pytest.raises(ValueError, match="exactly one"):
        PathSolution(C=1.0, intercept=[0.0], n_iter=1, converged=True, gap=0.0)


def test_check_Cs():
    np.testing.assert_array_equal(check_Cs([3.0, 1.0]), [1.0, 3.0])
    np.testing.assert_array_equal(check_Cs(2.5), [2.5])
    for bad in ([], 5, [0.0], [np.inf], None, "x", [[1.0]]):
        with pytest.raises(ValueError):
            check_Cs(bad)


def test_prepared_problems_pickle():
    # a prepared problem can be shipped (e.g. to a Dask worker) and solves the same
    from hsskern.kernels import make_kernel
    from hsskern.solvers.paths.hss_path import HSSBackend
    X, y = _data()
    Y = np.where(y == "pos", 1.0, -1.0)[:, None]
    backend = HSSBackend(make_kernel("gaussian", h=1.0),
                         HSSSVCOptions(start="admm", approximation="exact"))
    problem = backend.prepare(X, Y)
    back = pickle.loads(pickle.dumps(problem))
    assert dict(back.timings) == dict(problem.timings)
    a, b = backend.path(problem, Y, [1.0])[0], backend.path(back, Y, [1.0])[0]
    np.testing.assert_array_equal(a.dual_coef, b.dual_coef)


# ---- one base for classifiers and regressors: one splitter policy, one fold scorer ----

def test_one_splitter_policy_is_gridsearchcvs_and_a_float_is_a_hold_out():
    from sklearn.model_selection import (GroupKFold, ShuffleSplit, StratifiedKFold,
                                         StratifiedShuffleSplit)
    from hsskern.estimators.cv import make_splits
    from hsskern.estimators._splits import internal_folds
    X = np.random.default_rng(0).normal(size=(60, 2))
    y = np.repeat([0, 1, 2], 20)
    t = np.sin(X).sum(axis=1)

    def same(a, b):
        return all(np.array_equal(p, q) for (p, _), (q, _) in zip(a, b, strict=True))

    # an int (None: 5) is GridSearchCV's: unshuffled, whatever the random_state
    for rs in (None, 0, 1):
        assert same(make_splits(3, X, y, rs), StratifiedKFold(3).split(X, y))
        assert same(make_splits(3, X, t, rs, classifier=False), KFold(3).split(X))
    assert same(make_splits(None, X, y), StratifiedKFold(5).split(X, y))
    # a class with fewer members than folds: still StratifiedKFold, as GridSearchCV
    assert same(make_splits(3, X[:41], y[:41], 0), StratifiedKFold(3).split(X[:41], y[:41]))
    groups = np.arange(60) % 7
    assert same(make_splits(GroupKFold(3), X, y, groups=groups),
                GroupKFold(3).split(X, y, groups))
    # a float: one shuffled hold-out, stratified for a classifier
    assert same(make_splits(0.25, X, y, 0),
                StratifiedShuffleSplit(1, test_size=0.25, random_state=0).split(X, y))
    assert same(make_splits(0.25, X, t, 0, classifier=False),
                ShuffleSplit(1, test_size=0.25, random_state=0).split(X))
    # the calibration's internal folds stay shuffled with random_state (LIBSVM's)
    assert same(internal_folds(3, X, y, 0),
                StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    assert same(internal_folds(3, X[:41], y[:41], 0),
                KFold(3, shuffle=True, random_state=0).split(X[:41]))


def test_one_fold_scorer_scores_a_regressors_path_with_its_metric():
    from sklearn.metrics import r2_score
    from hsskern import HSSKernelRidge
    from hsskern.estimators.cv import FOLD_METRICS, score_fold
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 2))
    y = np.sin(X).sum(axis=1)
    tr, te = np.arange(90), np.arange(90, 120)
    alphas = np.array([0.1, 1.0])
    est = HSSKernelRidge(h=1.0, options=None, random_state=0)
    backend = est._make_backend(X, alphas, "search")
    out = {name: score_fold(backend, X, y[:, None], tr, te, alphas, FOLD_METRICS[name],
                            classifier=False) for name in ("neg_mean_squared_error", "r2")}
    # each value's score is its model's, fitted on the training rows alone
    for i, alpha in enumerate(alphas):
        pred = HSSKernelRidge(alpha=alpha, h=1.0, random_state=0).fit(X[tr], y[tr]).predict(X[te])
        np.testing.assert_allclose(out["neg_mean_squared_error"]["scores"][i],
                                   -np.mean((pred - y[te]) ** 2), rtol=1e-6)
        np.testing.assert_allclose(out["r2"]["scores"][i], r2_score(y[te], pred), rtol=1e-6)
    assert set(out["r2"]) == {"scores", "solve_time", "n_iter", "setup_time"}
