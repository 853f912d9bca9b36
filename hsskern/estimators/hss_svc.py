"""HSSSVC: exact-hinge-loss kernel SVM trained by dual ADMM on one factor of K + beta I.

The kernel matrix is compressed once (HSS, or kept dense for ``approximation="exact"``),
K + beta I is factored once, and the path of :mod:`hsskern.solvers.paths.hss_path` solves every
C of a grid (:meth:`HSSSVC.fit_path` / :class:`HSSSVCCV`) on it. Several classes are SVC's
one-vs-one by default (one such problem per pair of classes,
:mod:`hsskern.solvers.paths.pairwise`), or one-vs-rest on one preparation for every class. This
module holds the parameters and builds that backend; the shared machinery is in :mod:`.base`
and :mod:`.cv`.
"""
from collections import Counter
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..options import ExactSVCOptions, HSSSVCOptions, PathSettings, compression_of
from ..solvers.paths.exact_path import ExactBackend
from ..solvers.paths.hss_path import HSSBackend
from ..solvers.paths.one_fit import OneFitBackend
from ._options import OptionsParamsMixin
from ._svm_params import LIBSVM_CONSTRAINTS, route_seed, smo_options
from .base import PathClassifier
from .cv import PathClassifierCV
from .widths import (HSS_CONSTRAINTS, SVC_KERNEL_CONSTRAINTS,
                         WIDTH_GRID_CONSTRAINTS, SVCKernelsMixin, kernel_of,
                         starts_from_zero, width_grid)

__all__ = ["HSSSVC", "HSSSVCCV"]


_COMMON_CONSTRAINTS = {
    "kernel": HSS_CONSTRAINTS["kernel"],
    "memory_budget": HSS_CONSTRAINTS["memory_budget"],
    "verbose": HSS_CONSTRAINTS["verbose"],
    "random_state": HSS_CONSTRAINTS["random_state"],
    **LIBSVM_CONSTRAINTS,
    "tol": [Interval(Real, 0, None, closed="neither")],
    "class_weight": [StrOptions({"balanced"}), dict, None],
    "probability": ["boolean"],
    "decision_function_shape": [StrOptions({"ovo", "ovr"})],
    "options": [HSSSVCOptions, None],
}

#: the ADMM only starts the exact solve: it stops at this gap (or the estimator's looser tol)
#: on the approximation, and the exact decomposition takes the gap on to ``tol``
ADMM_TOL = 1e-2


def _hss_backend(est, X, width, purpose):
    """The backend of an SVC-like estimator ``est`` (:class:`~hsskern.SVC`,
    :class:`HSSSVC`) at one kernel width (X, the training points, resolves gamma="scale" /
    "auto"): scikit-learn's ``tol``, ``max_iter``, ``shrinking`` and ``cache_size`` go to the
    exact solve, the ADMM's cap and the compression come from ``options``."""
    kernel = kernel_of(est, width, X)
    o = est._options()
    log = est._log if est.verbose >= 1 else None
    # LIBSVM's KKT gap, reached by the exact solve; HSSSVC's tol=None runs the ADMM's
    # admm_max_iter iterations with no stopping test (the paper's mode)
    tol = 1e-3 if est.tol is None else float(est.tol)
    settings = PathSettings(
        tol=tol, admm_tol=None if est.tol is None else max(tol, ADMM_TOL) if o.solve_exact
        else tol,
        # fit on the ADMM route reaches its C from C / 1000 when it solves exactly: a cold
        # ADMM at a large C is a poor start for the decomposition, a scaled exact solution
        # of a smaller C a good one (the decomposition from zero takes its C alone)
        n_decades=3 if (o.solve_exact and purpose == "fit") else 0,
        probe_C=float(est.C) if purpose == "fit" else None, store_kernel=purpose != "fit",
        engine=getattr(o, "engine", "auto"),
        random_state=route_seed(est.random_state), verbose=max(0, int(est.verbose)))
    hss = HSSBackend(kernel, o.replace(smo=smo_options(est, tol)), settings,
                     memory_budget=est.memory_budget, log=log)
    if purpose != "fit" or o.start != "auto":
        return hss
    # one fit whose exact SVM is better grown in stages (OneFitBackend.resolve_start: past
    # the HSS route's exact step, or from zero with many support vectors) takes them
    staged = ExactBackend(kernel, ExactSVCOptions(validation_fraction=0.0, max_chunk=o.max_chunk,
                                                  decomposition=o.decomposition,
                                                  **compression_of(o)),
                          PathSettings(tol=tol, random_state=settings.random_state,
                                       verbose=settings.verbose),
                          memory_budget=est.memory_budget, log=log)
    return OneFitBackend(hss, staged)


def route_of(info):
    """The ``route_`` of a fit from its solution's ``info``: the route's name, or for
    one-vs-one pairs that took different routes each route with its number of pairs."""
    route = info.get("route")
    if route is None or isinstance(route, str):
        return route
    counts = Counter(r for r in route if r is not None)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{r} ({k} pairs)" for r, k in counts.most_common())


def set_route_attributes(est, prepared, solution):
    """The fitted attributes every estimator on :func:`_hss_backend` sets: ``route_``,
    ``beta_``, ``hss_`` and ``admm_``."""
    info = solution.info
    est.route_ = route_of(info)
    est.beta_ = np.asarray(info["beta"], dtype=float) if est._pairwise else info["beta"]
    est.hss_ = dict(prepared.stats)
    est.admm_ = {"primal_residuals": info["primal_residuals"],
                 "dual_residuals": info["dual_residuals"],
                 "objective": info["objective"], "converged": info["admm_converged"],
                 "n_margin": info["n_margin"],
                 "equality_residual": info["equality_residual"],
                 "exact": (None if info["exact"] is None
                           else [_report(r) for r in info["exact"]])}


def _report(result):
    """An exact solve's record as the fitted model keeps it: its per-point arrays (alpha,
    the decision values; 24 n bytes) dropped, since ``dual_coef_`` holds the solution and
    a pickled model should not grow with the training set."""
    return None if result is None else replace(result, alpha=None, dual_coef=None,
                                               decision=None)


class HSSSVC(OptionsParamsMixin, SVCKernelsMixin, PathClassifier):
    """Kernel SVM (LIBSVM's exact answer) with hsskern's route in the user's hands: the HSS
    compression, ULV factor and dual ADMM start, the width as h, a C path on one preparation.

    :class:`~hsskern.SVC` is the drop-in for scikit-learn's SVC and the estimator to start
    from; it picks its route by itself. HSSSVC runs the same machinery, with the same
    parameters and defaults, plus what someone steering the route needs: the kernel width
    ``h`` (the HSS paper's spelling), hsskern's own Platt calibration (``probability``, not
    deprecated here: fitted along a C path in one go, :meth:`fit_path`) and the route's
    knobs in ``options`` (:class:`~hsskern.HSSSVCOptions`): ``start="admm"`` forces the HSS
    compression of K, one ULV factor of K + beta I and the closed-form ADMM of Cipolla &
    Gondzio (Algorithm 2) before the exact decomposition; ``solve_exact=False`` keeps the
    ADMM's approximate answer (the paper's method); ``start="auto"`` (the default) takes the
    exact decomposition from zero where that is faster (below 10^5 points), as SVC does.
    ``route_`` says which route a fit took. Several classes train as SVC does, one binary
    problem per pair of classes (``options.multiclass="ovo"``, the pairs on every core);
    ``"ovr"`` trains one model per class on one preparation instead.

    Parameters
    ----------
    C : float, default 1.0
        Box constraint of the dual, > 0.
    kernel : {"rbf", "gaussian", "laplacian", "poly", "linear", "sigmoid", "precomputed"} \
or callable, default "rbf"
        "rbf" (= "gaussian"): exp(-gamma |x - y|^2) = exp(-|x - y|^2 / (2 h^2)); laplacian:
        exp(-|x - y| / h). SVC's other kernels are solved by the exact decomposition only
        (no compression, factor or ADMM; ``options.start="admm"`` or
        ``options.solve_exact=False`` is a ValueError with them): "poly" ((gamma x.y +
        coef0)^degree), "linear" (x.y), "sigmoid" (tanh(gamma x.y + coef0), not positive
        definite: its dual may have several KKT points, and the one returned need not be
        LIBSVM's), "precomputed" (``fit`` takes the Gram matrix K(X, X), the prediction
        methods K(X_test, X_train)) and a callable k(A, B) -> array of shape (len(A),
        len(B)), evaluated in blocks (its K is stored when it fits the memory budget).
    degree : int, default 3
        Degree of the "poly" kernel (SVC's); ignored by the other kernels.
    gamma : float, "scale" or "auto", default "scale"
        SVC's: "scale" is 1 / (n_features * X.var()) and "auto" 1 / n_features, on the
        training X (not for the Laplacian); gamma = 1 / (2 h^2) (gaussian), 1 / h
        (laplacian). ``h``, when given, is the width instead of the default "scale"
        (``h`` with another gamma is a ValueError).
    coef0 : float, default 0.0
        The constant of the "poly" and "sigmoid" kernels (SVC's); ignored by the others.
    shrinking : bool, default True
        LIBSVM's shrinking in the cached SMO engine.
    probability : bool, default False
        hsskern's Platt scaling for :meth:`predict_proba` / :meth:`predict_log_proba`: the
        decision values of 5 stratified internal folds (drawn with ``random_state``, each
        fold solved at this C like ``fit``) fit one sigmoid per binary model (one-vs-one:
        per pair, then LIBSVM's pairwise coupling). ``fit`` then costs about five more fits
        on 4/5 of the data; :meth:`fit_path` fits the sigmoids of every C on one set of
        folds. scikit-learn 1.9 deprecated SVC's ``probability`` for
        ``CalibratedClassifierCV(SVC(), ensemble=False)``, which takes this estimator too
        (docs/user_guide/weights_probabilities.md).
    tol : float, default 1e-3
        LIBSVM's stopping gap (m(a) - M(a), the KKT measure LIBSVM's ``tol`` bounds), which
        the exact decomposition reaches. The ADMM that may start it stops at
        ``max(tol, 1e-2)`` on the approximation (at ``tol`` with
        ``options.solve_exact=False``), within ``options.admm_max_iter`` iterations. A
        solution that misses its gap raises a ``ConvergenceWarning``. None (the paper's
        mode): the ADMM runs all ``options.admm_max_iter`` iterations with no stopping test
        (the exact solve, if any, stops at 1e-3).
    cache_size : float, default 200
        The cached SMO engine's kernel-row cache in MB, as LIBSVM's (further bounded by the
        memory budget).
    class_weight : dict, "balanced" or None, default None
        As SVC: class c's points get the bound ``C * class_weight[c]`` (times their
        ``sample_weight``); "balanced" uses ``n_samples / (n_classes * np.bincount(y))``.
    verbose : int, default 0
        1: a line per phase that ran and per C; 2: also per decomposition round. The lines
        are records of the ``logging`` module (:mod:`hsskern.utils.log`), one whole line
        each.
    max_iter : int, default -1
        scikit-learn's: most pair steps of the cached SMO engine per binary problem (-1:
        LIBSVM's own cap, max(10^7, 100 n)). The block decomposition (larger n) is not
        capped; the ADMM's cap is ``options.admm_max_iter``.
    decision_function_shape : {"ovr", "ovo"}, default "ovr"
        SVC's: the shape of :meth:`decision_function` with several classes trained
        one-vs-one ("ovo": the pairs' values; "ovr": SVC's transformation of them to one
        score per class). "ovo" needs ``options.multiclass="ovo"``.
    break_ties : bool, default False
        SVC's: with ``decision_function_shape="ovr"`` and more than two classes,
        :meth:`predict` takes the argmax of :meth:`decision_function` instead of the vote.
    random_state : int, RandomState or None
        Seeds the randomized compression and a staged fit's subsample (None: a fixed seed, so
        a fit reproduces as SVC's does) and the probability folds (None: random, as SVC's).
    h : float or None, default None
        Kernel width (the paper's h), over the default gamma="scale" when given.
    memory_budget : float or None, default None
        Bytes the fit may use; checked against an estimate before the heavy work starts
        (default: 80% of the memory available).
    options : HSSSVCOptions or None, default None
        The expert knobs (None: :class:`~hsskern.HSSSVCOptions`' defaults): the
        compression (``rel_tol``, ``abs_tol``, ``max_rank``, ``leaf_size``,
        ``n_neighbors``, ...), the kernel the ADMM factors (``approximation``: "hss" or
        "exact"), how the first C is reached (``start``), the ADMM (``beta``,
        ``relaxation``, ``adaptive_beta``, ``admm_max_iter``), the exact solve after it
        (``solve_exact``, ``max_chunk``) and the multiclass training (``multiclass``).
        Nested names ``options__max_rank`` for ``set_params`` and ``GridSearchCV``.
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
        Indices of the training points with a nonzero coefficient in some model, grouped by
        class in the order of ``classes_`` and by index within a class, as SVC's.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    n_support_ : ndarray of int32, shape (n_classes,)
    dual_coef_ : ndarray of shape (1, n_SV), (n_classes - 1, n_SV) or (n_classes, n_SV)
        ``y_i alpha_i`` in SVC's layout and sign (two classes: +1 for ``classes_[1]``).
    intercept_ : ndarray of shape (n_models,)
    n_iter_ : ndarray of shape (n_models,)
        The solver's iterations per model: the cached SMO's pair steps (LIBSVM's count), the
        block decomposition's rounds, or the ADMM's iterations plus the decomposition's
        rounds (summed over the continuation C / 1000, ..., C of a fit on that route).
    fit_status_ : int
        0 when every model reached its stopping test, 1 otherwise (SVC's meaning).
    shape_fit_ : tuple
        Shape of the X given to ``fit``.
    probA_, probB_ : ndarray of shape (n_models,)
        Platt's sigmoid per model, P = 1 / (1 + exp(probA_ f + probB_)) (``probability=True``
        only).
    route_ : str
        The route the fit took: "cached SMO" or "block decomposition" (the exact solve from
        zero), "HSS + ADMM start" / "dense + ADMM start" (the ADMM's point started the exact
        decomposition), "HSS + ADMM (approximate)" (no exact solve), "staged growth" (the
        exact SVM grown from a subsample's); one-vs-one pairs on different routes: each
        route with its number of pairs.
    hss_ : dict
        Statistics of the preparation (ranks and memory of an approximation, see
        ``HSSMatrix.stats()``; the ``start`` taken). One-vs-one: ``{"pairs": (each pair's,)}``.
    fit_time_ : dict
        Seconds per phase that ran: kernel, compress (hss), factor, admm, refactor, bias,
        kkt, solve_exact (the exact decomposition after the ADMM); "smo" or "decomposition" for
        the exact solve from zero or from a previous C; "staged": split, subsample,
        decomposition. One-vs-one: summed over the pairs (which run concurrently).
    beta_ : float or ndarray of shape (n_models,)
        The ADMM penalty used (NaN when no ADMM ran); one-vs-one, one per pair.
    admm_ : dict
        Residual histories and objectives of the final ADMM run (empty when none ran), and
        ``"exact"``: one :class:`~hsskern.solvers.engines.exact.ExactResult` per model, its
        per-point arrays dropped (None without an exact solve).
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
    >>> clf.route_, bool(clf.score(X, y) > 0.95)
    ('cached SMO', True)
    >>> [m.C for m in HSSSVC(h=1.0).fit_path(X, y, [0.1, 1, 10])]
    [0.1, 1.0, 10.0]
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        **SVC_KERNEL_CONSTRAINTS,
        "C": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="neither"), None],
        "warm_start": ["boolean"],
    }

    _options_class = HSSSVCOptions

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability=False, tol=1e-3, cache_size=200,
                 class_weight=None, verbose=0, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, h=None, memory_budget=None,
                 options=None, warm_start=False):
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
        self.h = h
        self.memory_budget = memory_budget
        self.options = options
        self.warm_start = warm_start

    def _make_backend(self, X, values, purpose):
        return self._multiclass_backend(_hss_backend(self, X, None, purpose), purpose)

    def _takes_sparse_rows(self, shape):
        return starts_from_zero(self, shape)

    def _set_backend_attributes(self, prepared, solution, model):
        set_route_attributes(self, prepared, solution)


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
        Kernel width(s) to try, over the default gamma="scale" when given.
    gamma : float, sequence of float, "scale" or "auto", default "scale"
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
    kernel, shrinking, probability, tol, cache_size, class_weight, verbose, max_iter,
    decision_function_shape, break_ties, random_state, memory_budget, options
        As in :class:`HSSSVC` (``options`` an :class:`~hsskern.HSSSVCOptions`, its fields
        ``options__<field>`` in ``get_params``, ``set_params`` and ``param_grid``). Every fold and the refit take these options.
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
        The solver's iterations of the refitted model (of the best grid point without
        refit), as :class:`HSSSVC`'s ``n_iter_``.
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

    def __init__(self, *, Cs=10, kernel="rbf", gamma="scale", h=None, shrinking=True,
                 probability=False, tol=1e-3, cache_size=200, class_weight=None, verbose=0,
                 max_iter=-1, decision_function_shape="ovr", break_ties=False,
                 random_state=None, memory_budget=None, options=None, param_grid=None,
                 scoring=None, cv=5, refit=True, n_jobs=None):
        self.Cs = Cs
        self.kernel = kernel
        self.gamma = gamma
        self.h = h
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
