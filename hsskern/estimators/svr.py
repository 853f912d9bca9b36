"""HSSSVR: epsilon-insensitive support vector regression on one factor of K + beta I.

The solver layer is :mod:`hsskern.solvers.paths.svr_path` (the classifier's compression and factor,
a closed-form dual ADMM for the SVR dual, then LIBSVM's exact 2n-variable decomposition, and
a C path on one preparation); this module holds the parameters and SVR's attributes.
"""
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from ..options import HSSSVROptions, PathSettings
from ..utils._memory import resolve_budget
from ..solvers.engines.cached_smo import KERNELS, engine_cache, expands_distances
from ..solvers.paths.plan import RouteOptions, engine_for
from ..solvers.paths.svr_path import SVRBackend
from ..solvers.paths.svr_smo import CachedSVRBackend
from ._options import OptionsParamsMixin
from ._svm_params import LIBSVM_CONSTRAINTS, route_seed, smo_options
from .base import FitData, check_sample_weight, validate_input
from .widths import (HSS_CONSTRAINTS, SVC_KERNEL_CONSTRAINTS, WIDTH_GRID_CONSTRAINTS,
                     exact_only, kernel_of, starts_from_zero, width_grid)
from .regressor_base import SCORINGS, PathRegressor, PathRegressorCV

__all__ = ["SVR", "HSSSVR", "HSSSVRCV"]

#: ``fit`` reaches its C from C / 10^3 through one C per decade when it solves exactly (as HSSSVC):
#: the ADMM converges slowly at large C, the decomposition from a smaller C's exact solution
#: quickly
_FIT_DECADES = 3


class HSSSVR(OptionsParamsMixin, PathRegressor):
    """epsilon-SVR (scikit-learn's ``SVR``) with the dual solved on an HSS approximation of K,
    then made exact.

    ``fit`` compresses K once (HSS-ANN), factors K + beta I once (ULV), solves the SVR dual
    ``min 1/2 b^T K b - y^T b + epsilon |b|_1, sum(b) = 0, -C <= b <= C`` (b = alpha -
    alpha*) by closed-form ADMM on that factor (one solve per iteration; the other step a
    soft-threshold and a clip), and with ``solve_exact`` makes it LIBSVM's solution by
    decomposition on the exact kernel (LIBSVM's 2n-variable form, the classifier's SMO and
    Newton steps), to LIBSVM's stopping gap ``tol``. :meth:`fit_path` solves a whole C grid on
    the one factor, each exact solution starting the next C.

    SVR's parameters with SVR's names and order (``degree``, ``coef0``, ``shrinking`` and
    ``cache_size`` aside), then ``h``, ``memory_budget``, ``random_state`` and ``options``,
    the expert knobs (:class:`~hsskern.HSSSVROptions`, nested names ``options__max_rank``).

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "laplacian"}, default "gaussian"
        gaussian (= "rbf"): exp(-|x - y|^2 / (2 h^2)) (``SVR(kernel="rbf",
        gamma=1 / (2 h^2))``).
    gamma : float, "scale", "auto" or None, default None
        scikit-learn's spelling: gamma = 1 / (2 h^2) (gaussian), 1 / h (laplacian); "scale"
        and "auto" as SVR's, on the training X. None with ``h`` None is h = 1, not SVR's
        "scale" (see the change log).
    tol : float, default 1e-3
        LIBSVM's stopping gap (max over I_up of -yG minus min over I_low, SVR's ``tol``),
        reached on all points by the decomposition. The ADMM, which only starts it, stops at
        ``max(tol, 1e-2)`` on the approximation (at ``tol`` with ``options.solve_exact=False``).
    C : float, default 1.0
        Box bound of the dual (> 0), as SVR's.
    epsilon : float, default 0.1
        Half-width of the insensitive tube (>= 0), in the units of y, as SVR's.
    verbose : int, default 0
    max_iter : int, default 100
        ADMM iterations per C.
    h : float or None, default None
        Kernel width; h = 1 when both ``h`` and ``gamma`` are None.
    memory_budget : float or None, default None
        Bytes the fit may use (default 80% of the available memory).
    random_state : int, RandomState or None
        Seeds the randomized compression (None: a fixed seed, so a fit reproduces).
    options : HSSSVROptions or None, default None
        The expert knobs (None: :class:`~hsskern.HSSSVROptions`' defaults), as HSSSVC's: the
        compression (``rel_tol``, ``abs_tol``, ``max_rank``, ``leaf_size``,
        ``n_neighbors``, ...), ``approximation`` ("exact": the dense kernel and its Cholesky
        factor, small n), ``start`` (how the first C is reached: "auto" takes the exact
        decomposition from zero for n <= 10^5), the ADMM's ``beta``, ``relaxation`` and
        ``adaptive_beta``, and ``solve_exact`` (default True: make each solution exact by
        decomposition; "auto" skips it when n x n_SV exceeds 1e10 kernel entries; False
        keeps the ADMM's solution on the approximation) with its ``max_chunk``.
    warm_start : bool, default False
        A refit starts from the previous fit's dual solution (rows appended, removed or
        reordered, targets updated, a new C or epsilon): each previous support vector found
        among the new rows (by its values) keeps its alpha - alpha*, scaled by C_new / C_old;
        every other point starts at 0; the start is clipped to the new box and made to sum
        to 0, then the exact decomposition solves from it. The model is a cold fit's to
        ``tol``. A refit whose previous solution does not map (other features or kernel
        parameters, ``options.solve_exact=False``, no previous fit) is a cold fit;
        ``warm_start_info_`` and ``verbose`` say which it was and why.

    Attributes
    ----------
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors (b_i != 0).
    support_vectors_ : ndarray of shape (n_SV, n_features)
    dual_coef_ : ndarray of shape (1, n_SV)
        alpha_i - alpha*_i of the support vectors, as SVR's.
    intercept_ : ndarray of shape (1,)
    n_support_ : ndarray of shape (1,), int32
    n_iter_ : int
        ADMM iterations plus decomposition rounds (at least 1).
    fit_status_ : int
        0 when the solution reached ``tol`` (the ADMM's on the approximation without
        ``solve_exact``), 1 otherwise (with a ``ConvergenceWarning``).
    shape_fit_ : tuple
        Shape of the training X.
    gap_ : float
        The KKT gap reached.
    beta_ : float
        ADMM penalty in force at the end (NaN with ``options.start="decomposition"``: no
        ADMM ran).
    hss_ : dict
        Ranks and memory of the approximation and its factor; ``hss_["start"]`` the start
        taken (with "decomposition" no approximation).
    fit_time_ : dict
        Seconds per phase: kernel, compress (hss), factor, admm, refactor, bias, kkt, solve_exact.
    n_features_in_, feature_names_in_
    warm_start_info_ : dict
        With ``warm_start`` only: as :class:`~hsskern.HSSSVC`'s.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import HSSSVR
    >>> X = np.random.default_rng(0).normal(size=(500, 2))
    >>> y = np.sin(X).sum(axis=1)
    >>> model = HSSSVR(C=10.0, epsilon=0.05, gamma=0.5).fit(X, y)
    >>> bool(model.gap_ < 1e-3)
    True
    """

    _path_param = "C"
    _parameter_constraints = {
        **{k: HSS_CONSTRAINTS[k] for k in ("memory_budget", "verbose", "random_state")},
        **SVC_KERNEL_CONSTRAINTS,
        # the kernels the engines evaluate (a Gram matrix or a callable: not yet for SVR)
        "kernel": [StrOptions({"gaussian", "rbf", "laplacian", "poly", "linear", "sigmoid"})],
        **{k: LIBSVM_CONSTRAINTS[k] for k in ("shrinking", "cache_size", "max_iter")},
        "C": [Interval(Real, 0, None, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "options": [HSSSVROptions, None],
        "warm_start": ["boolean"],
    }
    _options_class = HSSSVROptions

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, C=1.0,
                 epsilon=0.1, shrinking=True, cache_size=200, verbose=0, max_iter=-1, h=None,
                 memory_budget=None, random_state=None, options=None,
                 warm_start=False):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.h = h
        self.memory_budget = memory_budget
        self.random_state = random_state
        self.options = options
        self.warm_start = warm_start

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default None
            Per-sample weights, finite and >= 0: point i's bound is ``C * sample_weight[i]``
            (LIBSVM's weighted C, as SVR's). Points of weight 0 are dropped (never support
            vectors). Weighted fits take the cached SMO route.

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)

    def _validate_fit(self, X, y, sample_weight=None):
        """The rows of positive weight, their targets and weights (a :class:`FitData`)."""
        X, y, Y = self._validate_xy(X, y)
        self.shape_fit_ = X.shape  # SVR's: the X given to fit, rows of weight 0 included
        w = check_sample_weight(sample_weight, X)
        rows = None
        if w is not None and np.all(w == 1.0):
            w = None
        if w is not None and not np.all(w > 0):
            rows = np.flatnonzero(w > 0)
            X, Y, w = X[rows], Y[rows], w[rows]
        # weights and the dot-product kernels: what the HSS route's decomposition lacks
        # and a step cap (max_iter), which is the SMO engine's (LIBSVM's meaning)
        self._smo_route = (w is not None or exact_only(self) or self.max_iter != -1
                           or self._cached_from_zero(X))
        return FitData(X, Y, w, rows, ravel=True)

    #: whether a fit from zero takes the cached SMO engine where the one engine rule says so
    #: (:class:`SVR`); HSSSVR's ``options.start`` keeps its own block decomposition
    _auto_engine = False

    def _cached_from_zero(self, X):
        """Whether this fit is the exact solve from zero that the cached SMO engine does
        faster (:func:`~hsskern.solvers.paths.plan.engine_for`, the classifier's rule at its default
        share: dense points within its size, the support vectors' rows within its cache)."""
        # the cached SVR engine takes no start: a warm_start fit keeps the block route
        if not self._auto_engine or sp.issparse(X) or getattr(self, "warm_start", False):
            return False
        kernel = kernel_of(self, X=X)  # gamma="scale" reads X once
        if kernel.name not in KERNELS or not starts_from_zero(
                self, X.shape, solve_exact=bool(self._options().solve_exact)):
            return False
        n, d = X.shape
        smo = smo_options(self, self.tol)
        cache = engine_cache(n, d, smo, resolve_budget(self.memory_budget))
        expanded = expands_distances(kernel, d, smo)
        return engine_for(n, d, RouteOptions(), cache, None, expanded)[0] == "cached"

    def _takes_sparse_rows(self, shape):
        return starts_from_zero(self, shape, solve_exact=bool(self._options().solve_exact))  # as SVRBackend

    def _validate_xy(self, X, y):
        """X (n, d) and one finite target (a column vector is raveled with a warning, as
        SVR); Y its (n, 1) column."""
        self._reset()
        X, y = validate_input(self, X, y, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        return X, y, np.ascontiguousarray(y[:, None])

    def _make_backend(self, X, values, purpose):
        if getattr(self, "_smo_route", False) or exact_only(self):
            # weights and the dot-product kernels: LIBSVM's solver on the cached engine
            return CachedSVRBackend(kernel_of(self, X=X), epsilon=float(self.epsilon),
                                    smo_options=smo_options(self, self.tol),
                                    memory_budget=self.memory_budget,
                                    log=self._log if self.verbose >= 1 else None)
        # a path of one C (a fit, or a one-C path or search) reaches it by continuation
        single = len(values) == 1
        o = self._options()
        settings = PathSettings(tol=self.tol,
                                admm_tol=max(self.tol, 1e-2) if o.solve_exact else self.tol,
                                n_decades=_FIT_DECADES if (o.solve_exact and single) else 0,
                                random_state=route_seed(self.random_state),
                                verbose=max(0, int(self.verbose)))
        return SVRBackend(kernel_of(self, X=X), o, settings, epsilon=float(self.epsilon),
                          memory_budget=self.memory_budget,
                          log=self._log if self.verbose >= 1 else None)

    def _set_backend_attributes(self, prepared, solution, model):
        rows = getattr(self, "_fit_rows", None)
        self.support_ = model.support if rows is None else rows[model.support]
        self.support_vectors_ = model.support_vectors
        self.dual_coef_ = model.dual_coef
        self.intercept_ = solution.intercept.copy()
        self.n_support_ = np.array([model.support.size], dtype=np.int32)
        rr = solution.info.get("exact")
        rounds = rr.rounds if rr is not None and rr.skipped is None else 0
        self.n_iter_ = max(1, int(solution.n_iter[0]) + rounds)
        self.fit_status_ = 0 if bool(solution.converged[0]) else 1
        self.gap_ = float(solution.gap[0])
        self.beta_ = solution.info["beta"]
        self.hss_ = dict(prepared.stats)
        self.route_ = solution.info.get("route") or _svr_route(prepared.stats, rr)

    def _set_fitted(self, data, backend, prepared, solution, shared):
        self._fit_rows = data.rows  # support_ indexes the rows given to fit
        super()._set_fitted(data, backend, prepared, solution, shared)
        del self._fit_rows

    def fit_path(self, X, y, Cs):
        """Fit one model per C on one compression and one factor.

        The first C runs the ADMM and (with ``solve_exact``) the decomposition; every later C
        starts the decomposition from the previous C's exact solution, scaled by the
        multiple that minimises the new dual objective (feasible, its decision values
        scaled: no kernel product).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        Cs : sequence of float
            Each finite and > 0, checked before any work; solved in increasing order.

        Returns
        -------
        list of HSSSVR
            Fitted copies with ``C`` set to each value, in increasing order. The
            compression's time is counted once, in the first model's ``fit_time_``.
            ``self`` is left as it was (unfitted, or fitted as before).
        """
        return super().fit_path(X, y, Cs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False  # one target, as SVR
        return tags


def _svr_route(stats, exact_results):
    """The route of a fit on the HSS route's backend (:class:`SVRBackend`), in words."""
    if stats.get("start") == "decomposition":
        return "block decomposition"
    kind = "HSS" if stats.get("approximation") == "hss" else "dense"
    refined = exact_results is not None and exact_results.skipped is None
    return f"{kind} + ADMM start" if refined else f"{kind} + ADMM (approximate)"


class HSSSVRCV(OptionsParamsMixin, PathRegressorCV):
    """HSSSVR with C (and optionally the kernel width) chosen by cross-validation.

    Per kernel width and per fold, K is compressed and factored once and the whole C grid is
    solved on it (:meth:`HSSSVR.fit_path`'s path: the ADMM at the first C, then each exact
    solution starting the next); every C is scored on the held-out points with one kernel
    product for the whole grid. The best (width, C) is refitted on all data.

    Parameters
    ----------
    Cs : int or sequence of float, default 10
        Grid of C; an int gives ``np.logspace(-2, 3, Cs)``.
    h : float, sequence of float or None, default None
        Kernel width(s) to try (None with ``gamma`` None: h = 1).
    gamma : float, sequence of float or None
        scikit-learn spelling of the width (gamma = 1 / (2 h^2)).
    cv : int >= 2, None, float in (0, 1), a scikit-learn splitter or an iterable, default 5
        As ``GridSearchCV``'s: an int k (None: 5) runs ``KFold(k)``, unshuffled,
        so that the folds are ``GridSearchCV(..., cv=k)``'s; a splitter (with ``fit``'s
        ``groups``) or an iterable of (train, test) pairs is used as given. A float holds
        out that fraction once, shuffled with ``random_state`` (one fit per
        candidate, for large n): ``cv=ShuffleSplit(1, test_size=cv,
        random_state=random_state)``.
    scoring : {"neg_mean_squared_error", "r2"}, default "neg_mean_squared_error"
    refit : bool, default True
    kernel, tol, epsilon, verbose, max_iter, memory_budget, random_state, options
        As in :class:`HSSSVR` (``options`` an :class:`~hsskern.HSSSVROptions`, taken by
        every fold and the refit). ``random_state`` also shuffles a
        float ``cv``'s hold-out.

    Attributes
    ----------
    C_ : float
    h_ : float or None, gamma_ : float or None
        The chosen width (in the spelling given).
    cv_results_ : dict of arrays
        ``GridSearchCV``'s format, one entry per (width, C) in grid order.
    best_index_, best_params_, best_score_, best_estimator_, n_splits_, n_iter_, fit_time_
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import HSSSVRCV
    >>> X = np.random.default_rng(0).normal(size=(400, 2))
    >>> y = np.sin(X).sum(axis=1)
    >>> cv = HSSSVRCV(Cs=[1, 10], gamma=[0.5], epsilon=0.05, random_state=0).fit(X, y)
    >>> cv.best_params_["C"] in (1.0, 10.0), bool(cv.best_score_ > -0.05)
    (True, True)
    """

    _path_param = "C"
    _parameter_constraints = {
        # every fold and the refit take these options, as HSSSVCCV's take HSSSVC's
        **{k: v for k, v in HSSSVR._parameter_constraints.items() if k != "C"},
        "Cs": [Interval(Integral, 1, None, closed="left"), "array-like"],
        **WIDTH_GRID_CONSTRAINTS,
        "cv": [Interval(Real, 0, 1, closed="neither"),
               Interval(Integral, 2, None, closed="left"), "cv_object"],
        "scoring": [StrOptions(set(SCORINGS))],
        "refit": ["boolean"],
    }
    _estimator = HSSSVR

    _options_class = HSSSVROptions

    def __init__(self, *, Cs=10, kernel="rbf", gamma="scale", tol=1e-3, epsilon=0.1,
                 shrinking=True, cache_size=200, verbose=0, max_iter=-1, h=None,
                 memory_budget=None, random_state=None, options=None, cv=5,
                 scoring="neg_mean_squared_error", refit=True):
        self.Cs = Cs
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.h = h
        self.memory_budget = memory_budget
        self.random_state = random_state
        self.options = options
        self.cv = cv
        self.scoring = scoring
        self.refit = refit

    def _validate_xy(self, X, y):
        return HSSSVR._validate_xy(self, X, y)

    def _grid(self, X, Y):
        return width_grid(self, X)

    def _base_estimator(self, params):
        # the grid's width replaces both spellings of it
        return super()._base_estimator({"h": None, "gamma": None, **params})

    def _set_best_attributes(self, params):
        self.h_ = params.get("h")
        self.gamma_ = params.get("gamma")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False
        return tags


class SVR(HSSSVR):
    """Epsilon-Support Vector Regression: scikit-learn's SVR, on any number of points.

    The same parameters, defaults and meaning as :class:`sklearn.svm.SVR` (scikit-learn 1.9),
    and the same answer: LIBSVM's solution to ``tol``. Each fit picks its route by itself
    (``route_``): LIBSVM's SMO on the cached engine for weighted fits, the dot-product
    kernels and the exact solve from zero where the engine rule takes it (small and mid
    n), the block decomposition from zero up to 10^5 points, the dual ADMM on an HSS
    approximation of K to start it past them (:class:`HSSSVR`, which also takes the width as
    ``h``). hsskern's extras come after scikit-learn's parameters.

    Parameters
    ----------
    kernel : {"linear", "poly", "rbf", "sigmoid"}, default "rbf"
        ("gaussian" and "laplacian" are hsskern's too; a precomputed Gram matrix or a
        callable is not taken yet.)
    degree : int, default 3
    gamma : {"scale", "auto"} or float, default "scale"
    coef0 : float, default 0.0
    tol : float, default 1e-3
        LIBSVM's KKT gap.
    C : float, default 1.0
    epsilon : float, default 0.1
        Half-width of the insensitive tube, in the units of y.
    shrinking : bool, default True
    cache_size : float, default 200
        The cached SMO engine's kernel-row cache in MB.
    verbose : bool, default False
        Records of the ``logging`` module (:mod:`hsskern.utils.log`), one line per phase
        that ran.
    max_iter : int, default -1
        Most pair steps of the cached SMO engine (-1: LIBSVM's own cap).
    memory_budget : float or None, default None
        hsskern's: bytes the fit may use.
    random_state : int, RandomState or None, default None
        hsskern's: seeds the HSS compression of large problems (None: a fixed seed, so a
        fit reproduces, as scikit-learn's SVR, which has no draws, does).
    options : HSSSVROptions or None, default None
        hsskern's: the route's knobs (:class:`~hsskern.HSSSVROptions`).
    warm_start : bool, default False
        hsskern's: a refit starts from the previous fit's dual solution (rows appended,
        removed or reweighted, a new C), as :class:`SVC`'s; ``warm_start_info_`` says
        whether it did. Such fits take the block decomposition, which solves from a start
        (the cached SMO engine of small unweighted fits does not).

    Attributes
    ----------
    support_, support_vectors_, dual_coef_, intercept_, n_support_, n_iter_, fit_status_,
    shape_fit_, n_features_in_, feature_names_in_
        As scikit-learn's SVR.
    route_ : str
        The route the fit took: "cached SMO", "block decomposition", "HSS + ADMM start".
    fit_time_ : dict
        Seconds per phase that ran.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import SVR
    >>> X = np.random.default_rng(0).normal(size=(500, 2))
    >>> reg = SVR(C=10.0, epsilon=0.05).fit(X, np.sin(X).sum(axis=1))
    >>> reg.route_, bool(reg.score(X, np.sin(X).sum(axis=1)) > 0.99)
    ('cached SMO', True)
    """

    _parameter_constraints = {k: v for k, v in HSSSVR._parameter_constraints.items()
                              if k != "h"}
    _auto_engine = True

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, C=1.0,
                 epsilon=0.1, shrinking=True, cache_size=200, verbose=False, max_iter=-1,
                 memory_budget=None, random_state=None, options=None, warm_start=False):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.random_state = random_state
        self.options = options
        self.warm_start = warm_start
