# cython: language_level=3
"""SMO on one working set of the SVM dual, with the rest of the points held fixed.

The dual is min 1/2 a^T Q a - e^T a, 0 <= a <= C, y^T a = 0, with Q_ij = y_i y_j K_ij (with
per-point weights the box is 0 <= a_i <= C_i, LIBSVM's weighted C, and the pair update clips
to each point's own bound as LIBSVM's does with its get_C(i)). On a
working set W the points outside stay fixed, so the subproblem is the same QP on Q[W, W] with
a linear term: its gradient G_W = (Q a - e)_W already includes what the fixed points
contribute, and the caller passes it in (as v = -y G = y - K(y o a), what LIBSVM's selection
and stopping rules compare). Pairs are chosen by the second-order rule of Fan,
Chen and Lin (JMLR 2005, the rule LIBSVM uses) and updated analytically; the pass that
updates v also picks the next pair's first index, so each iteration reads two kernel rows
once plus v twice. Serial on purpose: a step is two short passes over the working set, and
an OpenMP fork/join per pass costs more than the passes.
"""
from libc.math cimport INFINITY
from libc.string cimport memmove
from cython.parallel cimport prange

import numpy as np


def smo_block(double[:, ::1] K, const double[::1] y, double[::1] alpha, double[::1] v,
              double C, double tol, long max_iter, const double[::1] upper=None,
              bint shrinking=True):
    """Solve the working-set QP in place.

    Parameters
    ----------
    K : (q, s) float64, C-contiguous, s >= q
        The kernel block k(x_i, x_j) on the working set (symmetric) in its first q columns
        (the rows of a buffer with a longer row stride, as the decomposition keeps it);
        Q = diag(y) K diag(y) is never formed.
    y : (q,) labels in {-1, +1}
    alpha : (q,) feasible start (0 <= alpha <= C); overwritten with the solution
    v : (q,) -y G, G the gradient of the full dual at the working set; kept current
    C : box bound (ignored when ``upper`` is given)
    tol : stop when max_{I_up} v - min_{I_low} v < tol
    max_iter : most pair updates
    upper : (q,) per-point upper bounds C_i >= 0, or None for C everywhere. Only the pair
        update and the set masks read it, never the two passes over q, so a weighted step
        costs what an unweighted one does.
    shrinking : LIBSVM's shrinking: every min(q, 1000) steps the variables at a bound that
        cannot be in a violating pair (one only in I_low above max_{I_up} v, one only in
        I_up below min_{I_low} v) leave the passes; their v is rebuilt from the block when
        the rest has converged (and once at 10 tol, as LIBSVM unshrinks), and the stopping
        test is then repeated on all q. At large C most of a working set sits at a bound
        and each step costs the active part only.

    Returns
    -------
    (n_iter, m, M) : iterations and the final max over I_up / min over I_low of v (over all
    q variables)
    """
    cdef Py_ssize_t q = K.shape[0], t, u, i = -1, j, i_next, qa, period
    cdef long it = 0, counter
    cdef double Gmax, Gmin_low, vt, vl, b, a, best, obj, quad, delta, diff, s
    cdef double ai, aj, Kii, Gi, Gj, ci, cj, Ci = C, Cj = C
    cdef double TAU = 1e-12
    cdef bint weighted = upper is not None, unshrunk = False
    if K.shape[1] < q or y.shape[0] != q or alpha.shape[0] != q or v.shape[0] != q:
        raise ValueError(f"a ({K.shape[0]}, {K.shape[1]}) block for {y.shape[0]} labels")
    if q < 2:
        return 0, 0.0, 0.0
    # The passes work on v = -y G, whose update -(y_i dai) K_i. - (y_j daj) K_j. needs no
    # label per point, and on K itself (y_i y_t Q_it = K_it); the diagonal is read
    # contiguously (K[t, t] is a cache miss per point) and I_up / I_low are additive masks
    # (0 inside, -inf / +inf outside), so the passes have no branches on set membership.
    # Per step they stream two kernel rows and four vectors over the active variables.
    cdef double[::1] Kd = np.empty(q)
    cdef double[::1] up_mask = np.empty(q)
    cdef double[::1] low_mask = np.empty(q)
    # the active variables, ascending (the passes read kernel rows in order); v and alpha
    # at entry rebuild the v of the shrunk ones
    cdef Py_ssize_t[::1] act = np.arange(q, dtype=np.intp)
    cdef double[::1] v0 = np.array(v, copy=True)
    cdef double[::1] a0 = np.array(alpha, copy=True)
    cdef double[::1] dya = np.empty(q)
    qa = q
    period = q if q < 1000 else 1000
    counter = period
    with nogil:
        for t in range(q):
            Kd[t] = K[t, t]
            _set_masks(t, y, alpha, upper[t] if weighted else C, up_mask, low_mask)
        Gmax = _first_index(v, up_mask, act, qa, &i)
        while True:
            # second index over I_low by the second-order gain; also min over I_low of -y G
            Gmin_low = INFINITY
            j = -1
            best = INFINITY
            Kii = Kd[i]
            for u in range(qa):
                t = act[u]
                vl = v[t] + low_mask[t]  # +inf outside I_low
                Gmin_low = vl if vl < Gmin_low else Gmin_low
                # computed for every t and masked after: a branch on b > 0 follows set
                # membership, which is random in t, and mispredicted it cost more than this
                b = Gmax - vl
                a = Kii + Kd[t] - 2.0 * K[i, t]
                a = a if a > 0 else TAU
                obj = -(b * b) / a
                obj = obj if b > 0 else INFINITY
                if obj <= best:
                    best = obj
                    j = t
            if Gmax - Gmin_low < tol or j < 0:
                if qa == q:
                    break
                # the active part has converged: every variable back, the test on all q
                _unshrink(K, y, alpha, v, v0, a0, dya, act, qa)
                qa = q
                Gmax = _first_index(v, up_mask, act, qa, &i)
                continue
            if it >= max_iter:
                break
            if shrinking:
                counter -= 1
                if counter == 0:
                    counter = period
                    if not unshrunk and Gmax - Gmin_low <= 10.0 * tol and qa < q:
                        unshrunk = True
                        _unshrink(K, y, alpha, v, v0, a0, dya, act, qa)
                        qa = q
                    # i and j stay: v_i = Gmax >= Gmin_low, and v_j < Gmax
                    qa = _shrink(v, up_mask, low_mask, act, qa, Gmax, Gmin_low)
            it += 1
            if weighted:
                Ci = upper[i]
                Cj = upper[j]
            ai = alpha[i]
            aj = alpha[j]
            Gi = -y[i] * v[i]
            Gj = -y[j] * v[j]
            # Q_ii + Q_jj -+ 2 Q_ij is K_ii + K_jj - 2 K_ij for either sign pattern
            quad = Kd[i] + Kd[j] - 2.0 * K[i, j]
            if quad <= 0:
                quad = TAU
            # LIBSVM's clipping to each point's own bound; with Ci = Cj (unweighted) the
            # tests reduce to the equal-bound ones (Ci - Cj is exactly 0)
            if y[i] != y[j]:
                delta = (-Gi - Gj) / quad
                diff = ai - aj
                alpha[i] = ai + delta
                alpha[j] = aj + delta
                if diff > 0:
                    if alpha[j] < 0:
                        alpha[j] = 0.0
                        alpha[i] = diff
                else:
                    if alpha[i] < 0:
                        alpha[i] = 0.0
                        alpha[j] = -diff
                if diff > Ci - Cj:
                    if alpha[i] > Ci:
                        alpha[i] = Ci
                        alpha[j] = Ci - diff
                else:
                    if alpha[j] > Cj:
                        alpha[j] = Cj
                        alpha[i] = Cj + diff
            else:
                delta = (Gi - Gj) / quad
                s = ai + aj
                alpha[i] = ai - delta
                alpha[j] = aj + delta
                if s > Ci:
                    if alpha[i] > Ci:
                        alpha[i] = Ci
                        alpha[j] = s - Ci
                else:
                    if alpha[j] < 0:
                        alpha[j] = 0.0
                        alpha[i] = s
                if s > Cj:
                    if alpha[j] > Cj:
                        alpha[j] = Cj
                        alpha[i] = s - Cj
                else:
                    if alpha[i] < 0:
                        alpha[i] = 0.0
                        alpha[j] = s
            ci = y[i] * (alpha[i] - ai)
            cj = y[j] * (alpha[j] - aj)
            _set_masks(i, y, alpha, Ci, up_mask, low_mask)
            _set_masks(j, y, alpha, Cj, up_mask, low_mask)
            # update fused with the next first index
            Gmax = -INFINITY
            i_next = -1
            for u in range(qa):
                t = act[u]
                vt = v[t] - K[i, t] * ci - K[j, t] * cj
                v[t] = vt
                vt = vt + up_mask[t]
                if vt >= Gmax:
                    Gmax = vt
                    i_next = t
            i = i_next
        if qa < q:  # stopped by max_iter: the shrunk variables' v made current
            _unshrink(K, y, alpha, v, v0, a0, dya, act, qa)
            qa = q
            Gmax = _first_index(v, up_mask, act, qa, &i)
            Gmin_low = INFINITY
            for t in range(q):
                vl = v[t] + low_mask[t]
                Gmin_low = vl if vl < Gmin_low else Gmin_low
    return it, Gmax, Gmin_low


cdef inline double _first_index(const double[::1] v, const double[::1] up_mask,
                                const Py_ssize_t[::1] act, Py_ssize_t qa,
                                Py_ssize_t* i) noexcept nogil:
    # the most violating active variable of I_up, and its v
    cdef Py_ssize_t u, t
    cdef double Gmax = -INFINITY, vt
    for u in range(qa):
        t = act[u]
        vt = v[t] + up_mask[t]
        if vt >= Gmax:
            Gmax = vt
            i[0] = t
    return Gmax


cdef Py_ssize_t _shrink(const double[::1] v, const double[::1] up_mask,
                        const double[::1] low_mask, Py_ssize_t[::1] act, Py_ssize_t qa,
                        double m_up, double m_low) noexcept nogil:
    # keeps the active variables that could still be in a violating pair (LIBSVM's
    # be_shrunk, in -y G): free ones, and bounded ones on the violating side of the other
    # set's extreme; the order of ``act`` is kept
    cdef Py_ssize_t u, t, k = 0
    cdef bint in_up, in_low
    for u in range(qa):
        t = act[u]
        in_up = up_mask[t] == 0.0
        in_low = low_mask[t] == 0.0
        if in_up and not in_low and v[t] < m_low:
            continue
        if in_low and not in_up and v[t] > m_up:
            continue
        act[k] = t
        k += 1
    return k


cdef void _unshrink(const double[:, ::1] K, const double[::1] y, const double[::1] alpha,
                    double[::1] v, const double[::1] v0, const double[::1] a0,
                    double[::1] dya, Py_ssize_t[::1] act, Py_ssize_t qa) noexcept nogil:
    # v of the shrunk variables from v at entry and every change since, v_t = v0_t -
    # sum_s K_ts y_s (alpha_s - a0_s) (one pass over their rows); then all active again
    cdef Py_ssize_t q = v.shape[0], t, s, u = 0, nc = 0
    cdef double acc
    for s in range(q):
        dya[s] = y[s] * (alpha[s] - a0[s])
    for t in range(q):
        if u < qa and act[u] == t:
            u += 1
            continue
        acc = 0.0
        for s in range(q):
            acc = acc + K[t, s] * dya[s]
        v[t] = v0[t] - acc
    for t in range(q):
        act[t] = t


cdef inline void _set_masks(Py_ssize_t t, const double[::1] y, double[::1] alpha, double C,
                            double[::1] up_mask, double[::1] low_mask) noexcept nogil:
    # I_up: y alpha can grow (y = +1 below C, y = -1 above 0); I_low: it can shrink
    if y[t] > 0:
        up_mask[t] = 0.0 if alpha[t] < C else -INFINITY
        low_mask[t] = 0.0 if alpha[t] > 0 else INFINITY
    else:
        up_mask[t] = 0.0 if alpha[t] > 0 else -INFINITY
        low_mask[t] = 0.0 if alpha[t] < C else INFINITY


def place_cross(double[:, ::1] B, const Py_ssize_t[::1] P, const Py_ssize_t[::1] Q,
                const double[:, ::1] R):
    """``B[P[a], Q[b]] = B[Q[b], P[a]] = R[a, b]``, in place: a point's kernel row written
    into the working-set block where a point that left it was (``refine``'s
    ``_working_block``), mirrored into the kept points' rows, instead of moving every kept
    entry to close the gap. Rows P are distinct, as are rows Q (R symmetric where P meets
    Q). Threads split the rows written; the mirrored pass reads R eight columns at a time
    so each of its cache lines serves eight rows."""
    cdef Py_ssize_t k = P.shape[0], m = Q.shape[0], a, b, bb, hi
    if R.shape[0] != k or R.shape[1] != m:
        raise ValueError(f"R of shape {R.shape[0]} x {R.shape[1]} for {k} x {m} positions")
    if k == 0 or m == 0:
        return
    for a in prange(k, nogil=True, schedule="static"):
        for b in range(m):
            B[P[a], Q[b]] = R[a, b]
    for bb in prange(0, m, 8, nogil=True, schedule="static"):
        hi = bb + 8 if bb + 8 < m else m
        for a in range(k):
            for b in range(bb, hi):
                B[Q[b], P[a]] = R[a, b]


def expand_rows(double[::1] buf, Py_ssize_t q, Py_ssize_t stride):
    """The q x q block stored with row stride q at the start of ``buf``, re-laid with row
    stride ``stride`` >= q, in place: from the last row, whose new place never holds a row
    still to be moved."""
    cdef Py_ssize_t a
    if stride < q or q * stride > buf.shape[0]:
        raise ValueError(f"a {q} x {q} block with stride {stride} does not fit {buf.shape[0]}")
    with nogil:
        for a in range(q - 1, 0, -1):
            memmove(&buf[a * stride], &buf[a * q], q * sizeof(double))
