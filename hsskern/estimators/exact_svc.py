"""ExactSVC: LIBSVM's exact SVM at any n, anytime, from a subsample's exact solution.

The backend (:mod:`hsskern.solvers.paths.exact_path`) solves a random subsample exactly, then runs
the decomposition on all points from there, within ``max_time``; this module holds the
parameters and the fitted attributes that say how exact the answer is.
"""
import time
from dataclasses import replace
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..options import ExactSVCOptions, PathSettings
from ..solvers.paths.exact_path import ExactBackend
from ..solvers.paths.pairwise import PairwiseBackend
from ._options import OptionsParamsMixin
from .base import PathClassifier
from .widths import HSS_CONSTRAINTS, SVC_KERNEL_CONSTRAINTS, SVCKernelsMixin, kernel_of

__all__ = ["ExactSVC"]


class ExactSVC(OptionsParamsMixin, SVCKernelsMixin, PathClassifier):
    """The exact kernel SVM (LIBSVM's solution) at any n, with a time budget.

    Without ``max_time`` it trains on every point and returns SVC's solution (to ``tol``).
    Only under ``max_time`` does ``fit`` hold out ``options.validation_fraction`` of the
    points (never trained on) to choose among the models a stopped decomposition has, when
    the budget runs out before ``tol``.

    ``fit`` solves a random ``options.subsample`` of the training points exactly (HSS
    compression + ADMM + exact decomposition, as :class:`HSSSVC`), then grows the problem in
    stages (doubling, up to all training points; under ``max_time`` each stage after a
    finished one sized from the last stage's cost to end in the time left), each stage the
    exact decomposition started from the last one's solution padded with zeros (a feasible
    point):
    every finished stage is the exact SVM of a larger random subsample. Every round keeps its
    point feasible and knows its exact KKT gap (LIBSVM's stopping measure), so the solver can
    stop at any round: when ``max_time`` runs out first, the model returned is the one that
    scores best on the validation points among the subsample's own model and every round's
    point, so it is never worse there than subsampling. ``gap_`` (over all training points)
    and ``selected_`` say how exact it is. Without ``max_time`` (or once the last stage's gap
    reaches ``tol``) the answer is LIBSVM's exact SVM of the training points.

    SVC's parameters with SVC's names and order (``shrinking``, ``cache_size``,
    ``max_iter`` and ``break_ties`` aside), then ``h``, ``max_time``, ``memory_budget`` and
    ``options``: the expert knobs (:class:`~hsskern.ExactSVCOptions`; nested names
    ``options__subsample``).

    Parameters
    ----------
    C : float, default 1.0
    kernel : {"gaussian", "rbf", "laplacian", "poly", "linear", "sigmoid", "precomputed"} \
or callable, default "rbf"
        As in :class:`HSSSVC`: all but the Gaussian and the Laplacian take the exact
        decomposition at every stage (the subsample too).
    degree, coef0 : int and float, default 3 and 0.0
        SVC's "poly" and "sigmoid" parameters, as in :class:`HSSSVC`.
    gamma : float, "scale" or "auto", default "scale"
        The kernel width, as in :class:`HSSSVC` and SVC (``h``, when given, is the width
        instead).
    probability : bool, default False
        Platt's sigmoids on internal 5-fold cross-validated decision values (each fold a fit
        of its own, with its share of ``max_time``: five times the fit's time at most);
        one-vs-one, one per pair and LIBSVM's pairwise coupling, as SVC.
    tol : float, default 1e-3
        The KKT gap at which the decomposition stops (LIBSVM's ``tol``).
    class_weight : dict, "balanced" or None
    verbose : int, default 0
        1: the split, the subsample, each round of the decomposition (gap, working set, time)
        and each C; 2 and more: the subsample's HSS phases too.
    decision_function_shape : {"ovr", "ovo"}, default "ovr"
        As SVC's and :class:`HSSSVC`'s.
    random_state : int, RandomState or None
        The split, the subsample and the subsample's compression.
    h : float or None
        The kernel width, as in :class:`HSSSVC`.
    max_time : float or None, default None
        Seconds for the whole fit from the call (``fit_path``: the whole path, shared among
        the remaining (C, class) pairs as each starts, unused time carried on): validation,
        the subsample's solve and the last product included. The subsample is sized to
        ``subsample_time_share`` (0.4) of the time left at the rate of kernel entries
        measured on the data (its solve ~m^2 entries, its model's certifying product ~m/2 x n)
        and its decomposition stops at that share (a feasible start all the same); when an
        earlier stage's point would be returned, its gap over all training points takes one
        more product, whose time the rounds leave free. A fit returns within about 1.1
        ``max_time`` + 1 s (a round that has started finishes); when not even a subsample of
        100 points fits, a :class:`~hsskern.exceptions.TimeBudgetError` says so before any
        solve. Platt's sigmoids (``probability``) take their own time on top. None: run to
        ``tol``.
    memory_budget : float or None
        Bytes the fit may use (default 80% of the available memory): the training points'
        and a stage's copies, the decomposition's vectors and its smallest working set are
        checked before any work, the subsample's fit before it starts. Prediction holds its
        output and works in chunks of test rows that fit the budget (a MemoryBudgetError
        when not even one row's does).
    options : ExactSVCOptions or None, default None
        The expert knobs (None: :class:`~hsskern.ExactSVCOptions`' defaults): ``subsample``
        (default 50000: points of the exactly solved start, a float a fraction; all of them
        when it is at least their number, and the fit is then :class:`HSSSVC`'s exact
        answer), ``validation_fraction`` (default 0.02, in [0, 0.5): under ``max_time``,
        points held out to choose among the subsample's model and the rounds' points when
        the budget stops the decomposition; never trained on; 0: none held out, the last
        point is returned; without ``max_time`` none is held out),
        ``max_chunk`` (default 24000: the stages' working set, its kernel block 8 |W|^2
        bytes), the subsample's compression (``rel_tol``, ``abs_tol``, ``max_rank``,
        ``leaf_size``, ``n_neighbors``, ... as in :class:`HSSSVC`) and ``multiclass``
        ("ovo", SVC's one-vs-one: a binary exact SVM per pair of classes, each split,
        subsampled and grown on its own; or "ovr": one model per class on one split of all
        points).

    Attributes
    ----------
    The classifiers are SVC's: one for two classes, one per pair of classes (one-vs-one) or
    per class (one-vs-rest).

    gap_ : ndarray of shape (n_classifiers,)
        The exact KKT gap of the returned model over all training points.
    converged_ : ndarray of bool
        ``gap_ < tol``: the exact SVM to LIBSVM's tolerance.
    selected_ : tuple of str
        Per classifier: ``"exact"`` (converged), ``"<m> points, round <k>"`` (the point after
        k rounds of the stage of m points was best on the validation points),
        ``"subsample"`` (the subsample's own model was), or ``"last"`` (no validation points:
        the last round's point).
    history_ : tuple of tuple
        Per classifier: ``(seconds, stage size, gap, validation score)`` of every round's
        point (empty without validation points); the gap is over the stage's points.
    stages_ : tuple of int
        The stages' sizes, the subsample's first, as planned (doubling); under ``max_time``
        the sizes solved are in ``history_``. One-vs-one: a tuple per pair.
    n_iter_ : ndarray of int
        Rounds of the decomposition per classifier.
    validation_indices_, subsample_indices_ : ndarray of int
        Rows of ``fit``'s X held out for validation, and solved first (one-vs-one: by some
        pair; each pair splits its own points).
    subsample_size_ : int, or ndarray of int per pair (one-vs-one)
    n_validation_ : int
        Points held out (one-vs-one: summed over the pairs).
    classes_, support_, support_vectors_, n_support_, dual_coef_, intercept_, fit_status_,
    class_weight_, shape_fit_, n_features_in_, feature_names_in_, fit_time_
        As in :class:`HSSSVC` (a point its model holds out is never its support vector).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import ExactSVC, ExactSVCOptions
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> clf = ExactSVC(h=1.0, C=10.0, options=ExactSVCOptions(subsample=100),
    ...                random_state=0).fit(X, y)
    >>> clf.stages_, clf.selected_, bool(clf.converged_[0])
    ((100, 200, 300), ('exact',), True)
    """

    _reads_pair_preparations = True  # validation_indices_, subsample_indices_

    _parameter_constraints = {
        **{k: HSS_CONSTRAINTS[k] for k in ("memory_budget", "verbose", "random_state")},
        **SVC_KERNEL_CONSTRAINTS,
        "C": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_time": [Interval(Real, 0, None, closed="left"), None],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "probability": ["boolean"],
        "decision_function_shape": [StrOptions({"ovo", "ovr"})],
        "options": [ExactSVCOptions, None],
    }
    _options_class = ExactSVCOptions

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 probability=False, tol=1e-3, class_weight=None, verbose=0,
                 decision_function_shape="ovr", random_state=None, h=None, max_time=None,
                 memory_budget=None, options=None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.probability = probability
        self.tol = tol
        self.class_weight = class_weight
        self.verbose = verbose
        self.decision_function_shape = decision_function_shape
        self.random_state = random_state
        self.h = h
        self.max_time = max_time
        self.memory_budget = memory_budget
        self.options = options

    def _products(self):
        """The factory of the decomposition's product engine (None: in this process)."""
        return None

    def _takes_sparse_rows(self, shape):
        # the decomposition reads kernel entries only; in this process they come from the
        # sparse rows (a distributed engine's workers hold dense row blocks)
        return self._products() is None

    def _fit(self, X, y, sample_weight):
        self._fit_started = time.perf_counter()  # max_time counts from here: validation too
        try:
            return super()._fit(X, y, sample_weight)
        finally:
            del self._fit_started

    def _fit_path(self, X, y, Cs, sample_weight):
        self._fit_started = time.perf_counter()
        try:
            return super()._fit_path(X, y, Cs, sample_weight)
        finally:
            del self._fit_started

    def _fit_sigmoids(self, backend, X, Y, w, Cs):
        # each internal fold is a fit of its own: its max_time counts from its start
        def restarted(b):
            return replace(b, settings=b.settings.replace(started=None))

        fresh = (replace(backend, inner=restarted(backend.inner))
                 if isinstance(backend, PairwiseBackend) else restarted(backend))
        return super()._fit_sigmoids(fresh, X, Y, w, Cs)

    def _make_backend(self, X, values, purpose):
        o = self._options()
        # a validation set only chooses among the points a time budget stops at: without
        # one the decomposition runs to tol on all points, and a hold-out would only lose
        # them (SVC's answer is the one trained on every point)
        held_out = o.validation_fraction if self.max_time is not None else 0.0
        settings = PathSettings(tol=self.tol, max_time=self.max_time,
                                n_decades=3 if purpose == "fit" else 0,
                                random_state=self.random_state,
                                verbose=max(0, int(self.verbose) - 1),
                                products=self._products(),
                                started=getattr(self, "_fit_started", None))
        return self._multiclass_backend(ExactBackend(
            kernel_of(self, None, X), o.replace(validation_fraction=held_out), settings,
            memory_budget=self.memory_budget, log=self._log if self.verbose >= 1 else None),
            purpose)

    def _set_fitted(self, data, backend, prepared, solution, shared):
        super()._set_fitted(data, backend, prepared, solution, shared)
        rows = data.rows
        # the backend saw the rows of positive weight only: index the rows given to fit
        take = (lambda i: i) if rows is None else rows.__getitem__
        val, sub = [], []
        for pr, pair_rows in self._exact_problems(prepared):
            val.append(pair_rows[pr.validation])
            sub.append(pair_rows[pr.train[pr.order[:pr.stages[0]]]])
        self.validation_indices_ = take(np.unique(np.concatenate(val)))
        self.subsample_indices_ = take(np.unique(np.concatenate(sub)))

    def _exact_problems(self, prepared):
        """[(ExactProblem, its rows in the fit's points)]: one, or one per trained pair."""
        if not self._pairwise:
            return [(prepared, np.arange(prepared.points.shape[0]))]
        return [(pr, r) for pr, r in zip(prepared.problems, prepared.rows) if pr is not None]

    def _set_backend_attributes(self, prepared, solution, model):
        info = solution.info
        self.gap_ = solution.gap.copy()
        self.converged_ = solution.converged.copy()
        self.selected_ = info["selected"]
        self.history_ = info["history"]
        problems = [pr for pr, _ in self._exact_problems(prepared)]
        if not self._pairwise:
            self.subsample_size_ = int(prepared.stats["subsample_size"])
            self.stages_ = prepared.stages
        else:  # one per pair
            self.subsample_size_ = np.array([pr.stats["subsample_size"] for pr in problems])
            self.stages_ = tuple(pr.stages for pr in problems)
        self.n_validation_ = int(sum(pr.stats["n_validation"] for pr in problems))
