"""The matrix-free kernel matrix every backend shares.

A :class:`KernelOperator` is K(X, X) as a ``scipy.sparse.linalg.LinearOperator``: products
with it are computed tile by tile in compiled code, so memory stays O(n d + threads * tile)
however large n is. ``shifted(beta)`` gives the structured K + beta I and ``cross(Y)`` the
rectangular K(Y, X) used for prediction, Nystrom and FPC features.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ..utils._cpu import load
from ..utils._memory import check_memory
from ..utils._rowhash import dense_row_hashes
from ..utils._threads import one_blas_thread
from ..utils.validation import check_indices, check_points
from ._surface import (_ROW_TILE, DEFAULT_BLOCK_MEMORY, _code_origin,
                       _CrossSurface, _evaluation_inputs, _KernelSurface, _StoredMatrix,
                       _SymmetricSurface)

# the widest build of the exp-bound module this CPU runs (setup.py, utils/_cpu.py)
_eval = load("hsskern.kernels._eval")

#: The symmetric product's per-thread buffers may use at least this much (see _matmat).
_SYM_MIN_BYTES = 64 * 2**20
#: Below this many features the direct distance sums are as fast as the dgemm route, whose
#: advantage grows with d.
_GEMM_MIN_FEATURES = 12
#: Largest accepted bound on the dgemm route's relative entry error (see ``_gemm_route``).
_GEMM_MAX_REL_ERROR = 1e-12
#: Past this share of far points, rows' and columns' (their entries summed directly inside the
#: dgemm tiles, several times an expanded entry's cost), the direct sums throughout.
_GEMM_MAX_FAR_SHARE = 0.25
_GEMM_ROW_TILE = 128
_GEMM_COL_TILE = 2048
#: The tile of ``columns_product`` (one right-hand side): rows x 512 columns, from the
#: distances' GEMM through the exponentials to the product with c (the many-column
#: products' 2 MB tile goes out to L3 and back twice). Its rows, and a gathered block's
#: chunk rows, by features (:func:`_tile_rows`).
_PRODUCT_COLS = 512
#: From this many features the tiles take 256 rows (:func:`_tile_rows`).
_WIDE_TILE_FEATURES = 128
_NO_FLAGS = np.empty(0, dtype=np.uint8)  # the tiles' "no far point"


def _tile_rows(d):
    """Rows of the Gaussian's tiles on d features: 256 from ``_WIDE_TILE_FEATURES`` on, where
    a 64-row GEMM spends a fifth to a third of its time packing operands (12,000 x 784
    points against 4,000 columns, both threads: float32 0.64 -> 0.50 s, float64 1.12 ->
    0.91 s; 256 features 0.109 -> 0.103 s), else 64, whose tile stays in L2 through the
    exponentials (23 features: 64 rows 5-10 % faster)."""
    return 256 if d >= _WIDE_TILE_FEATURES else 64


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
    """(centered rows, their squared norms, centered columns, their squared norms, the rows'
    and the columns' far flags) for the Gaussian's dgemm route, or None (the columns'
    transpose, which the matrix products read, is the operator's ``_gemm_columns_t``).

    The squared distance |a|^2 + |b|^2 - 2 a.b has an absolute rounding error below
    2 (d + 2) u (|a|^2 + |b|^2) (u the unit roundoff), which the Gaussian turns into a
    relative entry error gamma times that. Centering (distances do not change under a common
    shift) keeps the norms small: on the mean of the larger of the two sets, or, when some
    norm is too large, on the mean of all but its farthest ``_GEMM_MAX_FAR_SHARE`` (outliers
    pull the mean away from the rest). A point whose norm alone would take the bound past
    ``_GEMM_MAX_REL_ERROR`` is *far* (uint8 flags; empty arrays when no point is): the
    distances between two far points are summed directly inside the tiles; a far point's
    distance to a near one is at least (|b| - |a|)^2, large, and there the expansion stays
    within 2.5 times the bound or 8 times the direct sum's own rounding gamma |a - b|^2
    (d + 2) u; every other entry keeps the bound. Where the far rows' and the far columns'
    shares add up to more than ``_GEMM_MAX_FAR_SHARE`` (narrow kernels, clouds far from
    their mean) the direct sums are used throughout.
    """
    if kernel.name != "gaussian" or rows.shape[1] < _GEMM_MIN_FEATURES:
        return None
    return _expansion(kernel, rows, cols)


def _expansion(kernel, rows, cols):
    """:func:`_gemm_route`'s tuple, whatever the number of features, with the centred
    columns as they are (not transposed)."""
    d = rows.shape[1]
    if 0 in rows.shape + cols.shape:
        return None
    # pairs of points with norms below the limit meet the bound; a far one is summed directly
    limit = _double_limit(kernel.gamma, d)
    base, side = (cols, 3) if cols.shape[0] >= rows.shape[0] else (rows, 1)  # the larger set
    centered = _centered(rows, cols, base.mean(axis=0))
    norms = centered[side]
    if norms.max() > limit:  # outliers pull the mean: centre on all but the farthest share
        k = int((1.0 - _GEMM_MAX_FAR_SHARE) * (norms.size - 1))
        centered = None  # the first centred copies go before the second are made
        centered = _centered(rows, cols,
                             base[norms <= np.partition(norms, k)[k]].mean(axis=0))
    rc, rn, cc, cn = centered
    rfar, cfar = rn > limit, cn > limit
    if rfar.mean() + cfar.mean() > _GEMM_MAX_FAR_SHARE:
        return None
    return rc, rn, cc, cn, _flags(rfar), _flags(cfar)


def _double_limit(gamma, d):
    """The squared norm past which a point is far for the double expansion: its entries'
    bound gamma 2 (d + 2) u |a|^2 would pass ``_GEMM_MAX_REL_ERROR``."""
    return _GEMM_MAX_REL_ERROR / (gamma * 2.0 * (d + 2) * np.finfo(np.float64).eps)


def gaussian_expansion(kernel, points):
    """(centered points, their squared norms, uint8 far flags) where the Gaussian's entries
    on ``points`` may take the expansion |a|^2 + |b|^2 - 2 a.b, or None: the kernel
    operator's rule (:func:`_gemm_route`, at any number of features), for solvers that
    evaluate entries themselves. Distances between two flagged points must be summed
    directly (flags empty: none)."""
    if kernel.name != "gaussian":
        return None
    route = _expansion(kernel, points, points)
    return None if route is None else (route[0], route[1], route[4])


def single_far(gamma, norms, d, max_rel_error, far=None):
    """The points whose float32 inner products would be too coarse: with a_32 = fl32(a),
    b_32 = fl32(b) summed in float32 (u = 2^-24, d features), the Gaussian's entry on
    centred points is within gamma (d + 2) u (|a|^2 + |b|^2) relative (Higham, Accuracy and
    Stability, (3.5)), so a point whose squared norm alone takes that past
    ``max_rel_error`` is far (bool, n); ``far``: the double expansion's flags, kept."""
    out = norms > max_rel_error / (gamma * 2.0 * (d + 2) * 2.0 ** -24)
    if far is not None and far.size:
        out |= far.astype(bool)
    return out


def _centered(rows, cols, mu):
    """(rows - mu, their squared norms, cols - mu, theirs)."""
    rc = rows - mu
    rn = np.einsum("ij,ij->i", rc, rc)
    if cols is rows:
        return rc, rn, rc, rn
    cc = cols - mu
    return rc, rn, cc, np.einsum("ij,ij->i", cc, cc)


def _flags(far):
    """A boolean mask as the tiles' uint8 flags (empty when none is set)."""
    return far.view(np.uint8) if far.any() else np.empty(0, dtype=np.uint8)


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
        self._cols_t = None
        self._params = ek.params
        self._block_memory = block_memory
        self._col_tile = _col_tile(block_memory, cols.shape[0])
        self._gemm_state = None
        self._gemm_t = None
        super().__init__(dtype=np.float64, shape=(rows.shape[0], cols.shape[0]))

    @property
    def _colsT(self):
        # the columns transposed, made on first use: an operator read by entries, by the
        # Gaussian's expanded products or by a solver's own rows never needs this copy
        if self._cols_t is None:
            self._cols_t = np.ascontiguousarray(self._ecols.T)
        return self._cols_t

    def evaluation_inputs(self):
        """(points, kernel) as the compiled evaluator reads them: k'(x'_i, x'_j) equals this
        operator's entry (i, j) exactly, the points and the width divided by one power of two
        where the data's scale needs it. For solvers that evaluate entries themselves."""
        return self._erows, self._ekernel

    def _gemm(self):
        # computed on first use: many operators (e.g. over support vectors) see one product
        if self._gemm_state is None:
            self._gemm_state = (_gemm_route(self._ekernel, self._erows, self._ecols),)
        return self._gemm_state[0]

    def _gemm_columns_t(self):
        # the centred columns transposed (d x n), made on first use: the matrix products
        # read it, the gathered blocks and columns (a decomposition's) do not
        if self._gemm_t is None:
            route = self._gemm()
            if route[2] is None:  # another thread made it and dropped the columns
                return self._gemm_t
            self._gemm_t = np.ascontiguousarray(route[2].T)
            if route[2] is not route[0]:  # a cross operator's centred columns: nothing but
                # their transpose reads them (the SVs' 135 MB in a fashion_mnist prediction)
                self._gemm_state = (route[:2] + (None,) + route[3:],)
        return self._gemm_t

    def _matmat(self, V):
        V = np.ascontiguousarray(V, dtype=np.float64)
        out = np.empty((self.shape[0], V.shape[1]))
        route = self._gemm()
        if route is not None:
            rc, rn, _, cn, rfar, cfar = route
            with one_blas_thread():
                _eval.matmat_gauss(self._params[0], rc, rn, self._gemm_columns_t(), cn, V,
                                   out, _GEMM_ROW_TILE, _GEMM_COL_TILE, rfar, cfar)
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
        self._cross32 = None  # float32 centred points: single_cross's operators only
        self._single_cross = {}  # single_cross's operators by their bound
        self._far32 = None  # their far points (bool, n)
        self._norms32 = None  # their squared norms (double)
        self._far_route = None  # (points, norms, flags): the far points' double expansion
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
                _eval.matmat_gauss_sym(self._params[0], route[0], route[1],
                                       self._gemm_columns_t(), V, bufs,
                                       _GEMM_ROW_TILE, _GEMM_COL_TILE, route[4])
        else:
            _eval.matmat_sym(self._kernel.code, self._params, self._erows, self._colsT, V,
                             bufs, self._col_tile)
        return bufs.sum(axis=0)

    def single_precision(self):
        """K as a ``LinearOperator`` whose products with one vector are computed in single
        precision (points, entries and sums in float32, with an error of
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

    def single_cross(self, max_rel_error):
        """K with the Gaussian's cross terms a.b computed by sgemm on float32 coordinates
        in :meth:`submatrix` and :meth:`columns_product` (norms, sums and exponentials in
        double), or this operator itself where its dgemm route does not apply.

        The bound is :func:`~hsskern.solvers.engines.cached_smo.single_cross_terms`':
        gamma (d + 2) 2^-24 (|a|^2 + |b|^2) relative, LIBSVM's ``Qfloat`` precision to
        within that factor. A point whose norm alone would take it past ``max_rel_error``
        is *far* (as are the double expansion's far points): its columns are computed in
        double, so a far pair's entry is the double one, and a near point's entry with a
        far one keeps the expansion, where the Gaussian is small. Past the double route's
        share of far points (``_GEMM_MAX_FAR_SHARE``) the double operator is kept. For the
        decomposition's blocks and updates, whose decision values sum the entries in double
        as LIBSVM's gradient does. Costs 4 n d bytes, once.
        """
        max_rel_error = float(max_rel_error)
        if not max_rel_error > 0:
            raise ValueError(f"max_rel_error must be > 0, got {max_rel_error}")
        if self._cross32 is not None:
            return self
        made = self._single_cross.get(max_rel_error)  # one float32 copy for a path's solves
        if made is not None:
            return self if made is False else made
        # the double route as this operator has it, else made for this call only: the
        # float32 operator does not read it, and a pair's centred copy is n d doubles
        route = self._gemm() if self._gemm_state is not None else _gemm_route(
            self._ekernel, self._erows, self._ecols)
        made = self
        if route is not None:
            rc, rn = route[0], route[1]
            far = single_far(self._params[0], rn, rc.shape[1], max_rel_error, route[4])
            if far.mean() <= _GEMM_MAX_FAR_SHARE:
                self.distinct_rows()  # computed once, shared by the copy
                made = self._single_copy(np.ascontiguousarray(rc, dtype=np.float32), rn,
                                         far, route)
        # False, not self, for a refusal: a reference to itself would keep every operator
        # (and its centred copies) alive until the cycle collector runs
        self._single_cross[max_rel_error] = False if made is self else made
        return made

    def _single_copy(self, cross32, norms, far, route):
        """This operator sharing its points, with ``cross32`` (float32 centred points), their
        squared norms in double and the far points (bool), and its own double route for
        the far points' columns (:meth:`_far_expansion`)."""
        made = KernelOperator.__new__(KernelOperator)
        made.__dict__.update(self.__dict__)
        made._single_cross, made._gemm_state, made._gemm_t = {}, None, None
        made._cross32, made._norms32, made._far32 = cross32, norms, far
        made._far_route = self._far_expansion(route)
        return made

    def _far_expansion(self, route):
        """(points, squared norms, flags) of the double expansion the float32 operator's far
        columns take: the points as they are, with no centred copy, where their own norms
        keep the double bound (:func:`_expansion` with the origin as centre: flags for the
        few past it, the same error analysis); else the centred ``route``'s."""
        e = self._erows
        en = np.einsum("ij,ij->i", e, e)
        flagged = en > _double_limit(self._ekernel.gamma, e.shape[1])
        if 2 * flagged.mean() > _GEMM_MAX_FAR_SHARE:
            return route[0], route[1], route[4]
        return e, en, _flags(flagged)

    _strided_out = True  # both evaluators write rows a stride apart

    def _submatrix(self, I, J, out):
        # trusted: intp arrays in range, ``out`` a (len(I), len(J)) buffer of contiguous rows.
        # Diagonal blocks (HSS leaves, SVM working sets): the evaluators compute the upper
        # triangle and mirror it chunk by chunk, which halves the work and makes them exactly
        # symmetric (neither dgemm, a.b vs b.a, nor the vectorized exp, SIMD body vs scalar
        # tail, promises the same last bit for (i, j) and (j, i))
        sym = I is J or (I.shape == J.shape and np.array_equal(I, J))
        if self._cross32 is not None:
            return self._single_submatrix(I, J, out, sym)
        route = self._gemm()
        if route is None:
            _eval.gather_block(self._kernel.code, self._params, self._erows, I, J, out, sym)
            return out
        self._gather((route[0], route[1], route[4]), I, J, out, sym)
        return out

    def _single_submatrix(self, I, J, out, sym):
        self._gather((self._cross32, self._norms32, _NO_FLAGS), I, J, out, sym)
        # the far points' columns (and rows) in double; mirrored for a symmetric block so
        # that it stays exactly symmetric
        route = self._far_route
        cols = np.flatnonzero(self._far32[J])
        if cols.size:
            block = np.empty((I.size, cols.size))
            self._gather(route, I, J[cols], block, False)
            out[:, cols] = block
            if sym:
                out[cols, :] = block.T
                square = np.empty((cols.size, cols.size))  # far x far: exactly symmetric
                self._gather(route, J[cols], J[cols], square, True)
                out[np.ix_(cols, cols)] = square
        rows = np.flatnonzero(self._far32[I]) if not sym else np.empty(0, dtype=np.intp)
        if rows.size:
            block = np.empty((rows.size, J.size))
            self._gather(route, I[rows], J, block, False)
            out[rows, :] = block
        return out

    def _gather(self, route, I, J, out, sym):
        # route: (points, their squared norms, far flags) of one expansion
        points, norms, far = route
        rows = _tile_rows(points.shape[1])
        if I.shape[0] * J.shape[0] > 100000:
            with one_blas_thread():
                _eval.gather_gauss(self._params[0], points, norms, I, J, out, sym, far, rows)
        else:  # too small for BLAS to spawn threads: skip the switch
            _eval.gather_gauss(self._params[0], points, norms, I, J, out, sym, far, rows)

    def diag(self):
        """The diagonal k(x_i, x_i), shape (n,)."""
        return self._kernel.diag(self._rows)

    def columns_product(self, J, c, rows=None):
        """``K[rows, J] @ c`` (every row when ``rows`` is None), without forming the block:
        a decomposition's update of the decision values after the coefficients of the points
        J changed by c. The Gaussian's dgemm route is this operator's, computed once, where
        ``cross`` would centre the points again for each call.

        Parameters
        ----------
        J : array-like of int
            Column indices in [0, n).
        c : array-like of shape (len(J),)
        rows : array-like of int or None
            Row indices in [0, n).

        Returns
        -------
        ndarray of shape (len(rows),), or (n,)
        """
        n = self.shape[0]
        J = check_indices(J, n, "J")
        c = np.asarray(c, dtype=np.float64)
        if c.shape != J.shape:
            raise ValueError(f"c must have one entry per column, shape {J.shape}, got {c.shape}")
        rows = None if rows is None else check_indices(rows, n, "rows")
        if self._cross32 is not None and J.size:
            # the near columns by sgemm, the far ones (few) in double (see single_cross)
            far = self._far32[J]
            out = self._product((self._cross32, self._norms32, _NO_FLAGS), J[~far], c[~far],
                                rows)
            if far.any():
                out += self._product(self._far_route, J[far], c[far], rows)
            return out
        route = self._gemm()
        if route is None or J.size == 0:
            Y = self._rows if rows is None else self._rows[rows]
            return CrossKernelOperator(Y, self._rows[J], self._kernel,
                                       self._block_memory) @ c
        return self._product((route[0], route[1], route[4]), J, c, rows)

    def _product(self, route, J, c, rows):
        # K[rows, J] @ c by the Gaussian's tiles on one expansion's points (float64 or
        # float32, with their squared norms and far flags), J's columns gathered from them
        points, norms, far = route
        A, an, af = points, norms, far
        if rows is not None:
            A, an, af = points[rows], norms[rows], far[rows] if far.size else far
        out = np.zeros((A.shape[0], 1))
        if not J.size:
            return out[:, 0]
        BJ = np.ascontiguousarray(points[J].T)
        with one_blas_thread():
            _eval.matmat_gauss(self._params[0], A, an, BJ, norms[J],
                               np.ascontiguousarray(c).reshape(-1, 1), out,
                               _tile_rows(points.shape[1]), _PRODUCT_COLS,
                               af, far[J] if far.size else far)
        return out[:, 0]

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


def add_symmetric_rows(B, rows, c, out):
    """``out += B[:m, rows] @ c`` (m = ``len(out)``) for a matrix symmetric in its first m
    rows and columns, read as the rows ``rows`` (contiguous) rather than as columns: a
    working-set block's product with a change on a few of its points. ``B``'s rows may be
    longer than m (a block in a wider buffer); they must be C-contiguous.

    Parameters
    ----------
    B : ndarray of shape (q, s), float64, C-contiguous, q >= m, s >= m
    rows : array-like of int, in [0, m)
    c : array-like of shape (len(rows),)
    out : ndarray of shape (m,), float64, updated in place
    """
    if not (isinstance(B, np.ndarray) and B.ndim == 2 and B.dtype == np.float64
            and B.flags.c_contiguous):
        raise ValueError("B must be a C-contiguous 2-d float64 array")
    if not (isinstance(out, np.ndarray) and out.ndim == 1 and out.dtype == np.float64):
        raise ValueError("out must be a 1-d float64 array")
    m = out.shape[0]
    if B.shape[0] < m or B.shape[1] < m:
        raise ValueError(f"out has {m} entries: B {B.shape} holds no {m} x {m} block")
    rows = check_indices(rows, m, "rows")
    c = np.ascontiguousarray(c, dtype=np.float64)
    if c.shape != rows.shape:
        raise ValueError(f"{rows.size} rows with {c.size} coefficients")
    _eval.add_rows(B, _NO_TABLE, rows, c, out)


_NO_TABLE = np.empty(0)  # add_rows reads no code table for float64 rows


def distinct_rows(points, max_share=0.9):
    """``(first, inverse)`` when at most ``max_share`` of the dense ``points`` are distinct:
    the index of one copy of each distinct row, and each row's number among them; else None
    (also for sparse rows). Data with many duplicate rows (low-resolution or one-hot
    features) then needs each distinct point's kernel entries once.
    Rows compare by their bytes: -0.0 and 0.0 differ (a copy missed, never a wrong merge)."""
    if sp.issparse(points) or points.shape[0] < 2:
        return None
    X = np.ascontiguousarray(points, dtype=np.float64)
    # equal rows hash equal, so the distinct hashes are at most the distinct rows: a cheap
    # exact "no" for the usual data (one 64-bit sort, where sorting the rows' bytes costs
    # several times more: a fixed cost of every fit, a tenth of a warm refit's)
    h = np.sort(dense_row_hashes(X, lanes=1)[:, 0])
    if 1 + np.count_nonzero(h[1:] != h[:-1]) > max_share * X.shape[0]:
        return None
    keys = X.view(np.dtype((np.void, X.shape[1] * X.itemsize))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if first.size > max_share * X.shape[0]:
        return None
    return first.astype(np.intp), inverse.ravel().astype(np.intp)


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


class CrossKernelOperator(_CrossSurface, _KernelLinearOperator):
    """Rectangular K(Y, X) of shape (m, n): row i is k(y_i, .) over the points X."""

    def __init__(self, Y, X, kernel, block_memory=DEFAULT_BLOCK_MEMORY):
        super().__init__(_readonly(Y), _readonly(X), kernel, block_memory)

    def _state(self):
        return (np.asarray(self._rows), np.asarray(self._cols), self._kernel,
                self._block_memory)

    def _rect_block(self, I, J, out):
        return self._dense_block(self._erows[I], self._ecols[J], out)
