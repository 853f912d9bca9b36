"""Kernel ridge regression on the HSS factor: :class:`HSSKernelRidge`, :class:`HSSKernelRidgeCV`.

The solver layer is :mod:`hsskern.solvers.paths.ridge_path` (one compression, one refactorization
per alpha; direct HSS solve or exact preconditioned conjugate gradients); this module holds
the parameters, the docstrings and the backend choice.
"""
import time
from numbers import Integral, Real

import numpy as np
from sklearn.metrics import r2_score
from sklearn.utils._param_validation import Interval, StrOptions

from ..options import RidgeOptions
from ..solvers.paths.ridge_path import DIRECT_REFUSES, RidgeBackend, check_alphas, per_target
from ._options import OptionsParamsMixin
from ..kernels import kernel_operator
from ..solvers.engines.ridge_dense import dense_fits, dense_loo
from .base import solve_path
from .cv import FOLD_METRICS
from .widths import (HSS_CONSTRAINTS, WIDTH_CONSTRAINTS, WIDTH_GRID_CONSTRAINTS,
                         hss_options, kernel_of, width_grid)
from .regressor_base import SCORINGS, PathRegressor, PathRegressorCV

__all__ = ["HSSKernelRidge", "HSSKernelRidgeCV"]

_COMMON_CONSTRAINTS = {
    **{k: HSS_CONSTRAINTS[k] for k in ("kernel", "memory_budget", "verbose", "random_state")},
    "options": [RidgeOptions, None],
    "solver": [StrOptions({"direct", "exact"})],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
}


class HSSKernelRidge(OptionsParamsMixin, PathRegressor):
    """Kernel ridge regression with an HSS approximation of K: scikit-learn's ``KernelRidge``
    (no intercept) for large n.

    ``fit`` compresses K once (HSS-ANN), factors K + alpha I (ULV) and solves for the dual
    coefficients c = (K + alpha I)^{-1} y; predictions are K(X_new, X_fit) c. A path of alphas
    (:meth:`fit_path`, :class:`HSSKernelRidgeCV`) reuses the compression: each alpha is a
    refactorization, never a recompression.

    Parameters
    ----------
    alpha : float or array-like of shape (n_targets,), default 1.0
        Regularization (the shift of K), >= 0; one value per target as ``KernelRidge``
        (the targets share the compression, each solved at its own alpha). alpha = 0 is
        solved by ``solver="exact"`` only (densely; the least-squares solution where K is
        singular, with ``KernelRidge``'s warning): the direct solver's H + 0 I is singular.
    kernel : {"gaussian", "rbf", "laplacian"}, default "gaussian"
        gaussian: exp(-|x - y|^2 / (2 h^2)) (scikit-learn's "rbf", a synonym here, with
        gamma = 1 / (2 h^2));
        laplacian: exp(-|x - y| / h) (scikit-learn's "laplacian" uses the l1 distance, this
        one the Euclidean).
    h : float or None, default None
        Kernel width. When both ``h`` and ``gamma`` are None, h = 1.
    gamma : float, "scale", "auto" or None, default None
        scikit-learn's spelling: gamma = 1 / (2 h^2) (gaussian), 1 / h (laplacian); "scale"
        (1 / (n_features X.var())) and "auto" (1 / n_features) as SVC, Gaussian only.
    solver : {"direct", "exact"}, default "direct"
        "direct": the HSS factor's solve, O(n r) per alpha after an O(n r^2) refactorization;
        the dual coefficients solve (H + alpha I) c = y, so their relative error against the
        exact solution is at most ||K - H||_2 / alpha (about the compression tolerance times
        ||K|| / alpha). The fit measures the relative residual of the exact system on
        256 sampled rows (it bounds the in-sample prediction error against ``KernelRidge``)
        and warns, naming it, above ``options.residual_warning`` (0.05): duplicated rows,
        small alpha or few dimensions, where the compression's error over alpha is large.
        "exact": conjugate gradients on the exact kernel (matrix-free
        products, O(n^2 d) each) preconditioned by the HSS factor, from the direct solution,
        until the relative residual of (K + alpha I) c = y is below ``tol``: the exact kernel
        ridge solution, in a few iterations when the compression is good (see
        :mod:`hsskern.solvers.paths.ridge_path`). For the Gaussian and the Laplacian at d <= 12
        the products are computed in single precision and the residual, replaced by its
        double value as it falls, decides when to stop: the same answer, ~1.5x faster.
        Where CG stops short of ``tol`` (alpha so small that K + alpha I is singular to
        rounding), the system is solved densely up to ``options.dense_max_n`` points (a
        Cholesky factor, ``KernelRidge``'s solve); above, the fit raises a ValueError naming
        the residual reached and the conditioning: never an unconverged answer.
    tol : float, default 1e-10
        Relative residual at which conjugate gradients stop (``solver="exact"``).
    max_iter : int, default 1000
        Most conjugate-gradient iterations per target (``solver="exact"``).
    options : RidgeOptions or None, default None
        The expert knobs (None: :class:`~hsskern.RidgeOptions`' defaults; nested names
        ``options__max_rank`` for ``set_params`` and searches):

        - ``rel_tol``, ``abs_tol``, ``max_rank``, ``leaf_size``, ``n_neighbors``, ...: the
          HSS compression (:class:`~hsskern.options.CompressionOptions`; defaults 1e-3 /
          1e-5 / 500 / 128 / 64 as :class:`~hsskern.HSSSVC`). A small alpha needs a tight
          tolerance for ``"direct"``: below the approximation's most negative eigenvalue
          H + alpha I is indefinite and the fit raises ``NotPositiveDefiniteError``
          (``"exact"`` then preconditions at the smallest definite shift and still
          converges).
        - ``approximation`` ({"hss", "exact", "nystrom"}, default "hss"): "exact", the dense
          kernel and a dense Cholesky factor (small n; memory checked first). "nystrom": no
          compression; a rank-``n_components`` randomly pivoted Cholesky F (F F^T <= K, so
          F F^T + alpha I is definite at every alpha) and its Woodbury factor. With
          ``solver="exact"`` it is the preconditioner to reach for where the HSS
          approximation is indefinite at alpha (moderate dimension, small alpha): the
          preconditioned spectrum lies in [1, 1 + ||K - F F^T||_2 / alpha]. With "direct"
          it is Nystrom kernel ridge, an approximation.
        - ``n_components`` (default 2000): rank of the "nystrom" approximation (8 n
          ``n_components`` bytes); ignored otherwise.
    memory_budget : float or None, default None
        Bytes the fit may use (default 80% of the available memory): the least a fit takes
        (the points, the approximation at its smallest: HSS ranks of 1, the dense K and
        factor, the Nystrom factor; the solver's vectors) is checked before any work, a
        MemoryBudgetError with the estimate when it does not fit. Prediction holds its output and works in chunks of test rows that fit the budget
        (a MemoryBudgetError when not even one row's does).
    verbose : int, default 0
    random_state : int, RandomState or None
        Seeds the randomized compression.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        c, as ``KernelRidge.dual_coef_``.
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training points.
    n_iter_ : ndarray of shape (n_targets,)
        Conjugate-gradient iterations (``"exact"``); a direct solve counts as 1.
    residual_ : ndarray of shape (n_targets,)
        ``"exact"``: the relative residual ||(K + alpha I) c - y|| / ||y|| reached (one more
        exact kernel product; the dense route's, of the weighted system with
        ``sample_weight``); NaN for ``"direct"``.
    hss_ : dict
        Ranks and memory of the approximation and its factor ("nystrom": its rank, the
        columns read and the residual's trace).
    fit_time_ : dict
        Seconds per phase: kernel, compress, factor (the first shift), refactor, solve, cg,
        residual.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import HSSKernelRidge
    >>> X = np.random.default_rng(0).normal(size=(2000, 3))
    >>> y = np.sin(X).sum(axis=1)
    >>> model = HSSKernelRidge(alpha=0.1, h=1.0, solver="exact").fit(X, y)
    >>> float(model.residual_[0]) < 1e-10
    True
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        **WIDTH_CONSTRAINTS,
        "alpha": [Interval(Real, 0, None, closed="left"), "array-like"],
    }

    _options_class = RidgeOptions

    def __init__(self, alpha=1.0, kernel="gaussian", *, gamma=None, h=None, solver="direct",
                 tol=1e-10, max_iter=1000, memory_budget=None, verbose=0, random_state=None,
                 options=None):
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.h = h
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.options = options
        self.memory_budget = memory_budget
        self.verbose = verbose
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : float or array-like of shape (n_samples,), default None
            Per-sample weights of the squared loss, as ``KernelRidge``'s (a point of weight
            0 gets a zero dual coefficient); solved densely (``options.dense_max_n``).

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)

    def _fit_values(self):
        # one value per distinct alpha; several targets with their own alphas share the
        # compression, each solved at its own (``_fit``)
        alpha = self.alpha
        if isinstance(alpha, Integral) and not isinstance(alpha, bool):
            alpha = float(alpha)  # a grid refuses ints (a count), a parameter takes them
        return np.unique(check_alphas(alpha, "alpha", allow_zero=True)).tolist()

    def _fit(self, X, y, sample_weight=None):
        if np.ndim(self.alpha) == 0 or np.size(self.alpha) == 1:
            return super()._fit(X, y, sample_weight)
        self._validate_params()
        data = self._validate_fit(X, y, sample_weight)
        alphas = np.asarray(self.alpha, dtype=np.float64)
        if alphas.ndim != 1 or alphas.size != data.Y.shape[1]:
            raise ValueError(f"alpha holds {alphas.size} values for {data.Y.shape[1]} "
                             "target(s): give one alpha, or one per target (the columns "
                             "of y), as KernelRidge")
        values = self._fit_values()
        backend = self._make_backend(data.X, values, purpose="fit")
        prepared = backend.prepare(data.X, data.Y)
        solutions = solve_path(backend, prepared, data.Y, values, data.weights)
        self._set_fitted(data, backend, prepared, per_target(solutions, alphas), shared=True)
        return self

    def _make_backend(self, X, values, purpose, leave_one_out=False):
        # a search goes on past an alpha the direct solver cannot solve (scored NaN, ranked
        # last, reported); a fit raises
        o = self._options()
        values = np.asarray(values, dtype=np.float64)
        if values.min() == 0 and (leave_one_out or self.solver == "direct"):
            raise ValueError(DIRECT_REFUSES)  # before any work
        positive = values[values > 0]
        return RidgeBackend(kernel_of(self, X=X), approximation=o.approximation,
                            hss_options=hss_options(self), n_components=o.n_components,
                            solver="direct" if leave_one_out else self.solver, tol=self.tol,
                            max_iter=self.max_iter,
                            beta=float(positive.min()) if positive.size else 1.0,
                            leave_one_out=leave_one_out,
                            indefinite="skip" if purpose == "search" else "raise",
                            memory_budget=self.memory_budget,
                            log=self._log if self.verbose >= 1 else None,
                            dense_max_n=o.dense_max_n,
                            residual_warning=o.residual_warning,
                            accept_residual=o.accept_residual)

    def _set_backend_attributes(self, prepared, solution, model):
        coef = solution.dual_coef
        self.dual_coef_ = coef[:, 0] if self._ravel else coef
        self.X_fit_ = prepared.K.points
        self.residual_ = solution.gap.copy()
        self.hss_ = dict(prepared.stats)

    def fit_path(self, X, y, alphas):
        """Fit one model per alpha on one compression (a refactorization per alpha).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        alphas : sequence of float
            Each finite and > 0, checked before any work; solved in increasing order.

        Returns
        -------
        list of HSSKernelRidge
            Fitted copies with ``alpha`` set to each value, in increasing order. The
            compression's time is counted once, in the first model's ``fit_time_``.
            ``self`` is left as it was (unfitted, or fitted as before).
        """
        return super().fit_path(X, y, alphas)


class HSSKernelRidgeCV(OptionsParamsMixin, PathRegressorCV):
    """HSSKernelRidge with alpha (and optionally the kernel width) chosen by cross-validation.

    Per kernel width K is compressed once per training set; every alpha is then a
    refactorization and a solve. With ``cv=None`` (the default, as ``RidgeCV``) the score is
    the leave-one-out error on all points, which the factor gives without refitting: with
    G = H + alpha I and c = G^{-1} y, the leave-one-out residual of point i is
    c_i / (G^{-1})_ii, and diag(G^{-1}) comes from one sweep over the ULV factor
    (``ULVFactor.inverse_diagonal``, O(n r^2 log n)). So the whole search costs one
    compression per width and one refactorization per (width, alpha), and the refit reuses
    the chosen width's compression. The leave-one-out errors are those of the ridge problem
    on the approximation H (exact with ``options.approximation="exact"``).

    Parameters
    ----------
    alphas : sequence of float, default (0.1, 1.0, 10.0)
        Grid of alpha, each > 0.
    kernel : {"gaussian", "rbf", "laplacian"}, default "gaussian"
    h : float, sequence of float or None, default None
        Kernel width(s) to try (None with ``gamma`` None: h = 1).
    gamma : float, sequence of float, "scale", "auto" or None
        scikit-learn spelling of the width (gamma = 1 / (2 h^2)); a string is resolved once
        on all of ``fit``'s X.
    cv : None, int >= 2, float in (0, 1) or a scikit-learn splitter, default None
        None: efficient leave-one-out from the factor (one "split" in ``cv_results_``);
        an int k: ``KFold(k)``, unshuffled, as ``GridSearchCV``'s; a float: one hold-out of
        that fraction, shuffled with ``random_state``; a splitter (with ``fit``'s ``groups``)
        or an iterable of (train, test) pairs is used as given.
    scoring : {"neg_mean_squared_error", "r2"}, default "neg_mean_squared_error"
        What is maximised (multi-output: averaged over targets).
    refit : bool, default True
        Refit ``best_estimator_`` on all data with the chosen (width, alpha).
    solver, tol, max_iter, memory_budget, verbose, random_state, options
        As in :class:`HSSKernelRidge` (the leave-one-out search always solves directly; the
        refit uses ``solver``; ``options`` a :class:`~hsskern.RidgeOptions`).
        ``random_state`` also shuffles a float ``cv``'s hold-out.

    Attributes
    ----------
    alpha_ : float
    h_ : float or None, gamma_ : float or None
        The chosen width (in the spelling given).
    cv_results_ : dict of arrays
        ``GridSearchCV``'s format, one entry per (width, alpha) in grid order (widths as
        given, alpha increasing): ``params``, ``param_h`` (or ``param_gamma``),
        ``param_alpha``, ``split<k>_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time``, ``std_fit_time``, ``mean_n_iter``.
    best_index_, best_params_ : the first best candidate in grid order
    best_score_ : float
    best_estimator_ : HSSKernelRidge
    n_splits_ : int
    n_iter_ : ndarray
    fit_time_ : dict with ``search`` and ``refit`` seconds
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import HSSKernelRidgeCV
    >>> X = np.random.default_rng(0).normal(size=(400, 2))
    >>> y = np.sin(X).sum(axis=1)
    >>> cv = HSSKernelRidgeCV(alphas=[0.1, 1.0], h=[0.5, 1.0]).fit(X, y)
    >>> cv.alpha_, cv.h_
    (0.1, 1.0)
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        **WIDTH_GRID_CONSTRAINTS,
        "alphas": ["array-like", Interval(Real, 0, None, closed="neither")],
        "cv": [None, Interval(Real, 0, 1, closed="neither"),
               Interval(Integral, 2, None, closed="left"), "cv_object"],
        "scoring": [StrOptions(set(SCORINGS))],
        "refit": ["boolean"],
    }
    _estimator = HSSKernelRidge

    _options_class = RidgeOptions

    def __init__(self, alphas=(0.1, 1.0, 10.0), kernel="gaussian", *, gamma=None, h=None,
                 cv=None, scoring="neg_mean_squared_error", refit=True, solver="direct",
                 tol=1e-10, max_iter=1000, memory_budget=None, verbose=0, random_state=None,
                 options=None):
        self.alphas = alphas
        self.kernel = kernel
        self.gamma = gamma
        self.h = h
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.options = options
        self.memory_budget = memory_budget
        self.verbose = verbose
        self.random_state = random_state

    def _path_values(self):
        return check_alphas(self.alphas)

    def _grid(self, X, Y):
        return width_grid(self, X)

    def _base_estimator(self, params):
        # the grid's width replaces both spellings of it
        return super()._base_estimator({"h": None, "gamma": None, **params})

    def fit(self, X, y, sample_weight=None, groups=None):
        """Search the grid by cross-validation, then refit the best candidate on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : float or array-like of shape (n_samples,), default None
            Weights of the squared loss: each fold trains on its training rows' weights and
            its score weighs the test rows by theirs (``GridSearchCV`` routing
            ``sample_weight`` to the fit and the scorer; ``cv=None``: the weighted
            leave-one-out, dense); the refit takes them all.
        groups : array-like of shape (n_samples,), default None
            Group labels for a splitter that uses them (``cv=GroupKFold(k)``).

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight, groups)

    def _fit(self, X, y, sample_weight=None, groups=None):
        self._refit_from = None  # the leave-one-out search leaves what the refit can reuse
        try:
            return super()._fit(X, y, sample_weight, groups)
        finally:
            del self._refit_from

    def _splits(self, X, y, groups=None):
        if self.cv is None:  # leave-one-out from the factor: one "split", scored on all rows
            rows = np.arange(X.shape[0])
            return [(rows, rows)]
        return super()._splits(X, y, groups)

    def _score_grid(self, X, y, splits, grid, values, **weights):
        if self.cv is not None:
            return super()._score_grid(X, y, splits, grid, values, **weights)
        if weights.get("sample_weight") is not None:
            return self._score_weighted_loo(X, y, grid, values, weights["sample_weight"])
        return self._score_loo(X, y, grid, values)

    def _score_weighted_loo(self, X, Y, grid, values, w):
        """Weighted leave-one-out scores, exact and dense (the HSS factor has no per-point
        shift): within ``options.dense_max_n`` and the memory budget, else a clear error."""
        n = X.shape[0]
        if not dense_fits(n, self._options().dense_max_n, self.memory_budget):
            raise ValueError(f"sample_weight with cv=None needs the dense leave-one-out (up "
                             f"to options.dense_max_n={self._options().dense_max_n} points "
                             f"within the memory budget; n = {n}): pass cv=5, say")
        cells = {}
        for ig, params in enumerate(grid):
            t0 = time.perf_counter()
            Kd = kernel_operator(X, kernel_of(self._base_estimator(params), X=X)).to_dense()
            cell = {"scores": np.zeros(len(values)), "solve_time": np.zeros(len(values)),
                    "n_iter": np.ones(len(values)), "setup_time": time.perf_counter() - t0}
            for i, alpha in enumerate(values):
                t0 = time.perf_counter()
                E = dense_loo(Kd, Y, float(alpha), w)
                cell["scores"][i] = FOLD_METRICS[self.scoring](Y, [Y - E], w)[0]
                cell["solve_time"][i] = time.perf_counter() - t0
            cells[ig, 0] = cell
        return cells

    def _score_loo(self, X, Y, grid, values):
        """Leave-one-out scores from the factor: one preparation per width on all points,
        one cell per width (its one "split")."""
        cells, best = {}, -np.inf
        for ig, params in enumerate(grid):
            backend = self._base_estimator(params)._make_backend(
                X, values, purpose="search", leave_one_out=True)
            t0 = time.perf_counter()
            prepared = backend.prepare(X, Y)
            cell = {"scores": np.zeros(len(values)), "solve_time": np.zeros(len(values)),
                    "n_iter": np.zeros(len(values)), "setup_time": time.perf_counter() - t0}
            for i, sol in enumerate(backend.path(prepared, Y, values)):
                E = sol.info["loo_residuals"]
                if self.scoring == "r2":
                    cell["scores"][i] = r2_score(Y, Y - E)
                else:
                    cell["scores"][i] = -float(np.mean(E ** 2))
                cell["solve_time"][i] = sum(sol.timings.values())
            cells[ig, 0] = cell
            self._log(2, f"{params}: leave-one-out {self.scoring} "
                         f"{np.round(cell['scores'], 6).tolist()}")
            # keep the best width's compression for the refit
            if np.nanmax(cell["scores"], initial=-np.inf) > best:
                best = np.nanmax(cell["scores"])
                self._refit_from = (params, prepared)
        return cells

    def _refit(self, X, y, sample_weight=None):
        est = self._base_estimator(self.best_params_)
        reuse = self._refit_from
        if sample_weight is not None or reuse is None \
                or any(reuse[0][k] != self.best_params_[k] for k in reuse[0]):
            return est.fit(X, y, sample_weight=sample_weight)
        # the leave-one-out search prepared this width on all points: no recompression
        est._validate_params()
        data = est._validate_fit(X, y)
        alpha = est._fit_values()
        est._solve(data, est._make_backend(data.X, alpha, purpose="fit"), reuse[1], alpha,
                   copies=False)
        return est

    def _why_unscored(self):
        if self.solver == "exact":  # the exact solver leaves a candidate only unconverged
            return (f"conjugate gradients stopped short of tol={self.tol} within "
                    f"max_iter={self.max_iter} and the dense route is closed on the folds "
                    "(past options.dense_max_n points or the memory budget); raise max_iter, "
                    "options.dense_max_n or memory_budget")
        return ("H + alpha I is indefinite at these alphas, so the direct solve and the "
                "leave-one-out are not defined there; tighten rel_tol / abs_tol, raise the "
                "alphas, or use solver='exact' with cv=k (conjugate gradients on the exact "
                "kernel)")

    def _set_best_attributes(self, params):
        self.h_ = params.get("h")
        self.gamma_ = params.get("gamma")
