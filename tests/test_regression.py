"""Kernel ridge and Gaussian-process regression on the HSS factor, against scikit-learn's
dense KernelRidge and GaussianProcessRegressor (and brute-force leave-one-out)."""
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from hsskern import (GPOptions, HSSGaussianProcessRegressor, HSSKernelRidge, HSSKernelRidgeCV,
                     MemoryBudgetError, NotPositiveDefiniteError, RidgeOptions, kernel_operator)
from hsskern.kernels import make_kernel
from hsskern.options import HSSOptions
from hsskern.solvers.paths.gp import noise_search, profile_log_marginal_likelihood
from hsskern.solvers.paths.hss_path import prepare_hss
from hsskern.factors import LowRankShiftFactor
from hsskern.lowrank import nystrom_on_pivots, rp_cholesky
from hsskern.solvers.paths.ridge_path import prepare_nystrom, ridge_path

#: ||K - H||_F / ||K||_F <= C_TOL * max(rel_tol, abs_tol) with max_rank unbounded (test_hss)
C_TOL = 10.0
UNBOUNDED = 10**6


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # small dense factorizations: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


@st.composite
def regression_sets(draw, n_min=20, n_max=300, d_max=4):
    """Points N(0, scale^2 I) with a smooth target plus noise; width relative to the spread."""
    n = draw(st.integers(n_min, n_max))
    d = draw(st.integers(1, d_max))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([1e-2, 1.0, 30.0]))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    k = draw(st.sampled_from([1, 1, 3]))
    Y = np.sin(X / scale @ rng.normal(size=(d, k))) + 0.1 * rng.normal(size=(n, k))
    h = draw(st.sampled_from([0.3, 1.0, 3.0])) * scale * math.sqrt(d)
    Xt = rng.normal(size=(40, d)) * scale
    return X, (Y[:, 0] if k == 1 else Y), Xt, h


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b)


# -- kernel ridge ------------------------------------------------------------------------------

@settings(max_examples=16)
@given(data=regression_sets(), log_alpha=st.floats(-3, 1),
       approximation=st.sampled_from(["hss", "exact", "nystrom"]),
       rank=st.sampled_from([1, 10, 100]))
def test_krr_exact_solver_equals_sklearn_kernel_ridge(data, log_alpha, approximation, rank):
    # CG on the exact kernel to relative residual 1e-10: the exact ridge solution whatever
    # the (default, loose) compression, even below its indefinite floor, and whatever the
    # Nystrom preconditioner's rank
    X, y, Xt, h = data
    alpha = 10.0 ** log_alpha
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # an indefinite first factor, retried
        model = HSSKernelRidge(alpha, h=h, solver="exact",
                               options=RidgeOptions(leaf_size=32, approximation=approximation,
                                                    n_components=rank),
                               random_state=0).fit(X, y)
    ref = KernelRidge(alpha=alpha, kernel="rbf", gamma=1.0 / (2.0 * h * h)).fit(X, y)
    assert model.predict(Xt).shape == ref.predict(Xt).shape
    assert _rel(model.predict(Xt), ref.predict(Xt)) <= 1e-6
    assert _rel(model.predict(X), ref.predict(X)) <= 1e-6
    assert np.all(model.residual_ <= 1e-10)
    assert model.dual_coef_.shape == ref.dual_coef_.shape
    np.testing.assert_array_equal(model.X_fit_, X)


@pytest.mark.parametrize("scale", [1.0, 10.0])
def test_exact_solver_refines_in_mixed_precision(monkeypatch, scale):
    # The iterations run on the single-precision product, the reliable updates' residuals and
    # the stopping test in double: KernelRidge's answer with a double residual <= tol, from a
    # few double products. A single-precision operator too wrong to halve the residual between
    # two updates (here 10 K) hands over to CG in double: the same answer.
    from scipy.sparse.linalg import LinearOperator
    from hsskern.kernels.operator import KernelOperator
    single, double = [0], [0]
    to_single, to_double = KernelOperator.single_precision, KernelOperator._matmat

    def counted_single(self):
        K32 = to_single(self)

        def matvec(v):
            single[0] += 1
            return scale * K32.matvec(v)
        return LinearOperator(self.shape, matvec=matvec, dtype=np.float64)

    def counted_double(self, V):
        double[0] += 1
        return to_double(self, V)
    monkeypatch.setattr(KernelOperator, "single_precision", counted_single)
    monkeypatch.setattr(KernelOperator, "_matmat", counted_double)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 4))
    y = np.sin(X.sum(1)) + 0.1 * rng.normal(size=800)
    model = HSSKernelRidge(1e-3, h=1.0, solver="exact",
                           options=RidgeOptions(approximation="nystrom", n_components=40),
                           random_state=0).fit(X, y)
    ref = KernelRidge(alpha=1e-3, kernel="rbf", gamma=0.5).fit(X, y)
    assert _rel(model.predict(X), ref.predict(X)) <= 1e-6
    assert model.residual_ <= 1e-10
    if scale == 1.0:  # the updates' residuals and the final check: no double iterations
        assert single[0] >= 100 and double[0] <= 15 < model.n_iter_
    else:  # the first update finds the residual not halved: double CG from there
        assert single[0] >= 1 and double[0] >= 100


@settings(max_examples=10)
@given(data=regression_sets(n_min=60, n_max=400), tol=st.sampled_from([1e-4, 1e-6, 1e-8]),
       log_alpha=st.floats(-2, 1))
def test_krr_direct_error_bounded_by_compression_tolerance(data, tol, log_alpha):
    # The direct solve is exact for H: (K + alpha I)(c - c*) = (K - H) c, so
    #   ||c - c*|| <= ||K - H||_2 ||c|| / alpha <= C_TOL tol ||K||_F ||c|| / alpha.
    X, y, _, h = data
    alpha = 10.0 ** log_alpha
    Kd = kernel_operator(X, "gaussian", h=h).to_dense()
    bound = C_TOL * tol * np.linalg.norm(Kd) / alpha
    assume(bound < 1)  # then lambda_min(H) > -alpha: H + alpha I is definite
    model = HSSKernelRidge(alpha, h=h,
                           options=RidgeOptions(rel_tol=tol, abs_tol=tol, max_rank=UNBOUNDED,
                                                leaf_size=32),
                           random_state=0).fit(X, y)
    ref = KernelRidge(alpha=alpha, kernel="rbf", gamma=1.0 / (2.0 * h * h)).fit(X, y)
    c, c_ref = model.dual_coef_, ref.dual_coef_
    assert np.linalg.norm(c - c_ref) <= bound * np.linalg.norm(c)
    assert np.all(np.isnan(model.residual_)) and np.all(model.n_iter_ == 1)


@settings(max_examples=15)
@given(data=regression_sets(n_min=20, n_max=200), rank=st.integers(1, 250),
       block=st.sampled_from([None, 1, 7]), beta=st.floats(1e-4, 10.0))
def test_rp_cholesky_is_below_k_and_its_woodbury_factor_is_exact(data, rank, block, beta):
    # F F^T <= K (the residual is PSD, its diagonal the one returned), at most `rank`
    # columns, the same F from the same seed; the factor of F F^T + beta I solves, gives
    # log det and diag of the inverse as the dense matrix does
    X, _, _, h = data
    K = kernel_operator(X, "gaussian", h=h)
    Kd = K.to_dense()
    F, piv, resid, W = rp_cholesky(K, rank, block_size=block, random_state=1,
                                   return_map=True)
    n = len(X)
    assert F.shape[0] == n and F.shape[1] <= min(rank, n) and piv.size >= F.shape[1]
    R = Kd - F @ F.T
    assert np.linalg.eigvalsh(R).min() >= -1e-9 * n
    np.testing.assert_allclose(resid, np.maximum(np.diag(R), 0), atol=1e-9)
    # the map that extends F to new points gives F's own rows at the training points (to
    # the rounding that the eigenvalue cutoff's 1 / sqrt(1e-10) can amplify)
    np.testing.assert_allclose(Kd[:, piv] @ W, F, atol=1e-6)
    F2 = rp_cholesky(K, rank, block_size=block, random_state=1).F
    np.testing.assert_array_equal(F, F2)
    if rank >= n:  # all the columns it needs: K itself, to rounding
        assert resid.sum() <= 1e-8 * n
    fac = LowRankShiftFactor(F, beta)
    A = F @ F.T + beta * np.eye(n)
    B = np.random.default_rng(0).normal(size=(n, 2))
    np.testing.assert_allclose(fac.solve(B), np.linalg.solve(A, B), rtol=1e-7,
                               atol=1e-9 * np.abs(np.linalg.solve(A, B)).max())
    assert fac.logdet() == pytest.approx(np.linalg.slogdet(A)[1], rel=1e-9, abs=1e-8)
    np.testing.assert_allclose(fac.inverse_diagonal(), np.diag(np.linalg.inv(A)), rtol=1e-7)
    assert fac.shifted(2 * beta).beta == 2 * beta


@settings(max_examples=15)
@given(data=regression_sets(n_min=20, n_max=200), rank=st.integers(1, 250),
       stretch=st.sampled_from([0.2, 1.0, 5.0]))
def test_nystrom_on_pivots_is_the_nystrom_approximation_below_k(data, rank, stretch):
    # the inducing points of one width at another width: F F^T is K[:, P] K[P, P]^-1 K[P, :]
    # on the columns kept (those left out were dependent to 1e-10), below K, F's rows
    # extend by the map, the residual is diag(K - F F^T)
    X, _, _, h = data
    pivots = rp_cholesky(kernel_operator(X, "gaussian", h=h), rank, random_state=0).pivots
    K = kernel_operator(X, "gaussian", h=h * stretch)
    Kd = K.to_dense()
    F, kept, resid, W = nystrom_on_pivots(K, pivots)
    assert set(kept) <= set(pivots) and F.shape == (len(X), len(kept))
    Q = Kd[:, kept] @ np.linalg.solve(Kd[np.ix_(kept, kept)], Kd[kept])
    np.testing.assert_allclose(F @ F.T, Q, atol=1e-6)
    assert np.linalg.eigvalsh(Kd - F @ F.T).min() >= -1e-9 * len(X)
    np.testing.assert_allclose(resid, np.maximum(np.diag(Kd - F @ F.T), 0), atol=1e-9)
    np.testing.assert_allclose(Kd[:, kept] @ W, F, atol=1e-6)


def test_nystrom_direct_and_leave_one_out_are_those_of_its_approximation():
    # "direct" with approximation="nystrom" solves (F F^T + alpha I) c = y; its leave-one-out
    # residuals are those of n refits on F F^T; "exact" the exact ridge solution
    X, y, Xt = _kin_like(200, d=2, seed=4)
    kernel = make_kernel("gaussian", h=0.7)
    F = rp_cholesky(kernel_operator(X, "gaussian", h=0.7), 30, random_state=0).F
    A = F @ F.T
    model = HSSKernelRidge(0.05, h=0.7,
                           options=RidgeOptions(approximation="nystrom", n_components=30),
                           random_state=0).fit(X, y)
    np.testing.assert_allclose(model.dual_coef_, np.linalg.solve(A + 0.05 * np.eye(200), y),
                               rtol=1e-8)
    assert model.hss_["rank"] == 30
    problem = prepare_nystrom(X, kernel, rank=30, beta=0.05, random_state=0)
    mse = []
    for sol in ridge_path(problem, y, [0.05, 0.5], leave_one_out=True):
        brute = np.empty(len(y))
        for i in range(len(y)):
            keep = np.arange(len(y)) != i
            c = np.linalg.solve(A[np.ix_(keep, keep)] + sol.C * np.eye(len(y) - 1), y[keep])
            brute[i] = y[i] - A[i, keep] @ c
        np.testing.assert_allclose(sol.info["loo_residuals"][:, 0], brute, rtol=1e-8,
                                   atol=1e-12)
        mse.append(np.mean(brute ** 2))
    cv = HSSKernelRidgeCV(alphas=[0.05, 0.5], h=0.7,
                          options=RidgeOptions(approximation="nystrom", n_components=30),
                          random_state=0).fit(X, y)
    np.testing.assert_allclose(-cv.cv_results_["mean_test_score"], mse, rtol=1e-8)
    exact = HSSKernelRidge(1e-3, h=0.7,
                           options=RidgeOptions(approximation="nystrom", n_components=30),
                           solver="exact", random_state=0).fit(X, y)
    ref = KernelRidge(alpha=1e-3, kernel="rbf", gamma=1.0 / (2 * 0.49)).fit(X, y)
    assert _rel(exact.predict(Xt), ref.predict(Xt)) <= 1e-6
    # a larger rank is a better preconditioner: fewer iterations, the same answer
    more = HSSKernelRidge(1e-3, h=0.7,
                          options=RidgeOptions(approximation="nystrom", n_components=120),
                          solver="exact", random_state=0).fit(X, y)
    assert more.n_iter_[0] < exact.n_iter_[0]
    assert _rel(more.predict(Xt), ref.predict(Xt)) <= 1e-6


def _kin_like(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X).sum(axis=1) + 0.1 * rng.normal(size=n)
    return X, y, rng.normal(size=(100, d))


@pytest.mark.parametrize("solver", ["direct", "exact"])
def test_alpha_path_equals_independent_fits(solver):
    X, y, Xt = _kin_like(1500)
    alphas = [3.0, 0.01, 0.3]
    kw = dict(h=1.0, solver=solver, options=RidgeOptions(rel_tol=1e-6, abs_tol=1e-8),
              random_state=0)
    est = HSSKernelRidge(**kw)
    models = est.fit_path(X, y, alphas)
    assert [m.alpha for m in models] == sorted(alphas)
    for m in models:
        single = HSSKernelRidge(alpha=m.alpha, **kw).fit(X, y)
        np.testing.assert_allclose(m.predict(Xt), single.predict(Xt), rtol=0,
                                   atol=(1e-12 if solver == "direct" else 1e-9)
                                   * np.abs(single.predict(Xt)).max())
    # one compression, counted once; every alpha a refactorization
    assert models[0].fit_time_["compress"] > 0
    assert all(m.fit_time_["compress"] == 0 for m in models[1:])
    assert all(m.fit_time_["refactor"] > 0 for m in models[1:])
    assert not hasattr(est, "dual_coef_")  # self left unfitted (issue 43)
    if solver == "exact":  # a better-conditioned system needs fewer iterations
        its = [int(m.n_iter_[0]) for m in models]
        assert its[0] >= its[-1] and its[0] <= 30


def test_exact_solver_converges_below_the_indefinite_floor():
    # loose compression, alpha far below the approximation's negative eigenvalues: direct
    # refuses with the numbers, exact preconditions at the floor and still converges
    X, y, Xt = _kin_like(600)
    kw = dict(alpha=1e-3, h=1.0,
              options=RidgeOptions(rel_tol=1e-1, abs_tol=1e-1, max_rank=8, leaf_size=32),
              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(NotPositiveDefiniteError, match="alpha=0.001"):
            HSSKernelRidge(**kw).fit(X, y)
        model = HSSKernelRidge(solver="exact", **kw).fit(X, y)
        # CG stopped short: the dense route below dense_max_n, a refusal naming the
        # residual above it; never the unconverged answer
        short = HSSKernelRidge(solver="exact", max_iter=10, **kw).fit(X, y)
        kw["options"] = kw["options"].replace(dense_max_n=0)
        with pytest.raises(ValueError, match="did not converge at alpha=0.001.*residual"):
            HSSKernelRidge(solver="exact", max_iter=10, **kw).fit(X, y)
    ref = KernelRidge(alpha=1e-3, kernel="rbf", gamma=0.5).fit(X, y)
    assert model.residual_[0] <= 1e-10 and short.residual_[0] <= 1e-10
    assert model.n_iter_[0] > 50  # a poor preconditioner costs iterations, not accuracy
    assert _rel(model.predict(Xt), ref.predict(Xt)) <= 1e-6
    assert _rel(short.predict(Xt), ref.predict(Xt)) <= 1e-6


@pytest.mark.parametrize("approximation", ["exact", "hss"])
def test_leave_one_out_from_the_factor_equals_refitting(approximation):
    # LOO residual c_i / (G^-1)_ii with G = H + alpha I, against n dense refits on H itself
    X, y, _ = _kin_like(150, d=2, seed=3)
    kernel = make_kernel("gaussian", h=0.7)
    problem = prepare_hss(X, kernel, approximation=approximation, beta=0.05,
                          hss_options=HSSOptions(rel_tol=1e-4, abs_tol=1e-6, leaf_size=16,
                                                 max_rank=UNBOUNDED, random_state=0))
    A = (problem.approximation if approximation == "exact"
         else problem.approximation.to_dense())
    sols = ridge_path(problem, y, [0.05, 0.5, 5.0], leave_one_out=True)
    for sol in sols:
        alpha = sol.C
        brute = np.empty(len(y))
        for i in range(len(y)):
            keep = np.arange(len(y)) != i
            c = np.linalg.solve(A[np.ix_(keep, keep)] + alpha * np.eye(len(y) - 1), y[keep])
            brute[i] = y[i] - A[i, keep] @ c
        np.testing.assert_allclose(sol.info["loo_residuals"][:, 0], brute, rtol=1e-9,
                                   atol=1e-12)


def test_cv_leave_one_out_search_and_refit_reuse():
    X, y, Xt = _kin_like(200, d=2, seed=1)
    alphas, hs = [0.01, 0.1, 1.0], [0.5, 1.5]
    cv = HSSKernelRidgeCV(alphas=alphas, h=hs,
                          options=RidgeOptions(approximation="exact")).fit(X, y)
    assert len(cv.cv_results_["params"]) == 6 and cv.n_splits_ == 1
    for i, p in enumerate(cv.cv_results_["params"]):
        ref = KernelRidge(alpha=p["alpha"], kernel="rbf", gamma=1 / (2 * p["h"] ** 2))
        errs = [y[j] - ref.fit(np.delete(X, j, 0), np.delete(y, j)).predict(X[j:j + 1])[0]
                for j in range(len(y))]
        assert cv.cv_results_["mean_test_score"][i] == pytest.approx(-np.mean(np.square(errs)),
                                                                     rel=1e-9)
    best = int(np.argmax(cv.cv_results_["mean_test_score"]))
    assert cv.best_index_ == best and cv.best_params_ == cv.cv_results_["params"][best]
    assert cv.alpha_ == cv.best_params_["alpha"] and cv.h_ == cv.best_params_["h"]
    assert cv.cv_results_["rank_test_score"][best] == 1
    single = HSSKernelRidge(
        options=RidgeOptions(approximation="exact"), **cv.best_params_).fit(X, y)
    np.testing.assert_allclose(cv.predict(Xt), single.predict(Xt), rtol=1e-12, atol=1e-12)


def test_cv_kfold_scores_equal_manual_folds():
    X, y, _ = _kin_like(240, d=2, seed=2)
    alphas = [0.03, 0.3, 3.0]
    cv = HSSKernelRidgeCV(alphas=alphas, h=1.0, cv=4, options=RidgeOptions(approximation="exact"),
                          random_state=7).fit(X, y)
    folds = list(KFold(4).split(X))  # GridSearchCV's: unshuffled, whatever random_state
    for i, a in enumerate(alphas):
        ref = KernelRidge(alpha=a, kernel="rbf", gamma=0.5)
        for s, (tr, te) in enumerate(folds):
            mse = np.mean((ref.fit(X[tr], y[tr]).predict(X[te]) - y[te]) ** 2)
            assert cv.cv_results_[f"split{s}_test_score"][i] == pytest.approx(-mse, rel=1e-9)
    r2 = HSSKernelRidgeCV(alphas=alphas, h=1.0, cv=4, scoring="r2",
                          options=RidgeOptions(approximation="exact"),
                          random_state=7).fit(X, y)
    for i, a in enumerate(alphas):
        ref = KernelRidge(alpha=a, kernel="rbf", gamma=0.5)
        manual = [r2_score(y[te], ref.fit(X[tr], y[tr]).predict(X[te])) for tr, te in folds]
        assert r2.cv_results_["mean_test_score"][i] == pytest.approx(np.mean(manual),
                                                                     rel=1e-9)


def test_cv_ranks_unsolvable_alphas_last_with_a_warning():
    X, y, _ = _kin_like(600)
    cv = HSSKernelRidgeCV(alphas=[1e-5, 20.0], h=1.0, cv=2,
                          options=RidgeOptions(rel_tol=1e-1, abs_tol=1e-1, max_rank=8,
                                               leaf_size=32),
                          random_state=0)
    with pytest.warns(UserWarning, match="1 of 2 candidates were not scored"):
        cv.fit(X, y)
    assert np.isnan(cv.cv_results_["mean_test_score"][0])
    assert cv.cv_results_["rank_test_score"].tolist() == [2, 1]
    assert cv.best_params_["alpha"] == 20.0


# -- Gaussian processes ------------------------------------------------------------------------

def _sk_kernel(s2, h, sigma2, kernel="gaussian"):
    k = RBF(h) if kernel == "gaussian" else Matern(h, nu=0.5)
    return ConstantKernel(s2) * k + WhiteKernel(sigma2)


@settings(max_examples=12)
@given(data=regression_sets(n_min=30, n_max=300), log_s2=st.floats(-1, 1),
       log_beta=st.floats(-3, 0.5), approximation=st.sampled_from(["hss", "exact"]),
       kernel=st.sampled_from(["gaussian", "laplacian"]), normalize=st.booleans())
def test_gp_log_marginal_likelihood_equals_sklearn(data, log_s2, log_beta, approximation,
                                                   kernel, normalize):
    # Relative to max(|LML|, n), the size of its terms (n/2 log 2 pi alone is 0.92 n): the
    # LML itself can cross 0. The HSS error enters as about ||K - H||_2 ||G^-1 y||^2 / (2 s^2)
    # with ||G^-1|| <= 1 / beta, hence the tight tolerance at beta >= 1e-3.
    X, y, _, h = data
    s2, beta = 10.0 ** log_s2, 10.0 ** log_beta
    model = HSSGaussianProcessRegressor(kernel, h=h, noise_ratio=beta, amplitude=s2,
                                        optimizer=None, normalize_y=normalize,
                                        options=GPOptions(approximation=approximation,
                                                          rel_tol=1e-12, abs_tol=1e-14,
                                                          max_rank=UNBOUNDED, leaf_size=32),
                                        random_state=0).fit(X, y)
    ref = GaussianProcessRegressor(_sk_kernel(s2, h, beta * s2, kernel), optimizer=None,
                                   alpha=0.0, normalize_y=normalize).fit(X, y)
    lml, lml_ref = model.log_marginal_likelihood_value_, ref.log_marginal_likelihood_value_
    scale = max(abs(lml_ref), len(X))
    assert abs(lml - lml_ref) <= 1e-6 * scale
    np.testing.assert_allclose(model.kernel_.theta, ref.kernel_.theta, rtol=1e-12, atol=1e-12)
    # another (s^2, sigma^2) at the same width (a refactorization) and another width (a
    # compression), through the theta interface
    for theta in (model.kernel_.theta + [0.3, 0.0, 0.5], model.kernel_.theta + 0.2):
        lml_ref = ref.log_marginal_likelihood(theta)
        assert abs(model.log_marginal_likelihood(theta) - lml_ref) \
            <= 1e-6 * max(abs(lml_ref), len(X))


def _titsias(X, y, h, s2, beta, F, piv, W, Xt):
    """The collapsed bound and the DTC predictive of the low-rank model F F^T, densely (y of
    shape (n,) or (n, k): k independent GPs)."""
    Y = y.reshape(len(y), -1)
    n, k = Y.shape
    Kd = kernel_operator(X, "gaussian", h=h).to_dense()
    G = F @ F.T + beta * np.eye(n)
    bound = (-0.5 * np.sum(Y * np.linalg.solve(s2 * G, Y))
             - 0.5 * k * (np.linalg.slogdet(s2 * G)[1] + n * math.log(2 * math.pi))
             - k * np.trace(Kd - F @ F.T) / (2 * beta))
    Phi = kernel_operator(Xt, "gaussian", h=h).cross(X[piv]).to_dense().T @ W  # k(Xt, P) W
    mean = Phi @ F.T @ np.linalg.solve(G, Y)
    var = s2 * (1 + beta - np.einsum("ij,ij->i", Phi @ F.T, np.linalg.solve(G, F @ Phi.T).T))
    std = np.sqrt(np.maximum(var, 0))
    return bound, mean.reshape(mean.shape[0], *y.shape[1:]), \
        (std if y.ndim == 1 else np.repeat(std[:, None], k, axis=1))


@settings(max_examples=12)
@given(data=regression_sets(n_min=30, n_max=200), rank=st.integers(1, 220),
       log_s2=st.floats(-1, 1), log_beta=st.floats(-3, 0.5))
def test_gp_nystrom_is_titsias_bound_below_the_exact_likelihood(data, rank, log_s2, log_beta):
    # approximation="nystrom": the likelihood is Titsias' collapsed bound on the Nystrom
    # approximation at the inducing points (a randomly pivoted Cholesky's, the fit's seed),
    # never above the exact likelihood and equal to it at full rank; mean and std are the
    # bound's (DTC) predictive
    X, y, Xt, h = data
    s2, beta = 10.0 ** log_s2, 10.0 ** log_beta
    model = HSSGaussianProcessRegressor(h=h, noise_ratio=beta, amplitude=s2, optimizer=None,
                                        options=GPOptions(approximation="nystrom",
                                                          n_components=rank),
                                        random_state=3).fit(X, y)
    inducing = rp_cholesky(kernel_operator(X, "gaussian", h=h), rank, random_state=3).pivots
    F, piv, _, W = nystrom_on_pivots(kernel_operator(X, "gaussian", h=h), inducing)
    bound, mean, std = _titsias(X, y, h, s2, beta, F, piv, W, Xt)
    scale = max(abs(bound), len(X))
    assert abs(model.log_marginal_likelihood_value_ - bound) <= 1e-8 * scale
    exact = GaussianProcessRegressor(_sk_kernel(s2, h, beta * s2), optimizer=None,
                                     alpha=0.0).fit(X, y)
    lml_ref = exact.log_marginal_likelihood_value_
    assert bound <= lml_ref + 1e-8 * scale
    if F.shape[1] == len(X) or model.hss_["residual_trace"] <= 1e-9:
        assert abs(bound - lml_ref) <= 1e-6 * scale
    mu, sd = model.predict(Xt, return_std=True)
    assert _rel(mu, mean) <= 1e-6 and _rel(sd, std) <= 1e-6
    # another theta: the Nystrom approximation on the same inducing points, the bound there
    theta = model.kernel_.theta + [0.3, 0.2, 0.5]
    s2b, hb, sigma2b = np.exp(theta)
    Fb, pivb, _, Wb = nystrom_on_pivots(kernel_operator(X, "gaussian", h=hb), inducing)
    bound_b = _titsias(X, y, hb, s2b, sigma2b / s2b, Fb, pivb, Wb, Xt[:1])[0]
    assert abs(model.log_marginal_likelihood(theta) - bound_b) <= 1e-8 * max(abs(bound_b),
                                                                              len(X))


def test_gp_log_marginal_likelihood_at_n_2000_with_tight_compression():
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(2000, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=2000)
    model = HSSGaussianProcessRegressor(h=0.8, noise_ratio=0.02, amplitude=1.3, optimizer=None,
                                        options=GPOptions(rel_tol=1e-10, abs_tol=1e-12,
                                                          approximation="hss"),
                                        random_state=0).fit(X, y)
    ref = GaussianProcessRegressor(_sk_kernel(1.3, 0.8, 0.026), optimizer=None,
                                   alpha=0.0).fit(X, y)
    assert model.hss_["approximation"] == "hss" and model.hss_["max_rank"] < 500
    lml_ref = ref.log_marginal_likelihood_value_
    assert abs(model.log_marginal_likelihood_value_ - lml_ref) <= 1e-6 * abs(lml_ref)
    Xt = rng.uniform(-3, 3, size=(300, 2))
    mu, sd = model.predict(Xt, return_std=True)
    mu_ref, sd_ref = ref.predict(Xt, return_std=True)
    assert _rel(mu, mu_ref) <= 1e-6 and _rel(sd, sd_ref) <= 1e-6


@pytest.mark.parametrize("approximation,normalize,k", [("exact", False, 1), ("hss", True, 1),
                                                       ("hss", False, 2), ("nystrom", True, 2)])
def test_gp_fit_predicts_like_sklearn_at_its_hyperparameters(approximation, normalize, k):
    # ("nystrom" at full rank: its bound is the exact likelihood)
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(400, 2))
    Y = np.column_stack([np.sin(2 * X[:, 0]) * np.cos(X[:, 1]), np.cos(X.sum(1))])[:, :k]
    Y = Y + 0.1 * rng.normal(size=Y.shape) + 3.0
    y = Y[:, 0] if k == 1 else Y
    model = HSSGaussianProcessRegressor(normalize_y=normalize,
                                        options=GPOptions(approximation=approximation,
                                                          rel_tol=1e-10, abs_tol=1e-12,
                                                          n_components=400),
                                        h_bounds=(0.05, 20.0), random_state=0).fit(X, y)
    ref = GaussianProcessRegressor(model.kernel_, optimizer=None, alpha=0.0,
                                   normalize_y=normalize).fit(X, y)
    assert abs(model.log_marginal_likelihood_value_ - ref.log_marginal_likelihood_value_) \
        <= 1e-6 * abs(ref.log_marginal_likelihood_value_)
    assert model.alpha_.shape == ref.alpha_.shape
    np.testing.assert_allclose(model.alpha_, ref.alpha_, rtol=1e-5,
                               atol=1e-6 * np.abs(ref.alpha_).max())
    Xt = rng.uniform(-2.5, 2.5, size=(700, 2))
    mu, sd = model.predict(Xt, return_std=True)
    mu_ref, sd_ref = ref.predict(Xt, return_std=True)
    assert mu.shape == mu_ref.shape and sd.shape == sd_ref.shape
    assert _rel(mu, mu_ref) <= 1e-6 and _rel(sd, sd_ref) <= 1e-6
    np.testing.assert_array_equal(model.predict(Xt), mu)
    mu30, cov = model.predict(Xt[:30], return_cov=True)
    _, cov_ref = ref.predict(Xt[:30], return_cov=True)
    assert cov.shape == cov_ref.shape and _rel(cov, cov_ref) <= 1e-6
    np.testing.assert_allclose(mu30, mu[:30], rtol=1e-12)  # (a gemm of another shape)
    # the std is computed in blocks: a tiny budget (many blocks) gives the same numbers (to
    # rounding: a one-column block is solved by gemv, a wider one by gemm)
    small = pickle.loads(pickle.dumps(model)).set_params(memory_budget=4 * 8 * 400 * 7)
    np.testing.assert_allclose(small.predict(Xt, return_std=True)[1], sd, rtol=1e-10)


def _exact_profile(X, y, h, betas):
    Kd = kernel_operator(X, "gaussian", h=h).to_dense()
    lam, Q = np.linalg.eigh(Kd)
    z = Q.T @ y
    n = len(y)
    out = []
    for b in betas:
        s2 = np.sum(z * z / (lam + b)) / n
        out.append(-0.5 * n * (1 + math.log(2 * math.pi) + math.log(s2))
                   - 0.5 * np.sum(np.log(lam + b)))
    return np.array(out)


@pytest.mark.parametrize("seed,noise", [(0, 0.05), (1, 0.3), (2, 0.01)])
def test_noise_search_finds_the_dense_grid_optimum(seed, noise):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(250, 2))
    y = np.sin(2 * X[:, 0]) + np.cos(X[:, 1]) + noise * rng.normal(size=250)
    h = 0.8
    problem = prepare_hss(X, make_kernel("gaussian", h=h), approximation="exact", beta=1e-6)
    res = noise_search(problem, y[:, None], (1e-6, 10.0), xatol=1e-3)
    grid = np.logspace(-6, 1, 2001)
    prof = _exact_profile(X, y, h, grid)
    best = int(np.argmax(prof))
    assert 0 < best < len(grid) - 1  # an interior optimum
    assert res.lml >= prof[best] - 1e-9 * abs(prof[best])
    assert abs(math.log(res.beta) - math.log(grid[best])) <= 2 * math.log(grid[1] / grid[0])
    assert res.n_evals <= 40 and res.at_bound is None
    # the profile's value is the factor's: the same number from the dense formula
    assert profile_log_marginal_likelihood(res.factor, y[:, None])[0] == pytest.approx(
        _exact_profile(X, y, h, [res.beta])[0], rel=1e-10)


def test_width_search_finds_the_dense_grid_optimum():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(200, 1))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=200)
    model = HSSGaussianProcessRegressor(h=2.0, h_bounds=(0.05, 10.0), tol=1e-3,
                                        options=GPOptions(approximation="exact")).fit(X, y)
    betas = np.logspace(-6, 2, 801)
    widths = np.logspace(math.log10(0.05), 1, 241)
    best = max(_exact_profile(X, y, h, betas).max() for h in widths)
    assert model.log_marginal_likelihood_value_ >= best - 1e-6 * abs(best)
    assert model.search_["n_compressions"] <= 25


def test_gp_reports_optimum_at_a_bound():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(100, 1))
    y = np.sin(X[:, 0])  # noise-free: the noise ratio goes to its lower bound
    with pytest.warns(ConvergenceWarning, match="noise_ratio"):
        model = HSSGaussianProcessRegressor(h_bounds="fixed", noise_ratio_bounds=(1e-3, 1.0),
                                            options=GPOptions(approximation="exact")).fit(X, y)
    assert model.noise_ratio_ == pytest.approx(1e-3)
    assert model.search_["noise_ratio_at_bound"] == "lower"
    # a loose (indefinite) approximation: the search starts at its floor, and says so
    X2 = rng.uniform(-2, 2, size=(300, 2))
    with pytest.warns(ConvergenceWarning, match="smallest value the HSS approximation allows"):
        loose = HSSGaussianProcessRegressor(h_bounds="fixed",
                                            options=GPOptions(rel_tol=0.3, abs_tol=0.3, max_rank=2,
                                                              leaf_size=16, approximation="hss"),
                                            random_state=0).fit(
            X2, np.sin(X2[:, 0]))
    assert loose.noise_ratio_ > 1e-6
    assert loose.noise_ratio_ == pytest.approx(loose.search_["noise_history"][0][0])


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("est,match", [
    (HSSKernelRidge(alpha=0.0), "alpha=0 is solved by solver='exact' only"),
    (HSSKernelRidge(alpha=-1.0), "'alpha' parameter"),
    (HSSKernelRidge(h=0.0), "'h' parameter"),
    (HSSKernelRidge(h=-2.0), "'h' parameter"),
    (HSSKernelRidge(h=1.0, gamma=0.5), "either h or gamma"),
    (HSSKernelRidge(solver="cholesky"), "'solver' parameter"),
    (HSSKernelRidgeCV(alphas=[1.0, -1.0]), r"alphas must be finite and > 0, got \[1.0, -1.0\]"),
    (HSSKernelRidgeCV(h=[1.0, 0.0]), r"h must be positive and finite, got \[1.0, 0.0\]"),
    (HSSGaussianProcessRegressor(h=0.0), "'h' parameter"),
    (HSSGaussianProcessRegressor(noise_ratio_bounds=(1.0, 0.1)), "noise_ratio_bounds must "
                                                                  "satisfy 0 < low <= high"),
    (HSSGaussianProcessRegressor(h=1e4), "h=10000 is outside h_bounds"),
    (HSSGaussianProcessRegressor(h_bounds="free"), "'h_bounds' parameter"),
    (HSSGaussianProcessRegressor(n_restarts_optimizer=2, h_bounds="fixed"),
     "n_restarts_optimizer > 0 needs a width search")])
def test_bad_parameters_raise_clear_errors(est, match):
    X, y, _ = _kin_like(50)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


@pytest.mark.parametrize("est", [HSSKernelRidge(), HSSKernelRidgeCV(),
                                 HSSGaussianProcessRegressor(h_bounds="fixed")])
def test_nan_input_raises(est):
    X, y, _ = _kin_like(50)
    Xn, yn = X.copy(), y.copy()
    Xn[3, 0], yn[5] = np.nan, np.inf
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="infinity|NaN"):
        est.fit(X, yn)
    est.fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        est.predict(Xn)


def test_fit_path_and_gp_calls_check_their_arguments():
    X, y, _ = _kin_like(50)
    with pytest.raises(ValueError, match="alphas"):
        HSSKernelRidge().fit_path(X, y, [0.1, 0.0])
    with pytest.raises(ValueError, match="alphas"):
        HSSKernelRidge().fit_path(X, y, 3)
    gp = HSSGaussianProcessRegressor(h_bounds="fixed").fit(X, y)
    with pytest.raises(RuntimeError, match="At most one"):
        gp.predict(X, return_std=True, return_cov=True)
    with pytest.raises(ValueError, match="eval_gradient"):
        gp.log_marginal_likelihood(gp.kernel_.theta, eval_gradient=True)
    with pytest.raises(ValueError, match="theta"):
        gp.log_marginal_likelihood([0.0, np.nan, 0.0])
    with pytest.raises(MemoryBudgetError, match="covariance"):
        gp.set_params(memory_budget=1000).predict(X, return_cov=True)


# -- scikit-learn conformance ------------------------------------------------------------------

@parametrize_with_checks([HSSKernelRidge(options=RidgeOptions(leaf_size=16)),
                          HSSKernelRidge(solver="exact", options=RidgeOptions(leaf_size=16)),
                          HSSKernelRidge(solver="exact",
                                         options=RidgeOptions(approximation="nystrom",
                                                              n_components=20)),
                          HSSKernelRidgeCV(options=RidgeOptions(leaf_size=16)),
                          HSSGaussianProcessRegressor(
                              options=GPOptions(leaf_size=16, rel_tol=1e-4, abs_tol=1e-6),
                              h_bounds=(0.1, 10.0),
                                                      tol=0.1),
                          HSSGaussianProcessRegressor(h_bounds=(0.1, 10.0), tol=0.1,
                                                      options=GPOptions(approximation="nystrom",
                                                                        n_components=15))])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- real data ---------------------------------------------------------------------------------

@pytest.mark.shared_data
def test_kin40k_subsample_exact_equals_kernel_ridge():
    from conftest import SHARED_DATASETS
    path = SHARED_DATASETS / "regression" / "kin40k.npz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    d = np.load(path)
    X, y = d["X_train"][:1500], d["y_train"][:1500]
    mu, sd = X.mean(0), X.std(0)
    X, Xt = (X - mu) / sd, (d["X_test"][:300] - mu) / sd
    model = HSSKernelRidge(alpha=0.01, h=1.5, solver="exact", random_state=0).fit(X, y)
    ref = KernelRidge(alpha=0.01, kernel="rbf", gamma=1 / (2 * 1.5 ** 2)).fit(X, y)
    assert _rel(model.predict(Xt), ref.predict(Xt)) <= 1e-6
