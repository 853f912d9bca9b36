"""The kernel surface shared by the dense operators (:mod:`.operator`) and the sparse rows'
(:mod:`.sparse_rows`): the bases of the symmetric and the rectangular operators, the stored
matrix, K + beta I, and how points and widths are prepared for the compiled evaluators.

Both operator modules build on this one; it imports neither.
"""
import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ..utils._cpu import load
from ..utils._memory import check_memory
from ..utils._scaling import SAFE_LOG2, coordinate_extent, log2, power_of_two_below
from ..utils.validation import check_indices, check_out, check_positive

# the widest build of the exp-bound module this CPU runs (setup.py, utils/_cpu.py)
_eval = load("hsskern.kernels._eval")
_sparse_eval = load("hsskern.kernels._sparse_eval")

#: Default memory for the per-thread scratch tiles of blocked products.
DEFAULT_BLOCK_MEMORY = 32 * 2**20
#: ``to_dense`` refuses matrices larger than this unless told otherwise.
DEFAULT_DENSE_LIMIT = 2 * 2**30
_ROW_TILE = 32
#: A scale-invariant kernel is evaluated only on points whose bounding box is at most
#: 2^_MAX_EXTENT_LOG2 kernel widths wide: then gamma |x - y|^2 <= 2^945 d stays finite (the
#: evaluator is compiled with -ffast-math and must only see finite numbers). Pairs farther
#: apart than 2^40 widths already have entries of exactly 0.0.
_MAX_EXTENT_LOG2 = 470


def _max_norm_log2(A):
    """log2 of the largest row norm of A, dense or CSR (-inf for none or all zero), without
    overflow."""
    if sp.issparse(A):
        return _sparse_max_norm_log2(A)
    if A.shape[0] == 0:
        return -math.inf
    with np.errstate(over="ignore", under="ignore"):
        sq = float(np.einsum("ij,ij->i", A, A).max())
    if 2.0 ** -900 < sq < math.inf:
        return 0.5 * math.log2(sq)
    a = float(np.abs(A).max())
    if a == 0.0:
        return -math.inf
    s = power_of_two_below(a)  # exact: the squares of A / s are in [0, d]
    B = A / s
    return log2(s) + 0.5 * log2(float(np.einsum("ij,ij->i", B, B).max()))


def _sparse_max_norm_log2(X):
    """log2 of the largest row norm of the CSR X (-inf for none or all zero), no overflow."""
    a = float(np.abs(X.data).max()) if X.nnz else 0.0
    if a == 0.0:
        return -math.inf
    s = power_of_two_below(a)  # exact: the squares of X / s are in [0, 1]
    sq = _sparse_eval.row_norms(X.data / s, X.indptr)
    return log2(s) + 0.5 * log2(float(sq.max()))


def _row_max_abs(X):
    """max_k |x_ik| per row (0 for an empty row)."""
    out = np.zeros(X.shape[0])
    nz = np.diff(X.indptr) > 0
    if X.nnz:
        out[nz] = np.maximum.reduceat(np.abs(X.data), X.indptr[:-1][nz])
    return out


def _evaluation_inputs(kernel, rows, cols):
    """(rows', cols', kernel', far) for the compiled evaluator: k'(rows', cols') = k(rows, cols)
    except on the rows marked in ``far`` (None: no row), whose entries are all exactly 0.
    For dense points rows' and cols' are points; for CSR rows they are the rows' values
    (:func:`_sparse_scaled`: the same rules on the values).

    A scale-invariant kernel sees only |x - y| / width, so points and width are divided by
    the same power of two s (exact, bit for bit in normal range) when the width is far from
    1 or the points' extent is huge: then gamma = 1 / (2 h^2) and every squared distance stay
    finite and normal. Nothing is copied when s = 1 (every ordinary input). For the
    rectangular K(rows, cols), a row more than 2^(_MAX_EXTENT_LOG2 - 2) widths outside the box
    of ``cols`` (its entries underflow to 0.0) is marked ``far`` and replaced by a column
    point, so that the rest keep the extent in range. (Clamping it onto a box that far out
    would not do: near coordinates of 1e157, points at most 1e141 apart coincide.)

    Raises ValueError when no rescaling can keep the entries exact: the points span more than
    2^_MAX_EXTENT_LOG2 widths, or the width is too small for the coordinates' magnitude, or
    polynomial entries overflow float64.
    """
    if not kernel.scale_invariant:
        _check_polynomial_range(kernel, rows, cols)
        if sp.issparse(rows):
            return rows.data, cols.data, kernel, None
        return rows, cols, kernel, None
    if sp.issparse(rows):
        return _sparse_scaled(kernel, rows, cols)
    w = kernel.width
    name = "sigma" if kernel.name == "compact_gaussian" else "h"

    def width(v, least=False):
        """The width in both spellings the user may have given (gamma shrinks as h grows)."""
        if name == "sigma":
            return f"sigma {'>=' if least else '='} {v:.3g}"
        with np.errstate(over="ignore", divide="ignore"):
            v = np.float64(v)
            g = 1.0 / (2.0 * v * v) if kernel.name == "gaussian" else 1.0 / v
        return (f"h {'>=' if least else '='} {v:.3g}, i.e. gamma {'<=' if least else '='} "
                f"{g:.3g}")
    a, M = coordinate_extent(cols)
    lw = log2(w)
    if log2(a) - lw > _MAX_EXTENT_LOG2:
        raise ValueError(
            f"the points span {2 * a:.3g} along one coordinate, more than "
            f"2^{_MAX_EXTENT_LOG2} = {2.0 ** _MAX_EXTENT_LOG2:.3g} kernel widths "
            f"({width(w)}): squared distances over the width leave the float64 range "
            f"(and points 2^40 widths apart already have kernel entries of exactly 0). "
            f"Standardize X, or use a wider kernel: "
            f"{width(a * 2.0 ** -_MAX_EXTENT_LOG2, least=True)}")
    far = None
    if rows is not cols:
        ar, _ = coordinate_extent(rows, cols)
        if log2(ar) - lw > _MAX_EXTENT_LOG2 - 1 and cols.shape[0]:
            pad = w * 2.0 ** (_MAX_EXTENT_LOG2 - 2)
            lo, hi = cols.min(axis=0), cols.max(axis=0)
            with np.errstate(over="ignore"):  # an infinite bound: nothing is beyond it
                far = ((rows < lo - pad) | (rows > hi + pad)).any(axis=1)
            if far.any():
                rows = rows.copy()
                rows[far] = cols[0]
            else:
                far = None
        a, M = coordinate_extent(rows, cols)
    if abs(lw) <= SAFE_LOG2 and log2(a) <= SAFE_LOG2 + 80:
        return rows, cols, kernel, far
    s = power_of_two_below(w)  # the width becomes [1, 2)
    if log2(M) - log2(s) > 1020:
        raise ValueError(
            f"{width(w)} is too small for points with coordinates up to {M:.3g}: "
            f"coordinates / {name} leave the float64 range. Center or standardize X, or use "
            f"{width(M * 2.0 ** -1000, least=True)}")
    rows_s = rows / s
    cols_s = rows_s if cols is rows else cols / s
    return rows_s, cols_s, kernel.rescaled(s), far


def _sparse_scaled(kernel, rows, cols):
    """:func:`_evaluation_inputs` of a scale-invariant kernel on CSR rows: (row values, column
    values, kernel', far), as for dense points: the values
    and the width divided by one power of two s when the width is far from 1 or the values
    huge (exact; nothing is copied when s = 1), rows of a rectangular operator too far from
    every column for an entry above 0 marked ``far`` (their values replaced by zeros).

    The extent of sparse rows is bounded by their largest |value| M, since their zeros are
    coordinates too: every distance is at most 2 M sqrt(d).

    Raises ValueError when no rescaling keeps the entries exact: values reaching more than
    2^_MAX_EXTENT_LOG2 kernel widths, or polynomial entries beyond float64.
    """
    rdata, cdata = rows.data, cols.data
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


def _check_polynomial_range(kernel, rows, cols):
    kernel.check_dot_range(_max_norm_log2(rows) + _max_norm_log2(cols))


def fill_out(out, shape, strided, fill):
    """``fill(buffer)`` for a checked ``out`` of ``shape`` (None: a new array): C-contiguous
    or rows a stride apart (``check_out(strided_rows=True)``), the latter filled in place
    when ``strided`` (the operator's evaluator writes rows by their stride) and through a
    C-order copy otherwise. Returns ``out``."""
    out = check_out(out, shape, strided_rows=True)
    if out.flags.c_contiguous or strided:
        return fill(out)
    out[...] = fill(np.empty(shape))
    return out


class _KernelSurface(LinearOperator):
    """What every kernel operator has whatever holds its points (dense arrays here, sparse
    rows in :mod:`.sparse_rows`): the kernel, matvec as a one-column matmat, the rows marked
    ``_far`` zeroed, the dense-size check, and pickling by ``_rebuild(*_state())``."""

    @property
    def kernel(self):
        """The :class:`~hsskern.kernels.Kernel` this operator evaluates."""
        return self._kernel

    def _matvec(self, v):
        return self._matmat(np.reshape(v, (-1, 1))).ravel()

    def _zero_far(self, out, I=slice(None)):
        # rows too far from every column for their entries to be anything but 0.0 (only
        # rectangular operators have them, see _evaluation_inputs); ``I`` selects out's rows
        if self._far is not None:
            out[self._far[I]] = 0.0
        return out

    def _check_dense(self, max_bytes):
        nbytes = 8 * self.shape[0] * self.shape[1]
        limit = DEFAULT_DENSE_LIMIT if max_bytes is None else max_bytes
        check_memory(nbytes, f"to_dense() of a {self.shape[0]} x {self.shape[1]} kernel matrix",
                     budget=limit, hint="use matvec/matmat or submatrix(I, J) instead, or pass "
                     "max_bytes to override")

    def __reduce__(self):
        return (self.__class__._rebuild, self._state())


class _SymmetricSurface:
    """The symmetric K(X, X) part of the surface, shared by :class:`KernelOperator` and the
    sparse rows' operator: its points, no shift, self-adjoint, checked ``submatrix`` over the
    trusted ``_submatrix``, and ``shifted``."""

    #: Whether ``_submatrix`` writes into rows a stride apart (else through a C-order copy).
    _strided_out = False

    @property
    def points(self):
        """The (read-only) points X, shape (n, d): a dense array, or canonical CSR rows for
        a :class:`~hsskern.kernels.SparseRowsKernelOperator`."""
        return self._rows

    @property
    def beta(self):
        """Diagonal shift (0 for the plain kernel matrix)."""
        return 0.0

    def _adjoint(self):
        return self

    def _transpose(self):
        return self

    def single_precision(self):
        """K as a ``LinearOperator`` computed in single precision, or None where there is
        none (here: always None; see :meth:`KernelOperator.single_precision`)."""
        return None

    def submatrix(self, I, J, out=None):
        """Entries K[I, J] as a dense (len(I), len(J)) array, without forming K.

        Parameters
        ----------
        I, J : array-like of int (or boolean masks of length n)
            Row and column indices in [0, n).
        out : ndarray of shape (len(I), len(J)), optional
            float64 buffer to fill and return (a reused buffer spares the page faults of a
            fresh large block per call): C-contiguous, or rows of contiguous entries a larger
            stride apart (the leading columns of a wider buffer; the rest is not touched).

        Returns
        -------
        ndarray
            ``out`` if given. When I and J hold the same indices the block is computed as its
            upper triangle and mirrored: half the work, and exactly symmetric.

        Raises
        ------
        ValueError
            If I or J is not 1-D integer (or a boolean mask of length n), has entries outside
            [0, n), or ``out`` is not a writeable float64 array of that shape as above.
        """
        n = self.shape[0]
        I = check_indices(I, n, "I")
        J = I if J is I else check_indices(J, n, "J")
        return fill_out(out, (I.shape[0], J.shape[0]), self._strided_out,
                        lambda o: self._submatrix(I, J, o))

    def shifted(self, beta):
        """The structured operator K + beta I (beta >= 0), sharing this operator's points."""
        beta = check_positive(beta, "beta", minimum=0.0)
        return ShiftedKernelOperator(self, beta)

    def _check_features(self, Y):
        """``Y`` (already checked) unless its number of features is not the points'."""
        if Y.shape[1] != self._rows.shape[1]:
            raise ValueError(f"Y has {Y.shape[1]} features but the operator's points have "
                             f"{self._rows.shape[1]}")
        return Y


class _CrossSurface:
    """The rectangular K(Y, X) part of the surface, shared by :class:`CrossKernelOperator` and
    the sparse rows' cross operator: its two point sets, the adjoint K(X, Y), checked
    ``submatrix`` and ``to_dense`` over the trusted ``_rect_block(I, J, out)``, pickling."""

    @classmethod
    def _rebuild(cls, Y, X, kernel, block_memory):
        return cls(Y, X, kernel, block_memory)

    @property
    def row_points(self):
        """The points Y indexing the rows."""
        return self._rows

    @property
    def points(self):
        """The points X indexing the columns."""
        return self._cols

    def _adjoint(self):
        return type(self)(self._cols, self._rows, self._kernel, self._block_memory)

    _transpose = _adjoint

    def submatrix(self, I, J, out=None):
        """Entries k(Y[I], X[J]); I indexes the rows (Y), J the columns (X). ``out`` and the
        errors as in :meth:`KernelOperator.submatrix`."""
        I = check_indices(I, self.shape[0], "I")
        J = check_indices(J, self.shape[1], "J")
        out = check_out(out, (I.shape[0], J.shape[0]))
        return self._zero_far(self._rect_block(I, J, out), I)

    def to_dense(self, max_bytes=None):
        """The dense m x n matrix (refuses above ``max_bytes``, default 2 GiB)."""
        self._check_dense(max_bytes)
        I = np.arange(self.shape[0], dtype=np.intp)
        J = np.arange(self.shape[1], dtype=np.intp)
        return self._zero_far(self._rect_block(I, J, np.empty(self.shape)))

    def __repr__(self):
        return f"<{type(self).__name__} {self.shape[0]} x {self.shape[1]} {self._kernel!r}>"


class _StoredMatrix:
    """K evaluated once into a dense array and kept (u x u for the u distinct points when
    rows repeat, n x n otherwise), for a symmetric operator whose
    ``_submatrix`` evaluates entries (dense points or sparse rows): blocks become gathers,
    products one dgemm, and it is the exact decomposition's product engine (``add``, the
    contract of :class:`~hsskern.solvers.engines.exact.LocalProducts`). Placed before the operator
    class in the bases, so ``super()._submatrix`` is the evaluating one."""

    _strided_out = False  # blocks gathered in C order

    def _store(self, distinct=None, origin=None):
        # with repeated rows only the distinct points' matrix is kept (``distinct``: their
        # indices and every row's distinct point) and row i of K is row _map[i] of it; with
        # an ``origin`` (see :func:`_code_origin`) as squared-distance codes and a table
        first, self._map = ((np.arange(self.shape[0], dtype=np.intp), None)
                            if distinct is None else distinct)
        u = first.size
        self._table = np.empty(0)  # the entry of code s is _table[s]; unused for float64
        if origin is not None:
            self._stored = _squared_distance_codes(self._rows[first] - origin)
            self._table = np.arange(_CODE_MAX + 1, dtype=np.float64)
            _eval.of_squared_distances(self._kernel.code, self._kernel.params, self._table)
        else:
            self._stored = np.empty((u, u))
            super()._submatrix(first, first, self._stored)
        self._stored.flags.writeable = self._table.flags.writeable = False
        #: entries evaluated to store the matrix (its upper triangle, or its distances)
        self.entries_evaluated = u * (u + 1) // 2

    @property
    def memory_bytes(self):
        return self._stored.nbytes + self._table.nbytes

    def single_precision(self):
        """None: the stored matrix's double products are already cheaper."""
        return None

    def _decoded(self, lo, hi):
        """Rows lo:hi of the distinct points' K, as float64."""
        rows = self._stored[lo:hi]
        return rows if self._stored.dtype == np.float64 else self._table[rows]

    def _submatrix(self, I, J, out):
        if self._map is not None:
            I, J = self._map[I], self._map[J]
        _eval.take_block(self._stored, self._table, I, J, out)
        return out

    def _distinct_matmat(self, V):
        u = self._stored.shape[0]
        out = np.empty((u, V.shape[1]))
        step = max(1, _DECODE_BYTES // (8 * u))
        for lo in range(0, u, step):  # a band of rows at a time (decoded, for codes)
            out[lo:lo + step] = self._decoded(lo, lo + step) @ V
        return out

    def _matmat(self, V):
        V = np.asarray(V, dtype=np.float64)
        if self._map is None:
            return self._distinct_matmat(V.reshape(V.shape[0], -1)).reshape(V.shape)
        Vu = np.zeros((self._stored.shape[0],) + V.shape[1:])
        np.add.at(Vu, self._map, V)  # the copies' coefficients on their distinct point
        return self._distinct_matmat(Vu.reshape(Vu.shape[0], -1)).reshape(Vu.shape)[self._map]

    def to_dense(self, max_bytes=None):
        self._check_dense(max_bytes)
        full = self._decoded(0, self._stored.shape[0])  # a view of the stored K for float64
        if self._map is not None:
            return full[np.ix_(self._map, self._map)]
        return full.copy() if self._stored.dtype == np.float64 else full

    def add(self, f, cols, c, skip=None):
        """``f[~skip] += K[~skip, cols] @ c`` from the stored rows; returns the entries read."""
        if not cols.size:
            return 0
        rows = np.ascontiguousarray(cols if self._map is None else self._map[cols],
                                    dtype=np.intp)
        t = np.zeros(self._stored.shape[0])
        _eval.add_rows(self._stored, self._table, rows,
                       np.ascontiguousarray(c, dtype=np.float64), t)
        if self._map is not None:
            t = t[self._map]
        if skip is None:
            f += t
            return t.size * cols.size
        keep = ~np.asarray(skip, dtype=bool)
        f[keep] += t[keep]
        return int(np.count_nonzero(keep)) * cols.size


# Distance codes: a distance kernel on integer-valued points whose squared distances are all
# at most _CODE_MAX (one-hot and binary features) is stored exactly as one byte an
# entry, the squared distance, and a table of k: an eighth of the memory, rows that stay in
# cache when a block gathers from them
_CODE_KERNELS = ("gaussian", "laplacian", "compact_gaussian")
_CODE_MAX = 255
_DECODE_BYTES = 32 * 2**20  # the bands of rows a product or the codes' Gram works in
_CODE_SCREEN_ROWS = 64  # rows checked for integer values before any pass over all points


def _code_origin(points, kernel):
    """The column minima of ``points`` when K can be stored as squared-distance codes (a
    distance kernel, dense integer-valued points, every squared distance at most
    ``_CODE_MAX``), else None."""
    if kernel.name not in _CODE_KERNELS or sp.issparse(points) or points.shape[0] < 2:
        return None
    head = points[:_CODE_SCREEN_ROWS]  # non-integer data fail on their first rows, cheaply
    if not np.array_equal(head, np.rint(head)):
        return None
    lo = points.min(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # huge coordinates: inf, no codes
        ext = points.max(axis=0) - lo
        bound = float(ext @ ext)
        if bound > _CODE_MAX:  # shifted to lo the points are >= 0: |a - b|^2 <= |a|^2 + |b|^2
            shifted = points - lo
            sq = np.einsum("ij,ij->i", shifted, shifted)
            del shifted
            bound = min(bound, float(np.sum(np.partition(sq, sq.size - 2)[-2:])))
    if not bound <= _CODE_MAX or not np.array_equal(points, np.rint(points)):
        return None
    return lo


def _squared_distance_codes(P):
    """|p_i - p_j|^2 for all pairs of the rows of P (>= 0, integer-valued, every squared
    distance <= _CODE_MAX, so every coordinate <= 15) as uint8, from |a|^2 + |b|^2 - 2 a.b:
    exact, every partial sum an integer below 2^24 in float32 (in float64 past ~74,000
    features)."""
    u = P.shape[0]
    ext = P.max(axis=0)
    P = P.astype(np.float32 if float(ext @ ext) < 2 ** 24 else np.float64)
    sq = np.einsum("ij,ij->i", P, P)
    codes = np.empty((u, u), dtype=np.uint8)
    step = max(1, _DECODE_BYTES // (P.itemsize * u))
    for lo in range(0, u, step):
        _eval.squared_distance_bytes(P[lo:lo + step] @ P.T, sq[lo:lo + step], sq,
                                     codes[lo:lo + step])
    return codes


def _equal_pairs(I, J):
    """(rows, cols) of every position with I[rows] == J[cols]: where beta I lands in a block.
    O((len(I) + len(J)) log len(J)), never the len(I) x len(J) comparison."""
    order = np.argsort(J, kind="stable")
    Js = J[order]
    lo = np.searchsorted(Js, I, "left")
    cnt = np.searchsorted(Js, I, "right") - lo
    rows = np.repeat(np.arange(I.shape[0]), cnt)
    first = np.cumsum(cnt) - cnt  # where each row's run starts in the flat list
    pos = np.arange(rows.shape[0]) + np.repeat(lo - first, cnt)
    return rows, order[pos]


class ShiftedKernelOperator(LinearOperator):
    """K + beta I with the same interface as :class:`KernelOperator`; never scipy's generic sum."""

    def __init__(self, base, beta):
        self._base = base
        self._beta = float(beta)
        super().__init__(dtype=np.float64, shape=base.shape)

    @property
    def base(self):
        """The unshifted :class:`KernelOperator`."""
        return self._base

    @property
    def beta(self):
        return self._beta

    @property
    def points(self):
        return self._base.points

    @property
    def kernel(self):
        return self._base.kernel

    def _matmat(self, V):
        V = np.asarray(V, dtype=np.float64)
        return self._base._matmat(V) + self._beta * V

    def _matvec(self, v):
        return self._matmat(np.reshape(v, (-1, 1))).ravel()

    def _adjoint(self):
        return self

    def _transpose(self):
        return self

    def submatrix(self, I, J, out=None):
        """Entries (K + beta I)[I, J]; same contract as :meth:`KernelOperator.submatrix`."""
        n = self.shape[0]
        I = check_indices(I, n, "I")
        J = I if J is I else check_indices(J, n, "J")
        return fill_out(out, (I.shape[0], J.shape[0]), self._base._strided_out,
                        lambda o: self._submatrix(I, J, o))

    def _submatrix(self, I, J, out):
        self._base._submatrix(I, J, out)
        if self._beta:
            rows, cols = _equal_pairs(I, J)
            out[rows, cols] += self._beta
        return out

    def diag(self):
        return self._base.diag() + self._beta

    def shifted(self, beta):
        """K + (self.beta + beta) I."""
        beta = check_positive(beta, "beta", minimum=0.0)
        return ShiftedKernelOperator(self._base, self._beta + beta)

    def cross(self, Y):
        """K(Y, X): the shift does not apply to new points."""
        return self._base.cross(Y)

    def to_dense(self, max_bytes=None):
        A = self._base.to_dense(max_bytes)
        A[np.diag_indices_from(A)] += self._beta
        return A

    def __reduce__(self):
        return (ShiftedKernelOperator, (self._base, self._beta))

    def __repr__(self):
        return f"<ShiftedKernelOperator {self._base!r} + {self._beta:g} I>"
