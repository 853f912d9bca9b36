"""Validation at the public boundary; inner numerical code trusts what passes here."""
import numbers

import numpy as np


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


def check_out(out, shape, name="out"):
    """Return ``out`` if it is a writeable C-contiguous float64 array of ``shape``, a new
    uninitialised array if it is None; raise ValueError otherwise."""
    if out is None:
        return np.empty(shape)
    if not isinstance(out, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(out).__name__}")
    if out.dtype != np.float64:
        raise ValueError(f"{name} must have dtype float64, got {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {out.shape}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError(f"{name} must be writeable")
    return out
