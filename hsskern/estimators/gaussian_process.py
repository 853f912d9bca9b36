"""Gaussian-process regression on the HSS factor: :class:`HSSGaussianProcessRegressor`.

The solver layer is :mod:`hsskern.solvers.paths.gp` (the profile log marginal likelihood from one
factor, the noise as a shift searched by refactorizations, one compression per width); this
module holds the parameters, the scikit-learn-compatible fitted state and prediction.
"""
import math
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..kernels import kernel_operator, make_kernel
from ..solvers.paths.gp import (gp_hyperparameter_search, log_marginal_likelihood,
                          prepare_gp_problem, variational_residual)
from ..solvers.paths.hss_path import HSSProblem
from ..utils._memory import check_memory, chunk_rows
from ..options import GPOptions
from ._options import OptionsParamsMixin
from .base import FitStateMixin, validate_input
from .widths import HSS_CONSTRAINTS, hss_options
from .regressor_base import RegressorBase

__all__ = ["HSSGaussianProcessRegressor"]

#: Memory for one block of the predictive variance (cross-kernel block + its solve).
_PREDICT_BLOCK_BYTES = 256 * 2**20
#: What a MemoryBudgetError at prediction suggests
_PREDICT_HINT = "predict fewer points at a time, or raise memory_budget"


def _bounds_constraint():
    return [StrOptions({"fixed"}), "array-like"]


class HSSGaussianProcessRegressor(OptionsParamsMixin, RegressorBase, FitStateMixin,
                                  BaseEstimator):
    """Gaussian-process regression whose likelihood, mean and variance come from one HSS
    factor: scikit-learn's ``GaussianProcessRegressor`` with the kernel
    ``ConstantKernel(s^2) * RBF(h) + WhiteKernel(sigma^2)`` for large n.

    With beta = sigma^2 / s^2 the covariance is s^2 (K + beta I). For a fixed width h the
    amplitude s^2 that maximises the log marginal likelihood has a closed form and the noise
    is a shift, so the likelihood is a function of log beta alone, maximised by a bounded
    scalar search whose every step is one refactorization of K + beta I (O(n r^2), its
    ``logdet`` and a solve). The width takes one compression per value tried: a local bounded
    search over log h from ``h`` (and from ``n_restarts_optimizer`` random starts). See
    :mod:`hsskern.solvers.paths.gp`.

    Parameters
    ----------
    kernel : {"gaussian", "laplacian"}, default "gaussian"
        gaussian: exp(-|x - y|^2 / (2 h^2)), scikit-learn's ``RBF(length_scale=h)``;
        laplacian: exp(-|x - y| / h), ``Matern(length_scale=h, nu=0.5)``.
    h : float, default 1.0
        The initial width (the width, with ``h_bounds="fixed"`` or ``optimizer=None``).
    h_bounds : pair of float or "fixed", default (1e-3, 1e3)
        Range of the width search.
    noise_ratio : float, default 1e-2
        The noise-to-signal variance ratio beta = sigma^2 / s^2 used with
        ``noise_ratio_bounds="fixed"`` or ``optimizer=None``; the dense route's starting
        value otherwise.
    noise_ratio_bounds : pair of float or "fixed", default (1e-6, 100)
        Range of the beta search. Where the HSS approximation + beta I is indefinite at the low
        end (a loose compression and a small beta) the search starts at the smallest definite
        beta, with a warning.
    amplitude : float or None, default None
        A fixed amplitude s^2; None: its maximum-likelihood value for every (h, beta) (closed
        form).
    normalize_y : bool, default False
        Center and scale the targets by their mean and standard deviation before fitting (as
        scikit-learn; the likelihood and ``kernel_`` are then in normalized units).
    optimizer : {"bounded"} or None, default "bounded"
        "bounded": the searches above. None: keep ``h`` and ``noise_ratio`` (the amplitude
        still takes its closed form unless ``amplitude`` is given).
    n_restarts_optimizer : int, default 0
        Extra width searches from starting widths drawn log-uniformly in ``h_bounds``
        (``random_state``); the best likelihood wins.
    tol : float, default 1e-2
        Tolerance of both searches in log h and log beta (1% in h and beta).
    options : GPOptions or None, default None
        The expert knobs (None: :class:`~hsskern.GPOptions`' defaults; nested names
        ``options__approximation`` for ``set_params``): the HSS compression
        (``rel_tol``, ``abs_tol``, ``max_rank``, ``leaf_size``, ``n_neighbors``, ...; the
        likelihood needs K - H small against beta: the defaults 1e-6 / 1e-8 / 1000 are
        tighter than the classifier's), and:

        approximation : {"auto", "hss", "exact", "nystrom"}, default "auto"
            "auto": "exact" up to ``dense_max_n`` points (where the dense factorizations
            are faster than compressions: docs/design_notes.md) when its n x n arrays fit
            ``memory_budget`` (32 n^2 bytes, checked before any work), "hss" otherwise.
        dense_max_n : int, default 6000
            "auto"'s crossover from the dense route to the HSS one (docs/design_notes.md).
            "exact": the dense route (memory checked first): the distances computed once, the
            exact likelihood and its analytic gradient from one Cholesky factor and its inverse
            per evaluation, maximised jointly over (log h, log beta) by L-BFGS-B from
            (``h``, ``noise_ratio``) as scikit-learn's optimizer, the amplitude in closed form
            (:mod:`hsskern.solvers.engines.gp_dense`); a local search, as scikit-learn's (restarts:
            ``n_restarts_optimizer``), where "hss" searches every width's noise ratio over its
            whole range.
            "nystrom": the sparse GP of Titsias ("SGPR"): ``n_components`` inducing points drawn
            once by a randomly pivoted Cholesky at the initial width ``h`` (``random_state``),
            every width's F F^T <= K the Nystrom approximation on them, hyperparameters
            maximising the collapsed variational bound
            LML(s^2 F F^T + sigma^2 I) - tr(K - F F^T) / (2 beta), a lower bound on the exact
            likelihood (equal when F F^T = K); F F^T + beta I is definite at every beta, so the
            noise search has no floor. Fit O(n k^2) per width, prediction O(k) kernel entries
            per point; mean and variance are the bound's posterior (the "DTC" predictive: the
            prior variance exact, the explained part through the pivots).
        n_components : int, default 2000
            Inducing points of "nystrom" (8 n ``n_components`` bytes while fitting, 8
            ``n_components``^2 in the fitted model); ignored otherwise.
    memory_budget : float or None, default None
        Bytes a fit may use (default 80% of the available memory), checked before any work;
        at prediction, the output and one block of test points (its cross-kernel row block,
        and for the std its solve, at most 256 MiB) must fit it: the test points are cut into
        blocks that do, and a MemoryBudgetError says so when not even one point's does.
    verbose : int, default 0
        1: a line per width; 2: also per noise evaluation.
    random_state : int, RandomState or None
        Seeds the compression and the restarts.

    Attributes
    ----------
    kernel_ : sklearn.gaussian_process.kernels.Kernel
        ``ConstantKernel(s^2) * RBF(h) + WhiteKernel(sigma^2)`` at the fitted values
        (``Matern(h, nu=0.5)`` for the Laplacian), so that scikit-learn's
        ``GaussianProcessRegressor(kernel=kernel_, optimizer=None, alpha=0)`` is the same
        model. ``kernel_.theta`` = log [s^2, h, sigma^2].
    log_marginal_likelihood_value_ : float
        At the fitted hyperparameters (of the HSS approximation; exact with
        ``approximation="exact"``; the variational bound with "nystrom").
    alpha_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        (s^2 K + sigma^2 I)^{-1} y_train_, as scikit-learn's ``alpha_`` (with K the
        approximation's: F F^T for "nystrom").
    X_train_ : ndarray of shape (n_samples, n_features)
    y_train_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        The (normalized, with ``normalize_y``) training targets.
    h_, noise_ratio_, amplitude_, noise_level_ : float
        The fitted width, beta, s^2 and sigma^2 = beta s^2.
    search_ : dict
        ``history`` ((h, beta, lml) per width tried), ``n_compressions``,
        ``n_factorizations``, ``noise_history`` ((beta, lml) of the chosen width), and
        ``h_at_bound`` / ``noise_ratio_at_bound``.
    hss_ : dict
        Ranks and memory of the chosen width's approximation and its factor.
    fit_time_ : dict
        Seconds: ``prepare`` (compressions), ``factor``, ``solve``, ``total``.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import HSSGaussianProcessRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 5, size=(200, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=200)
    >>> gp = HSSGaussianProcessRegressor(h=1.0, h_bounds=(0.1, 10),
    ...                                  noise_ratio_bounds=(1e-3, 10)).fit(X, y)
    >>> mean, std = gp.predict(X[:3], return_std=True)
    >>> bool(np.all(np.abs(mean - np.sin(X[:3, 0])) < 0.2)), bool(np.all(std > 0))
    (True, True)
    """

    _parameter_constraints = {
        **{k: HSS_CONSTRAINTS[k] for k in ("kernel", "memory_budget", "verbose", "random_state")},
        "options": [GPOptions, None],
        "h": [Interval(Real, 0, None, closed="neither")],
        "h_bounds": _bounds_constraint(),
        "noise_ratio": [Interval(Real, 0, None, closed="neither")],
        "noise_ratio_bounds": _bounds_constraint(),
        "amplitude": [Interval(Real, 0, None, closed="neither"), None],
        "normalize_y": ["boolean"],
        "optimizer": [StrOptions({"bounded"}), None],
        "n_restarts_optimizer": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }
    _options_class = GPOptions

    def __init__(self, kernel="gaussian", *, h=1.0, h_bounds=(1e-3, 1e3), noise_ratio=1e-2,
                 noise_ratio_bounds=(1e-6, 100.0), amplitude=None, normalize_y=False,
                 optimizer="bounded", n_restarts_optimizer=0, tol=1e-2, memory_budget=None,
                 verbose=0, random_state=None, options=None):
        self.kernel = kernel
        self.h = h
        self.h_bounds = h_bounds
        self.noise_ratio = noise_ratio
        self.noise_ratio_bounds = noise_ratio_bounds
        self.amplitude = amplitude
        self.normalize_y = normalize_y
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.tol = tol
        self.memory_budget = memory_budget
        self.verbose = verbose
        self.random_state = random_state
        self.options = options

    # -- fitting -----------------------------------------------------------------------------
    def _search_bounds(self):
        """(h_bounds or None, noise bounds) for the search, checked before any work."""
        fixed_h = self.optimizer is None or _is_fixed(self.h_bounds)
        fixed_noise = self.optimizer is None or _is_fixed(self.noise_ratio_bounds)
        h_b = None if fixed_h else _pair(self.h_bounds, "h_bounds")
        n_b = ((self.noise_ratio, self.noise_ratio) if fixed_noise
               else _pair(self.noise_ratio_bounds, "noise_ratio_bounds"))
        if h_b is not None and not h_b[0] <= self.h <= h_b[1]:
            raise ValueError(f"the initial width h={self.h:g} is outside h_bounds {h_b}")
        if self.n_restarts_optimizer > 0 and h_b is None:
            raise ValueError("n_restarts_optimizer > 0 needs a width search (h_bounds a pair "
                             "and optimizer='bounded')")
        return h_b, n_b

    def fit(self, X, y):
        """Fit the hyperparameters by maximum likelihood and condition on the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self
        """
        t_start = time.perf_counter()
        self._validate_params()
        h_b, n_b = self._search_bounds()
        X, y, Y = self._validate_xy(X, y)
        if self.normalize_y:
            self._y_train_mean = Y.mean(axis=0)
            std = Y.std(axis=0)
            self._y_train_std = np.where(std > 0, std, 1.0)  # constant targets: no scaling
            Y = (Y - self._y_train_mean) / self._y_train_std
        else:
            self._y_train_mean = np.zeros(Y.shape[1])
            self._y_train_std = np.ones(Y.shape[1])
        self._ravel = y.ndim == 1
        res = gp_hyperparameter_search(
            X, Y, self.kernel, self.h, h_bounds=h_b, noise_bounds=n_b,
            amplitude=self.amplitude, approximation=self._options().approximation,
            hss_options=hss_options(self), n_components=self._options().n_components,
            n_restarts=self.n_restarts_optimizer,
            random_state=self.random_state, xatol=self.tol, noise0=self.noise_ratio,
            memory_budget=self.memory_budget, log=self._log if self.verbose >= 1 else None,
            dense_max_n=self._options().dense_max_n)
        self._route = res.problem.stats["approximation"]  # the route "auto" took
        noise = res.noise
        self._K, self._inducing = res.problem.K, res.pivots
        if self._route == "nystrom":
            self._fit_low_rank(res.problem, noise)
        else:  # the pieces, not the HSSProblem (its mappings do not pickle)
            self._approximation, self._factor = res.problem.approximation, noise.factor
            self._coef = noise.coef
        self.h_ = res.h
        self.noise_ratio_ = noise.beta
        self.amplitude_ = noise.amplitude
        self.noise_level_ = noise.beta * noise.amplitude
        self.kernel_ = self._sklearn_kernel(res.h, noise.amplitude, self.noise_level_)
        self.log_marginal_likelihood_value_ = float(noise.lml)
        alpha = noise.coef / noise.amplitude
        self.alpha_ = alpha[:, 0] if self._ravel else alpha
        self.X_train_ = res.problem.K.points
        self.y_train_ = Y[:, 0].copy() if self._ravel else Y
        self.search_ = {"history": list(res.history), "n_compressions": res.n_compressions,
                        "n_factorizations": res.n_factorizations,
                        "noise_history": list(noise.history), "h_at_bound": res.h_at_bound,
                        "noise_ratio_at_bound": noise.at_bound}
        self.hss_ = dict(res.problem.stats)
        self.fit_time_ = {**dict(res.timings), "total": time.perf_counter() - t_start}
        self._warn_at_bounds(h_b, n_b, res.h_at_bound, noise.at_bound, noise.lower)
        return self

    def _fit_low_rank(self, problem, noise):
        """What prediction needs from F = K[:, P] W and G = F F^T + beta I: the pivots, the
        mean's weights W F^T G^{-1} y and the variance's matrix W F^T G^{-1} F W^T =
        W (I - beta (F^T F + beta I)^{-1}) W^T (|P| x |P|; not F, not n-sized)."""
        W, F, factor = problem.weights, problem.F, noise.factor
        self._pivot_points = problem.K.points[problem.pivots]
        self._mean_weights = W @ (F.T @ noise.coef)
        self._variance_matrix = W @ (W.T - noise.beta * factor.reduced_solve(W.T))

    def _warn_at_bounds(self, h_b, n_b, h_at, noise_at, noise_lower):
        # scikit-learn warns the same way when an optimum sits on a bound
        for name, bounds, at, value in (("h", h_b, h_at, self.h_),
                                        ("noise_ratio", n_b, noise_at, self.noise_ratio_)):
            if bounds is None or bounds[0] >= bounds[1] or at is None:
                continue
            if name == "noise_ratio" and at == "lower" and noise_lower > bounds[0]:
                msg = (f"the fitted noise_ratio={value:.4g} is at the smallest value the HSS "
                       f"approximation allows (approximation + beta I is indefinite below "
                       f"{noise_lower:.4g}), not at its bound {bounds[0]:g}: the likelihood "
                       "wants less noise; tighten rel_tol / abs_tol or raise max_rank")
            else:
                msg = (f"the fitted {name}={value:.4g} is at its {at} bound {bounds}; widen "
                       f"{name}_bounds to search further")
            warnings.warn(msg, ConvergenceWarning, stacklevel=3)

    def _sklearn_kernel(self, h, s2, sigma2):
        def wide(v):  # bounds that hold the value (the fitted kernel is not re-optimised)
            return (min(1e-5, v / 10), max(1e5, v * 10))
        if _is_fixed(self.h_bounds) or self.optimizer is None:
            h_bounds = wide(h)
        else:
            h_bounds = tuple(float(b) for b in self.h_bounds)
        if self.kernel == "gaussian":
            k = RBF(length_scale=h, length_scale_bounds=h_bounds)
        else:
            k = Matern(length_scale=h, length_scale_bounds=h_bounds, nu=0.5)
        return (ConstantKernel(s2, constant_value_bounds=wide(s2)) * k
                + WhiteKernel(sigma2, noise_level_bounds=wide(sigma2)))

    # -- likelihood ----------------------------------------------------------------------------
    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """The log marginal likelihood of the training data.

        Parameters
        ----------
        theta : array-like of shape (3,) or None
            log [s^2, h, sigma^2] (the layout of ``kernel_.theta``); None: the fitted value,
            ``log_marginal_likelihood_value_``. A width other than the fitted one takes one
            compression; any (s^2, sigma^2) at the fitted width one refactorization. With
            "nystrom" every theta takes one Nystrom approximation on the fit's inducing points
            (the fitted model keeps no n x k factor).
        eval_gradient : bool, default False
            Not available (the derivative in h would need the traces of G^{-1} dK/dh, which
            the factor does not give); True raises ValueError.
        clone_kernel : bool, default True
            Accepted for scikit-learn compatibility (``kernel_`` is never modified).

        Returns
        -------
        float
        """
        check_is_fitted(self)
        if eval_gradient:
            raise ValueError("eval_gradient=True is not supported: the gradient in the width "
                             "needs traces of (K + beta I)^{-1} dK/dh, which the factor does "
                             "not give")
        if theta is None:
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (3,) or not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be 3 finite values log [s^2, h, sigma^2], got "
                             f"{theta!r}")
        s2, h, sigma2 = np.exp(theta)
        beta = sigma2 / s2
        if self._route != "nystrom" and math.isclose(h, self.h_, rel_tol=1e-12):
            problem = HSSProblem(self._K, self._approximation, self._factor)
        else:  # the fitted model keeps no n x k factor: one Nystrom on its inducing points
            problem = prepare_gp_problem(self.X_train_, self.kernel, h, beta=beta,
                                         approximation=self._route,
                                         hss_options=hss_options(self), pivots=self._inducing,
                                         memory_budget=self.memory_budget)
        Y = self.y_train_.reshape(len(self.y_train_), -1)
        return float(log_marginal_likelihood(problem.refactor(beta), Y, s2)
                     - Y.shape[1] * variational_residual(problem) / (2.0 * beta))

    # -- prediction ------------------------------------------------------------------------------
    def predict(self, X, return_std=False, return_cov=False):
        """Posterior mean (and standard deviation or covariance) at X.

        As scikit-learn's with ``kernel_``: the variance is s^2 (1 + beta - k^T G^{-1} k), the
        latent function's plus the white noise sigma^2 (``kernel_.diag`` holds it); subtract
        ``noise_level_`` (times the target scale squared) for the latent function alone.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default False
            Computed by blocks of test points: their cross-kernel block against the training
            points (never an m x n array at once; each block at most 256 MiB or a quarter of
            ``memory_budget``) and one factor solve per block.
        return_cov : bool, default False
            The m x m covariance (small m: needs m x n memory, checked).

        Returns
        -------
        y_mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
        y_std : ndarray of shape (n_samples,) or (n_samples, n_targets), optional
        y_cov : ndarray of shape (n_samples, n_samples) or (n_samples, n_samples, n_targets),
            optional
        """
        if return_std and return_cov:
            raise RuntimeError("At most one of return_std or return_cov can be requested.")
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        if self._route == "nystrom":
            return self._predict_low_rank(X, return_std, return_cov)
        K = self._K
        scale, shift = self._y_train_std, self._y_train_mean
        n, (m, d), k = K.shape[0], X.shape, self._coef.shape[1]
        # the mean's blocks: the cross-kernel rows against the training points
        rows = self._block_rows(m, k + (2 if return_std else 0), n + d)
        if return_std:  # a std block also holds its solve: (b, n) twice more
            rows = min(rows, self._block_rows(m, k + 2, 3 * n + d))
        mean = np.empty((m, k))
        for start in range(0, m, rows):
            mean[start:start + rows] = K.cross(X[start:start + rows]) @ self._coef
        mean = mean * scale + shift
        out_mean = mean[:, 0] if mean.shape[1] == 1 else mean
        if not (return_std or return_cov):
            return out_mean
        s2, beta = self.amplitude_, self.noise_ratio_
        if return_cov:
            check_memory(8 * (3 * m * n + m * m), f"the predictive covariance of {m} points "
                         f"against {n} training points", budget=self.memory_budget,
                         hint="use return_std=True (blocked) for many points")
            C = K.cross(X).to_dense(max_bytes=8 * m * n + 1)
            V = self._factor.solve(np.ascontiguousarray(C.T))
            Kxx = kernel_operator(X, make_kernel(self.kernel, h=self.h_)).to_dense(
                max_bytes=8 * m * m + 1)
            cov = s2 * (Kxx + beta * np.eye(m) - C @ V)
            cov = cov[:, :, None] * (scale ** 2)
            return out_mean, (cov[:, :, 0] if cov.shape[2] == 1 else cov)
        var = np.empty(m)
        block = rows
        for start in range(0, m, block):
            Xb = X[start:start + block]
            C = K.cross(Xb).to_dense(max_bytes=8 * Xb.shape[0] * n + 1)  # (b, n)
            V = self._factor.solve(np.ascontiguousarray(C.T))           # (n, b)
            var[start:start + block] = s2 * (1.0 + beta - np.einsum("ij,ji->i", C, V))
        return out_mean, self._std(var, scale)

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw samples from the posterior at X, as scikit-learn's ``sample_y``: from the
        normal of :meth:`predict`'s mean and covariance (``return_cov=True``), by numpy's
        ``multivariate_normal``, each target on its own.

        The m x m covariance and its SVD need about 8 (3 m n + 5 m^2) bytes for m points
        of X against n training points: beyond ``memory_budget`` (default 80% of the
        available memory) a MemoryBudgetError with the estimate, before any work.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        n_samples : int, default 1
            Samples drawn per point of X.
        random_state : int, RandomState instance or None, default 0
            As scikit-learn's (0: the same draws at every call).

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples) or
            (n_samples_X, n_targets, n_samples)
        """
        check_is_fitted(self)
        if not isinstance(n_samples, Integral) or isinstance(n_samples, bool) \
                or n_samples < 1:
            raise ValueError(f"n_samples must be an int >= 1, got {n_samples!r}")
        rng = check_random_state(random_state)
        X = validate_input(self, X, reset=False)
        m, n = X.shape[0], self._n_predict_points()
        k = 1 if self.y_train_.ndim == 1 else self.y_train_.shape[1]
        check_memory(8 * (3 * m * n + 5 * m * m + m * k * n_samples),
                     f"sampling the posterior at {m} points (an {m} x {m} covariance and its "
                     f"SVD, against {n} training points)", budget=self.memory_budget,
                     hint="sample at fewer points")
        mean, cov = self.predict(X, return_cov=True)
        if mean.ndim == 1:
            return rng.multivariate_normal(mean, cov, n_samples).T
        return np.stack([rng.multivariate_normal(mean[:, t], cov[..., t], n_samples).T
                         for t in range(mean.shape[1])], axis=1)

    def _n_predict_points(self):
        """Training points (inducing points for "nystrom") a prediction is computed against."""
        return len(self._pivot_points) if self._route == "nystrom" else self._K.shape[0]

    def _block_rows(self, m, out_floats, floats_per_row):
        """Test points per block: the output (``out_floats`` a point) and one block of
        ``floats_per_row`` a point within ``memory_budget`` (MemoryBudgetError, with the
        estimate, when not even a block of one point fits), the block at most 256 MiB."""
        rows = chunk_rows(m, 8 * out_floats, 8 * floats_per_row, self.memory_budget,
                          what=f"{type(self).__name__} prediction on {m} points",
                          hint=_PREDICT_HINT)
        return int(max(1, min(rows, _PREDICT_BLOCK_BYTES // (8 * max(floats_per_row, 1)))))

    def _std(self, var, scale):
        if np.any(var < 0):
            warnings.warn("Predicted variances smaller than 0. Setting those variances to 0.",
                          stacklevel=3)
            var = np.maximum(var, 0.0)
        std = np.sqrt(var)[:, None] * scale
        return std[:, 0] if std.shape[1] == 1 else std

    def _predict_low_rank(self, X, return_std, return_cov):
        # with c = k(P, x) for the pivots P: mean c^T (weights), variance s^2 (1 + beta -
        # c^T V c); blocks of test points, each at most as large as the std's blocks
        kern = make_kernel(self.kernel, h=self.h_)
        pivots = kernel_operator(self._pivot_points, kern)
        s2, beta, m = self.amplitude_, self.noise_ratio_, X.shape[0]
        scale, shift = self._y_train_std, self._y_train_mean
        if return_cov:
            check_memory(8 * (2 * m * len(self._pivot_points) + m * m),
                         f"the predictive covariance of {m} points", budget=self.memory_budget,
                         hint="use return_std=True (blocked) for many points")
        mean = np.empty((m, self._mean_weights.shape[1]))
        var = np.empty(m)
        k = self._mean_weights.shape[1]
        rows = m if return_cov else self._block_rows(
            m, k + (2 if return_std else 0), 2 * len(self._pivot_points) + X.shape[1])
        for start in range(0, m, rows):
            C = pivots.cross(X[start:start + rows]).to_dense()  # (b, |P|)
            mean[start:start + rows] = C @ self._mean_weights
            if return_std or return_cov:
                CV = C @ self._variance_matrix
                var[start:start + rows] = s2 * (1.0 + beta - np.einsum("ij,ij->i", CV, C))
        mean = mean * scale + shift
        out_mean = mean[:, 0] if mean.shape[1] == 1 else mean
        if return_cov:
            Kxx = kernel_operator(X, kern).to_dense(max_bytes=8 * m * m + 1)
            cov = s2 * (Kxx + beta * np.eye(m) - CV @ C.T)
            cov = cov[:, :, None] * (scale ** 2)
            return out_mean, (cov[:, :, 0] if cov.shape[2] == 1 else cov)
        return (out_mean, self._std(var, scale)) if return_std else out_mean

def _is_fixed(bounds):
    return isinstance(bounds, str) and bounds == "fixed"


def _pair(bounds, name):
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high) or 'fixed', got {bounds!r}") \
            from None
    if not (0 < lo <= hi < math.inf):
        raise ValueError(f"{name} must satisfy 0 < low <= high < inf, got {bounds!r}")
    return lo, hi
