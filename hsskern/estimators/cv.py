"""One cross-validation machinery for every ``*CV`` estimator (and the Dask one).

The unit of work is :func:`score_fold`: one preparation per (fold, kernel parameters), the
whole C path on it, every C scored on the held-out rows with one decision call. It is a plain
function of picklable arguments, so a scheduler can run it anywhere. :class:`PathClassifierCV`
draws the splits (one policy), runs the grid, writes ``cv_results_`` in ``GridSearchCV``'s
format, picks the best candidate with ``GridSearchCV``'s tie-break (the first best in grid
order: kernel parameters as given, C increasing) and refits it.

Weights follow their rows into the folds: a fold trains on its training rows' sample weights
times its class weights ("balanced" computed on its own training labels, as SVC fitted on
that fold would), drops its rows of weight 0, and scores its test rows' accuracy weighted by
their sample weights (so a row of weight k counts as k repeated rows).
"""
import time
import warnings
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning, NotFittedError
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted

from ..solvers.path import check_Cs
from ._splits import make_splits
from .base import (ClassifierBase, check_sample_weight, encode_labels, is_pairwise,
                   labels_from_decision, point_weights, solve_path)

__all__ = ["PathClassifierCV", "WeightedPathClassifierCV", "carry_feature_names",
           "make_splits", "score_fold", "fit_score_fold", "search_results"]


def carry_feature_names(search, est):
    """``est`` (refitted on the search's validated array) with the search's
    ``feature_names_in_``, so that its predictions check the column names as scikit-learn's
    ``GridSearchCV`` refit on the frame itself does (reordered or renamed columns raise)."""
    if hasattr(search, "feature_names_in_"):
        est.feature_names_in_ = search.feature_names_in_
    return est


def score_fold(backend, X, y, train, test, Cs, sample_weight=None, class_weight=None):
    """Prepare on ``X[train]``, solve the whole C path, score every C on ``X[test]``.

    Parameters
    ----------
    backend : a path-protocol backend
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    train, test : ndarray of int
    Cs : ndarray of shape (n_Cs,)
        Ascending (or ``[None]`` for a backend without C).
    sample_weight : ndarray of shape (n_samples,) or None
        Validated per-row weights (all rows; the fold takes its own).
    class_weight : None, dict or "balanced"
        Multiplies the training rows' weights; "balanced" over the fold's training labels.

    Returns
    -------
    dict
        ``scores`` (accuracy per C, weighted by the test rows' ``sample_weight``),
        ``solve_time`` (seconds per C), ``n_iter`` (per C, the largest over the label
        columns), ``setup_time`` (the shared preparation, seconds). A fold whose training part
        holds one class (of positive weight), or whose test rows all weigh 0, cannot be
        scored: its scores are NaN.
    """
    n_c = len(Cs)
    out = {"scores": np.full(n_c, np.nan), "solve_time": np.zeros(n_c),
           "n_iter": np.zeros(n_c, dtype=int), "setup_time": 0.0}
    train, test = np.asarray(train), np.asarray(test)
    w = None
    if sample_weight is not None or class_weight is not None:
        y_tr = y[train]
        w = point_weights(y_tr, np.unique(y_tr), class_weight,
                          None if sample_weight is None else sample_weight[train])
        if w is not None:  # rows of weight 0 are dropped, as in fit
            train, w = train[w > 0], w[w > 0]
    w_test = None if sample_weight is None else sample_weight[test]
    if np.unique(y[train]).size < 2 or (w_test is not None and not w_test.sum() > 0):
        return out
    classes, Y = encode_labels(y[train])
    t0 = time.perf_counter()
    prepared = backend.prepare(X[train], Y)
    out["setup_time"] = time.perf_counter() - t0
    solutions = solve_path(backend, prepared, Y, Cs, w)
    D = backend.model(prepared, solutions).decision(X[test])
    pairwise = is_pairwise(backend, classes.size)
    for i, sol in enumerate(solutions):
        hit = labels_from_decision(classes, D[i], pairwise) == y[test]
        out["scores"][i] = np.mean(hit) if w_test is None else np.average(hit, weights=w_test)
        out["solve_time"][i] = sum(sol.timings.values())
        out["n_iter"][i] = int(np.max(sol.n_iter))
    return out


def fit_score_fold(estimator, X, y, train, test, Cs, scorer, sample_weight=None):
    """``estimator.fit_path`` on ``X[train]`` along ``Cs``, each model scored on ``X[test]``.

    The cell of a ``param_grid`` search: one preparation per (fold, parameters other than
    C), as :func:`score_fold`, but with every model fitted as ``fit`` would fit it on the
    fold (gamma="scale" resolved on the fold's rows, as ``GridSearchCV`` does) and scored by
    any scikit-learn scorer.

    Returns
    -------
    dict
        ``scores`` and ``score_time`` per C, ``n_iter`` per C (largest over the models),
        ``setup_time`` (the whole ``fit_path``, seconds), and ``error`` (None, or the message
        of a fold the estimator could not fit: its scores are NaN, as ``GridSearchCV``'s
        ``error_score=np.nan``).
    """
    n_c = len(Cs)
    out = {"scores": np.full(n_c, np.nan), "score_time": np.zeros(n_c),
           "solve_time": np.zeros(n_c), "n_iter": np.zeros(n_c, dtype=int),
           "setup_time": 0.0, "error": None}
    kw = {} if sample_weight is None else {"sample_weight": sample_weight[train]}
    t0 = time.perf_counter()
    try:
        models = clone(estimator).fit_path(X[train], y[train], Cs, **kw)
    except ValueError as exc:  # a fold it cannot fit (e.g. one class): NaN, and a warning
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["setup_time"] = time.perf_counter() - t0
    for i, m in enumerate(models):
        t0 = time.perf_counter()
        out["scores"][i] = scorer(m, X[test], y[test])
        out["score_time"][i] = time.perf_counter() - t0
        out["n_iter"][i] = int(np.max(m.n_iter_))
    return out


def search_results(candidates, scores, setup_times, solve_times, n_iter, n_Cs):
    """``cv_results_`` in ``GridSearchCV``'s format, and the best candidate's index.

    ``mean_fit_time`` counts for each candidate its own solve plus its share (1 / n_Cs) of
    the preparation its fold shared with the other C values; ``mean_setup_time`` (that whole
    preparation) and ``mean_solve_time`` are reported beside it.

    Parameters
    ----------
    candidates : list of dict
        The parameters of each candidate, in grid order.
    scores, setup_times, solve_times, n_iter : ndarray of shape (n_candidates, n_splits)
    n_Cs : int

    Returns
    -------
    cv_results : dict
    best_index : int
        The first candidate of the best mean score (NaN scores rank last).
    """
    n_cand, n_splits = scores.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        mean = np.nanmean(scores, axis=1) if n_splits else np.full(n_cand, np.nan)
        std = np.nanstd(scores, axis=1)
    ranked = np.where(np.isnan(mean), -np.inf, mean)
    rank = rankdata(-ranked, method="min").astype(np.int32)
    results = {"params": [dict(c) for c in candidates]}
    for name in dict.fromkeys(k for c in candidates for k in c):
        results[f"param_{name}"] = np.array([c.get(name) for c in candidates], dtype=object)
    for s in range(n_splits):
        results[f"split{s}_test_score"] = scores[:, s]
    fit_times = setup_times / n_Cs + solve_times
    results.update(mean_test_score=mean, std_test_score=std, rank_test_score=rank,
                   mean_fit_time=fit_times.mean(axis=1), std_fit_time=fit_times.std(axis=1),
                   mean_setup_time=setup_times.mean(axis=1),
                   mean_solve_time=solve_times.mean(axis=1), mean_n_iter=n_iter.mean(axis=1))
    return results, int(np.argmin(rank))


class PathClassifierCV(ClassifierBase):
    """Base of the ``*CV`` estimators: a grid over kernel parameters and C, by the fold scorer.

    Subclasses define ``_estimator`` (the estimator class refitted), ``_grid(X, Y)`` (a list
    of dicts of its preparation parameters, e.g. widths) and may override ``_score_grid`` (how
    the (candidate, fold) cells are computed: serially here, on Dask in
    ``hsskern.distributed``, batched over folds for FPC; with weights it receives
    ``sample_weight`` and ``class_weight`` keywords for :func:`score_fold`).

    ``fit(X, y)`` takes no weights here; :class:`WeightedPathClassifierCV` is the base when
    the refitted estimator's backend takes them.
    """

    _C_param = "C"  # the refitted estimator's parameter the path varies (None: no C)

    def _Cs(self):
        if self._C_param is None:
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

    def _score_grid(self, X, y, splits, grid, Cs, **weights):
        """{(grid index, split index): score_fold(...)} over every cell, serially."""
        out = {}
        for ig, params in enumerate(grid):
            backend = self._base_estimator(params)._make_backend(X, for_path=True)
            for s, (tr, te) in enumerate(splits):
                out[ig, s] = score_fold(backend, X, y, tr, te, Cs, **weights)
                self._log(2, f"{params} split {s}: accuracy "
                             f"{np.round(out[ig, s]['scores'], 4).tolist()}")
        return out

    def fit(self, X, y, **fit_params):
        """Search the grid by cross-validation, then refit the best candidate on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        return self._fit(X, y, self._fit_params(fit_params))

    def _searches_candidates(self):
        """Whether the search fits each candidate as ``fit`` would (:func:`fit_score_fold`):
        with a ``param_grid`` or a ``scoring`` given; else the fold scorer's accuracy."""
        return (getattr(self, "param_grid", None) is not None
                or getattr(self, "scoring", None) is not None)

    def _fit(self, X, y, sample_weight):
        self._validate_params()
        generic = self._searches_candidates()
        # checked before any work
        Cs = None if getattr(self, "param_grid", None) is not None else self._Cs()
        candidates = self._param_grid_candidates() if Cs is None else None
        X, y, classes, Y = self._validate_xy(X, y)
        # checked on all rows before any work (the folds then trust them)
        w = self._validate_weights(X, y, classes, sample_weight)
        sw = check_sample_weight(sample_weight, X)
        splits = make_splits(self.cv, X, y, self.random_state)
        if generic:
            if candidates is None:  # the Cs / width spelling, scored by ``scoring``
                candidates = [{**p, self._C_param: float(C)} for p in self._grid(X, Y)
                              for C in Cs]
            t0 = time.perf_counter()
            self.cv_results_, self.best_index_ = self._search_candidates(
                X, y, splits, candidates, sw)
            search = time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            candidates = self._search_grid(X, y, Y, splits, Cs, sw, w)
            search = time.perf_counter() - t0
        self.best_params_ = candidates[self.best_index_]
        self.best_score_ = float(self.cv_results_["mean_test_score"][self.best_index_])
        self.classes_ = classes
        self.n_splits_ = len(splits)
        self.fit_time_ = {"search": search}
        self._set_best_attributes(self.best_params_)
        self._log(1, f"best {self.best_params_}: validation score {self.best_score_:.4f}")
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

    def _param_grid_candidates(self):
        """``param_grid``'s candidates in ``ParameterGrid``'s order (``GridSearchCV``'s),
        each checked as the estimator's parameters before any work."""
        try:
            candidates = list(ParameterGrid(self.param_grid))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"param_grid: {exc}") from None
        known = set(self._estimator().get_params()) | set(
            getattr(self._estimator, "_legacy_names", ()))
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
        """(cv_results_, best_index) of the candidates, by :func:`fit_score_fold` cells.

        The candidates that differ only in C share one cell per fold (one ``fit_path``
        along their C values); the cells run on ``n_jobs`` joblib workers.
        """
        name = self._C_param
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
        cells = [(g, s) for g in range(len(groups)) for s in range(len(splits))]
        outs = Parallel(n_jobs=getattr(self, "n_jobs", None))(
            delayed(fit_score_fold)(self._candidate_estimator(groups[g][0]), X, y,
                                    *splits[s], group_Cs[g], scorer, sw) for g, s in cells)
        outs = dict(zip(cells, outs))
        shape = (len(candidates), len(splits))
        scores, fit_t, score_t, n_iter = (np.zeros(shape) for _ in range(4))
        for ci, (g, C) in enumerate(where):
            i = int(np.searchsorted(group_Cs[g], C))
            for s in range(len(splits)):
                cell = outs[g, s]
                scores[ci, s], score_t[ci, s] = cell["scores"][i], cell["score_time"][i]
                fit_t[ci, s] = cell["setup_time"] / group_Cs[g].size  # its share
                n_iter[ci, s] = cell["n_iter"][i]
        errors = [cell["error"] for cell in outs.values() if cell["error"] is not None]
        if errors:
            warnings.warn(f"{len(errors)} of {len(outs)} fits failed and were scored NaN "
                          f"(as GridSearchCV's error_score=np.nan); the first: {errors[0]}",
                          FitFailedWarning, stacklevel=4)
        results, best = search_results(candidates, scores, fit_t, np.zeros(shape), n_iter, 1)
        del results["mean_setup_time"], results["mean_solve_time"]
        results.update(mean_score_time=score_t.mean(axis=1),
                       std_score_time=score_t.std(axis=1))
        return results, best

    def _search_grid(self, X, y, Y, splits, Cs, sw, w):
        """The Cs / width grid by the fold scorer (accuracy): sets ``cv_results_`` and
        ``best_index_``, returns the candidates."""
        class_weight = getattr(self, "class_weight", None)
        weights = ({} if sw is None and class_weight is None
                   else {"sample_weight": sw, "class_weight": class_weight})
        grid = self._grid(X, Y)
        cells = self._score_grid(X, y, splits, grid, Cs, **weights)
        shape = (len(grid) * len(Cs), len(splits))
        scores, setup, solve, n_iter = (np.zeros(shape) for _ in range(4))
        for (ig, s), cell in cells.items():
            rows = slice(ig * len(Cs), (ig + 1) * len(Cs))
            scores[rows, s], solve[rows, s] = cell["scores"], cell["solve_time"]
            setup[rows, s], n_iter[rows, s] = cell["setup_time"], cell["n_iter"]
        if np.isnan(scores).any():
            warnings.warn(f"{int(np.isnan(scores).any(axis=0).sum())} of {len(splits)} splits "
                          "have a single class (of positive weight) in their training part"
                          + (" or only rows of weight 0 in their test part" if w is not None
                             else "") + " and were not scored; use fewer folds",
                          FitFailedWarning, stacklevel=4)
        candidates = [{**p, **({self._C_param: float(C)} if self._C_param else {})}
                      for p in grid for C in Cs]
        self.cv_results_, self.best_index_ = search_results(candidates, scores, setup, solve,
                                                            n_iter, len(Cs))
        return candidates

    def _refit(self, X, y, **fit_params):
        return self._base_estimator(self.best_params_).fit(X, y, **fit_params)

    def _set_best_attributes(self, params):
        """Attributes named after the chosen candidate (after ``cv_results_`` is set)."""
        if self._C_param:
            self.C_ = params.get(self._C_param,
                                 self._estimator().get_params()[self._C_param])

    def _check_refit(self):
        check_is_fitted(self)
        if not self.refit:
            raise NotFittedError(f"{type(self).__name__} was fitted with refit=False, so it is "
                                 "not fitted for prediction (refit=True keeps the best model)")
        return self.best_estimator_

    def decision_function(self, X):
        """Decision values of ``best_estimator_`` (shape as its ``decision_function``)."""
        return self._check_refit().decision_function(X)

    def predict(self, X):
        """Class labels from ``best_estimator_``, shape (n_samples,)."""
        return self._check_refit().predict(X)

    def _platt_output(self, X, log):
        """``predict_proba`` / ``predict_log_proba`` of ``best_estimator_`` (the refit
        fitted the sigmoids)."""
        best = self._check_refit()
        return best.predict_log_proba(X) if log else best.predict_proba(X)


class WeightedPathClassifierCV(PathClassifierCV):
    """Base of the ``*CV`` estimators whose refitted estimator takes per-point weights."""

    _supports_weights = True

    def fit(self, X, y, sample_weight=None):
        """Search the grid by cross-validation, then refit the best candidate on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default None
            Per-sample weights, finite and >= 0. They follow their rows into the folds
            (training weights, and the test rows' weights in the accuracy) and into the refit.

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)
