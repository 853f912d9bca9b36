"""The regression half of the estimator base, written against the path protocol.

The classifier base (``base.py``) encodes labels into -1/+1 columns; a regressor passes its
targets through as columns (``Y``, shape (n, k)) and otherwise follows the same contract:
validation at the boundary, ``fit`` starting from nothing, one ``fit_path`` (fitted copies in
increasing order of the path parameter, the preparation's time counted once in the first,
``self`` left as it was). :class:`PathRegressorCV` is the regression counterpart of
``PathClassifierCV``: one splitter policy (:func:`make_regression_splits`), one fold scorer
(:func:`score_regression_fold`, one preparation per fold and kernel parameter, the whole path
on it) and ``cv_results_`` by the shared :func:`~hsskern.estimators.cv.search_results`.
"""
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, ShuffleSplit, check_cv
from sklearn.utils.validation import check_is_fitted

from ..solvers.ridge_path import check_alphas
from ._budget import budgeted_decision
from .base import FitStateMixin, validate_input
from .cv import carry_feature_names, search_results

__all__ = ["RegressorBase", "PathRegressor", "PathRegressorCV", "make_regression_splits",
           "score_regression_fold", "regression_scores", "SCORINGS"]

#: Scores a regression ``*CV`` can maximise (scikit-learn's names; multi-output: the mean).
SCORINGS = ("neg_mean_squared_error", "r2")

def regression_scores(scoring, Y_true, D):
    """Scores (higher is better) of the predictions D (S, m, k) of S models on Y_true (m, k)."""
    if scoring == "r2":
        return np.array([r2_score(Y_true, d) for d in D])
    return -np.mean((D - Y_true[None]) ** 2, axis=(1, 2))


def make_regression_splits(cv, X, random_state=None):
    """The splitter policy of every regression ``*CV``.

    int k: k-fold, shuffled with ``random_state``; float in (0, 1): one shuffled hold-out of
    that fraction; anything else: a scikit-learn splitter or an iterable of (train, test)
    index pairs (``check_cv`` for a regressor).
    """
    if isinstance(cv, Integral) and not isinstance(cv, bool):
        splitter = KFold(int(cv), shuffle=True, random_state=random_state)
    elif isinstance(cv, Real) and not isinstance(cv, bool):
        splitter = ShuffleSplit(n_splits=1, test_size=cv, random_state=random_state)
    else:
        splitter = check_cv(cv, classifier=False)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X)]


def score_regression_fold(backend, X, Y, train, test, values, scoring):
    """Prepare on ``X[train]``, solve the whole path, score every value on ``X[test]``.

    Parameters
    ----------
    backend : a path-protocol backend
    X : ndarray of shape (n_samples, n_features)
    Y : ndarray of shape (n_samples, k)
    train, test : ndarray of int
    values : ndarray
        The path's values (alpha, C), ascending.
    scoring : one of ``SCORINGS``

    Returns
    -------
    dict
        ``scores``, ``solve_time`` (seconds), ``n_iter`` (largest over the target columns),
        one per value; ``setup_time`` (the shared preparation, seconds).
    """
    t0 = time.perf_counter()
    prepared = backend.prepare(X[train], Y[train])
    setup = time.perf_counter() - t0
    solutions = backend.path(prepared, Y[train], values)
    D = backend.model(prepared, solutions).decision(X[test])
    return {"scores": regression_scores(scoring, Y[test], D),
            "solve_time": np.array([sum(s.timings.values()) for s in solutions]),
            "n_iter": np.array([int(np.max(s.n_iter)) for s in solutions]),
            "setup_time": setup}


class RegressorBase(FitStateMixin, RegressorMixin, BaseEstimator):
    """What every regressor here shares: validation of (n, k) targets on top of
    :class:`~hsskern.estimators.base.FitStateMixin`."""

    def _validate_xy(self, X, y):
        """X (n, d) float, y as given (validated), and Y: its (n, k) float columns."""
        self._reset()
        X, y = validate_input(self, X, y, multi_output=True, y_numeric=True)
        Y = np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(len(y), -1))
        return X, y, Y

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR/CSC, densified within the memory budget
        tags.target_tags.multi_output = True  # (n, k) targets share one factor
        return tags


class PathRegressor(RegressorBase):
    """Base of the path-protocol regressors (not for direct use).

    Subclasses define ``_parameter_constraints``, ``__init__``, ``_path_param`` (the
    parameter a path varies, e.g. "alpha") and

    * ``_make_backend(X, values, for_search=False)``: the backend for these parameters and
      the path values it will be asked to solve (ascending); ``for_search``: for a ``*CV``,
      which scores a value the backend cannot solve as NaN instead of failing;
    * ``_set_backend_attributes(prepared, solution)`` (optional): fitted attributes beyond
      the common ones.
    """

    _path_param = "alpha"

    def _make_backend(self, X, values):
        raise NotImplementedError

    def _set_backend_attributes(self, prepared, solution):
        pass

    def fit(self, X, y):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self
        """
        self._validate_params()
        X, y, Y = self._validate_xy(X, y)
        values = [float(getattr(self, self._path_param))]
        backend = self._make_backend(X, values)
        self._fit_prepared(backend, backend.prepare(X, Y), Y, values, y.ndim == 1,
                           copies=False)
        return self

    def _fit_prepared(self, backend, prepared, Y, values, ravel, copies):
        """Solve the path on a prepared problem: with ``copies``, return a fitted copy per
        value (the preparation's time in the first); else fit ``self`` as its last value."""
        solutions = backend.path(prepared, Y, values)
        if not copies:
            self._set_fitted(backend, prepared, solutions[-1], shared=len(solutions) == 1,
                             ravel=ravel)
            return []
        models = []
        for i, sol in enumerate(solutions):
            m = clone(self).set_params(**{self._path_param: float(sol.C)})
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(self, attr):
                    setattr(m, attr, getattr(self, attr))
            m._set_fitted(backend, prepared, sol, shared=(i == 0), ravel=ravel)
            models.append(m)
        return models

    def fit_path(self, X, y, values):
        """Fit one model per value of the path parameter on one preparation.

        For kernel ridge: one compression and, per alpha, one refactorization.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        values : sequence of float
            Each finite and > 0, checked before any work; solved in increasing order.

        Returns
        -------
        list of estimators
            Fitted copies of this estimator with the parameter set to each value, in
            increasing order. The shared preparation's time is counted once, in the first
            model's ``fit_time_``. ``self`` is left as it was (unfitted, or fitted as
            before): its state stays the one its parameters describe.
        """
        work = clone(self)  # validation sets fitted attributes: on the copy, not on self
        work._validate_params()
        values = check_alphas(values, name=f"{self._path_param}s")
        X, y, Y = work._validate_xy(X, y)
        backend = work._make_backend(X, values)
        prepared = backend.prepare(X, Y)
        return work._fit_prepared(backend, prepared, Y, values, y.ndim == 1, copies=True)

    def _set_fitted(self, backend, prepared, solution, shared, ravel):
        self._model = backend.model(prepared, [solution])
        self._ravel = ravel
        # a fit ran its solver (scikit-learn's rule): a direct solve counts as one
        self.n_iter_ = np.maximum(solution.n_iter, 1)
        zeros = {k: 0.0 for k in prepared.timings}
        self.fit_time_ = {**(dict(prepared.timings) if shared else zeros), **solution.timings}
        self._set_backend_attributes(prepared, solution)

    def predict(self, X):
        """Predictions, shape (n_samples,) for a 1-D training target, else
        (n_samples, n_targets).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        D = budgeted_decision(self, self._model, X)[0]  # within memory_budget, by row chunks
        return D[:, 0] if self._ravel else D


class PathRegressorCV(RegressorBase):
    """Base of the regression ``*CV`` estimators: a grid over kernel parameters and the path.

    Subclasses define ``_estimator`` (the estimator class refitted), ``_path_param``,
    ``_values()`` (the path's values, checked), ``_grid(X)`` (a list of dicts of preparation
    parameters, e.g. widths) and may override ``_search`` (how the candidates are scored).
    """

    _path_param = "alpha"

    def _grid(self, X):
        return [{}]

    def _base_estimator(self, params):
        """The single-model estimator with this one's parameters and ``params``."""
        own = self._estimator().get_params(deep=False)
        kw = {k: v for k, v in self.get_params(deep=False).items() if k in own}
        # set_params: a candidate may name an options field (options__max_rank)
        return self._estimator(**kw).set_params(**params)

    def _search(self, X, Y, grid, values):
        """Scores by k-fold (or hold-out) cross-validation: (scores, setup, solve, n_iter)
        arrays of shape (n_candidates, n_splits), candidates in grid order."""
        splits = make_regression_splits(self.cv, X, self.random_state)
        shape = (len(grid) * len(values), len(splits))
        scores, setup, solve, n_iter = (np.zeros(shape) for _ in range(4))
        for ig, params in enumerate(grid):
            backend = self._base_estimator(params)._make_backend(X, values, for_search=True)
            rows = slice(ig * len(values), (ig + 1) * len(values))
            for s, (tr, te) in enumerate(splits):
                cell = score_regression_fold(backend, X, Y, tr, te, values, self.scoring)
                scores[rows, s], solve[rows, s] = cell["scores"], cell["solve_time"]
                setup[rows, s], n_iter[rows, s] = cell["setup_time"], cell["n_iter"]
                self._log(2, f"{params} split {s}: {self.scoring} "
                             f"{np.round(cell['scores'], 6).tolist()}")
        return scores, setup, solve, n_iter

    def fit(self, X, y):
        """Search the grid by cross-validation, then refit the best candidate on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self
        """
        self._validate_params()
        values = self._values()  # checked before any work
        X, y, Y = self._validate_xy(X, y)
        grid = self._grid(X)
        t0 = time.perf_counter()
        self._refit_from = None  # a search may leave what the refit can reuse
        scores, setup, solve, n_iter = self._search(X, Y, grid, values)
        search = time.perf_counter() - t0
        candidates = [{**p, self._path_param: float(v)} for p in grid for v in values]
        unscored = np.isnan(scores).any(axis=1)
        if unscored.all():
            raise ValueError(f"no candidate could be scored ({self._why_unscored()})")
        if unscored.any():
            warnings.warn(f"{int(unscored.sum())} of {len(candidates)} candidates were not "
                          f"scored and rank last: "
                          + ", ".join(str(c) for c in np.array(candidates)[unscored][:5])
                          + (", ..." if unscored.sum() > 5 else "")
                          + f" ({self._why_unscored()})", UserWarning, stacklevel=2)
        self.cv_results_, self.best_index_ = search_results(candidates, scores, setup, solve,
                                                            n_iter, len(values))
        self.best_params_ = candidates[self.best_index_]
        self.best_score_ = float(self.cv_results_["mean_test_score"][self.best_index_])
        self.n_splits_ = scores.shape[1]
        self.fit_time_ = {"search": search}
        setattr(self, f"{self._path_param}_", self.best_params_[self._path_param])
        self._set_best_attributes(self.best_params_)
        self._log(1, f"best {self.best_params_}: {self.scoring} {self.best_score_:.6g}")
        if self.refit:
            t0 = time.perf_counter()
            self.best_estimator_ = carry_feature_names(self, self._refit(X, y))
            self.fit_time_["refit"] = time.perf_counter() - t0
            self.n_iter_ = self.best_estimator_.n_iter_
        else:
            self.n_iter_ = np.array([max(1, int(round(
                self.cv_results_["mean_n_iter"][self.best_index_])))])
        self.__dict__.pop("_refit_from", None)
        return self

    def _refit(self, X, y):
        return self._base_estimator(self.best_params_).fit(X, y)

    def _why_unscored(self):
        """Why a candidate's score is NaN (the backend returned no solution for it)."""
        return "the backend could not solve it"

    def _set_best_attributes(self, params):
        """Attributes named after the chosen candidate (after ``cv_results_`` is set)."""

    def _check_refit(self):
        check_is_fitted(self)
        if not self.refit:
            raise NotFittedError(f"{type(self).__name__} was fitted with refit=False, so it is "
                                 "not fitted for prediction (refit=True keeps the best model)")
        return self.best_estimator_

    def predict(self, X):
        """Predictions of ``best_estimator_`` (shape as its ``predict``)."""
        return self._check_refit().predict(X)
