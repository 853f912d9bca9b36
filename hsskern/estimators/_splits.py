"""The splitter policy of every ``*CV`` estimator and of the probability calibration's
internal folds: in a module of its own, so that the estimator base (calibration) and the
cross-validation machinery (which builds on the base) both import it.
"""
from numbers import Integral, Real

import numpy as np
from sklearn.model_selection import (KFold, ShuffleSplit, StratifiedKFold,
                                     StratifiedShuffleSplit, check_cv)

__all__ = ["make_splits"]


def make_splits(cv, X, y, random_state=None):
    """The splitter policy of every ``*CV`` estimator.

    int k: stratified k-fold, shuffled with ``random_state`` (plain k-fold when a class has
    fewer than k members); float in (0, 1): one stratified hold-out of that fraction (plain
    when it cannot be stratified); anything else: a scikit-learn splitter or an iterable of
    (train, test) index pairs.
    """
    counts = np.unique(y, return_counts=True)[1]
    if isinstance(cv, Integral) and not isinstance(cv, bool):
        k = int(cv)
        cls = StratifiedKFold if counts.min() >= k else KFold
        splitter = cls(k, shuffle=True, random_state=random_state)
    elif isinstance(cv, Real) and not isinstance(cv, bool):
        stratify = counts.min() >= 2 and round(cv * len(y)) >= len(counts)
        cls = StratifiedShuffleSplit if stratify else ShuffleSplit
        splitter = cls(n_splits=1, test_size=cv, random_state=random_state)
    else:
        splitter = check_cv(cv, y, classifier=True)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y)]
