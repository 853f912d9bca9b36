"""``memory_budget`` at prediction: a fitted model's decision values in chunks of test rows.

The output (8 bytes per row and model column) is held whole; each chunk's working memory is
its block of kernel entries against the model's support vectors (or landmarks, or features)
and its coordinates, 8 (n_terms + d) bytes a row, which is what a dense evaluation would take
(the blocked products take less). The rows are cut into as many chunks as the budget needs;
a MemoryBudgetError, with the estimate, only when the output and a chunk of one row do not fit.

Whatever the budget, a chunk's coordinates stay within ``CHUNK_POINTS_BYTES``: the blocked
products copy (centre) the rows they are given, so K(X, SV) on all 60,000 training points of
784 features held 1.1 GB beside the data in one chunk. Each chunk prepares the support
vectors' side again and ends its threads' tiles unevenly: on that product two chunks of 256
MiB took 4 % longer than one, six of 64 MiB 10-20 %.
"""
import numpy as np

from ..kernels import kernel_operator
from ..utils._memory import chunk_rows

__all__ = ["model_terms", "budgeted_decision", "budgeted_expansion"]

#: the most bytes of coordinates a chunk of rows carries into one blocked product
CHUNK_POINTS_BYTES = 256 * 2 ** 20


def _rows(est, m, d, out_per_row, terms):
    """Rows per chunk: what ``est.memory_budget`` holds, and coordinates within
    ``CHUNK_POINTS_BYTES``."""
    rows = chunk_rows(m, out_per_row, 8 * (terms + d), getattr(est, "memory_budget", None),
                      what=f"{type(est).__name__} prediction on {m} points")
    return min(rows, max(1, CHUNK_POINTS_BYTES // (8 * max(d, 1))))


def model_terms(model):
    """Kernel entries (or features) per test row of a model's decision function."""
    for attr in ("support_vectors", "landmarks", "centers"):
        a = getattr(model, attr, None)
        if a is not None and hasattr(a, "shape"):
            return int(a.shape[0])
    fmap = getattr(model, "feature_map", None)
    coef = getattr(model, "coef", None)
    if fmap is not None:
        for attr in ("landmarks", "centers"):
            a = getattr(fmap, attr, None)
            if a is not None and hasattr(a, "shape"):
                return int(a.shape[0])
    return int(coef.shape[1]) if coef is not None and np.ndim(coef) == 2 else 1


def budgeted_decision(est, model, X):
    """``model.decision(X)`` (shape (S, m, r)) within ``est.memory_budget``, by row chunks."""
    m, d = X.shape
    S, r = getattr(model, "shape", (1, 1))
    rows = _rows(est, m, d, 8 * S * r, model_terms(model))
    if rows >= m:
        return model.decision(X)
    out = None
    for start in range(0, m, rows):
        D = model.decision(X[start:start + rows])
        if out is None:
            out = np.empty((D.shape[0], m, D.shape[2]))
        out[:, start:start + rows] = D
    return out


def budgeted_expansion(est, X, support_vectors, kernel, M):
    """K(X, support_vectors) @ M, shape (m, M.shape[1]), within ``est.memory_budget``: the
    kernel expansion of the estimators that keep their own support vectors, by row chunks."""
    m, r = X.shape[0], M.shape[1]
    if support_vectors.shape[0] == 0:
        return np.zeros((m, r))
    rows = _rows(est, m, X.shape[1], 8 * r, support_vectors.shape[0])
    K = kernel_operator(support_vectors, kernel)
    out = np.empty((m, r))
    for start in range(0, m, rows):
        out[start:start + rows] = np.asarray(K.cross(X[start:start + rows]) @ M).reshape(-1, r)
    return out
