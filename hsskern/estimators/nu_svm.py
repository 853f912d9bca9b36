"""NuSVC and NuSVR: LIBSVM's nu-machines on the path protocol, their path running over nu.

Each is its parameters, its docstring and its backend: :class:`~hsskern.solvers.paths.nu_path.
NuSVCBackend` (one-vs-one through :class:`~hsskern.solvers.paths.pairwise.PairwiseBackend`, Platt's
sigmoids by the base's ``_fit_sigmoids``, SVC's fitted attributes by the base's) and
:class:`~hsskern.solvers.paths.nu_path.NuSVRBackend`; the problems they solve are described there.
"""
import os
import sys
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions

from ..solvers.paths.nu_path import NuSVCBackend, NuSVRBackend, check_margins, check_nu_pairs
from ..solvers.paths.path import check_grid
from ._convergence import warn_stopped_early
from ._svm_params import (LIBSVM_CONSTRAINTS, PROBABILITY_CONSTRAINT, deprecated_sigmoid,
                          engine_options, probability_on, warn_probability)
from .base import FitData, PathClassifier, check_sample_weight, label_index, validate_input
from .regressor_base import PathRegressor
from .widths import GAMMA_STRINGS, kernel_of

__all__ = ["NuSVC", "NuSVR", "check_nus"]

#: the package's folder: the first frame outside it is the caller a warning names
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def check_nus(nus):
    """A nu grid (fit_path) sorted increasing, each in (0, 1]."""
    nus = np.sort(check_grid(nus, "nus"))
    if nus[0] <= 0 or nus[-1] > 1:
        raise ValueError(f"every nu must lie in (0, 1], got {nus.tolist()}")
    return nus


_NU_CONSTRAINTS = {
    "nu": [Interval(Real, 0, 1, closed="right")],
    "kernel": [StrOptions({"rbf", "gaussian", "laplacian", "poly", "linear", "sigmoid"})],
    "h": [Interval(Real, 0, None, closed="neither"), None],
    "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions(set(GAMMA_STRINGS))],
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Interval(Real, None, None, closed="neither")],
    **{k: LIBSVM_CONSTRAINTS[k] for k in ("shrinking", "cache_size", "max_iter")},
    "tol": [Interval(Real, 0, None, closed="neither")],
    "memory_budget": [Interval(Real, 0, None, closed="neither"), None],
    "verbose": ["verbose"],
}


class _NuParams:
    """The kernel and the nu path's grid, shared by NuSVC, NuSVR and OneClassSVM."""

    _path_param = "nu"

    def _kernel(self, X):
        # h, when given, is the width; else gamma (default SVC's "scale")
        spec = SimpleNamespace(kernel=self.kernel, degree=self.degree, coef0=self.coef0,
                               h=self.h, gamma=None if self.h is not None else self.gamma)
        return kernel_of(spec, None, X)

    def _resolve_kernel(self, X):
        """The kernel of this fit, gamma="scale" read from every row given to fit (weight 0
        too, as LIBSVM's), kept for the backend and the fold scorer."""
        self._kernel_ = self._kernel(X)

    def _check_path_values(self, values):
        return check_nus(values)

    def _engine_log(self):
        return self._log if self.verbose else None

    def _warn_stopped(self, solution):
        # the warning points at the caller's line (fit, fit_path, a search's refit)
        frame, level = sys._getframe(), 1
        while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
            frame, level = frame.f_back, level + 1
        warn_stopped_early(self, int(np.sum(~solution.converged)), solution.converged.size,
                           stacklevel=level + 1)


class NuSVC(_NuParams, PathClassifier):
    """nu-support vector classification, as scikit-learn's :class:`~sklearn.svm.NuSVC`
    (LIBSVM's nu-SVC, one-vs-one for more than two classes), on hsskern's single-fit engine
    (LIBSVM's SMO in its Solver_NU mode, kernel rows on demand from a cache under
    ``memory_budget``, shrinking).

    Parameters
    ----------
    nu : float in (0, 1], default 0.5
        An upper bound on the fraction of margin errors and a lower bound on the fraction of
        support vectors; for each pair of classes it must satisfy LIBSVM's
        nu (n1 + n2) / 2 <= min(n1, n2) (a ValueError says the largest nu).
    kernel : {"rbf", "gaussian", "laplacian", "poly", "linear", "sigmoid"}, default "rbf"
    degree, gamma, coef0 : SVC's (3, "scale", 0.0)
    shrinking : bool, default True
    probability : bool, default False
        Deprecated, as scikit-learn 1.9's (removed in 1.11; scikit-learn's FutureWarning):
        use ``CalibratedClassifierCV(NuSVC(), ensemble=False)``. True fits Platt's
        sigmoids (:meth:`predict_proba`), as :class:`HSSSVC` does: decision values of 5
        stratified internal folds (drawn with ``random_state``) held out of nu-SVC fits at
        the same nu, one sigmoid per pair of classes, LIBSVM's pairwise coupling for more
        than two. The fit then solves each pair 6 times.
    tol : float, default 1e-3
        LIBSVM's stopping tolerance (the scaled dual's KKT gap).
    cache_size : float, default 200
        The engine's kernel-row cache in MB (bounded by ``memory_budget``).
    class_weight : dict, "balanced" or None, default None
        LIBSVM's weighted nu: a class's weight multiplies its points' sample weights, that
        is their bounds and their share of nu's sums ("balanced": n / (k n_class), which
        makes every pair's classes equally heavy with unit sample weights, so any nu in
        (0, 1] is feasible).
        scikit-learn's NuSVC takes this parameter but ignores it.
    verbose : bool, default False
        Records of the ``logging`` module, one line per nu and pair.
    max_iter : int, default -1
        Most pair steps of each binary problem; -1: LIBSVM's max(10^7, 100 l).
    decision_function_shape : {"ovr", "ovo"}, default "ovr"
        As scikit-learn's: "ovo" gives the pairs' values, "ovr" the votes plus a bounded
        confidence (multiclass only).
    break_ties : bool, default False
        As scikit-learn's: with "ovr" and more than two classes, :meth:`predict` takes the
        argmax of :meth:`decision_function`.
    random_state : int, RandomState or None, default None
        Seeds the probability folds (``probability=True``); nothing else is random.
    h : float or None, default None
        hsskern's: the Gaussian / Laplacian width (gamma = 1 / (2 h^2)); overrides gamma.
    memory_budget : float or None, default None
        hsskern's: bytes a fit may use (the engine's vectors and its row cache); default
        80% of the available memory.

    Attributes
    ----------
    classes_, class_weight_, support_, support_vectors_, n_support_, dual_coef_,
    intercept_, n_iter_, fit_status_, shape_fit_, n_features_in_, feature_names_in_
        As scikit-learn's NuSVC (the support vectors grouped by class; ``dual_coef_`` and
        ``intercept_`` in LIBSVM's one-vs-one layout, sign-flipped for two classes so that
        positive values mean ``classes_[1]``).
    probA_, probB_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Deprecated, as scikit-learn 1.9's (reading them warns; empty without
        ``probability=True``). Platt's sigmoid per pair (``probability=True``): P = 1 / (1 +
        exp(probA_ f + probB_)), f the pair's value, positive for its first class; two
        classes, as :class:`HSSSVC`'s: f is ``decision_function`` and P that of
        ``classes_[1]``.

    Notes
    -----
    ``class_weight`` acts (scikit-learn's is ignored). Sample weights multiply each point's
    bound and nu's sums, as LIBSVM's; points
    of weight 0 are dropped. With ``probability=True``, an internal fold whose classes do
    not admit nu (small classes), or where it leaves no margin, has no model: its points'
    held-out values are 0 (LIBSVM solves such a fold from an infeasible start anyway).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import NuSVC
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> clf = NuSVC(nu=0.3).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    probA_ = deprecated_sigmoid("probA_")
    probB_ = deprecated_sigmoid("probB_")

    _parameter_constraints = {**_NU_CONSTRAINTS,
                              "class_weight": [StrOptions({"balanced"}), dict, None],
                              "decision_function_shape": [StrOptions({"ovr", "ovo"})],
                              "probability": PROBABILITY_CONSTRAINT,
                              "break_ties": ["boolean"],
                              "random_state": ["random_state"]}

    def __init__(self, *, nu=0.5, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability="deprecated", tol=1e-3, cache_size=200,
                 class_weight=None, verbose=False, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, h=None, memory_budget=None):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.h = h
        self.memory_budget = memory_budget

    def fit(self, X, y, sample_weight=None):
        """Fit on X, y (``sample_weight`` multiplies each point's bound and nu's sums, as
        LIBSVM's; points of weight 0 are dropped).

        Returns
        -------
        self
        """
        warn_probability(self)
        return super().fit(X, y, sample_weight)

    def fit_path(self, X, y, nus, sample_weight=None):
        """One model per nu (sorted increasing) on one validation, each pair's dual
        warm-started from the last nu's solution (scaled to the new sums, clipped at the
        bounds, the rest given to the variables of smallest gradient: always feasible).
        Every nu is checked against every pair's classes before any work. ``self`` is left
        as it was.

        Returns
        -------
        list of estimators, one per nu in increasing order
        """
        return clone(self)._fit_path(X, y, nus, sample_weight)

    def _multiclass_rule(self):
        return "ovo"  # LIBSVM's nu-SVC trains the pairs of classes, as SVC

    def _validate_xy(self, X, y):
        out = super()._validate_xy(X, y)
        self._resolve_kernel(out[0])
        return out

    def _validate_fit(self, X, y, sample_weight):
        data = super()._validate_fit(X, y, sample_weight)
        # each class's weight: what decides which nu every pair admits (LIBSVM's test)
        self._class_mass = (data.classes, np.bincount(label_index(data.Y), data.weights,
                                                      minlength=data.classes.size))
        return data

    def _make_backend(self, X, values, purpose):
        if purpose != "search":  # a nu some pair does not admit, refused before any work
            check_nu_pairs(values, *self._class_mass)
        classes = self._class_mass[0]
        inner = NuSVCBackend(self._kernel_, engine_options(self, *X.shape),
                             self._engine_log(), negative_first=classes.size == 2)
        return self._multiclass_backend(inner, purpose)

    def _set_target_attributes(self, data, backend, solution):
        # Solver_NU's r of each pair is the margin its model is divided by
        check_margins(float(solution.C), solution.info.get("r", ()), data.classes)
        super()._set_target_attributes(data, backend, solution)

    def _set_backend_attributes(self, prepared, solution, model):
        self._warn_stopped(solution)
        if not probability_on(self):  # scikit-learn 1.9's: empty without probability=True
            self._probA, self._probB = np.empty(0), np.empty(0)


class NuSVR(_NuParams, PathRegressor):
    """nu-support vector regression, as scikit-learn's :class:`~sklearn.svm.NuSVR`
    (LIBSVM's nu-SVR: the tube's width epsilon is solved for, nu bounding the fraction of
    points outside it from above and of support vectors from below), on hsskern's
    single-fit engine in its Solver_NU mode.

    Parameters
    ----------
    nu : float in (0, 1], default 0.5
    C : float > 0, default 1.0
    kernel, degree, gamma, coef0, shrinking, tol, cache_size, verbose, max_iter, h,
    memory_budget
        As :class:`NuSVC`'s.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, n_iter_, fit_status_,
    shape_fit_, n_features_in_, feature_names_in_
        As scikit-learn's NuSVR: ``predict(X) = K(X, SV) @ dual_coef_[0] + intercept_``.
    epsilon_ : float
        The tube's half-width LIBSVM reports (-r of Solver_NU).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import NuSVR
    >>> X = np.random.default_rng(0).uniform(-2, 2, size=(200, 1))
    >>> reg = NuSVR(nu=0.5, C=10.0).fit(X, np.sin(X[:, 0]))
    >>> bool(reg.score(X, np.sin(X[:, 0])) > 0.9)
    True
    """

    _parameter_constraints = {**_NU_CONSTRAINTS,
                              "C": [Interval(Real, 0, None, closed="neither")]}
    _carried_attributes = PathRegressor._carried_attributes + ("shape_fit_",)

    def __init__(self, *, nu=0.5, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, tol=1e-3, cache_size=200, verbose=False, max_iter=-1, h=None,
                 memory_budget=None):
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.h = h
        self.memory_budget = memory_budget

    def fit(self, X, y, sample_weight=None):
        """Fit on X, y (``sample_weight`` multiplies each point's bound C and nu's sums, as
        LIBSVM's; points of weight 0 are dropped).

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)

    def fit_path(self, X, y, nus, sample_weight=None):
        """One model per nu (sorted increasing) on one validation, each warm-started from
        the last nu's solution; ``self`` is left as it was.

        Returns
        -------
        list of estimators, one per nu in increasing order
        """
        return clone(self)._fit_path(X, y, nus, sample_weight)

    def _validate_fit(self, X, y, sample_weight=None):
        self._reset()
        X, y = validate_input(self, X, y, y_numeric=True)
        self.shape_fit_ = X.shape
        self._resolve_kernel(X)
        w = check_sample_weight(sample_weight, X)
        rows = None if w is None or np.all(w > 0) else np.flatnonzero(w > 0)  # LIBSVM's
        if rows is not None:
            X, y, w = X[rows], y[rows], w[rows]
        Y = np.asarray(y, dtype=np.float64)[:, None]
        return FitData(X, Y, w, rows, ravel=True)

    def _make_backend(self, X, values, purpose):
        n, d = X.shape
        return NuSVRBackend(self._kernel_, engine_options(self, n, d, 2 * n),
                            self._engine_log(), C=float(self.C))

    def _set_target_attributes(self, data, backend, solution):
        super()._set_target_attributes(data, backend, solution)
        model = self._model
        self.support_ = (model.support if data.rows is None else
                         data.rows[model.support]).astype(np.int32)
        self.support_vectors_ = model.support_vectors
        self.n_support_ = np.array([0, model.support.size], dtype=np.int32)
        self.dual_coef_ = model.dual_coef
        self.intercept_ = solution.intercept.copy()
        self.epsilon_ = float(solution.info["epsilon"])
        self.fit_status_ = int(not np.all(solution.converged))
        self._warn_stopped(solution)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False  # LIBSVM's: one target
        return tags
