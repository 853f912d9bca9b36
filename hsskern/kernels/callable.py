"""Kernels given as a Python function ``k(A, B) -> (len(A), len(B))`` array, as SVC's callable
kernels, and a precomputed Gram matrix through an index lookup (:func:`precomputed_points`).

Their operators evaluate blocks by calling the function, row block by row block, and never
form the n x n matrix unless asked to (``to_dense``): the exact decomposition reads them through
``submatrix`` and products as it reads a compiled kernel's.
"""
import numpy as np
from scipy.sparse.linalg import LinearOperator

from ..utils._memory import check_memory
from ..utils.validation import check_indices, check_positive
from ._surface import ShiftedKernelOperator, _StoredMatrix, fill_out

__all__ = ["CallableKernelOperator", "StoredCallableKernelOperator", "lookup_gram",
           "precomputed_points"]

#: to_dense refuses above this many bytes unless told otherwise (as the compiled operators)
_DENSE_LIMIT = 2 * 1024 ** 3


def lookup_gram(A, B):
    """The precomputed kernel: rows of A are ``[index, K(x, x_0), ..., K(x, x_{n-1})]`` and
    the first entry of a row of B is its training index, so k(a, b) = a[1 + index(b)]."""
    return A[:, 1 + B[:, 0].astype(np.intp)]


def precomputed_points(G, training):
    """The points of the precomputed kernel for a Gram matrix ``G`` (validated finite):
    training (square, n x n) rows get their index in front, test rows (m x n_train) -1."""
    G = np.asarray(G, dtype=np.float64)
    if training and G.shape[0] != G.shape[1]:
        raise ValueError(f'kernel="precomputed" needs the square Gram matrix K(X, X) of the '
                         f"training points at fit, got shape {G.shape}")
    first = np.arange(G.shape[0], dtype=np.float64) if training else np.full(G.shape[0], -1.0)
    return np.hstack([first[:, None], G])


def evaluate(kernel, A, B):
    """k(A, B) from the user's function, checked: a finite (len(A), len(B)) float64 array."""
    out = np.asarray(kernel.function(A, B), dtype=np.float64)
    if out.shape != (A.shape[0], B.shape[0]):
        raise ValueError(f"the kernel callable returned shape {out.shape} for inputs of "
                         f"{A.shape[0]} and {B.shape[0]} rows; it must return an array of "
                         f"shape ({A.shape[0]}, {B.shape[0]}), as SVC's callable kernels do")
    if not np.all(np.isfinite(out)):
        raise ValueError("the kernel callable returned NaN or infinite entries")
    return out


class CallableKernelOperator(LinearOperator):
    """K(Y, X) (or the symmetric K(X, X)) of a callable kernel, evaluated in row blocks.

    Parameters
    ----------
    rows, cols : ndarray or sparse matrix
        The points of the rows (Y) and of the columns (X); the same object for K(X, X).
    kernel : Kernel
        A kernel named "callable" (see :func:`~hsskern.kernels.make_kernel`).
    block_memory : int
        Bytes of one row block of a product (at least one row is evaluated at a time).
    """

    def __init__(self, rows, cols, kernel, block_memory):
        self._rows, self._cols, self._kernel = rows, cols, kernel
        self._block_memory = int(block_memory)
        super().__init__(dtype=np.float64, shape=(rows.shape[0], cols.shape[0]))

    @property
    def kernel(self):
        return self._kernel

    @property
    def points(self):
        """The points indexing the columns (X)."""
        return self._cols

    @property
    def row_points(self):
        return self._rows

    @property
    def beta(self):
        return 0.0

    @property
    def symmetric(self):
        return self._rows is self._cols

    def _row_block(self):
        return max(1, self._block_memory // (8 * max(1, self.shape[1])))

    def _matmat(self, V):
        V = np.asarray(V, dtype=np.float64)
        out = np.empty((self.shape[0], V.shape[1]))
        b = self._row_block()
        for i0 in range(0, self.shape[0], b):
            out[i0:i0 + b] = evaluate(self._kernel, self._rows[i0:i0 + b], self._cols) @ V
        return out

    def _matvec(self, v):
        return self._matmat(np.reshape(v, (-1, 1))).ravel()

    def _adjoint(self):
        if self.symmetric:
            return self
        return CallableKernelOperator(self._cols, self._rows, self._kernel, self._block_memory)

    _transpose = _adjoint

    def submatrix(self, I, J, out=None):
        """Entries K[I, J] as a dense (len(I), len(J)) array (``out`` as for the compiled
        operators' ``submatrix``)."""
        I = check_indices(I, self.shape[0], "I")
        J = check_indices(J, self.shape[1], "J")
        return fill_out(out, (I.shape[0], J.shape[0]), self._strided_out,
                        lambda o: self._submatrix(I, J, o))

    _strided_out = True  # one assignment into ``out``, whatever its strides

    def _submatrix(self, I, J, out):
        out[...] = evaluate(self._kernel, self._rows[I], self._cols[J])
        return out

    def diag(self):
        """k(x_i, x_i), from diagonal blocks of at most 256 points (symmetric K only)."""
        if not self.symmetric:
            raise ValueError("diag() is defined for the symmetric K(X, X) only")
        n = self.shape[0]
        out = np.empty(n)
        for i0 in range(0, n, 256):
            P = self._rows[i0:i0 + 256]
            out[i0:i0 + P.shape[0]] = np.diag(evaluate(self._kernel, P, P))
        return out

    def cross(self, Y):
        """K(Y, X) for new points Y (prediction)."""
        if Y.shape[1] != self._cols.shape[1]:
            raise ValueError(f"Y has {Y.shape[1]} features but the operator's points have "
                             f"{self._cols.shape[1]}")
        return CallableKernelOperator(Y, self._cols, self._kernel, self._block_memory)

    def shifted(self, beta):
        return ShiftedKernelOperator(self, check_positive(beta, "beta", minimum=0.0))

    def single_precision(self):
        return None

    def code_origin(self):
        """None: a user's function has no squared-distance codes."""
        return None

    def distinct_rows(self):
        """None: repeated rows are not merged (the function may read what coordinates
        do not, e.g. a precomputed Gram's index)."""
        return None

    def stored_bytes(self):
        """What :meth:`stored` keeps: the 8 n^2 bytes of K (symmetric K only)."""
        return 8 * self.shape[0] * self.shape[1]

    def stored(self, max_bytes=None):
        """K evaluated once (in blocks) and kept: for solvers that read its entries many
        times; refused above ``max_bytes`` (default: 80% of the available memory)."""
        check_memory(self.stored_bytes(), f"storing the {self.shape[0]} x {self.shape[0]} "
                     "kernel matrix", budget=max_bytes, hint="keep the matrix-free operator")
        return StoredCallableKernelOperator(self)

    def _check_dense(self, max_bytes):
        check_memory(8 * self.shape[0] * self.shape[1],
                     f"to_dense() of a {self.shape[0]} x {self.shape[1]} kernel matrix",
                     budget=_DENSE_LIMIT if max_bytes is None else max_bytes,
                     hint="use matvec/matmat or submatrix(I, J) instead")

    def to_dense(self, max_bytes=None):
        """The dense matrix (refuses above ``max_bytes``, default 2 GiB)."""
        self._check_dense(max_bytes)
        return evaluate(self._kernel, self._rows, self._cols)

    def __reduce__(self):
        return (CallableKernelOperator,
                (self._rows, self._cols, self._kernel, self._block_memory))

    def __repr__(self):
        return f"<CallableKernelOperator {self.shape[0]} x {self.shape[1]}>"


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
