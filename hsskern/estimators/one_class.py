"""OneClassSVM: LIBSVM's one-class SVM (novelty detection) on the single-fit engine.

The dual is LIBSVM's: min 1/2 a^T K a over 0 <= a_i <= 1 with sum a = nu n, no labels, no
linear term; the decision function is sum_i a_i k(x_i, x) - rho. It is a dual of LIBSVM's
form with every sign +1 and the equality's right-hand side nu n, which the engine keeps from
its feasible start (LIBSVM's: the first floor(nu n) variables at 1, the next one at the
remainder).
"""
import warnings
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, OutlierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..options import OneClassSVMOptions
from ..solvers.cached_smo import bounded_options, engine_memory, solve_dual
from ..solvers.one_class_admm import OneClassADMMOptions, prepare_one_class_admm
from ..solvers.path import check_grid
from ..utils._memory import check_memory, resolve_budget
from ._budget import budgeted_expansion
from ._convergence import warn_stopped_early
from ._svm_params import LIBSVM_CONSTRAINTS, smo_options
from ._options import OptionsParamsMixin
from .base import FitStateMixin, check_sample_weight, validate_input
from .widths import GAMMA_STRINGS, kernel_of

__all__ = ["OneClassSVM"]


def one_class_start(n, nu, weights=None):
    """LIBSVM's feasible start: the first floor(nu n) variables at their bound 1, the next at
    the remainder, so that sum a = nu n; with ``weights`` (bounds w_i), the first variables
    at their bounds until sum a = nu sum w."""
    if weights is not None:
        need = np.cumsum(weights) - weights  # what the earlier variables hold at their bounds
        return np.clip(nu * weights.sum() - need, 0.0, weights)
    alpha = np.zeros(n)
    m = int(nu * n)
    alpha[:m] = 1.0
    if m < n:
        alpha[m] = nu * n - m
    return alpha


def grow_start(alpha, G, nu_from, nu_to):
    """A feasible start at nu_to from the solution at nu_from (a nu path): scaled when nu
    falls; when it grows, scaled and clipped at 1, the rest of the new mass given to the
    variables whose gradient is smallest (those the objective wants larger), up to 1 each."""
    n = alpha.size
    a = np.minimum(1.0, alpha * (nu_to / nu_from))
    need = nu_to * n - a.sum()
    for i in np.argsort(G, kind="stable"):
        if need <= 1e-12 * n:
            break
        take = min(1.0 - a[i], need)
        a[i] += take
        need -= take
    return a


#: the kernels the HSS compression (so the ADMM start) takes
_ADMM_KERNELS = ("gaussian", "laplacian")


class OneClassSVM(OptionsParamsMixin, OutlierMixin, FitStateMixin, BaseEstimator):
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
        Seconds of the phases of the first nu: ``compress``, ``factor``, ``admm`` (0 for
        LIBSVM's start) and ``exact`` (the exact engine, every nu).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import OneClassSVM
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> det = OneClassSVM(nu=0.1).fit(X)
    >>> det.predict([[0.0, 0.0], [6.0, 6.0]]).tolist()
    [1, -1]
    """

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified within memory_budget
        return tags

    def _kernel(self, X):
        # h, when given, is the width; else gamma (default SVC's "scale")
        spec = SimpleNamespace(kernel=self.kernel, degree=self.degree, coef0=self.coef0,
                               h=self.h, gamma=None if self.h is not None else self.gamma)
        return kernel_of(spec, None, X)

    def _smo_options(self, n, d):
        need = 8 * n * d + engine_memory(n, d) + 16 * n  # points, vectors, two rows
        check_memory(need, f"OneClassSVM on {n} points x {d} features", self.memory_budget,
                     hint="raise memory_budget or subsample")
        opts = smo_options(self, self.tol)
        return bounded_options(opts, n, d, resolve_budget(self.memory_budget))

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
        self._validate_params()
        self._reset()
        X = validate_input(self, X)
        self._check_gamma()
        w = check_sample_weight(sample_weight, X)
        self.shape_fit_ = X.shape
        rows = None if w is None else np.flatnonzero(w > 0)
        Xw = X if rows is None else X[rows]
        [(alpha, rho, n_iter, converged)], start, times = self._solve(
            Xw, [float(self.nu)], None if w is None else w[rows])
        self._set_model(Xw, alpha, rho, n_iter, converged, rows)
        self.start_, self.fit_time_ = start, times
        return self

    def _check_gamma(self):
        # scikit-learn takes gamma=0; here its kernel is a constant (rbf: 1, poly: coef0^deg,
        # sigmoid: tanh(coef0)), every point scores the same and the boundary is undefined
        if isinstance(self.gamma, Real) and self.gamma == 0 and self.kernel != "linear" \
                and self.h is None:
            raise ValueError(f"gamma=0 makes the {self.kernel} kernel constant, so every "
                             "point gets the same score and the one-class boundary is "
                             "undefined: give gamma > 0 (or \"scale\", the default)")

    def fit_path(self, X, y=None, nus=None):
        """One model per nu on one validation, each nu warm-started from the last one's
        solution (sorted increasing, as the C path); ``self`` is left as it was (``y`` is
        ignored, as in :meth:`fit`).

        Returns
        -------
        list of OneClassSVM
        """
        self._validate_params()
        if nus is None:
            raise ValueError("fit_path needs the grid nus, e.g. fit_path(X, nus=[0.1, 0.5])")
        nus = np.sort(check_grid(nus, "nus"))
        if nus[0] <= 0 or nus[-1] > 1:
            raise ValueError(f"every nu must lie in (0, 1], got {nus.tolist()}")
        model = self.__class__(**self.get_params(deep=False))
        X = validate_input(model, X)
        models = []
        solutions, start, times = model._solve(X, nus.tolist())
        for nu, (alpha, rho, n_iter, converged) in zip(nus, solutions):
            m = self.__class__(**{**self.get_params(deep=False), "nu": float(nu)})
            m.n_features_in_ = model.n_features_in_
            if hasattr(model, "feature_names_in_"):
                m.feature_names_in_ = model.feature_names_in_
            m.shape_fit_ = X.shape
            m._set_model(X, alpha, rho, n_iter, converged)
            m.start_, m.fit_time_ = start, dict(times)
            models.append(m)
        return models

    def resolve_start(self, n, nu=None):
        """The start a fit on n points at ``nu`` (default this estimator's; a path: its
        smallest) takes: "admm" or "decomposition". The one rule: ``options.start``, "auto"
        taking the ADMM when nu n reaches ``options.admm_min_sv`` (measured, see
        :class:`~hsskern.OneClassSVMOptions`)."""
        o = self._options()
        nu = self.nu if nu is None else nu
        kernel = "gaussian" if self.kernel == "rbf" else self.kernel
        if o.start == "admm":
            if kernel not in _ADMM_KERNELS:
                raise ValueError(f"the ADMM start needs the HSS compression, which takes the "
                                 f"{_ADMM_KERNELS} kernels, not {self.kernel!r}: use "
                                 f"start=\"auto\" or \"decomposition\"")
            return "admm"
        if o.start == "auto" and kernel in _ADMM_KERNELS and o.admm_min_sv is not None \
                and nu * n >= o.admm_min_sv:
            return "admm"
        return "decomposition"

    def _admm(self, X, kernel):
        """The ADMM on the compression of K (its preparation's seconds too)."""
        o = self._options()
        with warnings.catch_warnings():
            # a start needs no accuracy: a node that misses rel_tol only slows the exact
            # engine, whose answer is the same
            warnings.filterwarnings("ignore", message="HSS compression", category=UserWarning)
            problem, admm = prepare_one_class_admm(
                X, kernel, approximation=o.approximation,
                hss_options=o.hss_options(random_state=0, verbose=max(0, self.verbose - 1)),
                beta=o.beta, adaptive_beta=o.adaptive_beta, memory_budget=self.memory_budget,
                options=OneClassADMMOptions(max_iter=o.admm_max_iter,
                                            relaxation=o.relaxation),
                log=self._log if self.verbose else None)
        return admm, {"compress": problem.timings.get("compress", 0.0),
                      "factor": problem.timings.get("factor", 0.0)}

    def _admm_start(self, admm, nu, warm, times):
        """The ADMM's feasible point for nu (from ``warm``, the last nu's state)."""
        res = admm.solve(nu, warm)
        times["admm"] += res.timings["iterations"] + res.timings["refactor"]
        self._log(1, f"ADMM start at nu={nu:g}: {res.n_iter} iterations, beta {res.beta:g}, "
                     f"{res.timings['iterations'] + res.timings['refactor']:.3g} s")
        return res.alpha, res.state

    def _solve(self, X, nus, weights=None):
        """Every nu's (alpha, rho, steps, converged), the start taken and the phases'
        seconds; ``weights``: LIBSVM's per-point bounds (the decomposition's start)."""
        n, d = X.shape
        kernel = self._kernel(X)
        opts = self._smo_options(n, d)
        start = self.resolve_start(n, min(nus)) if weights is None else "decomposition"
        upper = 1.0 if weights is None else weights
        every = self._options().admm_every_nu
        times = {"compress": 0.0, "factor": 0.0, "admm": 0.0, "exact": 0.0}
        admm = warm = None
        if start == "admm":
            admm, prep = self._admm(X, kernel)
            times.update(prep)
        ones = np.ones(n)
        out, alpha, G, prev = [], None, None, None
        for nu in nus:
            if admm is not None and (alpha is None or every):
                alpha, warm = self._admm_start(admm, nu, warm, times)
            elif alpha is None:
                alpha = one_class_start(n, nu, weights)
            else:
                alpha = grow_start(alpha, G, prev, nu)
            res = solve_dual(X, kernel, ones, upper, np.zeros(n), alpha, options=opts)
            times["exact"] += res.time
            self._log(1, f"nu={nu:g}: {res.n_iter} steps, gap {res.gap:.3g}, "
                         f"{res.time:.3g} s")
            alpha, G, prev = res.alpha, res.G, nu
            out.append((alpha, res.rho, res.n_iter, res.converged))
        return out, start, times

    def _set_model(self, X, alpha, rho, n_iter, converged, rows=None):
        sv = np.flatnonzero(alpha > 0)
        self.support_ = (sv if rows is None else rows[sv]).astype(np.int32)
        self.support_vectors_ = X[sv]
        self.n_support_ = np.array([0, sv.size], dtype=np.int32)
        self.dual_coef_ = alpha[sv][None, :]
        self.intercept_ = np.array([-rho])
        self.offset_ = np.array([float(rho)])  # scikit-learn's shape (1,)
        self.n_iter_ = np.array([max(int(n_iter), 1)])
        self.fit_status_ = 0 if converged else 1
        warn_stopped_early(self, int(not converged), 1, stacklevel=4)
        self._kernel_ = self._kernel(X)

    def decision_function(self, X):
        """Signed distance to the boundary: positive inside (inliers), shape (n_samples,)."""
        return self.score_samples(X) - self.offset_

    def score_samples(self, X):
        """The unshifted scoring function, ``dual_coef_ @ K(SV, X)``."""
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        return budgeted_expansion(self, X, self.support_vectors_, self._kernel_,
                                  self.dual_coef_.T)[:, 0]

    def predict(self, X):
        """+1 for inliers (decision_function > 0), -1 for outliers, as LIBSVM's."""
        return np.where(self.decision_function(X) > 0, 1, -1)
