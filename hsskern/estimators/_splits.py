"""The splitter policies: that of every ``*CV`` estimator, classifier or regressor
(:func:`make_splits`, ``GridSearchCV``'s), and that of the probability calibration's internal
folds (:func:`internal_folds`, shuffled as LIBSVM's internal cross-validation). In a module
of its own, so that the estimator base (calibration) and the cross-validation machinery
(which builds on the base) both import it.
"""
from numbers import Integral, Real

import numpy as np
from sklearn.model_selection import (KFold, ShuffleSplit, StratifiedKFold,
                                     StratifiedShuffleSplit, check_cv)

__all__ = ["make_splits", "internal_folds"]


def make_splits(cv, X, y, random_state=None, classifier=True, groups=None):
    """The splitter policy of every ``*CV`` estimator: (train, test) index pairs.

    ``GridSearchCV``'s (scikit-learn's ``check_cv``), so that a search sees the folds
    ``GridSearchCV(estimator, grid, cv=cv)`` sees: None or an int k gives ``k``-fold
    (None: 5), unshuffled, stratified for a classifier's binary or multiclass labels
    (``StratifiedKFold(k)``), plain otherwise (``KFold(k)``); a scikit-learn splitter or an
    iterable of (train, test) index pairs is used as given, with ``groups`` (so that
    ``GroupKFold`` works). ``random_state`` plays no part there, as in ``GridSearchCV``.

    A float in (0, 1) is hsskern's one hold-out of that fraction, the cheap validation of a
    large problem: shuffled with ``random_state``, stratified for a classifier when every
    class has two members and the hold-out one row per class (else plain). It is
    ``cv=StratifiedShuffleSplit(1, test_size=cv, random_state=random_state)`` (or
    ``ShuffleSplit``), which ``GridSearchCV`` takes too; ``groups`` plays no part in it.

    Parameters
    ----------
    cv : None, int, float, splitter or iterable
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or (n_samples, n_targets), or None
        Class labels (``classifier``) or regression targets.
    random_state : int, RandomState or None
        Shuffles a float's hold-out only.
    classifier : bool, default True
    groups : array-like of shape (n_samples,) or None
        Passed to the splitter's ``split``, as ``GridSearchCV.fit(..., groups=)`` does.
    """
    integer = isinstance(cv, Integral) and not isinstance(cv, bool)
    if isinstance(cv, Real) and not isinstance(cv, bool) and not integer:
        counts = np.unique(y, return_counts=True)[1] if classifier else None
        stratify = (classifier and counts.min() >= 2
                    and round(cv * len(y)) >= len(counts))
        cls = StratifiedShuffleSplit if stratify else ShuffleSplit
        splitter = cls(n_splits=1, test_size=cv, random_state=random_state)
    else:
        splitter = check_cv(cv, y, classifier=classifier)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y, groups)]


def internal_folds(k, X, y, random_state=None):
    """The probability calibration's k internal folds (Platt's sigmoids on held-out
    decision values): shuffled with ``random_state`` as LIBSVM's internal cross-validation,
    stratified when every class has k members, plain k-fold otherwise.

    Parameters
    ----------
    k : int >= 2
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Class labels.
    random_state : int, RandomState or None
    """
    counts = np.unique(y, return_counts=True)[1]
    cls = StratifiedKFold if counts.min() >= k else KFold
    splitter = cls(int(k), shuffle=True, random_state=random_state)
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y)]
