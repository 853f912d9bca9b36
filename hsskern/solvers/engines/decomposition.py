"""Exact-kernel SVM by decomposition, started from an approximate (or a neighbouring C's) solution.

:class:`Decomposition` holds one problem and its state; :class:`DecompositionOptions` its
tunables.

The dual ADMM on an HSS approximation finds the *shape* of the solution cheaply, but the
approximation's error moves the decision surface and, at large C, the ADMM converges slowly.
The exact dual
``min 1/2 a^T Q a - e^T a, 0 <= a <= C, y^T a = 0`` (Q_ij = y_i y_j k(x_i, x_j)) is recovered
here without ever holding an n x n array, by Osuna-style decomposition:

* every point keeps its alpha (the start made feasible), and the exact decision values
  f = K (y o alpha) at all n points are kept current;
* a round picks a working set W: the free support vectors (0 < alpha < C, the ones still
  moving) and the worst KKT violators of each side (LIBSVM's I_up / I_low), solves the QP on
  W with the rest fixed by SMO on the dense block K[W, W] (:mod:`hsskern.solvers.engines._smo`) to a
  tenth of the current gap, and updates f: the rows in W from the block, the others by an
  (n - |W|) x |changed| kernel product;
* it stops when the largest violation over all n points, max_{I_up} -y G - min_{I_low} -y G
  (LIBSVM's own stopping rule), is below ``tol``: the result is then LIBSVM's solution to
  LIBSVM's tolerance;
* bounded points far past the margin are shrunk: out of the rounds, their f brought up to
  date only at syncs (every few rounds, and always before the gap over all points is read).

At large C the working set is nearly all free and SMO's pair steps converge slowly on the
ill-conditioned kernel block; there a Newton step on the free face (one Cholesky of the block,
the box kept by fixing the points that would leave it) puts the free points on their margin
at once, and SMO only finishes what changed. It is taken only once SMO has spent as long as
the step is estimated to cost, so it can at most double a round's time.

Bounded support vectors (alpha = C) never need to enter W unless they violate, so a solution
with 30,000 support vectors costs working sets of the size of its free set. Each round costs
one |W| x |W| kernel block (its upper triangle, mirrored), the SMO and one
(n - |W|) x |changed| product: memory 8 |W|^2 bytes in one buffer reused by every round and
every C of a path (twice that during a Newton step, whose factor is a copy of the free part
of the block).
Along a C path the exact solution at C scaled by any s in [0, C'/C] is feasible at C' and
its decision values scale with it, so the next C starts without a single kernel product
(:func:`continuation_start`).

With per-point weights (LIBSVM's weighted C) the box is 0 <= alpha_i <= C w_i: the start,
the index sets, SMO's pair clipping, the Newton step's box and the bias rule all read each
point's own bound, and a scaled solution stays feasible because every bound scales with C.
Without weights the bound stays the scalar C, so that path does exactly what it did before
weights existed.

The same decomposition solves any dual of LIBSVM's form ``min 1/2 a^T Q a + p^T a``: a linear
term ``p`` (default -e, the classifier) and an ``index`` from the variables to the points
(default the identity). epsilon-SVR is the 2n-variable case: variable t sits on point
``index[t] = t mod n`` with y_t = +1 (alpha) or -1 (alpha*), so the kernel block of W is
K[index[W], index[W]], the decision values f = K (alpha - alpha*) stay on the n points, and
SMO and the Newton step, which only read K_W, y_W and v = -y G = -f[index] - y p, run unchanged.
"""
import time
import weakref
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ...kernels.operator import (KernelOperator, StoredKernelOperator, add_symmetric_rows,
                                distinct_rows)
from ...kernels.sparse_rows import StoredSparseRowsKernelOperator, rows_operator
from ...options import DecompositionOptions
from ...utils._cpu import load
from ...utils._memory import available_memory
from ...utils._threads import one_blas_thread
from .admm import bound_eps, _bias, kkt_sets
from ...utils.validation import check_weights

# the widest build of the block SMO this CPU runs (setup.py, utils/_cpu.py): its passes run
# 8 wide at x86-64-v4, with the baseline's iterates bit for bit
_smo = load("hsskern.solvers.engines._smo")
move_slots, place_cross, smo_block = _smo.move_slots, _smo.place_cross, _smo.smo_block

__all__ = ["Decomposition", "DecompositionOptions", "ExactResult", "RoundState",
           "LocalProducts", "feasible_start", "continuation_start"]


@dataclass
class ExactResult:
    """Outcome of :meth:`Decomposition.solve` for one label vector.

    Attributes
    ----------
    alpha : ndarray of shape (n,)
        The dual variables (feasible whether converged or not).
    dual_coef : ndarray of shape (n,)
        ``y_i alpha_i``.
    bias : float
    decision : ndarray of shape (n,)
        Exact decision values ``K (y o alpha) + bias`` at the training points.
    converged : bool
        The KKT gap over all n points is below ``tol``: the exact SVM to LIBSVM's tolerance.
    gap : float
        The final KKT gap ``max_{I_up} -y G - min_{I_low} -y G``.
    rounds : int
    ws_sizes : list of int
        |W| per round.
    smo_iters : list of int
        SMO pair updates per round.
    newton_steps : int
        Working sets on which a Newton step on the free face was kept.
    syncs : int
        Times the shrunk points' decision values were brought up to date (0 without
        shrinking).
    time : float
        Seconds.
    skipped : str or None
        Why the exact solve did not run (the caller keeps its own solution then).
    stopped : str or None
        Why it stopped before converging when that was asked for: ``"max_time"`` or
        ``"callback"`` (None otherwise).
    timings : dict
        Seconds by phase: ``start`` (the first decision values), ``select``, ``block``
        (the working sets' kernel blocks), ``smo``, ``newton``, ``update``, ``sync`` (the
        shrunk points').
    kernel_entries : dict
        Kernel entries evaluated by phase (``start``, ``block``, ``update``, ``sync``) and
        entries of earlier blocks reused (``block_reused``): what the decomposition cost
        against, e.g., the n x n_SV of one exact decision-value pass.
    """

    alpha: np.ndarray
    dual_coef: np.ndarray
    bias: float
    decision: object
    converged: bool
    gap: float = np.inf
    rounds: int = 0
    ws_sizes: list = field(default_factory=list)
    smo_iters: list = field(default_factory=list)
    newton_steps: int = 0
    syncs: int = 0
    time: float = 0.0
    skipped: object = None
    stopped: object = None
    timings: dict = field(default_factory=dict)
    kernel_entries: dict = field(default_factory=dict)


def feasible_start(alpha, y, C):
    """``alpha`` clipped to [0, C] with y^T alpha = 0 restored by shrinking the heavier side.

    ``C`` is a scalar or one bound per point (shrinking keeps every point in its box).

    An imbalance at rounding level is left alone, values within a relative 1e-12 of C are set
    to C and those below 1e-12 C to 0: shrinking an exact solution's side by 1 - 1e-16 (or
    scaling it by C / C_prev) would put its bounded alphas an ulp below C, where they count as
    free and would swell the first working set with points that are really bounded.
    """
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, C)
    pos, neg = y > 0, y < 0
    sp, sn = a[pos].sum(), a[neg].sum()
    if abs(sp - sn) > 1e-12 * max(sp, sn):
        if sp > sn:
            a[pos] *= sn / sp
        else:
            a[neg] *= sp / sn
    return _snap_to_bounds(a, C)


def continuation_start(rr, s_max, p=None, ray=True):
    """The next C's start from an exact solution ``rr`` of a smaller C: ``(s, alpha, f)``.

    Every s alpha with 0 <= s <= s_max = C' / C is feasible at C' (the box grows, y^T alpha
    = 0 scales) and its decision values are s f, no kernel product. With ``ray``, s is the
    minimiser of the dual along that ray, 1/2 s^2 alpha^T Q alpha + s p^T alpha, a parabola
    (alpha^T Q alpha = dual_coef^T f): at the solution of C it is s >= 1, = 1 with no
    bounded alpha, where s = C'/C would throw a solution that stopped moving away (SVR at
    large C). Without it s = C'/C, which keeps every bounded alpha at its new bound: the
    classifier's choice, since a lower objective with the bounded alphas moved inside the
    box made them free and swelled the working sets (slower; the design notes say by how much).
    ``p`` is the dual's linear term (None: -e, the classifier).
    """
    if not ray:
        return s_max, s_max * rr.alpha, s_max * (rr.decision - rr.bias)
    quad = float(rr.dual_coef @ (rr.decision - rr.bias))
    lin = -float(rr.alpha.sum()) if p is None else float(p @ rr.alpha)
    if quad <= 0:
        s = s_max if lin < 0 else 0.0
    else:
        s = float(np.clip(-lin / quad, 0.0, s_max))
    return s, s * rr.alpha, s * (rr.decision - rr.bias)


def _snap_to_bounds(a, C):
    """``a`` (in place) with values within a relative 1e-12 of C set to C and those below
    1e-12 C to 0 (an approximate start's or an SMO pair step's ~1e-16: not a support vector)."""
    top = a >= C * (1 - 1e-12)
    a[top] = C if np.ndim(C) == 0 else C[top]
    a[a <= 1e-12 * C] = 0.0
    return a


def _select(v, up, low, m, M, free, q, least):
    """The working set: the free points and the worst violators of each side, at most ``q``.

    ``v = -y G = y - f``; a point of I_up violates against M, the least v of I_low, when its v
    exceeds M, a point of I_low against m, the largest v of I_up, when below m.
    Both sides get half of what the free set leaves (at least one point each, so the most
    violating pair is always in W and every round makes progress); when the free set leaves
    fewer than ``least`` places, the most violating q / 2 of each side are taken instead.
    """
    score_up = np.where(up, v - M, -np.inf)
    score_low = np.where(low, m - v, -np.inf)
    F = np.flatnonzero(free)
    budget = q - F.size
    if budget >= max(2, least):
        ks = (budget // 2, budget - budget // 2)
        score_up[free] = score_low[free] = -np.inf
        picks = [F]
    else:
        ks = (max(1, q // 2), max(1, q // 2))
        picks = []
    for score, k in zip((score_up, score_low), ks):
        cand = np.flatnonzero(score > 0)
        if cand.size > k:
            cand = cand[np.argpartition(-score[cand], k - 1)[:k]]
        picks.append(cand)
    return np.unique(np.concatenate(picks))


def _newton_free(KW, yW, aW, vW, C, ridge, max_fixed=1000):
    """Newton on the free face of the working-set QP, with the box by an active-set loop.

    With ``e = y o d`` (d the step in alpha) the step that puts every free point of W on one
    margin solves ``(K_FF + ridge I) e = v_F - b 1`` with ``1^T e = 0``. Points whose step
    leaves the box are fixed at their bound and the rest re-solved with the same Cholesky
    factor (one solve per fixed point, a small dense system for the multipliers), until no
    point leaves the box or more than ``max_fixed`` are fixed. Fixing a batch of points at
    their bounds can make that face's minimum worse than the current point; then the best of
    two feasible fallbacks is taken: the first (unfixed) Newton step projected onto the box
    and ``1^T e = 0`` at halving lengths (a projected-Newton arc), and the face step scaled
    back to its best length. A step is kept only if the exact objective of the working set
    decreases. ``aW`` and ``vW`` are updated in place. ``C`` is the scalar bound or the
    working set's per-point bounds.
    Returns ``(fixed, t)``: the points fixed by the face step and 1.0, or -1 and the
    fallback's length; ``(-1, 0.0)`` if nothing was kept.
    """
    up, low = kkt_sets(yW, aW, C)
    F = np.flatnonzero(up & low)
    if F.size < 2:
        return -1, 0.0
    KF = KW[np.ix_(F, F)]
    dg = np.diag_indices_from(KF)
    KF[dg] += ridge * KF[dg].mean()
    try:  # KF.T: the same symmetric matrix in Fortran order, factored in place, not copied
        fac = cho_factor(KF.T, lower=True, overwrite_a=True, check_finite=False)
    except LinAlgError:
        return -1, 0.0
    del KF
    # the factorization above runs on the BLAS threads the caller allows (one large call:
    # a busy core costs it at most its share); the solves below are many small calls, and
    # OpenBLAS's spinning second thread made them many times slower whenever the other core
    # was busy
    with one_blas_thread():
        return _newton_face(fac, F, KW, yW, aW, vW, C, max_fixed)


def _newton_face(fac, F, KW, yW, aW, vW, C, max_fixed):
    # _newton_free's step on the face F, given the Cholesky factor of K_FF + ridge I
    CF, C_scale = (C, C) if np.ndim(C) == 0 else (C[F], C[F].max())
    yF, aF, vF = yW[F], aW[F], vW[F]
    lo = np.where(yF > 0, -aF, aF - CF)  # e within [lo, hi] keeps alpha in [0, C]
    hi = np.where(yF > 0, CF - aF, aF)
    # Z = A^-1 [v, 1, E_B], one column more per fixed point
    Z = cho_solve(fac, np.column_stack([vF, np.ones(F.size)]), check_finite=False)
    slack = bound_eps * CF  # leaving the box by less is at the bound, as in kkt_sets
    B = np.empty(0, dtype=np.intp)  # fixed points (positions in F)
    cB = np.empty(0)
    e0 = face = None
    while True:
        # min 1/2 e^T A e - v^T e  s.t.  1^T e = 0, e_B = c_B:  e = A^-1 (v - b 1 + E_B mu)
        k = B.size
        # conditions: 1^T e = 0 and e_B = c_B, unknowns (b, mu)
        M = np.empty((k + 1, k + 1))
        M[0, 0] = -Z[:, 1].sum()
        M[0, 1:] = Z[:, 2:].sum(axis=0)
        M[1:, 0] = -Z[B, 1]
        M[1:, 1:] = Z[B][:, 2:]
        rhs = np.concatenate([[-Z[:, 0].sum()], cB - Z[B, 0]])
        try:
            sol = np.linalg.solve(M, rhs)
        except np.linalg.LinAlgError:
            break
        e = Z[:, 0] - sol[0] * Z[:, 1] + Z[:, 2:] @ sol[1:]
        e[B] = cB
        if e0 is None:
            e0 = e.copy()
        out = np.flatnonzero((e < lo - slack) | (e > hi + slack))
        if not out.size:
            # M grows ill-conditioned with the fixed set (A^-1 has norm up to 1 / ridge): a
            # solve that does not meet its own constraints is dropped
            face = _zero_sum(np.clip(e, lo, hi), lo, hi, B, 1e-8 * C_scale)
            break
        if k + out.size > max_fixed:
            break
        B = np.concatenate([B, out])
        cB = np.concatenate([cB, np.clip(e[out], lo[out], hi[out])])
        E = np.zeros((F.size, out.size))
        E[out, np.arange(out.size)] = 1.0
        Z = np.column_stack([Z, cho_solve(fac, E, check_finite=False)])
    del Z
    eW = np.zeros(aW.size)

    def decrease(e):  # the working set's objective change and K_WF e
        eW[F] = e
        Ke = KW @ eW  # not KW[:, F] @ e: that would copy the block
        return -vF @ e + 0.5 * e @ Ke[F], Ke

    best = (0.0, None, None, -1, 0.0)  # decrease, e, K e, fixed, length
    if face is not None:
        dec, Ke = decrease(face)
        if dec < 0:
            best = (dec, face, Ke, int(B.size), 1.0)
        elif vF @ face > 0:  # scaled back to the minimum along it: t = v^T e / e^T K e
            t = (vF @ face) / (2.0 * (dec + vF @ face))
            best = (-0.5 * t * (vF @ face), t * face, t * Ke, -1, t)
    if best[3] < 0 and e0 is not None:
        t, last, none = 1.0, np.inf, np.empty(0, dtype=np.intp)
        for _ in range(8):  # halving while the objective along the arc still improves
            e = _zero_sum(_project_zero_sum(t * e0, lo, hi), lo, hi, none, 1e-8 * C_scale)
            if e is None:
                break
            dec, Ke = decrease(e)
            if dec < best[0]:
                best = (dec, e, Ke, -1, t)
            if last < 0 and dec >= last:
                break
            last, t = dec, 0.5 * t
    dec, e, Ke, fixed, t = best
    if e is None:
        return -1, 0.0
    a = np.clip(aF + yF * e, 0.0, CF)
    # a point the step puts at a bound up to rounding is at it (else ~1e-16 C would make it a
    # support vector in name only, or leave it "free" at C)
    a[a <= 1e-12 * CF] = 0.0
    top = a >= CF * (1 - 1e-12)
    a[top] = CF if np.ndim(CF) == 0 else CF[top]
    aW[F] = a
    vW -= Ke
    return fixed, t


def _zero_sum(e, lo, hi, keep, tol):
    """``e`` (in [lo, hi]) with a rounding-level ``sum(e)`` moved to the point with the most
    room outside ``keep``; None if the sum is more than ``tol`` or no point has the room."""
    r = e.sum()
    if abs(r) > tol:
        return None
    room = np.where(r > 0, e - lo, hi - e)
    room[keep] = 0.0
    t = int(np.argmax(room))
    if room[t] < abs(r):
        return None
    e[t] -= r
    return e


def _project_zero_sum(x, lo, hi):
    """The Euclidean projection of ``x`` onto ``{lo <= e <= hi, sum(e) = 0}`` (lo <= 0 <= hi):
    ``clip(x - lam, lo, hi)`` with the shift ``lam`` found by bisection, then exactly on the
    points it leaves strictly inside."""
    a, b = float(np.min(x - hi)), float(np.max(x - lo))  # sums >= 0 at a, <= 0 at b
    for _ in range(100):
        lam = 0.5 * (a + b)
        if np.clip(x - lam, lo, hi).sum() > 0:
            a = lam
        else:
            b = lam
        if b - a <= 1e-15 * max(1.0, abs(lam)):
            break
    e = np.clip(x - lam, lo, hi)
    inside = (x - lam > lo) & (x - lam < hi)
    if inside.any():
        e[inside] -= e.sum() / inside.sum()
        np.clip(e, lo, hi, out=e)
    return e


def _neg_grad(f, y, p, index):
    """-y G = -y (Q a + p) = -f[index] - y p, per variable (f on the points)."""
    fv = f if index is None else f[index]
    return -fv - y * p if p is not None else y - fv


class LocalProducts:
    """Products of the exact kernel between the training points and a few of them, here.

    The decomposition touches the n training points only through
    ``add(f, cols, c, skip)``: ``f[i] += sum_j k(x_i, x_cols[j]) c[j]`` for every point i not
    flagged in ``skip``. This one runs it in this process; :mod:`hsskern.distributed` runs the
    same call on workers that hold row blocks of X. ``operator``: the kernel operator of
    ``points`` when the caller has one (its dense Gaussian's dgemm route then serves the
    products too).
    """

    def __init__(self, points, kernel, operator=None):
        self.points, self.kernel = points, kernel
        own = isinstance(operator, KernelOperator) and operator.points is points
        rep = operator.distinct_rows() if own else distinct_rows(points)  # computed once
        self._unique = None if rep is None else (points[rep[0]], rep[1])
        # dense points: one operator whose dgemm route (centred points, norms) serves every
        # product, where a cross operator per call would centre all points again; the
        # caller's ``operator`` on these points when it has one. Sparse rows and callable
        # kernels keep a cross operator per call (none is built for them here)
        U = points if rep is None else self._unique[0]
        if own and rep is None:
            self._op = operator
        elif sp.issparse(U) or kernel.name == "callable":
            self._op = None
        else:
            self._op = KernelOperator(U, kernel)

    @property
    def n_points(self):
        return self.points.shape[0]

    def add(self, f, cols, c, skip=None):
        """``f[~skip] += K[~skip, cols] @ c``; returns the kernel entries evaluated.

        When the points repeat (many identical rows), each distinct point's entries are
        evaluated once: the coefficients of a column's copies are summed, and every copy of a
        row gets its distinct point's value.
        """
        if not cols.size:
            return 0
        if self._unique is not None:
            return self._add_distinct(f, cols, c, skip)
        rows = None if skip is None else np.flatnonzero(~skip)
        if rows is None:
            f += self._product(self.points, cols, c, None)
            return f.size * cols.size
        if rows.size:
            f[rows] += self._product(self.points, cols, c, rows)
        return rows.size * cols.size

    def _product(self, U, cols, c, rows):
        """K(U[rows], U[cols]) @ c (rows None: all of U), U the points or the distinct ones."""
        if self._op is not None:
            return self._op.columns_product(cols, c, rows)
        K = rows_operator(U[cols], self.kernel)  # sparse rows, or a callable kernel
        return K.cross(U if rows is None else U[rows]) @ c

    def _add_distinct(self, f, cols, c, skip):
        U, inv = self._unique
        ucols, pos = np.unique(inv[cols], return_inverse=True)
        cu = np.bincount(pos, weights=c, minlength=ucols.size)
        if skip is None:
            f += self._product(U, ucols, cu, None)[inv]
            return U.shape[0] * ucols.size
        rows = np.flatnonzero(~skip)
        if not rows.size:
            return 0
        urows = np.unique(inv[rows])
        t = np.empty(U.shape[0])
        t[urows] = self._product(U, ucols, cu, urows)
        f[rows] += t[inv[rows]]
        return urows.size * ucols.size


def _update_decision(f, products, W, KWrows, ch, c, reads_rows, inactive=None):
    """``f += K[:, W[ch]] c[ch]``: the decision values after the working set's change ``c``,
    except at the ``inactive`` (shrunk) points.

    The rows in W are already in the block (``KWrows``, the block's C-contiguous rows: K[W, W]
    in their first |W| columns): its rows of the changed points (the block is symmetric) give
    them for |ch| x |W| reads in place of as many fresh kernel entries
    (~2d + 20 flops each). ``reads_rows``: the products read stored rows, all of them
    whatever is skipped, so the block would only add to them. Returns the number of kernel
    entries evaluated.
    """
    if reads_rows:
        return products.add(f, W[ch], c[ch], inactive)
    t = np.zeros(W.size)
    add_symmetric_rows(KWrows, ch, c[ch], t)
    f[W] += t
    skip = np.zeros(f.size, dtype=bool) if inactive is None else inactive.copy()
    skip[W] = True
    return products.add(f, W[ch], c[ch], skip)


def _shrunk(v, up, low, bias, margin):
    """The bounded points whose -yG lies more than ``margin`` past the bias on the
    side they cannot leave (a point of I_up only would violate only with -yG above the
    others'; of I_low only, below): far from the margin, they are not expected to enter a
    working set soon. Free points and points of bound 0 are never shrunk."""
    return ((up & ~low & (v < bias - margin))
            | (low & ~up & (v > bias + margin)))


def _working_block(K, W, workspace, cap, index=None, new_fraction=1 / 3,
                   band_bytes=64 * 2 ** 20, headroom=1.25):
    """The kernel block of the working set W, reusing what the last block already holds.

    Consecutive working sets (the rounds of one C) share most of their points. The block
    lives in one buffer of row stride S = ``headroom`` |W| (at most ``cap``, the largest
    |W|; a larger W takes a fresh buffer): the points of the last block that stay in W keep their rows
    and columns where they are, and the new points take the places of those that left
    (:func:`~hsskern.solvers.engines._smo.place_cross`), only their rows evaluated:
    k (|W| - k) + k (k + 1) / 2 entries for k new points instead of |W| (|W| + 1) / 2, and no
    kept entry moved (moving them all to a leading corner cost as much as the evaluation
    once K is stored).

    Returns ``(KW, W, entries, reused)``: KW the (|W|, S) C-contiguous rows whose first |W|
    columns are K[W, W] (SMO reads it as is; ``KW[:, :|W|]`` for NumPy), W reordered as the
    block holds it, the kernel entries evaluated and the entries taken from the last block.
    With ``index`` (variables on points, SVR) W and the slots are variables and the entries
    those of their points. ``new_fraction``, ``band_bytes`` and ``headroom``: as
    :class:`DecompositionOptions`'s ``reuse_new_fraction``, ``band_bytes`` and
    ``block_headroom``.
    """
    pt = (lambda V: V) if index is None else index.__getitem__
    q = W.size
    buf, S = workspace.get("block"), workspace.get("stride", 0)
    slots = workspace.get("slots")
    last = workspace.get("points")
    if last is None or last() is not K.points:  # another kernel's block: nothing to reuse
        slots = None
    if buf is not None and slots is not None and q <= S:
        kp = np.flatnonzero(np.isin(slots, W, assume_unique=True))
        new = W[np.isin(W, slots, assume_unique=True, invert=True)]
        if new.size <= new_fraction * q:
            B = buf[:S * S].reshape(S, S)
            # the kept points stay in their places; those past the new block's end move
            # into its first gaps, and the new points take the gaps left
            gaps = np.setdiff1d(np.arange(q), kp, assume_unique=True)
            movers = kp[kp >= q]
            dst, pn = gaps[:movers.size], gaps[movers.size:]
            if movers.size:
                move_slots(B, q, slots.size, dst, movers)
            order = np.empty(q, dtype=np.intp)
            stay = kp[kp < q]
            order[stay], order[dst], order[pn] = slots[stay], slots[movers], new
            if new.size:
                pk = np.setdiff1d(np.arange(q), pn, assume_unique=True)
                # the new points' rows against the kept ones in bands of bounded memory,
                # mirrored as columns; the new x new square as one exactly symmetric block
                band = max(1, int(band_bytes // (8 * max(1, pk.size))))
                for a in range(0, new.size, band):
                    place_cross(B, pn[a:a + band], pk,
                                K.submatrix(pt(new[a:a + band]), pt(order[pk])))
                place_cross(B, pn, pn, K.submatrix(pt(new), pt(new)))
            workspace["slots"] = order
            k, c = new.size, q - new.size
            return B[:q], order, k * c + k * (k + 1) // 2, c * c
    if buf is None or q > S:  # room for W to grow by ``headroom`` (a regrowth pages a fresh
        # buffer in); not for the largest W at once: NumPy asks for huge pages, and rows of a
        # wide stride touch every 2 MB page of the span between them
        S = min(max(q, cap), max(q, int(np.ceil(headroom * q))))
        buf = workspace["block"] = None  # the old buffer goes before the new one exists
        buf = workspace["block"] = np.empty(S * S)
        workspace["stride"] = S
    B = buf[:S * S].reshape(S, S)
    K.submatrix(pt(W), pt(W), out=B[:q, :q])  # written at the buffer's row stride
    # a weak reference: a worker's next pair must not keep the last one's points alive
    workspace["slots"], workspace["points"] = W.copy(), weakref.ref(K.points)
    return B[:q], W, q * (q + 1) // 2, 0


def _point_coef(y, alpha, index, n_points):
    """The decision function's coefficient of each point: y o alpha, summed per point."""
    c = y * alpha
    return c if index is None else np.bincount(index, c, minlength=n_points)


@dataclass(frozen=True)
class RoundState:
    """The decomposition's current point, passed to the ``callback`` of :meth:`Decomposition.solve`.

    ``alpha`` (per variable), ``dual_coef`` (per point), ``f`` = K dual_coef (exact, per
    point) and ``bias`` (LIBSVM's rule) give the decision function ``K(., X) dual_coef +
    bias``; ``gap`` is its exact KKT gap over all points, ``rounds`` the rounds done,
    ``elapsed`` the seconds since the call began, ``final`` whether the decomposition ended.
    When ``exact`` is False, points are shrunk: ``f`` is exact only at the others, ``gap``
    and ``bias`` are theirs (the final state, and every state after a sync, is exact).
    """

    rounds: int
    gap: float
    alpha: np.ndarray
    dual_coef: np.ndarray
    f: np.ndarray
    bias: float
    elapsed: float
    final: bool
    exact: bool = True


class Decomposition:
    """The exact SVM dual by decomposition (the module's algorithm), from any start.

    One problem: the kernel, the labels, the box and the dual's linear term. :meth:`solve`
    runs the rounds from a start and returns a :class:`ExactResult`; each step of a round is
    a method: ``_stop_test`` (the gap over the active points and the stop criteria),
    ``_sync`` (the shrunk points' decision values brought up to date), ``_shrink``,
    ``_select_working_set``, ``_block`` (K[W, W]), ``_solve_block`` (SMO, then
    the Newton face step) and ``_update`` (alpha and the decision values).

    Parameters
    ----------
    K : KernelOperator or SparseRowsKernelOperator
        The exact kernel on the training points (dense or sparse rows): its points, kernel
        and blocks are used.
    y : ndarray of shape (n_variables,)
        Labels in {-1, +1}.
    C : float
        Box constraint, > 0.
    weights : ndarray of shape (n_variables,) or None
        Per-variable weights >= 0: the box is [0, C w_i] (LIBSVM's weighted C; a weight of 0
        fixes alpha_i = 0). None: [0, C].
    p : ndarray of shape (n_variables,) or None
        The dual's linear term (``min 1/2 a^T Q a + p^T a``); None: -e, the classifier.
    index : ndarray of int, shape (n_variables,) or None
        The point each variable sits on (``Q_st = y_s y_t k(x_index[s], x_index[t])``);
        None: variable i is point i. epsilon-SVR passes 2n variables.
    products : LocalProducts-like or None
        Computes the decision-value products ``add(f, cols, c, skip)``; None: K itself when
        it is a stored kernel (its stored rows), else :class:`LocalProducts` on K's points.
        The working set's block is always computed here (from K).
    workspace : dict or None
        Keeps the working-set block's buffer between calls (a C path): a fresh array of
        gigabytes pays a page fault per page on its first touch. A solve never starts from an earlier
        solve's block: the order of the block steers SMO's tie-breaking, and a class of a
        one-vs-rest problem must get what its binary problem gets whatever was solved before
        it on the same workspace.
    options : DecompositionOptions or None
        The tunables; None: the defaults.
    """

    def __init__(self, K, y, C, *, weights=None, p=None, index=None, products=None,
                 workspace=None, options=None):
        self.K, self.C = K, C
        self.options = DecompositionOptions() if options is None else options
        self.workspace = {} if workspace is None else workspace
        X = K.points
        stored = (StoredKernelOperator, StoredSparseRowsKernelOperator)
        if products is None and isinstance(K, stored):  # a stored kernel serves its own
            products = K
        self.given_products = products  # None: LocalProducts on the block's kernel (solve)
        self.reads_rows = isinstance(products, stored)
        self.n_points = n = X.shape[0]
        self.y = y = np.asarray(y, dtype=np.float64)
        if index is not None:  # the caller's variables sit on these points (SVR: 2n of them)
            index = np.asarray(index, dtype=np.intp)
            if index.shape != y.shape or index.min(initial=0) < 0 or index.max(initial=0) >= n:
                raise ValueError(f"index must map each of the {y.size} variables to a point in "
                                 f"[0, {n}), got shape {index.shape}")
            n = y.size
        self.index, self.n = index, n
        if p is not None:
            p = np.asarray(p, dtype=np.float64)
            if p.shape != (n,):
                raise ValueError(f"p must have shape ({n},), one entry per variable, "
                                 f"got {p.shape}")
        self.p = p
        self.weights = check_weights(weights, n)
        # the upper bound: the scalar C unweighted (that path allocates no per-point array)
        self.ub = C if self.weights is None else C * self.weights

    # -- the solve ---------------------------------------------------------------------------

    def solve(self, alpha=None, f=None, *, tol=1e-3, max_time=None, callback=None, log=None):
        """Run the rounds from ``alpha`` until the KKT gap over all points is below ``tol``.

        Parameters
        ----------
        alpha : ndarray of shape (n_variables,) or None
            Start (e.g. the ADMM's dual variables); made feasible by :func:`feasible_start`.
            None starts from 0.
        f : ndarray of shape (n_points,) or None
            The exact ``K (y o alpha)`` of a *feasible* ``alpha`` (a previous C's result
            scaled); computed (an n x n_SV product) when None.
        tol : float, default 1e-3
            Stop when the KKT gap over all points is below it (LIBSVM's ``tol``/``eps``).
        max_time : float or None
            Seconds: no new round starts after them (the result is then feasible, its ``gap``
            the true gap of the returned point, ``stopped == "max_time"``).
        callback : callable or None
            Called before every round and at the end as ``callback(state)`` with a
            :class:`RoundState` (the live arrays: copy what must outlive the call); a true
            return value stops the decomposition (``stopped == "callback"``).
        log : callable or None
            Called with one line per round.

        Returns
        -------
        ExactResult
        """
        self.t0, self.max_time = time.perf_counter(), max_time
        self._precision(tol)
        self._limits()
        self._start(alpha, f)
        while True:
            stopping = self._stop_test(tol, max_time, callback)
            if stopping == "no pair":
                break
            if self.inactive is not None and (stopping is not None
                                              or self.since_sync >= self.options.sync_rounds):
                self._sync()  # the next pass decides on the exact gap over all points
                continue
            if stopping is not None:
                self.res.converged = stopping == "converged"
                self.res.stopped = stopping if stopping in ("max_time", "callback") else None
                break
            if not self._round(tol, log):
                break
        return self._finish(callback, log)

    def _precision(self, tol):
        """The kernel of this solve's blocks (``block_kernel``) and its decision values'
        products: the Gaussian's inner products in float32 where the options ask for them
        at ``tol`` and the operator's bound admits them (decision values summed in double,
        as LIBSVM's gradient over its float ``Qfloat`` rows)."""
        o, K = self.options, self.K
        if (o.single_cross(tol) and isinstance(K, KernelOperator)
                and not isinstance(K, StoredKernelOperator)):
            K = K.single_cross(o.float32_max_rel_error)
        self.block_kernel = K
        self.products = self.given_products
        if self.products is None:
            self.products = LocalProducts(K.points, K.kernel, K)

    def _limits(self):
        """The working-set sizes of this solve: the options', within half the memory."""
        o, ws = self.options, self.workspace
        max_ws, max_chunk = o.max_ws, o.max_chunk
        if max_ws is None:
            small = not self.reads_rows and self.n_points < o.shrink_min_points
            max_ws = o.small_max_ws if small else o.large_max_ws
        avail = available_memory()
        if avail is not None:  # the working set shrinks to what fits, rather than failing
            avail += ws["block"].nbytes if "block" in ws else 0  # reused, not new
            max_chunk = max(2, min(max_chunk, int(np.sqrt(0.5 * avail / 8))))
            max_ws = min(max_ws, max_chunk)
        self.avail, self.max_ws, self.max_chunk = avail, max_ws, max_chunk
        ws.pop("slots", None)  # the buffer is kept, the entries it holds are not
        # a stored kernel's cap, lifted after stored_cap_rounds rounds
        self.chunk = min(max_chunk, o.stored_max_chunk) if self.reads_rows else max_chunk

    def _start(self, alpha, f):
        """The state: the feasible start, its decision values, the counters and rates."""
        o, y = self.options, self.y
        self.alpha = np.zeros(self.n) if alpha is None else feasible_start(alpha, y, self.ub)
        res = self.res = ExactResult(
            alpha=self.alpha, dual_coef=y * self.alpha, bias=0.0, decision=None,
            converged=False,
            timings=dict.fromkeys(("start", "select", "block", "smo", "newton", "update",
                                   "sync"), 0.0),
            kernel_entries=dict.fromkeys(("start", "block", "block_reused", "update", "sync"),
                                         0))
        if f is None:
            c = _point_coef(y, self.alpha, self.index, self.n_points)
            sv = np.flatnonzero(c)
            f = np.zeros(self.n_points)
            res.kernel_entries["start"] = self.products.add(f, sv, c[sv])
        else:
            f = np.array(f, dtype=np.float64)
        self.f = f
        res.timings["start"] = time.perf_counter() - self.t0
        # the block SMO's thread counts, measured once for all the rounds (smo_block's timing)
        self.smo_timing = np.zeros(4)
        # seconds per |W|^2 of a round's block and SMO, and per |W| x n of its update: the
        # last round's, which size the next one under max_time (_timed_cap)
        self.round_rates = None
        # points the last round changed (None: none, or no round yet: a full-size set next),
        # and whether this round's set was cut to a multiple of them (ws_per_change)
        self.last_changed, self.cut = None, False
        # Shrinking: the inactive points' f is exact as of the last sync; ``pending`` holds
        # the coefficient changes since, which a sync applies to them (|inactive| x |changed
        # since| entries, against that many times the rounds' count of repeated changes). A
        # stored kernel reads whole rows whatever is skipped, so it gains nothing from it.
        shrinking = o.shrinking
        if shrinking == "auto":
            shrinking = self.n_points >= o.shrink_min_points
        self.shrink = shrinking and self.index is None and not self.reads_rows
        self.inactive = self.pending = None
        self.since_sync, self.hold = 0, False

    # -- the stop test and the shrunk points -------------------------------------------------

    def _kkt(self):
        """-y G (``v``: the bias that would put each variable on its margin) and the index
        sets of the active points; with a point on each side, their extremes and the gap."""
        y, f = self.y, self.f
        self.v = y - f if self.p is None and self.index is None else _neg_grad(
            f, y, self.p, self.index)
        up, low = kkt_sets(y, self.alpha, self.ub)
        if self.inactive is not None:  # their f is stale: out of the sets until the next sync
            up, low = up & ~self.inactive, low & ~self.inactive
        self.up, self.low = up, low
        if not up.any() or not low.any():  # cannot happen for two classes and C > 0
            return False
        self.m, self.M = self.v[up].max(), self.v[low].min()
        self.gap = self.res.gap = float(self.m - self.M)
        return True

    def _stop_test(self, tol, max_time, callback):
        """Why the rounds should stop now, or None: "converged", "rounds", "max_time",
        "callback"; "sets" (an empty side among the active points: sync first) or "no pair"
        (an empty side over all points)."""
        if not self._kkt():
            return "no pair" if self.inactive is None else "sets"
        if self.gap < tol:
            return "converged"
        if self.options.max_rounds is not None and self.res.rounds >= self.options.max_rounds:
            return "rounds"
        if max_time is not None and (
                time.perf_counter() - self.t0 >= max_time
                or self._timed_fit() < min(self.options.timed_min_ws, self.max_ws, self.chunk)):
            return "max_time"
        if callback is not None and callback(self._state(exact=self.inactive is None)):
            return "callback"
        return None

    def _sync(self):
        """Bring the shrunk points' decision values up to date and make them active again."""
        ts = time.perf_counter()
        nz = np.flatnonzero(self.pending)
        self.res.kernel_entries["sync"] += self.products.add(self.f, nz, self.pending[nz],
                                                             ~self.inactive)
        self.res.timings["sync"] += time.perf_counter() - ts
        self.res.syncs += 1
        self.inactive = self.pending = None
        self.since_sync = 0

    def _shrink(self):
        """After a sync (f exact everywhere), the bounded points far past the bias on their
        side leave the rounds, as long as each side keeps a point to pair."""
        up, low = self.up, self.low
        out = _shrunk(self.v, up, low, self._bias(), self.options.shrink_margin)
        up_a, low_a = up & ~out, low & ~out
        if out.any() and up_a.any() and low_a.any():
            self.inactive, self.pending = out, np.zeros(self.n_points)
            self.up, self.low = up_a, low_a
            self.m, self.M = self.v[up_a].max(), self.v[low_a].min()

    # -- a round -----------------------------------------------------------------------------

    def _round(self, tol, log):
        """One working set: select, block, solve, update. False when it could not move and
        no shrunk point may hold the progress left."""
        res, tr = self.res, time.perf_counter()
        free = self.up & self.low
        if self.shrink and self.inactive is None and not self.hold:
            self._shrink()
        self.since_sync += 1
        W = self._select_working_set(free)
        tb = time.perf_counter()
        KWrows, W, n_eval, n_reused = self._block(W)
        KW = KWrows[:, :W.size]
        t_block = time.perf_counter() - tb
        res.timings["select"] += tb - tr
        res.timings["block"] += t_block
        res.kernel_entries["block"] += n_eval
        res.kernel_entries["block_reused"] += n_reused
        nf = int(free[W].sum())
        aW, it, note = self._solve_block(W, KW, KWrows, nf, tol)
        tu = time.perf_counter()
        ch = self._update(W, KWrows, aW)
        self.last_changed = ch.size or None
        del KW, KWrows  # the block's buffer may be replaced by the next round's
        t_update = time.perf_counter() - tu
        self.round_rates = ((tu - tb) / W.size ** 2, t_update / (W.size * self.n_points))
        res.timings["update"] += t_update
        res.rounds += 1
        res.ws_sizes.append(int(W.size))
        res.smo_iters.append(int(it))
        if log is not None:
            shrunk = "" if self.inactive is None else "%d shrunk, " % self.inactive.sum()
            log(f"  round {res.rounds}: gap {self.gap:.3g}, |W| {W.size} ({free.sum()} free), "
                f"{note}{it} SMO steps, {ch.size} changed, {shrunk}"
                f"{time.perf_counter() - tr:.1f} s "
                f"(block {t_block:.1f} s: {n_eval:.3g} entries, {n_reused:.3g} reused; "
                f"update {t_update:.1f} s)")
        if ch.size:
            self.hold = False
            return True
        if self.cut:  # a set cut to the last changes moved nothing: next at full size
            return True
        # no progress possible on this working set (rounding at the bounds)
        if self.inactive is None:
            return False
        # the shrunk points may hold the progress left: sync, and one round unshrunk
        self.since_sync, self.hold = self.options.sync_rounds, True
        return True

    def _select_working_set(self, free):
        """The free points and the worst violators of each side (``_select``), as many
        as the round's size allows: ``max_ws``, more to hold the free set, at most the cap."""
        o = self.options
        if self.chunk < self.max_chunk and self.res.rounds >= o.stored_cap_rounds:
            self.chunk = self.max_chunk
        ws = min(self.max_ws, self.chunk)
        self.cut = False
        if o.ws_per_change and self.last_changed is not None:
            cut = max(o.ws_floor, int(o.ws_per_change * self.last_changed))
            self.cut, ws = cut < ws, min(ws, cut)
        # the free set and a quarter of ws for the violators; the places are counted from
        # ws, not q: measured from q (free + ws / 4) a free set past 3/4 of ws never fitted,
        # and rounds of violators alone swung the free points outside W (design notes)
        q = min(self.chunk, max(ws, free.sum() + ws // 4))
        if self.max_time is not None:
            q = max(2, min(q, self._timed_cap()))
        return _select(self.v, self.up, self.low, self.m, self.M, free, q, ws // 4)

    def _timed_cap(self):
        """Under max_time, the next round's working-set cap: :meth:`_timed_fit`, at most
        ``timed_growth`` times the last round's set (``timed_first_ws`` before any round)."""
        o = self.options
        if self.round_rates is None:
            return o.timed_first_ws
        return min(self._timed_fit(), int(o.timed_growth * self.res.ws_sizes[-1]))

    def _timed_fit(self):
        """The largest working set whose round is expected to end within
        ``timed_round_share`` of the time left: a |W|^2 + b |W| n <= share x left, by the
        last round's rates (no bound before any round)."""
        if self.round_rates is None:
            return self.chunk
        a, b = self.round_rates
        budget = (self.options.timed_round_share
                  * max(0.0, self.max_time - (time.perf_counter() - self.t0)))
        bn = b * self.n_points
        if a <= 0:
            return self.chunk if bn <= 0 else int(budget / bn)
        return int((-bn + np.sqrt(bn * bn + 4.0 * a * budget)) / (2.0 * a))

    def _block(self, W):
        """``(KWrows, W, evaluated, reused)``: rows holding K[W, W] in their first |W| columns
        (``_working_block``), W in the block's order, and the entries it cost."""
        o, ws, K, index = self.options, self.workspace, self.block_kernel, self.index
        if o.block_reuse:
            return _working_block(K, W, ws, min(self.chunk, self.n), index,
                                  o.reuse_new_fraction, o.band_bytes, o.block_headroom)
        ws.pop("slots", None)
        ws.pop("stride", None)
        buf = ws.get("block")
        if buf is None or buf.size < W.size ** 2:
            buf = ws["block"] = np.empty(W.size ** 2)
        Wp = W if index is None else index[W]
        KW = K.submatrix(Wp, Wp, out=buf[:W.size ** 2].reshape(W.size, W.size))
        return KW, W, W.size * (W.size + 1) // 2, 0

    def _solve_block(self, W, KW, KWrows, nf, tol):
        """The working set's QP to a tenth of the current gap: SMO first (its early steps
        move the points that change sides), then, if it has not finished in the time a
        Newton step on the free face is estimated to take, that step and SMO again.

        Returns ``(aW, steps, note)``: W's new alphas, SMO's pair steps, and the Newton
        steps' account for the log."""
        o = self.options
        yW, aW, vW = self.y[W], self.alpha[W].copy(), self.v[W]
        iters = o.max_smo_iter if o.max_smo_iter is not None else max(10 ** 7, 100 * W.size)
        target = max(tol, o.sub_tol * self.gap)
        # the factor (8 |F|^2 bytes) beside the block must fit in what was available at start
        eligible = (o.newton and nf >= o.newton_min_free
                    and nf >= o.newton_free_fraction * W.size
                    and 16.0 * nf * nf < (self.avail if self.avail is not None else np.inf))
        budget = iters
        if eligible:
            budget = min(iters, self._smo_budget(nf, W.size))
        uW = None if self.weights is None else self.ub[W]
        bounds = {"shrink_share": o.smo_shrink_share}
        if uW is not None:
            bounds["upper"] = uW
        ts = time.perf_counter()
        it, m_w, M_w = smo_block(KWrows, yW, aW, vW, self.C, target, budget,
                                 timing=self.smo_timing, **bounds)
        self.res.timings["smo"] += time.perf_counter() - ts
        note = ""
        if eligible and m_w - M_w >= target and it < iters:
            it, note = self._newton_rounds(KW, KWrows, yW, aW, vW, uW, nf, target, it, iters)
        return aW, it, note

    def _smo_budget(self, nf, size):
        """SMO's pair steps on ``size`` points before a Newton step on ``nf`` free ones, by
        the options' cost model."""
        o = self.options
        return max(1, int(o.smo_before_newton * o.newton_rate * float(nf) ** 3
                          / (o.smo_step_rate * size)))

    def _newton_rounds(self, KW, KWrows, yW, aW, vW, uW, nf, target, it, iters):
        """Newton steps on the free face, each followed by SMO: an active-set loop. After a
        kept step SMO moves the points that leave or enter the face, each move
        re-equilibrating the free points slowly; if it has not finished in the time a Newton
        step costs, another step on the new face. ``aW`` and ``vW`` are updated in place.
        Returns ``(steps, note)``: SMO's pair steps in all and the log's account."""
        o, res = self.options, self.res
        bounds = {"timing": self.smo_timing, "shrink_share": o.smo_shrink_share}
        if uW is not None:
            bounds["upper"] = uW
        note, n_newton, m_w, M_w = "", 0, np.inf, -np.inf
        while n_newton == 0 or (m_w - M_w >= target and it < iters):
            tn = time.perf_counter()
            fixed, length = _newton_free(KW, yW, aW, vW, self.C if uW is None else uW,
                                         o.newton_ridge, o.newton_max_fixed)
            t_newton = time.perf_counter() - tn
            res.timings["newton"] += t_newton
            res.newton_steps += length > 0
            n_newton += 1
            how = ("%d fixed" % fixed if fixed >= 0 else
                   "fallback, length %.3g" % length if length > 0 else "rejected")
            note += f"Newton on {nf} free after {it} SMO steps ({how}, {t_newton:.1f} s), "
            again = length > 0 and n_newton < o.newton_per_round
            budget = self._smo_budget(nf, aW.size)
            ts = time.perf_counter()
            steps, m_w, M_w = smo_block(KWrows, yW, aW, vW, self.C, target,
                                        min(budget, iters - it) if again else iters - it,
                                        **bounds)
            res.timings["smo"] += time.perf_counter() - ts
            it += steps
            if not again:
                break
        return it, note

    def _update(self, W, KWrows, aW):
        """alpha on W and the decision values (of the active points; the change is kept for
        the shrunk ones' next sync). Returns the positions in W that changed."""
        alpha, y = self.alpha, self.y
        Wp = W if self.index is None else self.index[W]  # the working set's points
        yW = y[W]
        dW = aW - alpha[W]
        ch = np.flatnonzero(dW)
        if ch.size:
            alpha[W[ch]] = aW[ch]
            self.res.kernel_entries["update"] += _update_decision(
                self.f, self.products, Wp, KWrows, ch, yW * dW, self.reads_rows, self.inactive)
            if self.pending is not None:
                self.pending[Wp[ch]] += yW[ch] * dW[ch]
        return ch

    # -- the result --------------------------------------------------------------------------

    def _finish(self, callback, log):
        res, alpha = self.res, self.alpha
        # a pair step's rounding can leave ~1e-16 where LIBSVM's has 0 (a support vector in
        # name only); the change to f is below the rounding of f itself
        _snap_to_bounds(alpha, self.ub)
        bias = self._bias()
        res.alpha = alpha
        res.dual_coef = _point_coef(self.y, alpha, self.index, self.n_points)
        res.bias = bias
        res.decision = self.f + bias
        res.time = time.perf_counter() - self.t0
        if log is not None and res.syncs:
            log(f"  shrinking: {res.syncs} syncs, {res.timings['sync']:.1f} s "
                f"({res.kernel_entries['sync']:.3g} entries); rounds' updates "
                f"{res.timings['update']:.1f} s ({res.kernel_entries['update']:.3g})")
        if callback is not None:  # the final point, for a caller that keeps the best one seen
            callback(self._state(bias=bias))
        return res

    def _state(self, bias=None, exact=True):
        final = bias is not None
        if bias is None:
            bias = self._bias()
        return RoundState(rounds=self.res.rounds, gap=self.res.gap, alpha=self.alpha,
                          dual_coef=_point_coef(self.y, self.alpha, self.index, self.n_points),
                          f=self.f, bias=bias, elapsed=time.perf_counter() - self.t0,
                          final=final, exact=exact)

    def _bias(self):
        """LIBSVM's rho: the mean over the free points, which sit on their margins."""
        # "free" as in kkt_sets, else an alpha a rounding error above 0 (outside both sets, so
        # not in the gap) would set the bias alone; _bias reads y - f as each variable's -y G:
        # with p or index that is y - v
        y, ub = self.y, self.ub
        fb = self.f if self.p is None and self.index is None else y - self.v
        return float(_bias(fb[:, None], y[:, None], self.alpha[:, None],
                           ub if self.weights is None else ub[:, None], bound_eps)[0][0])
