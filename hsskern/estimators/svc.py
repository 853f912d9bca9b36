"""SVC: scikit-learn's SVC, with its signature, its defaults and its answers, and SVCCV, its
grid search over C (and gamma) on one preparation per fold.

The estimator is a docstring and an ``__init__``, as scikit-learn's SVC in
``svm/_classes.py``: the backend is :class:`HSSSVC`'s (:func:`~.hss_svc._hss_backend`),
whose plan picks each fit's route by itself; the shared machinery is in :mod:`.base` and
:mod:`.cv`.
"""
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ..options import HSSSVCOptions
from ._options import OptionsParamsMixin
from ._svm_params import (PROBABILITY_CONSTRAINT, deprecated_sigmoid, probability_on,
                          warn_probability)
from .base import PathClassifier
from .hss_svc import _COMMON_CONSTRAINTS, HSSSVCCV, _hss_backend, route_of
from .widths import (SVC_KERNEL_CONSTRAINTS, SVCKernelsMixin, WIDTH_GRID_CONSTRAINTS,
                     starts_from_zero)

__all__ = ["SVC", "SVCCV"]

_SVC_CONSTRAINTS = {
    **_COMMON_CONSTRAINTS,
    **{k: v for k, v in SVC_KERNEL_CONSTRAINTS.items() if k != "h"},
    "probability": PROBABILITY_CONSTRAINT,
    "warm_start": ["boolean"],
}


class SVC(OptionsParamsMixin, SVCKernelsMixin, PathClassifier):
    """C-Support Vector Classification: scikit-learn's SVC, on any number of points.

    The same parameters, defaults and meaning as :class:`sklearn.svm.SVC` (scikit-learn 1.9),
    and the same answer: LIBSVM's solution to ``tol``, so the same predictions, decision
    values, support vectors, ``dual_coef_`` and ``intercept_`` to LIBSVM's tolerance. A user
    switches by changing the import. Each fit picks its route by itself (``route_`` says
    which): LIBSVM's SMO with a row cache on small and mid problems, a block decomposition
    past them, started from the dual ADMM on an HSS approximation of the kernel, or grown in
    stages from a subsample's exact solution, on data where LIBSVM's cost grows as n^2. The
    route's knobs are ``options`` (:class:`~hsskern.HSSSVCOptions`), after scikit-learn's
    parameters with ``memory_budget``.

    Parameters
    ----------
    C : float, default 1.0
        Regularization: the box bound of the dual, > 0.
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"} or callable, default "rbf"
        scikit-learn's kernels ("gaussian", exp(-gamma |x - y|^2) as "rbf", and
        "laplacian", exp(-gamma |x - y|), are hsskern's too).
    degree : int, default 3
        Degree of the "poly" kernel.
    gamma : {"scale", "auto"} or float, default "scale"
        Kernel coefficient of "rbf", "poly" and "sigmoid": "scale" is 1 / (n_features *
        X.var()), "auto" 1 / n_features, on the training X.
    coef0 : float, default 0.0
        The constant of "poly" and "sigmoid".
    shrinking : bool, default True
        LIBSVM's shrinking heuristic (of the cached SMO engine).
    probability : bool, default False
        Deprecated, as in scikit-learn 1.9 (removed in 1.11): use
        ``CalibratedClassifierCV(SVC(), ensemble=False)``. ``True`` still fits Platt's
        sigmoids on 5 internal folds (hsskern's calibration, as :class:`HSSSVC`'s) for
        :meth:`predict_proba`, with scikit-learn's FutureWarning.
    tol : float, default 1e-3
        Tolerance of the stopping criterion: LIBSVM's KKT gap m(a) - M(a).
    cache_size : float, default 200
        The kernel-row cache of the SMO engine, in MB (bounded by ``memory_budget``).
    class_weight : dict or "balanced", default None
        Class c's points get the bound ``C * class_weight[c]``; "balanced" uses
        ``n_samples / (n_classes * np.bincount(y))``.
    verbose : bool, default False
        A line per phase that ran (and per C), as records of the ``logging`` module
        (:mod:`hsskern.utils.log`), one whole line each.
    max_iter : int, default -1
        Hard limit on the SMO engine's pair steps per binary problem, -1 for LIBSVM's own
        (max(10^7, 100 n)). The block decomposition of larger problems is not capped.
    decision_function_shape : {"ovo", "ovr"}, default "ovr"
        The shape of :meth:`decision_function` with more than two classes: "ovo" the
        one-vs-one pairs' values, "ovr" scikit-learn's transformation of them to one score
        per class. Training is one-vs-one either way, as scikit-learn's.
    break_ties : bool, default False
        With "ovr" and more than two classes, :meth:`predict` takes the argmax of
        :meth:`decision_function` instead of the one-vs-one vote.
    random_state : int, RandomState instance or None, default None
        Seeds the probability folds (None: random, as scikit-learn's) and hsskern's own
        draws: the HSS route's randomized compression and a staged fit's subsample (None:
        a fixed seed, so every fit at the defaults gives the same model, as scikit-learn's).
    memory_budget : float or None, default None
        hsskern's: bytes the fit may use, checked against an estimate before the heavy work
        (default 80% of the available memory).
    options : HSSSVCOptions or None, default None
        hsskern's: the route's knobs (:class:`~hsskern.HSSSVCOptions`: ``start``,
        ``approximation``, the compression, ``admm_max_iter``, ``solve_exact``,
        ``multiclass``...), nested names ``options__start`` for ``set_params``.
    warm_start : bool, default False
        hsskern's: a refit starts from the previous fit's dual solution (the nightly
        retrain: rows appended, removed or reweighted, or a new C), each previous support
        vector found among the new rows keeping its alpha (scaled to the new C), then the
        exact decomposition solves from there: a cold fit's model, to ``tol``. A refit the
        previous solution does not map to (other features, classes or kernel) is a cold
        fit; ``warm_start_info_`` says which it was. With ``gamma="scale"`` new rows move
        the width, and every decision value is recomputed: give gamma as a number for the
        fastest refits.

    Attributes
    ----------
    class_weight_ : ndarray of shape (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    coef_ : not provided
        (scikit-learn's exists for the linear kernel only; use ``dual_coef_ @
        support_vectors_``.)
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV)
        ``y_i alpha_i`` of the support vectors, in scikit-learn's one-vs-one layout.
    fit_status_ : int
        0 when every binary problem reached ``tol``, 1 otherwise.
    intercept_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
    n_features_in_, feature_names_in_
    n_iter_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        The solver's iterations per binary problem (the SMO engine's pair steps, LIBSVM's
        count, on that route).
    support_ : ndarray of shape (n_SV,)
    support_vectors_ : ndarray of shape (n_SV, n_features)
    n_support_ : ndarray of shape (n_classes,), dtype int32
    probA_, probB_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Platt's parameters with ``probability=True``, else empty; deprecated as in
        scikit-learn 1.9 (reading them warns).
    shape_fit_ : tuple of int
    route_ : str
        The route the fit took: "cached SMO", "block decomposition", "HSS + ADMM start",
        "staged growth" (see :class:`HSSSVC`; pairs on different routes: each with its
        number of pairs).
    fit_time_ : dict
        Seconds per phase that ran.
    warm_start_info_ : dict
        With ``warm_start`` only: whether the fit started warm, why not, and how many
        previous support vectors it kept and dropped.

    See Also
    --------
    SVCCV : C (and gamma) chosen by cross-validation, one preparation per fold.
    HSSSVC : the same machinery with the HSS route's knobs and the width as ``h``.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from hsskern import SVC
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = SVC().fit(X[:1000], y[:1000])
    >>> clf.route_, round(clf.score(X[1000:], y[1000:]), 3)
    ('cached SMO', 0.964)
    """

    _parameter_constraints = {**_SVC_CONSTRAINTS,
                              "C": [Interval(Real, 0, None, closed="neither")]}
    _options_class = HSSSVCOptions

    probA_ = deprecated_sigmoid("probA_")
    probB_ = deprecated_sigmoid("probB_")

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability="deprecated", tol=1e-3, cache_size=200,
                 class_weight=None, verbose=False, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, memory_budget=None, options=None,
                 warm_start=False):
        self.C = C
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
        self.memory_budget = memory_budget
        self.options = options
        self.warm_start = warm_start

    def fit(self, X, y, sample_weight=None):
        """Fit the SVM model (scikit-learn's ``SVC.fit``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (n_samples,
            n_samples) with ``kernel="precomputed"``
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default None
            Per-sample weights: point i's bound is ``C * sample_weight[i] *
            class_weight_[y[i]]``.

        Returns
        -------
        self
        """
        warn_probability(self)
        return super().fit(X, y, sample_weight)

    def _make_backend(self, X, values, purpose):
        return self._multiclass_backend(_hss_backend(self, X, None, purpose), purpose)

    def _takes_sparse_rows(self, shape):
        return starts_from_zero(self, shape)

    def _set_backend_attributes(self, prepared, solution, model):
        self.route_ = route_of(solution.info)
        if not probability_on(self):  # scikit-learn's: empty without probability=True
            self._probA, self._probB = np.empty(0), np.empty(0)


class SVCCV(HSSSVCCV):
    """:class:`SVC` with C (and gamma) chosen by cross-validation: ``GridSearchCV(SVC(),
    ...)``'s answer, faster.

    As ``RidgeCV`` is to ``Ridge``: the candidates that differ only in C share one
    preparation per fold and one warm-started path, where ``GridSearchCV`` fits each on its
    own. With ``param_grid`` it is a drop-in for ``GridSearchCV(SVC(), param_grid, cv=...,
    scoring=..., refit=..., n_jobs=...)``: the same candidates in the same order, every
    model fitted on its fold as :meth:`SVC.fit` fits it, the same scores to the solver's
    tolerance, ``cv_results_`` in its layout and its ``best_params_``.

    Parameters
    ----------
    Cs : int or sequence of float, default 10
        Grid of C; an int gives ``np.logspace(-2, 3, Cs)``.
    kernel, degree, coef0, shrinking, tol, cache_size, class_weight, verbose, max_iter,
    decision_function_shape, break_ties, random_state, memory_budget, options
        As in :class:`SVC`, for every fold and the refit.
    gamma : {"scale", "auto"}, float or sequence of float, default "scale"
        The width(s) to try; a string is computed once on all of ``fit``'s X.
    param_grid : dict or list of dict, or None, default None
        ``GridSearchCV``'s grid over :class:`SVC`'s parameters (then ``Cs`` and a ``gamma``
        sequence are not used).
    scoring : str, callable or None, default None
        A scikit-learn scorer (None: accuracy).
    cv : int, cross-validation generator or iterable, default 5
        As ``GridSearchCV``'s ``cv`` (an int: stratified k-fold; a float in (0, 1) holds
        out that fraction once).
    refit : bool, default True
        Refit ``best_estimator_`` on all data.
    n_jobs : int or None, default None
        How the (fold, candidate) cells of a ``param_grid`` search run (see
        :class:`HSSSVCCV`).

    Attributes
    ----------
    C_, gamma_, cv_results_, best_index_, best_params_, best_score_, best_estimator_,
    n_iter_, classes_, class_weight_, fit_time_
        As :class:`HSSSVCCV`'s; ``best_estimator_`` an :class:`SVC`.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import SVCCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> search = SVCCV(Cs=[0.1, 1, 10], gamma=[0.5, 2.0]).fit(X, y)
    >>> len(search.cv_results_["mean_test_score"]), type(search.best_estimator_).__name__
    (6, 'SVC')
    """

    _parameter_constraints = {
        **{k: v for k, v in HSSSVCCV._parameter_constraints.items()
           if k not in ("h", "probability")},
        **{k: SVC_KERNEL_CONSTRAINTS[k] for k in ("degree", "coef0")},
        "gamma": [v for v in WIDTH_GRID_CONSTRAINTS["gamma"] if v is not None],
        "kernel": SVC_KERNEL_CONSTRAINTS["kernel"],
    }
    _estimator = SVC

    def __init__(self, *, Cs=10, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, tol=1e-3, cache_size=200, class_weight=None, verbose=False,
                 max_iter=-1, decision_function_shape="ovr", break_ties=False,
                 random_state=None, memory_budget=None, options=None, param_grid=None,
                 scoring=None, cv=5, refit=True, n_jobs=None):
        self.Cs = Cs
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.memory_budget = memory_budget
        self.options = options
        self.param_grid = param_grid
        self.scoring = scoring
        self.cv = cv
        self.refit = refit
        self.n_jobs = n_jobs

    def _grid(self, X, Y):
        if callable(self.kernel) or self.kernel in ("linear", "precomputed"):
            return [{}]  # no width to search
        return super()._grid(X, Y)

    def _base_estimator(self, params):
        # SVC has gamma only: the grid's gamma replaces this estimator's (a sequence)
        own = SVC().get_params(deep=False)
        kw = {k: v for k, v in self.get_params(deep=False).items() if k in own}
        if not isinstance(kw.get("gamma"), (str, Real)):
            kw["gamma"] = "scale"
        return SVC(**kw).set_params(**params)

    def _candidate_estimator(self, params):
        if self.param_grid is not None and "gamma" not in params and not isinstance(
                self.gamma, (str, Real)):
            raise ValueError(f"gamma={self.gamma!r} is a grid: with param_grid give the "
                             "widths in it (param_grid={'gamma': [...], ...})")
        return self._base_estimator(params)

    def _set_best_attributes(self, params):
        self.gamma_ = params.get("gamma")
