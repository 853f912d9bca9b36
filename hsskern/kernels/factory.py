"""The factory of kernel operators: dense points, scipy sparse rows or a user's function.

It sits above the operator modules (each of which knows only its own kind of points) so
that choosing among them imports them one way.
"""
import numpy as np
import scipy.sparse as sp

from ..utils._memory import format_bytes
from ..utils.validation import check_points
from ._surface import _ROW_TILE, DEFAULT_BLOCK_MEMORY
from .callable import CallableKernelOperator
from .functions import make_kernel
from .operator import KernelOperator
from .sparse_rows import sparse_kernel_operator

__all__ = ["kernel_operator", "frozen"]


def _frozen(X):
    """Whether X is a read-only array owning its data: nobody can write to it but through
    itself, so the operator may keep it (a one-vs-one pair's rows, taken from the training
    points, are not copied twice)."""
    return not X.flags.writeable and X.base is None


def frozen(X):
    """An ndarray X as :func:`kernel_operator` keeps it without a copy: read-only and owning
    its data (copied once where it is a view of another array). For callers that hand the
    points over for good (a pair's rows, a model's support vectors)."""
    if X.base is not None:
        X = X.copy()
    X.flags.writeable = False
    return X


def kernel_operator(X, kernel="gaussian", *, h=None, gamma=None, degree=None, coef0=None,
                    sigma=None, power=None, block_memory=DEFAULT_BLOCK_MEMORY):
    """Matrix-free kernel matrix K(X, X).

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        Points. Copied once (C-contiguous float64); the caller's array is never reordered or
        modified, and later changes to it do not affect the operator. A read-only array that
        owns its data (``X.flags.writeable`` False, ``X.base`` None) is kept as it is, not
        copied. A scipy sparse X gives a :class:`~hsskern.kernels.SparseRowsKernelOperator`
        (entries from its sparse rows, copied as canonical CSR).
    kernel : {"gaussian", "laplacian", "polynomial", "compact_gaussian", "sigmoid", "rbf", "poly", "linear"} or Kernel
    h, gamma, degree, coef0, sigma, power
        Kernel parameters, see :func:`hsskern.kernels.make_kernel` (``power`` was ``l``).
    block_memory : int, default 32 MiB
        Scratch memory for blocked products, shared by the threads.

    Returns
    -------
    KernelOperator or SparseRowsKernelOperator

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import kernel_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 5))
    >>> K = kernel_operator(X, "gaussian", h=1.0)
    >>> y = K @ np.ones(1000)          # blocked, never forms the 1000 x 1000 matrix
    >>> K.submatrix([0, 1], [2, 3]).shape
    (2, 2)
    """
    if sp.issparse(X) and not callable(kernel):  # kernel entries from the sparse rows
        return sparse_kernel_operator(X, kernel, h=h, gamma=gamma, degree=degree, coef0=coef0,
                                      sigma=sigma, power=power, block_memory=block_memory)
    X_in = X
    X = check_points(X, "X")
    if isinstance(X_in, np.ndarray) and np.may_share_memory(X, X_in) and not _frozen(X_in):
        X = X.copy()  # immutable: later writes to the caller's array must not change K
    k = make_kernel(kernel, h=h, gamma=gamma, degree=degree, coef0=coef0, sigma=sigma, power=power,
                    n_features=X.shape[1])
    block_memory = int(block_memory)
    if block_memory < 8 * _ROW_TILE * 16:
        raise ValueError(f"block_memory must be at least {format_bytes(8 * _ROW_TILE * 16)}")
    if k.name == "callable":
        return CallableKernelOperator(X, X, k, block_memory)
    return KernelOperator(X, k, block_memory)
