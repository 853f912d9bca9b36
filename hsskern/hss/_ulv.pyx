"""Compiled tree walks of an HSS matrix: the ULV factorization and solve, and the product.

ULV solve: both tree sweeps in one nogil loop over flat per-node factors.

The factor (built in ``ulv.py``) stores every node's block column-major in one float64
array, addressed by per-node offsets, so the sweeps touch no Python object: the per-node
work is one BLAS-2/3 call on a block of a few dozen rows, and at that size the interpreter
overhead of a Python loop costs more than the arithmetic.

At a non-root node t with ``m`` rows and ``k`` reduced rows (``k < m``: something is
eliminated there) the factorization computes an orthogonal ``Q = I - V T V^T`` (compact WY
of the QR of the node's basis), the Cholesky factor ``L`` ((m-k) x (m-k)) of the eliminated
block and ``W = L^{-1} A21`` ((m-k) x k). The solve needs only their product

    M = Q [[I, 0], [-L^{-T} W, L^{-T}]] = [Q1 - G W, G],   G = Q2 L^{-T}   (m x m):

the forward sweep is ``z <- M^T z`` (the first k rows go to the parent, the rest are
``L^{-1}`` of the eliminated part) and the backward sweep ``x = M [x1; y2]``. One ``m x m``
block (``m^2`` doubles) replaces V, T, L, W (``m^2 + k^2``), and one gemv per node and sweep
replaces three gemv, a trmv and a trsv: the solve at these block sizes is bound by reading
the factor and by the number of BLAS calls, not by flops. ``L L^T`` is a principal block of
an orthogonal transform of a Schur complement of ``H + beta I``, so its eigenvalues lie
within those of ``H + beta I`` and ``cond(L) <= sqrt(cond(H + beta I))``: the explicit
``L^{-T}`` keeps the solve's residual at the level of the triangular solves it replaces
(tested up to cond ~1e10).

The root holds the Cholesky factor of its (reduced) block.

The factorization (``factor_tree``) runs the same bottom-up loop in compiled code for the same
reason; it holds the GIL only to fetch each node's generators. So does the product H X
(``hss_apply``), after gathering the generators' addresses once.
"""
from libc.string cimport memcpy
from libc.math cimport log
from scipy.linalg.cython_blas cimport dgemm, dgemv, dsymm, dsyr2k, dsyrk, dtrmm, dtrsm
from scipy.linalg.cython_lapack cimport dgeqrf, dlarft, dpotrf, dpotrs

import numpy as np

ctypedef Py_ssize_t idx


def larft(double[::1, :] V, double[::1] tau):
    """Upper triangular T of the compact WY form ``H_1 ... H_k = I - V T V^T`` (LAPACK
    ``dlarft``) for the Householder reflectors returned by ``geqrf`` (only the strictly lower
    part of ``V`` is read; its diagonal is taken as 1).

    Parameters
    ----------
    V : ndarray, shape (m, k), Fortran order
    tau : ndarray, shape (k,)

    Returns
    -------
    T : ndarray, shape (k, k), Fortran order
    """
    cdef int m = V.shape[0], k = V.shape[1]
    T = np.zeros((k, k), order="F")
    cdef double[::1, :] Tv = T
    if k > 0 and m > 0:
        dlarft(b"F", b"C", &m, &k, &V[0, 0], &m, &tau[0], &Tv[0, 0], &k)
    return T


cdef inline void _copy_rows(int rows, int nrhs, const double* src, int lds, double* dst,
                            int ldd) noexcept nogil:
    cdef int j
    if rows == 0:
        return
    for j in range(nrhs):
        memcpy(dst + <idx>j * ldd, src + <idx>j * lds, rows * sizeof(double))


def solve_tree(const double[::1] data, const Py_ssize_t[::1] m_, const Py_ssize_t[::1] k_,
               const Py_ssize_t[::1] off, const Py_ssize_t[::1] left,
               const Py_ssize_t[::1] right, const Py_ssize_t[::1] parent,
               const Py_ssize_t[::1] lo, const Py_ssize_t[::1] hi, const Py_ssize_t[::1] perm,
               const double[:, ::1] B, double[:, ::1] X):
    """Solve (H + beta I) X = B with the flat ULV factor; B, X in the user's order.

    Parameters
    ----------
    data : ndarray of float64
        All per-node blocks (see the module docstring), column-major each.
    m_, k_, off : ndarray of intp, shape (n_nodes,)
        Rows of each node's block, reduced rows passed to the parent (``k < m``: there is an
        elimination at the node), offset of its ``M`` in ``data`` (root: its Cholesky
        factor).
    left, right, parent, lo, hi, perm : ndarray of intp
        The cluster tree (breadth-first ids: parents before children).
    B : ndarray, shape (n, nrhs), C order
    X : ndarray, shape (n, nrhs), C order
        Overwritten with the solution.
    """
    cdef idx nn = m_.shape[0], n = B.shape[0]
    cdef int nrhs = B.shape[1]
    cdef idx t, i, a, p, mmax = 0, total = 0
    cdef int j, m, k, ka, row0, info = 0, inc = 1
    cdef double one = 1.0, zero = 0.0
    cdef const double* base = &data[0] if data.shape[0] > 0 else NULL
    off_Z = np.empty(nn, dtype=np.intp)
    cdef Py_ssize_t[::1] oz = off_Z
    for t in range(nn):  # each node's workspace: its m x nrhs block, column-major
        oz[t] = total
        total += m_[t] * nrhs
        if m_[t] > mmax:
            mmax = m_[t]
    cdef double[::1] Zbuf = np.empty(max(total, 1))
    cdef double[::1] wbuf = np.empty(max(mmax * nrhs, 1))
    cdef double* Z = &Zbuf[0]
    cdef double* w = &wbuf[0]
    cdef double* Zt
    cdef double* Mt
    with nogil:
        # forward sweep (children before parents): reduce the right-hand side
        for t in range(nn - 1, -1, -1):
            m = <int>m_[t]
            k = <int>k_[t]
            Zt = Z + oz[t]
            a = left[t]
            if a < 0:  # gather the leaf's rows from the user's order
                for j in range(nrhs):
                    for i in range(m):
                        Zt[i + <idx>j * m] = B[perm[lo[t] + i], j]
            else:  # stack the children's reduced right-hand sides
                ka = <int>k_[a]
                _copy_rows(ka, nrhs, Z + oz[a], <int>m_[a], Zt, m)
                _copy_rows(<int>k_[right[t]], nrhs, Z + oz[right[t]], <int>m_[right[t]],
                           Zt + ka, m)
            if t == 0:
                if m > 0:
                    dpotrs(b"L", &m, &nrhs, <double*>(base + off[0]), &m, Zt, &m, &info)
                break
            if k == m:  # nothing eliminated: the block passes up unchanged
                continue
            # z <- M^T z: [reduced rhs for the parent; L^{-1} (Q^T z)_2 kept for the way back]
            Mt = <double*>(base + off[t])
            if nrhs == 1:
                dgemv(b"T", &m, &m, &one, Mt, &m, Zt, &inc, &zero, w, &inc)
            else:
                dgemm(b"T", b"N", &m, &nrhs, &m, &one, Mt, &m, Zt, &m, &zero, w, &m)
            memcpy(Zt, w, <idx>m * nrhs * sizeof(double))
        # backward sweep (parents before children): expand the solution
        for t in range(nn):
            m = <int>m_[t]
            k = <int>k_[t]
            Zt = Z + oz[t]
            if t > 0:
                p = parent[t]
                row0 = 0 if left[p] == t else <int>k_[left[p]]
                _copy_rows(k, nrhs, Z + oz[p] + row0, <int>m_[p], Zt, m)
                if k < m:  # x = M [x1; y2]
                    Mt = <double*>(base + off[t])
                    if nrhs == 1:
                        dgemv(b"N", &m, &m, &one, Mt, &m, Zt, &inc, &zero, w, &inc)
                    else:
                        dgemm(b"N", b"N", &m, &nrhs, &m, &one, Mt, &m, Zt, &m, &zero, w, &m)
                    memcpy(Zt, w, <idx>m * nrhs * sizeof(double))
            if left[t] < 0:  # scatter the leaf's rows back to the user's order
                for j in range(nrhs):
                    for i in range(m):
                        X[perm[lo[t] + i], j] = Zt[i + <idx>j * m]
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrs failed (info={info})")


cdef inline void _gemm(char* ta, char* tb, int m, int n, int k, double alpha, const double* A,
                       int lda, const double* B, int ldb, double beta, double* C,
                       int ldc) noexcept nogil:
    """dgemm that tolerates empty operands (rank-0 nodes): an empty inner dimension still
    scales C by beta, as the math says."""
    cdef int i, j
    if m == 0 or n == 0:
        return
    if k == 0:
        for j in range(n):
            for i in range(m):
                C[i + <idx>j * ldc] = 0.0 if beta == 0.0 else beta * C[i + <idx>j * ldc]
        return
    lda = max(lda, 1)
    ldb = max(ldb, 1)
    dgemm(ta, tb, &m, &n, &k, &alpha, <double*>A, &lda, <double*>B, &ldb, &beta, C, &ldc)


def plan(const Py_ssize_t[::1] left, const Py_ssize_t[::1] right,
         const Py_ssize_t[::1] lo, const Py_ssize_t[::1] hi, const Py_ssize_t[::1] rank):
    """Block sizes and offsets of the flat factor, known before any arithmetic.

    Parameters
    ----------
    left, right, lo, hi : ndarray of intp
        The cluster tree.
    rank : ndarray of intp
        Columns of each node's basis ``U[t]`` (ignored at the root).

    Returns
    -------
    m, k : ndarray of intp, shape (n_nodes,)
    off : ndarray of intp, shape (n_nodes,)
        Offset of each eliminating node's ``M`` (m x m) and of the root's Cholesky factor.
    size : int
        Length of the flat data array.
    """
    cdef idx nn = left.shape[0], t, pos = 0, m, k
    m_ = np.zeros(nn, dtype=np.intp)
    k_ = np.zeros(nn, dtype=np.intp)
    off = np.zeros(nn, dtype=np.intp)
    cdef Py_ssize_t[::1] mv = m_, kv = k_, ov = off
    for t in range(nn - 1, -1, -1):
        m = hi[t] - lo[t] if left[t] < 0 else kv[left[t]] + kv[right[t]]
        mv[t] = m
        if t == 0:
            ov[0] = pos
            pos += m * m
            break
        k = min(m, rank[t])
        kv[t] = k
        if k < m:
            ov[t] = pos
            pos += m * m
    return m_, k_, off, pos


def factor_tree(list D, list U, list Bc, double beta,
                const Py_ssize_t[::1] left, const Py_ssize_t[::1] right,
                const Py_ssize_t[::1] m_, const Py_ssize_t[::1] k_,
                const Py_ssize_t[::1] off, double[::1] data):
    """Bottom-up ULV factorization of H + beta I into the flat layout of ``plan``.

    Per node: form the block A (lower triangle only; it is symmetric) and the basis F,
    QR-factor F (``dgeqrf``) and form the reflectors' compact WY form, transform
    A <- Q^T A Q by one symmetric rank-2k update, Cholesky-factor the eliminated block, store
    the node's solve block ``M`` (module docstring), and pass the Schur complement with basis
    R up.

    Parameters
    ----------
    D, U, Bc : list of ndarray or None
        The HSS generators (C order, float64).
    beta : float
    left, right : ndarray of intp
    m_, k_, off : from ``plan``
    data : ndarray of float64
        Filled with the factor.

    Returns
    -------
    logdet : float
        log det(H + beta I) (the transforms are orthogonal).

    Raises
    ------
    numpy.linalg.LinAlgError
        If a block to be Cholesky-factored is not positive definite.
    """
    cdef idx nn = left.shape[0], t, a, b, i, j
    cdef int m, k, r, e, ka, kb, ra, rb, info = 0, lwork
    cdef double one = 1.0, mone = -1.0, zero = 0.0, half = -0.5, logdet = 0.0
    cdef double* base = &data[0] if data.shape[0] > 0 else NULL
    cdef int mmax = 1, rmax = 1
    for t in range(nn):
        mmax = max(mmax, <int>m_[t])
        if U[t] is not None:
            rmax = max(rmax, <int>U[t].shape[1])
    lwork = 64 * max(mmax, rmax)
    cdef double[::1] Abuf = np.empty(mmax * mmax)
    cdef double[::1] Fbuf = np.empty(mmax * rmax)
    cdef double[::1] Ybuf = np.empty(mmax * rmax)
    cdef double[::1] Mbuf = np.empty(rmax * rmax)
    cdef double[::1] taubuf = np.empty(rmax)
    cdef double[::1] wbuf = np.empty(lwork)
    cdef double[::1] tmpbuf = np.empty(rmax * mmax)
    # V, T, L, W are scratch now: the solve keeps only their product M
    cdef double[::1] Vbuf = np.empty(mmax * rmax)
    cdef double[::1] Tbuf = np.empty(rmax * rmax)
    cdef double[::1] Lbuf = np.empty(mmax * mmax)
    cdef double[::1] Wbuf = np.empty(mmax * rmax)
    cdef double* A = &Abuf[0]
    cdef double* F = &Fbuf[0]
    cdef double* Y = &Ybuf[0]
    cdef double* M = &Mbuf[0]
    cdef double* tmp = &tmpbuf[0]
    cdef double* V
    cdef double* T
    cdef double* L
    cdef double* W
    cdef double* Mt
    cdef const double[:, ::1] Dv, Uv, Bv
    cdef double[::1, :] Dha, Dhb, Fha, Fhb, Dh_t, Fh_t
    Dh = [None] * nn  # reduced blocks (lower triangle valid), column-major
    Fh = [None] * nn  # their bases
    for t in range(nn - 1, -1, -1):
        a, b = left[t], right[t]
        m = <int>m_[t]
        if a < 0:
            Dv = D[t]
            for j in range(m):  # D is symmetric: its C order is its column-major order
                for i in range(j, m):
                    A[i + <idx>j * m] = Dv[j, i]
                A[j + <idx>j * m] += beta
            if t > 0:
                Uv = U[t]
                r = <int>Uv.shape[1]
                for j in range(r):
                    for i in range(m):
                        F[i + <idx>j * m] = Uv[i, j]
        else:
            Dha, Dhb, Fha, Fhb = Dh[a], Dh[b], Fh[a], Fh[b]
            Dh[a] = Dh[b] = Fh[a] = Fh[b] = None
            ka, kb = <int>k_[a], <int>k_[b]
            ra, rb = <int>Fha.shape[1], <int>Fhb.shape[1]
            Bv = Bc[t]  # ra x rb, C order: column-major it is B^T (rb x ra)
            for j in range(ka):
                for i in range(j, ka):
                    A[i + <idx>j * m] = Dha[i, j]
            for j in range(kb):
                for i in range(j, kb):
                    A[ka + i + <idx>(ka + j) * m] = Dhb[i, j]
            if ka > 0 and kb > 0:  # A21 = Fh_b B^T Fh_a^T
                _gemm(b"N", b"T", rb, ka, ra, one, &Bv[0, 0], rb, &Fha[0, 0], ka, zero,
                      tmp, rb)
                _gemm(b"N", b"N", kb, ka, rb, one, &Fhb[0, 0], kb, tmp, rb, zero, A + ka, m)
            if t > 0:  # F = blockdiag(Fh_a, Fh_b) U_t; U_t C order is U_t^T column-major
                Uv = U[t]
                r = <int>Uv.shape[1]
                if r > 0:
                    if ka > 0:
                        _gemm(b"N", b"T", ka, r, ra, one, &Fha[0, 0], ka, &Uv[0, 0], r, zero,
                              F, m)
                    if kb > 0:
                        _gemm(b"N", b"T", kb, r, rb, one, &Fhb[0, 0], kb, &Uv[0, 0] + ra * r,
                              r, zero, F + ka, m)
        if t == 0:
            L = base + off[0]
            _chol_into(m, A, m, L, &logdet)
            break
        k = <int>k_[t]
        if k == m:  # nothing eliminated: pass A and F up unchanged
            Dh_t = np.empty((m, m), order="F")
            Fh_t = np.empty((m, r), order="F")
            for j in range(m):
                for i in range(j, m):
                    Dh_t[i, j] = A[i + <idx>j * m]
            for j in range(r):
                for i in range(m):
                    Fh_t[i, j] = F[i + <idx>j * m]
            Dh[t], Fh[t] = Dh_t, Fh_t
            continue
        e = m - k
        V = &Vbuf[0]
        T = &Tbuf[0]
        L = &Lbuf[0]
        W = &Wbuf[0]
        Fh_t = np.zeros((k, r), order="F")
        if k > 0:
            dgeqrf(&m, &r, F, &m, &taubuf[0], &wbuf[0], &lwork, &info)
            for j in range(k):  # V: unit lower trapezoidal, R: upper triangle
                for i in range(m):
                    V[i + <idx>j * m] = 0.0 if i < j else (1.0 if i == j else F[i + <idx>j * m])
            for j in range(r):
                for i in range(min(j + 1, k)):
                    Fh_t[i, j] = F[i + <idx>j * m]
            dlarft(b"F", b"C", &m, &k, V, &m, &taubuf[0], T, &k)
            for j in range(k):
                for i in range(j + 1, k):
                    T[i + <idx>j * k] = 0.0
            # A <- Q^T A Q = A - Z V^T - V Z^T, Y = A V T, Z = Y - V (T^T V^T Y) / 2
            dsymm(b"L", b"L", &m, &k, &one, A, &m, V, &m, &zero, Y, &m)
            dtrmm(b"R", b"U", b"N", b"N", &m, &k, &one, T, &k, Y, &m)
            dgemm(b"T", b"N", &k, &k, &m, &one, V, &m, Y, &m, &zero, M, &k)
            dtrmm(b"L", b"U", b"T", b"N", &k, &k, &one, T, &k, M, &k)
            dgemm(b"N", b"N", &m, &k, &k, &half, V, &m, M, &k, &one, Y, &m)
            dsyr2k(b"L", b"N", &m, &k, &mone, Y, &m, V, &m, &one, A, &m)
        _chol_into(e, A + k + <idx>k * m, m, L, &logdet)
        if k > 0:
            # W = L^{-1} A21; reduced block A11 - W^T W
            for j in range(k):
                for i in range(e):
                    W[i + <idx>j * e] = A[k + i + <idx>j * m]
            dtrsm(b"L", b"L", b"N", b"N", &e, &k, &one, L, &e, W, &e)
            dsyrk(b"L", b"T", &k, &e, &mone, W, &e, &one, A, &m)
        # M = [Q1 - G W, G] with G = Q2 L^{-T}, Q = I - (V T) V^T
        Mt = base + off[t]
        for j in range(m):
            for i in range(m):
                Mt[i + <idx>j * m] = 1.0 if i == j else 0.0
        if k > 0:
            memcpy(Y, V, <idx>m * k * sizeof(double))
            dtrmm(b"R", b"U", b"N", b"N", &m, &k, &one, T, &k, Y, &m)
            dgemm(b"N", b"T", &m, &m, &k, &mone, Y, &m, V, &m, &one, Mt, &m)
        dtrsm(b"R", b"L", b"T", b"N", &m, &e, &one, L, &e, Mt + <idx>k * m, &m)
        if k > 0:
            dgemm(b"N", b"N", &m, &k, &e, &mone, Mt + <idx>k * m, &m, W, &e, &one, Mt, &m)
        Dh_t = np.empty((k, k), order="F")
        for j in range(k):
            for i in range(j, k):
                Dh_t[i, j] = A[i + <idx>j * m]
        Dh[t], Fh[t] = Dh_t, Fh_t
    return logdet


cdef void _chol_into(int e, double* A, int lda, double* L, double* logdet) except *:
    """Cholesky-factor the lower triangle of the e x e block at A into L (e x e, zero upper
    triangle) and add its log-determinant."""
    cdef int i, j, info = 0
    for j in range(e):
        for i in range(e):
            L[i + <idx>j * e] = A[i + <idx>j * lda] if i >= j else 0.0
    if e == 0:
        return
    dpotrf(b"L", &e, L, &e, &info)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrf: leading minor {info} not positive definite")
    for j in range(e):
        logdet[0] += 2.0 * log(L[j + <idx>j * e])


cdef inline void _mm_rows(bint trans, int p, int q, int s, const double* A, const double* X,
                          double beta, double* Y) noexcept nogil:
    """Y = op(A) X + beta Y in row-major (C order) storage: A is p x q, op(A) is A or A^T,
    X and Y have s columns. Column-major BLAS sees the transposes, Y^T = X^T op(A)^T."""
    if trans:  # Y (q x s) = A^T X, X (p x s)
        _gemm(b"N", b"T", s, q, p, 1.0, X, s, A, q, beta, Y, s)
    else:  # Y (p x s) = A X, X (q x s)
        _gemm(b"N", b"N", s, p, q, 1.0, X, s, A, q, beta, Y, s)


def hss_apply(list D, list U, list Bc, const Py_ssize_t[::1] left,
              const Py_ssize_t[::1] right, const Py_ssize_t[::1] lo,
              const Py_ssize_t[::1] hi, const double[:, ::1] Xp, double[:, ::1] Y):
    """Y = H Xp for the HSS matrix with generators D, U, Bc, rows in tree order.

    Upward sweep x_t = U_t^T (x of t's rows, or the children's x stacked), then downward
    y_a = B_t x_b (+ U_t y_t, rows of a), y_b = B_t^T x_a (+ U_t y_t, rows of b), and at a
    leaf Y_t = D_t Xp_t + U_t y_t. Every generator is C-contiguous float64 (the caller's
    guarantee); their addresses are gathered once, so the sweeps run without the GIL and
    without a Python object per node: one small gemm per generator and sweep.
    """
    cdef idx nn = left.shape[0], t, a, b, total = 0
    cdef int s = <int>Xp.shape[1], m, r, ra, rb
    if s == 0 or Xp.shape[0] == 0:
        return
    rank_arr = np.zeros(nn, np.intp)
    ox_arr = np.zeros(nn, np.intp)
    pD_arr = np.zeros(nn, np.uintp)
    pU_arr = np.zeros(nn, np.uintp)
    pB_arr = np.zeros(nn, np.uintp)
    cdef Py_ssize_t[::1] rank = rank_arr, ox = ox_arr
    cdef size_t[::1] pD = pD_arr, pU = pU_arr, pB = pB_arr
    cdef const double[:, ::1] g
    for t in range(nn):
        if left[t] < 0:
            g = D[t]
            pD[t] = <size_t>&g[0, 0]
        else:
            g = Bc[t]
            pB[t] = <size_t>&g[0, 0]
        if t > 0:
            g = U[t]
            pU[t] = <size_t>&g[0, 0]
            rank[t] = g.shape[1]
        ox[t] = total
        total += rank[t] * s
    cdef double[::1] xbuf = np.empty(max(total, 1))
    cdef double[::1] ybuf = np.empty(max(total, 1))
    cdef double* xb = &xbuf[0]
    cdef double* yb = &ybuf[0]
    cdef const double* x = &Xp[0, 0]
    cdef double* y = &Y[0, 0]
    with nogil:
        for t in range(nn - 1, 0, -1):  # children before parents
            r = <int>rank[t]
            a = left[t]
            if a < 0:
                _mm_rows(True, <int>(hi[t] - lo[t]), r, s, <const double*>pU[t],
                         x + lo[t] * s, 0.0, xb + ox[t])
            else:
                ra = <int>rank[a]
                _mm_rows(True, ra, r, s, <const double*>pU[t], xb + ox[a], 0.0, xb + ox[t])
                _mm_rows(True, <int>rank[right[t]], r, s, <const double*>pU[t] + ra * r,
                         xb + ox[right[t]], 1.0, xb + ox[t])
        for t in range(nn):  # parents before children
            a, b = left[t], right[t]
            r = <int>rank[t]
            if a < 0:
                m = <int>(hi[t] - lo[t])
                _mm_rows(False, m, m, s, <const double*>pD[t], x + lo[t] * s, 0.0,
                         y + lo[t] * s)
                if t > 0:
                    _mm_rows(False, m, r, s, <const double*>pU[t], yb + ox[t], 1.0,
                             y + lo[t] * s)
                continue
            ra, rb = <int>rank[a], <int>rank[b]
            _mm_rows(False, ra, rb, s, <const double*>pB[t], xb + ox[b], 0.0, yb + ox[a])
            _mm_rows(True, ra, rb, s, <const double*>pB[t], xb + ox[a], 0.0, yb + ox[b])
            if t > 0:
                _mm_rows(False, ra, r, s, <const double*>pU[t], yb + ox[t], 1.0, yb + ox[a])
                _mm_rows(False, rb, r, s, <const double*>pU[t] + ra * r, yb + ox[t], 1.0,
                         yb + ox[b])
