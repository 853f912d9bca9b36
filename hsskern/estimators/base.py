"""The estimator base every estimator shares, written once against the path protocol.

:class:`PathEstimator` is the one base of classifiers and regressors: the fitted state, the
hooks (``_make_backend(X, values, purpose)``, ``_set_backend_attributes(prepared, solution,
model)``), ``fit`` as a path of one value and ``fit_path`` on one preparation. Thin mixins
on top hold what a family adds: :class:`ClassifierBase` (validation and label encoding,
one-vs-rest and one-vs-one, the tie rule, weights, probabilities; :class:`PathClassifier`
with SVC's fitted attributes) and :class:`~hsskern.estimators.regressor_base.RegressorBase`.
An estimator module holds its parameters, its docstring and the backend it builds — as
scikit-learn's ``BaseSVC`` and ``BaseLibSVM`` in ``svm/_base.py``.

Weights: ``sample_weight`` and ``class_weight`` combine as in SVC into one weight per point,
``sample_weight_i * class_weight_[y_i]``, which the backend's ``path`` receives (LIBSVM's
weighted C). Points of weight 0 are dropped before ``prepare``: they are never support vectors,
cost no compression or factor work, and fitting with them is fitting without them.
"""
import functools
import time
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ..solvers.paths.pairwise import PairwiseBackend, class_pairs, ovr_scores, pairwise_coupling, vote
from ..solvers.paths.path import check_Cs
from ..utils.validation import check_weights
# input validation lives in utils.validation; its names stay importable from here
from ..utils.log import verbose_log
from ..utils.validation import SPARSE_FORMATS, sparse_or_dense, validate_input  # noqa: F401
from ._budget import budgeted_decision
from ._splits import internal_folds
from ._warm import warm_start, warm_state
from ._svm_params import check_break_ties, probability_on
from .calibration import (N_FOLDS, cross_val_decision, sigmoid_fit, sigmoid_log_proba,
                          sigmoid_proba)

__all__ = ["FitStateMixin", "FitData", "PathEstimator", "ClassifierBase", "PathClassifier",
           "encode_labels", "labels_from_decision", "check_sample_weight",
           "check_weighted_classes", "class_weight_vector", "point_weights", "solve_path",
           "validate_input", "sparse_or_dense"]


def _check_class_labels(y):
    """scikit-learn's ``check_classification_targets`` for a validated 1-D ``y``, skipped
    for integer labels and floats of small integral value: its type detection is a tenth
    of a small fit, and those are classes by its own rule."""
    if y.ndim == 1 and y.size and (y.dtype.kind in "iub" or (
            y.dtype.kind == "f" and np.all(np.abs(y) < 2.0 ** 31) and np.all(y == np.rint(y)))):
        return
    check_classification_targets(y)


def encode_labels(y):
    """classes, and one-vs-rest label columns in {-1, +1}: one column (+1 = ``classes[1]``)
    for two classes, one per class otherwise."""
    y = np.asarray(y)
    _check_class_labels(y)
    classes, idx = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"a classifier needs samples of at least 2 classes; the labels hold "
                         f"only one class ({classes[0]!r})")
    if classes.size == 2:
        return classes, np.where(idx == 1, 1.0, -1.0)[:, None]
    Y = -np.ones((idx.size, classes.size))
    Y[np.arange(idx.size), idx] = 1.0
    return classes, Y


@functools.cache
def _param_names(cls):
    """The constructor's parameter names of an estimator class (read from its signature
    once, not on every fit)."""
    return frozenset(cls._get_param_names())


def check_sample_weight(sample_weight, X):
    """``sample_weight`` as a float array of shape (n_samples,), or None for None.

    Lists, pandas Series and scalars as scikit-learn accepts them; a clear ValueError for NaN,
    infinity, negative entries (with the first offending index) and all-zero weights.
    """
    if sample_weight is None:
        return None
    n = X.shape[0]
    try:  # our messages first: scikit-learn's would not say which entry is wrong
        raw = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raw = None
    if raw is not None and raw.shape == (n,):
        check_weights(raw, n, "sample_weight")
    sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
    return check_weights(sw, n, "sample_weight")


def class_weight_vector(class_weight, classes, y):
    """The weight of each class in ``classes`` (SVC's ``class_weight_``), checked.

    None: ones; a dict: its entries (SVC's errors for labels it does not know); "balanced":
    ``n_samples / (n_classes * bincount(y))`` over ``y``.
    """
    if class_weight is None:  # compute_class_weight's answer, without its checks' cost
        return np.ones(classes.size)
    cw = compute_class_weight(class_weight, classes=classes, y=y)
    cw = np.asarray(cw, dtype=np.float64)
    if not np.all(np.isfinite(cw)) or np.any(cw < 0):
        raise ValueError("class_weight must map every class to a finite weight >= 0, got "
                         + ", ".join(f"{c!r}: {w:g}" for c, w in zip(classes, cw)))
    return cw


def point_weights(y, classes, class_weight=None, sample_weight=None):
    """One weight per point, ``sample_weight_i * class_weight[y_i]``; None when all are 1.

    Parameters
    ----------
    y : ndarray of shape (n,)
    classes : ndarray
        The sorted labels ``y`` is drawn from (all of ``np.unique(y)`` at least).
    class_weight : None, dict or "balanced"
        "balanced" is computed over this ``y``; a dict is looked up (1 for a class it does
        not name), so a cross-validation fold may lack some of its classes.
    sample_weight : ndarray of shape (n,) or None
        Validated (:func:`check_sample_weight`).

    Returns
    -------
    ndarray of shape (n,) or None
        None when every weight is exactly 1: the unweighted problem, solved as such.
    """
    w = None if sample_weight is None else np.array(sample_weight, dtype=np.float64)
    if class_weight is not None:
        idx = np.searchsorted(classes, y)
        if isinstance(class_weight, dict):
            cw = np.array([float(class_weight.get(c, 1.0)) for c in classes])
        else:
            cw = class_weight_vector(class_weight, classes, y)
        w = cw[idx] if w is None else w * cw[idx]
    if w is not None and np.all(w == 1.0):
        return None
    return w


def check_weighted_classes(classes, y, w):
    """A clear error unless every class keeps a point of positive weight (two at least).

    A class whose points all weigh 0 cannot be trained (its one-vs-rest column would hold no
    positive point), and fewer than two such classes leave no classifier at all.
    """
    if w is None:
        return
    alive = np.isin(classes, np.unique(y[w > 0]))
    if alive.sum() < 2:
        raise ValueError("the samples with positive weight belong to a single class "
                         f"({classes[alive][0]!r}); a classifier needs two classes with "
                         "positive sample_weight (and class_weight)")
    if not alive.all():
        raise ValueError(f"class(es) {classes[~alive].tolist()} have no sample of positive "
                         "weight (sample_weight times class_weight): remove their samples or "
                         "give them weight")


def solve_path(backend, prepared, Y, values, weights=None, start=None):
    """``backend.path``, given the per-point weights when there are any (the classifiers'
    backends take ``weights=``, the regressors', which take no weights, are called without)
    and a refit's ``start`` when there is one (``warm_start``: ``dual_start`` and its
    ``start_decision``, for the backend's ``warm_backend``)."""
    extra = {} if start is None else dict(zip(("dual_start", "start_decision"), start))
    if weights is None:
        return backend.path(prepared, Y, values, **extra)
    return backend.path(prepared, Y, values, weights=weights, **extra)


def labels_from_decision(classes, D, pairwise=False):
    """The one tie rule: decision > 0 -> ``classes[1]`` (0 -> ``classes[0]``, as SVC) for
    (m, 1) or (m,) binary decisions; the first largest column for one-vs-rest; LIBSVM's
    vote for one-vs-one pairwise values (``pairwise``, more than two classes)."""
    D = np.asarray(D)
    if D.ndim == 1 or D.shape[1] == 1:
        return classes[(D.reshape(-1) > 0).astype(np.intp)]
    if pairwise:
        return classes[vote(D, classes.size)]
    return classes[np.argmax(D, axis=1)]


def is_pairwise(backend, n_classes):
    """Whether ``backend`` trains one-vs-one and there are more than two classes."""
    return bool(getattr(backend, "one_vs_one", False)) and n_classes > 2


def ovo_dual_coef(pair_coef, sv_class, n_classes):
    """SVC's one-vs-one ``dual_coef_`` (n_classes - 1, n_SV) from the pairs' coefficients.

    ``pair_coef`` (n_pairs, n_SV) holds each pair's y alpha on the support vectors (+1 for
    the pair's first class). SVC's layout: a support vector of class c keeps its coefficient
    in the pair (c, o) in row o - (o > c), so each row holds one coefficient per vector.
    """
    out = np.zeros((n_classes - 1, pair_coef.shape[1]))
    for p, (i, j) in enumerate(class_pairs(n_classes)):
        in_i, in_j = sv_class == i, sv_class == j
        out[j - 1, in_i] = pair_coef[p, in_i]
        out[i, in_j] = pair_coef[p, in_j]
    return out


class FitStateMixin:
    """What every estimator here shares, classifier or regressor: fit starts from nothing,
    one log format, and how sparse input reaches it."""

    def _reset(self):
        """Forget every fitted attribute (scikit-learn's rule: fit starts from nothing)."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)
        for key in ("_model", "_probA", "_probB", "_warm_state", "_warm_keys"):
            self.__dict__.pop(key, None)  # the model, a drop-in's sigmoids, _warm.py's state

    def _log(self, level, msg):
        """``msg`` as one logging record when ``verbose >= level`` (:mod:`hsskern.utils.log`)."""
        if self.verbose >= level:
            verbose_log(type(self).__name__, msg)

    def _sparse_rows(self, X, fitting):
        """How sparse X reaches this estimator (see :func:`sparse_or_dense`): a fit keeps it
        sparse ("when_wide") where :meth:`_takes_sparse_rows`; a fitted model whose support
        vectors are sparse rows evaluates sparse X as it is ("keep"); else densified."""
        if fitting:
            return "when_wide" if self._takes_sparse_rows(X.shape) else None
        model = getattr(self, "_model", None)
        return "keep" if sp.issparse(getattr(model, "support_vectors", None)) else None

    def _takes_sparse_rows(self, shape):
        """Whether a fit on data of this shape needs nothing but kernel entries, blocks and
        products (the exact decomposition), so that it can read them from sparse rows."""
        return False


class FitData(NamedTuple):
    """A validated fit: what the backend solves, and what the fitted attributes need."""

    X: object
    """The rows the backend sees (those of positive weight), dense or sparse rows."""
    Y: np.ndarray
    """Their target columns, (n, k): -1/+1 label columns, or the regression targets."""
    weights: object = None
    """Per-row weights of ``X``, or None for the unweighted problem."""
    rows: object = None
    """The indices of ``X``'s rows in the X given to fit (None: all of them)."""
    classes: object = None
    """A classifier's labels (``classes_``); None for a regressor."""
    ravel: bool = False
    """Whether predictions are 1-D (a regressor fitted on a 1-D target)."""


class PathEstimator(FitStateMixin, BaseEstimator):
    """The one base of the path-protocol estimators, classifiers and regressors alike (not for
    direct use): a fit is a path of one value, ``fit_path`` a path of many on one preparation.

    A subclass defines ``_parameter_constraints``, ``__init__``, ``_path_param`` (the
    parameter a path varies: "C", "alpha"; None when the backend has none) and the two hooks,
    with one signature for every estimator:

    * ``_make_backend(X, values, purpose)``: the backend for these parameters, for the path
      ``values`` it will be asked to solve (ascending; ``[None]`` without a path parameter)
      and the ``purpose`` of the solve: "fit" (one model), "path" (:meth:`fit_path`) or
      "search" (a ``*CV``'s folds: a backend may score a value it cannot solve as NaN
      instead of failing);
    * ``_set_backend_attributes(prepared, solution, model)`` (optional): fitted attributes
      beyond the common ones.

    The classifier and regressor mixins on top (:class:`ClassifierBase`,
    :class:`~hsskern.estimators.regressor_base.RegressorBase`) validate the targets:
    ``_validate_fit(X, y, sample_weight)`` returns a :class:`FitData`,
    ``_check_path_values(values)`` checks a path's grid, ``_set_target_attributes(data,
    backend, solution)`` sets what their family's fitted models share.

    ``fit`` starts from nothing: every fitted attribute of an earlier fit is removed first.
    """

    _path_param = "C"
    #: fitted attributes of the validation that every model of a ``fit_path`` shares
    _carried_attributes = ("n_features_in_", "feature_names_in_")

    def _make_backend(self, X, values, purpose):
        raise NotImplementedError

    def _set_backend_attributes(self, prepared, solution, model):
        pass

    def _set_target_attributes(self, data, backend, solution):
        pass

    def _fit_values(self):
        """The path of ``fit``: this estimator's own value of the path parameter."""
        return [getattr(self, self._path_param)] if self._path_param else [None]

    def _fit(self, X, y, sample_weight=None):
        self._validate_params()
        # the previous solution, read before the validation forgets the fitted state
        previous = self.__dict__.get("_warm_state")
        data = self._validate_fit(X, y, sample_weight)
        values = self._fit_values()
        backend = self._make_backend(data.X, values, purpose="fit")
        start, info = None, None
        if getattr(self, "warm_start", False):
            backend, start, info = warm_start(self, previous, data, backend)
        self._solve(data, backend, backend.prepare(data.X, data.Y), values, copies=False,
                    start=start)
        if info is not None:
            self.warm_start_info_ = info
        return self

    def _fit_path(self, X, y, values, sample_weight=None):
        """The one ``fit_path`` contract (documented on the public ``fit_path``), run on a
        clone: ``self`` is a scratch estimator whose own fitted state is discarded."""
        self._validate_params()
        values = self._check_path_values(values)  # before any work
        data = self._validate_fit(X, y, sample_weight)
        backend = self._make_backend(data.X, values, purpose="path")
        return self._solve(data, backend, backend.prepare(data.X, data.Y), values,
                           copies=True)

    def _solve(self, data, backend, prepared, values, copies, start=None):
        """Solve the path on a prepared problem: with ``copies``, return a fitted copy per
        value (the preparation's time in the first); else fit ``self`` as its last value.
        ``start``: the first value's (a warm refit's, :func:`solve_path`)."""
        solutions = solve_path(backend, prepared, data.Y, values, data.weights, start)
        if not copies:
            self._set_fitted(data, backend, prepared, solutions[-1], shared=True)
            models = [self]
        else:
            models = []
            for i, sol in enumerate(solutions):
                m = clone(self).set_params(**{self._path_param: float(sol.C)})
                for attr in self._carried_attributes:
                    if hasattr(self, attr):
                        setattr(m, attr, getattr(self, attr))
                m._set_fitted(data, backend, prepared, sol, shared=(i == 0))
                models.append(m)
        del prepared, solutions  # what comes after (the probability folds) needs the memory
        self._after_path(data, backend, values, models)
        return models

    def _after_path(self, data, backend, values, models):
        """Work on the fitted models of a path that needs the whole path (a classifier's
        probability calibration)."""

    def _set_fitted(self, data, backend, prepared, solution, shared):
        model = backend.model(prepared, [solution])
        self._model = model
        self.n_iter_ = solution.n_iter.copy()
        zeros = {k: 0.0 for k in prepared.timings}
        self.fit_time_ = {**(dict(prepared.timings) if shared else zeros),
                          **solution.timings}
        self._set_target_attributes(data, backend, solution)
        self._set_backend_attributes(prepared, solution, model)
        self._warm_state = warm_state(self, data, model, solution)  # a warm refit's start

    def _raw_decision(self, X):
        """The model's decision values of X, (m, k): (m, 1) binary or one target,
        (m, n_pairs) one-vs-one, (m, n_classes) one-vs-rest, (m, n_targets)."""
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        return budgeted_decision(self, self._model, X)[0]  # within memory_budget, by row chunks

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR/CSC: sparse rows or densified (sparse_or_dense)
        return tags


#: LIBSVM's bound on the pairwise probabilities before the coupling
_MIN_PROB = 1e-7


def _check_probability(self):
    """``predict_proba`` exists only with ``probability=True`` (SVC's rule)."""
    if not probability_on(self):
        raise AttributeError("predict_proba is not available when probability=False")
    return True


def label_index(Y):
    """The class index of each point from its one-vs-rest label columns."""
    return (Y[:, 0] > 0).astype(np.intp) if Y.shape[1] == 1 else np.argmax(Y, axis=1)


class ClassifierBase(ClassifierMixin):
    """The classifier mixin, on a single model (:class:`PathClassifier`) and on a search
    (:class:`~hsskern.estimators.cv.PathClassifierCV`): validation and label encoding,
    ``sample_weight`` and ``class_weight``, and the probability outputs
    (``probability=True``)."""

    @available_if(_check_probability)
    def predict_proba(self, X):
        """Class probabilities by Platt scaling (``probability=True`` only).

        Two classes: ``proba[:, 1] = 1 / (1 + exp(probA_ f + probB_))`` with f the decision
        value. Several classes, one-vs-one (SVC's): each pair's value through its own sigmoid
        gives P(i | i or j), and LIBSVM's pairwise coupling (Wu, Lin & Weng 2004) turns them
        into class probabilities. One-vs-rest: each decision column through its own sigmoid,
        the results normalised to sum to 1.

        The argmax need not agree with :meth:`predict`, as in SVC: with two classes
        ``proba[:, 1] > 0.5`` exactly when ``probA_ f + probB_ < 0``, i.e. (``probA_ < 0``,
        the usual case) when ``f > -probB_ / probA_``, while ``predict`` thresholds f at 0;
        the two disagree on the points with f between 0 and ``-probB_ / probA_``. With
        several classes one-vs-rest the argmax is the class of the smallest ``probA_[k] f_k +
        probB_[k]``, ``predict`` the class of the largest f_k; one-vs-one, the coupled
        probabilities against the vote.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; entries in [0, 1], rows summing to 1.
        """
        return self._platt_output(X, log=False)

    @available_if(_check_probability)
    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space (no log of an underflowed
        probability)."""
        return self._platt_output(X, log=True)

    def _platt_output(self, X, log):
        """The sigmoids applied to the decision values of X."""
        check_is_fitted(self)
        A, B = self._sigmoids()
        if A is None or not A.size:
            raise NotFittedError(f"{type(self).__name__} was fitted with probability=False: "
                                 "refit with probability=True for predict_proba")
        if getattr(self, "_pairwise", False):
            Z = self._pairwise_decision(X) * A + B
            # P(i | i or j), kept off 0 and 1 as LIBSVM does before the coupling
            R = np.clip(expit(-Z), _MIN_PROB, 1.0 - _MIN_PROB)
            P = pairwise_coupling(R, self.classes_.size)
            return np.log(P) if log else P
        D = self.decision_function(X)
        return (sigmoid_log_proba if log else sigmoid_proba)(D, A, B)

    def _sigmoids(self):
        """Platt's (A, B) of the fitted model, (None, None) without (read from the instance,
        so that a drop-in's deprecated ``probA_`` property does not warn here)."""
        state = vars(self)
        return state.get("probA_", state.get("_probA")), state.get("probB_", state.get("_probB"))

    def _validate_xy(self, X, y):
        self._reset()
        X, y = validate_input(self, X, y)
        classes, Y = encode_labels(y)
        self._check_multiclass(classes)
        return X, y, classes, Y

    def _check_multiclass(self, classes):
        """SVC's ``decision_function_shape="ovo"`` needs one-vs-one training."""
        if (classes.size > 2 and getattr(self, "decision_function_shape", "ovr") == "ovo"
                and self._multiclass_rule() != "ovo"):
            raise ValueError('decision_function_shape="ovo" returns the values of the '
                             'one-vs-one pairs, which multiclass="ovr" does not train: use '
                             'multiclass="ovo" or decision_function_shape="ovr"')

    def _validate_weights(self, X, y, classes, sample_weight):
        """Per-point weights of the validated (X, y) and the fitted ``class_weight_``.

        Returns None for the unweighted problem.
        """
        sw = check_sample_weight(sample_weight, X)
        class_weight = getattr(self, "class_weight", None)
        if "class_weight" in _param_names(type(self)):
            self.class_weight_ = class_weight_vector(class_weight, classes, y)
        w = point_weights(y, classes, class_weight, sw)
        check_weighted_classes(classes, y, w)
        return w

    def _multiclass_rule(self):
        """"ovo" or "ovr": the ``multiclass`` parameter or field of ``options``; "ovr" (one
        preparation for every class) for an estimator without one."""
        if hasattr(self, "_options"):
            return getattr(self._options(), "multiclass", "ovr")
        return getattr(self, "multiclass", "ovr")


class PathClassifier(ClassifierBase, PathEstimator):
    """Base of the path-protocol classifiers (not for direct use): :class:`PathEstimator`'s
    protocol and hooks, with labels, weights, probabilities and SVC's fitted attributes.

    ``fit`` and ``fit_path`` take ``sample_weight`` (scikit-learn's sample-weight checks read
    it from the signature); a ``class_weight`` parameter of the subclass multiplies in.

    A subclass with a ``multiclass`` parameter ("ovo" / "ovr") passes its binary backend
    through :meth:`_multiclass_backend` in ``_make_backend``: with "ovo" it trains SVC's one
    binary model per pair of classes (:class:`~hsskern.solvers.paths.pairwise.PairwiseBackend`),
    and a ``decision_function_shape`` parameter shapes its decision values as SVC's.
    """

    _carried_attributes = PathEstimator._carried_attributes + ("class_weight_", "shape_fit_")
    #: whether the fitted attributes are read from the pairs' preparations (ExactSVC's
    #: validation and subsample indices): then a fit holds them to its end
    _reads_pair_preparations = False

    def _multiclass_backend(self, backend, purpose):
        """``backend`` for the ``multiclass`` parameter: one-vs-one around it ("ovo"), or
        itself ("ovr", or no such parameter: one-vs-rest on one preparation). A fit's
        pairs are prepared one at a time per worker and dropped once solved (one path call
        solves them and no one reads their preparations after,
        :class:`~hsskern.solvers.paths.pairwise.PairwiseBackend`'s ``release``): held all
        at once, 45 pairs of fashion_mnist took 10.8 GB), unless the estimator reads them
        after the fit (``_reads_pair_preparations``)."""
        if self._multiclass_rule() == "ovo":
            return PairwiseBackend(backend, release=purpose == "fit"
                                   and not self._reads_pair_preparations)
        return backend

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two or more classes (any labels, strings included).
        sample_weight : array-like of shape (n_samples,), default None
            Per-sample weights, finite and >= 0 (LIBSVM's weighted C: point i's bound is
            ``C * sample_weight[i] * class_weight_[y[i]]``). Points of weight 0 are dropped
            (never support vectors): fitting with them equals fitting without them.

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)

    @available_if(lambda self: self._path_param is not None)
    def fit_path(self, X, y, Cs, sample_weight=None):
        """Fit one model per C on one preparation (kernel compression and factor, features),
        warm-starting along increasing C.

        Every estimator with a C has this one contract.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        Cs : sequence of float
            Values of C, each finite and > 0, checked before any work. The path is solved in
            increasing order of C.
        sample_weight : array-like of shape (n_samples,), default None
            As in :meth:`fit`; the same weights for every C.

        Returns
        -------
        list of estimators
            Fitted copies of this estimator with its C set to each value, in increasing order
            of C. The shared preparation's time is counted once, in the first model's
            ``fit_time_``. ``self`` is left as it was (unfitted, or fitted as before): its
            state stays the one its parameters describe.
        """
        return clone(self)._fit_path(X, y, Cs, sample_weight)

    def _check_path_values(self, values):
        return check_Cs(values)

    def _validate_fit(self, X, y, sample_weight):
        """The points of positive weight and their labels (a :class:`FitData`)."""
        X, y, classes, Y = self._validate_xy(X, y)
        self.shape_fit_ = X.shape  # SVC's: the X given to fit, rows of weight 0 included
        w = self._validate_weights(X, y, classes, sample_weight)
        rows = None
        if w is not None and not np.all(w > 0):
            rows = np.flatnonzero(w > 0)
            X, Y, w = X[rows], Y[rows], w[rows]
        return FitData(X, Y, w, rows, classes)

    def _fit(self, X, y, sample_weight=None):
        super()._fit(X, y, sample_weight)
        self.n_iter_ = np.maximum(self.n_iter_, 1)  # a fit ran its solver (scikit-learn's rule)
        return self

    def _after_path(self, data, backend, values, models):
        if probability_on(self):  # each fold solves the whole path once
            sigmoids = self._fit_sigmoids(backend, data.X, data.Y, data.weights, values)
            for m, (A, B, seconds) in zip(models, sigmoids):
                m._set_sigmoids(A, B, seconds)

    def _fit_sigmoids(self, backend, X, Y, w, Cs):
        """Platt's sigmoids of every C, on decision values cross-validated over
        ``N_FOLDS`` stratified folds drawn with ``random_state``: [(A, B, seconds)] per C.

        The folds solve the weighted problem of the fit (LIBSVM's weighted C); the sigmoid's
        likelihood weighs each point by its ``sample_weight`` only, so that class weights move
        the boundary but the probabilities stay calibrated to the data's frequencies.
        """
        t0 = time.perf_counter()
        labels = label_index(Y)
        splits = internal_folds(min(N_FOLDS, labels.size), X, labels, self.random_state)
        D = cross_val_decision(backend, X, Y, Cs, splits, w)
        sw = None if w is None else w / self.class_weight_[labels]
        if is_pairwise(backend, Y.shape[1]):
            # pair (i, j)'s sigmoid on its own classes' points, +1 for class i (LIBSVM's)
            pairs = class_pairs(Y.shape[1])
            cols = [((labels == i) | (labels == j), np.where(labels == i, 1.0, -1.0))
                    for i, j in pairs]
        else:
            cols = [(slice(None), Y[:, k]) for k in range(Y.shape[1])]
        out = []
        for Ds in D:
            AB = np.array([sigmoid_fit(Ds[r, k], yk[r], None if sw is None else sw[r])
                           for k, (r, yk) in enumerate(cols)])
            out.append((AB[:, 0], AB[:, 1]))
        seconds = (time.perf_counter() - t0) / len(Cs)
        self._log(1, f"probability: {len(splits)} internal folds, sigmoid A "
                     f"{np.round(out[-1][0], 4).tolist()}, B {np.round(out[-1][1], 4).tolist()}")
        return [(A, B, seconds) for A, B in out]

    def _set_sigmoids(self, A, B, seconds):
        self.probA_, self.probB_ = np.asarray(A, float), np.asarray(B, float)
        self.fit_time_ = {**getattr(self, "fit_time_", {}), "probability": seconds}

    def _set_target_attributes(self, data, backend, solution):
        self.classes_ = data.classes
        self.intercept_ = solution.intercept.copy()
        self._pairwise = is_pairwise(backend, data.classes.size)

    def _set_fitted(self, data, backend, prepared, solution, shared):
        super()._set_fitted(data, backend, prepared, solution, shared)
        self._set_svc_attributes(data.classes, self._model, solution, data.Y, data.rows)

    def _set_svc_attributes(self, classes, model, solution, Y, rows=None):
        """SVC's fitted attributes where they apply: ``fit_status_`` and ``class_weight_``
        always; for a kernel expansion (a model with support vectors) ``support_``,
        ``support_vectors_``, ``dual_coef_`` and ``n_support_`` in SVC's order — the support
        vectors grouped by class in the order of ``classes_``, by index within a class (and
        for one-vs-one ``dual_coef_`` in SVC's (n_classes - 1, n_SV) layout)."""
        self.fit_status_ = int(not np.all(solution.converged))
        if not hasattr(self, "class_weight_"):
            self.class_weight_ = np.ones(classes.size)
        if not all(hasattr(model, a) for a in ("support", "support_vectors", "dual_coef")):
            return
        sv_class = label_index(Y)[model.support]
        order = np.argsort(sv_class, kind="stable")
        support = model.support[order]
        # the backend saw the points of positive weight only: index the rows given to fit
        self.support_ = support if rows is None else rows[support]
        self.n_support_ = np.bincount(sv_class, minlength=classes.size).astype(np.int32)
        self._set_sv_arrays()

    def _set_sv_arrays(self):
        """``support_vectors_`` and ``dual_coef_``: the model's arrays in the order of
        ``support_`` (the model's own arrays when that is the model's order).

        The model keeps its support vectors by increasing row, and ``support_`` maps rows
        monotonically, so the rank of ``support_[i]`` is its position in the model."""
        model = self._model
        if np.all(self.support_[1:] > self.support_[:-1]):
            self.support_vectors_, self.dual_coef_ = model.support_vectors, model.dual_coef
        else:
            order = np.empty(self.support_.size, dtype=np.intp)
            order[np.argsort(self.support_)] = np.arange(self.support_.size)
            self.support_vectors_ = model.support_vectors[order]
            self.dual_coef_ = model.dual_coef[:, order]
        if getattr(self, "_pairwise", False):  # the model keeps one row per pair
            k = self.classes_.size
            sv_class = np.repeat(np.arange(k), self.n_support_)
            self.dual_coef_ = ovo_dual_coef(self.dual_coef_, sv_class, k)

    def __getstate__(self):
        # reordered support vectors are the model's, permuted: ship them once
        state = super().__getstate__()
        model = state.get("_model")
        if "support_vectors_" in state and (
                state["support_vectors_"] is not getattr(model, "support_vectors", None)
                or state.get("_pairwise", False)):
            state = {k: v for k, v in state.items()
                     if k not in ("support_vectors_", "dual_coef_")}
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if "support_" in state and "support_vectors_" not in state:
            self._set_sv_arrays()

    def _pairwise_decision(self, X):
        return self._raw_decision(X)

    def decision_function(self, X):
        """Signed distance to the separating surface(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive: ``classes_[1]``). Several
        classes trained one-vs-one: with ``decision_function_shape="ovo"`` the
        (n_samples, n_classes (n_classes - 1) / 2) values of the pairs (i, j), i < j in the
        order of ``classes_`` (positive: class i), as SVC's; with "ovr" SVC's transformation
        of them to (n_samples, n_classes) (each class's votes plus its summed confidences
        squashed into (-1/3, 1/3)). Trained one-vs-rest: the (n_samples, n_classes) scores.
        """
        D = self._raw_decision(X)
        if D.shape[1] == 1:
            return D[:, 0]
        if getattr(self, "_pairwise", False) and \
                getattr(self, "decision_function_shape", "ovr") == "ovr":
            return ovr_scores(D, self.classes_.size)
        return D

    def predict(self, X):
        """Class labels, shape (n_samples,): decision > 0 -> ``classes_[1]`` for two classes
        (a decision of exactly 0 gives ``classes_[0]``, as SVC); one-vs-one, LIBSVM's vote
        (pair (i, j) votes i when its value is > 0, else j; most votes, ties to the first
        class); one-vs-rest, the largest score."""
        check_is_fitted(self)
        if check_break_ties(self, self.classes_.size):  # scikit-learn's: argmax of "ovr"
            return self.classes_[np.argmax(self.decision_function(X), axis=1)]
        D = self._raw_decision(X)
        return labels_from_decision(self.classes_, D, getattr(self, "_pairwise", False))
