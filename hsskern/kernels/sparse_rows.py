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
import math

import numpy as np
import scipy.sparse as sp

from ..utils._memory import check_memory, format_bytes, resolve_budget
from ..utils._scaling import SAFE_LOG2, log2, power_of_two_below
from ..utils.validation import check_points
from . import _eval, _sparse_eval
from .callable import CallableKernelOperator
from .functions import DOT_KERNELS, make_kernel
from .operator import (_MAX_EXTENT_LOG2, _ROW_TILE, DEFAULT_BLOCK_MEMORY,
                       KernelOperator, _CrossSurface, _KernelSurface, _StoredMatrix,
                       _SymmetricSurface)

__all__ = ["SparseRowsKernelOperator", "SparseRowsCrossKernelOperator",
           "StoredSparseRowsKernelOperator", "check_sparse_rows", "rows_operator",
           "prefer_sparse_rows", "densify", "densify_fits", "rows_nbytes",
           "sparse_kernel_operator", "SPARSE_ROWS_MAX_DENSITY", "SPARSE_ROWS_MIN_FEATURES"]

#: Largest relative error of an entry computed from norms and inner products (the same bound
#: as the dense Gaussian's dgemm route); pairs beyond it take the direct sum.
_MAX_REL_ERROR = 1e-12

#: The "sparse and wide" rule of :func:`prefer_sparse_rows`: at most this fraction of the
#: entries stored, and at least this many features (README, "Sparse input", measured).
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


def _canonical(X):
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
    return _canonical(X)


def rows_nbytes(X):
    """Bytes the rows of X take: 8 n d for a dense array, the arrays of a sparse matrix."""
    if sp.issparse(X):
        X = X.tocsr() if X.format != "csr" else X
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return 8 * int(np.prod(np.shape(X)))


def prefer_sparse_rows(X):
    """Whether kernel entries from X's sparse rows are not slower than from its dense copy:
    X stores at most :data:`SPARSE_ROWS_MAX_DENSITY` of its entries and has at least
    :data:`SPARSE_ROWS_MIN_FEATURES` features (README, "Sparse input": a working set's block
    and a product timed both ways)."""
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


def rows_operator(points, kernel, block_memory=DEFAULT_BLOCK_MEMORY):
    """The kernel operator of trusted points (validated upstream): a
    :class:`~hsskern.kernels.KernelOperator` for a dense array, a
    :class:`SparseRowsKernelOperator` for sparse rows."""
    if kernel.name == "callable":
        return CallableKernelOperator(points, points, kernel, block_memory)
    if sp.issparse(points):
        return SparseRowsKernelOperator(points, kernel, block_memory)
    return KernelOperator(points, kernel, block_memory)


def _row_max_abs(X):
    """max_k |x_ik| per row (0 for an empty row)."""
    out = np.zeros(X.shape[0])
    nz = np.diff(X.indptr) > 0
    if X.nnz:
        out[nz] = np.maximum.reduceat(np.abs(X.data), X.indptr[:-1][nz])
    return out


def _max_norm_log2(X):
    """log2 of the largest row norm of the CSR X (-inf for none or all zero), no overflow."""
    a = float(np.abs(X.data).max()) if X.nnz else 0.0
    if a == 0.0:
        return -math.inf
    s = power_of_two_below(a)  # exact: the squares of X / s are in [0, 1]
    sq = _sparse_eval.row_norms(X.data / s, X.indptr)
    return log2(s) + 0.5 * log2(float(sq.max()))


def _evaluation_inputs(kernel, rows, cols):
    """(row values, column values, kernel', far) for the compiled evaluator, as
    :func:`hsskern.kernels.operator._evaluation_inputs` does for dense points: the values
    and the width divided by one power of two s when the width is far from 1 or the values
    huge (exact; nothing is copied when s = 1), rows of a rectangular operator too far from
    every column for an entry above 0 marked ``far`` (their values replaced by zeros).

    The extent of sparse rows is bounded by their largest |value| M, since their zeros are
    coordinates too: every distance is at most 2 M sqrt(d).

    Raises ValueError when no rescaling keeps the entries exact: values reaching more than
    2^_MAX_EXTENT_LOG2 kernel widths, or polynomial entries beyond float64.
    """
    rdata, cdata = rows.data, cols.data
    if not kernel.scale_invariant:
        kernel.check_dot_range(_max_norm_log2(rows) + _max_norm_log2(cols))
        return rdata, cdata, kernel, None
    w = kernel.width
    lw = log2(w)
    name = "sigma" if kernel.name == "compact_gaussian" else "h"
    M = float(np.abs(cdata).max()) if cdata.size else 0.0
    if log2(M) - lw > _MAX_EXTENT_LOG2:
        hm = M * 2.0 ** -_MAX_EXTENT_LOG2
        if name == "sigma":
            least = f"sigma >= {hm:.3g}"
        else:
            with np.errstate(over="ignore", divide="ignore"):
                hm = np.float64(hm)
                g = 1.0 / (2.0 * hm * hm) if kernel.name == "gaussian" else 1.0 / hm
            least = f"h >= {hm:.3g}, i.e. gamma <= {g:.3g}"
        raise ValueError(
            f"the sparse rows hold values up to {M:.3g} in magnitude (their zeros are "
            f"coordinates too), more than 2^{_MAX_EXTENT_LOG2} = "
            f"{2.0 ** _MAX_EXTENT_LOG2:.3g} kernel widths ({name} = {w:.3g}): squared "
            f"distances over the width leave the float64 range. Scale X, or use a wider "
            f"kernel: {least}")
    far = None
    Mr = M
    if rows is not cols and rows.shape[0]:
        ymax = _row_max_abs(rows)
        with np.errstate(over="ignore"):  # an infinite reach: nothing is beyond it
            reach = M + w * 2.0 ** (_MAX_EXTENT_LOG2 - 2)
        far = ymax > reach  # |y - x| >= |y_k| - M: entries underflow to exactly 0
        if far.any():
            rdata = rdata.copy()
            rdata[np.repeat(far, np.diff(rows.indptr))] = 0.0
        else:
            far = None
        Mr = max(M, float(np.abs(rdata).max()) if rdata.size else 0.0)
    if abs(lw) <= SAFE_LOG2 and log2(Mr) <= SAFE_LOG2 + 80:
        return rdata, cdata, kernel, far
    s = power_of_two_below(w)  # the width becomes [1, 2)
    rs = rdata / s
    return rs, (rs if cdata is rdata else cdata / s), kernel.rescaled(s), far


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
        # trusted: intp index arrays in range, ``out`` a C-contiguous (len(I), len(J)) buffer
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
        points = _canonical(points)
        super().__init__(points, points, kernel, block_memory)

    @classmethod
    def _rebuild(cls, points, kernel, block_memory):
        return SparseRowsKernelOperator(points, kernel, block_memory)

    def _state(self):
        return (self._rows, self._kernel, self._block_memory)

    def _submatrix(self, I, J, out):
        sym = I is J or (I.shape == J.shape and np.array_equal(I, J))
        self._block(I, J, out, upper=sym)
        if sym:
            _eval.mirror_upper(out)
        return out

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
            Y = _canonical(sp.csr_matrix(check_points(Y, "Y", min_samples=0)))
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
        super().__init__(_canonical(Y), _canonical(X), kernel, block_memory)

    def _state(self):
        return (self._rows, self._cols, self._kernel, self._block_memory)

    def _rect_block(self, I, J, out):
        return self._block(I, J, out)


def sparse_kernel_operator(X, kernel="gaussian", *, h=None, gamma=None, degree=None,
                           coef0=None, sigma=None, l=None, block_memory=DEFAULT_BLOCK_MEMORY):
    """:func:`~hsskern.kernels.kernel_operator` for a scipy sparse X: validated, copied into
    canonical CSR, the :class:`SparseRowsKernelOperator` of its rows."""
    X = check_sparse_rows(X, "X")
    k = make_kernel(kernel, h=h, gamma=gamma, degree=degree, coef0=coef0, sigma=sigma, l=l,
                    n_features=X.shape[1])
    block_memory = int(block_memory)
    if block_memory < 8 * _ROW_TILE * 16:
        raise ValueError(f"block_memory must be at least {format_bytes(8 * _ROW_TILE * 16)}")
    return SparseRowsKernelOperator(X, k, block_memory)
