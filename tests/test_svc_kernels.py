"""SVC's dot-product kernels (poly, linear, sigmoid) on the SVC-like estimators: the exact
decomposition with SVC's parameter names and defaults, against scikit-learn's SVC."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st
from sklearn.metrics.pairwise import sigmoid_kernel
from sklearn.svm import SVC

from hsskern import ExactSVC, HSSSVC, HSSSVCOptions, ExactSVCOptions


def _problem(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    y[:2] = (-1, 1)  # both classes present
    return X, y


def _estimators(kernel, C, kw):
    return [HSSSVC(kernel=kernel, C=C, tol=1e-8, **kw),
            ExactSVC(kernel=kernel, C=C, tol=1e-8,
                     options=ExactSVCOptions(validation_fraction=0.0), **kw)]


def _assert_same_svm(got, D, yy, C):
    """Decision values of the same SVM as LIBSVM's. The intercept is unique only up to an
    interval when no support vector is free and the hinge's slope in b vanishes there (as
    many violators on each side): then any b of it is optimal, and LIBSVM takes its
    working set's midpoint. So the values agree, or differ by one constant shift at the
    same primal objective (the same w, so the same hinge sum)."""
    atol = 1e-3 * max(1.0, np.abs(D).max())
    shift = np.median(got - D)
    np.testing.assert_allclose(got - shift, D, rtol=0, atol=atol)
    if abs(shift) > atol:
        hinge = [C * np.maximum(0.0, 1.0 - yy * f).sum() for f in (got, D)]
        assert abs(hinge[0] - hinge[1]) <= 1e-4 * max(1.0, hinge[1]), (shift, hinge)


@given(seed=st.integers(0, 10**6), n=st.integers(20, 120), d=st.integers(1, 5),
       kernel=st.sampled_from(["poly", "linear"]), degree=st.integers(1, 4),
       coef0=st.floats(0.0, 1.0), gamma=st.one_of(st.floats(0.05, 1.0), st.just("scale")),
       logC=st.floats(-1.0, 1.0), sparse=st.booleans())
def test_poly_and_linear_decision_values_equal_svcs(seed, n, d, kernel, degree, coef0, gamma,
                                                    logC, sparse):
    # a convex dual: both solvers at a gap of 1e-8 reach the same solution, so decision values
    # agree to ~sqrt(gap) of their scale (measured: 1e-5 at worst)
    X, y = _problem(seed, n, d)
    kw = {} if kernel == "linear" else dict(degree=degree, coef0=coef0, gamma=gamma)
    C = 10.0 ** logC
    ref = SVC(kernel=kernel, C=C, tol=1e-8, **kw).fit(X, y)
    D = ref.decision_function(X)
    Xf = sp.csr_matrix(X) if sparse else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a slow convergence warning at tol=1e-8 is fine
        for est in _estimators(kernel, C, kw):
            got = est.fit(Xf, y).decision_function(Xf)
            _assert_same_svm(got, D, np.where(y == ref.classes_[1], 1.0, -1.0), C)


@given(seed=st.integers(0, 10**6), n=st.integers(20, 120), d=st.integers(1, 5),
       gamma=st.floats(0.01, 0.3), coef0=st.floats(-0.5, 0.5), logC=st.floats(-1.0, 1.0))
def test_sigmoid_solution_is_a_kkt_point_of_svcs_dual(seed, n, d, gamma, coef0, logC):
    # the sigmoid's Gram matrix is indefinite, so its dual has several KKT points and LIBSVM's
    # is the one its path reaches: what holds for any solver is stationarity at LIBSVM's gap
    X, y = _problem(seed, n, d)
    C, tol = 10.0 ** logC, 1e-6
    est = HSSSVC(kernel="sigmoid", gamma=gamma, coef0=coef0, C=C, tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    yy = np.where(y == est.classes_[1], 1.0, -1.0)
    alpha = np.zeros(n)
    alpha[est.support_] = np.abs(est.dual_coef_.ravel())
    assert np.all(alpha <= C * (1 + 1e-12)) and abs(yy @ alpha) <= 1e-8 * max(1.0, C * n)
    v = yy - sigmoid_kernel(X, X, gamma=gamma, coef0=coef0) @ (yy * alpha)  # -y * gradient
    up = ((yy > 0) & (alpha < C)) | ((yy < 0) & (alpha > 0))
    low = ((yy > 0) & (alpha > 0)) | ((yy < 0) & (alpha < C))
    gap = (v[up].max() if up.any() else -np.inf) - (v[low].min() if low.any() else np.inf)
    assert gap <= tol * 1.01 + 1e-12


def test_svc_kernel_defaults_and_gamma_scale_match_svc():
    X, y = _problem(3, 80, 3)
    X = 3.0 * X  # gamma="scale" differs from 1
    ref = SVC(kernel="poly").fit(X, y)  # SVC's defaults: degree 3, gamma "scale", coef0 0
    est = HSSSVC(kernel="poly", tol=1e-3).fit(X, y)
    assert est.get_params()["degree"] == 3 and est.get_params()["coef0"] == 0.0
    assert np.mean(est.predict(X) == ref.predict(X)) >= 0.97


@pytest.mark.parametrize("params, match", [
    (dict(kernel="poly", options=HSSSVCOptions(start="admm")), "exact decomposition"),
    (dict(kernel="sigmoid", options=HSSSVCOptions(solve_exact=False)), "exact decomposition"),
    (dict(kernel="poly", h=1.0), "takes gamma"),
    (dict(kernel="laplacian", gamma="scale"), "numeric h or gamma"),
    (dict(kernel="poly", degree=0), "degree"),
])
def test_bad_kernel_requests_name_what_to_change(params, match):
    X, y = _problem(0, 30, 2)
    with pytest.raises(ValueError, match=match):
        HSSSVC(**params).fit(X, y)


def _rbf(A, B):
    from sklearn.metrics.pairwise import rbf_kernel
    return rbf_kernel(A, B, gamma=0.5)


@given(seed=st.integers(0, 10**6), n=st.integers(10, 100), d=st.integers(1, 4),
       logC=st.floats(-1.0, 1.0), zero_weights=st.integers(0, 5))
def test_precomputed_and_callable_equal_the_kernel_by_name(seed, n, d, logC, zero_weights):
    # the same entries by three routes give the same solver the same problem; points of
    # weight 0 are dropped and the Gram's columns must still be the training points'
    X, y = _problem(seed, n, d)
    Xt = np.random.default_rng(seed + 1).normal(size=(15, d))
    w = np.ones(n)
    w[2:2 + zero_weights] = 0.0
    C = 10.0 ** logC
    named = HSSSVC(gamma=0.5, C=C, tol=1e-8).fit(X, y, sample_weight=w)
    ref = named.decision_function(Xt)
    pre = HSSSVC(kernel="precomputed", C=C, tol=1e-8).fit(_rbf(X, X), y, sample_weight=w)
    fun = ExactSVC(kernel=_rbf, C=C, tol=1e-8,
                   options=ExactSVCOptions(validation_fraction=0.0)).fit(
        X, y, sample_weight=w)
    # the routes differ (stored Gram, blocks of the callable, the compiled kernel): the same
    # dual solved to a gap of 1e-8 by each, so the decision values agree to ~1e-5
    atol = 1e-5 * max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(pre.decision_function(_rbf(Xt, X)), ref, rtol=0, atol=atol)
    np.testing.assert_allclose(fun.decision_function(Xt), ref, rtol=0, atol=atol)


def test_precomputed_model_pickles_and_predicts_identically():
    import pickle
    X, y = _problem(1, 60, 3)
    m = HSSSVC(kernel="precomputed").fit(_rbf(X, X), y)
    G = _rbf(X[:7] + 0.1, X)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).decision_function(G),
                                  m.decision_function(G))


@pytest.mark.parametrize("make, match", [
    (lambda X, y: HSSSVC(kernel="precomputed").fit(_rbf(X, X)[:, :10], y), "square"),
    (lambda X, y: HSSSVC(kernel="precomputed").fit(_rbf(X, X), y).predict(
        _rbf(X[:3], X)[:, :5]), "features"),
    (lambda X, y: HSSSVC(kernel="precomputed").fit(
        np.where(_rbf(X, X) > 0.9, np.inf, _rbf(X, X)), y), "infinity"),
    (lambda X, y: HSSSVC(kernel=lambda A, B: np.ones((len(A), 2))).fit(X, y), "shape"),
    (lambda X, y: HSSSVC(kernel=lambda A, B: np.full((len(A), len(B)), np.nan)).fit(X, y),
     "NaN"),
    (lambda X, y: HSSSVC(kernel="precomputed",
                         options=HSSSVCOptions(start="admm")).fit(_rbf(X, X), y),
     "exact decomposition"),
])
def test_bad_precomputed_and_callable_input_is_refused_clearly(make, match):
    X, y = _problem(2, 40, 2)
    with pytest.raises(ValueError, match=match):
        make(X, y)
