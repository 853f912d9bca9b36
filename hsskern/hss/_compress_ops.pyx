# cython: language_level=3
"""Compiled inner steps of HSS-ANN compression (compress.py)."""
from libc.math cimport fabs
from scipy.linalg.cython_lapack cimport dgeqp3
from scipy.linalg.cython_blas cimport dtrsm

import numpy as np


def row_id(const double[:, ::1] M, double rel_tol, double abs_tol, Py_ssize_t max_rank,
           double negligible):
    """Row interpolative decomposition M ~= U @ M[rows] by LAPACK's pivoted QR (dgeqp3) of M^T.

    Returns (U, rows, achieved, tol) as compress._row_id documents. Calls dgeqp3 and dtrsm
    directly: around them scipy's qr() and solve_triangular() (workspace query, R copied out
    through np.triu, checks) plus diag / eye / searchsorted cost half as much again as the
    factorization itself on the ~2,400 small blocks of gmm8 n = 1e5.
    """
    cdef Py_ssize_t m = M.shape[0], s = M.shape[1], i, j, k, nd, lo_i, hi_i, mid
    cdef int S = <int> s, N = <int> m, LDA = <int> s, lwork = -1, info = 0, K, NK
    cdef double wq, tol, d0, achieved, one = 1.0
    if m == 0 or s == 0:
        return np.zeros((m, 0)), np.zeros(0, np.intp), 0.0, abs_tol
    # M's row-major buffer is M^T in column-major order (s x m, leading dimension s)
    A = np.array(M, dtype=np.float64, order="C", copy=True)
    cdef double[:, ::1] Av = A
    cdef double* a = &Av[0, 0]
    jpvt_arr = np.zeros(m, dtype=np.intc)
    cdef int[::1] jpvt = jpvt_arr
    nd = s if s < m else m
    tau_arr = np.empty(nd)
    cdef double[::1] tau = tau_arr
    dgeqp3(&S, &N, a, &LDA, &jpvt[0], &tau[0], &wq, &lwork, &info)
    lwork = <int> wq
    work_arr = np.empty(max(lwork, 1))
    cdef double[::1] work = work_arr
    dgeqp3(&S, &N, a, &LDA, &jpvt[0], &tau[0], &work[0], &lwork, &info)
    if info != 0:
        raise ValueError(f"dgeqp3 failed (info={info})")
    d0 = fabs(a[0])
    if d0 <= max(abs_tol, negligible):
        # the sampled block row is negligible: rank 0. Keeping a pivot of ~1e-300 would
        # overflow R11^{-1} R12 to inf and put NaNs in H (tiny widths underflow the kernel)
        return np.zeros((m, 0)), np.zeros(0, np.intp), 0.0, abs_tol
    tol = max(rel_tol * d0, abs_tol)
    # rank = pivots >= tol, by bisection as np.searchsorted does (|R_ii| is non-increasing
    # up to rounding; the same search keeps the same answer when it is not)
    lo_i = 0
    hi_i = nd
    while lo_i < hi_i:
        mid = lo_i + ((hi_i - lo_i) >> 1)
        if fabs(a[mid + mid * s]) < tol:
            hi_i = mid
        else:
            lo_i = mid + 1
    k = max(1, min(lo_i, max_rank))
    achieved = fabs(a[k + k * s]) / d0 if k < nd else 0.0
    U = np.zeros((m, k))
    cdef double[:, ::1] Uv = U
    rows = np.empty(k, np.intp)
    cdef Py_ssize_t[::1] rv = rows
    K = <int> k
    NK = <int> (m - k)
    with nogil:
        for i in range(k):
            rv[i] = jpvt[i] - 1
            Uv[rv[i], i] = 1.0
        if k < m:
            # T = R11^{-1} R12 in place of R12; U[p[k + j], i] = T[i, j]
            dtrsm("L", "U", "N", "N", &K, &NK, &one, a, &LDA, a + k * s, &LDA)
            for j in range(m - k):
                for i in range(k):
                    Uv[jpvt[k + j] - 1, i] = a[i + (k + j) * s]
    return U, rows, achieved, tol
