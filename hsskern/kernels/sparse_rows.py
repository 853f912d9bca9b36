"""The kernel matrix straight from sparse rows: for wide sparse data, never densified.

:class:`SparseRowsKernelOperator` is K(X, X) for a scipy CSR matrix X with the public surface
of :class:`~hsskern.kernels.KernelOperator` that the exact decomposition and prediction use
(``points``, ``kernel``, ``submatrix``, ``diag``, ``shifted``, ``cross``, products,
``to_dense``, ``stored``). Entries come from the rows' nonzeros (:mod:`._sparse_eval`): a
block costs the pairs of nonzeros that share a feature plus one kernel evaluation per entry,
where the dense evaluator pays d multiply-adds per entry; memory stays that of the nonzeros
(12-16 bytes each) instead of 8 n d bytes.

Entries agree with the dense operator's on the densified rows to a relative 1e-12 (the bound
:mod:`._sparse_eval` checks pair by pair, recomputing the pairs it does not hold by the direct
sum), diagonal blocks are exactly symmetric, and a point's distance to itself is exactly 0.
Compressions, trees and feature maps need dense coordinates and do not take these operators.
"""
import numpy as np
import scipy.sparse as sp

from ..utils._cpu import load
from ..utils._memory import check_memory, format_bytes
# the sparse-input policy lives with the input validation; its names stay importable here
from ..utils.validation import (SPARSE_ROWS_MAX_DENSITY, SPARSE_ROWS_MIN_FEATURES,  # noqa: F401
                                canonical_rows, check_points, check_sparse_rows, densify,
                                densify_fits, prefer_sparse_rows, rows_nbytes)
from ._surface import (_ROW_TILE, DEFAULT_BLOCK_MEMORY, _CrossSurface, _evaluation_inputs,
                       _KernelSurface, _StoredMatrix, _SymmetricSurface)
from .callable import CallableKernelOperator
from .functions import DOT_KERNELS, make_kernel
from .operator import KernelOperator

# the widest build of the exp-bound module this CPU runs (setup.py, utils/_cpu.py)
_sparse_eval = load("hsskern.kernels._sparse_eval")

__all__ = ["SparseRowsKernelOperator", "SparseRowsCrossKernelOperator",
           "StoredSparseRowsKernelOperator", "check_sparse_rows", "rows_operator",
           "prefer_sparse_rows", "densify", "densify_fits", "rows_nbytes",
           "sparse_kernel_operator", "SPARSE_ROWS_MAX_DENSITY", "SPARSE_ROWS_MIN_FEATURES",
           "SHIFT_INVARIANT_KERNELS", "shifted_sparse_rows"]

#: The kernels of x - x' alone: k(x - b, x' - b) = k(x, x') for any shift b.
SHIFT_INVARIANT_KERNELS = ("gaussian", "laplacian", "compact_gaussian")

#: Largest relative error of an entry computed from norms and inner products (the same bound
#: as the dense Gaussian's dgemm route); pairs beyond it take the direct sum.
_MAX_REL_ERROR = 1e-12

def rows_operator(points, kernel, block_memory=DEFAULT_BLOCK_MEMORY):
    """The kernel operator of trusted points (validated upstream): a
    :class:`~hsskern.kernels.KernelOperator` for a dense array, a
    :class:`SparseRowsKernelOperator` for sparse rows."""
    if kernel.name == "callable":
        return CallableKernelOperator(points, points, kernel, block_memory)
    if sp.issparse(points):
        return SparseRowsKernelOperator(points, kernel, block_memory)
    return KernelOperator(points, kernel, block_memory)


def shifted_sparse_rows(X, kernel, probe_rows=1000):
    """The dense, trusted X's rows minus b, each column's most common value, as canonical
    sparse rows, when the kernel depends on differences alone
    (:data:`SHIFT_INVARIANT_KERNELS`: the shifted rows have the same kernel matrix) and
    the shifted rows pass :func:`prefer_sparse_rows`; else None. Standardized binary or
    one-hot features are such data: most of each column is one value, so a row stores a few
    entries instead of d. b is the median of about ``probe_rows`` evenly spaced rows (the
    common value wherever more than half of them share one); another b would give the same
    kernel, only more stored entries."""
    n, d = X.shape
    if kernel.name not in SHIFT_INVARIANT_KERNELS or d < SPARSE_ROWS_MIN_FEATURES or n == 0:
        return None
    b = np.median(X[::max(1, n // int(probe_rows))], axis=0)
    differs = X != b
    if np.count_nonzero(differs) > SPARSE_ROWS_MAX_DENSITY * float(n) * d:
        return None
    rows, cols = np.nonzero(differs)  # row-major: each row's columns in order
    indptr = np.zeros(n + 1, dtype=np.intp)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return canonical_rows(sp.csr_matrix((X[rows, cols] - b[cols], cols, indptr), shape=(n, d)))


class _SparseRowsLinearOperator(_KernelSurface):
    """Shared machinery: K(rows, cols) for canonical CSR rows and columns (``cols is rows``
    for the symmetric operator)."""

    def __init__(self, rows, cols, kernel, block_memory):
        self._rows, self._cols, self._kernel = rows, cols, kernel
        self._block_memory = block_memory
        rd, cd, ek, far = _evaluation_inputs(kernel, rows, cols)
        self._rdata, self._cdata, self._ekernel, self._far = rd, cd, ek, far
        self._rnorm = _sparse_eval.row_norms(rd, rows.indptr)
        self._cnorm = (self._rnorm if cols is rows and cd is rd
                       else _sparse_eval.row_norms(cd, cols.indptr))
        self._params = ek.params
        self._code = kernel.code
        self._index = None  # the columns' inverted index, built by the first product
        super().__init__(dtype=np.float64, shape=(rows.shape[0], cols.shape[0]))

    @property
    def nnz(self):
        """Stored entries of the points (rows and columns)."""
        return self._rows.nnz + (0 if self._cols is self._rows else self._cols.nnz)

    def _block(self, I, J, out, upper=False):
        # trusted: intp index arrays in range, ``out`` a (len(I), len(J)) buffer of contiguous rows
        c = self._cols
        ptr, pos, val = _sparse_eval.columns(self._cdata, c.indices, c.indptr, J, c.shape[1])
        r = self._rows
        _sparse_eval.block(self._code, self._params, _MAX_REL_ERROR,
                           self._rdata, r.indices, r.indptr, self._rnorm, I,
                           self._cdata, c.indices, c.indptr, self._cnorm, J,
                           ptr, pos, val, out, r is c, upper)
        return out

    def _matmat(self, V):
        V = np.ascontiguousarray(V, dtype=np.float64)
        out = np.empty((self.shape[0], V.shape[1]))
        c, r = self._cols, self._rows
        if self._index is None:
            self._index = _sparse_eval.columns(self._cdata, c.indices, c.indptr,
                                               np.arange(c.shape[0], dtype=np.intp),
                                               c.shape[1])
        _sparse_eval.matmat(self._code, self._params, _MAX_REL_ERROR,
                            self._rdata, r.indices, r.indptr, self._rnorm,
                            self._cdata, c.indices, c.indptr, self._cnorm,
                            *self._index, V, out, r is c)
        return self._zero_far(out)


class SparseRowsKernelOperator(_SymmetricSurface, _SparseRowsLinearOperator):
    """Symmetric kernel matrix K(X, X) of sparse rows X, never stored.

    Build it with :func:`~hsskern.kernels.kernel_operator` on a scipy sparse X (or
    :func:`rows_operator`). Immutable; pickles as its rows and kernel.

    Parameters
    ----------
    points : scipy sparse matrix of shape (n, d)
        Trusted rows (finite float64 values, validated by the caller; :func:`check_sparse_rows`
        validates); kept as canonical CSR.
    kernel : Kernel
    block_memory : int
        Kept for the dense operator's signature (products hold one row of n entries per
        thread).
    """

    def __init__(self, points, kernel, block_memory=DEFAULT_BLOCK_MEMORY):
        points = canonical_rows(points)
        super().__init__(points, points, kernel, block_memory)

    @classmethod
    def _rebuild(cls, points, kernel, block_memory):
        return SparseRowsKernelOperator(points, kernel, block_memory)

    def _state(self):
        return (self._rows, self._kernel, self._block_memory)

    _strided_out = True  # the sparse evaluator writes rows a stride apart

    def _submatrix(self, I, J, out):
        sym = I is J or (I.shape == J.shape and np.array_equal(I, J))
        return self._block(I, J, out, upper=sym)  # mirrored by the evaluator, chunk by chunk

    def diag(self):
        """The diagonal k(x_i, x_i), shape (n,)."""
        if self._kernel.name in DOT_KERNELS:
            return self._kernel.of_dot(self._rnorm)
        return np.ones(self.shape[0])

    def cross(self, Y):
        """The rectangular operator K(Y, X) of shape (len(Y), n), for prediction: Y sparse
        (any scipy format) or dense, with X's number of features."""
        if sp.issparse(Y):
            Y = check_sparse_rows(Y, "Y", min_samples=0)
        else:
            Y = canonical_rows(sp.csr_matrix(check_points(Y, "Y", min_samples=0)))
        return SparseRowsCrossKernelOperator(self._check_features(Y), self._rows, self._kernel,
                                             self._block_memory)

    def to_dense(self, max_bytes=None):
        """The dense n x n matrix (for small n only; refuses above ``max_bytes``, 2 GiB)."""
        self._check_dense(max_bytes)
        idx = np.arange(self.shape[0], dtype=np.intp)
        return self._submatrix(idx, idx, np.empty(self.shape))

    def code_origin(self):
        """None: sparse rows are stored in float64, never as distance codes."""
        return None

    def stored_bytes(self):
        """What :meth:`stored` keeps: 8 n^2 bytes (sparse rows are not searched for copies)."""
        return 8 * self.shape[0] ** 2

    def stored(self, max_bytes=None):
        """This operator with K evaluated once and kept: a
        :class:`StoredSparseRowsKernelOperator` (8 n^2 bytes, refused above ``max_bytes``,
        default 80% of the available memory, with the estimate)."""
        n = self.shape[0]
        check_memory(self.stored_bytes(), f"storing the {n} x {n} kernel matrix",
                     budget=max_bytes, hint="keep the matrix-free operator")
        return StoredSparseRowsKernelOperator(self)

    def __repr__(self):
        n, d = self._rows.shape
        return (f"<SparseRowsKernelOperator n={n} d={d} nnz={self._rows.nnz} "
                f"{self._kernel!r}>")


class StoredSparseRowsKernelOperator(_StoredMatrix, SparseRowsKernelOperator):
    """A :class:`SparseRowsKernelOperator` whose n x n matrix is evaluated once and kept, as
    :class:`~hsskern.kernels.StoredKernelOperator` is for dense points: the same entries,
    blocks gathered from the stored matrix, the exact decomposition's product engine
    (``add``). Pickles as the plain operator."""

    def __init__(self, base):
        super().__init__(base.points, base.kernel, base._block_memory)
        self._store()

    def __repr__(self):
        n, d = self._rows.shape
        return (f"<StoredSparseRowsKernelOperator n={n} d={d} nnz={self._rows.nnz} "
                f"{self._kernel!r}>")


class SparseRowsCrossKernelOperator(_CrossSurface, _SparseRowsLinearOperator):
    """Rectangular K(Y, X) of shape (m, n) for sparse rows Y and X: row i is k(y_i, .)."""

    def __init__(self, Y, X, kernel, block_memory=DEFAULT_BLOCK_MEMORY):
        super().__init__(canonical_rows(Y), canonical_rows(X), kernel, block_memory)

    def _state(self):
        return (self._rows, self._cols, self._kernel, self._block_memory)

    def _rect_block(self, I, J, out):
        return self._block(I, J, out)


def sparse_kernel_operator(X, kernel="gaussian", *, h=None, gamma=None, degree=None,
                           coef0=None, sigma=None, power=None,
                           block_memory=DEFAULT_BLOCK_MEMORY):
    """:func:`~hsskern.kernels.kernel_operator` for a scipy sparse X: validated, copied into
    canonical CSR, the :class:`SparseRowsKernelOperator` of its rows."""
    X = check_sparse_rows(X, "X")
    k = make_kernel(kernel, h=h, gamma=gamma, degree=degree, coef0=coef0, sigma=sigma, power=power,
                    n_features=X.shape[1])
    block_memory = int(block_memory)
    if block_memory < 8 * _ROW_TILE * 16:
        raise ValueError(f"block_memory must be at least {format_bytes(8 * _ROW_TILE * 16)}")
    return SparseRowsKernelOperator(X, k, block_memory)
