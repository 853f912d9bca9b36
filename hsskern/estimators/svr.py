"""HSSSVR: epsilon-insensitive support vector regression on one factor of K + beta I.

The solver layer is :mod:`hsskern.solvers.svr_path` (the classifier's compression and factor,
a closed-form dual ADMM for the SVR dual, then LIBSVM's exact 2n-variable decomposition, and
a C path on one preparation); this module holds the parameters and SVR's attributes.
"""
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..options import HSSSVROptions
from ..solvers.svr_path import SVRBackend
from ._options import OptionsParamsMixin, legacy_init
from .base import validate_input
from .widths import (HSS_CONSTRAINTS, WIDTH_CONSTRAINTS,
                         WIDTH_GRID_CONSTRAINTS, hss_options, kernel_of, starts_from_zero,
                         width_grid)
from .regressor_base import SCORINGS, PathRegressor, PathRegressorCV

__all__ = ["HSSSVR", "HSSSVRCV"]

#: ``fit`` reaches its C from C / 10^3 through one C per decade when it solves exactly (as HSSSVC):
#: the ADMM converges slowly at large C, the decomposition from a smaller C's exact solution
#: quickly
_FIT_DECADES = 3

#: the old flat parameters, now fields of ``options`` (taken with a FutureWarning)
_LEGACY = ("beta", "rel_tol", "abs_tol", "max_rank", "leaf_size", "n_neighbors",
           "approximation", "start", "relaxation", "adaptive_beta", "refine", "max_chunk")


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
        Seeds the randomized compression.
    options : HSSSVROptions or None, default None
        The expert knobs (None: :class:`~hsskern.HSSSVROptions`' defaults), as HSSSVC's: the
        compression (``rel_tol``, ``abs_tol``, ``max_rank``, ``leaf_size``,
        ``n_neighbors``, ...), ``approximation`` ("exact": the dense kernel and its Cholesky
        factor, small n), ``start`` (how the first C is reached: "auto" takes the exact
        decomposition from zero for n <= 10^5), the ADMM's ``beta``, ``relaxation`` and
        ``adaptive_beta``, and ``solve_exact`` (default True: make each solution exact by
        decomposition; "auto" skips it when n x n_SV exceeds 1e10 kernel entries; False
        keeps the ADMM's solution on the approximation) with its ``max_chunk``. The old flat
        parameters of the same names still work for one release, with a ``FutureWarning``.
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
        Seconds per phase: kernel, compress (hss), factor, admm, refactor, bias, kkt, refine.
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
        **WIDTH_CONSTRAINTS,
        "C": [Interval(Real, 0, None, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "options": [HSSSVROptions, None],
        "warm_start": ["boolean"],
    }
    _options_class = HSSSVROptions
    _legacy_names = _LEGACY

    @legacy_init
    def __init__(self, *, kernel="gaussian", gamma=None, tol=1e-3, C=1.0, epsilon=0.1,
                 verbose=0, max_iter=100, h=None, memory_budget=None, random_state=None,
                 options=None, warm_start=False):
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.verbose = verbose
        self.max_iter = max_iter
        self.h = h
        self.memory_budget = memory_budget
        self.random_state = random_state
        self.options = options
        self.warm_start = warm_start

    def _takes_sparse_rows(self, shape):
        return starts_from_zero(self, shape, refine=bool(self._options().solve_exact))  # as SVRBackend

    def _validate_xy(self, X, y):
        """X (n, d) and one finite target (a column vector is raveled with a warning, as
        SVR); Y its (n, 1) column."""
        self._reset()
        X, y = validate_input(self, X, y, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        return X, y, np.ascontiguousarray(y[:, None])

    def _make_backend(self, X, values, purpose):
        # a path of one C (a fit, or a one-C path or search) reaches it by continuation
        single = len(values) == 1
        o = self._options()
        return SVRBackend(kernel_of(self, X=X), epsilon=float(self.epsilon),
                          approximation=o.approximation, start=o.start,
                          hss_options=hss_options(self, verbose_offset=0), beta=o.beta,
                          max_iter=self.max_iter,
                          tol=max(self.tol, 1e-2) if o.solve_exact else self.tol,
                          relaxation=o.relaxation, adaptive_beta=o.adaptive_beta,
                          refine=o.solve_exact, refine_tol=self.tol, max_chunk=o.max_chunk,
                          n_decades=_FIT_DECADES if (o.solve_exact and single) else 0,
                          memory_budget=self.memory_budget,
                          log=self._log if self.verbose >= 1 else None)

    def _set_backend_attributes(self, prepared, solution, model):
        self.support_ = model.support
        self.support_vectors_ = model.support_vectors
        self.dual_coef_ = model.dual_coef
        self.intercept_ = solution.intercept.copy()
        self.n_support_ = np.array([model.support.size], dtype=np.int32)
        rr = solution.info["refinement"]
        rounds = rr.rounds if rr is not None and rr.skipped is None else 0
        self.n_iter_ = max(1, int(solution.n_iter[0]) + rounds)
        self.fit_status_ = 0 if bool(solution.converged[0]) else 1
        self.shape_fit_ = prepared.K.points.shape
        self.gap_ = float(solution.gap[0])
        self.beta_ = solution.info["beta"]
        self.hss_ = dict(prepared.stats)

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
        every fold and the refit; the old flat names ``rel_tol=`` ... ``max_chunk=`` still
        work for one release, with a ``FutureWarning``). ``random_state`` also shuffles a
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
    _legacy_names = _LEGACY

    @legacy_init
    def __init__(self, *, Cs=10, kernel="gaussian", gamma=None, tol=1e-3, epsilon=0.1,
                 verbose=0, max_iter=100, h=None, memory_budget=None, random_state=None,
                 options=None, cv=5, scoring="neg_mean_squared_error", refit=True):
        self.Cs = Cs
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.epsilon = epsilon
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
