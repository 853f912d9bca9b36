"""Fitted state: what the ``*CV`` refit carries (feature names), and ``fit_path`` leaving the
estimator as it was (issue 43, parts 2 and 3)."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_regressor
from sklearn.datasets import make_classification

from hsskern import (ExactSVC, FPCClassifierCV, HSSKernelRidge, HSSKernelRidgeCV, HSSSVC,
                     HSSSVCCV, HSSSVR, HSSSVRCV, NystromSVC, NystromSVCCV, SparseCholeskySVC)

pd = pytest.importorskip("pandas")

COLUMNS = ["a", "b", "c"]


def _frame(n=160, seed=0, regression=False):
    X, y = make_classification(n, 3, n_informative=3, n_redundant=0, random_state=seed)
    if regression:
        y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    return pd.DataFrame(X, columns=COLUMNS), y


SEARCHES = [
    HSSSVCCV(h=[1.0, 2.0], Cs=[0.1, 1.0], cv=2, random_state=0, probability=True),
    NystromSVCCV(gamma=1.0, Cs=[0.1, 1.0], n_components=30, cv=2, random_state=0),
    FPCClassifierCV(degrees=[1, 2], cv=2, random_state=0),
    HSSKernelRidgeCV(h=[1.0, 2.0], alphas=[0.01, 0.1], cv=2, random_state=0),
    HSSKernelRidgeCV(h=[1.0, 2.0], alphas=[0.01, 0.1], cv=None, random_state=0),
    HSSSVRCV(h=1.0, Cs=[0.1, 1.0], cv=2, random_state=0),
]
SEARCH_IDS = [type(e).__name__ + ("-loo" if getattr(e, "cv", 1) is None else "")
              for e in SEARCHES]


def _methods(est):
    names = ["predict", "score"]
    names += [m for m in ("decision_function", "predict_proba", "predict_log_proba")
              if hasattr(est, m)]
    return names


def _call(est, name, X, y):
    return getattr(est, name)(X, y) if name == "score" else getattr(est, name)(X)


@pytest.mark.parametrize("est", SEARCHES, ids=SEARCH_IDS)
def test_search_fitted_on_a_frame_checks_its_column_names(est):
    """Issue 43, part 2: a ``*CV`` fitted on a DataFrame refitted on the validated array, so
    its best estimator had no feature names and scored reordered columns silently. It must
    raise as scikit-learn does, on every prediction method, and on the same frame predict as
    the search fitted on the bare array does."""
    df, y = _frame(regression=is_regressor(est))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence on a tiny grid is not the point
        on_frame = clone(est).fit(df, y)
        on_array = clone(est).fit(df.to_numpy(), y)
    np.testing.assert_array_equal(on_frame.feature_names_in_, COLUMNS)
    np.testing.assert_array_equal(on_frame.best_estimator_.feature_names_in_, COLUMNS)
    assert not hasattr(on_array.best_estimator_, "feature_names_in_")
    reordered = df[["b", "a", "c"]]
    renamed = df.rename(columns={"c": "z"})
    for name in _methods(on_frame):
        for bad in (reordered, renamed):
            with pytest.raises(ValueError, match="feature names should match"):
                _call(on_frame, name, bad, y)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "fitted without feature names" warning
            got = _call(on_frame, name, df, y)
        np.testing.assert_array_equal(got, _call(on_array, name, df.to_numpy(), y),
                                      err_msg=name)
