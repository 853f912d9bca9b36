"""Compiled ULV solve: both tree sweeps in one nogil loop over flat per-node factors.

The factor (built in ``ulv.py``) stores every node's blocks column-major in one float64
array, addressed by per-node offsets, so the sweeps touch no Python object: the per-node
work is a handful of BLAS-2/3 calls on blocks of a few dozen rows, and at that size the
interpreter overhead of a Python loop costs more than the arithmetic.

Per non-root node t with ``m`` rows and ``k`` reduced rows (``k < m``: something is
eliminated there):

* ``V`` (m x k) and ``T`` (k x k, upper triangular): the orthogonal transform in compact WY
  form, ``Q = I - V T V^T``. Applying it costs three BLAS calls instead of LAPACK ``ormqr``'s
  one ``larf`` per reflector (or a fresh ``larft`` per call).
* ``L`` ((m-k) x (m-k), lower triangular): Cholesky factor of the eliminated block.
* ``W`` ((m-k) x k): ``L^{-1} A21``.

The root holds the Cholesky factor of its (reduced) block at ``off_L[0]``.
"""
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemm, dgemv, dtrmm, dtrmv, dtrsm, dtrsv
from scipy.linalg.cython_lapack cimport dlarft, dpotrs

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


cdef inline void _apply_q(int m, int k, int nrhs, const double* V, const double* T,
                          double* Z, int ldz, double* w, bint transpose) noexcept nogil:
    """Z <- Q^T Z (transpose) or Q Z with Q = I - V T V^T; w: scratch of k * nrhs."""
    cdef double one = 1.0, zero = 0.0, mone = -1.0
    cdef int inc = 1
    cdef char* tr = b"T" if transpose else b"N"
    if k == 0:
        return
    if nrhs == 1:
        dgemv(b"T", &m, &k, &one, <double*>V, &m, Z, &inc, &zero, w, &inc)
        dtrmv(b"U", tr, b"N", &k, <double*>T, &k, w, &inc)
        dgemv(b"N", &m, &k, &mone, <double*>V, &m, w, &inc, &one, Z, &inc)
    else:
        dgemm(b"T", b"N", &k, &nrhs, &m, &one, <double*>V, &m, Z, &ldz, &zero, w, &k)
        dtrmm(b"L", b"U", tr, b"N", &k, &nrhs, &one, <double*>T, &k, w, &k)
        dgemm(b"N", b"N", &m, &nrhs, &k, &mone, <double*>V, &m, w, &k, &one, Z, &ldz)


cdef inline void _copy_rows(int rows, int nrhs, const double* src, int lds, double* dst,
                            int ldd) noexcept nogil:
    cdef int j
    if rows == 0:
        return
    for j in range(nrhs):
        memcpy(dst + <idx>j * ldd, src + <idx>j * lds, rows * sizeof(double))


def solve_tree(const double[::1] data,
               const Py_ssize_t[::1] m_, const Py_ssize_t[::1] k_,
               const Py_ssize_t[::1] off_V, const Py_ssize_t[::1] off_T,
               const Py_ssize_t[::1] off_L, const Py_ssize_t[::1] off_W,
               const Py_ssize_t[::1] left, const Py_ssize_t[::1] right,
               const Py_ssize_t[::1] parent, const Py_ssize_t[::1] lo,
               const Py_ssize_t[::1] hi, const Py_ssize_t[::1] perm,
               const double[:, ::1] B, double[:, ::1] X):
    """Solve (H + beta I) X = B with the flat ULV factor; B, X in the user's order.

    Parameters
    ----------
    data : ndarray of float64
        All per-node blocks (see the module docstring), column-major each.
    m_, k_, off_V, off_T, off_L, off_W : ndarray of intp, shape (n_nodes,)
        Rows of each node's block, reduced rows passed to the parent (``k < m``: there is an
        elimination at the node), offsets of V, T, L, W in ``data`` (root: L is its Cholesky
        factor).
    left, right, parent, lo, hi, perm : ndarray of intp
        The cluster tree (breadth-first ids: parents before children).
    B : ndarray, shape (n, nrhs), C order
    X : ndarray, shape (n, nrhs), C order
        Overwritten with the solution.
    """
    cdef idx nn = m_.shape[0], n = B.shape[0]
    cdef int nrhs = B.shape[1]
    cdef idx t, i, a, p, kmax = 0, total = 0
    cdef int j, m, k, e, ka, row0, info = 0, inc = 1
    cdef double one = 1.0, mone = -1.0
    cdef const double* base = &data[0] if data.shape[0] > 0 else NULL
    off_Z = np.empty(nn, dtype=np.intp)
    cdef Py_ssize_t[::1] oz = off_Z
    for t in range(nn):  # each node's workspace: its m x nrhs block, column-major
        oz[t] = total
        total += m_[t] * nrhs
        if k_[t] > kmax:
            kmax = k_[t]
    cdef double[::1] Zbuf = np.empty(max(total, 1))
    cdef double[::1] wbuf = np.empty(max(kmax * nrhs, 1))
    cdef double* Z = &Zbuf[0]
    cdef double* w = &wbuf[0]
    cdef double* Zt
    cdef double* Zc
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
                    dpotrs(b"L", &m, &nrhs, <double*>(base + off_L[0]), &m, Zt, &m, &info)
                break
            if k == m:  # nothing eliminated: the block passes up unchanged
                continue
            e = m - k
            _apply_q(m, k, nrhs, base + off_V[t], base + off_T[t], Zt, m, w, True)
            # y2 = L^{-1} z2 (kept in place for the backward sweep); z1 -= W^T y2
            if nrhs == 1:
                dtrsv(b"L", b"N", b"N", &e, <double*>(base + off_L[t]), &e, Zt + k, &inc)
                if k > 0:
                    dgemv(b"T", &e, &k, &mone, <double*>(base + off_W[t]), &e, Zt + k, &inc,
                          &one, Zt, &inc)
            else:
                dtrsm(b"L", b"L", b"N", b"N", &e, &nrhs, &one, <double*>(base + off_L[t]), &e,
                      Zt + k, &m)
                if k > 0:
                    dgemm(b"T", b"N", &k, &nrhs, &e, &mone, <double*>(base + off_W[t]), &e,
                          Zt + k, &m, &one, Zt, &m)
        # backward sweep (parents before children): expand the solution
        for t in range(nn):
            m = <int>m_[t]
            k = <int>k_[t]
            Zt = Z + oz[t]
            if t > 0:
                p = parent[t]
                row0 = 0 if left[p] == t else <int>k_[left[p]]
                _copy_rows(k, nrhs, Z + oz[p] + row0, <int>m_[p], Zt, m)
                if k < m:
                    e = m - k
                    # x2 = L^{-T} (y2 - W x1); x = Q [x1; x2]
                    if nrhs == 1:
                        if k > 0:
                            dgemv(b"N", &e, &k, &mone, <double*>(base + off_W[t]), &e, Zt,
                                  &inc, &one, Zt + k, &inc)
                        dtrsv(b"L", b"T", b"N", &e, <double*>(base + off_L[t]), &e, Zt + k,
                              &inc)
                    else:
                        if k > 0:
                            dgemm(b"N", b"N", &e, &nrhs, &k, &mone, <double*>(base + off_W[t]),
                                  &e, Zt, &m, &one, Zt + k, &m)
                        dtrsm(b"L", b"L", b"T", b"N", &e, &nrhs, &one,
                              <double*>(base + off_L[t]), &e, Zt + k, &m)
                    _apply_q(m, k, nrhs, base + off_V[t], base + off_T[t], Zt, m, w, False)
            if left[t] < 0:  # scatter the leaf's rows back to the user's order
                for j in range(nrhs):
                    for i in range(m):
                        X[perm[lo[t] + i], j] = Zt[i + <idx>j * m]
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrs failed (info={info})")
