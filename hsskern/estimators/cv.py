"""One cross-validation machinery for every ``*CV`` estimator, classifier or regressor (and
the Dask one).

The unit of work is :func:`score_fold`: one preparation per (fold, kernel parameters), the
whole path (C, alpha) on it, every value scored on the held-out rows by a fold metric
(:data:`FOLD_METRICS`) with one decision call. It is a plain function of picklable
arguments, so a scheduler can run it anywhere. :class:`PathSearchCV`, the one base of the
``*CV`` estimators, draws the splits (one policy, :func:`make_splits`: ``GridSearchCV``'s
unshuffled k-fold, with ``groups``), runs the grid,
writes ``cv_results_`` in ``GridSearchCV``'s format, picks the best candidate with
``GridSearchCV``'s tie-break (the first best in grid order: kernel parameters as given, the
path's values increasing) and refits it; :class:`PathClassifierCV` is its classifier
mixin's, ``regressor_base.PathRegressorCV`` its regressor's.

Weights follow their rows into the folds: a fold trains on its training rows' sample weights
times its class weights ("balanced" computed on its own training labels, as SVC fitted on
that fold would), drops its rows of weight 0, and scores its test rows' accuracy weighted by
their sample weights (so a row of weight k counts as k repeated rows), as ``GridSearchCV``
does when its scorer takes ``sample_weight`` (:func:`scorer_takes_weights`).
"""
import inspect
import numbers
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.exceptions import FitFailedWarning, NotFittedError
from sklearn.metrics import check_scoring, r2_score
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted

from ..solvers.paths.path import check_Cs
from ..utils._threads import thread_map, usable_cores
from ._splits import make_splits
from .widths import kernel_of
from .base import (ClassifierBase, FitStateMixin, check_sample_weight, encode_labels,
                   is_pairwise, labels_from_decision, point_weights, solve_path)

__all__ = ["PathSearchCV", "PathClassifierCV", "carry_feature_names", "make_splits",
           "score_fold", "fit_score_fold", "scorer_takes_weights", "search_results",
           "best_index", "FOLD_METRICS", "accuracy",
           "neg_mean_squared_error", "r2"]


def carry_feature_names(search, est):
    """``est`` (refitted on the search's validated array) with the search's
    ``feature_names_in_``, so that its predictions check the column names as scikit-learn's
    ``GridSearchCV`` refit on the frame itself does (reordered or renamed columns raise)."""
    if hasattr(search, "feature_names_in_"):
        est.feature_names_in_ = search.feature_names_in_
    return est


# A fold metric scores a whole path at once: ``metric(y_true, predictions, sample_weight)``
# with the predictions of every value stacked, (n_values, n_test) labels or
# (n_values, n_test, k) targets; it returns one score per value, higher is better.

def accuracy(y_true, predictions, sample_weight=None):
    """The fraction of right labels, weighted by ``sample_weight`` (a row of weight k counts
    as k repeated rows), per path value: the fold metric of the classifiers."""
    hits = [p == y_true for p in predictions]
    if sample_weight is None:
        return np.array([np.mean(h) for h in hits])
    return np.array([np.average(h, weights=sample_weight) for h in hits])


def neg_mean_squared_error(y_true, predictions, sample_weight=None):
    """Minus the mean squared error over all targets (multi-output: the mean), per value,
    weighted by ``sample_weight`` as ``mean_squared_error``."""
    err = np.mean((predictions - y_true[None]) ** 2, axis=2)
    return -np.average(err, axis=1, weights=sample_weight)


def r2(y_true, predictions, sample_weight=None):
    """scikit-learn's ``r2_score`` (multi-output: the mean over the targets), per value."""
    return np.array([r2_score(y_true, p, sample_weight=sample_weight) for p in predictions])


#: The fold metrics by scikit-learn's scoring names.
FOLD_METRICS = {"accuracy": accuracy, "neg_mean_squared_error": neg_mean_squared_error,
                "r2": r2}


def score_fold(backend, X, y, train, test, values, metric=accuracy, classifier=True,
               sample_weight=None, class_weight=None):
    """Prepare on ``X[train]``, solve the whole path, score every value on ``X[test]``.

    The one fold scorer of every ``*CV``, classifier or regressor, serial or on Dask.

    Parameters
    ----------
    backend : a path-protocol backend
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or (n_samples, k)
        Class labels (``classifier``), or the regression targets.
    train, test : ndarray of int
    values : ndarray of shape (n_values,)
        The path's values (C, alpha), ascending (or ``[None]`` for a backend without one).
    metric : callable, default :func:`accuracy`
        ``metric(y_true, predictions, sample_weight)`` (:data:`FOLD_METRICS`): one score per
        value, higher is better, of the test rows' labels and every value's predicted
        labels (by the one tie rule), (n_values, n_test), for a classifier; of their targets
        (n_test, k) and every value's predictions (n_values, n_test, k) for a regressor.
    classifier : bool, default True
        Whether ``y`` holds labels: the training rows' classes are encoded as the fold's own
        label columns (a fold need not hold every class), as scikit-learn's ``check_cv``.
    sample_weight : ndarray of shape (n_samples,) or None
        Validated per-row weights (all rows; the fold takes its own): they weigh the
        training rows in the solve and the test rows in the metric.
    class_weight : None, dict or "balanced"
        Multiplies the training rows' weights; "balanced" over the fold's training labels.

    Returns
    -------
    dict
        ``scores`` (per value), ``solve_time`` (seconds per value), ``n_iter`` (per value,
        the largest over the label or target columns), ``setup_time`` (the shared
        preparation, seconds). A classifier's fold whose training part holds one class (of
        positive weight), or whose test rows all weigh 0, cannot be scored: its scores are
        NaN.
    """
    n_v = len(values)
    out = {"scores": np.full(n_v, np.nan), "solve_time": np.zeros(n_v),
           "n_iter": np.zeros(n_v, dtype=int), "setup_time": 0.0}
    train, test = np.asarray(train), np.asarray(test)
    w = None
    if sample_weight is not None or class_weight is not None:
        y_tr = y[train]
        w = point_weights(y_tr, np.unique(y_tr) if classifier else None, class_weight,
                          None if sample_weight is None else sample_weight[train])
        if w is not None:  # rows of weight 0 are dropped, as in fit
            train, w = train[w > 0], w[w > 0]
    w_test = None if sample_weight is None else sample_weight[test]
    if w_test is not None and not w_test.sum() > 0:
        return out
    if classifier:
        if np.unique(y[train]).size < 2:
            return out
        classes, Y = encode_labels(y[train])
    else:
        Y = y.reshape(len(y), -1)[train]
    t0 = time.perf_counter()
    prepared = backend.prepare(X[train], Y)
    out["setup_time"] = time.perf_counter() - t0
    solutions = solve_path(backend, prepared, Y, values, w)
    D = backend.model(prepared, solutions).decision(X[test])
    if classifier:
        pairwise = is_pairwise(backend, classes.size)
        out["scores"][:] = metric(y[test], [labels_from_decision(classes, d, pairwise)
                                            for d in D], w_test)
    else:
        out["scores"][:] = metric(y.reshape(len(y), -1)[test], D, w_test)
    for i, sol in enumerate(solutions):
        out["solve_time"][i] = sum(sol.timings.values())
        out["n_iter"][i] = int(np.max(sol.n_iter))
    return out


def fit_score_fold(estimator, X, y, train, test, Cs, scorer, sample_weight=None,
                   weigh_scores=False):
    """``estimator.fit_path`` on ``X[train]`` along ``Cs``, each model scored on ``X[test]``.

    The cell of a ``param_grid`` search: one preparation per (fold, parameters other than
    C), as :func:`score_fold`, but with every model fitted as ``fit`` would fit it on the
    fold (gamma="scale" resolved on the fold's rows, as ``GridSearchCV`` does) and scored by
    any scikit-learn scorer, multi-metric ones included.

    Parameters
    ----------
    scorer : callable
        A scikit-learn scorer, or a multi-metric one (``check_scoring`` of a list or a dict)
        returning a dict of scores.
    sample_weight : ndarray of shape (n_samples,) or None
        The training rows' weights go to ``fit_path``.
    weigh_scores : bool, default False
        Whether the test rows' weights go to the scorer too (``GridSearchCV``'s rule: when
        the scorer takes ``sample_weight``).

    Returns
    -------
    dict
        ``scores`` ({metric name: score per C}, "score" for a single scorer; empty for a
        fold the estimator could not fit), ``score_time`` per C, ``n_iter`` per C (largest
        over the models), ``setup_time`` (the whole ``fit_path``, seconds), and ``error``
        (None, or the message of a fold the estimator could not fit: its scores are NaN, as
        ``GridSearchCV``'s ``error_score=np.nan``).
    """
    n_c = len(Cs)
    out = {"scores": {}, "score_time": np.zeros(n_c), "n_iter": np.zeros(n_c, dtype=int),
           "setup_time": 0.0, "error": None}
    kw = {} if sample_weight is None else {"sample_weight": sample_weight[train]}
    score_kw = {"sample_weight": sample_weight[test]} if weigh_scores else {}
    t0 = time.perf_counter()
    try:
        models = clone(estimator).fit_path(X[train], y[train], Cs, **kw)
    except ValueError as exc:  # a fold it cannot fit (e.g. one class): NaN, and a warning
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["setup_time"] = time.perf_counter() - t0
    for i, m in enumerate(models):
        t0 = time.perf_counter()
        score = scorer(m, X[test], y[test], **score_kw)
        out["score_time"][i] = time.perf_counter() - t0
        for name, value in (score.items() if isinstance(score, dict)
                            else [("score", score)]):
            out["scores"].setdefault(name, np.full(n_c, np.nan))[i] = value
        out["n_iter"][i] = int(np.max(m.n_iter_))
    return out


def scorer_takes_weights(scorer, search):
    """Whether ``GridSearchCV`` would pass the test rows' ``sample_weight`` to ``scorer``
    (scikit-learn 1.9 without metadata routing: when it, or for several metrics any of
    them, takes the keyword), warning as it does for each that does not."""
    scorers = getattr(scorer, "_scorers", {"scoring": scorer})
    accept = {}
    for name, sc in scorers.items():
        take = getattr(sc, "_accept_sample_weight", None)
        accept[name] = take() if take is not None else (
            "sample_weight" in inspect.signature(sc).parameters)
        if not accept[name]:
            warnings.warn(f"The scoring {name}={sc} does not support sample_weight, which "
                          f"may lead to statistically incorrect results when fitting "
                          f"{search} with sample_weight.", UserWarning, stacklevel=5)
    return any(accept.values())


def _narrowness(est, X):
    """gamma of the estimator's Gaussian or Laplacian kernel on X, else 0: the cells of the
    narrowest kernels go to the pool first (the most support vectors, as a rule the longest
    paths; see the design notes), so that the cells left to run when the pool runs out of
    work are short ones. The order changes no result, only how the cells share the cores."""
    try:
        k = kernel_of(est, X=X)
    except (TypeError, ValueError):
        return 0.0
    return k.gamma if k.name in ("gaussian", "laplacian") else 0.0


def search_results(candidates, scores, setup_times, solve_times, n_iter, n_Cs):
    """``cv_results_`` in ``GridSearchCV``'s format, and the best candidate's index.

    ``mean_fit_time`` counts for each candidate its own solve plus its share (1 / n_Cs) of
    the preparation its fold shared with the other C values; ``mean_setup_time`` (that whole
    preparation) and ``mean_solve_time`` are reported beside it.

    Parameters
    ----------
    candidates : list of dict
        The parameters of each candidate, in grid order.
    scores : ndarray of shape (n_candidates, n_splits), or a dict of them
        A dict holds several metrics by name: their keys are ``GridSearchCV``'s
        multi-metric ones (``split<k>_test_<name>``, ``mean_test_<name>``, ...).
    setup_times, solve_times, n_iter : ndarray of shape (n_candidates, n_splits)
    n_Cs : int

    Returns
    -------
    cv_results : dict
    best_index : int or None
        The first candidate of the best mean score (NaN scores rank last); None for
        several metrics (:func:`best_index` picks by the refit's).
    """
    metrics = scores if isinstance(scores, dict) else {"score": scores}
    results = {"params": [dict(c) for c in candidates]}
    for name in dict.fromkeys(k for c in candidates for k in c):
        results[f"param_{name}"] = np.array([c.get(name) for c in candidates], dtype=object)
    for name, sc in metrics.items():
        n_cand, n_splits = sc.shape
        for s in range(n_splits):
            results[f"split{s}_test_{name}"] = sc[:, s]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
            mean = np.nanmean(sc, axis=1) if n_splits else np.full(n_cand, np.nan)
            std = np.nanstd(sc, axis=1)
        ranked = np.where(np.isnan(mean), -np.inf, mean)
        results[f"mean_test_{name}"], results[f"std_test_{name}"] = mean, std
        results[f"rank_test_{name}"] = rankdata(-ranked, method="min").astype(np.int32)
    fit_times = setup_times / n_Cs + solve_times
    results.update(mean_fit_time=fit_times.mean(axis=1), std_fit_time=fit_times.std(axis=1),
                   mean_setup_time=setup_times.mean(axis=1),
                   mean_solve_time=solve_times.mean(axis=1), mean_n_iter=n_iter.mean(axis=1))
    best = None if isinstance(scores, dict) else best_index(results, "score")
    return results, best


def best_index(cv_results, refit):
    """``GridSearchCV``'s choice: the first candidate ranked first by the metric named
    ``refit`` ("score" for a single one), or ``refit(cv_results)`` for a callable."""
    if callable(refit):
        index = refit(cv_results)
        n = len(cv_results["params"])
        if not isinstance(index, numbers.Integral) or not 0 <= index < n:
            raise IndexError(f"refit returned {index!r}, not the index of a candidate "
                             f"(0 to {n - 1})")
        return int(index)
    return int(np.argmin(cv_results[f"rank_test_{refit}"]))


class PathSearchCV(FitStateMixin, BaseEstimator):
    """The one base of the ``*CV`` estimators, classifiers and regressors alike: a grid over
    kernel parameters and the path parameter, by the fold scorer (not for direct use).

    Subclasses define ``_estimator`` (the estimator class refitted), ``_path_param`` (its
    parameter a path varies; None: no path), ``_grid(X, Y)`` (a list of dicts of its
    preparation parameters, e.g. widths), and may override ``_path_values()`` (the path's
    values, checked: ``Cs`` by default) and ``_score_grid`` (how the (candidate, fold) cells
    are computed: serially here, on Dask in ``hsskern.distributed``, batched over folds for
    FPC, by leave-one-out for kernel ridge).

    The classifier and regressor mixins on top (:class:`~hsskern.estimators.base.
    ClassifierBase`, :class:`~hsskern.estimators.regressor_base.RegressorBase`) give
    ``_validate_search(X, y, sample_weight)``, ``_fold_metric()`` (the fold scorer's metric,
    or None when ``scoring`` asks for :func:`fit_score_fold`'s scikit-learn scorer) and
    ``_check_scores`` (what a search with unscored cells does).

    The search draws the splits (one policy, :func:`make_splits`), writes ``cv_results_`` in
    ``GridSearchCV``'s format, picks the best candidate with ``GridSearchCV``'s tie-break
    (the first best in grid order: kernel parameters as given, the path values increasing)
    and refits it.
    """

    _path_param = "C"

    def _path_values(self):
        """The path's values, checked before any work (``[None]`` without a path)."""
        if self._path_param is None:
            return [None]
        return check_Cs(self.Cs, count=(-2, 3))  # Cs=k: k values from 0.01 to 1000

    def _grid(self, X, Y):
        """The kernel-parameter candidates (a list of dicts), checked; X and Y validated."""
        return [{}]

    def _base_estimator(self, params):
        """The single-model estimator with this one's parameters and ``params``."""
        own = self._estimator().get_params(deep=False)
        kw = {k: v for k, v in self.get_params(deep=False).items() if k in own}
        # set_params: a candidate may name an options field (options__max_rank)
        return self._estimator(**kw).set_params(**params)

    def _splits(self, X, y, groups=None):
        """(train, test) pairs by the one splitter policy (``GridSearchCV``'s)."""
        return make_splits(self.cv, X, y, self.random_state, classifier=is_classifier(self),
                           groups=groups)

    def _score_grid(self, X, y, splits, grid, values, **weights):
        """{(grid index, split index): score_fold(...)} over every cell, serially.

        ``y``: the labels of a classifier, the (n, k) targets of a regressor; ``weights``:
        the ``sample_weight`` and ``class_weight`` keywords of :func:`score_fold`.
        """
        metric, classifier = self._fold_metric(), is_classifier(self)
        out = {}
        for ig, params in enumerate(grid):
            backend = self._base_estimator(params)._make_backend(X, values, purpose="search")
            for s, (tr, te) in enumerate(splits):
                out[ig, s] = score_fold(backend, X, y, tr, te, values, metric, classifier,
                                        **weights)
                self._log(2, f"{params} split {s}: {metric.__name__} "
                             f"{np.round(out[ig, s]['scores'], 6).tolist()}")
        return out

    def _searches_candidates(self):
        """Whether the search fits each candidate as ``fit`` would (:func:`fit_score_fold`):
        with a ``param_grid``, or a ``scoring`` the fold scorer does not compute."""
        return getattr(self, "param_grid", None) is not None or self._fold_metric() is None

    def _fit(self, X, y, sample_weight=None, groups=None):
        self._validate_params()
        refit_metric = self._refit_metric()
        generic = self._searches_candidates()
        # checked before any work
        values = None if getattr(self, "param_grid", None) is not None else self._path_values()
        candidates = self._param_grid_candidates() if values is None else None
        # checked on all rows before any work (the folds then trust them)
        X, y, Y, sw, w = self._validate_search(X, y, sample_weight)
        splits = self._splits(X, y, groups)
        t0 = time.perf_counter()
        if generic:
            if candidates is None:  # the Cs / width spelling, scored by ``scoring``
                candidates = [{**p, self._path_param: float(v)} for p in self._grid(X, Y)
                              for v in values]
            self.cv_results_ = self._search_candidates(X, y, splits, candidates, sw)
        else:
            candidates = self._search_grid(X, y, Y, splits, values, sw, w)
        self.n_splits_ = len(splits)
        self.multimetric_ = self._metric_names() is not None
        self.fit_time_ = {"search": time.perf_counter() - t0}
        if refit_metric is None:  # several metrics, refit=False: no best_*, as GridSearchCV
            return self
        self.best_index_ = best_index(self.cv_results_, refit_metric)
        self.best_params_ = candidates[self.best_index_]
        if not callable(refit_metric):  # GridSearchCV has no best_score_ for a callable
            self.best_score_ = float(
                self.cv_results_[f"mean_test_{refit_metric}"][self.best_index_])
        if self._path_param:  # C_, alpha_: the chosen value (the estimator's default if none)
            setattr(self, f"{self._path_param}_", self.best_params_.get(
                self._path_param, self._estimator().get_params()[self._path_param]))
        self._set_best_attributes(self.best_params_)
        self._log(1, f"best {self.best_params_}: validation score "
                     f"{getattr(self, 'best_score_', float('nan')):.6g}")
        if self.refit:
            t0 = time.perf_counter()
            fit_params = {} if sw is None else {"sample_weight": sw}
            self.best_estimator_ = carry_feature_names(self, (
                self._candidate_estimator(self.best_params_).fit(X, y, **fit_params)
                if generic else self._refit(X, y, **fit_params)))
            self.fit_time_["refit"] = time.perf_counter() - t0
            self.n_iter_ = self.best_estimator_.n_iter_
        else:
            self.n_iter_ = np.array([max(1, int(round(
                self.cv_results_["mean_n_iter"][self.best_index_])))])
        return self

    def _metric_names(self):
        """The names of several metrics (``scoring`` a list, tuple, set or dict), else
        None (one metric: its results are ``*_test_score``)."""
        scoring = getattr(self, "scoring", None)
        return list(scoring) if isinstance(scoring, (list, tuple, set, dict)) else None

    def _refit_metric(self):
        """The metric that picks ``best_index_`` (``GridSearchCV``'s rule), checked before
        any work: "score" for one metric, ``refit``'s name among several, a callable
        ``refit`` itself, or None (several metrics, ``refit=False``: no best candidate)."""
        names, refit = self._metric_names(), self.refit
        if callable(refit):
            return refit
        if names is None:
            return "score"
        if refit is False:
            return None
        if not isinstance(refit, str) or refit not in names:
            raise ValueError(f"With several metrics (scoring={self.scoring!r}), refit must "
                             f"name the one that picks the best candidate (one of {names}), "
                             f"be a callable of cv_results_, or be False; got {refit!r}")
        return refit

    def _param_grid_candidates(self):
        """``param_grid``'s candidates in ``ParameterGrid``'s order (``GridSearchCV``'s),
        each checked as the estimator's parameters before any work."""
        try:
            candidates = list(ParameterGrid(self.param_grid))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"param_grid: {exc}") from None
        known = set(self._estimator().get_params())
        unknown = sorted({k for c in candidates for k in c} - known)
        if unknown:
            raise ValueError(f"param_grid names {unknown}, which are not parameters of "
                             f"{self._estimator.__name__} (those are {sorted(known)})")
        for c in candidates:
            self._candidate_estimator(c)._validate_params()
        return candidates

    def _candidate_estimator(self, params):
        """The estimator of one candidate: this one's parameters, then the candidate's."""
        return self._base_estimator(params)

    def _search_candidates(self, X, y, splits, candidates, sw):
        """``cv_results_`` of the candidates, by :func:`fit_score_fold` cells.

        The candidates that differ only in C share one cell per fold (one ``fit_path``
        along their C values); the cells run on threads, one a core (``n_jobs=None``), or on
        ``n_jobs`` joblib workers. ``sw`` weighs the training rows, and the test rows'
        scores where ``GridSearchCV`` would weigh them (:func:`scorer_takes_weights`).
        """
        name = self._path_param
        default_C = self._estimator().get_params()[name]
        groups, where = [], []  # (parameters but C, set of C); per candidate (group, C)
        for c in candidates:
            rest = {k: v for k, v in c.items() if k != name}
            g = next((i for i, (p, _) in enumerate(groups) if p == rest), None)
            if g is None:
                groups.append((rest, set()))
                g = len(groups) - 1
            C = float(c.get(name, default_C))
            groups[g][1].add(C)
            where.append((g, C))
        group_Cs = [np.sort(list(cs)) for _, cs in groups]
        scorer = check_scoring(self._estimator(), scoring=self.scoring)
        weigh = sw is not None and scorer_takes_weights(scorer, self)
        cells = [(g, s) for g in range(len(groups)) for s in range(len(splits))]
        tasks = [(self._candidate_estimator(groups[g][0]), X, y, *splits[s], group_Cs[g],
                  scorer, sw, weigh) for g, s in cells]
        n_jobs = getattr(self, "n_jobs", None)
        if n_jobs is None:  # the solvers release the GIL: cells on threads, one a core
            width = [_narrowness(self._candidate_estimator(p), X) for p, _ in groups]
            order = np.argsort([-width[g] for g, _ in cells], kind="stable")
            outs = thread_map(fit_score_fold, tasks, usable_cores(), order=order)
        else:
            outs = Parallel(n_jobs=n_jobs)(delayed(fit_score_fold)(*t) for t in tasks)
        return self._candidate_results(candidates, dict(zip(cells, outs)), where, group_Cs,
                                       len(splits))

    def _candidate_results(self, candidates, outs, where, group_Cs, n_splits):
        """``cv_results_`` from the cells ``outs[group, split]`` of :func:`fit_score_fold`;
        ``where[candidate] = (group, C)``. A cell that could not fit scores NaN (warned)."""
        names = self._metric_names() or ["score"]
        shape = (len(candidates), n_splits)
        scores = {m: np.full(shape, np.nan) for m in names}
        fit_t, score_t, n_iter = (np.zeros(shape) for _ in range(3))
        for ci, (g, C) in enumerate(where):
            i = int(np.searchsorted(group_Cs[g], C))
            for s in range(n_splits):
                cell = outs[g, s]
                for m in names:
                    if m in cell["scores"]:
                        scores[m][ci, s] = cell["scores"][m][i]
                score_t[ci, s] = cell["score_time"][i]
                fit_t[ci, s] = cell["setup_time"] / group_Cs[g].size  # its share
                n_iter[ci, s] = cell["n_iter"][i]
        errors = [cell["error"] for cell in outs.values() if cell["error"] is not None]
        if errors:
            warnings.warn(f"{len(errors)} of {len(outs)} fits failed and were scored NaN "
                          f"(as GridSearchCV's error_score=np.nan); the first: {errors[0]}",
                          FitFailedWarning, stacklevel=5)
        results, _ = search_results(candidates, scores if self._metric_names() else
                                    scores["score"], fit_t, np.zeros(shape), n_iter, 1)
        del results["mean_setup_time"], results["mean_solve_time"]
        results.update(mean_score_time=score_t.mean(axis=1),
                       std_score_time=score_t.std(axis=1))
        return results

    def _search_grid(self, X, y, Y, splits, values, sw, w):
        """The kernel-parameter grid and the path by the fold scorer: sets ``cv_results_``
        and ``best_index_``, returns the candidates. ``sw``: the validated sample weights,
        ``w``: the per-point weights of the whole fit (None: unweighted)."""
        class_weight = getattr(self, "class_weight", None)
        weights = ({} if sw is None and class_weight is None
                   else {"sample_weight": sw, "class_weight": class_weight})
        grid = self._grid(X, Y)
        cells = self._score_grid(X, y if is_classifier(self) else Y, splits, grid, values,
                                 **weights)
        shape = (len(grid) * len(values), len(splits))
        scores, setup, solve, n_iter = (np.zeros(shape) for _ in range(4))
        for (ig, s), cell in cells.items():
            rows = slice(ig * len(values), (ig + 1) * len(values))
            scores[rows, s], solve[rows, s] = cell["scores"], cell["solve_time"]
            setup[rows, s], n_iter[rows, s] = cell["setup_time"], cell["n_iter"]
        candidates = [{**p, **({self._path_param: float(v)} if self._path_param else {})}
                      for p in grid for v in values]
        self._check_scores(scores, candidates, w)
        self.cv_results_, _ = search_results(candidates, scores, setup, solve, n_iter,
                                             len(values))
        return candidates

    def _refit(self, X, y, **fit_params):
        return self._base_estimator(self.best_params_).fit(X, y, **fit_params)

    def _set_best_attributes(self, params):
        """Attributes named after the chosen candidate (after ``cv_results_`` is set)."""

    def _check_refit(self):
        check_is_fitted(self)
        if not self.refit:
            raise NotFittedError(f"{type(self).__name__} was fitted with refit=False, so it is "
                                 "not fitted for prediction (refit=True keeps the best model)")
        return self.best_estimator_

    def predict(self, X):
        """Predictions of ``best_estimator_``: class labels of a classifier (n_samples,),
        a regressor's values (shape as its ``predict``)."""
        return self._check_refit().predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR/CSC, as the refitted estimator
        return tags


class PathClassifierCV(ClassifierBase, PathSearchCV):
    """Base of the classifiers' ``*CV``: :class:`PathSearchCV` scored by accuracy (weighted
    by the test rows' ``sample_weight``), or by ``scoring``'s scorer.

    Weights follow their rows into the folds (:func:`score_fold`); a subclass overriding
    ``_score_grid`` receives them as ``sample_weight`` and ``class_weight`` keywords.
    """

    def fit(self, X, y, sample_weight=None, groups=None):
        """Search the grid by cross-validation, then refit the best candidate on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default None
            Per-sample weights, finite and >= 0. They follow their rows into the folds
            (training weights, and the test rows' weights in the score, as
            ``GridSearchCV``'s when its scorer takes them) and into the refit.
        groups : array-like of shape (n_samples,), default None
            Group labels for a splitter that uses them (``cv=GroupKFold(k)``), passed to its
            ``split`` as ``GridSearchCV.fit(..., groups=)`` does.

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight, groups)

    def _validate_search(self, X, y, sample_weight):
        """(X, y, Y, the validated sample weights, the per-point weights), on all rows."""
        X, y, classes, Y = self._validate_xy(X, y)
        w = self._validate_weights(X, y, classes, sample_weight)
        self.classes_ = classes
        return X, y, Y, check_sample_weight(sample_weight, X), w

    def _fold_metric(self):
        return accuracy if getattr(self, "scoring", None) is None else None

    def _check_scores(self, scores, candidates, w):
        if np.isnan(scores).any():
            warnings.warn(f"{int(np.isnan(scores).any(axis=0).sum())} of {scores.shape[1]} "
                          "splits have a single class (of positive weight) in their training "
                          "part" + (" or only rows of weight 0 in their test part"
                                    if w is not None else "")
                          + " and were not scored; use fewer folds",
                          FitFailedWarning, stacklevel=5)

    def decision_function(self, X):
        """Decision values of ``best_estimator_`` (shape as its ``decision_function``)."""
        return self._check_refit().decision_function(X)

    def _platt_output(self, X, log):
        """``predict_proba`` / ``predict_log_proba`` of ``best_estimator_`` (the refit
        fitted the sigmoids)."""
        best = self._check_refit()
        return best.predict_log_proba(X) if log else best.predict_proba(X)
