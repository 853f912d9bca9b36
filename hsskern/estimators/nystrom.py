"""Nystrom-linearized kernel SVM (LLSVM / LASN) as scikit-learn estimators.

Training: landmarks -> F = K(X, Z) U Lambda^{-1/2} -> a linear SVM on F: semismooth Newton
for the squared hinge loss (LASN), LIBLINEAR's dual coordinate descent for the hinge loss
(LLSVM). Prediction: K(X_new, Z) (M coef_) + intercept_. The backend is
:mod:`hsskern.solvers.paths.nystrom_path`: F does not depend on C or on the class, so
:meth:`NystromSVC.fit_path` and :class:`NystromSVCCV` build it once and sweep C with warm
starts, and one-vs-rest reuses it for every class. This module holds the parameters and builds
that backend; the shared machinery is in :mod:`.base` and :mod:`.cv`.
"""
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions

from ..kernels import KERNELS, make_kernel
from ..lowrank.nystrom import NystromFeatures
from ..options import NystromSVCOptions
from ..solvers.paths.nystrom_path import LOSSES, NystromBackend
from ._options import OptionsParamsMixin
from .base import PathClassifier
from .cv import PathClassifierCV
from .widths import GAMMA_STRINGS, compact_sigma, kernel_name, resolve_gamma, width_name

__all__ = ["NystromSVC", "NystromSVCCV"]

_FEATURE_PARAMS = ("kernel", "h", "gamma", "degree", "coef0", "sigma", "power", "n_components",
                   "landmarks", "eig_cutoff", "max_kmeans_samples", "kmeans_iter",
                   "random_state")
#: NystromFeatures' parameters that are fields of ``options`` here
_OPTION_FIELDS = NystromSVCOptions.field_names()

_COMMON_CONSTRAINTS = {
    **{k: v for k, v in NystromFeatures._parameter_constraints.items() if k not in _OPTION_FIELDS},
    # SVC's spellings, resolved to hsskern's in _kernel_params
    "kernel": [StrOptions(set(KERNELS) | {"rbf"})],
    "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions(set(GAMMA_STRINGS)), None],
    "loss": [StrOptions(set(LOSSES))],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "options": [NystromSVCOptions, None],
    "memory_budget": [Interval(Real, 0, None, closed="neither"), None],
    "probability": ["boolean"],
    "class_weight": [StrOptions({"balanced"}), dict, None],
    "verbose": ["verbose"],
}


def _kernel_params(est, X):
    """The feature parameters of ``est`` with SVC's spellings resolved on the training X
    ("rbf" is the Gaussian; gamma "scale" / "auto" become numbers, as for SVC's rbf and
    poly). ``h``, when given, is the width instead of the default "scale" (as HSSSVC); the
    compact Gaussian's ``sigma``, when None, follows gamma (:func:`compact_sigma`)."""
    params = _feature_params(est)
    kernel = kernel_name(est.kernel)
    params["kernel"] = kernel
    if kernel in ("gaussian", "laplacian"):
        if width_name(est) == "h":  # h given: it replaces the default gamma="scale"
            params["gamma"] = None
            return params
        params["gamma"] = resolve_gamma(est.gamma, X, est.kernel)
        return params
    # the polynomial's gamma is the factor of x . y, resolved as SVC's "poly" does
    gamma = resolve_gamma(est.gamma, X, "poly")
    if kernel == "compact_gaussian":
        params["gamma"] = None  # the compact kernel's width is sigma only
        if params["sigma"] is None:
            d = X.shape[1]
            power = d // 2 + 1 if params["power"] is None else params["power"]
            params["sigma"] = compact_sigma(gamma, power)
        return params
    params["gamma"] = gamma
    return params


def _feature_params(est):
    """NystromFeatures' parameters of ``est`` (flat ones and fields of its options)."""
    o = est._options()
    return {p: getattr(o, p) if p in _OPTION_FIELDS else getattr(est, p) for p in _FEATURE_PARAMS}


def _nystrom_backend(est, X):
    """The backend of a NystromSVC-like estimator ``est`` for the training points X; a fit
    that cannot fit the memory budget is refused here, before any work."""
    p = _kernel_params(est, X)
    o = est._options()
    kernel = make_kernel(p["kernel"], h=p["h"], gamma=p["gamma"], degree=p["degree"],
                         coef0=p["coef0"], sigma=p["sigma"], power=p["power"],
                         n_features=X.shape[1])
    backend = NystromBackend(
        kernel, n_components=est.n_components, landmarks=o.landmarks,
        eig_cutoff=o.eig_cutoff, max_kmeans_samples=o.max_kmeans_samples,
        kmeans_iter=o.kmeans_iter, loss=est.loss, tol=est.tol, max_iter=est.max_iter,
        intercept_scaling=o.intercept_scaling, newton_solver=o.newton_solver,
        random_state=est.random_state, memory_budget=est.memory_budget,
        verbose=max(0, int(est.verbose) - 1), log=est._log if est.verbose >= 1 else None)
    backend.check_memory(X.shape[0])
    return backend


class NystromSVC(OptionsParamsMixin, PathClassifier):
    """Kernel SVM linearized on k Nystrom landmarks (LLSVM / LASN).

    Several classes are one-vs-rest, a linear model per class on one feature map (as
    LIBLINEAR): the map is the preparation every class and every C shares, and a linear
    model per class costs one pass over the features, so one-vs-one would add work without
    the kernel SVM's reason for it. For SVC's one-vs-one model use :class:`HSSSVC`.

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "laplacian", "polynomial", "compact_gaussian"}, default "gaussian"
        "rbf" (SVC's name) is the Gaussian.
    gamma : float, "scale", "auto" or None, default "scale"
        SVC's: Gaussian width ``exp(-gamma |x-y|^2)``, with "scale" = 1 / (n_features *
        X.var()) and "auto" = 1 / n_features on the training X, so that unscaled data need
        no tuning. For "polynomial" it is the factor of x . y, resolved as for SVC's "poly"
        (None: 1); for "compact_gaussian" it sets the default ``sigma`` (below); the
        Laplacian takes a numeric gamma (1 / h) or ``h`` only.
    h : float or None, default None
        hsskern's Gaussian or Laplacian width, ``exp(-|x-y|^2 / (2 h^2))`` (gamma = 1 /
        (2 h^2)); when given it replaces the default gamma="scale" (``h`` with another
        gamma is a ValueError). ``h=None, gamma=None`` is h = 1.
    degree, coef0, sigma, power
        Other kernels' parameters (see :func:`hsskern.make_kernel`; ``power``, the compact
        Gaussian's exponent, was ``l``: still taken for one release, with a FutureWarning).
        ``sigma=None`` (the compact Gaussian) derives sigma from gamma as
        :class:`~hsskern.SparseCholeskySVC` does
        (:func:`~hsskern.estimators.widths.compact_sigma`).
    n_components : int, default 100
        Number k of landmarks (clipped to n_samples with a warning). A k whose features and
        solver do not fit ``memory_budget`` is refused before any work, naming the largest
        k that fits.
    landmarks : {"kmeans", "kmeans++", "uniform"}, default "kmeans"
    loss : {"squared_hinge", "hinge"}, default "squared_hinge"
        ``"squared_hinge"``: L2-loss SVM by semismooth Newton (LASN). ``"hinge"``: L1-loss SVM by
        LIBLINEAR's dual coordinate descent (LLSVM).
    C : float, default 1.0
        Loss weight (not divided by n).
    tol : float, default 1e-4
        Squared hinge: relative gradient norm |grad f| <= tol |grad f(0)|. Hinge: LIBLINEAR's tol.
    max_iter : int, default 1000
        Newton steps (squared hinge) or LIBLINEAR iterations (hinge).
    memory_budget : float or None, default None
        Bytes the fit may use: the feature matrix (8 n k), K(Z, Z) and its eigendecomposition
        and the solver's arrays are estimated and checked before any work
        (:func:`~hsskern.solvers.paths.nystrom_path.nystrom_memory`); default 80% of the memory
        available.
    probability : bool, default False
        Also fit Platt scaling for :meth:`predict_proba` (as :class:`~hsskern.HSSSVC`: 5
        stratified internal folds drawn with ``random_state``, each with its own landmarks
        and features, solved at this C; one sigmoid per decision column).
    random_state : int, RandomState or None
        Landmark selection (and LIBLINEAR's sweep order, and the probability folds).
    class_weight : dict, "balanced" or None, default None
        As SVC: class c's points have their loss weighted by ``class_weight[c]`` (times their
        ``sample_weight``); "balanced" uses ``n_samples / (n_classes * np.bincount(y))``.
        One weight per point, shared by every one-vs-rest model.
        ``fit(X, y, sample_weight=...)`` weights the losses the same way (LIBLINEAR's
        per-instance C; squared hinge: C w_i max(0, 1 - y_i f(x_i))^2); points of weight 0
        are dropped. The landmarks are chosen from the points as given (unweighted), so
        integer weights equal repeated rows for a fixed feature map, not through k-means.
    verbose : int, default 0
        1: a line when the features are built; 2: also the Newton solver's steps.

    options : NystromSVCOptions or None, default None
        The expert knobs (None: :class:`~hsskern.NystromSVCOptions`' defaults; nested names
        ``options__landmarks`` for ``set_params`` and searches): ``landmarks``,
        ``eig_cutoff``, ``max_kmeans_samples``, ``kmeans_iter`` (the feature map's, as
        :class:`~hsskern.NystromFeatures`'), ``intercept_scaling`` (LIBLINEAR's, default
        1.0; 0 fits no intercept) and ``newton_solver`` ("cg", "cholesky" or "auto").

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    features_ : NystromFeatures
        The fitted feature map (landmarks in ``features_.components_``, the immutable map in
        ``features_.feature_map_``).
    coef_ : ndarray of shape (1, n_components_) or (n_classes, n_components_)
        Weights on the virtual samples (one row per class for one-vs-rest).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : ndarray of shape (1,) or (n_classes,)
        Newton steps (or LIBLINEAR iterations) per binary problem.
    fit_time_ : dict
        Seconds: ``landmarks``, ``features`` (the map and F) and ``solve`` (and
        ``probability``). In :meth:`fit_path` the shared landmarks and features count in
        the first model only.
    class_weight_ : ndarray of shape (n_classes,)
        Ones (no class weights yet), SVC's attribute.
    fit_status_ : int
        0 when every binary problem met ``tol``, else 1 (SVC's meaning).
    shape_fit_ : tuple
        Shape of the X given to ``fit``.
    probA_, probB_ : ndarray of shape (1,) or (n_classes,)
        Platt's sigmoids (``probability=True`` only), as in :class:`~hsskern.HSSSVC`.
    n_features_in_, feature_names_in_

    The model is primal (weights on the landmark features), so SVC's ``support_``,
    ``support_vectors_``, ``n_support_`` and ``dual_coef_`` do not exist: every training
    point would be a "support vector" of the expansion ``K(x, Z) (M coef_)``, whose
    centres are the landmarks ``features_.components_``.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern.estimators.nystrom import NystromSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> clf = NystromSVC(gamma=1.0, n_components=50, C=10, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    _parameter_constraints = {**_COMMON_CONSTRAINTS,
                              "C": [Interval(Real, 0, None, closed="neither")]}

    _options_class = NystromSVCOptions

    def __init__(self, *, C=1.0, kernel="gaussian", degree=None, gamma="scale", coef0=1.0,
                 probability=False, tol=1e-4, class_weight=None, verbose=0, max_iter=1000,
                 random_state=None, h=None, sigma=None, power=None, n_components=100,
                 loss="squared_hinge", memory_budget=None, options=None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.probability = probability
        self.tol = tol
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.random_state = random_state
        self.h = h
        self.sigma = sigma
        self.power = power
        self.n_components = n_components
        self.loss = loss
        self.memory_budget = memory_budget
        self.options = options

    def _make_backend(self, X, values, purpose):
        return _nystrom_backend(self, X)

    def _set_backend_attributes(self, prepared, solution, model):
        params = _feature_params(self)
        params["kernel"] = kernel = kernel_name(self.kernel)
        k = prepared.feature_map.kernel  # the numbers "scale" and a None sigma resolved to
        if kernel == "compact_gaussian":
            params.update(gamma=None, sigma=k.sigma)
        elif kernel in ("gaussian", "laplacian"):
            params["gamma"] = None if params["h"] is not None else k.gamma
        else:
            params["gamma"] = k.dot_scale
        self.features_ = NystromFeatures.from_map(prepared.feature_map, **params)
        self.coef_ = solution.coef.copy()


class NystromSVCCV(OptionsParamsMixin, PathClassifierCV):
    """:class:`NystromSVC` with C chosen by cross-validated accuracy.

    Each fold builds its landmarks and feature matrix once (from its training part only) and
    sweeps the whole C grid on it with warm starts, every C scored on the held-out part with
    one decision call; the best C is then refit on all the data.

    Parameters
    ----------
    Cs : int or sequence of float, default 6
        Grid of C; an int gives ``np.logspace(-2, 3, Cs)``.
    cv : int >= 2, None, float in (0, 1), a scikit-learn splitter or an iterable, default 5
        As ``GridSearchCV``'s: an int k (None: 5) runs ``StratifiedKFold(k)``, unshuffled,
        so that the folds are ``GridSearchCV(..., cv=k)``'s; a splitter (with ``fit``'s
        ``groups``) or an iterable of (train, test) pairs is used as given. A float holds
        out that fraction once, stratified and shuffled with ``random_state`` (one fit per
        candidate, for large n): ``cv=StratifiedShuffleSplit(1, test_size=cv,
        random_state=random_state)``.
    refit : bool, default True
        Refit ``best_estimator_`` on all data with the chosen C.
    kernel, degree, gamma, coef0, probability, tol, class_weight, verbose, max_iter,
    random_state, h, sigma, power, n_components, loss, memory_budget, options
        As in :class:`NystromSVC` (``options`` a :class:`~hsskern.NystromSVCOptions`).
        ``random_state`` also shuffles a float ``cv``'s hold-out.
        ``probability`` fits the sigmoids of the refitted model only. ``class_weight``
        applies in every fold ("balanced" over the fold's training labels) and the refit;
        ``fit``'s ``sample_weight`` follows its rows into the folds (the validation accuracy
        is weighted by the test rows' weights) and the refit.

    Attributes
    ----------
    C_ : float
        The chosen C (the first, i.e. smallest, C reaching the best mean accuracy).
    cv_results_ : dict of arrays
        ``GridSearchCV``'s format, one entry per C in increasing order: ``params``,
        ``param_C``, ``split<k>_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time``, ``std_fit_time`` (a fold's landmarks and
        features divided among its C values, plus the C's own solve), ``mean_n_iter``.
    best_index_, best_params_ : the first best candidate in grid order
    best_score_ : float
    best_estimator_ : NystromSVC
        Refit on all the data with ``C_`` (its ``features_``, ``coef_``, ``intercept_``).
    n_iter_ : ndarray
        Iterations of the refitted model (of the best grid point without refit).
    classes_, n_features_in_
    fit_time_ : dict
        ``search`` and ``refit`` seconds.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import NystromSVCCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> cv = NystromSVCCV(gamma=1.0, n_components=50, Cs=[1, 10], random_state=0).fit(X, y)
    >>> cv.C_, bool(cv.score(X, y) > 0.9)
    (10.0, True)
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "Cs": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "cv": [Interval(Real, 0, 1, closed="neither"), Interval(Integral, 2, None,
                                                               closed="left"), "cv_object"],
        "refit": ["boolean"],
    }
    _estimator = NystromSVC

    _options_class = NystromSVCOptions

    def __init__(self, *, Cs=6, kernel="gaussian", degree=None, gamma="scale", coef0=1.0,
                 probability=False, tol=1e-4, class_weight=None, verbose=0, max_iter=1000,
                 random_state=None, h=None, sigma=None, power=None, n_components=100,
                 loss="squared_hinge", memory_budget=None, options=None, cv=5, refit=True):
        self.Cs = Cs
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.probability = probability
        self.tol = tol
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.random_state = random_state
        self.h = h
        self.sigma = sigma
        self.power = power
        self.n_components = n_components
        self.loss = loss
        self.memory_budget = memory_budget
        self.options = options
        self.cv = cv
        self.refit = refit
