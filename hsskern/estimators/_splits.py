"""The splitter policy of every ``*CV`` estimator, classifier or regressor, and of the
probability calibration's internal folds: in a module of its own, so that the estimator base
(calibration) and the cross-validation machinery (which builds on the base) both import it.
"""
from numbers import Integral, Real

import numpy as np
from sklearn.model_selection import (KFold, ShuffleSplit, StratifiedKFold,
                                     StratifiedShuffleSplit, check_cv)

__all__ = ["make_splits"]


def make_splits(cv, X, y, random_state=None, classifier=True):
    """The splitter policy of every ``*CV`` estimator: (train, test) index pairs.

    As scikit-learn's ``check_cv``, stratified for a classifier and plain for a regressor,
    and shuffled with ``random_state``. int k: k-fold (for a classifier stratified, plain
    k-fold when a class has fewer than k members); float in (0, 1): one hold-out of that
    fraction (for a classifier stratified, plain when it cannot be stratified); anything
    else: a scikit-learn splitter or an iterable of (train, test) index pairs (``check_cv``).

    Parameters
    ----------
    cv : int, float, splitter or iterable
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or (n_samples, n_targets)
        Class labels (``classifier``) or regression targets.
    random_state : int, RandomState or None
    classifier : bool, default True
    """
    integer = isinstance(cv, Integral) and not isinstance(cv, bool)
    fraction = isinstance(cv, Real) and not isinstance(cv, bool) and not integer
    if classifier and (integer or fraction):
        counts = np.unique(y, return_counts=True)[1]
    if integer:
        k = int(cv)
        cls = StratifiedKFold if classifier and counts.min() >= k else KFold
        splitter = cls(k, shuffle=True, random_state=random_state)
    elif fraction:
        stratify = classifier and counts.min() >= 2 and round(cv * len(y)) >= len(counts)
        cls = StratifiedShuffleSplit if stratify else ShuffleSplit
        splitter = cls(n_splits=1, test_size=cv, random_state=random_state)
    else:
        splitter = check_cv(cv, y, classifier=classifier)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y)]
