"""Validation at the public boundary; inner numerical code trusts what passes here.

Also the sparse-input policy: which scipy sparse inputs stay sparse rows (kernel entries from
their nonzeros) and which are densified within the memory budget (:func:`validate_input`,
:func:`sparse_or_dense`).
"""
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier
from sklearn.utils.validation import validate_data

from ._memory import check_memory, format_bytes, resolve_budget


def check_points(X, name="X", min_samples=1):
    """Return X as a finite, 2-D, C-contiguous float64 array, or raise with a clear message."""
    if X is None:
        raise TypeError(f"{name} must be an array of shape (n_samples, n_features), got None")
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        X = X.toarray()
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists, objects numpy cannot hold
        raise TypeError(f"{name} could not be converted to a numeric array: {exc}") from exc
    if arr.dtype.kind not in "biuf":
        if arr.dtype.kind == "c":
            raise TypeError(f"{name} must be real-valued, got complex dtype {arr.dtype}")
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got an array of "
                         f"shape {arr.shape}; reshape 1-D data with X.reshape(-1, 1)")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} has {arr.shape[0]} samples; at least {min_samples} required")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} has 0 features")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} contains NaN or infinity (first at row {bad[0]}, "
                         f"column {bad[1]})")
    return arr


def check_positive(value, name, allow_none=False, integer=False, minimum=None):
    """Return ``value`` as a float (or int) after checking it is finite and > 0 (or >= minimum)."""
    if value is None and allow_none:
        return None
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {kind}, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is None:
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    elif value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value) if integer else float(value)


def check_indices(idx, n, name):
    """Return an index array as contiguous intp, checking bounds (negative indices rejected).

    Accepts integer array-likes and boolean masks of length n. An intp 1-D C-contiguous array
    is returned as is (the same object), so callers can still recognise ``I is J``. Cost
    O(len(idx)); raises ValueError naming ``name`` otherwise.
    """
    arr = np.asarray(idx)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValueError(f"boolean {name} must have shape ({n},), got {arr.shape}")
        return np.flatnonzero(arr).astype(np.intp)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.intp)
    # one reduction: as unsigned, negative entries become the largest
    if arr.size and arr.view(np.uintp).max() >= n:
        raise ValueError(f"{name} has entries outside [0, {n}): smallest {arr.min()}, "
                         f"largest {arr.max()}")
    return arr


def check_out(out, shape, name="out", strided_rows=False):
    """Return ``out`` if it is a writeable C-contiguous float64 array of ``shape``, a new
    uninitialised array if it is None; raise ValueError otherwise. ``strided_rows``: a 2-D
    ``out`` may also be rows of contiguous entries a larger stride apart (a view of the
    leading columns of a wider buffer)."""
    if out is None:
        return np.empty(shape)
    if not isinstance(out, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(out).__name__}")
    if out.dtype != np.float64:
        raise ValueError(f"{name} must have dtype float64, got {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {out.shape}")
    if strided_rows and not out.flags.c_contiguous and len(shape) == 2:
        rows_ok = shape[1] <= 1 or out.strides[1] == out.itemsize
        if not (rows_ok and (shape[0] <= 1 or out.strides[0] >= out.itemsize * shape[1])):
            raise ValueError(f"{name} must be C-contiguous, or rows of contiguous entries "
                             f"that do not overlap (strides {out.strides})")
    elif not out.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError(f"{name} must be writeable")
    return out


#: The "sparse and wide" rule of :func:`prefer_sparse_rows`: at most this fraction of the
#: entries stored, and at least this many features (measured; docs, "Sparse input").
SPARSE_ROWS_MAX_DENSITY = 0.1
SPARSE_ROWS_MIN_FEATURES = 100


def _csr(data, indices, indptr, shape):
    """A csr_matrix on read-only views of these arrays (its constructor would narrow intp
    indices to int32, and the evaluator reads intp); the arrays themselves are untouched."""
    M = sp.csr_matrix(shape, dtype=np.float64)
    views = []
    for a in (data, indices, indptr):
        v = a.view()
        v.flags.writeable = False  # immutable through the operator, as the dense points
        views.append(v)
    M.data, M.indices, M.indptr = views
    M.has_canonical_format = True  # callers pass sorted rows without duplicates
    return M


def canonical_rows(X):
    """Canonical CSR rows (float64, sorted indices without duplicates, intp indices) of the
    trusted sparse X, sharing its arrays where they already are; X is never modified."""
    X = X.tocsr() if X.format != "csr" else X
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # duplicates add up (scipy's meaning); sorts the indices too
    return _csr(np.ascontiguousarray(X.data, dtype=np.float64),
                np.ascontiguousarray(X.indices, dtype=np.intp),
                np.ascontiguousarray(X.indptr, dtype=np.intp), X.shape)


def check_sparse_rows(X, name="X", min_samples=1):
    """A copy of the scipy sparse matrix X as canonical CSR rows, or a clear error.

    Any scipy sparse format is taken; values must be real and finite (NaN/infinity in the
    stored entries are refused with the first position), X 2-D with at least one feature.
    """
    if not sp.issparse(X):
        raise TypeError(f"{name} must be a scipy sparse matrix, got {type(X).__name__}")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real-valued, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"{name} has {n} samples; at least {min_samples} required")
    if d < 1:
        raise ValueError(f"{name} has 0 features")
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        raise ValueError(f"{name} contains NaN or infinity (first at row {row}, column "
                         f"{int(X.indices[bad[0]])})")
    return canonical_rows(X)


def rows_nbytes(X):
    """Bytes the rows of X take: 8 n d for a dense array, the arrays of a sparse matrix."""
    if sp.issparse(X):
        X = X.tocsr() if X.format != "csr" else X
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return 8 * int(np.prod(np.shape(X)))


def prefer_sparse_rows(X):
    """Whether kernel entries from X's sparse rows are not slower than from its dense copy:
    X stores at most :data:`SPARSE_ROWS_MAX_DENSITY` of its entries and has at least
    :data:`SPARSE_ROWS_MIN_FEATURES` features (a working set's block and a product timed
    both ways)."""
    n, d = X.shape
    return (d >= SPARSE_ROWS_MIN_FEATURES
            and X.nnz <= SPARSE_ROWS_MAX_DENSITY * float(n) * d)


def densify(X, what, memory_budget=None, hint=""):
    """X's dense C-ordered copy once its 8 n d bytes are checked against ``memory_budget``
    (MemoryBudgetError with the estimate and ``hint`` beyond it); dense X as is."""
    if not sp.issparse(X):
        return X
    n, d = X.shape
    check_memory(8.0 * n * d, f"{what}: densifying the sparse input ({n} x {d}, {X.nnz} "
                              f"stored entries, {format_bytes(X.data.nbytes)} of values)",
                 memory_budget, hint=hint)
    return X.toarray(order="C")


def densify_fits(X, memory_budget=None):
    """Whether X's dense copy (8 n d bytes) fits ``memory_budget``."""
    budget = resolve_budget(memory_budget)
    n, d = X.shape
    return budget is None or 8.0 * n * d <= budget


#: scipy sparse formats taken as input (others are converted by scikit-learn's check_array)
SPARSE_FORMATS = ("csr", "csc")


def validate_input(est, X, y="no_validation", *, reset=True, **kwargs):
    """``validate_data`` for every estimator here: dense arrays and scipy sparse CSR/CSC.

    Sparse input is checked by scikit-learn (finite ``.data``, 2-D, the feature count of
    the fit); then the estimator decides (:func:`sparse_or_dense`): it stays sparse (canonical
    CSR rows, kernel entries from them) where the estimator's route takes sparse rows and
    the data is sparse and wide or its dense copy does not fit, else it is densified,
    C-ordered, after the dense copy (8 n d bytes) is estimated: beyond the estimator's
    ``memory_budget`` (default 80% of the available memory), a MemoryBudgetError carrying
    the estimate.

    Returns X, or (X, y) when y is given (None included: scikit-learn's error), as
    ``validate_data``.
    """
    only_x = isinstance(y, str) and y == "no_validation"
    out = validate_data(est, X, y, reset=reset, dtype=np.float64,
                        accept_sparse=SPARSE_FORMATS, **kwargs)
    X, rest = (out, None) if only_x else out
    if sp.issparse(X):
        X = sparse_or_dense(est, X, fitting=reset)
    else:
        X = np.ascontiguousarray(X)
    to_points = getattr(est, "_kernel_points", None)  # e.g. a precomputed Gram's rows
    if to_points is not None:
        X = to_points(X, fitting=reset)
    return X if only_x else (X, rest)


def sparse_or_dense(est, X, fitting):
    """Validated sparse X as the estimator takes it: canonical CSR rows or a dense array.

    ``est._sparse_rows(X, fitting)`` (absent: None) says what its route can take: "keep"
    (a fitted model whose support vectors are sparse rows: X stays sparse), "when_wide"
    (a fit whose route needs only kernel entries: X stays sparse when it is sparse and wide,
    :func:`prefer_sparse_rows`, or when its dense copy does not
    fit ``memory_budget``) or None (dense coordinates needed: densified within the budget,
    else a MemoryBudgetError with the estimate that names the routes taking sparse rows).
    """
    decide = getattr(est, "_sparse_rows", None)
    route = decide(X, fitting) if decide is not None else None
    budget = getattr(est, "memory_budget", None)
    if route == "keep" or (route == "when_wide" and (prefer_sparse_rows(X) or
                                                     not densify_fits(X, budget))):
        return check_sparse_rows(X)
    hint = "pass fewer rows, or raise memory_budget"
    takers = ('ExactSVC and HSSSVC(options=HSSSVCOptions(start="decomposition"))'
              if is_classifier(est) else
              'HSSSVR(options=HSSSVROptions(start="decomposition"))')
    hint += f"; {takers} take sparse rows as they are (kernel entries from the nonzeros)"

    return densify(X, type(est).__name__, budget, hint=hint)


def check_weights(weights, n, name="weights"):
    """``weights`` as a float array of shape (n,), finite and >= 0, or None for None.

    A clear ValueError for a wrong shape, NaN, infinity or a negative entry (with its index
    and value), and when every weight is 0.
    """
    if weights is None:
        return None
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold real numbers") from None
    if w.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one weight per point, got {w.shape}")
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise ValueError(f"{name} must be finite: {bad.size} entries are NaN or infinite "
                         f"(the first at index {bad[0]}: {w[bad[0]]})")
    bad = np.flatnonzero(w < 0)
    if bad.size:
        raise ValueError(f"{name} must be >= 0: {bad.size} entries are negative "
                         f"(the first at index {bad[0]}: {w[bad[0]]:g})")
    if not np.any(w > 0):
        raise ValueError(f"{name} are all zero: at least one weight must be > 0")
    return np.ascontiguousarray(w)
