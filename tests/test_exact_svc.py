"""ExactSVC: the exact SVM from a subsample's exact solution, anytime (hsskern.solvers.paths.exact_path)."""
import pickle

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from sklearn.datasets import make_blobs, make_classification
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from hsskern import ExactSVC, HSSSVC, kernel_operator, HSSSVCOptions, ExactSVCOptions
from hsskern.solvers.engines.admm import kkt_violation


def _data(n, seed, d=4):
    X, y = make_classification(n, d, n_informative=3, n_redundant=0, random_state=seed,
                               class_sep=0.8, flip_y=0.05)
    return X, y


def _true_gap(X, y, m, C, h):
    """The KKT gap of a fitted binary model's alpha over the training points (dense kernel)."""
    yy = np.where(y == m.classes_[1], 1.0, -1.0)
    coef = np.zeros(len(y))
    coef[m.support_] = m.dual_coef_[0]
    train = np.setdiff1d(np.arange(len(y)), m.validation_indices_)
    Xt, yt, ct = X[train], yy[train], coef[train]
    alpha = yt * ct
    assert np.all(alpha >= -1e-12) and np.all(alpha <= C * (1 + 1e-12))
    assert abs(yt @ alpha) <= 1e-9 * C * len(yt)
    f = kernel_operator(Xt, "gaussian", h=h).to_dense() @ ct
    return kkt_violation(f[:, None], yt[:, None], alpha[:, None], C)[0]


# a fixed width (h=1): gamma="scale" follows X's variance, which the sample-weight
# checks' repeated rows change
@parametrize_with_checks([ExactSVC(h=1.0, tol=1e-10,
                                   options=ExactSVCOptions(validation_fraction=0.0, subsample=20))])
def test_sklearn_checks(estimator, check):
    check(estimator)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.0), sub=st.sampled_from([10, 60, 400]))
def test_any_subsample_start_reaches_svc(seed, logC, sub):
    # no budget: whatever the subsample (10 points, a fifth, all), LIBSVM's exact SVM
    X, y = _data(300, seed)
    C, h = 10.0 ** logC, 1.0
    m = ExactSVC(C=C, h=h,
                 options=ExactSVCOptions(subsample=sub, validation_fraction=0.0),
                 random_state=seed).fit(X, y)
    assert m.converged_.all() and m.selected_ == ("exact",) and m.gap_[0] < 1e-3
    assert _true_gap(X, y, m, C, h) < 1e-3 * (1 + 1e-6)
    ref = SVC(C=C, gamma=0.5, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X),
                               atol=5e-2 * max(1.0, C ** 0.5))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(20, 300), logC=st.floats(-1.0, 2.0),
       k=st.sampled_from([2, 3]))
@example(seed=135, n=160, logC=0.0, k=3)
def test_without_max_time_it_trains_on_every_point_and_is_svc(seed, n, logC, k):
    # no time budget, no validation set: SVC's solution on all points, whatever the
    # random_state (two fits without one agree), to LIBSVM's tolerance
    X, y = make_blobs(n, centers=k, n_features=3, random_state=seed, cluster_std=3.0)
    C = 10.0 ** logC
    a = ExactSVC(C=C, gamma=0.5, options=ExactSVCOptions(subsample=max(10, n // 3))).fit(X, y)
    b = ExactSVC(C=C, gamma=0.5, options=ExactSVCOptions(subsample=max(10, n // 3))).fit(X, y)
    ref = SVC(C=C, gamma=0.5, tol=1e-6).fit(X, y)
    assert a.n_validation_ == 0 and a.converged_.all()
    tol = 5e-2 * max(1.0, C ** 0.5)
    # the pairs' decision values (continuous; the "ovr" shape counts votes, and a point on
    # a pair's boundary flips one by 1 within LIBSVM's tolerance: seed 135, n 160, k 3)
    for m in (a, b, ref):
        m.set_params(decision_function_shape="ovo")
    np.testing.assert_allclose(a.decision_function(X), ref.decision_function(X), atol=tol)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=tol)
    assert np.mean(a.predict(X) == ref.predict(X)) >= 0.98


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(0.0, 2.5), frac=st.sampled_from([0.0, 0.1]))
def test_a_budget_too_short_gives_a_valid_model_and_its_true_gap(seed, logC, frac):
    # max_time=0: the decomposition runs no round; the model is valid (a feasible point) and
    # its reported gap is the gap recomputed here from the dense kernel
    X, y = _data(400, seed)
    C, h = 10.0 ** logC, 0.7
    m = ExactSVC(C=C, h=h,
                 options=ExactSVCOptions(subsample=40, validation_fraction=frac), max_time=0.0,
                 random_state=seed).fit(X, y)
    assert m.fit_status_ == int(not m.converged_[0])
    true = _true_gap(X, y, m, C, h)
    np.testing.assert_allclose(m.gap_[0], true, rtol=1e-8, atol=1e-10 * C)
    assert m.converged_[0] == (true < 1e-3)
    assert np.isin(m.predict(X), np.unique(y)).all()


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(0.0, 2.0))
def test_a_stopped_fit_is_never_worse_than_its_subsample_on_validation(seed, logC):
    X, y = _data(600, seed)
    C, h = 10.0 ** logC, 0.7
    m = ExactSVC(C=C, h=h,
                 options=ExactSVCOptions(subsample=50, validation_fraction=0.25), max_time=0.0,
                 random_state=seed).fit(X, y)
    val, sub = m.validation_indices_, m.subsample_indices_
    assert np.intersect1d(val, sub).size == 0 and val.size == 150 and sub.size == 50
    # the subsample's model, fitted independently with the same options and seed
    s = HSSSVC(C=C, h=h, options=HSSSVCOptions(solve_exact=True), random_state=seed).fit(X[sub], y[sub])
    acc = np.mean(m.predict(X[val]) == y[val])
    assert acc >= np.mean(s.predict(X[val]) == y[val])
    # no round ran: the subsample's model or the next stage's start (its solution, padded)
    assert m.selected_[0] == "subsample" or m.selected_[0].endswith(", round 0")
    assert not np.isin(val, m.support_).any()  # validation points are never trained on


def test_the_budget_keeps_room_for_the_certifying_product(monkeypatch):
    # the rounds stop once the time left would not hold the product that certifies the
    # point to be returned; with that product estimated at 1e9 s, no round of a stage ever
    # runs, whatever the budget, and the answer is the subsample's model or a stage's start,
    # its reported gap still the true one
    from hsskern.solvers.paths import exact_path
    X, y = _data(400, 3)
    C, h = 3.0, 0.7
    kw = dict(C=C, h=h, options=ExactSVCOptions(subsample=40, validation_fraction=0.2),
              random_state=0)
    free = ExactSVC(max_time=1e6, **kw).fit(X, y)
    assert free.converged_[0] and free.selected_ == ("exact",)
    monkeypatch.setattr(exact_path._Rate, "seconds_for", lambda self, e: 1e9 * (e > 0))
    m = ExactSVC(max_time=1e6, **kw).fit(X, y)
    assert not m.converged_[0]
    assert m.selected_[0] == "subsample" or m.selected_[0].endswith(", round 0")
    assert all(row[1] == m.stages_[1] for row in m.history_[0])  # no stage after the first
    np.testing.assert_allclose(m.gap_[0], _true_gap(X, y, m, C, h), rtol=1e-8, atol=1e-10 * C)


def test_the_reserve_is_the_certifying_product_of_the_point_to_be_returned():
    from hsskern.solvers.paths.exact_path import _Rate, _ValidationTracker
    rate = _Rate()
    rate.add(2 * 10 ** 6, 1.0)  # 2e6 entries a second
    assert _Rate().seconds_for(10 ** 9) is None  # nothing measured: no estimate
    rng = np.random.default_rng(0)
    Xtr, Xval = rng.normal(size=(30, 2)), rng.normal(size=(10, 2))
    yval = np.where(rng.random(10) < 0.5, 1.0, -1.0)
    from hsskern.kernels import make_kernel
    kern = make_kernel("gaussian", h=1.0)

    def tracker(rival, final):
        t = _ValidationTracker(Xtr, Xval, kern, yval, None, rate=rate, deadline=None,
                               n_certify=1000, rival=rival, final_stage=final)
        t.best = {"score": 0.5, "alpha": np.r_[np.ones(7), np.zeros(23)]}
        return t
    # the rival's product in kernel entries; ours: n_certify rows (those outside the stage)
    # per support vector
    assert tracker((0.6, 40000), False).reserve() == pytest.approx(40000 / 2e6)  # rival wins
    assert tracker((0.6, 40000), True).reserve() == pytest.approx(40000 / 2e6)
    assert tracker((0.5, 40000), False).reserve() == pytest.approx(1000 * 7 / 2e6)  # tie: ours
    assert tracker((0.4, 40000), True).reserve() == 0.0  # the last stage's gap is known


def test_stages_grow_to_all_points_and_the_history_records_every_round():
    X, y = _data(1500, 1)
    opts = ExactSVCOptions(subsample=50, max_chunk=64, validation_fraction=0.1)
    # without max_time nothing is held out: the stages grow to all 1,500 points
    m = ExactSVC(C=10.0, h=0.5, options=opts, random_state=0).fit(X, y)
    assert m.stages_ == (50, 100, 200, 400, 800, 1500) and m.n_validation_ == 0
    assert m.validation_indices_.size == 0 and m.converged_[0]
    # under a time budget, a tenth is held out to choose among the rounds' points
    m = ExactSVC(C=10.0, h=0.5, options=opts, max_time=1e6, random_state=0).fit(X, y)
    assert m.stages_ == (50, 100, 200, 400, 800, 1350)  # doubling to the 1,350 training points
    hist = np.array(m.history_[0])  # (seconds, stage size, gap, validation accuracy)
    assert m.converged_[0] and set(hist[:, 1]) == set(m.stages_[1:])
    assert np.all(np.diff(hist[:, 0]) >= 0) and np.all(np.diff(hist[:, 1]) >= 0)
    assert hist[-1, 1] == 1350 and hist[-1, 2] == m.gap_[0]
    assert np.all((hist[:, 3] >= 0) & (hist[:, 3] <= 1))


def test_path_multiclass_and_pickle():
    X, y = make_blobs(300, centers=3, n_features=3, random_state=0, cluster_std=2.5)
    est = ExactSVC(h=1.0,
                   options=ExactSVCOptions(subsample=60, validation_fraction=0.0, multiclass="ovr"),
                   random_state=0)
    models = est.fit_path(X, y, [0.1, 1.0, 10.0])
    for m in models:
        assert m.converged_.all() and m.gap_.shape == (3,)
        for k in range(3):
            ref = SVC(C=m.C, gamma=0.5, tol=1e-6).fit(X, np.where(y == k, 1, -1))
            np.testing.assert_allclose(m.decision_function(X)[:, k], ref.decision_function(X),
                                       atol=5e-2 * max(1.0, m.C ** 0.5))
    b = pickle.loads(pickle.dumps(models[1]))
    np.testing.assert_array_equal(b.decision_function(X), models[1].decision_function(X))
    a2 = ExactSVC(h=1.0, C=1.0, options=ExactSVCOptions(subsample=60), random_state=3).fit(X, y)
    b2 = ExactSVC(h=1.0, C=1.0, options=ExactSVCOptions(subsample=60), random_state=3).fit(X, y)
    np.testing.assert_array_equal(a2.decision_function(X), b2.decision_function(X))


def test_verbose_reports_each_round(capsys):
    X, y = _data(400, 2)
    ExactSVC(C=10.0, h=0.5,
             options=ExactSVCOptions(subsample=40, max_chunk=32),
             verbose=1, random_state=0).fit(X, y)
    out = capsys.readouterr().out
    assert "subsample of 40" in out and "round 1: gap" in out and "class 0: exact" in out


@pytest.mark.parametrize("kw, match", [({"options__subsample": 1}, "subsample"),
                                       ({"max_time": -1.0}, "max_time"),
                                       ({"options__validation_fraction": 0.5},
                                        "validation_fraction"),
                                       ({"C": 0.0}, "C")])
def test_bad_parameters_are_clear_errors(kw, match):
    X, y = _data(100, 0)
    with pytest.raises(ValueError, match=match):
        ExactSVC().set_params(**kw).fit(X, y)


def test_probabilities_and_sparse_input_through_the_shared_base():
    import scipy.sparse as sp
    X, y = _data(300, 4)
    m = ExactSVC(C=1.0, h=1.0,
                 options=ExactSVCOptions(subsample=40), probability=True, random_state=0).fit(X, y)
    P = m.predict_proba(X)
    assert P.shape == (300, 2) and np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(1), 1.0)
    a = ExactSVC(C=1.0, h=1.0,
                 options=ExactSVCOptions(subsample=40, validation_fraction=0.0), random_state=0)
    d_dense = a.fit(X, y).decision_function(X)
    d_sparse = a.fit(sp.csr_matrix(X), y).decision_function(sp.csr_matrix(X))
    np.testing.assert_allclose(d_sparse, d_dense, rtol=1e-9, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), weighted=st.booleans())
def test_hinge_bias_minimizes_the_hinge_loss(seed, n, weighted):
    from hsskern.solvers.paths.exact_path import hinge_bias
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    f = rng.normal(scale=2.0, size=n)
    w = rng.uniform(0, 3, n) if weighted else None
    c = np.ones(n) if w is None else w

    def loss(b):
        return c @ np.maximum(0, 1 - y * (f + b))

    b = hinge_bias(f, y, w)
    grid = np.concatenate([y - f, np.linspace(-10, 10, 201)])  # the kinks hold a minimizer
    assert loss(b) <= min(map(loss, grid)) + 1e-9


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1_000, 10 ** 6), frac=st.floats(0.1, 0.95), seconds=st.floats(0.01, 1e3),
       left=st.floats(-100.0, 1e4), extra=st.integers(1, 2 * 10 ** 6))
def test_budget_sizes_the_next_stage_to_end_in_the_time_left(n, frac, seconds, left, extra):
    # a stage from n0 to n points took `seconds`: the next is the largest whose modelled cost
    # kappa (n' - n) n' fits the planned share of `left`, between 1.05 n and the doubling;
    # none when not even 1.05 n fits
    from hsskern.solvers.paths.exact_path import ExactBackend
    backend = ExactBackend(kernel=None)
    n0, n_train = int(frac * n), n + extra
    sizes = backend._fitted_schedule(n, n0, seconds, left, n_train)
    kappa = seconds / ((n - n0) * n)
    cost = lambda m: kappa * (m - n) * m  # noqa: E731
    top, low = min(n_train, int(np.ceil(2 * n))), min(n_train, int(np.ceil(1.05 * n)))
    if cost(low) > 0.8 * left:
        assert sizes == []
        return
    assert sizes[-1] == n_train and all(a < b for a, b in zip(sizes, sizes[1:]))
    assert sizes[1:] == backend._schedule(sizes[0], n_train)[1:]  # then doubling
    nxt = sizes[0]
    assert low <= nxt <= top
    if low < nxt < top:  # sized by the time: the largest that fits
        assert cost(nxt) <= 0.8 * left * (1 + 1e-9)
        assert cost(nxt + 1) > 0.8 * left * (1 - 1e-9)
    if cost(top) <= 0.8 * left * (1 - 1e-9):  # time for the doubling: the plan unchanged
        assert sizes == backend._schedule(top, n_train)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(0, 60))
def test_the_certifying_product_skips_the_stage_points_it_knows(seed, m):
    # the gap of a stage's model over all points, with the stage's decision values given,
    # equals the gap from a product over every point
    from hsskern.solvers.paths.exact_path import _gap_of
    from hsskern.solvers.engines.exact import LocalProducts
    from hsskern.kernels import make_kernel
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    y = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    C = 2.0
    pts = rng.permutation(60)[:m]
    alpha = np.zeros(60)
    alpha[pts] = rng.uniform(0, C, m) * (rng.random(m) < 0.6)
    kern = make_kernel("gaussian", h=1.0)
    K = kernel_operator(X, "gaussian", h=1.0).to_dense()
    f_known = (K @ (y * alpha))[pts]
    full = _gap_of(LocalProducts(X, kern), y, alpha, C)
    part = _gap_of(LocalProducts(X, kern), y, alpha, C, (pts, f_known))
    assert part == pytest.approx(full, rel=1e-10, abs=1e-12)
