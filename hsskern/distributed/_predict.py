"""Prediction over a dask array, block by block, with the model on the workers once."""
import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._threads import task_threads

__all__ = ["decision_function", "predict"]


def _decision_block(block, model, n_threads):
    with task_threads(n_threads):
        return np.asarray(model.decision_function(block))


def _predict_block(block, model, n_threads):
    with task_threads(n_threads):
        return np.asarray(model.predict(block))


def _prepare(model, X, client, chunk_rows):
    import dask.array as da
    from distributed import default_client
    check_is_fitted(model)
    if not isinstance(X, da.Array):
        X = np.asarray(X, dtype=np.float64)
        X = da.from_array(X, chunks=(chunk_rows, -1)) if X.ndim == 2 else X
    d = getattr(model, "n_features_in_", None)
    if X.ndim != 2 or (d is not None and X.shape[1] != d):
        raise ValueError(f"X must have shape (n_samples, {d}), got {X.shape}")
    # the kernel needs whole rows: one chunk across the features
    X = X.rechunk({1: -1}).astype(np.float64)
    client = default_client() if client is None else client
    # one copy of the model per worker, shared by all blocks. hash=False: a content key
    # could collide with the same model being released by an earlier call.
    [mf] = client.scatter([model], broadcast=True, hash=False)
    return X, mf


def _out_width(model, d):
    """Columns of decision_function (0: a 1-D output), from one row evaluated locally."""
    out = np.asarray(model.decision_function(np.zeros((1, d))))
    return 0 if out.ndim == 1 else out.shape[1]


def decision_function(model, X, *, client=None, chunk_rows=10_000, threads_per_task=1):
    """Lazy ``model.decision_function`` over the row blocks of a dask array.

    Parameters
    ----------
    model : fitted estimator
        Any fitted classifier with ``decision_function`` (``HSSSVC``, ``HSSSVCCV``,
        ``DaskHSSSVCCV`` ...); it is scattered to every worker once and the blocks use it
        there, so only test points travel.
    X : dask.array.Array or array-like of shape (n_samples, n_features)
        Chunked along rows (columns are rechunked into one chunk). A numpy array is wrapped
        with ``chunk_rows`` rows per block.
    client : distributed.Client or None
        None: the current client.
    chunk_rows : int, default 10000
        Rows per block when ``X`` is not a dask array.
    threads_per_task : int or None, default 1
        BLAS/OpenMP threads per block (threadpoolctl in the task's thread).

    Returns
    -------
    dask.array.Array
        Shape (n_samples,) for binary models, else (n_samples, n_outputs); call
        ``.compute()`` for the values.
    """
    X, mf = _prepare(model, X, client, chunk_rows)
    k = _out_width(model, X.shape[1])
    if k == 0:
        return X.map_blocks(_decision_block, mf, threads_per_task, drop_axis=1,
                            dtype=np.float64, meta=np.empty((0,)))
    return X.map_blocks(_decision_block, mf, threads_per_task, chunks=(X.chunks[0], (k,)),
                        dtype=np.float64, meta=np.empty((0, 0)))


def predict(model, X, *, client=None, chunk_rows=10_000, threads_per_task=1):
    """Lazy ``model.predict`` over the row blocks of a dask array.

    Parameters and scattering as in :func:`decision_function`.

    Returns
    -------
    dask.array.Array of shape (n_samples,)
        Labels of dtype ``model.classes_.dtype``.
    """
    X, mf = _prepare(model, X, client, chunk_rows)
    dtype = np.asarray(model.classes_).dtype
    return X.map_blocks(_predict_block, mf, threads_per_task, drop_axis=1, dtype=dtype,
                        meta=np.empty((0,), dtype=dtype))
