"""OneClassSVM: LIBSVM's one-class SVM (novelty detection) on the path protocol, its path
running over nu.

The estimator is its parameters, its docstring and its backend,
:class:`~hsskern.solvers.paths.nu_path.OneClassBackend` (the dual: min 1/2 a^T K a over
0 <= a_i <= w_i with sum a = nu sum(w), no labels, no linear term; the decision function
sum_i a_i k(x_i, x) - rho), started by LIBSVM's start or by the one-class ADMM on the HSS
factor of K (:meth:`OneClassSVM.resolve_start`).
"""
from numbers import Integral, Real

import numpy as np
from sklearn.base import OutlierMixin, clone
from sklearn.utils._param_validation import Interval, StrOptions

from ..options import OneClassSVMOptions
from ..solvers.paths.nu_path import OneClassBackend
from ..solvers.paths.one_class_admm import OneClassADMMOptions
from ..solvers.paths.plan import plan_one_class_start
from ._options import OptionsParamsMixin
from ._svm_params import LIBSVM_CONSTRAINTS, engine_options
from .base import FitData, PathEstimator, check_sample_weight, validate_input
from .nu_svm import _NuParams
from .widths import GAMMA_STRINGS

__all__ = ["OneClassSVM"]

class OneClassSVM(OptionsParamsMixin, OutlierMixin, _NuParams, PathEstimator):
    """Unsupervised outlier detection: LIBSVM's one-class SVM, as scikit-learn's
    :class:`~sklearn.svm.OneClassSVM`, on hsskern's single-fit engine (LIBSVM's SMO with
    kernel rows on demand, a row cache under ``memory_budget`` and shrinking).

    Parameters
    ----------
    kernel : {"rbf", "gaussian", "laplacian", "poly", "linear", "sigmoid"}, default "rbf"
        As :class:`HSSSVC`'s (no precomputed or callable kernel here).
    degree : int, default 3
        SVC's "poly" parameter.
    gamma : float, "scale" or "auto", default "scale"
        scikit-learn's spelling, with SVC's default "scale".
    coef0 : float, default 0.0
        SVC's "poly" and "sigmoid" parameter.
    tol : float, default 1e-3
        LIBSVM's stopping tolerance (the KKT gap over all points).
    nu : float in (0, 1], default 0.5
        An upper bound on the fraction of training errors and a lower bound on the fraction
        of support vectors.
    shrinking : bool, default True
        LIBSVM's shrinking.
    cache_size : float, default 200
        The engine's kernel-row cache in MB (bounded by ``memory_budget``).
    verbose : bool, default False
    max_iter : int, default -1
        Most pair steps; -1: LIBSVM's max(10^7, 100 n).
    h : float or None, default None
        hsskern's: the Gaussian / Laplacian width (gamma = 1 / (2 h^2)); overrides gamma.
    memory_budget : float or None, default None
        hsskern's: bytes the fit may use (the engine's vectors and its row cache); default
        80% of the memory available. A fit that cannot keep two kernel rows within it is
        refused first.
    options : OneClassSVMOptions or None, default None
        How the exact engine's start is found (None: :class:`~hsskern.OneClassSVMOptions`'
        defaults): LIBSVM's start, or for many support vectors the classifier's HSS
        compression and factor of K + beta I with a one-class ADMM on it
        (``options.start``; "auto": when nu n reaches ``options.admm_min_sv``). The
        solution is the exact engine's either way; nested names ``options__start`` for
        ``set_params``.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, offset_, n_iter_,
    fit_status_, shape_fit_, n_features_in_, feature_names_in_
        As scikit-learn's OneClassSVM: ``decision_function(X) = dual_coef_ @ K(SV, X) +
        intercept_``, ``offset_ = -intercept_``, ``score_samples = decision_function +
        offset_``.
    start_ : str
        The start taken: "admm" or "decomposition" (LIBSVM's).
    fit_time_ : dict
        Seconds per phase: ``compress`` and ``factor`` (the ADMM start's preparation, counted
        once, in a path's first model), ``admm`` (0 for LIBSVM's start) and ``exact`` (the
        exact engine), these two at this model's nu.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import OneClassSVM
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> det = OneClassSVM(nu=0.1).fit(X)
    >>> det.predict([[0.0, 0.0], [6.0, 6.0]]).tolist()
    [1, -1]
    """

    _carried_attributes = PathEstimator._carried_attributes + ("shape_fit_", "start_")

    _parameter_constraints = {
        "kernel": [StrOptions({"rbf", "gaussian", "laplacian", "poly", "linear", "sigmoid"})],
        "h": [Interval(Real, 0, None, closed="neither"), None],
        "gamma": [Interval(Real, 0, None, closed="left"), StrOptions(set(GAMMA_STRINGS))],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "nu": [Interval(Real, 0, 1, closed="right")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        **{k: LIBSVM_CONSTRAINTS[k] for k in ("shrinking", "cache_size", "max_iter")},
        "memory_budget": [Interval(Real, 0, None, closed="neither"), None],
        "verbose": ["verbose"],
        "options": [OneClassSVMOptions, None],
    }

    _options_class = OneClassSVMOptions

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, nu=0.5,
                 shrinking=True, cache_size=200, verbose=False, max_iter=-1, h=None,
                 memory_budget=None, options=None):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.h = h
        self.memory_budget = memory_budget
        self.options = options

    def fit(self, X, y=None, sample_weight=None):
        """Detect the soft boundary of the set X (``y`` is ignored).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), default None
            Per-sample weights, LIBSVM's (as scikit-learn's): each point's bound becomes
            0 <= a_i <= w_i and sum a = nu sum w; points of weight 0 are left out.

        Returns
        -------
        self
        """
        return self._fit(X, None, sample_weight)

    def fit_path(self, X, y=None, nus=None):
        """One model per nu on one validation, each nu warm-started from the last one's
        solution (sorted increasing, as the C path); ``self`` is left as it was (``y`` is
        ignored, as in :meth:`fit`).

        Returns
        -------
        list of OneClassSVM
        """
        if nus is None:
            raise ValueError("fit_path needs the grid nus, e.g. fit_path(X, nus=[0.1, 0.5])")
        return clone(self)._fit_path(X, None, nus)

    def _check_gamma(self):
        # scikit-learn takes gamma=0; here its kernel is a constant (rbf: 1, poly: coef0^deg,
        # sigmoid: tanh(coef0)), every point scores the same and the boundary is undefined
        if isinstance(self.gamma, Real) and self.gamma == 0 and self.kernel != "linear" \
                and self.h is None:
            raise ValueError(f"gamma=0 makes the {self.kernel} kernel constant, so every "
                             "point gets the same score and the one-class boundary is "
                             "undefined: give gamma > 0 (or \"scale\", the default)")

    def _validate_fit(self, X, y, sample_weight=None):
        self._reset()
        X = validate_input(self, X)
        self._check_gamma()
        w = check_sample_weight(sample_weight, X)
        self.shape_fit_ = X.shape
        self._resolve_kernel(X)
        self._weighted = w is not None  # LIBSVM's start: the ADMM has no weights
        rows = None if w is None else np.flatnonzero(w > 0)
        if rows is not None:
            X, w = X[rows], w[rows]
        return FitData(X, np.ones((X.shape[0], 1)), w, rows)

    def _make_backend(self, X, values, purpose):
        n, d = X.shape
        opts = engine_options(self, n, d)  # the memory check, before any work
        self.start_ = self.resolve_start(n, min(values))
        o = self._options()
        admm = None if self.start_ != "admm" else dict(
            approximation=o.approximation,
            hss_options=o.hss_options(random_state=0, verbose=max(0, self.verbose - 1)),
            beta=o.beta, adaptive_beta=o.adaptive_beta, memory_budget=self.memory_budget,
            options=OneClassADMMOptions(max_iter=o.admm_max_iter, relaxation=o.relaxation))
        return OneClassBackend(self._kernel_, opts, self._engine_log(), admm=admm,
                               admm_every_nu=o.admm_every_nu)

    def resolve_start(self, n, nu=None):
        """The start a fit on n points at ``nu`` (default this estimator's; a path: its
        smallest) takes, "admm" or "decomposition", by the plan's rule
        (:func:`~hsskern.solvers.paths.plan.plan_one_class_start`)."""
        o = self._options()
        kernel = "gaussian" if self.kernel == "rbf" else self.kernel
        return plan_one_class_start(n, self.nu if nu is None else nu, start=o.start,
                                    kernel=kernel, admm_min_sv=o.admm_min_sv,
                                    weighted=getattr(self, "_weighted", False))[0]

    def _set_target_attributes(self, data, backend, solution):
        model = self._model
        self.support_ = (model.support if data.rows is None else
                         data.rows[model.support]).astype(np.int32)
        self.support_vectors_ = model.support_vectors
        self.n_support_ = np.array([0, model.support.size], dtype=np.int32)
        self.dual_coef_ = model.dual_coef
        self.intercept_ = solution.intercept.copy()
        self.offset_ = -self.intercept_  # scikit-learn's shape (1,)
        self.n_iter_ = np.maximum(solution.n_iter, 1)
        self.fit_status_ = int(not np.all(solution.converged))
        self._warn_stopped(solution)

    def decision_function(self, X):
        """Signed distance to the boundary: positive inside (inliers), shape (n_samples,)."""
        return self._raw_decision(X)[:, 0]

    def score_samples(self, X):
        """The unshifted scoring function, ``dual_coef_ @ K(SV, X)``."""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for inliers (decision_function > 0), -1 for outliers, as LIBSVM's."""
        return np.where(self.decision_function(X) > 0, 1, -1)
