"""The estimator base every SVC family shares, written once against the path protocol.

Validation at the boundary, label encoding and one-vs-rest, the C path, the tie rule and
the fitted state live here; an estimator module holds its parameters, its docstring and the
backend it builds (``_make_backend``) — as scikit-learn's ``BaseSVC`` over ``BaseLibSVM``.
"""
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..solvers.path import check_Cs

__all__ = ["ClassifierBase", "PathClassifier", "encode_labels", "labels_from_decision"]


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


def labels_from_decision(classes, D):
    """The one tie rule: decision > 0 -> ``classes[1]`` (0 -> ``classes[0]``, as SVC) for
    (m, 1) or (m,) binary decisions; the first largest column for one-vs-rest."""
    D = np.asarray(D)
    if D.ndim == 1 or D.shape[1] == 1:
        return classes[(D.reshape(-1) > 0).astype(np.intp)]
    return classes[np.argmax(D, axis=1)]


class ClassifierBase(ClassifierMixin, BaseEstimator):
    """What every classifier here shares: fit starts from nothing, validation, logging."""

    def _reset(self):
        """Forget every fitted attribute (scikit-learn's rule: fit starts from nothing)."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)
        self.__dict__.pop("_model", None)

    def _validate_xy(self, X, y):
        self._reset()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        classes, Y = encode_labels(y)
        return X, y, classes, Y

    def _log(self, level, msg):
        if self.verbose >= level:
            print(f"[{type(self).__name__}] {msg}", flush=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


class PathClassifier(ClassifierBase):
    """Base of the path-protocol classifiers (not for direct use).

    Subclasses define ``_parameter_constraints``, ``__init__`` and

    * ``_make_backend(X, for_path)``: the backend for these parameters (``for_path`` is True
      in :meth:`fit_path` and cross-validation, False in :meth:`fit`);
    * ``_set_backend_attributes(prepared, solution, model)`` (optional): fitted attributes
      beyond the common ones.

    ``fit`` starts from nothing: every fitted attribute of an earlier fit is removed first.
    """

    _C_param = "C"  # the estimator parameter a path varies (None: the backend has no C)

    def _make_backend(self, X, for_path):
        raise NotImplementedError

    def _set_backend_attributes(self, prepared, solution, model):
        pass

    def _fit_Cs(self):
        return [getattr(self, self._C_param)] if self._C_param else [None]

    def fit(self, X, y):
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
        self._validate_params()
        X, y, classes, Y = self._validate_xy(X, y)
        backend = self._make_backend(X, for_path=False)
        prepared = backend.prepare(X, Y)
        solutions = backend.path(prepared, Y, self._fit_Cs())
        self._set_fitted(classes, backend, prepared, solutions[-1], shared=True)
        self.n_iter_ = np.maximum(self.n_iter_, 1)  # a fit ran its solver (scikit-learn's rule)
        return self

    @available_if(lambda self: self._C_param is not None)
    def fit_path(self, X, y, Cs):
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

        Returns
        -------
        list of estimators
            Fitted copies of this estimator with its C set to each value, in increasing order
            of C. ``self`` is left fitted as the last of them (the largest C). The shared
            preparation's time is counted once, in the first model's ``fit_time_``.
        """
        self._validate_params()
        Cs = check_Cs(Cs)
        X, y, classes, Y = self._validate_xy(X, y)
        backend = self._make_backend(X, for_path=True)
        prepared = backend.prepare(X, Y)
        solutions = backend.path(prepared, Y, Cs)
        models = []
        for i, sol in enumerate(solutions):
            m = clone(self).set_params(**{self._C_param: float(sol.C)})
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(self, attr):
                    setattr(m, attr, getattr(self, attr))
            m._set_fitted(classes, backend, prepared, sol, shared=(i == 0))
            models.append(m)
        self._set_fitted(classes, backend, prepared, solutions[-1], shared=len(models) == 1)
        return models

    def _set_fitted(self, classes, backend, prepared, solution, shared):
        model = backend.model(prepared, [solution])
        self.classes_ = classes
        self._model = model
        self.intercept_ = solution.intercept.copy()
        self.n_iter_ = solution.n_iter.copy()
        zeros = {k: 0.0 for k in prepared.timings}
        self.fit_time_ = {**(dict(prepared.timings) if shared else zeros),
                          **solution.timings}
        self._set_backend_attributes(prepared, solution, model)

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
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        D = self._model.decision(X)[0]
        return D[:, 0] if D.shape[1] == 1 else D

    def predict(self, X):
        """Class labels, shape (n_samples,): decision > 0 -> ``classes_[1]`` for two classes
        (a decision of exactly 0 gives ``classes_[0]``, as SVC), the largest one-vs-rest
        score otherwise."""
        D = self.decision_function(X)
        return labels_from_decision(self.classes_, D)
