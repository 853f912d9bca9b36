"""Deprecated: the regressors' base moved to :mod:`hsskern.estimators.regressor_base`.

Importing this module warns (FutureWarning) and re-exports the new names; it goes in the
next release. ``make_regression_splits`` and ``score_regression_fold`` are the one splitter
policy and the one fold scorer of :mod:`hsskern.estimators.cv`, called as regressors call
them.
"""
import warnings

from ._splits import make_splits
from .cv import FOLD_METRICS, score_fold
from .regressor_base import SCORINGS, PathRegressor, PathRegressorCV, RegressorBase

__all__ = ["RegressorBase", "PathRegressor", "PathRegressorCV", "make_regression_splits",
           "score_regression_fold", "regression_scores", "SCORINGS"]

warnings.warn("hsskern.estimators.regression is deprecated and will be removed in the next "
              "release: import from hsskern.estimators.regressor_base (the splitter policy "
              "and the fold scorer: hsskern.estimators.cv.make_splits(..., classifier=False), "
              "score_fold(..., metric, classifier=False))", FutureWarning, stacklevel=2)


def make_regression_splits(cv, X, random_state=None):
    """``make_splits(cv, X, None, random_state, classifier=False)``."""
    return make_splits(cv, X, None, random_state, classifier=False)


def score_regression_fold(backend, X, Y, train, test, values, scoring):
    """``score_fold`` with the metric named ``scoring``, for (n, k) targets."""
    return score_fold(backend, X, Y, train, test, values, FOLD_METRICS[scoring],
                      classifier=False)


def regression_scores(scoring, Y_true, D):
    """Scores of the predictions D (S, m, k) of S models on Y_true (m, k)."""
    return FOLD_METRICS[scoring](Y_true, D)
