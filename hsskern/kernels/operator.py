"""The matrix-free kernel matrix every backend shares.

A :class:`KernelOperator` is K(X, X) as a ``scipy.sparse.linalg.LinearOperator``: products
with it are computed tile by tile in compiled code, so memory stays O(n d + threads * tile)
however large n is. ``shifted(beta)`` gives the structured K + beta I and ``cross(Y)`` the
rectangular K(Y, X) used for prediction, Nystrom and FPC features.
"""
import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ..utils._memory import check_memory, format_bytes
from ..utils._scaling import SAFE_LOG2, coordinate_extent, log2, power_of_two_below
from ..utils._threads import one_blas_thread
from ..utils.validation import check_indices, check_out, check_points, check_positive
from . import _eval
from .callable import CallableKernelOperator
from .functions import make_kernel

#: Default memory for the per-thread scratch tiles of blocked products.
DEFAULT_BLOCK_MEMORY = 32 * 2**20
#: ``to_dense`` refuses matrices larger than this unless told otherwise.
DEFAULT_DENSE_LIMIT = 2 * 2**30
_ROW_TILE = 32
#: The symmetric product's per-thread buffers may use at least this much (see _matmat).
_SYM_MIN_BYTES = 64 * 2**20
#: Below this many features the direct distance sums are as fast as the dgemm route, whose
#: advantage grows with d.
_GEMM_MIN_FEATURES = 12
#: Largest accepted bound on the dgemm route's relative entry error (see ``_gemm_route``).
_GEMM_MAX_REL_ERROR = 1e-12
_GEMM_ROW_TILE = 128
#: A scale-invariant kernel is evaluated only on points whose bounding box is at most
#: 2^_MAX_EXTENT_LOG2 kernel widths wide: then gamma |x - y|^2 <= 2^945 d stays finite (the
#: evaluator is compiled with -ffast-math and must only see finite numbers). Pairs farther
#: apart than 2^40 widths already have entries of exactly 0.0.
_MAX_EXTENT_LOG2 = 470


def _readonly(a):
    v = a.view()
    v.flags.writeable = False
    return v


def _col_tile(block_memory, n):
    # one ROW_TILE x col_tile scratch tile per thread; 256..4096 columns keep a tile in L2
    from os import cpu_count
    per_thread = block_memory / max(1, cpu_count() or 1)
    return int(min(max(per_thread // (8 * _ROW_TILE), 256), 4096, max(n, 1)))


def _gemm_route(kernel, rows, cols):
    """(centered rows, their squared norms, centered columns transposed, their squared norms)
    for the Gaussian's dgemm route, or None.

    The squared distance |a|^2 + |b|^2 - 2 a.b has an absolute rounding error below
    2 (d + 2) u (|a|^2 + |b|^2) (u the unit roundoff), which the Gaussian turns into a
    relative entry error gamma times that. Centering (distances do not change under a common
    shift) keeps the norms small; where the bound still exceeds ``_GEMM_MAX_REL_ERROR`` (narrow
    kernels, points far from their mean) the direct sums are used.
    """
    d = rows.shape[1]
    if kernel.name != "gaussian" or d < _GEMM_MIN_FEATURES or 0 in rows.shape + cols.shape:
        return None
    mu = cols.mean(axis=0)
    rc = rows - mu
    rn = np.einsum("ij,ij->i", rc, rc)
    if cols is rows:
        cc, cn = rc, rn
    else:
        cc = cols - mu
        cn = np.einsum("ij,ij->i", cc, cc)
    bound = 2.0 * (d + 2) * np.finfo(np.float64).eps / 2 * (rn.max() + cn.max())
    if kernel.gamma * bound > _GEMM_MAX_REL_ERROR:
        return None
    return rc, rn, np.ascontiguousarray(cc.T), cn


def _max_norm_log2(A):
    """log2 of the largest row norm of A (-inf for none or all zero), without overflow."""
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


def _evaluation_inputs(kernel, rows, cols):
    """(rows', cols', kernel', far) for the compiled evaluator: k'(rows', cols') = k(rows, cols)
    except on the rows marked in ``far`` (None: no row), whose entries are all exactly 0.

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
        return rows, cols, kernel, None
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


def _check_polynomial_range(kernel, rows, cols):
    kernel.check_dot_range(_max_norm_log2(rows) + _max_norm_log2(cols))


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
            C-contiguous float64 buffer to fill and return (a reused buffer spares the page
            faults of a fresh large block per call).

        Returns
        -------
        ndarray
            ``out`` if given. When I and J hold the same indices the block is computed as its
            upper triangle and mirrored: half the work, and exactly symmetric.

        Raises
        ------
        ValueError
            If I or J is not 1-D integer (or a boolean mask of length n), has entries outside
            [0, n), or ``out`` is not a writeable C-contiguous float64 array of that shape.
        """
        n = self.shape[0]
        I = check_indices(I, n, "I")
        J = I if J is I else check_indices(J, n, "J")
        return self._submatrix(I, J, check_out(out, (I.shape[0], J.shape[0])))

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


class _KernelLinearOperator(_KernelSurface):
    """Shared machinery: rows (m x d) against columns (d x n, stored transposed).

    ``_rows``/``_cols`` are the points as given; the compiled evaluator reads ``_erows``/
    ``_ecols`` with ``_ekernel`` (the same objects unless rescaled, see _evaluation_inputs).
    """

    def __init__(self, rows, cols, kernel, block_memory):
        self._rows = rows
        self._cols = cols
        self._kernel = kernel
        er, ec, ek, far = _evaluation_inputs(kernel, rows, cols)
        self._erows, self._ecols, self._ekernel, self._far = er, ec, ek, far
        self._colsT = np.ascontiguousarray(ec.T)
        self._params = ek.params
        self._block_memory = block_memory
        self._col_tile = _col_tile(block_memory, cols.shape[0])
        self._gemm_state = None
        super().__init__(dtype=np.float64, shape=(rows.shape[0], cols.shape[0]))

    def _gemm(self):
        # computed on first use: many operators (e.g. over support vectors) see one product
        if self._gemm_state is None:
            self._gemm_state = (_gemm_route(self._ekernel, self._erows, self._ecols),)
        return self._gemm_state[0]

    def _matmat(self, V):
        V = np.ascontiguousarray(V, dtype=np.float64)
        out = np.empty((self.shape[0], V.shape[1]))
        route = self._gemm()
        if route is not None:
            rc, rn, ccT, cn = route
            with one_blas_thread():
                _eval.matmat_gauss(self._params[0], rc, rn, ccT, cn, V, out, _GEMM_ROW_TILE,
                                   2048)
        else:
            _eval.matmat(self._kernel.code, self._params, self._erows, self._colsT, V, out,
                         self._col_tile)
        return self._zero_far(out)

    def _dense_block(self, rows, cols, out=None):
        if out is None:
            out = np.empty((rows.shape[0], cols.shape[0]))
        _eval.block(self._kernel.code, self._params, np.ascontiguousarray(rows),
                    np.ascontiguousarray(cols.T), out)
        return out



class KernelOperator(_SymmetricSurface, _KernelLinearOperator):
    """Symmetric kernel matrix K with K[i, j] = k(x_i, x_j), never stored.

    Build it with :func:`kernel_operator`. Immutable.

    Parameters
    ----------
    points : ndarray of shape (n, d)
        Finite float64 points (validated by the factory).
    kernel : Kernel
    block_memory : int
        Bytes of scratch shared by the threads of one blocked product.
    """

    def __init__(self, points, kernel, block_memory=DEFAULT_BLOCK_MEMORY):
        points = _readonly(points)
        super().__init__(points, points, kernel, block_memory)
        self._single_state = None
        if self._erows is not points:
            self._erows.flags.writeable = False

    @classmethod
    def _rebuild(cls, points, kernel, block_memory):
        return cls(points, kernel, block_memory)

    def _state(self):
        return (np.asarray(self._rows), self._kernel, self._block_memory)

    def _matmat(self, V):
        # K is symmetric: each entry computed once, added to its row and (transposed) to its
        # column; the columns land in other threads' rows, so every thread sums into its own
        # n x r buffer. Where those buffers exceed the block memory, the one-sided product.
        V = np.ascontiguousarray(V, dtype=np.float64)
        n, r = self.shape[0], V.shape[1]
        threads = _eval.max_threads()
        if n == 0 or r == 0 or 8 * threads * n * r > max(self._block_memory, _SYM_MIN_BYTES):
            return super()._matmat(V)
        bufs = np.zeros((threads, n, r))
        route = self._gemm()
        if route is not None:
            with one_blas_thread():
                _eval.matmat_gauss_sym(self._params[0], route[0], route[1], route[2], V, bufs,
                                       _GEMM_ROW_TILE, 2048)
        else:
            _eval.matmat_sym(self._kernel.code, self._params, self._erows, self._colsT, V,
                             bufs, self._col_tile)
        return bufs.sum(axis=0)

    def single_precision(self):
        """K as a ``LinearOperator`` whose products with one vector are computed in single
        precision (points, entries and sums in float32: about 2x faster, with an error of
        ~1e-6 of |K| |v|), or None where only the double product exists (kernels other than
        the Gaussian and the Laplacian, more than 12 features). For mixed-precision CG (the
        exact kernel ridge solver), whose residuals are recomputed in double."""
        d = self._erows.shape[1]
        if self._kernel.name not in ("gaussian", "laplacian") or d > _eval.FUSED_MAX_FEATURES:
            return None
        if self._single_state is None:  # float32 points and their padded transpose, once
            rows = np.ascontiguousarray(self._erows, dtype=np.float32)
            padded = np.ascontiguousarray(_eval.padded_columns(rows.T))
            self._single_state = (rows, padded)
        rows, padded = self._single_state
        n, code, g, tile = self.shape[0], self._kernel.code, self._params[0], self._col_tile

        def matvec(v):
            bufs = np.zeros((_eval.max_threads(), n, 1), dtype=np.float32)
            v32 = np.asarray(v, dtype=np.float32).reshape(n, 1)
            _eval.matvec_sym_single(code, g, rows, padded, v32, bufs, tile)
            return bufs.sum(axis=0, dtype=np.float64).reshape(np.shape(v))

        return LinearOperator(self.shape, matvec=matvec, rmatvec=matvec, dtype=np.float64)

    def _submatrix(self, I, J, out):
        # trusted: intp arrays in range, ``out`` a C-contiguous (len(I), len(J)) buffer.
        # Diagonal blocks (HSS leaves, SVM working sets): the upper triangle is computed and
        # mirrored, which halves the work and makes them exactly symmetric (neither dgemm,
        # a.b vs b.a, nor the vectorized exp, SIMD body vs scalar tail, promises the same
        # last bit for (i, j) and (j, i))
        sym = I is J or (I.shape == J.shape and np.array_equal(I, J))
        route = self._gemm()
        if route is None:
            _eval.gather_block(self._kernel.code, self._params, self._erows, I, J, out, sym)
        elif I.shape[0] * J.shape[0] > 100000:
            with one_blas_thread():
                _eval.gather_gauss(self._params[0], route[0], route[1], I, J, out, sym)
        else:  # too small for BLAS to spawn threads: skip the switch
            _eval.gather_gauss(self._params[0], route[0], route[1], I, J, out, sym)
        if sym:
            _eval.mirror_upper(out)
        return out

    def diag(self):
        """The diagonal k(x_i, x_i), shape (n,)."""
        return self._kernel.diag(self._rows)

    def cross(self, Y):
        """The rectangular operator K(Y, X) of shape (len(Y), n), for prediction and features."""
        Y = self._check_features(check_points(Y, "Y", min_samples=0))
        return CrossKernelOperator(Y, self._rows, self._kernel, self._block_memory)

    def to_dense(self, max_bytes=None):
        """The dense n x n matrix (for small n only; refuses above ``max_bytes``, 2 GiB)."""
        self._check_dense(max_bytes)
        out = self._dense_block(self._erows, self._erows)
        _eval.mirror_upper(out)  # exactly symmetric (see _submatrix)
        return out

    def distinct_rows(self):
        """:func:`distinct_rows` of the points (computed once): None unless rows repeat."""
        if not hasattr(self, "_distinct"):
            self._distinct = distinct_rows(self._rows)
        return self._distinct

    def code_origin(self):
        """:func:`_code_origin` of the points (computed once): None unless :meth:`stored`
        keeps K as one-byte squared-distance codes."""
        if not hasattr(self, "_origin"):
            self._origin = _code_origin(self._rows, self._kernel)
        return self._origin

    def stored_bytes(self):
        """What :meth:`stored` keeps for the u distinct points: 8 u^2 bytes, or u^2 when the
        points are integers close enough for squared-distance codes."""
        rep = self.distinct_rows()
        u = self.shape[0] if rep is None else rep[0].size
        return (1 if self.code_origin() is not None else 8) * u * u

    def stored(self, max_bytes=None):
        """This operator with K evaluated once and kept: a :class:`StoredKernelOperator`.

        For solvers that read the same entries many times (the exact decomposition over a C
        path reads several n^2 of them): 8 u^2 bytes for the u distinct points (copies of a
        row share its row of K), or u^2 as squared-distance codes (integer points, every
        squared distance at most 255: one-hot features), refused above ``max_bytes``
        (default: 80% of the available memory) with the estimate.
        """
        n = self.shape[0]
        check_memory(self.stored_bytes(), f"storing the {n} x {n} kernel matrix",
                     budget=max_bytes, hint="keep the matrix-free operator")
        return StoredKernelOperator(self)

    def __repr__(self):
        n, d = self._rows.shape
        return f"<KernelOperator n={n} d={d} {self._kernel!r}>"


def distinct_rows(points, max_share=0.9):
    """``(first, inverse)`` when at most ``max_share`` of the dense ``points`` are distinct:
    the index of one copy of each distinct row, and each row's number among them; else None
    (also for sparse rows). Data with many duplicate rows (skin_nonskin: 41,349 distinct of
    171,539; a9a: 24,947 of 32,561) then needs each distinct point's kernel entries once.
    Rows compare by their bytes: -0.0 and 0.0 differ (a copy missed, never a wrong merge)."""
    if sp.issparse(points) or points.shape[0] < 2:
        return None
    X = np.ascontiguousarray(points, dtype=np.float64)
    keys = X.view(np.dtype((np.void, X.shape[1] * X.itemsize))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if first.size > max_share * X.shape[0]:
        return None
    return first.astype(np.intp), inverse.ravel().astype(np.intp)


class _StoredMatrix:
    """K evaluated once into a dense array and kept (u x u for the u distinct points when
    rows repeat, n x n otherwise), for a symmetric operator whose
    ``_submatrix`` evaluates entries (dense points or sparse rows): blocks become gathers,
    products one dgemm, and it is the exact decomposition's product engine (``add``, the
    contract of :class:`~hsskern.solvers.refine.LocalProducts`). Placed before the operator
    class in the bases, so ``super()._submatrix`` is the evaluating one."""

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
# at most _CODE_MAX (one-hot and binary features: a9a, w8a) is stored exactly as one byte an
# entry, the squared distance, and a table of k: an eighth of the memory, rows that stay in
# cache when a block gathers from them
_CODE_KERNELS = ("gaussian", "laplacian", "compact_gaussian")
_CODE_MAX = 255
_DECODE_BYTES = 32 * 2**20  # the bands of rows a product or the codes' Gram works in


def _code_origin(points, kernel):
    """The column minima of ``points`` when K can be stored as squared-distance codes (a
    distance kernel, dense integer-valued points, every squared distance at most
    ``_CODE_MAX``), else None."""
    if kernel.name not in _CODE_KERNELS or sp.issparse(points) or points.shape[0] < 2:
        return None
    lo = points.min(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # huge coordinates: inf, no codes
        ext = points.max(axis=0) - lo
        bound = float(ext @ ext)
        if bound > _CODE_MAX:  # shifted to lo the points are >= 0: |a - b|^2 <= |a|^2 + |b|^2
            sq = np.einsum("ij,ij->i", points - lo, points - lo)
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


class StoredKernelOperator(_StoredMatrix, KernelOperator):
    """A :class:`KernelOperator` whose n x n matrix is evaluated once and kept (8 n^2 bytes,
    or n^2 as squared-distance codes and a table where the points allow: integer-valued,
    every squared distance at most 255).

    Made by :meth:`KernelOperator.stored`. Entries, blocks and products read the stored
    matrix (``submatrix`` gathers, ``matmat`` is dgemm) and give the same values as the
    matrix-free operator: the matrix is its ``submatrix`` of all points, exactly symmetric.
    It is also an exact decomposition's product engine (``add``). Pickles as the plain
    operator: the stored matrix is a cache, not state.
    """

    def __init__(self, base):
        super().__init__(base.points, base.kernel, base._block_memory)
        self._store(base.distinct_rows(), base.code_origin())

    @classmethod
    def _rebuild(cls, points, kernel, block_memory):
        return KernelOperator(points, kernel, block_memory)

    def __repr__(self):
        n, d = self._rows.shape
        return f"<StoredKernelOperator n={n} d={d} {self._kernel!r}>"


class StoredCallableKernelOperator(_StoredMatrix, CallableKernelOperator):
    """A callable kernel's K(X, X) evaluated once and kept (8 n^2 bytes), made by
    :meth:`CallableKernelOperator.stored`: blocks are gathers and products dgemm, as for
    :class:`StoredKernelOperator`; pickles as the plain operator."""

    def __init__(self, base):
        super().__init__(base.points, base.points, base.kernel, base._block_memory)
        self._store()

    def __reduce__(self):
        return (CallableKernelOperator,
                (self._rows, self._cols, self._kernel, self._block_memory))


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
        return self._submatrix(I, J, check_out(out, (I.shape[0], J.shape[0])))

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


class CrossKernelOperator(_CrossSurface, _KernelLinearOperator):
    """Rectangular K(Y, X) of shape (m, n): row i is k(y_i, .) over the points X."""

    def __init__(self, Y, X, kernel, block_memory=DEFAULT_BLOCK_MEMORY):
        super().__init__(_readonly(Y), _readonly(X), kernel, block_memory)

    def _state(self):
        return (np.asarray(self._rows), np.asarray(self._cols), self._kernel,
                self._block_memory)

    def _rect_block(self, I, J, out):
        return self._dense_block(self._erows[I], self._ecols[J], out)


def kernel_operator(X, kernel="gaussian", *, h=None, gamma=None, degree=None, coef0=None,
                    sigma=None, l=None, block_memory=DEFAULT_BLOCK_MEMORY):
    """Matrix-free kernel matrix K(X, X).

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        Points. Copied once (C-contiguous float64); the caller's array is never reordered or modified,
        and later changes to it do not affect the operator. A scipy sparse X gives a
        :class:`~hsskern.kernels.SparseRowsKernelOperator` (entries from its sparse rows,
        copied as canonical CSR).
    kernel : {"gaussian", "laplacian", "polynomial", "compact_gaussian", "sigmoid", "rbf", "poly", "linear"} or Kernel
    h, gamma, degree, coef0, sigma, l
        Kernel parameters, see :func:`hsskern.kernels.make_kernel`.
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
        from .sparse_rows import sparse_kernel_operator
        return sparse_kernel_operator(X, kernel, h=h, gamma=gamma, degree=degree, coef0=coef0,
                                      sigma=sigma, l=l, block_memory=block_memory)
    X_in = X
    X = check_points(X, "X")
    if isinstance(X_in, np.ndarray) and np.may_share_memory(X, X_in):
        X = X.copy()  # immutable: later writes to the caller's array must not change K
    k = make_kernel(kernel, h=h, gamma=gamma, degree=degree, coef0=coef0, sigma=sigma, l=l,
                    n_features=X.shape[1])
    block_memory = int(block_memory)
    if block_memory < 8 * _ROW_TILE * 16:
        raise ValueError(f"block_memory must be at least {format_bytes(8 * _ROW_TILE * 16)}")
    if k.name == "callable":
        return CallableKernelOperator(X, X, k, block_memory)
    return KernelOperator(X, k, block_memory)
