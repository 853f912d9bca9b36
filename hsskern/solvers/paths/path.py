"""The path protocol every backend implements: prepare once, solve every C, decide.

A *backend* is a small immutable object holding a solver family's options. It answers three
calls, and estimators, cross-validation, Dask and ``bench/`` are written against them alone::

    prepared  = backend.prepare(X, Y)             # C-independent: operator + compression + factor,
                                                  # Nystrom features, sparse factor, poly features
    solutions = backend.path(prepared, Y, Cs)     # every C and every label column, warm-started
    solutions = backend.path(prepared, Y, Cs, weights=w)   # per-point weights (see below)
    model     = backend.model(prepared, solutions)
    scores    = model.decision(X_new)             # shape (len(solutions), m, r)

``Y`` holds label columns in {-1, +1} (one for a binary problem, one per class for
one-vs-rest); ``Cs`` is ascending (:func:`check_Cs`).

``weights`` (optional; None is the unweighted problem, computed exactly as without the
argument) holds one finite weight >= 0 per training point, shared by every label column:
LIBSVM's weighted C, i.e. point i's loss is multiplied by ``w_i`` (for the dual backends its
upper bound becomes ``C * w_i``). The estimators pass ``sample_weight_i *
class_weight[y_i]`` and drop the points of weight 0 before ``prepare`` (a point of weight 0
is then never a support vector, and fitting with it equals fitting without it); a backend
that receives a weight of 0 must give that point no influence (bound 0). Backends that do
not implement weights yet take no ``weights`` argument; callers pass it only when it is
not None. :func:`~hsskern.utils.validation.check_weights` validates it. ``prepare`` takes
``Y`` for backends whose preparation uses the labels (FPC merges repeated (x, y) rows); the
kernel backends ignore it, and their preparation serves every class. Every backend returns
:class:`PathSolution` objects with the same fields, and a model that is small (support vectors
or a feature map and coefficients, never a factor) and picklable.
"""
from dataclasses import dataclass, field, fields
from numbers import Integral, Real
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

__all__ = ["PathSolution", "PreparedProblem", "KernelExpansion", "FeatureModel", "check_grid",
           "check_Cs", "check_labels"]


def _frozen(a, dtype=None):
    if a is None:
        return None
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class PathSolution:
    """The solution at one C for every label column.

    Attributes
    ----------
    C : float or None
        The regularization value (None for a backend without one, e.g. FPC).
    intercept : ndarray of shape (r,)
    n_iter : ndarray of int, shape (r,)
        Iterations of the backend's iterative solver for this C (0 when the solution was
        reached without them, e.g. by continuation from the previous C).
    converged : ndarray of bool, shape (r,)
    gap : ndarray of shape (r,)
        The backend's optimality measure at the returned point (KKT gap of the dual for the
        kernel backends, relative gradient norm for the primal ones); NaN where not measured.
    dual_coef : ndarray of shape (n, r) or None
        ``y_i alpha_i`` per training point (dual backends).
    coef : ndarray of shape (r, p) or None
        Weights on the prepared features (primal backends).
    timings : mapping
        Seconds per phase of this C.
    info : mapping
        Backend-specific records (residual histories, exact solve reports).
    """

    C: object
    intercept: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    gap: np.ndarray
    dual_coef: np.ndarray = None
    coef: np.ndarray = None
    timings: object = field(default_factory=dict)
    info: object = field(default_factory=dict)

    def __post_init__(self):
        if (self.dual_coef is None) == (self.coef is None):
            raise ValueError("a PathSolution holds exactly one of dual_coef and coef")
        r = np.size(self.intercept)
        set_ = object.__setattr__
        set_(self, "intercept", _frozen(np.reshape(self.intercept, r), np.float64))
        set_(self, "n_iter", _frozen(np.broadcast_to(self.n_iter, r), np.int64))
        set_(self, "converged", _frozen(np.broadcast_to(self.converged, r), bool))
        set_(self, "gap", _frozen(np.broadcast_to(self.gap, r), np.float64))
        set_(self, "dual_coef", _frozen(self.dual_coef, np.float64))
        set_(self, "coef", _frozen(self.coef, np.float64))
        set_(self, "timings", MappingProxyType(dict(self.timings)))
        set_(self, "info", MappingProxyType(dict(self.info)))

    @property
    def n_targets(self):
        return self.intercept.shape[0]

    def __reduce__(self):  # mappingproxy does not pickle
        return (_rebuild_solution, (self.C, self.intercept, self.n_iter, self.converged,
                                    self.gap, self.dual_coef, self.coef, dict(self.timings),
                                    dict(self.info)))


def _rebuild_solution(*args):
    return PathSolution(*args)


class PreparedProblem:
    """Base of the backends' prepared problems (frozen dataclasses with ``stats`` and
    ``timings`` fields): those become read-only mappings."""

    def __post_init__(self):
        for name in ("stats", "timings"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def __reduce__(self):  # mappingproxy does not pickle: rebuild from plain dicts
        values = (getattr(self, f.name) for f in fields(self))
        return (type(self), tuple(dict(v) if isinstance(v, MappingProxyType) else v
                                  for v in values))


def check_grid(values, name, what="values", count=None):
    """A grid of regularization values as a sorted float array, or a clear error before any
    work is done: a non-empty 1-D sequence (any iterable) of finite real numbers > 0, a
    scalar being one value. Strings, booleans and None are refused, also inside the sequence
    (numpy would read "1" as 1.0 and None as NaN).

    ``count`` (a ``*CV``'s ``Cs=k``): an int k >= 1 means ``np.logspace(*count, k)``; None:
    an int is refused, with the hint to build the grid.
    """
    hint = f"pass a sequence of {what} > 0 such as [0.1, 1.0, 10.0] or np.logspace(-2, 3, 6)"
    if isinstance(values, (Integral, np.integer)) and not isinstance(values, (bool, np.bool_)):
        if count is None:
            raise ValueError(f"{name} must be a sequence of {what}, got the integer "
                             f"{values!r} (for a grid of that many values use np.logspace): "
                             f"{hint}")
        if values < 1:
            raise ValueError(f"{name} must be an int >= 1 (that many {what} in "
                             f"np.logspace({count[0]}, {count[1]}, {name})) or a sequence of "
                             f"{what} > 0, got {values!r}")
        return np.logspace(count[0], count[1], int(values))
    if isinstance(values, (Real, np.number)) and not isinstance(values, (bool, np.bool_)):
        values = [values]
    elif values is None or isinstance(values, (str, bytes, bool, np.bool_, dict)):
        raise ValueError(f"{name} must be a sequence of {what}: {hint}; got {values!r}")
    elif not isinstance(values, (list, tuple, np.ndarray)) and hasattr(values, "__iter__"):
        values = list(values)  # a generator, a set, a Series: read once
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.dtype.kind in "USbVc" or (arr.dtype == object and any(
            v is None or isinstance(v, (str, bytes, bool, np.bool_)) for v in arr.ravel())):
        raise ValueError(f"{name} must hold real numbers: {hint}; got {values!r}")
    try:
        arr = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold real numbers: {hint}; got {values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence: {hint}; got shape "
                         f"{arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"every value in {name} must be finite and > 0, got {arr.tolist()}")
    return np.sort(arr)


def check_Cs(Cs, name="Cs", count=None):
    """Cs as a sorted float array, or a clear error before any work is done
    (:func:`check_grid`; ``count=(lo, hi)``: an int k is ``np.logspace(lo, hi, k)``)."""
    return check_grid(Cs, name, "C values", count=count)


def check_labels(Y, n):
    """Y as a C-contiguous (n, r) float array of -1/+1 label columns."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[0] != n or Y.shape[1] == 0:
        raise ValueError(f"Y must have shape ({n}, r), got {Y.shape}")
    if not np.all(np.abs(Y) == 1):
        raise ValueError("Y must hold labels in {-1, +1}")
    return np.ascontiguousarray(Y)


class KernelExpansion:
    """f(x) = sum_i dual_coef_i k(x_i, x) + b for one or several solutions.

    Keeps only the union of the solutions' support vectors, so the decision values of a whole
    C path cost one blocked kernel product.

    Parameters
    ----------
    points : ndarray or scipy sparse CSR matrix of shape (n, d)
        The training points (sparse rows: the support vectors are kept as CSR rows and the
        decision values come from them, :class:`~hsskern.kernels.SparseRowsKernelOperator`).
    kernel : Kernel
    solutions : sequence of PathSolution with ``dual_coef``
    """

    def __init__(self, points, kernel, solutions):
        coef = np.concatenate([s.dual_coef for s in solutions], axis=1)  # (n, S r)
        support = np.flatnonzero(np.any(coef != 0, axis=0 if coef.ndim == 1 else 1))
        self.kernel = kernel
        self.support = support
        sv = points[support]  # sparse rows stay sparse: the operator evaluates them as such
        self.support_vectors = sv if sp.issparse(sv) else np.ascontiguousarray(sv)
        self.dual_coef = np.ascontiguousarray(coef[support].T)  # (S r, n_SV)
        self.intercept = np.concatenate([s.intercept for s in solutions])
        self.shape = (len(solutions), solutions[0].n_targets)
        self._freeze()

    def _freeze(self):
        # each prediction's kernel operator keeps the support vectors as they are instead of
        # copying them (unpickled arrays may be views of their buffer: frozen copies once)
        from ...kernels import frozen
        if isinstance(self.support_vectors, np.ndarray):
            self.support_vectors = frozen(self.support_vectors)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._freeze()  # an unpickled array is writeable again

    def decision(self, X):
        """Decision values, shape (n_solutions, m, r); X validated by the caller."""
        from ...kernels import kernel_operator
        if self.support_vectors.shape[0]:
            out = kernel_operator(self.support_vectors, self.kernel).cross(X) @ self.dual_coef.T
        else:
            out = np.zeros((X.shape[0], self.dual_coef.shape[0]))
        out += self.intercept
        S, r = self.shape
        return out.reshape(X.shape[0], S, r).transpose(1, 0, 2)


class FeatureModel:
    """f(x) = phi(x) @ coef.T + b on a fitted feature map, for one or several solutions.

    Parameters
    ----------
    feature_map : object with ``apply(X, W)`` returning phi(X) @ W in blocks
    solutions : sequence of PathSolution with ``coef``
    """

    def __init__(self, feature_map, solutions):
        self.feature_map = feature_map
        self.coef = np.ascontiguousarray(np.concatenate([s.coef for s in solutions], axis=0))
        self.intercept = np.concatenate([s.intercept for s in solutions])
        self.shape = (len(solutions), solutions[0].n_targets)

    def decision(self, X):
        """Decision values, shape (n_solutions, m, r); X validated by the caller."""
        out = self.feature_map.apply(X, np.ascontiguousarray(self.coef.T)) + self.intercept
        S, r = self.shape
        return out.reshape(X.shape[0], S, r).transpose(1, 0, 2)
