"""
A Gaussian process on 1-D data, and its likelihood over the noise
=================================================================

:class:`~hsskern.HSSGaussianProcessRegressor` writes the GP's covariance as
s² (K + βI), with β = σ²/s² the noise-to-signal ratio. One HSS compression of K serves every
β: a new β is a refactorization of K + βI, and the factor gives the solve and the
log-determinant the likelihood needs. The fit maximises the likelihood over β (and the width
h); here we look at the predictive mean ± 2 standard deviations, and at the likelihood as a
function of β at the fitted width and amplitude.
"""
import matplotlib.pyplot as plt
import numpy as np

from hsskern import HSSGaussianProcessRegressor

rng = np.random.default_rng(0)
n, noise = 1000, 0.2
x = np.sort(rng.uniform(0, 10, n))
y = np.sin(x) + 0.3 * np.sin(3 * x) + noise * rng.standard_normal(n)
X = x[:, None]

# Search ranges that hold the answer: a noise ratio far below the data's (1e-6, the default
# lower bound) asks the compression for more accuracy than the fit needs.
gp = HSSGaussianProcessRegressor(h=1.0, h_bounds=(0.1, 10), noise_ratio_bounds=(1e-3, 10),
                                 normalize_y=True, random_state=0).fit(X, y)
print("fitted kernel:", gp.kernel_)
print(f"beta = {gp.noise_ratio_:.3g}, noise std = {np.sqrt(gp.noise_level_) * y.std():.3f} "
      f"(true {noise})")

# %%
# The predictive mean and ± 2 std (the std of the latent function; the noise is on top).
x_plot = np.linspace(-1, 11, 400)[:, None]
mean, std = gp.predict(x_plot, return_std=True)

# %%
# The log marginal likelihood over β, at the fitted width and amplitude: every point is one
# refactorization of K + βI, no new compression.
s2, h = gp.amplitude_, gp.h_
betas = np.logspace(-3, 0.5, 25)
lml = [gp.log_marginal_likelihood(np.log([s2, h, beta * s2])) for beta in betas]

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.plot(x, y, ".", ms=2, color="0.6", label="training points")
ax1.plot(x_plot[:, 0], mean, "C0", label="predictive mean")
ax1.fill_between(x_plot[:, 0], mean - 2 * std, mean + 2 * std, color="C0", alpha=0.25,
                 label="± 2 std")
ax1.set(xlabel="x", ylabel="y", title=f"GP regression, n = {n}")
ax1.legend(loc="lower left")
ax2.semilogx(betas, lml, "o-", ms=3)
ax2.axvline(gp.noise_ratio_, color="k", ls="--", label=f"fitted β = {gp.noise_ratio_:.3g}")
ax2.set(xlabel="β = σ² / s²", ylabel="log marginal likelihood",
        title="likelihood over the noise ratio")
ax2.legend()
fig.tight_layout()
plt.show()
