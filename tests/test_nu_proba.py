"""NuSVC(probability=True): Platt's sigmoids on held-out nu-SVC values, as the C-machines'.

Platt's internal folds are random, so nothing here is equal to scikit-learn's NuSVC; the
tests assert what the probabilities must be (distributions, monotone in the decision value,
consistent with the vote where the vote is clear, reproducible, picklable) and a loose
closeness to scikit-learn's on an easy problem, where both calibrate the same model.
"""
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError
from sklearn.svm import NuSVC as SkNuSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from hsskern import NuSVC
from hsskern.estimators.calibration import sigmoid_fit
from strategies import class_clusters

# hsskern's probability=True, deprecated with its probA_ / probB_ as scikit-learn 1.9's
# (tests/test_dropin.py checks the warnings), is what this file tests
pytestmark = [
    pytest.mark.filterwarnings("ignore:The `probability` parameter was deprecated:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Attribute `prob[AB]_` was deprecated:FutureWarning"),
]

SETTINGS = dict(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])




@settings(**SETTINGS)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(40, 90), d=st.integers(1, 4),
       k=st.integers(2, 4), spread=st.floats(0.5, 3.0), nu=st.floats(0.1, 0.6))
def test_probabilities_are_distributions_consistent_with_the_model(seed, n, d, k, spread, nu):
    X, y = class_clusters(seed, n, d, k, spread)
    try:  # a nu the classes admit, with a margin (NuSVC's own errors otherwise)
        NuSVC(nu=nu).fit(X, y)
    except ValueError:
        assume(False)
    clf = NuSVC(nu=nu, probability=True, random_state=0).fit(X, y)
    P = clf.predict_proba(X)
    assert P.shape == (n, k) and np.all(P >= 0) and np.all(P <= 1)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-10)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), P, rtol=1e-10, atol=1e-300)
    assert clf.probA_.shape == clf.probB_.shape == (k * (k - 1) // 2,)
    assert np.all(np.isfinite(clf.probA_)) and np.all(np.isfinite(clf.probB_))
    if k == 2:  # P(classes_[1]) is the sigmoid of the decision value: exactly its formula
        f = clf.decision_function(X)
        np.testing.assert_allclose(P[:, 1], 1 / (1 + np.exp(clf.probA_[0] * f
                                                            + clf.probB_[0])), rtol=1e-12)


def test_binary_probabilities_rise_with_the_decision_value_and_agree_with_predict():
    X, y = class_clusters(3, 300, 2, 2, 1.5)
    clf = NuSVC(nu=0.3, probability=True, random_state=0).fit(X, y)
    assert clf.probA_[0] < 0  # a larger decision value is more likely classes_[1]
    f = clf.decision_function(X)
    assert np.all(np.diff(clf.predict_proba(X)[np.argsort(f), 1]) >= 0)
    # argmax and the vote differ only between f = 0 and the sigmoid's midpoint
    mid = -clf.probB_[0] / clf.probA_[0]
    argmax = clf.classes_[np.argmax(clf.predict_proba(X), axis=1)]
    between = (np.minimum(0, mid) <= f) & (f <= np.maximum(0, mid))
    assert np.all(argmax[~between] == clf.predict(X)[~between])
    assert np.mean(argmax == clf.predict(X)) >= 0.95


def test_multiclass_argmax_mostly_agrees_with_the_vote():
    X, y = class_clusters(5, 400, 3, 4, 2.0)
    clf = NuSVC(nu=0.3, probability=True, random_state=0).fit(X, y)
    P = clf.predict_proba(X)
    assert np.mean(clf.classes_[np.argmax(P, axis=1)] == clf.predict(X)) >= 0.9
    # a point every pair of its class votes for gets that class's largest share, but for a
    # few near a boundary (the coupling weighs each pair's confidence, the vote counts)
    votes = clf.decision_function(X).round()
    clear = votes.max(axis=1) == 3
    assert clear.sum() > 100
    assert np.mean(np.argmax(P[clear], axis=1) == np.argmax(votes[clear], axis=1)) >= 0.98


def test_the_sigmoids_are_platts_fit_on_held_out_values():
    # the internal folds reproduced outside (stratified, shuffled with random_state): each
    # fold's NuSVC on the other points, its values on the fold, one Platt fit. A fixed gamma:
    # "scale" is the whole set's, which a fit on a fold's points would not see
    from sklearn.model_selection import StratifiedKFold
    X, y = class_clusters(11, 150, 2, 2, 2.0)
    kw = dict(nu=0.3, gamma=0.5)
    clf = NuSVC(probability=True, random_state=7, **kw).fit(X, y)
    f = np.empty(y.size)
    for train, test in StratifiedKFold(5, shuffle=True, random_state=7).split(X, y):
        f[test] = NuSVC(**kw).fit(X[train], y[train]).decision_function(X[test])
    A, B = sigmoid_fit(f, np.where(y == clf.classes_[1], 1.0, -1.0))
    np.testing.assert_allclose([clf.probA_[0], clf.probB_[0]], [A, B], rtol=1e-7)


def test_random_state_reproduces_and_pickling_keeps_the_probabilities():
    X, y = class_clusters(2, 120, 2, 3, 1.5)
    a = NuSVC(nu=0.3, probability=True, random_state=4).fit(X, y)
    b = NuSVC(nu=0.3, probability=True, random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.probA_, b.probA_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict_proba(X), a.predict_proba(X))
    np.testing.assert_array_equal(c.predict_log_proba(X), a.predict_log_proba(X))
    # other folds, another calibration of the same model
    d = NuSVC(nu=0.3, probability=True, random_state=5).fit(X, y)
    np.testing.assert_array_equal(d.predict(X), a.predict(X))
    assert not np.array_equal(d.probA_, a.probA_)


def test_without_probability_there_is_no_predict_proba():
    X, y = class_clusters(0, 60, 2, 2, 1.0)
    clf = NuSVC().fit(X, y)
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
    assert clf.probA_.size == clf.probB_.size == 0  # scikit-learn 1.9's: empty
    clf.set_params(probability=True)  # switched on after the fit: refit first
    with pytest.raises(NotFittedError, match="refit with probability=True"):
        clf.predict_proba(X)
    # a refit without it forgets the sigmoids of an earlier one
    clf.fit(X, y)
    assert hasattr(clf, "probA_")
    assert clf.set_params(probability=False).fit(X, y).probA_.size == 0  # refit: none


def test_a_nu_path_calibrates_every_nu_as_its_fit():
    # the path's warm starts reach each nu's solution to tol, not bitwise: the folds' and the
    # model's values within tol's effect, so the probabilities within a
    # hundredth (a thousandth on average). Overlapping classes (spread 0.75): with 1.5 one
    # pair's offset at nu = 0.35 is ill-determined (it moved by 1.7 between tol 1e-6 and
    # 1e-9), and the path and the fit landed apart by the machine's rounding
    X, y = class_clusters(8, 120, 2, 3, 0.75)
    nus = [0.2, 0.35, 0.5]
    est = NuSVC(probability=True, random_state=0, tol=1e-6)
    for m, nu in zip(est.fit_path(X, y, nus), nus):
        ref = NuSVC(nu=nu, probability=True, random_state=0, tol=1e-6).fit(X, y)
        diff = np.abs(m.predict_proba(X) - ref.predict_proba(X))
        assert diff.max() < 1e-2 and diff.mean() < 1e-3


def test_sample_weight_calibrates_by_the_points_weights():
    # integer weights are repeated points for the model; the folds differ, so the sigmoids
    # are close, not equal: the same model's probabilities within a few hundredths
    # (a fixed gamma: "scale" of the repeated points is another width)
    X, y = class_clusters(9, 120, 2, 2, 1.5)
    w = np.random.default_rng(0).integers(1, 3, size=y.size)
    kw = dict(nu=0.3, gamma=0.5, tol=1e-6, probability=True, random_state=0)
    a = NuSVC(**kw).fit(X, y, sample_weight=w)
    b = NuSVC(**kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-4)
    assert np.mean(np.abs(a.predict_proba(X) - b.predict_proba(X))) < 0.05


@pytest.mark.parametrize("k", [2, 3])
def test_close_to_sklearns_nusvc_on_an_easy_problem(k):
    # not equal: each draws its own internal folds; both calibrate the same model
    X, y = class_clusters(1, 300, 2, k, 2.0)
    ours = NuSVC(nu=0.3, probability=True, random_state=0).fit(X, y).predict_proba(X)
    ref = SkNuSVC(nu=0.3, probability=True, random_state=0).fit(X, y).predict_proba(X)
    assert np.mean(np.abs(ours - ref)) < 0.03
    assert np.mean(np.argmax(ours, axis=1) == np.argmax(ref, axis=1)) >= 0.97


def test_an_internal_fold_where_nu_is_infeasible_has_no_model(capsys):
    # 5 and 15 points, the first of weight 1.5: class 0 weighs 5.5 of 20.5, so nu <= 0.537
    # on the whole set; the stratified fold that holds that point out trains on 4 and 12,
    # where nu <= 0.5: that fold's points get the value 0, the others their fold's
    X = np.random.default_rng(0).normal(size=(20, 2)) + np.r_[np.zeros(5), np.ones(15)][:, None]
    y = np.r_[np.zeros(5, int), np.ones(15, int)]
    w = np.ones(20)
    w[0] = 1.5
    clf = NuSVC(nu=0.52, probability=True, random_state=0, verbose=1).fit(
        X, y, sample_weight=w)
    out = capsys.readouterr().out
    assert out.count("is infeasible there, held-out values 0") == 1
    assert "fold" in out and "nu > 0.5 is" in out
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.all(np.isfinite(clf.probA_))


# as HSSSVC(probability=True)'s: Platt's 0.5 point is not decision 0, and the internal folds
# see repeated rows as more points; the rest as NuSVC's own checks (tests/test_nu.py)
@parametrize_with_checks([NuSVC(probability=True, random_state=0)],
                         expected_failed_checks=lambda est: {
    "check_classifiers_train": "predict_proba's argmax may differ from predict (as SVC)",
    "check_sample_weight_equivalence_on_dense_data": "the internal folds see repeated rows",
    "check_sample_weight_equivalence_on_sparse_data": "the internal folds see repeated rows",
    "check_class_weight_classifiers": "its class weights make nu=0.5 infeasible (NuSVC's "
                                      "own check, tests/test_nu.py)"})
def test_sklearn_checks_with_probability(estimator, check):
    check(estimator)
