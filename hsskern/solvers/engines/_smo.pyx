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
once plus v twice.

The two passes of a step are split between the threads of one team that lives across many
steps (an OpenMP fork/join per pass costs more than the pass): each thread owns a contiguous
part of the active variables, and two barriers a step join the parts' candidates. The pair
update is computed by every thread from the same numbers, and the parts are joined in the
order the serial pass visits them, so every thread count gives the same iterates bit for bit.
"""
cimport openmp
from libc.math cimport INFINITY
from libc.string cimport memmove
from cython.parallel cimport prange, parallel, threadid

import numpy as np

cdef extern from *:
    """
    static inline void hsskern_team_barrier(void) {
    #pragma omp barrier
    }
    """
    # an orphaned barrier: it joins the team of the parallel region it is called from
    void _barrier "hsskern_team_barrier"() noexcept nogil

# A step's two passes over a thread's part [lo, hi) of the active variables, in C for
# `omp simd`: each computes its per-variable values into `ob` in one vectorized loop with
# min/max reductions (exact in any order), then finds the last position holding the extreme
# by a scan back, which is what the serial `<=` / `>=` scan picks. Split so, a pass cost
# about half the fused loop whose data-dependent argmin branch kept it scalar. `act` is read
# only when the part is not the identity (contig = 0: after shrinking), in a loop of its own:
# one loop for both was vectorized with gathers even for the identity, at twice the cost.
cdef extern from *:
    """
    static Py_ssize_t hsskern_select_pass(const double *Ki, const double *v, const double *low,
            const double *Kd, const Py_ssize_t *act, int contig, Py_ssize_t lo, Py_ssize_t hi,
            double Gmax, double Kii, double tau, double *ob, double *best, double *gmin) {
        double g = INFINITY, m = INFINITY;
        Py_ssize_t u;
    /* one variable t of the pass, at position u */
    #define HSSKERN_SELECT_ONE(t) { \
            double vl = v[t] + low[t], b = Gmax - vl, a = Kii + Kd[t] - 2.0 * Ki[t], o; \
            a = a > 0 ? a : tau; \
            o = b > 0 ? -(b * b) / a : INFINITY; \
            ob[u] = o; \
            g = vl < g ? vl : g; \
            m = o < m ? o : m; }
        if (contig) {
            #pragma omp simd reduction(min:g, m)
            for (u = lo; u < hi; u++)
                HSSKERN_SELECT_ONE(u)
        } else {
            #pragma omp simd reduction(min:g, m)
            for (u = lo; u < hi; u++)
                HSSKERN_SELECT_ONE(act[u])
        }
    #undef HSSKERN_SELECT_ONE
        *gmin = g;
        *best = m;
        for (u = hi - 1; u >= lo; u--)
            if (ob[u] == m)
                return contig ? u : act[u];
        return -1;
    }

    static Py_ssize_t hsskern_update_pass(const double *Ki, const double *Kj, double *v,
            const double *up, const Py_ssize_t *act, int contig, Py_ssize_t lo, Py_ssize_t hi,
            double ci, double cj, double *ob, double *gmax) {
        double m = -INFINITY;
        Py_ssize_t u;
    #define HSSKERN_UPDATE_ONE(t) { \
            double vt = v[t] - Ki[t] * ci - Kj[t] * cj; \
            v[t] = vt; \
            vt = vt + up[t]; \
            ob[u] = vt; \
            m = vt > m ? vt : m; }
        if (contig) {
            #pragma omp simd reduction(max:m)
            for (u = lo; u < hi; u++)
                HSSKERN_UPDATE_ONE(u)
        } else {
            #pragma omp simd reduction(max:m)
            for (u = lo; u < hi; u++)
                HSSKERN_UPDATE_ONE(act[u])
        }
    #undef HSSKERN_UPDATE_ONE
        *gmax = m;
        for (u = hi - 1; u >= lo; u--)
            if (ob[u] == m)
                return contig ? u : act[u];
        return -1;
    }
    """
    Py_ssize_t _select_pass "hsskern_select_pass"(
        const double *Ki, const double *v, const double *low, const double *Kd,
        const Py_ssize_t *act, int contig, Py_ssize_t lo, Py_ssize_t hi, double Gmax,
        double Kii, double tau, double *ob, double *best, double *gmin) noexcept nogil
    Py_ssize_t _update_pass "hsskern_update_pass"(
        const double *Ki, const double *Kj, double *v, const double *up,
        const Py_ssize_t *act, int contig, Py_ssize_t lo, Py_ssize_t hi, double ci,
        double cj, double *ob, double *gmax) noexcept nogil

# the active variables from which a step's passes are split between two threads: below, the
# two barriers of a step cost more than half a pass saves
cdef enum:
    _PAR_MIN = 500
# Which thread count is faster is measured, not assumed (a core busy with another process
# makes every barrier wait for it): steps run in segments of at most min(q, 1000), each
# timed; both counts are tried on _PROBE_STEPS steps first, then the faster runs, and the
# slower is tried again after _PROBE_FIRST segments, then after twice as many, up to
# _PROBE_MAX.
cdef enum:
    _PROBE_STEPS = 50
    _PROBE_FIRST = 8
    _PROBE_MAX = 64
# why a run of steps stopped, and the state carried between runs (integers, doubles)
cdef enum:
    _CONVERGED, _MAX_ITER, _SHRINK_DUE, _SEGMENT_END
cdef enum:
    _I, _J, _IT, _COUNTER, _REASON
cdef enum:
    _GMAX, _GMIN, _AI, _VI, _AJ, _VJ


def smo_block(double[:, ::1] K, const double[::1] y, double[::1] alpha, double[::1] v,
              double C, double tol, long max_iter, const double[::1] upper=None,
              bint shrinking=True, int threads=0, double[::1] timing=None,
              double shrink_share=1.0):
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
    shrink_share : the first shrink (while every variable is active) is made only if it
        leaves at most this share of the q active: the passes over a subset read every
        vector through its index list and cost more per variable than the contiguous passes
        over all (1: every shrink is made, LIBSVM's rule).
    threads : threads splitting each step's passes; 0: one, or two (if OpenMP allows two)
        while at least 500 variables are active and two are measured faster. The iterates
        do not depend on it.
    timing : (4,) float64 or None
        The thread counts' measured rates and the probe schedule, carried from one call to
        the next (zeros at first): a decomposition's blocks then measure once, not every
        block (under load a probe's two-thread steps cost more than a small block's solve).

    Returns
    -------
    (n_iter, m, M) : iterations and the final max over I_up / min over I_low of v (over all
    q variables)
    """
    cdef Py_ssize_t q = K.shape[0], t, qa, period, keep_max, i = -1
    cdef Py_ssize_t[::1] state = np.zeros(5, dtype=np.intp)
    cdef double[::1] dstate = np.zeros(6)
    cdef double Gmax, Gmin_low, vl, t0
    cdef int nt, fast, team = min(2, openmp.omp_get_max_threads()) if threads == 0 else threads
    cdef bint weighted = upper is not None, unshrunk = False, resume = False, auto, probe
    # seconds per step and active variable, one thread [1] and two [2]; 0 until measured
    cdef double rate[3]
    cdef long stop_at, it0, since = 0, probe_gap = _PROBE_FIRST
    rate[1] = rate[2] = 0.0
    if timing is not None and timing.shape[0] != 4:
        raise ValueError(f"timing has {timing.shape[0]} entries, not 4")
    if timing is not None and timing[3] > 0:
        rate[1], rate[2], since, probe_gap = timing[0], timing[1], <long> timing[2], <long> timing[3]
    if K.shape[1] < q or y.shape[0] != q or alpha.shape[0] != q or v.shape[0] != q:
        raise ValueError(f"a ({K.shape[0]}, {K.shape[1]}) block for {y.shape[0]} labels")
    if threads < 0:
        raise ValueError(f"threads must be >= 0, got {threads}")
    if not 0.0 <= shrink_share <= 1.0:
        raise ValueError(f"shrink_share must be in [0, 1], got {shrink_share}")
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
    cdef Py_ssize_t[::1] changed = np.empty(q, dtype=np.intp)
    # each thread's candidates: (obj, j, min over I_low, alpha_j, v_j) of its part of the
    # second index's pass, (max over I_up, i, alpha_i, v_i) of its part of the update pass
    cdef double[:, ::1] sel = np.empty((max(team, 1), 5))
    cdef double[:, ::1] upd = np.empty((max(team, 1), 4))
    cdef double[::1] ob = np.empty(q)  # the passes' per-variable values
    qa = q
    keep_max = <Py_ssize_t> (shrink_share * q)
    period = q if q < 1000 else 1000
    state[_COUNTER] = period
    with nogil:
        for t in range(q):
            Kd[t] = K[t, t]
            _set_masks(t, y, alpha, upper[t] if weighted else C, up_mask, low_mask)
        Gmax = _first_index(v, up_mask, act, qa, &i)
        state[_I] = i
        dstate[_GMAX], dstate[_AI], dstate[_VI] = Gmax, alpha[i], v[i]
        while True:
            nt, probe = (threads if threads > 0 else 1), False
            auto = threads == 0 and team == 2 and qa >= _PAR_MIN
            if auto:
                if rate[1] == 0.0 or rate[2] == 0.0:
                    nt, probe = (2 if rate[2] == 0.0 else 1), True
                else:
                    fast = 2 if rate[2] <= rate[1] else 1
                    nt = fast
                    since += 1
                    if since >= probe_gap:
                        nt, probe, since = 3 - fast, True, 0
                        probe_gap = min(2 * probe_gap, _PROBE_MAX)
            stop_at = max_iter
            if auto:
                stop_at = min(max_iter, state[_IT] + (_PROBE_STEPS if probe else period))
            it0, t0 = state[_IT], openmp.omp_get_wtime()
            _steps(K, y, alpha, v, Kd, up_mask, low_mask, act, qa, C, upper, weighted, tol,
                   max_iter, stop_at, shrinking, resume, nt, state, dstate, sel, upd, ob)
            if auto and state[_IT] > it0:
                rate[nt] = (openmp.omp_get_wtime() - t0) / ((state[_IT] - it0) * qa)
            resume = False
            if state[_REASON] == _MAX_ITER:
                break
            if state[_REASON] == _SEGMENT_END:  # (i, j) chosen, not yet updated
                resume = True
                continue
            if state[_REASON] == _CONVERGED:
                if qa == q:
                    break
                # the active part has converged: every variable back, the test on all q
                _unshrink(K, y, alpha, v, v0, a0, dya, changed, act, qa)
                qa = q
                Gmax = _first_index(v, up_mask, act, qa, &i)
                state[_I] = i
                dstate[_GMAX], dstate[_AI], dstate[_VI] = Gmax, alpha[i], v[i]
                continue
            # _SHRINK_DUE: (i, j) chosen, not yet updated; they stay active (v_i = Gmax >=
            # Gmin_low and v_j < Gmax), so the step resumes at their update
            state[_COUNTER] = period
            if not unshrunk and dstate[_GMAX] - dstate[_GMIN] <= 10.0 * tol and qa < q:
                unshrunk = True
                _unshrink(K, y, alpha, v, v0, a0, dya, changed, act, qa)
                qa = q
            qa = _shrink(v, up_mask, low_mask, act, qa, dstate[_GMAX], dstate[_GMIN],
                         keep_max)
            resume = True
        Gmax, Gmin_low = dstate[_GMAX], dstate[_GMIN]
        if qa < q:  # stopped by max_iter: the shrunk variables' v made current
            _unshrink(K, y, alpha, v, v0, a0, dya, changed, act, qa)
            qa = q
            Gmax = _first_index(v, up_mask, act, qa, &i)
            Gmin_low = INFINITY
            for t in range(q):
                vl = v[t] + low_mask[t]
                Gmin_low = vl if vl < Gmin_low else Gmin_low
    if timing is not None:
        timing[0], timing[1], timing[2], timing[3] = rate[1], rate[2], since, probe_gap
    return state[_IT], Gmax, Gmin_low


cdef void _steps(const double[:, ::1] K, const double[::1] y, double[::1] alpha,
                 double[::1] v, const double[::1] Kd, double[::1] up_mask,
                 double[::1] low_mask, const Py_ssize_t[::1] act, Py_ssize_t qa, double C,
                 const double[::1] upper, bint weighted, double tol, long max_iter,
                 long stop_at, bint shrinking, bint resume, int nt, Py_ssize_t[::1] state,
                 double[::1] dstate, double[:, ::1] sel, double[:, ::1] upd,
                 double[::1] ob) noexcept nogil:
    # SMO steps on the qa active variables until the gap closes on them, max_iter, the
    # shrinking counter runs out or stop_at steps are done (state[_REASON]). A thread reads
    # and writes v, alpha and the masks of its own part only; what the pair update needs of
    # i and j comes through sel / upd, written before a barrier and read after it, so no
    # thread reads what another writes.
    cdef Py_ssize_t tid, nth, lo, hi, i, j, k, tlo, thi
    cdef long it, counter
    cdef int reason, contig = qa == K.shape[0]  # act is the identity until a shrink
    cdef double Gmax, Gmin_low, best, quad, delta, diff, s
    cdef double ai, aj, vi, vj, nai, naj, ci, cj, Ci, Cj, yi, yj
    cdef double TAU = 1e-12
    cdef bint pending
    with parallel(num_threads=nt):
        tid = threadid()
        nth = openmp.omp_get_num_threads()
        lo = (qa * tid) // nth
        hi = (qa * (tid + 1)) // nth
        i, j, it, counter = state[_I], state[_J], state[_IT], state[_COUNTER]
        Gmax, Gmin_low = dstate[_GMAX], dstate[_GMIN]
        ai, vi, aj, vj = dstate[_AI], dstate[_VI], dstate[_AJ], dstate[_VJ]
        pending = resume
        reason = -1
        Ci = C
        Cj = C
        while True:
            if not pending:
                # second index over I_low by the second-order gain; also min over I_low of -yG
                # -(b^2 / a) for b = Gmax - v_t - low_mask_t > 0 (low_mask: +inf outside
                # I_low), +inf otherwise; and min over I_low of v
                k = _select_pass(&K[i, 0], &v[0], &low_mask[0], &Kd[0], &act[0], contig, lo,
                                 hi, Gmax, Kd[i], TAU, &ob[0], &best, &Gmin_low)
                sel[tid, 0] = best
                sel[tid, 1] = k
                sel[tid, 2] = Gmin_low
                if k >= 0:
                    sel[tid, 3] = alpha[k]
                    sel[tid, 4] = v[k]
                _barrier()
                # the parts in the serial pass's order; ties go to the later one, as `<=` does
                Gmin_low = INFINITY
                j = -1
                best = INFINITY
                for k in range(nth):
                    Gmin_low = sel[k, 2] if sel[k, 2] < Gmin_low else Gmin_low
                    if sel[k, 1] >= 0 and sel[k, 0] <= best:
                        best = sel[k, 0]
                        j = <Py_ssize_t> sel[k, 1]
                        aj = sel[k, 3]
                        vj = sel[k, 4]
                if Gmax - Gmin_low < tol or j < 0:
                    reason = _CONVERGED
                    break
                if it >= max_iter:
                    reason = _MAX_ITER
                    break
                if shrinking:
                    counter = counter - 1
                    if counter == 0:
                        reason = _SHRINK_DUE
                        break
                if it >= stop_at:
                    reason = _SEGMENT_END
                    break
            pending = False
            it = it + 1
            if weighted:
                Ci = upper[i]
                Cj = upper[j]
            yi = y[i]
            yj = y[j]
            # Q_ii + Q_jj -+ 2 Q_ij is K_ii + K_jj - 2 K_ij for either sign pattern
            quad = Kd[i] + Kd[j] - 2.0 * K[i, j]
            if quad <= 0:
                quad = TAU
            # LIBSVM's clipping to each point's own bound; with Ci = Cj (unweighted) the
            # tests reduce to the equal-bound ones (Ci - Cj is exactly 0). G = -y v.
            if yi != yj:
                delta = (yi * vi + yj * vj) / quad
                diff = ai - aj
                nai = ai + delta
                naj = aj + delta
                if diff > 0:
                    if naj < 0:
                        naj = 0.0
                        nai = diff
                else:
                    if nai < 0:
                        nai = 0.0
                        naj = -diff
                if diff > Ci - Cj:
                    if nai > Ci:
                        nai = Ci
                        naj = Ci - diff
                else:
                    if naj > Cj:
                        naj = Cj
                        nai = Cj + diff
            else:
                delta = (-yi * vi + yj * vj) / quad
                s = ai + aj
                nai = ai - delta
                naj = aj + delta
                if s > Ci:
                    if nai > Ci:
                        nai = Ci
                        naj = s - Ci
                else:
                    if naj < 0:
                        naj = 0.0
                        nai = s
                if s > Cj:
                    if naj > Cj:
                        naj = Cj
                        nai = s - Cj
                else:
                    if nai < 0:
                        nai = 0.0
                        naj = s
            ci = yi * (nai - ai)
            cj = yj * (naj - aj)
            # i and j change in the part that owns them
            if lo < hi:
                tlo = act[lo]
                thi = act[hi - 1]
                if tlo <= i <= thi:
                    alpha[i] = nai
                    _set_masks(i, y, alpha, Ci, up_mask, low_mask)
                if tlo <= j <= thi:
                    alpha[j] = naj
                    _set_masks(j, y, alpha, Cj, up_mask, low_mask)
            # update fused with the next first index
            k = _update_pass(&K[i, 0], &K[j, 0], &v[0], &up_mask[0], &act[0], contig, lo, hi,
                             ci, cj, &ob[0], &Gmax)
            upd[tid, 0] = Gmax
            upd[tid, 1] = k
            if k >= 0:
                upd[tid, 2] = alpha[k]
                upd[tid, 3] = v[k]
            _barrier()
            Gmax = -INFINITY
            i = -1
            for k in range(nth):
                if upd[k, 1] >= 0 and upd[k, 0] >= Gmax:
                    Gmax = upd[k, 0]
                    i = <Py_ssize_t> upd[k, 1]
                    ai = upd[k, 2]
                    vi = upd[k, 3]
        if tid == 0:
            state[_I], state[_J], state[_IT], state[_COUNTER] = i, j, it, counter
            state[_REASON] = reason
            dstate[_GMAX], dstate[_GMIN] = Gmax, Gmin_low
            dstate[_AI], dstate[_VI], dstate[_AJ], dstate[_VJ] = ai, vi, aj, vj


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
                        double m_up, double m_low, Py_ssize_t keep_max) noexcept nogil:
    # keeps the active variables that could still be in a violating pair (LIBSVM's
    # be_shrunk, in -y G): free ones, and bounded ones on the violating side of the other
    # set's extreme; the order of ``act`` is kept. While all are active, a shrink that
    # would keep more than ``keep_max`` is not made: the passes over a subset gather every
    # read through ``act``, and cost more per variable than the contiguous ones over all.
    cdef Py_ssize_t u, t, k = 0
    if qa == v.shape[0]:
        for t in range(qa):
            k += _keeps(t, v, up_mask, low_mask, m_up, m_low)
        if k > keep_max:
            return qa
        k = 0
    for u in range(qa):
        t = act[u]
        if _keeps(t, v, up_mask, low_mask, m_up, m_low):
            act[k] = t
            k += 1
    return k


cdef inline bint _keeps(Py_ssize_t t, const double[::1] v, const double[::1] up_mask,
                        const double[::1] low_mask, double m_up, double m_low) noexcept nogil:
    cdef bint in_up = up_mask[t] == 0.0, in_low = low_mask[t] == 0.0
    if in_up and not in_low and v[t] < m_low:
        return False
    if in_low and not in_up and v[t] > m_up:
        return False
    return True


cdef void _unshrink(const double[:, ::1] K, const double[::1] y, const double[::1] alpha,
                    double[::1] v, const double[::1] v0, const double[::1] a0,
                    double[::1] dya, Py_ssize_t[::1] changed, Py_ssize_t[::1] act,
                    Py_ssize_t qa) noexcept nogil:
    # v of the shrunk variables from v at entry and every change since, v_t = v0_t -
    # sum_s K_ts y_s (alpha_s - a0_s) over the changed s only (the terms of the others are
    # exact zeros, so the sums are the full ones bit for bit); then all active again.
    # ``changed`` (q entries of scratch) lists them.
    cdef Py_ssize_t q = v.shape[0], t, s, c, u = 0, nc = 0
    cdef double acc
    for s in range(q):
        if alpha[s] != a0[s]:
            dya[nc] = y[s] * (alpha[s] - a0[s])
            changed[nc] = s
            nc += 1
    for t in range(q):
        if u < qa and act[u] == t:
            u += 1
            continue
        acc = 0.0
        for c in range(nc):
            acc = acc + K[t, changed[c]] * dya[c]
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
    into the working-set block where a point that left it was (``solve_exact``'s
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


def move_slots(double[:, ::1] B, Py_ssize_t q, Py_ssize_t width,
               const Py_ssize_t[::1] dst, const Py_ssize_t[::1] src):
    """Slots ``src`` (all >= q) of the working-set block move to slots ``dst`` (all < q),
    in place and with no temporary: their rows (the first ``width`` entries, the columns the
    last block held), then their columns in rows [0, q). NumPy's ``B[dst] = B[src]`` and
    ``B[:q, dst] = B[:q, src]`` build gathered copies of both first, fresh memory of the
    block's size that cost more than evaluating the entries afresh (see the design notes)."""
    cdef Py_ssize_t m = dst.shape[0], a, b
    if src.shape[0] != m:
        raise ValueError(f"{m} destinations for {src.shape[0]} sources")
    if width > B.shape[1] or q > B.shape[0]:
        raise ValueError(f"width {width} or q {q} past the block's {B.shape[0]} x {B.shape[1]}")
    for a in range(m):
        if not (0 <= dst[a] < q <= src[a] < B.shape[0]):
            raise ValueError("every destination must be below q and every source at or past it")
    with nogil:
        for a in range(m):
            memmove(&B[dst[a], 0], &B[src[a], 0], width * sizeof(double))
    for a in prange(q, nogil=True, schedule="static"):
        for b in range(m):
            B[a, dst[b]] = B[a, src[b]]

