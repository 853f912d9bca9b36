"""HSSSVC: exact-hinge-loss kernel SVM trained by dual ADMM on one factor of K + beta I.

The kernel matrix is compressed once (HSS, or kept dense for ``approximation="exact"``),
K + beta I is factored once, and the path of :mod:`hsskern.solvers.hss_path` solves every
C of a grid (:meth:`HSSSVC.fit_path` / :class:`HSSSVCCV`) on it. Several classes are SVC's
one-vs-one by default (one such problem per pair of classes,
:mod:`hsskern.solvers.pairwise`), or one-vs-rest on one preparation for every class. This
module holds the parameters and builds that backend; the shared machinery is in :mod:`.base`
and :mod:`.cv`.
"""
from numbers import Integral, Real

import numpy as np

from sklearn.utils._param_validation import Interval, StrOptions

from ..options import HSSSVCOptions
from ..solvers.exact_path import ExactBackend
from ..solvers.hss_path import HSSBackend
from ..solvers.one_fit import OneFitBackend
from ._options import OptionsParamsMixin, legacy_init
from .base import PathClassifier
from .cv import PathClassifierCV
from .widths import (HSS_CONSTRAINTS, SVC_KERNEL_CONSTRAINTS,
                         WIDTH_GRID_CONSTRAINTS, SVCKernelsMixin, hss_options, kernel_of,
                         starts_from_zero, width_grid)

__all__ = ["HSSSVC", "HSSSVCCV"]


#: the old flat parameters, now fields of ``options`` (taken with a FutureWarning)
_LEGACY = ("beta", "rel_tol", "abs_tol", "max_rank", "leaf_size", "n_neighbors",
           "approximation", "start", "relaxation", "adaptive_beta", "refine", "max_chunk",
           "multiclass")

_COMMON_CONSTRAINTS = {
    "kernel": HSS_CONSTRAINTS["kernel"],
    "memory_budget": HSS_CONSTRAINTS["memory_budget"],
    "verbose": HSS_CONSTRAINTS["verbose"],
    "random_state": HSS_CONSTRAINTS["random_state"],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="neither"), None],
    "class_weight": [StrOptions({"balanced"}), dict, None],
    "probability": ["boolean"],
    "decision_function_shape": [StrOptions({"ovo", "ovr"})],
    "options": [HSSSVCOptions, None],
}


def _hss_backend(est, X, width, purpose):
    """The backend of an HSSSVC-like estimator ``est`` at one kernel width (X, the training
    points, resolves gamma="scale" / "auto")."""
    kernel = kernel_of(est, width, X)
    o = est._options()
    opts = hss_options(est, verbose_offset=0)
    log = est._log if est.verbose >= 1 else None
    # fit on the ADMM route reaches its C from C / 1000 when it solves exactly: a cold ADMM at a
    # large C is a poor start for the decomposition, a scaled exact solution of a smaller C
    # a good one (the decomposition from zero takes its C alone)
    n_decades = 3 if (o.solve_exact and purpose == "fit") else 0
    # the decomposition stops at LIBSVM's default gap, or at a tighter tol when asked for
    refine_tol = 1e-3 if est.tol is None else min(1e-3, est.tol)
    hss = HSSBackend(kernel, approximation=o.approximation, start=o.start,
                     hss_options=opts,
                     beta=o.beta, max_iter=est.max_iter, tol=est.tol,
                     relaxation=o.relaxation, adaptive_beta=o.adaptive_beta,
                     refine=o.solve_exact, refine_tol=refine_tol, max_chunk=o.max_chunk,
                     n_decades=n_decades, memory_budget=est.memory_budget, log=log,
                     store_kernel=purpose != "fit",
                     probe_C=float(est.C) if purpose == "fit" else None)
    if purpose != "fit" or o.start != "auto":
        return hss
    # one fit whose exact SVM is better grown in stages (OneFitBackend.resolve_start: past
    # the HSS route's exact step, or from zero with many support vectors) takes them
    staged = ExactBackend(kernel, validation_fraction=0.0, tol=refine_tol, hss_options=opts,
                          max_chunk=o.max_chunk, memory_budget=est.memory_budget,
                          random_state=est.random_state, log=log)
    return OneFitBackend(hss, staged)


class HSSSVC(OptionsParamsMixin, SVCKernelsMixin, PathClassifier):
    """Kernel SVM (exact hinge loss) trained by dual ADMM on an HSS approximation of K.

    ``fit`` compresses K once, factors K + beta I once (ULV) and runs the closed-form ADMM of
    Cipolla & Gondzio (Algorithm 2) with that one factor (on small problems, the exact
    decomposition from zero instead: ``options.start``). Several classes train as SVC does,
    one binary problem per pair of classes (``options.multiclass="ovo"``, the pairs on every
    core), so that the predictions are SVC's; ``"ovr"`` trains one model per class on one
    preparation instead.

    SVC's parameters with SVC's names, order and meaning (``shrinking``, ``cache_size`` and
    ``break_ties`` aside), then ``h``, ``memory_budget`` and ``options``, which holds the
    expert knobs of the compression, the ADMM and the exact solve
    (:class:`~hsskern.HSSSVCOptions`; nested names ``options__max_rank`` for ``set_params``
    and ``GridSearchCV``).

    Parameters
    ----------
    C : float, default 1.0
        Box constraint of the dual, > 0.
    kernel : {"gaussian", "rbf", "laplacian", "poly", "linear", "sigmoid", "precomputed"} \
or callable, default "gaussian"
        gaussian: exp(-|x - y|^2 / (2 h^2)) = exp(-gamma |x - y|^2), which is SVC's "rbf"
        (accepted as a synonym); laplacian: exp(-|x - y| / h). SVC's other kernels are
        solved by the exact decomposition only (no compression, factor or ADMM;
        ``options.start="admm"`` or ``options.solve_exact=False`` is a ValueError with them):
        "poly" ((gamma x.y + coef0)^degree), "linear" (x.y), "sigmoid" (tanh(gamma x.y +
        coef0), not positive definite: its dual may have several KKT points, and the one
        returned need not be LIBSVM's), "precomputed" (``fit`` takes the Gram matrix K(X,
        X), the prediction methods K(X_test, X_train)) and a callable k(A, B) -> array of
        shape (len(A), len(B)), evaluated in blocks (its K is stored when it fits the memory
        budget, as a precomputed one is).
    degree : int, default 3
        Degree of the "poly" kernel (SVC's); ignored by the other kernels.
    gamma : float, "scale", "auto" or None, default None
        scikit-learn's spelling: gamma = 1 / (2 h^2) (gaussian), 1 / h (laplacian). As SVC,
        "scale" is 1 / (n_features * X.var()) and "auto" 1 / n_features, on the training X
        (not for the Laplacian). Give ``h`` or ``gamma``, not both (a ValueError). For the
        poly and sigmoid kernels gamma is the factor of x.y, and None means "scale" (SVC's
        default). For the Gaussian and the Laplacian, None with ``h`` None is h = 1, not
        SVC's "scale" (see the change log: the default stays for this release).
    coef0 : float, default 0.0
        The constant of the "poly" and "sigmoid" kernels (SVC's); ignored by the others.
    probability : bool, default False
        Also fit Platt scaling for :meth:`predict_proba` / :meth:`predict_log_proba`, as SVC:
        the decision values of 5 stratified internal folds (drawn with ``random_state``;
        each fold compressed, factored and solved at this C like ``fit``) fit one sigmoid
        per binary model (one-vs-one: per pair, on its two classes' points, then LIBSVM's
        pairwise coupling). ``fit`` then costs about five more fits on 4/5 of the data.
        See :meth:`predict_proba` for how its argmax relates to :meth:`predict`.
    tol : float or None, default 1e-2
        Stop the ADMM when LIBSVM's optimality gap (m(a) - M(a), the measure LIBSVM's
        ``tol`` bounds) is below ``tol``; checked every 10 iterations with one kernel
        (approximation) product. None: always run ``max_iter`` iterations. A C whose
        solution misses ``tol`` (and is not recovered by ``options.solve_exact``) raises a
        ``ConvergenceWarning``, which says so when the approximation turned out indefinite
        (its dual is then not convex). The exact solve stops at a gap of ``min(tol, 1e-3)``
        (1e-3, LIBSVM's default, for None).
    class_weight : dict, "balanced" or None, default None
        As SVC: class c's points get the bound ``C * class_weight[c]`` (times their
        ``sample_weight``); "balanced" uses ``n_samples / (n_classes * np.bincount(y))``.
        One weight per point (the point's own class sets it, "balanced" computed over all
        of ``y``), so each pair of one-vs-one is SVC's weighted pair problem and column k of
        one-vs-rest the binary "k vs rest" problem with those weights.
    verbose : int, default 0
        1: a line per phase and per C; 2: also per decomposition round.
    max_iter : int, default 100
        Most ADMM iterations per C (one factor solve each). The paper runs exactly 10 with no
        stopping test (``max_iter=10, tol=None`` and ``HSSSVCOptions(relaxation=1.0,
        adaptive_beta=False)``).
    decision_function_shape : {"ovr", "ovo"}, default "ovr"
        SVC's: the shape of :meth:`decision_function` with several classes trained
        one-vs-one ("ovo": the pairs' values; "ovr": SVC's transformation of them to one
        score per class). "ovo" needs ``options.multiclass="ovo"``; two classes give shape
        (n_samples,) either way.
    random_state : int, RandomState or None
        Seeds the randomized compression (and the probability folds).
    h : float or None, default None
        Kernel width (the paper's h). When both ``h`` and ``gamma`` are None, h = 1.
    memory_budget : float or None, default None
        Bytes the fit may use; checked against an estimate before the heavy work starts
        (default: 80% of the memory available).
    options : HSSSVCOptions or None, default None
        The expert knobs (None: :class:`~hsskern.HSSSVCOptions`' defaults): the
        compression (``rel_tol``, ``abs_tol``, ``max_rank``, ``leaf_size``,
        ``n_neighbors``, ...; defaults 1e-3 / 1e-5 / 500 / 128 / 64, tighter than the
        paper's: the SVM at large C needs more of the kernel's fine structure than its loose
        settings keep), the kernel the ADMM factors (``approximation``: "hss" or "exact"),
        how the first C is reached (``start``: "auto" takes the exact decomposition from
        zero, with no compression, factor or ADMM, for n <= 100,000), the ADMM (``beta``,
        ``relaxation``, ``adaptive_beta``), the exact solve after it (``solve_exact``,
        ``max_chunk``) and the multiclass training (``multiclass``: "ovo", SVC's one-vs-one,
        or "ovr", one model per class on one preparation). The old flat parameters of the
        same names (``HSSSVC(rel_tol=1e-4)``, ``set_params(refine=False)``: the field is
        ``solve_exact`` now) still work for one release, with a ``FutureWarning``.
    warm_start : bool, default False
        A refit starts from the previous fit's dual solution (the nightly retrain of a
        model on its data with rows appended, removed or reweighted, or at a new C): each
        previous support vector found among the new rows (by its values and label) keeps
        its alpha, scaled by C_new / C_old; every other point starts at 0; the start is
        clipped to the new bounds and made to meet sum y_i alpha_i = 0, then the exact
        decomposition solves from it. The model is a cold fit's to ``tol``. A refit whose
        previous solution does not map (other features, classes or kernel parameters,
        ``options.solve_exact=False``, no previous fit) is a cold fit;
        ``warm_start_info_`` and ``verbose`` say which it was and why.

    Attributes
    ----------
    SVC's attributes with SVC's shapes: n_models binary models, 1 for two classes,
    n_classes (n_classes - 1) / 2 for one-vs-one (the pairs in the order of
    :meth:`decision_function`'s "ovo" columns), n_classes for one-vs-rest.

    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class (ones without ``class_weight``), as SVC's.
    support_ : ndarray of shape (n_SV,)
        Indices of the training points with a nonzero coefficient in some model (points
        of weight 0 never are), grouped by class in the order of ``classes_`` and by index
        within a class, as SVC's.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    n_support_ : ndarray of int32, shape (n_classes,)
        Support vectors per class (of the point's own label).
    dual_coef_ : ndarray of shape (1, n_SV), (n_classes - 1, n_SV) or (n_classes, n_SV)
        ``y_i alpha_i``. Two classes: one row, y_i = +1 for ``classes_[1]`` (SVC's sign, so
        ``decision_function`` is ``dual_coef_ @ K(SV, X) + intercept_``). One-vs-one: SVC's
        layout, a support vector of class c holding its coefficient in the pair (c, o) in
        row ``o - (o > c)``, with y_i = +1 for the pair's first class. One-vs-rest: one row
        per model (class k against the rest).
    intercept_ : ndarray of shape (n_models,)
    n_iter_ : ndarray of shape (n_models,)
        ADMM iterations (one-vs-rest classes run together, so their entries are equal); with
        ``solve_exact`` on the ADMM route, summed over the continuation C / 1000, C / 100, C / 10,
        C of ``fit``; decomposition rounds for a fit grown in stages (``hss_["start"]``
        "staged").
    fit_status_ : int
        0 when every model reached its stopping test, 1 otherwise (SVC's meaning).
    shape_fit_ : tuple
        Shape of the X given to ``fit``.
    probA_, probB_ : ndarray of shape (n_models,)
        Platt's sigmoid per model, P = 1 / (1 + exp(probA_ f + probB_)) (``probability=True``
        only).
    hss_ : dict
        Statistics of the approximation (ranks, memory; see ``HSSMatrix.stats()``) and the
        ``start`` taken; with "decomposition" no approximation (``approximation`` None) and
        the working-set cap ``max_chunk``; with "staged" (one fit grown in stages from a
        subsample's exact SVM, see :class:`~hsskern.HSSSVCOptions`' ``start``) the
        ``stages``' sizes and the measured ``sv_share``. One-vs-one: ``{"pairs": (each pair's,)}``.
    fit_time_ : dict
        Seconds per phase: kernel, compress (hss), factor, admm, bias, refine (for ``fit`` on
        the ADMM route, summed over its continuation C values; "staged": split, subsample,
        decomposition; one-vs-one: summed over the pairs, which run concurrently, so more
        than the wall time).
    beta_ : float or ndarray of shape (n_models,)
        The ADMM penalty used (NaN with the start "decomposition" or "staged": no ADMM ran);
        one-vs-one, one per pair.
    admm_ : dict
        Residual histories and objectives of the final ADMM run, and ``refinement`` (one
        :class:`~hsskern.solvers.refine.RefineResult` per model, or None without
        ``solve_exact``); one-vs-one, each entry but ``refinement`` a tuple with one per pair.
    n_features_in_, feature_names_in_
    warm_start_info_ : dict
        With ``warm_start`` only: ``warm`` (whether the fit started from the previous
        solution), ``reason`` (why not, else None), ``kept`` / ``dropped`` (previous
        support vectors found among the new rows / not found) and ``n_samples``.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import HSSSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> clf = HSSSVC(h=1.0, C=10.0, random_state=0).fit(X, y)
    >>> clf.hss_["start"], bool(clf.score(X, y) > 0.95)
    ('decomposition', True)
    >>> [m.C for m in HSSSVC(h=1.0).fit_path(X, y, [0.1, 1, 10])]
    [0.1, 1.0, 10.0]
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        **SVC_KERNEL_CONSTRAINTS,
        "C": [Interval(Real, 0, None, closed="neither")],
        "warm_start": ["boolean"],
    }

    _options_class = HSSSVCOptions
    _legacy_names = _LEGACY

    @legacy_init
    def __init__(self, *, C=1.0, kernel="gaussian", degree=3, gamma=None, coef0=0.0,
                 probability=False, tol=1e-2, class_weight=None, verbose=0, max_iter=100,
                 decision_function_shape="ovr", random_state=None, h=None,
                 memory_budget=None, options=None, warm_start=False):
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
        self.decision_function_shape = decision_function_shape
        self.random_state = random_state
        self.h = h
        self.memory_budget = memory_budget
        self.options = options
        self.warm_start = warm_start

    def _make_backend(self, X, values, purpose):
        # a fit's pairs are solved by one path call and read by no one after: each is
        # prepared on its worker and dropped, not the 9 n points' copies held at once
        return self._multiclass_backend(_hss_backend(self, X, None, purpose),
                                        release=purpose == "fit")

    def _takes_sparse_rows(self, shape):
        return starts_from_zero(self, shape)

    def _set_backend_attributes(self, prepared, solution, model):
        info = solution.info
        self.beta_ = np.asarray(info["beta"], dtype=float) if self._pairwise else info["beta"]
        self.hss_ = dict(prepared.stats)
        self.admm_ = {"primal_residuals": info["primal_residuals"],
                      "dual_residuals": info["dual_residuals"],
                      "objective": info["objective"], "converged": info["admm_converged"],
                      "n_margin": info["n_margin"],
                      "equality_residual": info["equality_residual"],
                      "refinement": (None if info["refinement"] is None
                                     else list(info["refinement"]))}


class HSSSVCCV(OptionsParamsMixin, PathClassifierCV):
    """HSSSVC with C (and optionally the kernel width) chosen by validation accuracy.

    Per kernel width and per fold, K is compressed and K + beta I factored once; the ADMM then
    runs along the whole C grid (warm-started, all classes together), and every C is scored on
    the held-out points with one blocked kernel product for the whole grid. The best pair is
    refitted on all data.

    A grid search over C should use this estimator rather than ``GridSearchCV(HSSSVC(),
    ...)``: ``GridSearchCV`` clones and fits each candidate on its own, while here the
    candidates that differ only in C share one preparation per fold and one warm-started
    path. With ``param_grid`` it is a drop-in for ``GridSearchCV(HSSSVC(), param_grid,
    cv=..., scoring=..., refit=..., n_jobs=...)``: the same candidates in the same order,
    every model fitted on its fold as ``HSSSVC.fit`` would fit it (gamma="scale" on the
    fold's rows), the same scores to the solver's tolerance, ``cv_results_`` in its layout
    and its choice of ``best_params_``.

    Parameters
    ----------
    param_grid : dict or list of dict, or None, default None
        ``GridSearchCV``'s grid over :class:`HSSSVC`'s parameters (C, gamma or h, and any
        other, the options' fields by their nested names: ``{"options__max_rank": [100,
        200]}``), searched in ``ParameterGrid``'s order. A candidate without C takes HSSSVC's
        C = 1; without a width, this estimator's scalar ``h`` / ``gamma``. With it ``Cs`` is
        not used, and ``h`` / ``gamma`` must not be sequences.
    scoring : str, callable, list, tuple, set, dict or None, default None
        As ``GridSearchCV``'s: a scikit-learn scorer of each candidate on the held-out rows
        (None: accuracy), or several by name (``cv_results_`` then has
        ``mean_test_<name>`` ..., and ``refit`` names the one that chooses). With
        ``param_grid`` or ``scoring`` every fold's models are fitted by
        :meth:`HSSSVC.fit_path` and scored by the scorer; otherwise (the ``Cs`` / width
        spelling, accuracy) by the one-product fold scorer. Either way ``fit``'s
        ``sample_weight`` weighs the test rows' scores as ``GridSearchCV`` does (a scorer
        that does not take ``sample_weight`` is called without it, with its warning).
    n_jobs : int or None, default None
        How the (fold, parameters but C) cells of a ``param_grid`` / ``scoring`` search run.
        None: on a pool of threads, one a core this process may use (the solvers release
        the GIL; each cell's own OpenMP and BLAS regions then take one thread), since a
        cell's solver keeps about one core busy at small and mid n; the one-vs-one pairs of
        a fit run the same way. An int: ``n_jobs`` joblib workers, as ``GridSearchCV``'s
        (1: one cell after another, each with its solver's own threads).
    Cs : int or sequence of float, default 10
        Grid of C; an int gives ``np.logspace(-2, 3, Cs)``.
    h : float, sequence of float or None, default None
        Kernel width(s) to try (None with ``gamma`` None: h = 1).
    gamma : float, sequence of float, "scale", "auto" or None
        scikit-learn spelling of the width (gamma = 1 / (2 h^2)); "scale" / "auto" as in
        :class:`HSSSVC`, computed once on all of ``fit``'s X (every fold and the refit use
        that value, reported in ``gamma_`` and ``cv_results_``).
    cv : int >= 2, None, float in (0, 1), a scikit-learn splitter or an iterable, default 5
        As ``GridSearchCV``'s: an int k (None: 5) runs ``StratifiedKFold(k)``, unshuffled,
        so that the folds are ``GridSearchCV(..., cv=k)``'s; a splitter (with ``fit``'s
        ``groups``) or an iterable of (train, test) pairs is used as given. A float holds
        out that fraction once, stratified and shuffled with ``random_state`` (one fit per
        candidate, for large n): ``cv=StratifiedShuffleSplit(1, test_size=cv,
        random_state=random_state)``.
    refit : bool, str or callable, default True
        Refit ``best_estimator_`` on all data with the chosen candidate. As
        ``GridSearchCV``'s: with several metrics, the name of the one that chooses
        (``best_score_`` is its mean), or False (no ``best_*``); a callable of
        ``cv_results_`` returns the chosen index (no ``best_score_``).
    kernel, probability, tol, class_weight, verbose, max_iter, decision_function_shape,
    random_state, memory_budget, options
        As in :class:`HSSSVC` (``options`` an :class:`~hsskern.HSSSVCOptions`, its fields
        ``options__<field>`` in ``get_params``, ``set_params`` and ``param_grid``; the old
        flat names ``rel_tol=`` ... ``multiclass=`` still work for one release, with a
        ``FutureWarning``). Every fold and the refit take these options.
        ``probability`` fits the sigmoids of the refitted model only (:meth:`predict_proba`
        is its). ``random_state`` also shuffles a float ``cv``'s hold-out. ``class_weight`` applies in every
        fold ("balanced" over the fold's training labels) and the refit; ``fit``'s
        ``sample_weight`` follows its rows into the folds (the validation accuracy is
        weighted by the test rows' weights) and the refit.

    Attributes
    ----------
    C_ : float
    h_ : float or None, gamma_ : float or None
        The chosen width (in the spelling given).
    cv_results_ : dict of arrays
        ``GridSearchCV``'s format, one entry per candidate: ``param_grid``'s in its order
        (with ``mean_score_time`` and ``std_score_time`` too), or per (width, C) in grid
        order (widths as given, C increasing): ``params``, ``param_h`` (or
        ``param_gamma``), ``param_C``, ``split<k>_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, ``mean_fit_time``, ``std_fit_time`` (a
        fold's compression and factor divided among its C values, plus the C's own solve),
        ``mean_n_iter``.
    best_index_, best_params_ : the first best candidate in grid order
    best_score_ : float
    best_estimator_ : HSSSVC
    n_iter_ : ndarray
        ADMM iterations of the refitted model (of the best grid point without refit).
    classes_, class_weight_, fit_time_ : as in HSSSVC (``fit_time_`` has ``search`` and
        ``refit``).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import HSSSVCCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> cv = HSSSVCCV(h=[0.5, 1.0], Cs=[0.1, 1, 10], random_state=0).fit(X, y)
    >>> cv.best_params_
    {'h': 0.5, 'C': 10.0}
    >>> len(cv.cv_results_["mean_test_score"])
    6
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        **WIDTH_GRID_CONSTRAINTS,
        "Cs": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "cv": [Interval(Real, 0, 1, closed="neither"), Interval(Integral, 2, None,
                                                               closed="left"), "cv_object"],
        "refit": ["boolean", str, callable],
        "param_grid": [dict, list, None],
        "scoring": [str, callable, list, tuple, set, dict, None],
        "n_jobs": [Integral, None],
    }
    _estimator = HSSSVC

    _options_class = HSSSVCOptions
    _legacy_names = _LEGACY

    @legacy_init
    def __init__(self, *, Cs=10, kernel="gaussian", gamma=None, h=None, probability=False,
                 tol=1e-2, class_weight=None, verbose=0, max_iter=100,
                 decision_function_shape="ovr", random_state=None, memory_budget=None,
                 options=None, param_grid=None, scoring=None, cv=5,
                 refit=True, n_jobs=None):
        self.Cs = Cs
        self.kernel = kernel
        self.gamma = gamma
        self.h = h
        self.probability = probability
        self.tol = tol
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.random_state = random_state
        self.memory_budget = memory_budget
        self.options = options
        self.param_grid = param_grid
        self.scoring = scoring
        self.cv = cv
        self.refit = refit
        self.n_jobs = n_jobs

    def _grid(self, X, Y):
        return width_grid(self, X)

    def _base_estimator(self, params):
        # the grid's width replaces both spellings of it
        return super()._base_estimator({"h": None, "gamma": None, **params})

    def _candidate_estimator(self, params):
        # a candidate's width replaces both spellings; without one, this estimator's
        if "h" in params or "gamma" in params:
            return self._base_estimator(params)
        if self.param_grid is not None:
            for name in ("h", "gamma"):
                value = getattr(self, name)
                if value is not None and not isinstance(value, (str, Real)):
                    raise ValueError(f"{name}={value!r} is a grid: with param_grid give the "
                                     f"widths in it (param_grid={{'{name}': [...], ...}})")
        return super()._base_estimator(params)

    def _set_best_attributes(self, params):
        super()._set_best_attributes(params)
        self.h_ = params.get("h")
        self.gamma_ = params.get("gamma")
