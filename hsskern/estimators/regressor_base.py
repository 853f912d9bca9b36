"""The regressor mixin of the estimator base, on a single model and on a search.

The shared bases (:class:`~hsskern.estimators.base.PathEstimator`,
:class:`~hsskern.estimators.cv.PathSearchCV`) hold the protocol: validation at the boundary,
``fit`` starting from nothing, one ``fit_path`` (fitted copies in increasing order of the path
parameter, the preparation's time counted once in the first, ``self`` left as it was), one
splitter policy, one fold scorer. A regressor passes its targets through as columns (``Y``,
shape (n, k)) where a classifier encodes labels into -1/+1 columns; :class:`RegressorBase`
is that difference, :class:`PathRegressor` and :class:`PathRegressorCV` the two bases of
the path-protocol regressors.
"""
import warnings

import numpy as np
from sklearn.base import RegressorMixin, clone

from ..solvers.paths.ridge_path import check_alphas
from .base import FitData, PathEstimator, check_sample_weight, validate_input
from .cv import FOLD_METRICS, PathSearchCV

__all__ = ["RegressorBase", "PathRegressor", "PathRegressorCV", "SCORINGS"]

#: Scores a regression ``*CV`` can maximise (scikit-learn's names; multi-output: the mean).
SCORINGS = ("neg_mean_squared_error", "r2")


def _weights(sample_weight, X):
    """The validated weights, None for None or all ones (the unweighted problem, solved as
    before)."""
    w = check_sample_weight(sample_weight, X)
    return None if w is None or np.all(w == 1.0) else w


class RegressorBase(RegressorMixin):
    """The regressor mixin: validation of (n, k) targets (also the Gaussian process's)."""

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


class PathRegressor(RegressorBase, PathEstimator):
    """Base of the path-protocol regressors (not for direct use): :class:`PathEstimator`'s
    protocol and hooks (``_path_param``, e.g. "alpha" or "C"), on targets taken as columns.
    """

    _path_param = "alpha"

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
        return self._fit(X, y)

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
        return clone(self)._fit_path(X, y, values)  # validation sets fitted attributes

    def _fit_values(self):
        return [float(getattr(self, self._path_param))]

    def _check_path_values(self, values):
        return check_alphas(values, name=f"{self._path_param}s")

    def _validate_fit(self, X, y, sample_weight=None):
        X, y, Y = self._validate_xy(X, y)
        return FitData(X, Y, weights=_weights(sample_weight, X), ravel=y.ndim == 1)

    def _set_target_attributes(self, data, backend, solution):
        self._ravel = data.ravel
        # a fit ran its solver (scikit-learn's rule): a direct solve counts as one
        self.n_iter_ = np.maximum(solution.n_iter, 1)

    def predict(self, X):
        """Predictions, shape (n_samples,) for a 1-D training target, else
        (n_samples, n_targets).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        """
        D = self._raw_decision(X)
        return D[:, 0] if self._ravel else D


class PathRegressorCV(RegressorBase, PathSearchCV):
    """Base of the regression ``*CV`` estimators: :class:`PathSearchCV` scored by
    ``scoring`` (one of :data:`SCORINGS`) on ``GridSearchCV``'s k-fold splits or a hold-out.

    Subclasses define what :class:`PathSearchCV` asks for; ``_path_values()`` checks the
    path's grid (``Cs`` by default, ``alphas`` for kernel ridge).
    """

    _path_param = "alpha"

    def fit(self, X, y, groups=None):
        """Search the grid by cross-validation, then refit the best candidate on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        groups : array-like of shape (n_samples,), default None
            Group labels for a splitter that uses them (``cv=GroupKFold(k)``), passed to its
            ``split`` as ``GridSearchCV.fit(..., groups=)`` does.

        Returns
        -------
        self
        """
        return self._fit(X, y, groups=groups)

    def _validate_search(self, X, y, sample_weight=None):
        X, y, Y = self._validate_xy(X, y)
        w = _weights(sample_weight, X)
        return X, y, Y, w, w

    def _fold_metric(self):
        return FOLD_METRICS[self.scoring]

    def _check_scores(self, scores, candidates, w):
        unscored = np.isnan(scores).any(axis=1)
        if unscored.all():
            raise ValueError(f"no candidate could be scored ({self._why_unscored()})")
        if unscored.any():
            warnings.warn(f"{int(unscored.sum())} of {len(candidates)} candidates were not "
                          f"scored and rank last: "
                          + ", ".join(str(c) for c in np.array(candidates)[unscored][:5])
                          + (", ..." if unscored.sum() > 5 else "")
                          + f" ({self._why_unscored()})", UserWarning, stacklevel=5)

    def _why_unscored(self):
        """Why a candidate's score is NaN (the backend returned no solution for it)."""
        return "the backend could not solve it"
