"""The estimator base every SVC family shares, written once against the path protocol.

Validation at the boundary, label encoding and one-vs-rest, the C path, the tie rule and
the fitted state live here; an estimator module holds its parameters, its docstring and the
backend it builds (``_make_backend``) — as scikit-learn's ``BaseSVC`` over ``BaseLibSVM``.

Weights: ``sample_weight`` and ``class_weight`` combine as in SVC into one weight per point,
``sample_weight_i * class_weight_[y_i]``, which the backend's ``path`` receives (LIBSVM's
weighted C). Points of weight 0 are dropped before ``prepare``: they are never support vectors,
cost no compression or factor work, and fitting with them is fitting without them.
:class:`WeightedPathClassifier` is the base of the estimators whose backend takes weights;
the others keep ``fit(X, y)`` and raise a clear error when given weights.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ..solvers.path import check_Cs, check_weights
from ..utils._memory import check_memory, format_bytes

__all__ = ["FitStateMixin", "ClassifierBase", "PathClassifier", "WeightedPathClassifier",
           "encode_labels", "labels_from_decision", "check_sample_weight",
           "check_weighted_classes", "class_weight_vector", "point_weights", "solve_path",
           "validate_input"]


#: scipy sparse formats taken as input (others are converted by scikit-learn's check_array)
SPARSE_FORMATS = ("csr", "csc")


def validate_input(est, X, y="no_validation", *, reset=True, **kwargs):
    """``validate_data`` for every estimator here: dense arrays and scipy sparse CSR/CSC.

    Sparse input is checked by scikit-learn (finite ``.data``, 2-D, the feature count of
    the fit) and then densified, C-ordered: the kernels, trees and factors work on dense
    rows. The dense copy (8 n d bytes) is estimated first and refused with a
    MemoryBudgetError carrying the estimate when it exceeds the estimator's
    ``memory_budget`` (default 80% of the available memory).

    Returns X, or (X, y) when y is given (None included: scikit-learn's error), as
    ``validate_data``.
    """
    only_x = isinstance(y, str) and y == "no_validation"
    out = validate_data(est, X, y, reset=reset, dtype=np.float64,
                        accept_sparse=SPARSE_FORMATS, **kwargs)
    X, rest = (out, None) if only_x else out
    if sp.issparse(X):
        n, d = X.shape
        check_memory(8.0 * n * d,
                     f"{type(est).__name__}: densifying the sparse input ({n} x {d}, "
                     f"{X.nnz} stored entries, {format_bytes(X.data.nbytes)} of values)",
                     getattr(est, "memory_budget", None),
                     hint="pass fewer rows, or raise memory_budget")
        X = X.toarray(order="C")
    else:
        X = np.ascontiguousarray(X)
    return X if only_x else (X, rest)


def encode_labels(y):
    """classes, and one-vs-rest label columns in {-1, +1}: one column (+1 = ``classes[1]``)
    for two classes, one per class otherwise."""
    check_classification_targets(y)
    classes, idx = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"a classifier needs samples of at least 2 classes; the labels hold "
                         f"only one class ({classes[0]!r})")
    if classes.size == 2:
        return classes, np.where(idx == 1, 1.0, -1.0)[:, None]
    Y = -np.ones((idx.size, classes.size))
    Y[np.arange(idx.size), idx] = 1.0
    return classes, Y


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


def solve_path(backend, prepared, Y, Cs, weights=None):
    """``backend.path`` with the per-point weights when there are any (the backends that do
    not take weights yet are called as before)."""
    if weights is None:
        return backend.path(prepared, Y, Cs)
    return backend.path(prepared, Y, Cs, weights=weights)


def labels_from_decision(classes, D):
    """The one tie rule: decision > 0 -> ``classes[1]`` (0 -> ``classes[0]``, as SVC) for
    (m, 1) or (m,) binary decisions; the first largest column for one-vs-rest."""
    D = np.asarray(D)
    if D.ndim == 1 or D.shape[1] == 1:
        return classes[(D.reshape(-1) > 0).astype(np.intp)]
    return classes[np.argmax(D, axis=1)]


class FitStateMixin:
    """What every estimator here shares, classifier or regressor: fit starts from nothing,
    and one log format."""

    def _reset(self):
        """Forget every fitted attribute (scikit-learn's rule: fit starts from nothing)."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)
        self.__dict__.pop("_model", None)

    def _log(self, level, msg):
        if self.verbose >= level:
            print(f"[{type(self).__name__}] {msg}", flush=True)


class ClassifierBase(FitStateMixin, ClassifierMixin, BaseEstimator):
    """What every classifier here shares: validation and label encoding on top of
    :class:`FitStateMixin`."""

    def _validate_xy(self, X, y):
        self._reset()
        X, y = validate_input(self, X, y)
        classes, Y = encode_labels(y)
        return X, y, classes, Y

    #: whether the backend's ``path`` takes per-point weights (sample_weight, class_weight)
    _supports_weights = False

    def _check_weights_supported(self, sample_weight):
        if self._supports_weights:
            return
        for name, value in (("sample_weight", sample_weight),
                            ("class_weight", getattr(self, "class_weight", None))):
            if value is not None:
                raise ValueError(f"{type(self).__name__} does not support {name} yet")

    def _fit_params(self, fit_params):
        """``sample_weight`` out of ``fit``'s keyword arguments (a TypeError for others)."""
        sample_weight = fit_params.pop("sample_weight", None)
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit() got unexpected keyword arguments "
                            f"{sorted(fit_params)}")
        self._check_weights_supported(sample_weight)
        return sample_weight

    def _validate_weights(self, X, y, classes, sample_weight):
        """Per-point weights of the validated (X, y) and the fitted ``class_weight_``.

        Returns None for the unweighted problem.
        """
        self._check_weights_supported(sample_weight)
        sw = check_sample_weight(sample_weight, X)
        class_weight = getattr(self, "class_weight", None)
        if "class_weight" in self.get_params():
            self.class_weight_ = class_weight_vector(class_weight, classes, y)
        w = point_weights(y, classes, class_weight, sw)
        check_weighted_classes(classes, y, w)
        return w

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR/CSC, densified within the memory budget
        return tags


class PathClassifier(ClassifierBase):
    """Base of the path-protocol classifiers (not for direct use).

    Subclasses define ``_parameter_constraints``, ``__init__`` and

    * ``_make_backend(X, for_path)``: the backend for these parameters (``for_path`` is True
      in :meth:`fit_path` and cross-validation, False in :meth:`fit`);
    * ``_set_backend_attributes(prepared, solution, model)`` (optional): fitted attributes
      beyond the common ones.

    ``fit`` starts from nothing: every fitted attribute of an earlier fit is removed first.
    Its backend takes no weights: ``fit(X, y)`` (``sample_weight`` raises a clear error);
    :class:`WeightedPathClassifier` is the base for a backend that does.
    """

    _C_param = "C"  # the estimator parameter a path varies (None: the backend has no C)

    def _make_backend(self, X, for_path):
        raise NotImplementedError

    def _set_backend_attributes(self, prepared, solution, model):
        pass

    def _fit_Cs(self):
        return [getattr(self, self._C_param)] if self._C_param else [None]

    def fit(self, X, y, **fit_params):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two or more classes (any labels, strings included).

        Returns
        -------
        self
        """
        return self._fit(X, y, self._fit_params(fit_params))

    @available_if(lambda self: self._C_param is not None)
    def fit_path(self, X, y, Cs, **fit_params):
        """Fit one model per C on one preparation, warm-starting along increasing C: the
        contract of :meth:`WeightedPathClassifier.fit_path`, without weights."""
        return self._fit_path(X, y, Cs, self._fit_params(fit_params))

    def _validate_fit(self, X, y, sample_weight):
        """(X, classes, Y, weights, rows): the points of positive weight and their labels.

        ``rows`` indexes the kept points in the given X (None when all are kept).
        """
        X, y, classes, Y = self._validate_xy(X, y)
        w = self._validate_weights(X, y, classes, sample_weight)
        rows = None
        if w is not None and not np.all(w > 0):
            rows = np.flatnonzero(w > 0)
            X, Y, w = X[rows], Y[rows], w[rows]
        return X, classes, Y, w, rows

    def _fit(self, X, y, sample_weight):
        self._validate_params()
        X, classes, Y, w, rows = self._validate_fit(X, y, sample_weight)
        backend = self._make_backend(X, for_path=False)
        prepared = backend.prepare(X, Y)
        solutions = solve_path(backend, prepared, Y, self._fit_Cs(), w)
        self._set_fitted(classes, backend, prepared, solutions[-1], shared=True, rows=rows)
        self.n_iter_ = np.maximum(self.n_iter_, 1)  # a fit ran its solver (scikit-learn's rule)
        return self

    def _fit_path(self, X, y, Cs, sample_weight):
        """The one ``fit_path`` contract (documented on the public ``fit_path``)."""
        self._validate_params()
        Cs = check_Cs(Cs)
        X, classes, Y, w, rows = self._validate_fit(X, y, sample_weight)
        backend = self._make_backend(X, for_path=True)
        prepared = backend.prepare(X, Y)
        solutions = solve_path(backend, prepared, Y, Cs, w)
        models = []
        for i, sol in enumerate(solutions):
            m = clone(self).set_params(**{self._C_param: float(sol.C)})
            for attr in ("n_features_in_", "feature_names_in_", "class_weight_"):
                if hasattr(self, attr):
                    setattr(m, attr, getattr(self, attr))
            m._set_fitted(classes, backend, prepared, sol, shared=(i == 0), rows=rows)
            models.append(m)
        self._set_fitted(classes, backend, prepared, solutions[-1], shared=len(models) == 1,
                         rows=rows)
        return models

    def _set_fitted(self, classes, backend, prepared, solution, shared, rows=None):
        model = backend.model(prepared, [solution])
        self.classes_ = classes
        self._model = model
        self.intercept_ = solution.intercept.copy()
        self.n_iter_ = solution.n_iter.copy()
        zeros = {k: 0.0 for k in prepared.timings}
        self.fit_time_ = {**(dict(prepared.timings) if shared else zeros),
                          **solution.timings}
        self._set_backend_attributes(prepared, solution, model)
        if rows is not None and hasattr(self, "support_"):
            # the backend saw the points of positive weight only: index the rows given to fit
            self.support_ = rows[self.support_]

    def decision_function(self, X):
        """Signed distance to the separating surface(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive: ``classes_[1]``), else
        (n_samples, n_classes) one-vs-rest scores.
        """
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        D = self._model.decision(X)[0]
        return D[:, 0] if D.shape[1] == 1 else D

    def predict(self, X):
        """Class labels, shape (n_samples,): decision > 0 -> ``classes_[1]`` for two classes
        (a decision of exactly 0 gives ``classes_[0]``, as SVC), the largest one-vs-rest
        score otherwise."""
        D = self.decision_function(X)
        return labels_from_decision(self.classes_, D)


class WeightedPathClassifier(PathClassifier):
    """Base of the path-protocol classifiers whose backend takes per-point weights.

    ``fit`` and ``fit_path`` take ``sample_weight`` (scikit-learn's sample-weight checks read
    it from the signature); a ``class_weight`` parameter of the subclass multiplies in.
    """

    _supports_weights = True

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

    @available_if(lambda self: self._C_param is not None)
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
            of C. ``self`` is left fitted as the last of them (the largest C). The shared
            preparation's time is counted once, in the first model's ``fit_time_``.
        """
        return self._fit_path(X, y, Cs, sample_weight)
