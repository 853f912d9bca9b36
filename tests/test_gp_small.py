"""The GP's dense route (small n): exact against scikit-learn, and the route switch.

Below ``GPOptions.dense_max_n`` points ``approximation="auto"`` fits on the dense
kernel (:mod:`hsskern.solvers.engines.gp_dense`): the exact likelihood, so at fixed hyperparameters
its predictions and log marginal likelihood are scikit-learn's to rounding; its analytic
gradient is the likelihood's; and forcing the HSS route on the same problem changes no
answer beyond the compression's and the optimizers' tolerances.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from hsskern import HSSGaussianProcessRegressor, GPOptions
from hsskern.solvers.paths.gp import resolve_approximation
from hsskern.solvers.engines.gp_dense import DenseLikelihood


def _problem(seed, n, d, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    y = np.sin(2 * X[:, 0]) + np.cos(X[:, -1]) + noise * rng.normal(size=n)
    return X, y, rng.uniform(-2.5, 2.5, size=(50, d))


def _sk(s2, h, sigma2, kernel="gaussian"):
    k = RBF(h) if kernel == "gaussian" else Matern(h, nu=0.5)
    return ConstantKernel(s2) * k + WhiteKernel(sigma2)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.integers(5, 250), d=st.integers(1, 4),
       log_h=st.floats(-1.0, 1.0), log_beta=st.floats(-4.0, 0.5), log_s2=st.floats(-1, 1),
       kernel=st.sampled_from(["gaussian", "laplacian"]), fixed_amplitude=st.booleans())
def test_dense_route_equals_sklearn_at_fixed_hyperparameters(seed, n, d, log_h, log_beta,
                                                             log_s2, kernel, fixed_amplitude):
    X, y, Xt = _problem(seed, n, d)
    h, beta, s2 = 10.0 ** log_h, 10.0 ** log_beta, 10.0 ** log_s2
    model = HSSGaussianProcessRegressor(kernel, h=h, noise_ratio=beta, optimizer=None,
                                        amplitude=s2 if fixed_amplitude else None).fit(X, y)
    assert model.hss_["approximation"] == "exact"  # n <= GPOptions().dense_max_n: the dense route
    s2 = model.amplitude_
    if not fixed_amplitude:  # the closed form: tr(y^T G^-1 y) / n
        G = _sk(1.0, h, beta, kernel)(X)
        assert s2 == pytest.approx(float(y @ np.linalg.solve(G, y)) / n, rel=1e-9)
    ref = GaussianProcessRegressor(_sk(s2, h, beta * s2, kernel), optimizer=None,
                                   alpha=0.0).fit(X, y)
    lml, lml_ref = model.log_marginal_likelihood_value_, ref.log_marginal_likelihood_value_
    assert abs(lml - lml_ref) <= 1e-8 * max(abs(lml_ref), n)
    mu, sd = model.predict(Xt, return_std=True)
    mu_ref, sd_ref = ref.predict(Xt, return_std=True)
    scale = max(1.0, np.abs(mu_ref).max())
    np.testing.assert_allclose(mu, mu_ref, rtol=0, atol=1e-8 * scale * (1 + 1 / beta))
    np.testing.assert_allclose(sd, sd_ref, rtol=1e-6, atol=1e-8 * math.sqrt(s2) / beta)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.integers(10, 120), log_h=st.floats(-0.7, 0.7),
       log_beta=st.floats(-3, 0), kernel=st.sampled_from(["gaussian", "laplacian"]),
       amplitude=st.sampled_from([None, 1.7]))
def test_dense_gradient_is_the_likelihoods(seed, n, log_h, log_beta, kernel, amplitude):
    X, y, _ = _problem(seed, n, 2)
    lik = DenseLikelihood(X, y[:, None], kernel, amplitude)
    h, beta = 10.0 ** log_h, 10.0 ** log_beta
    lml, _, grad = lik(h, beta)
    e = 1e-5
    fd = [(lik(h * math.exp(e), beta, False)[0] - lik(h * math.exp(-e), beta, False)[0]) / (2 * e),
          (lik(h, beta * math.exp(e), False)[0] - lik(h, beta * math.exp(-e), False)[0]) / (2 * e)]
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6 * max(1.0, abs(lml)))


def test_dense_route_finds_sklearns_optimum():
    # both maximise the same likelihood from the same start (s^2 = 1, h = 1, sigma^2 = 0.01)
    X, y, Xt = _problem(3, 300, 2)
    model = HSSGaussianProcessRegressor(h=1.0, noise_ratio=1e-2, h_bounds=(1e-3, 1e3),
                                        noise_ratio_bounds=(1e-6, 100.0)).fit(X, y)
    kern = (ConstantKernel(1.0, (1e-5, 1e5)) * RBF(1.0, (1e-3, 1e3))
            + WhiteKernel(1e-2, (1e-8, 1e3)))
    ref = GaussianProcessRegressor(kern, alpha=0.0).fit(X, y)
    lml_ref = ref.log_marginal_likelihood_value_
    assert model.log_marginal_likelihood_value_ >= lml_ref - 1e-6 * abs(lml_ref)
    np.testing.assert_allclose(model.kernel_.theta, ref.kernel_.theta, atol=1e-3)
    np.testing.assert_allclose(model.predict(Xt), ref.predict(Xt), atol=1e-4)
    assert model.search_["n_compressions"] == 0
    assert model.search_["n_factorizations"] <= 60


@pytest.mark.parametrize("optimizer", [None, "bounded"])
def test_the_route_switch_changes_no_answer_beyond_tolerance(optimizer):
    X, y, Xt = _problem(7, 600, 2)
    opts = GPOptions(rel_tol=1e-9, abs_tol=1e-11)
    kw = dict(h=0.8, noise_ratio=0.02, optimizer=optimizer, h_bounds=(0.05, 10.0),
              random_state=0)
    dense = HSSGaussianProcessRegressor(options=opts.replace(approximation="exact"),
                                        **kw).fit(X, y)
    auto = HSSGaussianProcessRegressor(options=opts, **kw).fit(X, y)
    hss = HSSGaussianProcessRegressor(options=opts.replace(approximation="hss"), **kw).fit(X, y)
    assert auto.hss_["approximation"] == "exact" and hss.hss_["approximation"] == "hss"
    np.testing.assert_array_equal(auto.predict(Xt), dense.predict(Xt))
    lml_d, lml_h = dense.log_marginal_likelihood_value_, hss.log_marginal_likelihood_value_
    mu_d, sd_d = dense.predict(Xt, return_std=True)
    mu_h, sd_h = hss.predict(Xt, return_std=True)
    if optimizer is None:  # the same hyperparameters: the compression's error only
        assert abs(lml_d - lml_h) <= 1e-6 * abs(lml_d)
        np.testing.assert_allclose(mu_h, mu_d, atol=1e-6)
        np.testing.assert_allclose(sd_h, sd_d, atol=1e-6)
    else:  # two searches of one likelihood, to their tolerances (1% in h and beta)
        assert abs(lml_d - lml_h) <= 1e-4 * abs(lml_d)
        assert lml_d >= lml_h - 1e-6 * abs(lml_d)  # the gradient search is not worse
        np.testing.assert_allclose(mu_h, mu_d, atol=2e-2 * np.ptp(y))
        np.testing.assert_allclose(sd_h, sd_d, atol=2e-2 * np.std(y))


def test_auto_takes_the_dense_route_up_to_the_switch_size():
    assert resolve_approximation("auto", GPOptions().dense_max_n) == "exact"
    assert resolve_approximation("auto", GPOptions().dense_max_n + 1) == "hss"
    assert resolve_approximation("hss", 10) == "hss"
    assert resolve_approximation("nystrom", 10) == "nystrom"
    # the dense arrays (4 n^2 floats) beyond the budget: the HSS route, which fits in less
    assert resolve_approximation("auto", 1000, memory_budget=4e7) == "exact"
    assert resolve_approximation("auto", 1000, memory_budget=1e7) == "hss"
    X, y, _ = _problem(0, 400, 2)
    m = HSSGaussianProcessRegressor(h_bounds="fixed", noise_ratio_bounds="fixed",
                                    memory_budget=3e6).fit(X, y)
    assert m.hss_["approximation"] == "hss"


def test_a_large_fit_under_a_small_budget_takes_the_hss_route_or_refuses_at_once(monkeypatch):
    # 20,000 x 4: the dense route needs 32 n^2 = 12.8 GB. Under a 2 GB budget "auto" takes
    # the HSS route (its preparation is where the work starts: stopped there); under 50 MB
    # even the HSS route's least is refused with the estimate, within 2 s, before any work.
    import time
    from hsskern import MemoryBudgetError
    from hsskern.solvers.paths import gp
    from hsskern.solvers.engines.gp_dense import dense_memory
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20000, 4)), rng.normal(size=20000)
    assert dense_memory(20000, 4) > 2e9
    routes = []

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        routes.append(kwargs.get("approximation", args[3] if len(args) > 3 else None))
        raise Stop

    monkeypatch.setattr(gp, "prepare_gp_problem", stop)
    monkeypatch.setattr(gp, "_dense_route", lambda *a, **k: routes.append("exact") or stop())
    t0 = time.perf_counter()
    with pytest.raises(Stop):
        HSSGaussianProcessRegressor(memory_budget=2e9).fit(X, y)
    assert routes == ["hss"] and time.perf_counter() - t0 <= 2.0
    t0 = time.perf_counter()
    with pytest.raises(MemoryBudgetError, match="20000 points x 4 features"):
        HSSGaussianProcessRegressor(memory_budget=5e7).fit(X, y)
    assert time.perf_counter() - t0 <= 2.0


def test_the_switch_size_is_an_options_field():
    # docs/design_notes.md has its measurement
    # the solver's default is the options' field, not a copy of it
    assert resolve_approximation.__defaults__[0] is GPOptions.dense_max_n == 10000
    assert resolve_approximation("auto", 3000, 2500) == "hss"
    Xs, ys, _ = _problem(0, 300, 2)
    m = HSSGaussianProcessRegressor(h_bounds="fixed", noise_ratio_bounds="fixed",
                                    options=GPOptions(dense_max_n=200)).fit(Xs, ys)
    assert m.hss_["approximation"] == "hss"
