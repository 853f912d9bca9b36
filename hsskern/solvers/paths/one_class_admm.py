"""Dual ADMM for LIBSVM's one-class SVM on one factor of K + beta I: a start for the exact engine.

LIBSVM's one-class dual, in its scaling (the bound 1, the sum nu n),

    min_a  1/2 a^T K a    s.t.  0 <= a <= 1,  e^T a = nu n,

is split as x = z, as the classifier's dual is (:mod:`hsskern.solvers.engines.admm`): x carries the
equality, whose x-step is closed form on the factor of K + beta I with w = (K + beta I)^{-1} e,

    x = u - lam w,   u = (K + beta I)^{-1} (mu + beta z),   lam = (e^T u - nu n) / e^T w,

one solve an iteration; z carries the box *and* the equality: the z-step is the Euclidean
projection onto {0 <= z <= 1, e^T z = nu n} (:func:`project_capped_simplex`, a box and one
equality: a shift found on the sorted breakpoints), so every iterate z is a feasible point of
the exact dual. The factor depends neither on nu nor on anything but the kernel and beta: a nu
path runs on one factor, each nu warm-started from the last one's (z, mu).

The ADMM's answer is a start, never the answer: the exact engine
(:func:`~hsskern.solvers.engines.cached_smo.solve_dual`) takes z, feasible as it is, and solves to
LIBSVM's tolerance on the exact kernel. The penalty is rebalanced from the residuals by the
classifier's :class:`~hsskern.solvers.engines.admm.PenaltyBalancer` (one refactorization a move, no
recompression).
"""
import time
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType

import numpy as np

from ...utils.validation import check_positive
from ..engines.admm import PenaltyBalancer, PenaltyOptions
from .hss_path import HSSBackend

__all__ = ["OneClassADMMOptions", "OneClassADMM", "OneClassADMMResult",
           "project_capped_simplex", "one_class_gap", "prepare_one_class_admm"]


def project_capped_simplex(v, total, upper=1.0):
    """The Euclidean projection of v onto {z : 0 <= z <= upper, sum z = total}.

    The projection is z = clip(v - tau, 0, upper) for the shift tau that makes the sum
    ``total``; phi(tau) = sum clip(v - tau, 0, upper) is piecewise linear and nonincreasing,
    its breakpoints v_i - upper and v_i. A bisection over the sorted breakpoints finds the
    segment holding ``total`` (O(log n) sums of n terms) and tau is the linear interpolation
    there, exact up to rounding: O(n log n) in all.

    Parameters
    ----------
    v : ndarray of shape (n,)
    total : float
        In [0, n upper].
    upper : float, default 1.0
        > 0.

    Returns
    -------
    ndarray of shape (n,)
    """
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    n = v.size
    upper = float(upper)
    total = float(total)
    if not upper > 0:
        raise ValueError(f"upper must be > 0, got {upper!r}")
    if not 0.0 <= total <= n * upper * (1 + 1e-12):
        raise ValueError(f"the set is empty: total={total!r} outside [0, {n * upper!r}]")
    if n == 0:
        return v.copy()
    bp = np.sort(np.concatenate([v - upper, v]))

    def phi(tau):
        return float(np.clip(v - tau, 0.0, upper).sum())

    # phi(bp[0]) = n upper >= total >= 0 = phi(bp[-1])
    lo, hi = 0, bp.size - 1
    f_lo, f_hi = n * upper, 0.0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        f_mid = phi(bp[mid])
        if f_mid >= total:
            lo, f_lo = mid, f_mid
        else:
            hi, f_hi = mid, f_mid
    if f_lo == f_hi:
        tau = bp[lo]
    else:  # phi is linear between consecutive breakpoints
        tau = bp[lo] + (f_lo - total) / (f_lo - f_hi) * (bp[hi] - bp[lo])
    return np.clip(v - tau, 0.0, upper)


def one_class_gap(G, alpha, upper=1.0):
    """LIBSVM's stopping measure m(a) - M(a) of the one-class dual (every y = +1): the
    largest -G over the variables that may grow (a < upper) minus the smallest over those
    that may shrink (a > 0); G = K a is the gradient. 0 at the optimum."""
    eps = 1e-12 * upper
    g = -np.asarray(G, dtype=np.float64)
    up, low = alpha < upper - eps, alpha > eps
    if not up.any() or not low.any():
        return 0.0
    return max(float(g[up].max() - g[low].min()), 0.0)


@dataclass(frozen=True, repr=False)
class OneClassADMMOptions(PenaltyOptions):
    """How :class:`OneClassADMM` runs (the penalty balancing's fields are
    :class:`~hsskern.solvers.engines.admm.PenaltyOptions`').

    Parameters
    ----------
    max_iter : int, default 50
        Iterations per nu (one factor solve each).
    tol : float or None, default None
        Stop when the gap (:func:`one_class_gap`, on the approximation's product) divided
        by max(1, nu n) is at most ``tol``; checked every ``kkt_every`` iterations at one
        product with the approximation each. None: run ``max_iter`` iterations.
    kkt_every : int, default 10
    relaxation : float in (0, 2), default 1.6
        Over-relaxation, as the classifier's ADMM.
    balance_ratio, balance_factor, max_refactor
        As :class:`~hsskern.solvers.engines.admm.PenaltyOptions` (``max_refactor`` per nu).
    """

    max_iter: int = 50
    tol: float = None
    kkt_every: int = 10
    relaxation: float = 1.6

    def _check(self):
        check_positive(self.max_iter, "max_iter", integer=True, minimum=1)
        check_positive(self.tol, "tol", allow_none=True)
        check_positive(self.kkt_every, "kkt_every", integer=True, minimum=1)
        if not 0.0 < self.relaxation < 2.0:
            raise ValueError(f"relaxation must be in (0, 2), got {self.relaxation!r}")


@dataclass(frozen=True, eq=False)
class OneClassADMMResult:
    """One nu's ADMM.

    Attributes
    ----------
    nu : float
    alpha : ndarray of shape (n,)
        The z iterate: feasible (0 <= alpha <= 1, sum alpha = nu n up to rounding).
    beta : float
        The penalty in force at the end.
    n_iter : int
    converged : bool
        Whether ``tol`` was met (False when it is None).
    primal_residuals, dual_residuals : ndarray of shape (n_iter,)
        ||x - z|| / max(||x||, ||z||) and beta ||z - z_prev|| / max(||mu||, sqrt n).
    gap_history : list of (iteration, gap)
        The gaps measured (with ``tol``), on the approximation.
    timings : mapping
        Seconds: ``iterations``, ``refactor``, ``kkt``.
    state : mapping
        ``z``, ``mu``, ``beta_floor``: what warm-starts the next nu.
    """

    nu: float
    alpha: np.ndarray
    beta: float
    n_iter: int
    converged: bool
    primal_residuals: np.ndarray
    dual_residuals: np.ndarray
    gap_history: list = field(default_factory=list)
    timings: object = field(default_factory=dict)
    state: object = field(default_factory=dict, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))
        object.__setattr__(self, "state", MappingProxyType(dict(self.state)))


class OneClassADMM:
    """The one-class dual's ADMM on one factor of K + beta I (see the module's text).

    The state is the iterates (``z``, ``mu``), the penalty and its factor (held by a
    :class:`~hsskern.solvers.engines.admm.PenaltyBalancer`, with w = (K + beta I)^{-1} e) and the
    equality's right-hand side ``total`` = nu n; the steps are :meth:`x_step`,
    :meth:`z_step` and :meth:`gap`; :meth:`solve` runs them for one nu.

    Parameters
    ----------
    factor : factor of K + beta I
        Any object of the :mod:`hsskern.factors` protocol (``beta``, ``solve``).
    K_apply : LinearOperator, ndarray or callable
        The unshifted kernel (approximation): ``K_apply @ v`` or ``K_apply(v)``; used only
        for the gap checks (``options.tol``).
    options : OneClassADMMOptions
    refactor : callable or None
        ``refactor(beta) -> factor`` of K + beta I (residual balancing); None: beta fixed.
    beta_floor : float, default 0.0
        Balancing never moves beta below it.
    """

    def __init__(self, factor, K_apply, options=OneClassADMMOptions(), *, refactor=None,
                 beta_floor=0.0):
        n = factor.shape[0] if getattr(factor, "shape", None) is not None else None
        if n is None:
            raise ValueError("the factor must have a shape (n, n)")
        self.n = int(n)
        self.options = options
        self._apply = K_apply if callable(K_apply) and not hasattr(K_apply, "shape") else (
            lambda v: K_apply @ v)
        self.timings = {"iterations": 0.0, "refactor": 0.0, "kkt": 0.0}
        o = options
        self.balancer = PenaltyBalancer(factor, refactor, self.n, floor=beta_floor,
                                        timings=self.timings, **o.balancer_options())
        self.total = None
        self.z = self.mu = None

    def reset(self, nu, warm=None):
        """Set the problem of ``nu``: z from ``warm`` (a result's ``state``) projected onto
        the new set, or the uniform point nu; mu from ``warm`` or 0."""
        nu = check_positive(nu, "nu")
        if nu > 1:
            raise ValueError(f"nu must lie in (0, 1], got {nu!r}")
        self.nu, self.total = float(nu), float(nu) * self.n
        if warm is None:
            self.z, self.mu = np.full(self.n, self.nu), np.zeros(self.n)
        else:
            self.z = project_capped_simplex(np.asarray(warm["z"], dtype=np.float64),
                                            self.total)
            self.mu = np.array(warm["mu"], dtype=np.float64).reshape(self.n)
        self.balancer.n_refactor = 0  # max_refactor moves per nu

    def x_step(self):
        """x = argmin 1/2 x^T K x - mu^T (x - z) + beta/2 |x - z|^2 over e^T x = nu n:
        one solve with the factor."""
        bal = self.balancer
        u = np.asarray(bal.factor.solve(self.mu + bal.beta * self.z),
                       dtype=np.float64).reshape(self.n)
        lam = (u.sum() - self.total) / bal.ew
        return u - lam * bal.w

    def z_step(self, x):
        """z = the projection of the (relaxed) x - mu / beta onto the feasible set, then the
        multiplier's step; returns the relative (primal, dual) residuals."""
        beta, rel = self.balancer.beta, self.options.relaxation
        xh = rel * x + (1.0 - rel) * self.z if rel != 1.0 else x
        z_old = self.z
        self.z = project_capped_simplex(xh - self.mu / beta, self.total)
        self.mu = self.mu - beta * (xh - self.z)
        nx, nz = np.linalg.norm(x), np.linalg.norm(self.z)
        rp = np.linalg.norm(x - self.z) / max(nx, nz, 1e-300)
        rd = beta * np.linalg.norm(self.z - z_old) / max(np.linalg.norm(self.mu),
                                                          np.sqrt(self.n))
        return float(rp), float(rd)

    def gap(self):
        """:func:`one_class_gap` of z on the approximation (one product)."""
        t0 = time.perf_counter()
        G = np.asarray(self._apply(self.z), dtype=np.float64).reshape(self.n)
        g = one_class_gap(G, self.z)
        self.timings["kkt"] += time.perf_counter() - t0
        return g

    def solve(self, nu, warm=None, callback=None):
        """Run for ``nu`` (from ``warm``, a previous result's ``state``); ``callback(k, z,
        rp, rd)`` after each iteration.

        Returns
        -------
        OneClassADMMResult
        """
        o, bal = self.options, self.balancer
        self.reset(nu, warm)
        t0, r0, k0 = time.perf_counter(), self.timings["refactor"], self.timings["kkt"]
        pres, dres, gaps, converged, k = [], [], [], False, 0
        scale = max(1.0, self.total)
        for k in range(1, o.max_iter + 1):
            rp, rd = self.z_step(self.x_step())
            pres.append(rp)
            dres.append(rd)
            if callback is not None:
                callback(k, self.z, rp, rd)
            if o.tol is not None and k % o.kkt_every == 0:
                g = self.gap()
                gaps.append((k, g))
                if g <= o.tol * scale:
                    converged = True
                    break
                restart = bal.check(g / scale, self.z, self.mu)
                if restart is not None:  # diverging on an indefinite approximation
                    self.z, self.mu = restart
                    continue
            if k < o.max_iter:
                bal.balance(rp, rd)
        spent = time.perf_counter() - t0
        timings = {"iterations": spent - (self.timings["refactor"] - r0)
                   - (self.timings["kkt"] - k0),
                   "refactor": self.timings["refactor"] - r0, "kkt": self.timings["kkt"] - k0}
        return OneClassADMMResult(
            nu=self.nu, alpha=self.z.copy(), beta=bal.beta, n_iter=k, converged=converged,
            primal_residuals=np.array(pres), dual_residuals=np.array(dres), gap_history=gaps,
            timings=timings, state={"z": self.z.copy(), "mu": self.mu.copy(),
                                    "beta_floor": bal.floor})


def prepare_one_class_admm(X, kernel, *, approximation="hss", hss_options=None, beta=None,
                           adaptive_beta=True, options=OneClassADMMOptions(),
                           memory_budget=None, log=None):
    """The classifier's preparation of X (:class:`~hsskern.solvers.paths.hss_path.HSSBackend`'s:
    the HSS approximation of K, or the dense K with ``approximation="exact"``, and one
    factor of it + beta I, memory checked first) and a :class:`OneClassADMM` on its factor.

    Returns
    -------
    (HSSProblem, OneClassADMM)
        The problem holds the factor in force (a rebalanced beta replaces it there).
    """
    backend = HSSBackend.of_compression(kernel, hss_options, memory_budget=memory_budget,
                                        log=log, approximation=approximation, beta=beta,
                                        adaptive_beta=adaptive_beta, solve_exact=False)
    problem = backend.prepare(X)
    refactor = partial(problem.refactor, suggest=False) if adaptive_beta else None
    admm = OneClassADMM(problem.factor, problem.approximation, options, refactor=refactor,
                        beta_floor=problem.beta_floor)
    return problem, admm
