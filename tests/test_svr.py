"""epsilon-SVR on the HSS factor (hsskern.solvers.paths.svr_path, hsskern.estimators.svr): the ADMM,
the exact 2n-variable decomposition, the C path, and the estimator against scikit-learn's SVR."""
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold
from sklearn.svm import SVR
from sklearn.utils.estimator_checks import parametrize_with_checks

from hsskern import DenseCholeskyFactor, HSSSVR, HSSSVRCV, HSSSVROptions, kernel_operator
from hsskern.solvers import SVRBackend, hss_svr_path, svr_dual_admm
from hsskern.solvers.paths.svr_path import SVRADMMOptions
from hsskern.solvers.paths.hss_path import prepare_hss
from hsskern.kernels import make_kernel
from hsskern.solvers.engines.exact import solve_block
from hsskern.solvers.paths.svr_path import svr_variables
from hsskern.solvers.engines.interface import BlockEngine, DualProblem, DualStart
from hsskern.options import DecompositionOptions

TOL = 1e-3  # LIBSVM's default stopping gap, HSSSVR's default tol


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # small dense factorizations: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


def _data(seed, n=120, d=2, noise=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(2 * X).sum(axis=1) + noise * rng.normal(size=n)
    return X, y


def _kkt(Kd, y, beta, b, C, epsilon):
    """LIBSVM's gap of the 2n-variable SVR dual at beta = alpha - alpha*, computed here from
    the dense kernel, and the interval the intercept b must lie in; nothing from the solver
    but beta and b."""
    n = len(y)
    a = np.concatenate([np.maximum(beta, 0), np.maximum(-beta, 0)])
    yv = np.concatenate([np.ones(n), -np.ones(n)])
    p = np.concatenate([epsilon - y, epsilon + y])
    Q = np.block([[Kd, -Kd], [-Kd, Kd]])
    v = -yv * (Q @ a + p)  # -y G
    tiny = 1e-12 * C
    up = ((yv > 0) & (a < C - tiny)) | ((yv < 0) & (a > tiny))
    low = ((yv > 0) & (a > tiny)) | ((yv < 0) & (a < C - tiny))
    m, M = v[up].max(), v[low].min()
    return m - M, m, M


def _assert_exact_svr(model, X, y, h, epsilon, tol=TOL):
    """Feasible, LIBSVM's gap on the dense kernel below tol, the intercept where the KKT
    conditions put it, and SVR's decision values."""
    C = model.C
    beta = np.zeros(len(y))
    beta[model.support_] = model.dual_coef_[0]
    assert np.all(np.abs(beta) <= C * (1 + 1e-12))
    assert abs(beta.sum()) <= 1e-9 * C * len(y)
    Kd = kernel_operator(X, "gaussian", h=h).to_dense()
    gap, m, M = _kkt(Kd, y, beta, model.intercept_[0], C, epsilon)
    assert gap <= tol * (1 + 1e-6)
    assert m - tol <= model.intercept_[0] <= M + tol
    np.testing.assert_allclose(model.predict(X), Kd @ beta + model.intercept_[0],
                               atol=1e-9 * max(1.0, C))
    ref = SVR(C=C, gamma=1 / (2 * h * h), epsilon=epsilon, tol=1e-8).fit(X, y)
    # both at a gap <= tol: decision values move by ~tol times the conditioning, measured
    # 1-2 tol sqrt(C) on these problems
    np.testing.assert_allclose(model.predict(X), ref.predict(X),
                               atol=10 * tol * max(1.0, np.sqrt(C)))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(30, 160), d=st.integers(1, 3),
       logC=st.floats(-1.5, 1.5), h=st.sampled_from([0.5, 1.0, 3.0]),
       epsilon=st.sampled_from([0.0, 0.05, 0.2, 0.5]),
       approximation=st.sampled_from(["exact", "hss"]),
       start=st.sampled_from(["auto", "admm", "decomposition"]))
def test_every_C_of_a_path_is_libsvms_svr(seed, n, d, logC, h, epsilon, approximation, start):
    X, y = _data(seed, n, d)
    Cs = 10.0 ** (logC + np.array([0.0, 0.7, 1.4]))
    models = HSSSVR(h=h, epsilon=epsilon,
                    options=HSSSVROptions(approximation=approximation, start=start, leaf_size=16,
                                          rel_tol=1e-2),
                    random_state=0).fit_path(X, y, Cs)
    assert [m.C for m in models] == sorted(Cs)
    # "auto" solves the first C exactly from zero on these small n unless the dense ADMM is
    # asked for by name
    taken = start if start != "auto" else ("admm" if approximation == "exact" else
                                           "decomposition")
    assert models[0].hss_["start"] == taken
    assert np.isnan(models[0].beta_) == (taken == "decomposition")
    for m in models:
        assert m.fit_status_ == 0
        _assert_exact_svr(m, X, y, h, epsilon)


def test_fit_at_one_C_is_libsvms_svr_and_says_how_it_got_there():
    X, y = _data(3, n=200)
    m = HSSSVR(h=1.0, C=30.0, epsilon=0.1,
               options=HSSSVROptions(leaf_size=32), random_state=0).fit(X, y)
    _assert_exact_svr(m, X, y, 1.0, 0.1)
    assert m.n_iter_ >= 1 and m.gap_ < TOL
    assert m.n_support_[0] == m.support_.size == m.dual_coef_.shape[1]
    assert m.support_vectors_.shape == (m.support_.size, 2) and m.shape_fit_ == X.shape
    ref = SVR(C=30.0, gamma=0.5, epsilon=0.1).fit(X, y)
    # the support set is LIBSVM's up to points on the tube's edge
    assert abs(m.support_.size - ref.support_.size) <= 0.05 * ref.support_.size + 2


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 1.5),
       epsilon=st.sampled_from([0.0, 0.1, 0.3]))
@example(seed=248, logC=0.43456663505311965, epsilon=0.1)
def test_admm_alone_solves_the_svr_dual(seed, logC, epsilon):
    # the closed-form ADMM on the exact kernel's factor converges to the dual's optimum: the
    # KKT gap of its iterate, measured independently on the dense kernel, goes below 1e-4.
    # Its tail can be long (seed 248, C = 2.72: 35,050 iterations, no rebalancing triggered)
    X, y = _data(seed, n=80)
    C = 10.0 ** logC
    Kd = kernel_operator(X, "gaussian", h=1.0).to_dense()
    res = svr_dual_admm(DenseCholeskyFactor(Kd, 1.0), Kd, y, C, epsilon,
                        refactor=lambda r: DenseCholeskyFactor(Kd, r),
                        options=SVRADMMOptions(max_iter=100_000, kkt_tol=1e-4))
    assert res.converged
    beta = res.dual_coef
    assert np.all(np.abs(beta) <= C) and abs(beta.sum()) <= 1e-6 * C * len(y)
    gap, m, M = _kkt(Kd, y, beta, res.bias, C, epsilon)
    assert gap <= 1e-4 * (1 + 1e-6)
    assert m - 1e-4 <= res.bias <= M + 1e-4


def test_the_decomposition_reaches_the_optimum_from_any_start():
    # solve_block on the 2n-variable form from a random feasible-made start, working sets of
    # 8 variables: the gap on the dense kernel below tol, the objective at LIBSVM's
    X, y = _data(11, n=100)
    C, epsilon = 5.0, 0.1
    K = kernel_operator(X, "gaussian", h=1.0)
    Kd = K.to_dense()
    yv, p, index = svr_variables(y, epsilon)
    rng = np.random.default_rng(0)
    engine = BlockEngine(DecompositionOptions(max_ws=8, max_chunk=8, max_rounds=100_000))
    r = engine.solve(DualProblem(K, yv, p=p, index=index), C,
                     DualStart(rng.uniform(0, C, 2 * len(y))))
    assert r.converged and r.gap < TOL
    beta = r.dual_coef
    np.testing.assert_allclose(beta, r.alpha[:100] - r.alpha[100:], atol=1e-15 * C)
    np.testing.assert_allclose(r.decision, Kd @ beta + r.bias, atol=1e-9 * C)
    gap, m, M = _kkt(Kd, y, beta, r.bias, C, epsilon)
    assert gap <= TOL * (1 + 1e-6)
    ref = SVR(C=C, gamma=0.5, epsilon=epsilon, tol=1e-8).fit(X, y)
    rb = np.zeros(len(y))
    rb[ref.support_] = ref.dual_coef_[0]

    def obj(b):
        return 0.5 * b @ Kd @ b - y @ b + epsilon * np.abs(b).sum()
    assert obj(rb) - 1e-9 <= obj(beta) <= obj(rb) + TOL * np.abs(rb).sum()


def test_the_classifier_is_the_default_linear_term_bit_for_bit():
    # p = -e and the identity index are the classifier: the same alphas to the last bit
    # (without shrinking, which the indexed form does not do)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=150) > 0, 1.0, -1.0)
    K = kernel_operator(X, "gaussian", h=1.0)
    plain = solve_block(K, y, 3.0,
                         options=DecompositionOptions(max_ws=20, max_chunk=20, shrinking=False))
    general = BlockEngine(DecompositionOptions(max_ws=20, max_chunk=20)).solve(
        DualProblem(K, y, p=-np.ones(150), index=np.arange(150)), 3.0)
    np.testing.assert_array_equal(plain.alpha, general.alpha)
    np.testing.assert_array_equal(plain.dual_coef, general.dual_coef)
    assert plain.rounds == general.rounds and plain.smo_iters == general.smo_iters
    np.testing.assert_allclose(general.bias, plain.bias, rtol=0, atol=1e-13)


def test_the_path_continues_without_the_admm_and_with_exact_decision_values():
    # after the first C, each C starts from the previous exact solution scaled (no ADMM), and
    # the scale minimises the dual along that ray (no smaller objective at nearby scales)
    X, y = _data(5, n=150)
    be = SVRBackend(make_kernel("gaussian", h=1.0),
                    HSSSVROptions(start="admm", approximation="exact"), epsilon=0.1)
    prob = be.prepare(X)
    sols = be.path(prob, y[:, None], [0.1, 1.0, 10.0, 100.0])
    assert sols[0].n_iter[0] > 0 and all(s.n_iter[0] == 0 for s in sols[1:])
    Kd = prob.K.to_dense()
    yv, p, _ = svr_variables(y, 0.1)
    for prev, s in zip(sols, sols[1:]):
        rr = prev.info["exact"]
        scale = s.info["scale"]
        assert 0 <= scale <= s.C / prev.C

        def obj(t):
            a = t * rr.alpha
            b = a[:150] - a[150:]
            return 0.5 * b @ Kd @ b + p @ a
        assert obj(scale) <= min(obj(max(0.0, scale - 0.05)),
                                 obj(min(s.C / prev.C, scale + 0.05))) + 1e-12
        assert s.converged[0] and s.gap[0] < TOL


def test_epsilon_zero_and_a_tube_wider_than_the_data():
    X, y = _data(8, n=100)
    m = HSSSVR(h=1.0, C=3.0, epsilon=0.0, options=HSSSVROptions(approximation="exact")).fit(X, y)
    _assert_exact_svr(m, X, y, 1.0, 0.0)
    # every residual fits in the tube: no support vector, the prediction is LIBSVM's midpoint
    wide = 0.6 * (y.max() - y.min())
    m = HSSSVR(h=1.0, C=3.0, epsilon=wide, options=HSSSVROptions(approximation="exact")).fit(X, y)
    ref = SVR(C=3.0, gamma=0.5, epsilon=wide).fit(X, y)
    assert m.support_.size == 0 == ref.support_.size
    np.testing.assert_allclose(m.predict(X), 0.5 * (y.max() + y.min()), atol=1e-12)
    np.testing.assert_allclose(m.predict(X), ref.predict(X), atol=1e-12)


def test_the_decomposition_start_needs_refine():
    X, y = _data(9, n=120)
    with pytest.raises(ValueError, match="needs solve_exact"):
        HSSSVR(options=HSSSVROptions(start="decomposition", solve_exact=False)).fit(X, y)
    # "auto" without solve_exact takes the ADMM
    assert HSSSVR(
        options=HSSSVROptions(solve_exact=False, admm_max_iter=500)).fit(X, y).hss_["start"] == "admm"


def test_refine_false_keeps_the_admm_solution_and_warns_when_short():
    X, y = _data(9, n=120)
    m = HSSSVR(h=1.0, C=1.0,
               options=HSSSVROptions(solve_exact=False, approximation="exact",
                                     admm_max_iter=2000), tol=1e-3).fit(X, y)
    _assert_exact_svr(m, X, y, 1.0, 0.1)
    with pytest.warns(ConvergenceWarning, match="did not reach tol"):
        m = HSSSVR(h=1.0, C=100.0,
                   options=HSSSVROptions(solve_exact=False, adaptive_beta=False,
                                         approximation="exact", admm_max_iter=2)).fit(X, y)
    assert m.fit_status_ == 1


def test_the_hss_prepared_problem_is_the_classifiers():
    # one preparation serves classification and regression: the same factor and compression
    X, y = _data(10, n=200)
    prob = prepare_hss(X, make_kernel("gaussian", h=1.0),
                       hss_options=HSSSVR(
                           options=HSSSVROptions(leaf_size=32))._make_backend(X, [1.0], "fit").hss_options)
    sols = hss_svr_path(prob, y, [1.0, 10.0], 0.1)
    for s in sols:
        Kd = prob.K.to_dense()
        gap, _, _ = _kkt(Kd, y, s.dual_coef[:, 0], s.intercept[0], s.C, 0.1)
        assert gap <= TOL * (1 + 1e-6)


@pytest.mark.parametrize("params, match", [
    ({"C": 0.0}, "C"), ({"C": -1.0}, "C"), ({"epsilon": -0.1}, "epsilon"),
    ({"tol": 0.0}, "tol"), ({"options__solve_exact": "sometimes"}, "solve_exact")])
def test_bad_parameters_are_refused_before_any_work(params, match):
    X, y = _data(0, n=30)
    with pytest.raises(ValueError, match=match):
        HSSSVR().set_params(**params).fit(X, y)


def test_bad_data_is_refused_clearly():
    X, y = _data(0, n=30)
    Xn = X.copy()
    Xn[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HSSSVR().fit(Xn, y)
    yn = y.copy()
    yn[4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HSSSVR().fit(X, yn)
    with pytest.raises(ValueError, match="Cs"):
        HSSSVR().fit_path(X, y, [1.0, 0.0])
    with pytest.raises(ValueError, match="Cs"):
        HSSSVR().fit_path(X, y, [np.nan])
    with pytest.raises(ValueError, match="epsilon"):
        hss_svr_path(prepare_hss(X, make_kernel("gaussian", h=1.0), approximation="exact"),
                     y, [1.0], epsilon=-1.0)
    with pytest.raises(ValueError, match="one target"):
        hss_svr_path(prepare_hss(X, make_kernel("gaussian", h=1.0), approximation="exact"),
                     np.column_stack([y, y]), [1.0])
    with pytest.raises(ValueError):
        HSSSVR().fit(X, np.column_stack([y, y]))


def test_a_fit_at_random_state_none_reproduces():
    # scikit-learn's SVR has no draws; ours (the randomized compression) take a fixed seed
    X, y = _data(4, n=300)
    a, b = (HSSSVR(h=1.0, C=30.0, options=HSSSVROptions(leaf_size=32, start="admm")).fit(X, y)
            for _ in range(2))
    assert a.route_ == "HSS + ADMM start"
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_pickle_predicts_identically():
    X, y = _data(2, n=150)
    m = HSSSVR(h=1.0, C=5.0, options=HSSSVROptions(leaf_size=32), random_state=0).fit(X, y)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.predict(X), m2.predict(X))


def test_fit_path_returns_models_in_increasing_C_and_leaves_self_unfitted():
    X, y = _data(1, n=100)
    est = HSSSVR(h=1.0, options=HSSSVROptions(approximation="exact"))
    models = est.fit_path(X, y, [10.0, 0.1, 1.0])
    assert [m.C for m in models] == [0.1, 1.0, 10.0]
    assert not hasattr(est, "dual_coef_") and est.C == 1.0
    assert models[0].fit_time_["factor"] > 0 and models[1].fit_time_["factor"] == 0


def test_cv_scores_each_fold_as_a_separate_fit_would():
    X, y = _data(12, n=150)
    splits = list(KFold(3, shuffle=True, random_state=0).split(X))
    Cs = [0.1, 1.0, 10.0]
    cv = HSSSVRCV(Cs=Cs, h=1.0, cv=splits, options=HSSSVROptions(approximation="exact")).fit(X, y)
    for i, C in enumerate(Cs):
        # the path's solution and a fit's are both within 10 tol sqrt(C) of the exact one
        delta = 20 * TOL * max(1.0, np.sqrt(C))
        for s, (tr, te) in enumerate(splits):
            resid = HSSSVR(h=1.0, C=C,
                           options=HSSSVROptions(approximation="exact")).fit(X[tr], y[tr]).predict(
                X[te]) - y[te]
            score = cv.cv_results_[f"split{s}_test_score"][i]
            assert abs(score + np.mean(resid ** 2)) <= 2 * delta * (np.abs(resid).max() + delta)
    mean = cv.cv_results_["mean_test_score"]
    assert cv.best_index_ == int(np.argmax(mean)) and cv.C_ == Cs[cv.best_index_]
    assert cv.best_estimator_.C == cv.C_
    np.testing.assert_array_equal(cv.predict(X), cv.best_estimator_.predict(X))


# HSSSVR takes sample_weight (SVR's): the sample-weight checks compare a weighted fit with
# repeated rows at rtol 1e-7, so the two fits stop at a KKT gap of 1e-10 with a fixed width
# (gamma="scale" follows X's variance, which repeated rows change)
@parametrize_with_checks([HSSSVR(h=1.0, tol=1e-10, options=HSSSVROptions(leaf_size=16)),
                          HSSSVR(h=1.0, tol=1e-10, epsilon=0.0,
                                 options=HSSSVROptions(approximation="exact")),
                          HSSSVRCV(Cs=[0.1, 10.0], options=HSSSVROptions(leaf_size=16))])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.mark.parametrize("gamma", ["scale", "auto", 0.3])
def test_svr_spellings_and_sparse_input_give_svrs_model(gamma):
    """kernel="rbf" with SVR's gamma spellings is SVR's kernel; CSR input is the dense model."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) * [1.0, 3.0, 0.5]
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=200)
    est = HSSSVR(kernel="rbf", gamma=gamma, C=2.0,
                 options=HSSSVROptions(approximation="exact"), tol=1e-6)
    ours = est.fit(X, y).predict(X)
    ref = SVR(kernel="rbf", gamma=gamma, C=2.0, tol=1e-6).fit(X, y).predict(X)
    np.testing.assert_allclose(ours, ref, atol=1e-4)
    np.testing.assert_allclose(clone(est).fit(sp.csr_matrix(X), y).predict(sp.csc_matrix(X)),
                               ours, rtol=1e-12, atol=1e-12)


def test_the_svr_admm_class_is_the_one_call_form():
    """SVRDualADMM(...).solve() with SVRADMMOptions gives svr_dual_admm's iterates bit for
    bit, with and without a warm start."""
    from hsskern.factors import DenseCholeskyFactor
    from hsskern.solvers.paths.svr_path import SVRADMMOptions, SVRDualADMM, svr_dual_admm
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    K = kernel_operator(X, "gaussian", h=1.0).to_dense()
    refactor = lambda b: DenseCholeskyFactor(K, b)  # noqa: E731
    opts = SVRADMMOptions(max_iter=150, kkt_tol=1e-4, kkt_every=5)
    ref = svr_dual_admm(DenseCholeskyFactor(K, 1.0), K, y, 10.0, 0.05, refactor=refactor,
                        options=SVRADMMOptions(max_iter=150, kkt_tol=1e-4, kkt_every=5))
    res = SVRDualADMM(DenseCholeskyFactor(K, 1.0), K, y, 10.0, 0.05, refactor=refactor,
                      options=opts).solve()
    for name in ("dual_coef", "bias", "n_iter", "converged", "gap", "beta",
                 "primal_residuals", "dual_residuals"):
        np.testing.assert_array_equal(getattr(res, name), getattr(ref, name))
    warm = svr_dual_admm(DenseCholeskyFactor(K, 1.0), K, y, 30.0, 0.05, warm_start=ref.state,
                         options=opts.replace(max_iter=40))
    again = SVRDualADMM(DenseCholeskyFactor(K, 1.0), K, y, 30.0, 0.05,
                        options=opts.__class__(max_iter=40, kkt_tol=1e-4, kkt_every=5)
                        ).solve(ref.state)
    np.testing.assert_array_equal(warm.dual_coef, again.dual_coef)
    assert warm.n_iter == again.n_iter <= 40
