"""Dual ADMM for the kernel SVM on one factor of K + beta I (Cipolla & Gondzio, Algorithm 2).

The SVM dual

    min_a  1/2 a^T Y K Y a - e^T a    s.t.  y^T a = 0,  0 <= a <= C

is split as x = z with x carrying the equality constraint and z the box. The x-step is an
equality-constrained quadratic whose KKT system reduces, with w = (K + beta I)^{-1} e and
u = (K + beta I)^{-1} Y q, to

    x = Y (u - (w^T Y q / e^T w) w),      q = e + mu + beta z,

so each iteration costs ONE solve with the factor (a block solve for several label vectors: w does
not depend on the labels, so every one-vs-rest class and every C share the same factor and w).
The z-step is a clip to [0, C] and mu the (unscaled) multiplier of x = z. With per-point
weights (LIBSVM's weighted C: point i's hinge loss counts w_i times) the box is
0 <= a_i <= C w_i and nothing else changes: the clip is per point, and the KKT sets and the
bias read each point's own bound.

Deviations from the paper's printed text (see ARCHITECTURE.md "Numerical notes"):

* its Algorithm 3 line 11 applies the solve to x^k; the x-step needs q^k (Algorithm 2);
* its bias formula (2)/(7) has the sign flipped; from the KKT conditions, over the margin support
  vectors M = {j : 0 < a_j < C},  b = mean_{j in M} (y_j - (K (y o a))_j), computed with one
  product with the *unshifted* kernel (approximation).

Beyond the paper: an optional stopping test on relative primal/dual residuals, over-relaxation,
warm starts along a C path, and residual-balanced beta (each new beta costs one refactorization,
never a recompression). See ``default_beta`` for the beta schedule.

:class:`DualADMM` holds one problem and its state, each step of an iteration a method;
:class:`DualADMMOptions` its tunables; :func:`svm_dual_admm` is the one-call form.
:class:`SplitADMM` is the loop it shares with the SVR's ADMM
(:class:`~hsskern.solvers.paths.svr_path.SVRDualADMM`), :class:`PenaltyBalancer` their beta.
"""
import time
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from ...exceptions import NotPositiveDefiniteError
from ...options import OptionsBase, check_number, options_with
from ...utils.validation import check_positive
from ...utils.validation import check_weights

__all__ = ["ADMMResult", "PenaltyBalancer", "PenaltyOptions", "DualADMM", "DualADMMOptions",
           "SplitADMM", "default_beta", "svm_dual_admm", "svm_dual_admm_path",
           "kkt_violation", "dual_objective"]


def default_beta(n):
    """ADMM penalty beta by training-set size: the paper's schedule, extended below 1e4.

    The paper uses beta = 1e2 for n in [1e4, 1e5), 1e3 for [1e5, 1e6) and 1e4 from 1e6 on. It
    gives no value below 1e4; there we use 10. The best fixed beta depends on C as much as on n
    (roughly beta ~ 0.3/C to 3/C; ``bench/admm_beta.py``), so no schedule by n alone is
    right for a whole C grid: the estimators start from this value
    and rebalance beta from the residuals (one refactorization per move, no recompression).

    Parameters
    ----------
    n : int
        Number of training points.

    Returns
    -------
    float
    """
    if n < 1e4:
        return 10.0
    if n < 1e5:
        return 1e2
    if n < 1e6:
        return 1e3
    return 1e4


@dataclass(frozen=True, eq=False)
class ADMMResult:
    """The outcome of the dual ADMM for one C (and one or several label vectors).

    With ``r`` label vectors (columns of ``y``) the per-column quantities have a trailing axis of
    length ``r``; for a 1-D ``y`` they are squeezed.

    Attributes
    ----------
    C : float
    beta : float
        Penalty in force at the end (differs from the start with residual balancing).
    alpha : ndarray of shape (n,) or (n, r)
        Dual coefficients in [0, C] (in [0, C w_i] with weights; the z iterate: box-feasible
        by construction).
    dual_coef : ndarray of shape (n,) or (n, r)
        ``y * alpha``: the expansion coefficients of the decision function.
    bias : float or ndarray of shape (r,)
        Intercept b of ``f(x) = sum_i dual_coef_i k(x_i, x) + b``.
    n_iter : int
    converged : bool
        Whether the residual tolerance was met (always False when ``tol`` is None).
    primal_residuals, dual_residuals : ndarray of shape (n_iter,) or (n_iter, r)
        Relative residuals ||x - z|| / max(||x||, ||z||) and
        beta ||z - z_prev|| / max(||mu||, ||e||) per iteration.
    equality_residual : float or ndarray (r,)
        |y^T alpha| / (C sqrt(n)).
    objective : float or ndarray (r,)
        Dual objective 1/2 a^T Y K Y a - e^T a with the unshifted kernel (approximation).
    n_margin : int or ndarray (r,)
        Number of margin support vectors used for the bias.
    timings : dict
        Seconds: ``setup`` (the e-solve, when not supplied), ``iterations``, ``bias``,
        ``refactor`` (residual balancing), ``kkt`` (optimality checks).
    kkt_history : list of (iteration, gap)
        The optimality gaps measured when ``kkt_tol`` is set.
    state : mapping
        ``z``, ``mu``, ``w``, ``KYa`` and ``beta_floor``: what warm-starts the next C. The
        factor is not kept here (it is O(n r) memory): the solver's ``factor`` is the one in force.
    """

    C: float
    beta: float
    alpha: np.ndarray
    dual_coef: np.ndarray
    bias: object
    n_iter: int
    converged: bool
    primal_residuals: np.ndarray
    dual_residuals: np.ndarray
    equality_residual: object
    objective: object
    n_margin: object
    timings: dict = field(default_factory=dict)
    kkt_history: list = field(default_factory=list)
    state: object = field(default_factory=dict, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))
        object.__setattr__(self, "state", MappingProxyType(dict(self.state)))

    def __reduce__(self):  # mappingproxy does not pickle
        kw = {f: getattr(self, f) for f in self.__dataclass_fields__}
        kw["timings"], kw["state"] = dict(self.timings), dict(self.state)
        return (_rebuild_result, (kw,))


def _rebuild_result(kw):
    return ADMMResult(**kw)


def _as_apply(K_apply):
    if callable(K_apply) and not hasattr(K_apply, "shape"):
        return K_apply
    return lambda V: K_apply @ V


def _squeeze(a, one):
    if not one:
        return a
    a = np.asarray(a)
    return a[..., 0] if a.ndim >= 1 else a


def dual_objective(KYa, Ya, alpha):
    """``1/2 (y o a)^T K (y o a) - e^T a`` per column, from a precomputed ``K (y o a)``."""
    return 0.5 * np.einsum("ij,ij->j", Ya, KYa) - alpha.sum(axis=0)


# an alpha within bound_eps * C of a bound counts as at the bound: float64 round-off of
# C-scaled sums, not a tunable
bound_eps = 1e-12


def kkt_sets(y, alpha, C):
    """LIBSVM's index sets I_up (y alpha may grow) and I_low (it may shrink), as masks.

    ``C`` is the upper bound: a scalar, or one per point (broadcasting against ``alpha``).
    An alpha within ``bound_eps * C`` of a bound counts as at the bound; the free points
    (strictly inside the box) are ``up & low``. A point whose bound is 0 is in neither set.
    """
    eps = bound_eps * C
    up = ((y > 0) & (alpha < C - eps)) | ((y < 0) & (alpha > eps))
    low = ((y > 0) & (alpha > eps)) | ((y < 0) & (alpha < C - eps))
    return up, low


def kkt_violation(KYa, y, alpha, C):
    """LIBSVM's stopping measure m(a) - M(a) of the dual (0 at the optimum; LIBSVM stops at 1e-3).

    Parameters
    ----------
    KYa : ndarray of shape (n, r)
        ``K (y o alpha)``.
    y : ndarray of shape (n, r) in {-1, +1}
    alpha : ndarray of shape (n, r)
    C : float or ndarray of shape (n, 1)
        The upper bound, per point with weights.

    Returns
    -------
    ndarray of shape (r,)
    """
    # -y_i grad_i with grad = Y K Y a - e, so -y_i grad_i = y_i - (K Y a)_i
    g = y - KYa
    up, low = kkt_sets(y, alpha, C)
    m = np.where(up, g, -np.inf).max(axis=0)
    M = np.where(low, g, np.inf).min(axis=0)
    return np.maximum(m - M, 0.0)


def _bias(KYa, y, alpha, C, margin_eps):
    """Intercepts from the margin set; LIBSVM's interval midpoint when the margin set is empty.

    ``C`` is a scalar or per-point bounds of shape (n, 1); a point of bound 0 (weight 0)
    constrains nothing.
    """
    per_point = np.ndim(C) > 0
    lo_eps, hi_eps = margin_eps * C, C - margin_eps * C
    if per_point:
        lo_eps, hi_eps = (np.broadcast_to(a, alpha.shape) for a in (lo_eps, hi_eps))
    g = y - KYa  # y_j - (K Y a)_j: the bias each point would imply if it were on the margin
    margin = (alpha > lo_eps) & (alpha < hi_eps)
    n_margin = margin.sum(axis=0)
    b = np.empty(y.shape[1])
    for j in range(y.shape[1]):
        if n_margin[j]:
            b[j] = g[margin[:, j], j].mean()
            continue
        # no free SV: b lies in [max lower, min upper] implied by the bound constraints
        at_lo = alpha[:, j] <= (lo_eps[:, j] if per_point else lo_eps)
        at_hi = ~at_lo
        if per_point:  # alpha = 0 = C w_i is at both bounds: no constraint on b
            live = hi_eps[:, j] > 0
            at_lo &= live
            at_hi &= live
        pos = y[:, j] > 0
        lower = np.concatenate([g[at_lo & pos, j], g[at_hi & ~pos, j]])
        upper = np.concatenate([g[at_lo & ~pos, j], g[at_hi & pos, j]])
        lb = lower.max() if lower.size else -np.inf
        ub = upper.min() if upper.size else np.inf
        if np.isfinite(lb) and np.isfinite(ub):
            b[j] = 0.5 * (lb + ub)
        else:
            b[j] = lb if np.isfinite(lb) else (ub if np.isfinite(ub) else 0.0)
    return b, n_margin


def _check_labels(y):
    y = np.asarray(y, dtype=np.float64)
    one = y.ndim == 1
    Y = y.reshape(len(y), -1)
    if not np.all(np.abs(Y) == 1):
        raise ValueError("y must hold labels in {-1, +1}")
    return np.ascontiguousarray(Y), one


class PenaltyBalancer:
    """The penalty beta of a dual ADMM on a factor of K + beta I: residual balancing by
    refactorizations and the guard against divergence, shared by both dual ADMMs
    (:func:`svm_dual_admm`, :func:`~hsskern.solvers.paths.svr_path.svr_dual_admm`).

    It holds the factor in force (the caller keeps no reference of its own: after a
    refactorization the old factor is freed, two alive at most), beta, w = (K + beta I)^-1 e
    and e^T w, and the floor below which beta never moves (raised when a shift is indefinite
    or the iterates diverge). ``refactor(beta) -> factor`` None: beta stays fixed.
    """

    def __init__(self, factor, refactor, n, *, w=None, floor=0.0, balance_ratio=10.0,
                 balance_factor=10.0, max_refactor=2, timings=None):
        self.factor, self.refactor = factor, refactor
        self.beta = float(factor.beta)
        self.w = np.asarray(factor.solve(np.ones(n)) if w is None else w,
                            dtype=np.float64).reshape(n)
        self.ew = float(self.w.sum())
        self.floor = float(floor)
        self.ratio, self.step, self.max_refactor = balance_ratio, balance_factor, max_refactor
        self.n_refactor = 0
        self.timings = timings if timings is not None else {"refactor": 0.0}
        self._best = None  # (gap, z, mu, beta) at the best KKT check

    def move(self, new_beta):
        """Refactor at new_beta; on an indefinite matrix raise the floor instead (False)."""
        t0 = time.perf_counter()
        try:  # a failed shift only raises the floor: callers need not ask for a suggestion
            new = self.refactor(new_beta)
        except NotPositiveDefiniteError as exc:
            self.floor = max(self.floor,
                             2.0 * (exc.suggested_beta or new_beta * self.step),
                             new_beta * self.step ** 0.5)
            return False
        finally:
            self.timings["refactor"] += time.perf_counter() - t0
        self.factor, self.beta = new, float(new.beta)
        self.w = np.asarray(new.solve(np.ones(self.w.size)), dtype=np.float64).reshape(-1)
        self.ew = float(self.w.sum())
        return True

    def check(self, gap, z, mu):
        """After a KKT check with gap ``gap``: None to go on, or the (z, mu) of the best check
        to restart from when the gap diverged (an indefinite approximation: beta rises past
        the best check's by ``balance_factor`` and stays there)."""
        best = self._best
        if best is not None and not (np.isfinite(gap) and (gap <= 10.0 * best[0] or gap <= 1.0)):
            self.floor = max(self.floor, self.step * best[3])
            if self.refactor is not None:
                self.move(self.floor)
            self.n_refactor = self.max_refactor
            return best[1], best[2]
        if best is None or gap <= best[0]:
            self._best = (gap, z.copy(), mu.copy(), self.beta)
        return None

    def balance(self, rp, rd):
        """Move beta by ``balance_factor`` when the primal residual ``rp`` and the dual one
        ``rd`` differ by more than ``balance_ratio`` (at most ``max_refactor`` times)."""
        if self.refactor is None or self.n_refactor >= self.max_refactor:
            return
        new_beta = None
        if rp > self.ratio * rd:
            new_beta = self.beta * self.step
        elif rd > self.ratio * rp and self.beta > self.floor:
            new_beta = max(self.beta / self.step, self.floor)
        if new_beta is not None:
            self.n_refactor += 1
            if not self.move(new_beta):
                self.n_refactor = self.max_refactor  # indefinite below: keep the factor we have


@dataclass(frozen=True, repr=False)
class PenaltyOptions(OptionsBase):
    """The tunables of :class:`PenaltyBalancer`, shared by both dual ADMMs' options.

    Parameters
    ----------
    balance_ratio : float, default 10.0
        beta moves when the primal and the dual residuals differ by more than this factor.
    balance_factor : float, default 10.0
        The factor beta moves by (and rises by past the best check when the iterates diverge).
    max_refactor : int, default 2
        Rebalancing refactorizations per solve.
    """

    balance_ratio: float = 10.0
    balance_factor: float = 10.0
    max_refactor: int = 2

    def _check(self):
        check_number("balance_ratio", self.balance_ratio, open_low=True)
        check_number("balance_factor", self.balance_factor, open_low=True)
        check_number("max_refactor", self.max_refactor, integer=True)

    def balancer_options(self):
        """The keywords :class:`PenaltyBalancer` takes."""
        return dict(balance_ratio=self.balance_ratio, balance_factor=self.balance_factor,
                    max_refactor=self.max_refactor)


@dataclass(frozen=True, repr=False)
class DualADMMOptions(PenaltyOptions):
    """The tunables of :class:`DualADMM` (the SVM dual), one set of defaults: the paper's
    setting (10 plain iterations, no other stopping test). The estimators' own choices
    (``relaxation=1.6``, a KKT gap) come from :class:`~hsskern.options.ADMMOptions` and the
    path's arguments, which build these.

    Parameters
    ----------
    max_iter : int, default 10
        Iterations.
    tol : float or None, default None
        Stop when every column's relative primal and dual residuals are both <= tol.
    kkt_tol : float or None, default None
        Stop when LIBSVM's optimality gap of the z iterate is <= kkt_tol in every column,
        checked every ``kkt_every`` iterations (one product with the unshifted kernel).
    kkt_every : int, default 10
    relaxation : float in (0, 2), default 1.0
        Over-relaxation (1.0 is the paper's plain ADMM).
    margin_eps : float, default 1e-5
        a_j is on the margin (and sets the bias) when ``margin_eps * C < a_j <
        (1 - margin_eps) * C``.
    balance_ratio, balance_factor, max_refactor
        See :class:`PenaltyOptions` (defaults 10, 10, 2).
    """

    max_iter: int = 10
    tol: float = None
    kkt_tol: float = None
    kkt_every: int = 10
    relaxation: float = 1.0
    margin_eps: float = 1e-5

    def _check(self):
        check_iteration_options(self)
        check_number("tol", self.tol, allow_none=True)
        check_number("margin_eps", self.margin_eps)
        if not self.margin_eps < 0.5:
            raise ValueError(f"margin_eps must be < 0.5, got "
                             f"{self.margin_eps!r}")


def check_iteration_options(options):
    """The fields both dual ADMMs' options have: ``max_iter``, ``kkt_tol``, ``kkt_every``,
    ``relaxation``."""
    check_number("max_iter", options.max_iter, integer=True)
    check_number("kkt_tol", options.kkt_tol, allow_none=True)
    check_number("kkt_every", options.kkt_every, low=1, integer=True)
    relaxation = options.relaxation
    if not (isinstance(relaxation, (int, float, np.integer, np.floating))
            and 0.0 < relaxation < 2.0):
        raise ValueError(f"relaxation must be in (0, 2), got {relaxation}")


class SplitADMM:
    """The loop both dual ADMMs share (:class:`DualADMM` for the SVM,
    :class:`~hsskern.solvers.paths.svr_path.SVRDualADMM` for the SVR): x carries the quadratic
    and the equality, z the box (and the SVR's l1 term), mu the multiplier of x = z.

    A subclass gives the steps that differ: ``_start_point`` (z and mu from a warm start),
    ``_x_update`` (one solve with the factor of K + beta I), ``_project`` (z as the prox
    of the box part), ``_residuals``, ``_kkt_gap`` (LIBSVM's gap at the current z) and
    ``_result``. The state lives on the object: ``z``, ``mu``, the residual histories,
    ``n_iter``, ``converged``, ``gap``; the factor in force, beta and w are the
    :class:`PenaltyBalancer`'s (``balancer``). One object solves once.
    """

    _timing_keys = ("iterations", "refactor", "kkt", "bias")

    def __init__(self, factor, K_apply, n, C, options, refactor, w):
        self.n, self.C, self.options = n, C, options
        self.K_apply = _as_apply(K_apply)
        self.timings = dict.fromkeys(self._timing_keys, 0.0)
        self.balancer = PenaltyBalancer(factor, refactor, n, w=w, timings=self.timings,
                                        **options.balancer_options())

    @property
    def factor(self):
        """The factor of K + beta I in force (a new one after a rebalancing)."""
        return self.balancer.factor

    def solve(self, warm_start=None, *, beta_floor=0.0, callback=None):
        """Iterate from ``warm_start`` (a previous result's ``state``; None: z = mu = 0)
        until a stopping test holds or ``max_iter`` iterations; the result of
        :meth:`_result`. ``beta_floor``: rebalancing never moves beta below it (nor below the
        warm start's floor); ``callback(k, z, primal_residual, dual_residual)`` after every
        iteration."""
        o, bal = self.options, self.balancer
        bal.floor = max(float(beta_floor), float((warm_start or {}).get("beta_floor", 0.0)))
        self.z, self.mu = self._start_point(warm_start)
        self.pres, self.dres, self.kkt_history = [], [], []
        self.n_iter, self.converged, self.gap = 0, False, np.nan
        t0 = time.perf_counter()
        for k in range(1, o.max_iter + 1):
            self.n_iter = k
            rp, rd = self._iteration(callback)
            if self._residuals_met(rp, rd):
                self.converged = True
                break
            if o.kkt_tol is not None and k % o.kkt_every == 0:
                status = self._kkt_check()
                if status == "converged":
                    self.converged = True
                    break
                if status == "restart":  # diverging (see PenaltyBalancer.check)
                    continue
            if k < o.max_iter:
                bal.balance(float(np.max(rp)), float(np.max(rd)))
        self.timings["iterations"] = (time.perf_counter() - t0 - self.timings["refactor"]
                                      - self.timings["kkt"])
        return self._result()

    def _iteration(self, callback):
        """One iteration: the x-update, the relaxed point, the projection (z), the dual
        update (mu) and the residuals, recorded; ``(primal, dual)`` residuals."""
        beta, relaxation = self.balancer.beta, self.options.relaxation
        x = self._x_update()
        xh = relaxation * x + (1.0 - relaxation) * self.z if relaxation != 1.0 else x
        z_old = self.z
        self.z = self._project(xh - self.mu / beta, beta)
        self.mu = self.mu - beta * (xh - self.z)
        rp, rd = self._residuals(x, z_old, beta)
        self.pres.append(rp)
        self.dres.append(rd)
        if callback is not None:
            callback(self.n_iter, self.z, rp, rd)
        return rp, rd

    def _residuals_met(self, rp, rd):
        """The residual stopping test (none by default: the KKT gap decides)."""
        return False

    def _kkt_check(self):
        """LIBSVM's gap at z, timed and recorded: "converged", "restart" (the iterates
        diverged and z, mu are back at the best check's) or None."""
        t1 = time.perf_counter()
        gap = self._kkt_gap()
        self.gap = gap
        self.kkt_history.append((self.n_iter, gap))
        self.timings["kkt"] += time.perf_counter() - t1
        if np.all(gap <= self.options.kkt_tol):
            return "converged"
        restart = self.balancer.check(float(np.max(gap)), self.z, self.mu)
        if restart is None:
            return None
        self.z, self.mu = restart
        return "restart"


class DualADMM(SplitADMM):
    """The kernel SVM dual for one C by closed-form ADMM on a factor of K + beta I (the
    module's algorithm); :func:`svm_dual_admm` is its one-call form.

    One problem: the factor, the unshifted kernel, the labels (one or several columns,
    solved together), the box. :meth:`solve` runs the iterations from a start; each step is
    a method: ``_x_update`` (one block solve), ``_project`` (the clip to the box),
    the dual update and the penalty balancing (:class:`SplitADMM`), ``_residuals``,
    ``_residuals_met`` and ``_kkt_gap`` (the stopping tests), ``_result`` (bias and
    objective from one unshifted product).

    Parameters
    ----------
    factor : factor of K + beta I
        Any object of the :mod:`hsskern.factors` protocol (``beta``, ``solve``, ``shape``).
        The object holds it (through its :class:`PenaltyBalancer`): keep no other reference
        if a rebalanced factor should free the old one.
    K_apply : LinearOperator, ndarray or callable
        The *unshifted* kernel (approximation) K, for the KKT checks, the bias and the
        objective.
    y : array-like of shape (n,) or (n, r)
        Labels in {-1, +1}.
    C : float
        Box constraint, > 0.
    weights : ndarray of shape (n,) or None
        Per-point weights >= 0: the box of point i is [0, C w_i].
    refactor : callable or None
        ``refactor(beta) -> factor`` of K + beta I: residual balancing (see
        :func:`svm_dual_admm`); None keeps beta fixed.
    w : ndarray of shape (n,) or None
        ``factor.solve(ones)``, computed here when None.
    options : DualADMMOptions or None
        The tunables; None: the defaults.
    """

    _timing_keys = ("setup", "iterations", "bias", "refactor", "kkt")

    def __init__(self, factor, K_apply, y, C, *, weights=None, refactor=None, w=None,
                 options=None):
        C = check_positive(C, "C")
        options = options_with(DualADMMOptions, options, {})
        self.Y, self.one = _check_labels(y)
        n, r = self.Y.shape
        shape = getattr(factor, "shape", None)  # optional in the protocol
        if shape is not None and shape[0] != n:
            raise ValueError(f"y has {n} entries but the factor is {shape[0]} x {shape[0]}")
        self.weights = check_weights(weights, n)
        # the upper bound: the scalar C unweighted (no per-point array on that path)
        self.ub = C if self.weights is None else C * self.weights[:, None]
        self.r, self.sqrt_n = r, np.sqrt(n)
        t0 = time.perf_counter()
        super().__init__(factor, K_apply, n, C, options, refactor, w)
        self.timings["setup"] = time.perf_counter() - t0

    def _start_point(self, warm_start):
        """(z, mu): a warm start's, z clipped into the box; else zero."""
        n, r = self.n, self.r
        if warm_start is None:
            return np.zeros((n, r)), np.zeros((n, r))
        z = np.clip(np.asarray(warm_start["z"], dtype=np.float64).reshape(n, r), 0.0, self.ub)
        return z, np.array(warm_start["mu"], dtype=np.float64).reshape(n, r)

    def _x_update(self):
        """x = Y (u - (w^T Y q / e^T w) w), u = (K + beta I)^-1 Y q, q = e + mu + beta z:
        the equality-constrained quadratic by one block solve."""
        bal, Y = self.balancer, self.Y
        beta, w = bal.beta, bal.w[:, None]
        Yq = Y * (1.0 + self.mu + beta * self.z)
        u = bal.factor.solve(Yq)
        u = u.reshape(self.n, self.r)
        lam = (w[:, 0] @ Yq) / bal.ew                  # (r,)
        return Y * (u - w * lam)

    def _project(self, t, beta):
        """z: the clip of ``xh - mu / beta`` to the box."""
        return np.clip(t, 0.0, self.ub)

    def _residuals(self, x, z_old, beta):
        """Relative primal and dual residuals per column; the floors keep them meaningful
        when a column is ~0."""
        z, sqrt_n = self.z, self.sqrt_n
        nx = np.linalg.norm(x, axis=0)
        nz = np.linalg.norm(z, axis=0)
        rp = np.linalg.norm(x - z, axis=0) / np.maximum(np.maximum(nx, nz),
                                                        1e-12 * self.C * sqrt_n)
        rd = beta * np.linalg.norm(z - z_old, axis=0) / np.maximum(
            np.linalg.norm(self.mu, axis=0), sqrt_n)
        return rp, rd

    def _residuals_met(self, rp, rd):
        tol = self.options.tol
        return tol is not None and np.all(rp <= tol) and np.all(rd <= tol)

    def _kkt_gap(self):
        """LIBSVM's gap of z per column (one product with the unshifted kernel)."""
        KYz = np.asarray(self.K_apply(self.Y * self.z)).reshape(self.n, self.r)
        return kkt_violation(KYz, self.Y, self.z, self.ub)

    def _result(self):
        """The ADMMResult at z: bias and objective from the one unshifted product."""
        t0 = time.perf_counter()
        Y, one, r, alpha = self.Y, self.one, self.r, self.z
        Ya = Y * alpha
        KYa = np.asarray(self.K_apply(Ya)).reshape(self.n, r)   # the one unshifted product
        bias, n_margin = _bias(KYa, Y, alpha, self.ub, self.options.margin_eps)
        obj = dual_objective(KYa, Ya, alpha)
        self.timings["bias"] = time.perf_counter() - t0
        eq = np.abs(np.einsum("ij,ij->j", Y, alpha)) / (self.C * self.sqrt_n)
        bal = self.balancer
        return ADMMResult(
            C=self.C, beta=bal.beta, alpha=_squeeze(alpha, one), dual_coef=_squeeze(Ya, one),
            bias=float(bias[0]) if one else bias, n_iter=self.n_iter, converged=self.converged,
            primal_residuals=_squeeze(np.array(self.pres).reshape(-1, r), one),
            dual_residuals=_squeeze(np.array(self.dres).reshape(-1, r), one),
            equality_residual=float(eq[0]) if one else eq,
            objective=float(obj[0]) if one else obj,
            n_margin=int(n_margin[0]) if one else n_margin, timings=self.timings,
            kkt_history=[(k_, float(g[0]) if one else g) for k_, g in self.kkt_history],
            state={"z": alpha, "mu": self.mu, "w": bal.w, "KYa": KYa, "beta_floor": bal.floor})

def svm_dual_admm(factor, K_apply, y, C, *, options=None, weights=None, refactor=None, w=None,
                  warm_start=None, beta_floor=0.0):
    """Solve the kernel SVM dual for one C by closed-form ADMM on a factor of K + beta I:
    ``DualADMM(factor, K_apply, y, C, ...).solve(warm_start, ...)`` in one call (the class
    also takes a per-iteration callback and hands back the factor in force).

    Parameters
    ----------
    factor : factor of K + beta I
        Any object of the :mod:`hsskern.factors` protocol (``beta``, ``solve``, ``shape``).
    K_apply : LinearOperator, ndarray or callable
        The *unshifted* kernel (approximation) K: ``K_apply @ V`` (or ``K_apply(V)``) for
        V of shape (n, r). Used once, for the bias and the objective.
    y : array-like of shape (n,) or (n, r)
        Labels in {-1, +1}; several columns (one-vs-rest classes) are solved together, each
        iteration being one block solve.
    C : float
        Box constraint, > 0.
    options : DualADMMOptions or None
        The tunables (None: the paper's setting, 10 plain iterations): ``max_iter``; ``tol``
        (every column's relative primal and dual residuals); ``kkt_tol``, LIBSVM's
        optimality gap (:func:`kkt_violation`) of the z iterate, checked every
        ``kkt_every`` iterations at one product with ``K_apply``; ``relaxation`` in (0, 2)
        (x replaced by ``relaxation * x + (1 - relaxation) * z`` in the z- and mu-updates;
        1.0 is the paper's plain ADMM, 1.5-1.8 often converges faster); ``margin_eps``;
        the penalty balancing's ``balance_ratio``, ``balance_factor``, ``max_refactor``.
    weights : ndarray of shape (n,) or None
        Per-point weights >= 0 (LIBSVM's weighted C): the box of point i is [0, C w_i], for
        every label column. None: the plain box [0, C].
    refactor : callable or None
        ``refactor(beta) -> factor`` of K + beta I. When given, beta is rebalanced (at most
        ``max_refactor`` times) whenever the primal and dual residuals differ by more than
        ``balance_ratio``, by a factor ``balance_factor``.
    w : ndarray of shape (n,) or None
        Precomputed ``factor.solve(ones)``; computed here when None.
    warm_start : dict or None
        ``state`` of a previous :class:`ADMMResult` (its ``z`` is clipped into [0, C]).
    beta_floor : float, default 0.0
        Rebalancing never moves beta below this. It rises by itself when ``refactor`` reports
        an indefinite matrix (to twice the factor's suggested shift) or when the iterates
        diverge: with an indefinite approximation K the dual is not convex, and a beta barely
        above -lambda_min(K) can let the ADMM blow up (the gap growing to NaN within tens of
        iterations). A divergence is detected at the KKT checks (the gap exceeds
        1 and ten times the best gap so far, or is not finite); the state of the best check is
        restored and beta raised by ``balance_factor``. The final floor is in
        ``state["beta_floor"]``; a ``warm_start`` state's floor holds here too (what one C
        learnt about small betas holds for the next).

    Returns
    -------
    ADMMResult
    """
    options = options_with(DualADMMOptions, options, {})
    solver = DualADMM(factor, K_apply, y, C, weights=weights, refactor=refactor, w=w,
                      options=options)
    del factor, w  # the solver holds the factor in force (old ones must be freed)
    return solver.solve(warm_start, beta_floor=beta_floor)


def svm_dual_admm_path(factor, K_apply, y, Cs, *, options=None, warm_start=True, weights=None,
                       refactor=None, w=None, beta_floor=0.0):
    """Dual ADMM over a grid of C values on ONE factor, warm-starting each C from the previous.

    ``w = factor.solve(ones)`` is computed once for the whole path (and all label columns).

    Parameters
    ----------
    factor, K_apply, y, options, weights, refactor, w, beta_floor
        As in :func:`svm_dual_admm`.
    Cs : sequence of float
        Values of C, visited in the given order (ascending order warm-starts best).
    warm_start : bool, default True
        Start each C from the previous C's (z, mu); otherwise from zero.

    Returns
    -------
    list of ADMMResult, one per C in the order of ``Cs``.
    """
    Cs = [check_positive(c, "C") for c in np.atleast_1d(np.asarray(Cs, dtype=object))]
    if not Cs:
        raise ValueError("Cs is empty")
    options = options_with(DualADMMOptions, options, {})
    problem = {"refactor": refactor, "weights": weights}
    floor = beta_floor
    t0 = time.perf_counter()
    if w is None:
        w = factor.solve(np.ones(np.shape(y)[0]))
    setup = time.perf_counter() - t0
    out, state = [], None
    for i, C in enumerate(Cs):
        if state is not None and not warm_start:  # a warm start carries its own floor
            floor = state["beta_floor"]
        solver = DualADMM(factor, K_apply, y, C, w=w, options=options, **problem)
        res = solver.solve(state if warm_start else None, beta_floor=floor)
        if i == 0:
            res = replace(res, timings={**res.timings, "setup": setup})
        # a rebalanced beta carries over to the next C (its factor is already paid for)
        if solver.factor is not factor:
            factor, w = solver.factor, res.state["w"]
        del solver
        state = res.state
        out.append(res)
    return out
