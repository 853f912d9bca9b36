"""The ``*CV`` estimators are ``GridSearchCV`` on the same folds: its splitter policy (an int
is unshuffled (Stratified)KFold, 5 by default), its routing of ``sample_weight`` (training
rows and, when the scorer takes it, the test rows' score) and ``groups`` (to the splitter),
its multi-metric ``scoring`` with ``refit="name"``, and its ``cv_results_`` keys."""
import warnings

import numpy as np
import pytest
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, GroupKFold, StratifiedKFold

from hsskern import (HSSKernelRidge, HSSKernelRidgeCV, HSSSVC, HSSSVCCV, HSSSVR, HSSSVRCV,
                     NystromSVCCV, FPCClassifierCV)

GRID = {"C": [0.1, 1.0, 10.0], "gamma": [0.5, 2.0]}


def _problem(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (np.hypot(*X.T) + 0.3 * rng.normal(size=n) < 1.1).astype(int)
    return X, y, rng.uniform(0.1, 3.0, size=n), rng.integers(0, 7, size=n)


def _assert_same_results(ours, ref):
    """Every key of GridSearchCV's cv_results_ is ours; its scores and ranks equal."""
    assert set(ref.cv_results_) <= set(ours.cv_results_)
    for key, value in ref.cv_results_.items():
        if "_test_" in key:
            np.testing.assert_array_equal(ours.cv_results_[key], value, err_msg=key)
    assert ours.cv_results_["params"] == ref.cv_results_["params"]
    assert ours.best_params_ == ref.best_params_
    assert ours.best_index_ == ref.best_index_
    assert ours.n_splits_ == ref.n_splits_


def test_an_int_cv_is_gridsearchcvs_folds_without_a_random_state_twice():
    X, y, _, _ = _problem()
    for _ in range(2):  # unshuffled: the same folds, so the same answer, every time
        ours = HSSSVCCV(param_grid=GRID, cv=3).fit(X, y)
        ref = GridSearchCV(HSSSVC(), GRID, cv=3).fit(X, y)
        np.testing.assert_array_equal(ours.cv_results_["mean_test_score"],
                                      ref.cv_results_["mean_test_score"])
        assert ours.best_params_ == ref.best_params_


def test_the_default_cv_is_five_stratified_folds():
    X, y, _, _ = _problem()
    for cls in (HSSSVCCV, HSSSVRCV, NystromSVCCV, FPCClassifierCV):
        assert cls().get_params()["cv"] == 5
    first = HSSSVCCV(Cs=[0.1, 1.0, 10.0], gamma=0.5).fit(X, y)
    again = HSSSVCCV(Cs=[0.1, 1.0, 10.0], gamma=0.5).fit(X, y)
    assert first.n_splits_ == 5
    for key in ("mean_test_score", "split0_test_score", "split4_test_score"):
        np.testing.assert_array_equal(first.cv_results_[key], again.cv_results_[key])
    ref = GridSearchCV(HSSSVC(gamma=0.5), {"C": [0.1, 1.0, 10.0]}).fit(X, y)
    np.testing.assert_array_equal(first.cv_results_["mean_test_score"],
                                  ref.cv_results_["mean_test_score"])


def test_sample_weight_weighs_the_scores_as_gridsearchcv():
    X, y, w, _ = _problem()
    ours = HSSSVCCV(param_grid=GRID, cv=3).fit(X, y, sample_weight=w)
    ref = GridSearchCV(HSSSVC(), GRID, cv=3).fit(X, y, sample_weight=w)
    _assert_same_results(ours, ref)
    unweighted = GridSearchCV(HSSSVC(), GRID, cv=3).fit(X, y)
    # the weights change the scores (the test could not pass by ignoring them)
    assert not np.array_equal(ours.cv_results_["split0_test_score"],
                              unweighted.cv_results_["split0_test_score"])
    # the C grid's one-product fold scorer weighs them the same way
    cs = HSSSVCCV(Cs=GRID["C"], gamma=0.5, cv=3).fit(X, y, sample_weight=w)
    by_c = GridSearchCV(HSSSVC(gamma=0.5), {"C": GRID["C"]}, cv=3).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(cs.cv_results_["mean_test_score"],
                               by_c.cv_results_["mean_test_score"], atol=1e-12)


def test_groups_reach_the_splitter():
    X, y, w, groups = _problem()
    ours = HSSSVCCV(param_grid=GRID, cv=GroupKFold(3)).fit(X, y, sample_weight=w,
                                                            groups=groups)
    ref = GridSearchCV(HSSSVC(), GRID, cv=GroupKFold(3)).fit(X, y, sample_weight=w,
                                                            groups=groups)
    _assert_same_results(ours, ref)
    # each fold holds out whole groups
    cs = HSSSVCCV(Cs=[1.0], gamma=0.5, cv=GroupKFold(3)).fit(X, y, groups=groups)
    by_c = GridSearchCV(HSSSVC(gamma=0.5), {"C": [1.0]}, cv=GroupKFold(3)).fit(
        X, y, groups=groups)
    np.testing.assert_allclose(cs.cv_results_["mean_test_score"],
                               by_c.cv_results_["mean_test_score"], atol=1e-12)


@pytest.mark.parametrize("refit", ["balanced", "accuracy"])
def test_several_metrics_and_refit_by_name(refit):
    X, y, w, _ = _problem()
    scoring = {"accuracy": "accuracy", "balanced": "balanced_accuracy"}
    ours = HSSSVCCV(param_grid=GRID, cv=3, scoring=scoring, refit=refit).fit(
        X, y, sample_weight=w)
    ref = GridSearchCV(HSSSVC(), GRID, cv=3, scoring=scoring, refit=refit).fit(
        X, y, sample_weight=w)
    _assert_same_results(ours, ref)
    assert "mean_test_balanced" in ours.cv_results_ and "mean_test_score" not in ours.cv_results_
    assert ours.best_score_ == ref.best_score_
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    # a list of names, as GridSearchCV takes it
    names = HSSSVCCV(param_grid=GRID, cv=3, scoring=["accuracy", "f1"],
                     refit="f1").fit(X, y)
    assert {"mean_test_accuracy", "rank_test_f1"} <= set(names.cv_results_)


def test_refit_false_or_callable_with_several_metrics_as_gridsearchcv():
    X, y, _, _ = _problem()
    scoring = ["accuracy", "balanced_accuracy"]
    with pytest.raises(ValueError, match="refit must name"):
        HSSSVCCV(param_grid=GRID, cv=3, scoring=scoring).fit(X, y)
    none = HSSSVCCV(param_grid=GRID, cv=3, scoring=scoring, refit=False).fit(X, y)
    assert "mean_test_accuracy" in none.cv_results_
    assert not hasattr(none, "best_index_") and not hasattr(none, "best_estimator_")

    def last_best(results):
        ranks = results["rank_test_accuracy"]
        return int(np.flatnonzero(ranks == ranks.min())[-1])
    ours = HSSSVCCV(param_grid=GRID, cv=3, scoring=scoring, refit=last_best).fit(X, y)
    ref = GridSearchCV(HSSSVC(), GRID, cv=3, scoring=scoring, refit=last_best).fit(X, y)
    assert ours.best_index_ == ref.best_index_ and ours.best_params_ == ref.best_params_
    assert not hasattr(ours, "best_score_")


def test_a_scorer_without_sample_weight_is_called_unweighted_with_gridsearchcvs_warning():
    X, y, w, _ = _problem()
    scorer = make_scorer(lambda t, p: float(np.mean(t == p)))  # takes no sample_weight
    with pytest.warns(UserWarning, match="does not support sample_weight"):
        ours = HSSSVCCV(param_grid=GRID, cv=3, scoring=scorer).fit(X, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref = GridSearchCV(HSSSVC(), GRID, cv=3, scoring=scorer).fit(X, y, sample_weight=w)
    _assert_same_results(ours, ref)


def test_a_float_cv_is_one_seeded_hold_out():
    X, y, _, _ = _problem()
    a = HSSSVCCV(Cs=[1.0, 10.0], gamma=0.5, cv=0.25, random_state=3).fit(X, y)
    b = HSSSVCCV(Cs=[1.0, 10.0], gamma=0.5, cv=0.25, random_state=3).fit(X, y)
    assert a.n_splits_ == 1
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                  b.cv_results_["mean_test_score"])


def test_regressors_take_kfold_and_groups_as_gridsearchcv():
    X, _, _, groups = _problem(120, seed=1)
    t = np.sin(X).sum(axis=1)
    for cv, kw in ((3, {}), (GroupKFold(3), {"groups": groups})):
        ours = HSSKernelRidgeCV(alphas=[0.1, 1.0], gamma=[0.5], cv=cv).fit(X, t, **kw)
        ref = GridSearchCV(HSSKernelRidge(), {"gamma": [0.5], "alpha": [0.1, 1.0]}, cv=cv,
                           scoring="neg_mean_squared_error").fit(X, t, **kw)
        np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                                   ref.cv_results_["mean_test_score"], rtol=1e-3)
    ours = HSSSVRCV(Cs=[1.0, 10.0], gamma=[0.5], cv=3).fit(X, t)
    ref = GridSearchCV(HSSSVR(), {"gamma": [0.5], "C": [1.0, 10.0]}, cv=3,
                       scoring="neg_mean_squared_error").fit(X, t)
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               ref.cv_results_["mean_test_score"], rtol=1e-2)


def test_a_classifier_search_is_stratified_kfold_unshuffled():
    from hsskern.estimators.cv import make_splits
    X, y, _, _ = _problem()
    ours = make_splits(4, X, y, random_state=7)
    for (a, b), (c, d) in zip(ours, StratifiedKFold(4).split(X, y), strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
