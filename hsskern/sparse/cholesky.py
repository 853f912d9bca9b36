"""Sparse Cholesky factor of a shifted sparse Gram matrix, with a fill-reducing ordering.

``SparseCholeskyFactor`` factors  P (K + beta I) P^T = L L^T  for a sparse symmetric K:

* **CHOLMOD** (through scikit-sparse, when importable): supernodal, AMD (or METIS/"best")
  ordering, only the lower triangle of K is read. Needs the SuiteSparse headers to build
  (Debian/Ubuntu: ``apt-get install libsuitesparse-dev``; SuiteSparse 5.x pairs with
  ``scikit-sparse<0.5``, SuiteSparse 7 with ``scikit-sparse>=0.5``).
* **SciPy fallback** (always available): SuperLU in symmetric mode with diagonal pivoting off
  and a minimum-degree ordering of A^T + A. Without row pivoting, Gaussian elimination of an
  SPD matrix gives A = L_1 D L_1^T with unit lower L_1 and D = diag(U) > 0, so
  L = L_1 D^{1/2} is the Cholesky factor. A non-positive pivot proves A is not (numerically)
  positive definite.

The factor is the exact feature map of the thesis (Abdellatif 2019, Algorithm 1): row i of L is
the point perm[i] in a space where K + beta I is the Gram matrix.
"""
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, spsolve_triangular, splu

from ..exceptions import NotPositiveDefiniteError
from ..utils._memory import check_memory
from ..utils.validation import check_positive
from ._symbolic import cholesky_nnz

try:  # optional: CHOLMOD through scikit-sparse
    from sksparse import cholmod as _cholmod
except ImportError:  # pragma: no cover - depends on the environment
    _cholmod = None

#: The thesis' diagonal shift: K + 1e-4 I keeps the factor unique when points repeat.
DEFAULT_BETA = 1e-4
BACKENDS = ("auto", "cholmod", "scipy")
CHOLMOD_ORDERINGS = ("amd", "metis", "nesdis", "colamd", "natural", "best", "default")
#: Bytes per nonzero of L while factoring with CHOLMOD: its supernodal factor and our simplicial
#: copy (8 B value + 4 B index each).
CHOLMOD_BYTES_PER_NNZ = 24


def symbolic_nnz(K, perm):
    """nnz of the Cholesky factor of K[perm][:, perm] (structure only, O(nnz(L)) time).

    Parameters
    ----------
    K : sparse matrix of shape (n, n)
        Symmetric pattern, both triangles stored.
    perm : ndarray of shape (n,)
        Symmetric ordering.

    Returns
    -------
    int
    """
    Kp = sp.csc_matrix(K)[perm][:, perm].tocsc()
    return cholesky_nnz(Kp.indptr.astype(np.int32, copy=False),
                        Kp.indices.astype(np.int32, copy=False))


def has_cholmod():
    """True when scikit-sparse's CHOLMOD wrapper is importable."""
    return _cholmod is not None


class SparseCholeskyFactor:
    """Cholesky factor of K + beta I with a fill-reducing symmetric permutation.

    ``L @ L.T == (K + beta I)[perm][:, perm]`` up to rounding, L lower triangular.

    Parameters
    ----------
    K : sparse matrix of shape (n, n)
        Symmetric matrix (both triangles stored; CHOLMOD reads the lower one).
    beta : float, default 1e-4
        Diagonal shift (>= 0).
    backend : {"auto", "cholmod", "scipy"}, default "auto"
        "auto" uses CHOLMOD when scikit-sparse is importable, else SciPy's SuperLU.
    ordering : str, default "amd"
        Fill-reducing ordering for CHOLMOD (one of ``CHOLMOD_ORDERINGS``); the SciPy path
        always uses SuperLU's minimum degree on A^T + A ("mmd"), or "natural" if asked.
    max_memory : float, optional
        CHOLMOD path: bytes the factor may take, checked on the exact symbolic nnz(L) of the
        chosen ordering *before* the numeric factorization (default 80% of available memory).
        SuperLU orders internally, so the SciPy path cannot check ahead.

    Attributes
    ----------
    beta : float
    backend : str
        Backend actually used, "cholmod" or "scipy".
    ordering : str
        Ordering actually used.
    perm : ndarray of shape (n,)
        Row i of L belongs to point ``perm[i]``.
    L : scipy.sparse.csc_matrix of shape (n, n)
        Lower-triangular factor in permuted order.
    nnz_K, nnz_L : int
        Stored entries of K (both triangles) and of L.
    fill_in : float
        nnz(L) / nnz(K).

    Raises
    ------
    NotPositiveDefiniteError
        K + beta I is not numerically positive definite; ``suggested_beta`` holds a larger shift.
    """

    def __init__(self, K, beta=DEFAULT_BETA, *, backend="auto", ordering="amd", max_memory=None):
        if not sp.issparse(K) or K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError("K must be a square scipy sparse matrix")
        self.beta = check_positive(beta, "beta", minimum=0.0)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "cholmod" and _cholmod is None:
            raise ImportError("backend='cholmod' needs scikit-sparse (pip install scikit-sparse; "
                              "it builds against SuiteSparse: apt-get install libsuitesparse-dev)")
        if backend == "auto":
            backend = "cholmod" if _cholmod is not None else "scipy"
        self.backend = backend
        self.n = K.shape[0]
        self.nnz_K = int(K.nnz)
        K = K.tocsc()
        if backend == "cholmod":
            if ordering not in CHOLMOD_ORDERINGS:
                raise ValueError(f"ordering must be one of {CHOLMOD_ORDERINGS}, got {ordering!r}")
            self._factor_cholmod(K, ordering, max_memory)
        else:
            if ordering not in ("amd", "mmd", "natural", "default"):
                raise ValueError("the scipy backend supports ordering 'mmd' (minimum degree, used "
                                 f"for 'amd'/'default') or 'natural', got {ordering!r}")
            self._factor_superlu(K, ordering)
        self.nnz_L = int(self.L.nnz)
        self.fill_in = self.nnz_L / max(1, self.nnz_K)
        self._Lt = None

    # -- construction ------------------------------------------------------------------------
    def _not_pd(self, detail):
        suggested = max(10.0 * self.beta, 1e-6)
        raise NotPositiveDefiniteError(
            f"K + beta*I (beta={self.beta:g}) is not positive definite ({detail}); a compact "
            "kernel with power below Askey's bound floor(d/2)+1 may be indefinite: raise power "
            f"or use a larger beta, e.g. beta={suggested:g}", suggested_beta=suggested)

    def _factor_cholmod(self, K, ordering, max_memory):
        A = sp.tril(K, format="csc")
        A.sort_indices()
        f = _cholmod.analyze(A, mode="auto", ordering_method=ordering)
        nnz_L = symbolic_nnz(K, f.P())
        check_memory(CHOLMOD_BYTES_PER_NNZ * nnz_L, f"sparse Cholesky factor ({nnz_L} nonzeros, "
                     f"fill-in {nnz_L / max(1, K.nnz):.2f} with ordering {ordering!r})",
                     budget=max_memory, hint="use a smaller sigma, or another ordering "
                     "('metis', 'best')")
        try:
            f.cholesky_inplace(A, beta=self.beta)
            L = f.L()
        except _cholmod.CholmodNotPositiveDefiniteError as exc:
            self._not_pd(f"CHOLMOD: {exc}")
        # the supernodal -> simplicial conversion keeps the supernodes' explicit zeros; they
        # would count as fill-in and as (useless) features for LIBLINEAR
        L.eliminate_zeros()
        L.sort_indices()
        self._chol = f
        self.ordering = ordering
        self.perm = np.asarray(f.P(), dtype=np.intp)
        self.L = L

    def _factor_superlu(self, K, ordering):
        A = K + self.beta * sp.eye(self.n, format="csc") if self.beta else K
        spec = "NATURAL" if ordering == "natural" else "MMD_AT_PLUS_A"
        try:
            lu = splu(A.tocsc(), permc_spec=spec, diag_pivot_thresh=0.0,
                      options=dict(SymmetricMode=True))
        except RuntimeError as exc:  # "Factor is exactly singular"
            self._not_pd(f"SuperLU: {exc}")
        if not np.array_equal(lu.perm_r, lu.perm_c):  # pragma: no cover - SuperLU contract
            raise RuntimeError("SuperLU pivoted rows despite diag_pivot_thresh=0; cannot form "
                               "a symmetric factor")
        d = lu.U.diagonal()
        if not np.all(d > 0.0):
            k = int(np.argmin(d))
            self._not_pd(f"pivot {k} is {d[k]:.3g}")
        L = (lu.L @ sp.diags(np.sqrt(d))).tocsc()
        L.sort_indices()
        self._chol = None
        self.ordering = "natural" if ordering == "natural" else "mmd"
        self.perm = np.argsort(lu.perm_c).astype(np.intp)
        self.L = L

    # -- protocol ----------------------------------------------------------------------------
    @property
    def shape(self):
        return (self.n, self.n)

    def solve_L(self, b):
        """x with L x = b (permuted order); b of shape (n,) or (n, r)."""
        b = np.asarray(b, dtype=np.float64)
        if self._chol is not None:
            return self._chol.solve_L(b, use_LDLt_decomposition=False)
        return spsolve_triangular(self.L, b, lower=True)

    def solve_Lt(self, b):
        """x with L^T x = b (permuted order); b of shape (n,) or (n, r)."""
        b = np.asarray(b, dtype=np.float64)
        if self._chol is not None:
            return self._chol.solve_Lt(b, use_LDLt_decomposition=False)
        if self._Lt is None:
            self._Lt = self.L.T.tocsr()
        return spsolve_triangular(self._Lt, b, lower=False)

    def solve(self, b):
        """x = (K + beta I)^{-1} b in the original order; b of shape (n,) or (n, r)."""
        b = np.asarray(b, dtype=np.float64)
        if b.shape[0] != self.n:
            raise ValueError(f"b has {b.shape[0]} rows, the factor is {self.n} x {self.n}")
        x = np.empty_like(b)
        x[self.perm] = self.solve_Lt(self.solve_L(b[self.perm]))
        return x

    def logdet(self):
        """log det(K + beta I) = 2 sum log diag(L)."""
        return float(2.0 * np.sum(np.log(self.L.diagonal())))

    def memory_bytes(self):
        """Bytes held: L (and CHOLMOD's own copy of the factor, about as large) and perm."""
        L = self.L
        nbytes = L.data.nbytes + L.indices.nbytes + L.indptr.nbytes + self.perm.nbytes
        if self._chol is not None:
            nbytes *= 2
        if self._Lt is not None:
            nbytes += self._Lt.data.nbytes + self._Lt.indices.nbytes + self._Lt.indptr.nbytes
        return int(nbytes)

    memory = memory_bytes

    def as_linear_operator(self):
        """(K + beta I)^{-1} as a LinearOperator (e.g. the ``M=`` of ``scipy.sparse.linalg.cg``)."""
        return LinearOperator(self.shape, matvec=self.solve, matmat=self.solve,
                              rmatvec=self.solve, rmatmat=self.solve, dtype=np.float64)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_chol"] = None  # a CHOLMOD factor does not pickle; the scipy solves take over
        return state

    def __repr__(self):
        return (f"SparseCholeskyFactor(n={self.n}, beta={self.beta:g}, backend={self.backend!r}, "
                f"ordering={self.ordering!r}, nnz_L={self.nnz_L}, fill_in={self.fill_in:.2f})")


def sparse_cholesky(K, beta=DEFAULT_BETA, *, backend="auto", ordering="amd",
                    on_not_pd="raise", max_beta=1e-1, max_memory=None):
    """Factor K + beta I; optionally grow beta (x10, with a warning) until it is positive definite.

    Parameters
    ----------
    K : sparse matrix of shape (n, n)
    beta : float, default 1e-4
    backend, ordering : see :class:`SparseCholeskyFactor`
    on_not_pd : {"raise", "increase"}, default "raise"
        What to do when K + beta I is not positive definite.
    max_beta : float, default 0.1
        Largest shift "increase" tries before raising.
    max_memory : float, optional
        See :class:`SparseCholeskyFactor`.

    Returns
    -------
    SparseCholeskyFactor
    """
    if on_not_pd not in ("raise", "increase"):
        raise ValueError(f"on_not_pd must be 'raise' or 'increase', got {on_not_pd!r}")
    while True:
        try:
            return SparseCholeskyFactor(K, beta, backend=backend, ordering=ordering,
                                        max_memory=max_memory)
        except NotPositiveDefiniteError as exc:
            nxt = exc.suggested_beta
            if on_not_pd == "raise" or nxt is None or nxt > max_beta:
                raise
            warnings.warn(f"{exc}; retrying with beta={nxt:g}", RuntimeWarning, stacklevel=2)
            beta = nxt
