"""Exact-kernel SVM by decomposition, started from an approximate (or a neighbouring C's) solution.

The dual ADMM on an HSS approximation finds the *shape* of the solution cheaply, but the
approximation's error moves the decision surface and, at large C, the ADMM converges slowly
(gmm8, n = 1e5, rank 200: 91.7% best against LIBSVM's 94.1%). The exact dual
``min 1/2 a^T Q a - e^T a, 0 <= a <= C, y^T a = 0`` (Q_ij = y_i y_j k(x_i, x_j)) is recovered
here without ever holding an n x n array, by Osuna-style decomposition:

* every point keeps its alpha (the start made feasible), and the exact decision values
  f = K (y o alpha) at all n points are kept current;
* a round picks a working set W: the free support vectors (0 < alpha < C, the ones still
  moving) and the worst KKT violators of each side (LIBSVM's I_up / I_low), solves the QP on
  W with the rest fixed by SMO on the dense block K[W, W] (:mod:`hsskern.solvers._smo`) to a
  tenth of the current gap, and updates f by an n x |changed| kernel product;
* it stops when the largest violation over all n points, max_{I_up} -y G - min_{I_low} -y G
  (LIBSVM's own stopping rule), is below ``tol``: the result is then LIBSVM's solution to
  LIBSVM's tolerance.

Bounded support vectors (alpha = C) never need to enter W unless they violate, so a solution
with 30,000 support vectors costs working sets of the size of its free set. Each round costs
one |W| x |W| kernel block, the SMO and one n x |changed| product: memory 8 |W|^2 bytes.
Along a C path the exact solution at C scaled by C'/C is feasible at C' and its decision
values scale with it, so the next C starts without a single kernel product.
"""
import time
from dataclasses import dataclass, field

import numpy as np

from ..kernels.operator import KernelOperator
from ..utils._memory import available_memory
from ._smo import smo_block
from .admm import _bias, kkt_sets

__all__ = ["RefineResult", "refine_exact", "feasible_start"]


@dataclass
class RefineResult:
    """Outcome of :func:`refine_exact` for one label vector.

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
    time : float
        Seconds.
    skipped : str or None
        Why the refinement did not run (the caller keeps its own solution then).
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
    time: float = 0.0
    skipped: object = None


def feasible_start(alpha, y, C):
    """``alpha`` clipped to [0, C] with y^T alpha = 0 restored by shrinking the heavier side.

    An imbalance at rounding level is left alone, and values within a relative 1e-12 of C are
    set to C: shrinking an exact solution's side by 1 - 1e-16 (or scaling it by C / C_prev)
    would put its bounded alphas an ulp below C, where they count as free (gmm8, n = 1e5:
    17,000 "free" points and a 16,000-point first working set instead of 1,400).
    """
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, C)
    pos, neg = y > 0, y < 0
    sp, sn = a[pos].sum(), a[neg].sum()
    if abs(sp - sn) > 1e-12 * max(sp, sn):
        if sp > sn:
            a[pos] *= sn / sp
        else:
            a[neg] *= sp / sn
    a[a >= C * (1 - 1e-12)] = C
    return a


def _select(v, up, low, m, M, free, q):
    """The working set: the free points and the worst violators of each side, at most ``q``.

    ``v = -y G = y - f``; a point of I_up violates against M, the least v of I_low, when its v
    exceeds M, a point of I_low against m, the largest v of I_up, when below m.
    Both sides get half of what the free set leaves (at least one point each, so the most
    violating pair is always in W and every round makes progress); when the free set leaves
    fewer than q / 4 places, the most violating q / 2 of each side are taken instead.
    """
    score_up = np.where(up, v - M, -np.inf)
    score_low = np.where(low, m - v, -np.inf)
    F = np.flatnonzero(free)
    budget = q - F.size
    if budget >= max(2, q // 4):
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


def refine_exact(K, y, C, alpha=None, *, f=None, tol=1e-3, max_ws=8000, max_chunk=16000,
                 max_rounds=200, sub_tol=0.1, max_smo_iter=None, log=None):
    """The exact SVM dual by decomposition, from any start.

    Parameters
    ----------
    K : KernelOperator
        The exact kernel on the training points (only its points and kernel are used).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float
        Box constraint, > 0.
    alpha : ndarray of shape (n,) or None
        Start (e.g. the ADMM's dual variables); made feasible by :func:`feasible_start`.
        None starts from 0.
    f : ndarray of shape (n,) or None
        The exact ``K (y o alpha)`` of a *feasible* ``alpha`` (a previous C's result scaled);
        computed (an n x n_SV product) when None.
    tol : float, default 1e-3
        Stop when the KKT gap over all points is below it (LIBSVM's ``tol``/``eps``).
    max_ws : int, default 8000
        Working-set size while the free set is smaller than it.
    max_chunk : int, default 16000
        Largest working set (K[W, W] takes 8 |W|^2 bytes: 2 GB at 16,000); it grows past
        ``max_ws`` only to keep the whole free set in. Lowered to what half the available
        memory holds.
    max_rounds : int, default 200
    sub_tol : float, default 0.1
        Each working set is solved to a gap of ``max(tol, sub_tol * gap)``, ``gap`` the
        current one over all points (0: every working set to ``tol``).
    max_smo_iter : int or None
        Pair updates per round; None: ``max(10**7, 100 |W|)`` as LIBSVM.
    log : callable or None
        Called with one line per round.

    Returns
    -------
    RefineResult
    """
    t0 = time.perf_counter()
    avail = available_memory()
    if avail is not None:  # the working set shrinks to what fits, rather than failing
        max_chunk = max(2, min(max_chunk, int(np.sqrt(0.5 * avail / 8))))
        max_ws = min(max_ws, max_chunk)
    X, kern = K.points, K.kernel
    n = X.shape[0]
    y = np.asarray(y, dtype=np.float64)
    alpha = np.zeros(n) if alpha is None else feasible_start(alpha, y, C)
    if f is None:
        sv = np.flatnonzero(alpha)
        f = (KernelOperator(X[sv], kern).cross(X) @ (y[sv] * alpha[sv]) if sv.size
             else np.zeros(n))
    else:
        f = np.array(f, dtype=np.float64)
    res = RefineResult(alpha=alpha, dual_coef=y * alpha, bias=0.0, decision=None,
                       converged=False)
    while True:
        v = y - f  # -y G: the bias that would put each point on its margin
        up, low = kkt_sets(y, alpha, C)
        if not up.any() or not low.any():  # cannot happen for two classes and C > 0
            break
        m, M = v[up].max(), v[low].min()
        gap = res.gap = float(m - M)
        if gap < tol:
            res.converged = True
            break
        if res.rounds >= max_rounds:
            break
        tr = time.perf_counter()
        free = (alpha > 0) & (alpha < C)
        q = min(max_chunk, max(max_ws, free.sum() + max_ws // 4))
        W = _select(v, up, low, m, M, free, q)
        yW = y[W]
        KW = K._submatrix(W, W)
        aW = alpha[W].copy()
        vW = v[W]
        iters = max_smo_iter if max_smo_iter is not None else max(10 ** 7, 100 * W.size)
        # the subproblem only to a tenth of the current gap: while violators outside W remain,
        # a tight solve of W is undone by the next round (gmm8, n = 1e5, C = 77: rounds of
        # 400-850k SMO steps, each followed by a gap of 2-12 again)
        it, _, _ = smo_block(KW, yW, aW, vW, C, max(tol, sub_tol * gap), iters)
        del KW
        dW = aW - alpha[W]
        ch = np.flatnonzero(dW)
        if ch.size:
            idx = W[ch]
            alpha[idx] = aW[ch]
            f += KernelOperator(X[idx], kern).cross(X) @ (yW[ch] * dW[ch])
        res.rounds += 1
        res.ws_sizes.append(int(W.size))
        res.smo_iters.append(int(it))
        if log is not None:
            log(f"  round {res.rounds}: gap {gap:.3g}, |W| {W.size} ({free.sum()} free), "
                f"{it} SMO steps, {ch.size} changed, {time.perf_counter() - tr:.1f} s")
        if not ch.size:  # no progress possible on this working set (rounding at the bounds)
            break
    # LIBSVM's rho: the mean over the free points, which sit on their margins
    bias = float(_bias(f[:, None], y[:, None], alpha[:, None], C, 0.0)[0][0])
    res.alpha = alpha
    res.dual_coef = y * alpha
    res.bias = bias
    res.decision = f + bias
    res.time = time.perf_counter() - t0
    return res
