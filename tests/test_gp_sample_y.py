"""HSSGaussianProcessRegressor.sample_y, as scikit-learn's GaussianProcessRegressor has it
(issue 43, part 7): same signature and shapes, draws from the posterior of predict's mean
and covariance, which equal scikit-learn's at the same fixed hyperparameters."""
import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor

from hsskern import HSSGaussianProcessRegressor, MemoryBudgetError, GPOptions


def _data(k=1, n=200, m=25, seed=0):
    rng = np.random.default_rng(seed)
    X, Xt = rng.uniform(-2, 2, size=(n, 2)), rng.uniform(-2, 2, size=(m, 2))
    Y = np.column_stack([np.sin(2 * X[:, 0]) * np.cos(X[:, 1]), np.cos(X.sum(1))])[:, :k]
    Y = Y + 0.1 * rng.normal(size=Y.shape) + 2.0
    return X, (Y[:, 0] if k == 1 else Y), Xt


def _pair(approximation, normalize, k):
    X, y, Xt = _data(k)
    model = HSSGaussianProcessRegressor(h=0.9, noise_ratio=0.05, amplitude=1.5,
                                        optimizer=None, normalize_y=normalize,
                                        options=GPOptions(approximation=approximation,
                                                          rel_tol=1e-12, abs_tol=1e-14,
                                                          n_components=len(X)),
                                        random_state=0).fit(X, y)
    ref = GaussianProcessRegressor(model.kernel_, optimizer=None, alpha=0.0,
                                   normalize_y=normalize).fit(X, y)
    return model, ref, Xt


@pytest.mark.parametrize("approximation,normalize,k", [("exact", False, 1), ("hss", True, 1),
                                                       ("hss", False, 2),
                                                       ("nystrom", True, 2)])
def test_sample_y_draws_from_sklearns_posterior(approximation, normalize, k):
    model, ref, Xt = _pair(approximation, normalize, k)
    # the mean and covariance sample_y draws from are scikit-learn's ("nystrom" at full rank)
    mean, cov = model.predict(Xt, return_cov=True)
    mean_ref, cov_ref = ref.predict(Xt, return_cov=True)
    np.testing.assert_allclose(mean, mean_ref, rtol=0, atol=1e-7 * np.abs(mean_ref).max())
    np.testing.assert_allclose(cov, cov_ref, rtol=0, atol=1e-7 * np.abs(cov_ref).max())
    # scikit-learn's signature and shapes
    for n_samples in (1, 3):
        got = model.sample_y(Xt, n_samples)
        assert got.shape == ref.sample_y(Xt, n_samples).shape
        assert got.shape == ((len(Xt), n_samples) if k == 1 else (len(Xt), k, n_samples))
    np.testing.assert_array_equal(model.sample_y(Xt, 3), model.sample_y(Xt, 3, random_state=0))
    assert not np.array_equal(model.sample_y(Xt, 3, random_state=1), model.sample_y(Xt, 3))
    # the draws have the posterior's moments (4 standard errors; fixed seed)
    N = 4000
    S = model.sample_y(Xt, N, random_state=np.random.RandomState(7))
    S = S[:, None, :] if k == 1 else S
    C = cov[:, :, None] if k == 1 else cov
    M = mean[:, None] if k == 1 else mean
    for t in range(k):
        d = np.diag(C[:, :, t])
        assert np.all(np.abs(S[:, t].mean(axis=1) - M[:, t]) <= 4 * np.sqrt(d / N))
        emp = np.cov(S[:, t])
        se = np.sqrt((np.outer(d, d) + C[:, :, t] ** 2) / N)
        assert np.all(np.abs(emp - C[:, :, t]) <= 5 * se)


def test_sample_y_refuses_a_covariance_beyond_the_budget_and_bad_counts():
    model, _, Xt = _pair("hss", False, 1)
    with pytest.raises(ValueError, match="n_samples"):
        model.sample_y(Xt, 0)
    model.set_params(memory_budget=8 * len(Xt) ** 2)  # less than the covariance and its SVD
    with pytest.raises(MemoryBudgetError, match=f"sampling the posterior at {len(Xt)} points"):
        model.sample_y(Xt)
