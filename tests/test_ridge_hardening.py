"""Kernel ridge at the edges scikit-learn's KernelRidge takes: tiny and zero alpha, duplicated
rows, sample weights, one alpha per target (issue 59)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, KFold

from hsskern import HSSKernelRidge, HSSKernelRidgeCV, RidgeOptions


@pytest.fixture(autouse=True)
def _one_blas_thread():
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


def _problem(seed, n, d, duplicates):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if duplicates:  # two thirds of the rows repeat others exactly
        X = np.vstack([X[: n // 3], X[rng.integers(0, n // 3, n - n // 3)]])
        X = X[rng.permutation(n)]
    y = np.sin(X).sum(axis=1) + 0.1 * rng.normal(size=n)
    return X, y, rng.normal(size=(50, d))


def _residual(X, y, c, alpha, gamma):
    K = rbf_kernel(X, gamma=gamma)
    return np.linalg.norm(K @ c + alpha * c - y) / np.linalg.norm(y)


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(20, 300), d=st.integers(1, 4),
       log_alpha=st.floats(-12, 2), duplicates=st.booleans(),
       gamma=st.sampled_from([0.1, 0.5, 2.0]))
def test_exact_solver_is_kernel_ridge_or_refuses(seed, n, d, log_alpha, duplicates, gamma):
    # CG on the exact kernel, the dense route where it stops short: never an unconverged fit
    X, y, Xt = _problem(seed, n, d, duplicates)
    alpha = 10.0 ** log_alpha
    ref = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the indefinite first factor; KernelRidge's lstsq
        ref.fit(X, y)
        try:
            model = HSSKernelRidge(alpha, gamma=gamma, solver="exact", max_iter=200,
                                   random_state=0).fit(X, y)
        except ValueError as exc:
            assert "did not converge" in str(exc) and "condition" in str(exc)
            return
    ours = _residual(X, y, model.dual_coef_, alpha, gamma)
    theirs = _residual(X, y, ref.dual_coef_, alpha, gamma)
    assert ours <= max(1e-6, 10 * theirs)
    if alpha >= 1e-6:
        assert _rel(model.predict(Xt), ref.predict(Xt)) <= 1e-6


def test_exact_solver_at_tiny_alpha_takes_the_dense_route():
    # the issue's case: 300 points in 3-d, gamma 0.5, CG stops at max_iter
    X, y, Xt = _problem(0, 300, 3, False)
    for alpha in (1e-10, 1e-6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model = HSSKernelRidge(alpha, gamma=0.5, solver="exact", random_state=0).fit(X, y)
        ref = KernelRidge(alpha=alpha, kernel="rbf", gamma=0.5).fit(X, y)
        assert _residual(X, y, model.dual_coef_, alpha, 0.5) <= 1e-6
        # at alpha = 1e-10 the condition number passes 1e10: both answers are rounding's
        assert _rel(model.predict(Xt), ref.predict(Xt)) <= (1e-6 if alpha >= 1e-6 else 1e-4)
        assert model.fit_time_["dense"] > 0  # the route taken


def test_alpha_zero_as_kernel_ridge():
    X, y, Xt = _problem(1, 80, 2, False)
    ref = KernelRidge(alpha=0.0, kernel="rbf", gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(X, y)
        model = HSSKernelRidge(0.0, gamma=0.5, solver="exact").fit(X, y)
    assert _residual(X, y, model.dual_coef_, 0.0, 0.5) <= max(
        1e-6, 10 * _residual(X, y, ref.dual_coef_, 0.0, 0.5))
    with pytest.raises(ValueError, match="alpha=0 is solved by solver='exact' only"):
        HSSKernelRidge(0.0, gamma=0.5).fit(X, y)


def test_one_alpha_per_target():
    X, y, Xt = _problem(2, 120, 3, False)
    Y = np.column_stack([y, np.cos(X[:, 0]), y ** 2])
    alphas = np.array([1e-2, 1.0, 1e-2])
    ref = KernelRidge(alpha=alphas, kernel="rbf", gamma=0.5).fit(X, Y)
    model = HSSKernelRidge(alphas, gamma=0.5, solver="exact").fit(X, Y)
    assert _rel(model.predict(Xt), ref.predict(Xt)) <= 1e-6
    assert model.dual_coef_.shape == ref.dual_coef_.shape
    with pytest.raises(ValueError, match="one per target"):
        HSSKernelRidge([1.0, 2.0], gamma=0.5).fit(X, Y)


@pytest.mark.parametrize("solver", ["direct", "exact"])
def test_sample_weight_as_kernel_ridge(solver):
    X, y, Xt = _problem(3, 150, 3, True)
    w = np.random.default_rng(3).uniform(0, 3, size=150)
    w[:10] = 0.0
    ref = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.5).fit(X, y, sample_weight=w)
    model = HSSKernelRidge(0.1, gamma=0.5, solver=solver).fit(X, y, sample_weight=w)
    assert _rel(model.predict(Xt), ref.predict(Xt)) <= 1e-8
    np.testing.assert_allclose(model.dual_coef_, ref.dual_coef_, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="dense_max_n"):
        HSSKernelRidge(0.1, gamma=0.5, options=RidgeOptions(dense_max_n=100)).fit(
            X, y, sample_weight=w)


@pytest.mark.parametrize("cv", [None, 3])
def test_cv_sample_weight_as_grid_search(cv):
    # folds train on their rows' weights and weigh their test scores, GridSearchCV's routing
    X, y, _ = _problem(4, 90, 2, False)
    w = np.random.default_rng(4).uniform(0.1, 3, size=90)
    alphas = [1e-2, 1e-1, 1.0]
    splits = list(KFold(3).split(X)) if cv else [(np.arange(90), np.arange(90))]
    model = HSSKernelRidgeCV(alphas=alphas, gamma=0.5, cv=splits if cv else None,
                             solver="exact").fit(X, y, sample_weight=w)
    if cv:
        ref = GridSearchCV(KernelRidge(kernel="rbf", gamma=0.5), {"alpha": alphas}, cv=splits,
                           scoring="neg_mean_squared_error")
        ref.set_params(estimator__kernel="rbf")
        ref.fit(X, y, sample_weight=w)
        np.testing.assert_allclose(model.cv_results_["mean_test_score"],
                                   ref.cv_results_["mean_test_score"], rtol=1e-6)
    else:  # brute-force weighted leave-one-out
        scores = []
        for a in alphas:
            err = []
            for i in range(90):
                keep = np.arange(90) != i
                f = KernelRidge(alpha=a, kernel="rbf", gamma=0.5).fit(
                    X[keep], y[keep], sample_weight=w[keep]).predict(X[i:i + 1])
                err.append((y[i] - f[0]) ** 2)
            scores.append(-np.average(err, weights=w))
        np.testing.assert_allclose(model.cv_results_["mean_test_score"], scores, rtol=1e-6)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 3),
       gamma=st.sampled_from([0.1, 0.5, 2.0]), mode=st.sampled_from(["rand", "one"]))
def test_direct_solver_on_duplicates_is_close_or_says_how_far(seed, d, gamma, mode):
    # 300 points, 200 of them duplicates, alpha 0.01 (the issue's case): the in-sample
    # predictions are within the measured residual of KernelRidge's, and a residual above
    # options.residual_warning is named in a warning
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(100, d))
    extra = X[rng.integers(0, 100, 200)] if mode == "rand" else np.repeat(X[:1], 200, 0)
    X = np.vstack([X, extra])
    y = np.sin(X).sum(axis=1) + 0.1 * rng.normal(size=300)
    ref = KernelRidge(alpha=0.01, kernel="rbf", gamma=gamma).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = HSSKernelRidge(0.01, gamma=gamma, random_state=0).fit(X, y)
        except ValueError as exc:  # an indefinite approximation: refused with the numbers
            assert "not positive definite" in str(exc)
            return
    resid = _residual(X, y, model.dual_coef_, 0.01, gamma)
    said = [str(w.message) for w in caught if "measured on 256 rows" in str(w.message)]
    # the sample is all 256 of 300 rows' worth: within a factor of the full residual
    if resid > 0.1:
        assert said and float(said[0].split(" is ")[1].split()[0]) > 0.05
    if not said:
        assert resid <= 0.1
    err = np.linalg.norm(model.predict(X) - ref.predict(X)) / np.linalg.norm(y)
    assert err <= resid * (1 + 1e-6) + 1e-12  # ||K (c - c*)|| <= ||r||
