"""epsilon-SVR on the HSS factor: the dual by closed-form ADMM, then LIBSVM's exact answer.

With beta = alpha - alpha* the epsilon-SVR dual is

    min_b  1/2 b^T K b - y^T b + eps ||b||_1    s.t.  1^T b = 0,  -C <= b <= C.

The ADMM (:func:`svr_dual_admm`) splits it as x = z, x carrying the quadratic and the
equality, z the l1 term and the box. Its x-step is the classifier's
(:mod:`hsskern.solvers.engines.admm`): with w = (K + rho I)^{-1} 1 and u = (K + rho I)^{-1} q,

    x = u - (w^T q / 1^T w) w,      q = y + mu + rho z,

one solve with the factor of :func:`~hsskern.solvers.paths.hss_path.prepare_hss` per iteration;
its z-step is the prox of eps |.| plus the box, separable and closed-form: soft-threshold
at eps / rho, then clip to [-C, C] (the minimiser of a convex function of one variable on an
interval is the clip of its free minimiser).

The exact step is LIBSVM's 2n-variable form: variables (alpha, alpha*) with labels (+1, -1),
linear term p = (eps - y, eps + y), Q_st = y_s y_t k(x_{s mod n}, x_{t mod n}). It is the
classifier's decomposition (:func:`~hsskern.solvers.engines.exact.solve_block`) with that ``p`` and
``index = t mod n``: the same SMO and Newton step, the decision values kept on the n points.

Along an ascending C path an exact solution a at C stays exact for any multiple s a with
0 <= s <= C'/C: it is feasible at C' (box C' >= s C, and 1^T b = 0 scales) and its decision
values are s f, no kernel product. The next C starts from the best point of that ray
(:func:`~hsskern.solvers.engines.exact.continuation_start`; the classifier keeps s = C'/C).
"""
import time
import warnings
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ...options import HSSSVROptions, PathSettings, options_with
from ...utils.validation import check_positive
from ..engines.admm import PenaltyOptions, SplitADMM, check_iteration_options, kkt_sets
from ..engines.interface import BlockEngine, DualProblem, DualStart
from .hss_path import HSSBackend, decomposition_chunk, exact_limit, threads_for
from .path import KernelExpansion, PathSolution, check_Cs
from ..engines.exact import ExactResult, continuation_start
from .warm import near_options

__all__ = ["SVRADMMResult", "SVRADMMOptions", "SVRDualADMM", "SVRBackend", "hss_svr_path",
           "svr_dual_admm", "svr_variables",
           "svr_kkt_gap", "check_epsilon", "check_target"]


def check_epsilon(epsilon):
    """epsilon as a float >= 0, or a clear ValueError."""
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a real number >= 0, got {epsilon!r}") from None
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    return eps


def check_target(y, n):
    """y as a float array of shape (n,) of finite values ((n, 1) is accepted)."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.shape != (n,):
        raise ValueError(f"SVR takes one target: y must have shape ({n},), got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must be finite (it holds NaN or infinity)")
    return np.ascontiguousarray(y)


def svr_variables(y, epsilon):
    """LIBSVM's 2n-variable form of the SVR dual: labels, linear term and point index.

    Variable t < n is alpha_t (label +1, linear term eps - y_t), variable n + t is alpha*_t
    (label -1, eps + y_t); both sit on point t.
    """
    n = y.shape[0]
    yv = np.concatenate([np.ones(n), -np.ones(n)])
    p = np.concatenate([epsilon - y, epsilon + y])
    index = np.concatenate([np.arange(n), np.arange(n)])
    return yv, p, index


def _split(b):
    """(alpha, alpha*) of b = alpha - alpha*, stacked: the 2n variables of least l1 norm."""
    return np.concatenate([np.maximum(b, 0.0), np.maximum(-b, 0.0)])


def _balance(b):
    """b with sum(b) = 0 restored by shrinking its heavier side (the box is kept)."""
    b = np.array(b, dtype=np.float64)
    pos, neg = b > 0, b < 0
    sp, sn = b[pos].sum(), -b[neg].sum()
    if abs(sp - sn) > 1e-12 * max(sp, sn):
        if sp > sn:
            b[pos] *= sn / sp
        else:
            b[neg] *= sp / sn
    return b


def _neg_grad(f, y, epsilon):
    """-y G of the 2n variables from f = K b: y - f - eps for alpha, y - f + eps for alpha*."""
    r = y - f
    return np.concatenate([r - epsilon, r + epsilon])


def svr_kkt_gap(f, y, b, C, epsilon):
    """LIBSVM's stopping measure max_{I_up} -yG - min_{I_low} -yG of the SVR dual at b.

    Parameters
    ----------
    f : ndarray of shape (n,)
        ``K b``.
    y : ndarray of shape (n,)
    b : ndarray of shape (n,)
        alpha - alpha* (split into the 2n variables of least l1 norm).
    C, epsilon : float

    Returns
    -------
    float (>= 0; 0 at the optimum)
    """
    yv = np.concatenate([np.ones_like(y), -np.ones_like(y)])
    up, low = kkt_sets(yv, _split(b), C)
    v = _neg_grad(f, y, epsilon)
    m = v[up].max() if up.any() else -np.inf
    M = v[low].min() if low.any() else np.inf
    return float(max(m - M, 0.0))


def _svr_bias(f, y, b, C, epsilon):
    """LIBSVM's intercept (-rho): the mean of -yG over the free variables, else the middle
    of the interval the bounded ones allow."""
    yv = np.concatenate([np.ones_like(y), -np.ones_like(y)])
    a = _split(b)
    up, low = kkt_sets(yv, a, C)
    v = _neg_grad(f, y, epsilon)
    free = up & low
    if free.any():
        return float(v[free].mean())
    # none free: the intercept lies in [max_{I_up} v, min_{I_low} v] (the KKT conditions)
    lo = v[up].max() if up.any() else -np.inf
    hi = v[low].min() if low.any() else np.inf
    if np.isfinite(hi) and np.isfinite(lo):
        return float(0.5 * (hi + lo))
    return float(hi if np.isfinite(hi) else (lo if np.isfinite(lo) else 0.0))


@dataclass(frozen=True, eq=False)
class SVRADMMResult:
    """The outcome of :func:`svr_dual_admm` at one C.

    Attributes
    ----------
    C, epsilon, beta : float
        ``beta`` is the penalty in force at the end (residual balancing may move it).
    dual_coef : ndarray of shape (n,)
        alpha - alpha*: the z iterate (in the box by construction) with sum(b) = 0 restored
        by shrinking its heavier side.
    bias : float
        LIBSVM's intercept for ``dual_coef`` on the approximation.
    n_iter : int
    converged : bool
        The KKT gap (on the approximation) reached ``kkt_tol``.
    gap : float
        The last gap measured (NaN if none was).
    primal_residuals, dual_residuals : ndarray of shape (n_iter,)
    timings : mapping
        Seconds: ``iterations``, ``refactor``, ``kkt``, ``bias``.
    state : mapping
        ``z``, ``mu``, ``w`` and ``beta_floor``: what warm-starts the next C.
    """

    C: float
    epsilon: float
    beta: float
    dual_coef: np.ndarray
    bias: float
    n_iter: int
    converged: bool
    gap: float
    primal_residuals: np.ndarray
    dual_residuals: np.ndarray
    timings: object = field(default_factory=dict)
    state: object = field(default_factory=dict, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))
        object.__setattr__(self, "state", MappingProxyType(dict(self.state)))


@dataclass(frozen=True, repr=False)
class SVRADMMOptions(PenaltyOptions):
    """The tunables of :class:`SVRDualADMM`, one set of defaults.

    Parameters
    ----------
    max_iter : int, default 100
    kkt_tol : float or None, default 1e-2
        Stop when LIBSVM's gap (:func:`svr_kkt_gap`, on the approximation, at the balanced
        iterate) is below it; None: ``max_iter`` iterations.
    kkt_every : int, default 10
        Iterations between gap checks (each one product with the unshifted kernel).
    relaxation : float in (0, 2), default 1.6
    balance_ratio, balance_factor, max_refactor
        See :class:`~hsskern.solvers.engines.admm.PenaltyOptions` (defaults 10, 10, 2).
    """

    max_iter: int = 100
    kkt_tol: float = 1e-2
    kkt_every: int = 10
    relaxation: float = 1.6

    def _check(self):
        check_iteration_options(self)


class SVRDualADMM(SplitADMM):
    """The SVR dual at one C by closed-form ADMM on a factor of K + rho I (the module's
    splitting); :func:`svr_dual_admm` is its one-call form.

    The loop, the dual update and the penalty balancing are
    :class:`~hsskern.solvers.engines.admm.SplitADMM`'s; the steps here: ``_x_update`` (one solve),
    ``_project`` (soft-threshold at epsilon / rho, then the box), ``_residuals``,
    ``_kkt_gap`` (at the balanced iterate) and ``_result``.

    Parameters
    ----------
    factor : factor of K + rho I (``beta``, ``solve``)
    K_apply : callable or object with ``@``
        The unshifted kernel (approximation), for the KKT checks and the bias.
    y : ndarray of shape (n,)
    C : float > 0
    epsilon : float >= 0
    refactor : callable or None
        ``refactor(rho)`` -> factor: residual balancing (see :func:`svr_dual_admm`).
    w : ndarray or None
        ``factor.solve(ones)``, computed when None.
    options : SVRADMMOptions or None
        The tunables; None: the defaults.
    """

    def __init__(self, factor, K_apply, y, C, epsilon, *, refactor=None, w=None,
                 options=None):
        C = check_positive(C, "C")
        self.epsilon = check_epsilon(epsilon)
        options = options_with(SVRADMMOptions, options, {})
        self.y = check_target(y, np.shape(y)[0])
        n = self.y.shape[0]
        self.sqrt_n = np.sqrt(n)
        super().__init__(factor, K_apply, n, C, options, refactor, w)

    def _start_point(self, warm_start):
        """(z, mu): a warm start's, z clipped into [-C, C]; else zero."""
        if warm_start is None:
            return np.zeros(self.n), np.zeros(self.n)
        z = np.clip(np.asarray(warm_start["z"], dtype=np.float64), -self.C, self.C)
        return z, np.array(warm_start["mu"], dtype=np.float64)

    def _x_update(self):
        """x = u - (w^T q / 1^T w) w, u = (K + rho I)^-1 q, q = y + mu + rho z."""
        bal = self.balancer
        rho, w = bal.beta, bal.w
        q = self.y + self.mu + rho * self.z
        u = np.asarray(bal.factor.solve(q)).reshape(self.n)
        return u - (w @ q / bal.ew) * w

    def _project(self, t, rho):
        """z: the prox of eps |.| plus the box, soft-threshold then clip."""
        return np.clip(np.sign(t) * np.maximum(np.abs(t) - self.epsilon / rho, 0.0),
                       -self.C, self.C)

    def _residuals(self, x, z_old, rho):
        z, sqrt_n = self.z, self.sqrt_n
        nx, nz = np.linalg.norm(x), np.linalg.norm(z)
        rp = np.linalg.norm(x - z) / max(nx, nz, 1e-12 * self.C * sqrt_n)
        rd = rho * np.linalg.norm(z - z_old) / max(np.linalg.norm(self.mu), sqrt_n)
        return rp, rd

    def _kkt_gap(self):
        """The gap at the balanced iterate (what is returned): the gap alone does not see
        sum(z) != 0, and z can be near-optimal for another sum long before x = z."""
        zb = _balance(self.z)
        f = np.asarray(self.K_apply(zb)).reshape(self.n)
        return svr_kkt_gap(f, self.y, zb, self.C, self.epsilon)

    def _result(self):
        """The SVRADMMResult at the balanced z, its bias and (unconverged) its gap."""
        t0 = time.perf_counter()
        y, C, eps, kkt_tol = self.y, self.C, self.epsilon, self.options.kkt_tol
        zb = _balance(self.z)  # the iterate meets sum(b) = 0 only to the primal residual
        f = np.asarray(self.K_apply(zb)).reshape(self.n)
        bias = _svr_bias(f, y, zb, C, eps)
        if not self.converged:
            self.gap = svr_kkt_gap(f, y, zb, C, eps)
            self.converged = kkt_tol is not None and self.gap <= kkt_tol
        self.timings["bias"] = time.perf_counter() - t0
        bal = self.balancer
        return SVRADMMResult(C=C, epsilon=eps, beta=bal.beta, dual_coef=zb, bias=bias,
                             n_iter=self.n_iter, converged=self.converged, gap=self.gap,
                             primal_residuals=np.array(self.pres),
                             dual_residuals=np.array(self.dres), timings=self.timings,
                             state={"z": self.z, "mu": self.mu, "w": bal.w,
                                    "beta_floor": bal.floor})


def svr_dual_admm(factor, K_apply, y, C, epsilon, *, options=None, refactor=None, w=None,
                  warm_start=None, beta_floor=0.0):
    """The SVR dual at one C by closed-form ADMM on a factor of K + rho I (module docstring):
    ``SVRDualADMM(factor, K_apply, y, C, epsilon, ...).solve(warm_start, ...)`` in one call.

    Parameters
    ----------
    factor, K_apply, y, C, epsilon, w
        As :class:`SVRDualADMM`.
    options : SVRADMMOptions or None
        The tunables (None: the defaults): ``max_iter``; ``kkt_tol``, stop when LIBSVM's gap
        (:func:`svr_kkt_gap`, on the approximation) is below it, checked every
        ``kkt_every`` iterations with one product (None: ``max_iter`` iterations);
        ``relaxation`` in (0, 2); the penalty balancing's ``balance_ratio``,
        ``balance_factor`` and ``max_refactor``.
    refactor : callable or None
        ``refactor(rho)`` -> factor: residual balancing as in
        :func:`~hsskern.solvers.engines.admm.svm_dual_admm` (rho moved by ``balance_factor`` when the
        residuals differ by more than ``balance_ratio``, at most ``max_refactor`` times, never
        below ``beta_floor``, which rises when a refactorization is indefinite or the
        iterates diverge; :class:`~hsskern.solvers.engines.admm.PenaltyBalancer`).
    warm_start : mapping or None
        ``state`` of a previous result (its z is clipped into the new box).

    Returns
    -------
    SVRADMMResult
        ``beta`` is the shift in force at the end (``refactor``'s last factor).
    """
    options = options_with(SVRADMMOptions, options, {})
    solver = SVRDualADMM(factor, K_apply, y, C, epsilon, refactor=refactor, w=w,
                         options=options)
    del factor, w  # the solver holds the factor in force (old ones must be freed)
    return solver.solve(warm_start, beta_floor=beta_floor)


def _solution(C, rr, admm, beta, floor, scale=None):
    """A PathSolution from the decomposition's result and/or the ADMM's."""
    if rr is not None and rr.skipped is None:
        coef, bias, conv, gap = rr.dual_coef, rr.bias, rr.converged, rr.gap
    else:
        coef, bias, conv, gap = admm.dual_coef, admm.bias, admm.converged, admm.gap
    # only the phases that ran: the ADMM's, then its point refined; or the decomposition
    # alone (from zero or from the previous C)
    timings = {}
    if admm is not None:
        timings.update(admm=admm.timings["iterations"], refactor=admm.timings["refactor"],
                       bias=admm.timings["bias"], kkt=admm.timings["kkt"])
    if rr is not None and rr.skipped is None:
        timings["exact" if admm is not None else "decomposition"] = rr.time
    info = {"beta": beta, "beta_floor": floor, "admm": admm, "exact": rr,
            "admm_converged": None if admm is None else admm.converged, "scale": scale}
    return PathSolution(C=C, intercept=[bias], n_iter=0 if admm is None else admm.n_iter,
                        converged=conv, gap=gap, dual_coef=np.asarray(coef)[:, None],
                        timings=timings, info=info)


def hss_svr_path(problem, y, Cs, epsilon=0.1, *, options=None, settings=None, warn=True,
                 log=None, dual_start=None, start_decision=None):
    """epsilon-SVR for every C of an ascending grid on one prepared problem.

    Parameters
    ----------
    problem : HSSProblem
        From :func:`~hsskern.solvers.paths.hss_path.prepare_hss` (the classifier's preparation:
        the same compression and factor serve regression), or from
        :func:`~hsskern.solvers.paths.hss_path.prepare_decomposition`: then the first C is solved
        by the decomposition from zero (no ADMM; ``solve_exact`` must be true).
    y : ndarray of shape (n,) or (n, 1)
        Finite targets.
    Cs : sequence of float
        Sorted ascending here.
    epsilon : float >= 0
        Half-width of the insensitive tube.
    options : HSSSVROptions or None
        The path's options, handed down whole (None: :class:`~hsskern.HSSSVROptions`'
        defaults): the ADMM's ``admm_max_iter``, ``relaxation`` and ``adaptive_beta``
        (:func:`svr_dual_admm`); ``solve_exact``: make each C exact by decomposition
        (LIBSVM's 2n-variable form), "auto" skipping it when its first product, n x (number
        of support vectors), exceeds ``settings.exact_limit``; ``max_chunk`` and
        ``decomposition`` (working sets of ``decomposition.max_ws``, 8,000 by default here),
        the block decomposition's (:func:`~hsskern.solvers.engines.exact.solve_block`).
    settings : PathSettings or None
        ``tol``: the decomposition's stopping gap (LIBSVM's); ``admm_tol``: the ADMM's KKT
        gap on the approximation; ``n_decades``: reach the first C from C / 10^n_decades,
        one C per decade (their cost counted in the first solution).
    warn : bool
        A ``ConvergenceWarning`` for the C values whose solution misses its tolerance.
    log : callable or None
        ``log(level, line)``.
    dual_start : ndarray of shape (n,) or (n, 1), or None
        A start for the first C, b = alpha - alpha* (a previous fit's, mapped to these
        points: a refit's warm start), split into the 2n variables of least l1 norm and
        made feasible (clipped to [0, C], sum(b) = 0 restored by shrinking the heavier
        side). The exact decomposition solves the first C from it: no ADMM, no continuation
        (``n_decades`` is not used). ``solve_exact`` must be true.
    start_decision : ndarray of shape (n,) or (n, 1), or None
        ``K b`` of a *feasible* ``dual_start``; None: computed (one n x n_SV product).

    Returns
    -------
    tuple of PathSolution (``dual_coef`` of shape (n, 1): alpha - alpha*), ascending C.
    """
    o = HSSSVROptions() if options is None else options
    settings = PathSettings() if settings is None else settings
    solve_exact, exact_tol = o.solve_exact, settings.tol
    n = problem.n_samples
    y = check_target(y, n)
    Cs = check_Cs(Cs)
    epsilon = check_epsilon(epsilon)
    exact_start = problem.start == "decomposition"
    block = o.decomposition_options(decomposition_chunk(problem, solve_exact, o.max_chunk))
    admm_options = SVRADMMOptions(max_iter=o.admm_max_iter, kkt_tol=settings.admm_tol,
                                  relaxation=o.relaxation)
    yv, p, index = svr_variables(y, epsilon)
    first = first_f = None
    if dual_start is not None:
        b = np.asarray(dual_start, dtype=np.float64).reshape(-1)
        if b.shape != (n,) or not np.all(np.isfinite(b)):
            raise ValueError(f"dual_start must hold {n} finite values (alpha - alpha*), got "
                             f"shape {np.shape(dual_start)}")
        if not solve_exact:
            raise ValueError("dual_start is solved from by the exact decomposition: it "
                             "needs solve_exact=True or 'auto'")
        first = _split(b)
        first_f = None if start_decision is None else np.reshape(start_decision, n)
    n_extra = 0 if first is not None else int(settings.n_decades)
    grid = [Cs[0] * 10.0 ** -k for k in range(n_extra, 0, -1)] + list(Cs)
    # as hss_svm_path: no Lanczos suggestion, and no local reference to a factor (a rebalanced
    # rho replaces problem.factor; two factors alive at most)
    refactor = partial(problem.refactor, suggest=False) if o.adaptive_beta else None
    t0 = time.perf_counter()
    floor = problem.beta_floor
    w = None if exact_start else problem.factor.solve(np.ones(n))
    beta = np.nan if exact_start else problem.factor.beta
    setup = time.perf_counter() - t0
    K_apply = problem.approximation
    solutions, state, prev = [], None, None
    # one engine along the path: its block buffer serves every C
    dual, engine = DualProblem(problem.K, yv, p, index), BlockEngine(block)
    rlog = (lambda C: None if log is None else (lambda line: log(2, f"solve_exact C={C:g}:{line}")))
    for C in grid:
        t_c = time.perf_counter()
        if prev is not None or exact_start or first is not None:
            # the previous C's exact solution at its best scale, or the given start, or (no
            # approximation) zero
            s, a, f = None, first, first_f
            # a given start is near its answer (solvers.warm: small working sets)
            near = block.replace(**near_options(block.max_ws, start=first, C=C)) \
                if prev is None and first is not None else block
            if prev is not None:
                C_prev, pr = prev
                s, a, f = continuation_start(pr, C / C_prev, p)
            with threads_for(problem):
                rr = engine.solve(dual, C, DualStart(a, f), tol=exact_tol, options=near,
                                  log=rlog(C))
            sol = _solution(C, rr, None, beta, floor, scale=s)
        else:
            admm = svr_dual_admm(problem.factor, K_apply, y, C, epsilon, warm_start=state, w=w,
                                 refactor=refactor, beta_floor=floor, options=admm_options)
            w = admm.state["w"]
            state, floor = admm.state, admm.state["beta_floor"]
            rr = None
            if solve_exact:
                a = _split(admm.dual_coef)
                n_sv = int(np.count_nonzero(admm.dual_coef))
                limit = exact_limit(settings)
                if solve_exact == "auto" and n * n_sv > limit:
                    rr = ExactResult(alpha=a, dual_coef=admm.dual_coef.copy(), bias=np.nan,
                                      decision=None, converged=False,
                                      skipped=f"n x n_SV = {n} x {n_sv} kernel entries "
                                              f"exceed {limit:.0e} (solve_exact='auto')")
                else:
                    rr = engine.solve(dual, C, DualStart(a), tol=exact_tol, log=rlog(C))
            sol = _solution(C, rr, admm, beta, floor)
        if rr is not None and rr.skipped is None:
            prev = (C, rr)
        if not solutions and "admm" in sol.timings:  # the ADMM's setup solve
            sol = replace(sol, timings={**sol.timings, "admm": sol.timings["admm"] + setup})
        solutions.append(sol)
        if log is not None:
            steps = (f"{int(sol.n_iter[0])} ADMM iterations" if "admm" in sol.timings else
                     f"{rr.rounds} working sets of the block decomposition")
            log(1, f"C={C:g}: {steps}, gap {sol.gap[0]:.3g}, "
                   f"{np.count_nonzero(sol.dual_coef)} support vectors, "
                   f"{time.perf_counter() - t_c:.3g} s")
    if n_extra:  # the continuation's C are part of the first requested C's cost
        head, solutions = solutions[:n_extra + 1], solutions[n_extra:]
        timings = {k: sum(s.timings.get(k, 0.0) for s in head)
                   for k in dict.fromkeys(k for s in head for k in s.timings)}
        solutions[0] = replace(head[-1], timings=timings,
                               n_iter=sum(s.n_iter for s in head))
    if warn:
        _warn_unsolved(solutions, exact_tol if solve_exact else settings.admm_tol,
                       o.admm_max_iter)
    return tuple(solutions)


def _warn_unsolved(solutions, tol, max_iter):
    """One ConvergenceWarning for the C values whose solution missed ``tol``."""
    bad = [s for s in solutions if not s.converged.all()]
    if not bad:
        return
    why = []
    for s in bad[:5]:
        rr = s.info["exact"]
        if rr is None:
            why.append(f"C={s.C:.3g}: ADMM gap {s.gap[0]:.3g} after {max_iter} iterations")
        elif rr.skipped is not None:
            why.append(f"C={s.C:.3g}: exact solve skipped ({rr.skipped})")
        else:
            why.append(f"C={s.C:.3g}: decomposition gap {rr.gap:.3g} after {rr.rounds} rounds")
    msg = (f"the SVR did not reach tol={tol:g} for {len(bad)} of {len(solutions)} C value(s): "
           + "; ".join(why) + ("; ..." if len(bad) > 5 else ""))
    if max(s.info["beta_floor"] for s in solutions) > 0:
        msg += (" (the approximation is indefinite: tighten rel_tol or raise max_rank)")
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)


@dataclass(frozen=True)
class SVRBackend:
    """The path protocol for epsilon-SVR on the HSS (or dense) factor.

    ``prepare`` is the classifier's (:class:`~hsskern.solvers.paths.hss_path.HSSBackend` with these
    options: memory checked first, then :func:`~hsskern.solvers.paths.hss_path.prepare_hss`, or
    :func:`~hsskern.solvers.paths.hss_path.prepare_decomposition` for the start from zero; the
    default ``start="admm"`` is what the tests of the ADMM route build on), ``path`` is
    :func:`hss_svr_path` with these options (``Y`` one target column), ``model`` a
    :class:`~hsskern.solvers.paths.path.KernelExpansion` over the support vectors. ``options``
    (an :class:`~hsskern.HSSSVROptions`) is handed down whole, ``settings``
    (:class:`~hsskern.options.PathSettings`) holds what the estimator resolved.
    """

    kernel: object
    options: HSSSVROptions = HSSSVROptions(start="admm")
    settings: PathSettings = PathSettings()
    epsilon: float = 0.1
    memory_budget: float = None
    log: object = None

    @property
    def hss_options(self):
        """The compression's :class:`~hsskern.options.HSSOptions` (with the seed and the
        verbosity of ``settings``)."""
        return self.options.hss_options(self.settings.random_state, self.settings.verbose)

    def _hss_backend(self):
        # the start rule takes solve_exact="auto" as on: the SVR's exact step is its answer
        options = self.options.replace(solve_exact=bool(self.options.solve_exact))
        return HSSBackend(self.kernel, options, self.settings,
                          memory_budget=self.memory_budget, log=self.log)

    def memory_estimate(self, n, d, max_rank=None):
        """Bytes by phase of a fit on n points (the classifier's estimate, one column)."""
        return self._hss_backend().memory_estimate(n, d, 1, max_rank=max_rank)

    def prepare(self, X, Y=None):
        """The problem of the points X (the targets are not needed; the 2n-variable
        decomposition keeps two label columns' worth of vectors, which sizes the estimate)."""
        return self._hss_backend().prepare(X, np.empty((0, 2)))

    def warm_backend(self, entries=None):
        """This backend for a path from a given start (``path``'s ``dual_start``), or None
        where it would not solve the first C exactly (as
        :meth:`~hsskern.solvers.paths.hss_path.HSSBackend.warm_backend`: the problem is then
        prepared for the exact decomposition alone)."""
        solve_exact = self.options.solve_exact
        if not solve_exact or (solve_exact == "auto" and entries is not None
                          and entries > exact_limit(self.settings)):
            return None
        # no stored K: a start near the answer reads a few columns of it
        return replace(self, options=self.options.replace(start="decomposition"),
                       settings=self.settings.replace(n_decades=0, store_kernel=None))

    def path(self, prepared, Y, Cs, dual_start=None, start_decision=None):
        """:func:`hss_svr_path` with these options for the one target column of ``Y``
        (``dual_start`` and its ``start_decision``: see :meth:`warm_backend`)."""
        return hss_svr_path(prepared, Y, Cs, self.epsilon, options=self.options,
                            settings=self.settings, log=self.log, dual_start=dual_start,
                            start_decision=start_decision)

    def model(self, prepared, solutions):
        return KernelExpansion(prepared.K.points, self.kernel, solutions)
