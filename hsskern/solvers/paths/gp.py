"""Gaussian-process regression on the HSS factor: the log marginal likelihood by factors alone.

The covariance is s^2 k_h(x, y) + sigma^2 delta(x, y). With beta = sigma^2 / s^2,

    s^2 K + sigma^2 I = s^2 (K + beta I) = s^2 G,

so for targets Y (n x k, one GP per column, shared hyperparameters) the log marginal
likelihood is

    LML = -1/2 tr(Y^T G^{-1} Y) / s^2 - k/2 (n log s^2 + log det G) - n k / 2 log 2 pi.

For fixed (h, beta) it is maximised over the amplitude in closed form, s^2 = tr(Y^T G^{-1} Y)
/ (n k), leaving the profile

    LML*(h, beta) = -n k / 2 (1 + log 2 pi + log s^2(beta)) - k / 2 log det G(beta),

one factor of K + beta I (its ``solve`` and ``logdet``). For a fixed width the noise is a
shift: :func:`noise_search` maximises LML* over log beta by a bounded scalar search with
refactorizations only (O(n r^2) each, never a recompression). :func:`gp_hyperparameter_search`
adds the width: a local bounded search over log h from the initial width (plus restarts from
log-uniform draws, as scikit-learn's ``n_restarts_optimizer``), one compression per width.

With a low-rank F F^T <= K (``approximation="nystrom"``) the objective is Titsias' collapsed
variational bound (the sparse GP "SGPR"): the inducing points are k training points drawn
once, by a randomly pivoted Cholesky at the initial width, and every width's F F^T is the
Nystrom approximation on them (O(n k^2), every beta a k x k refactorization): fixed inducing
points keep the bound a smooth function of the width, which pivots drawn anew per width would
not. The bound is

    LML(F F^T) - k / (2 beta) tr(K - F F^T)  <=  LML(K),

the likelihood of the low-rank model minus the residual's trace over the noise: it rewards
ranks that capture K where the noise is small, never exceeds the exact likelihood, and equals
it when F F^T = K. The amplitude keeps its closed form (the trace term is s^2-free).

Below ``GPOptions.dense_max_n`` points (``approximation="auto"``) or with "exact" the search runs on
the dense kernel instead (:mod:`hsskern.solvers.engines.gp_dense`): the same profile likelihood, exact,
with its analytic gradient from one Cholesky factor and its inverse, maximised jointly over
(log h, log beta) by L-BFGS-B, where a compression per width and a factorization per noise
evaluation cost more than the n^3 of a dense factor.
"""
import math
import time
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from scipy.optimize import minimize_scalar

from ...exceptions import NotPositiveDefiniteError
from ...kernels import kernel_operator, make_kernel
from ...lowrank import rp_cholesky
from ...options import GPOptions
from ...utils._memory import check_memory, resolve_budget
from ..engines.gp_dense import DenseLikelihood, dense_memory, dense_search
from .hss_path import HSSBackend, prepare_hss
from .ridge_path import NystromProblem, prepare_nystrom

__all__ = ["profile_log_marginal_likelihood", "log_marginal_likelihood", "noise_search",
           "prepare_gp_problem", "variational_residual", "inducing_pivots",
           "gp_hyperparameter_search", "NoiseSearchResult", "GPSearchResult",
           "resolve_approximation", "check_gp_memory"]

_LOG_2PI = math.log(2.0 * math.pi)

# ``approximation="auto"`` takes the dense route up to GPOptions.dense_max_n points (its
# measurement: docs/design_notes.md, "The Gaussian process's dense-to-HSS crossover")


def resolve_approximation(approximation, n, dense_max_n=GPOptions.dense_max_n, *, d=1, k=1,
                          memory_budget=None):
    """The route of a GP fit on n points of d features (k targets): "auto" is "exact"
    (dense) up to ``dense_max_n`` points when its arrays fit ``memory_budget``, else "hss";
    any other value as given."""
    if approximation == "auto":
        budget = resolve_budget(memory_budget)
        fits = budget is None or dense_memory(n, d, k) <= budget
        return "exact" if n <= dense_max_n and fits else "hss"
    return approximation


def check_gp_memory(n, d, k, approximation, *, hss_options=None, n_components=None,
                    memory_budget=None):
    """MemoryBudgetError, with the estimate, when a GP fit on n points of d features (k
    targets) cannot fit ``memory_budget``: the dense route's n x n arrays
    (:func:`~hsskern.solvers.engines.gp_dense.dense_memory`), the Nystrom factor (twice: the best
    width's is kept beside the next) or the HSS fit at its smallest ranks (twice, likewise).
    Called before any work."""
    if approximation == "exact":
        need, what = dense_memory(n, d, k), "the dense kernel, its factor and inverse"
        hint = 'use approximation="hss" (or "nystrom") for large n'
    elif approximation == "nystrom":
        m = min(int(n_components), n)
        need = 8 * n * d + 2 * 8 * n * (m + k)
        what, hint = f"{m} inducing points (two n x {m} factors)", "lower n_components"
    else:
        hss = HSSBackend.of_compression(make_kernel("gaussian", h=1.0), hss_options,
                                        adaptive_beta=False, solve_exact=False)
        low = hss.memory_estimate(n, d, k, max_rank=1)
        need = low["peak"] + low["hss"] + low["factor"] + 8 * n * k
        what = "two HSS compressions and factors (the best width's and the next) at the " \
               "smallest ranks"
        hint = "lower leaf_size or n_neighbors"
    check_memory(need, f"a Gaussian-process fit on {n} points x {d} features with {what}",
                 memory_budget, hint=hint + ", fit on fewer points, or raise memory_budget")
    return need


def _quadratic(factor, Y):
    coef = factor.solve(Y)
    return coef, float(np.einsum("ij,ij->", Y, coef))


def profile_log_marginal_likelihood(factor, Y):
    """The log marginal likelihood maximised over the amplitude, for G = A + beta I.

    Parameters
    ----------
    factor : a factor of G (``solve``, ``logdet``)
    Y : ndarray of shape (n, k)

    Returns
    -------
    lml : float
    amplitude : float
        s^2 = tr(Y^T G^{-1} Y) / (n k) (the smallest positive float for all-zero targets,
        where the likelihood grows without bound as s^2 -> 0).
    coef : ndarray of shape (n, k)
        G^{-1} Y (the posterior mean's dual coefficients: mean = K(X_new, X) coef).
    """
    n, k = Y.shape
    coef, q = _quadratic(factor, Y)
    s2 = max(q / (n * k), np.finfo(np.float64).tiny)
    lml = -0.5 * n * k * (1.0 + _LOG_2PI + math.log(s2)) - 0.5 * k * factor.logdet()
    if q / (n * k) < s2:  # all-zero targets: the quadratic term is 0, not n k / 2
        lml += 0.5 * n * k
    return lml, s2, coef


def log_marginal_likelihood(factor, Y, amplitude):
    """The log marginal likelihood of covariance ``amplitude`` * G for the factor of G."""
    return _evaluate_lml(factor, Y, float(amplitude))[0]


@dataclass(frozen=True, eq=False)
class NoiseSearchResult:
    """The best noise ratio for one prepared problem (one width).

    Attributes
    ----------
    beta : float
        Noise-to-signal ratio sigma^2 / s^2 found.
    amplitude : float
        s^2 at that beta (closed form).
    lml : float
        The profile log marginal likelihood there.
    coef : ndarray of shape (n, k)
        (K + beta I)^{-1} Y with the problem's approximation of K.
    factor : the factor of the approximation + beta I
    n_evals : int
        Factorizations the search made.
    history : tuple of (beta, lml)
        Every evaluation, in order.
    at_bound : str or None
        "lower" / "upper" when the optimum is at (within the search's tolerance of) a bound.
    lower : float
        The lower bound actually searched (raised above the requested one where the
        approximation was indefinite there).
    timings : mapping
        Seconds: ``factor`` (all refactorizations), ``solve`` (solves and log-determinants).
    """

    beta: float
    amplitude: float
    lml: float
    coef: np.ndarray
    factor: object
    n_evals: int
    history: tuple
    at_bound: object = None
    lower: float = None
    timings: object = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))


def _check_bounds(bounds, name):
    if isinstance(bounds, str):
        raise ValueError(f"{name} must be a pair (low, high) here, got {bounds!r}")
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high) of positive numbers, got "
                         f"{bounds!r}") from None
    if not (0 < lo <= hi < math.inf):
        raise ValueError(f"{name} must satisfy 0 < low <= high < inf, got ({lo}, {hi})")
    return lo, hi


def _floor_message(lo, lower):
    return (f"the kernel approximation + beta I is indefinite below beta={lower:.3g}, above "
            f"the lower noise bound {lo:.3g}: the noise ratio was searched from {lower:.3g} "
            "(tighten rel_tol / abs_tol to search lower)")


def variational_residual(problem):
    """tr(K - F F^T) of a low-rank problem (Titsias' bound subtracts k / (2 beta) of it from
    the likelihood); 0 for the HSS and dense ones, whose likelihood is the model's own."""
    return problem.residual_trace if isinstance(problem, NystromProblem) else 0.0


def _evaluate_lml(factor, Y, amplitude):
    """(lml, amplitude, coef): the profile when ``amplitude`` is None, else at it."""
    if amplitude is None:
        return profile_log_marginal_likelihood(factor, Y)
    n, k = Y.shape
    coef, q = _quadratic(factor, Y)
    lml = (-0.5 * q / amplitude - 0.5 * k * (n * math.log(amplitude) + factor.logdet())
           - 0.5 * n * k * _LOG_2PI)
    return lml, amplitude, coef


def noise_search(problem, Y, bounds, *, amplitude=None, xatol=1e-2, warn=True, log=None):
    """Maximise the profile log marginal likelihood over beta in ``bounds`` for one problem.

    A bounded Brent search over log beta (``scipy.optimize.minimize_scalar``, method
    "bounded", absolute tolerance ``xatol`` in log beta), with both bounds evaluated too (the
    bounded search never evaluates its endpoints, and a noise-free or noise-dominated data set
    has its optimum there). Every evaluation is one refactorization of the problem's
    approximation + beta I, a solve and a log-determinant.

    Parameters
    ----------
    problem : HSSProblem or NystromProblem
        From :func:`~hsskern.solvers.paths.hss_path.prepare_hss` or :func:`prepare_gp_problem` (its
        factor is reused when its shift is one of the evaluated values).
    Y : ndarray of shape (n, k)
    bounds : (float, float)
        Range of beta = sigma^2 / s^2; low == high evaluates that one value. Where the
        approximation + beta I is indefinite at the low end, the search starts at the
        smallest definite shift instead (a warning says so).
    amplitude : float or None, default None
        None: the amplitude s^2 at its closed-form optimum for every beta (the profile);
        a value: the likelihood at that fixed amplitude.
    xatol : float, default 1e-2
    warn : bool, default True
        A warning when the search had to start above the lower bound.
    log : callable or None
        ``log(level, line)``: level 2, one line per evaluation.

    Returns
    -------
    NoiseSearchResult
    """
    lo, hi = _check_bounds(bounds, "bounds")
    timings = {"factor": 0.0, "solve": 0.0}
    history = []
    best = {}

    residual = variational_residual(problem)

    def evaluate(beta):
        t0 = time.perf_counter()
        factor = problem.factor if problem.factor.beta == beta else problem.refactor(beta)
        t1 = time.perf_counter()
        lml, s2, coef = _evaluate_lml(factor, Y, amplitude)
        lml -= Y.shape[1] * residual / (2.0 * beta)
        timings["factor"] += t1 - t0
        timings["solve"] += time.perf_counter() - t1
        history.append((beta, lml))
        if log is not None:
            log(2, f"beta={beta:.4g}: log marginal likelihood {lml:.8g}, amplitude {s2:.4g}")
        if not best or lml > best["lml"]:
            best.update(beta=beta, lml=lml, amplitude=s2, coef=coef, factor=factor)
        return lml

    # below the problem's floor (found when its first factor was made) the approximation
    # + beta I is indefinite: the likelihood of the approximation is not defined there
    lower = max(lo, problem.beta_floor)
    try:
        evaluate(lower)
    except NotPositiveDefiniteError as exc:
        lower = float(exc.suggested_beta)
        if lower <= hi:
            evaluate(lower)
    if lower > hi:
        raise NotPositiveDefiniteError(
            f"the kernel approximation + beta I is indefinite for every beta in the noise "
            f"bounds ({lo:.3g}, {hi:.3g}): it needs beta >= {lower:.3g}. Tighten rel_tol / "
            "abs_tol, raise max_rank, or raise the noise bounds", suggested_beta=lower)
    if warn and lower > lo:
        warnings.warn(_floor_message(lo, lower), UserWarning, stacklevel=2)
    if hi > lower:
        evaluate(hi)
        a, b = math.log(lower), math.log(hi)
        if b - a > xatol:
            minimize_scalar(lambda t: -evaluate(math.exp(t)), bounds=(a, b), method="bounded",
                            options={"xatol": xatol})
    at_bound = None
    if hi > lower:
        t = math.log(best["beta"])
        if t - math.log(lower) <= xatol:
            at_bound = "lower"
        elif math.log(hi) - t <= xatol:
            at_bound = "upper"
    return NoiseSearchResult(beta=best["beta"], amplitude=best["amplitude"], lml=best["lml"],
                             coef=best["coef"], factor=best["factor"], n_evals=len(history),
                             history=tuple(history), at_bound=at_bound, lower=lower,
                             timings=timings)


def inducing_pivots(X, kernel, h, rank, *, random_state=None, memory_budget=None):
    """The inducing points of ``approximation="nystrom"``: the columns a rank-``rank``
    randomly pivoted Cholesky of the width-h kernel reads (indices into X)."""
    K = kernel_operator(X, make_kernel(kernel, h=h))
    return rp_cholesky(K, rank, random_state=random_state, memory_budget=memory_budget).pivots


def prepare_gp_problem(X, kernel, h, *, beta, approximation="hss", hss_options=None,
                       pivots=None, memory_budget=None):
    """The prepared problem of one width: an HSS compression (or the dense kernel) with its
    factor at ``beta`` (:func:`~hsskern.solvers.paths.hss_path.prepare_hss`), or for
    ``approximation="nystrom"`` the Nystrom approximation on the inducing ``pivots`` with its
    map to new points (:func:`~hsskern.solvers.paths.ridge_path.prepare_nystrom`)."""
    kern = make_kernel(kernel, h=h)
    if approximation == "nystrom":
        return prepare_nystrom(X, kern, rank=len(pivots), beta=beta, pivots=pivots,
                               memory_budget=memory_budget)
    with warnings.catch_warnings():
        # an indefinite first factor is retried by prepare_hss at a working shift; the
        # search reports the resulting floor once
        warnings.filterwarnings("ignore", message=".*not positive definite",
                                category=UserWarning)
        return prepare_hss(X, kern, approximation=approximation, hss_options=hss_options,
                           beta=beta, memory_budget=memory_budget)


@dataclass(frozen=True, eq=False)
class GPSearchResult:
    """The hyperparameters found over widths and noise ratios.

    Attributes
    ----------
    h : float
    noise : NoiseSearchResult
        The best width's noise search (its factor, coefficients, amplitude, beta).
    problem : HSSProblem
        The best width's prepared problem (kernel operator, approximation).
    lml : float
    history : tuple of (h, beta, lml)
        The best of every width evaluated, in order.
    n_compressions : int
    n_factorizations : int
    h_at_bound : str or None
    timings : mapping
        Seconds: ``prepare`` (compressions and first factors), ``factor``, ``solve``.
    pivots : ndarray of int or None
        The inducing points of every width ("nystrom", :func:`inducing_pivots`).
    """

    h: float
    noise: NoiseSearchResult
    problem: object
    lml: float
    history: tuple
    n_compressions: int
    n_factorizations: int
    h_at_bound: object = None
    timings: object = field(default_factory=dict)
    pivots: object = None

    def __post_init__(self):
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))


def _bracket(f, x0, lo, hi, step):
    """A bracket [a, b] of a local maximum of f near x0 within [lo, hi], walking uphill by
    doubling steps (f cached by the caller)."""
    fx0 = f(x0)
    right, left = min(x0 + step, hi), max(x0 - step, lo)
    f_right = f(right) if right > x0 else -math.inf
    f_left = f(left) if left < x0 else -math.inf
    if fx0 >= f_right and fx0 >= f_left:
        return left, right
    sign = 1.0 if f_right > f_left else -1.0
    prev, cur, fcur = x0, (right if sign > 0 else left), max(f_right, f_left)
    while True:
        step *= 2.0
        nxt = min(max(cur + sign * step, lo), hi)
        if nxt == cur:  # at the bound and still rising: the maximum is at the bound
            return (prev, cur) if sign > 0 else (cur, prev)
        fnxt = f(nxt)
        if fnxt <= fcur:
            return (prev, nxt) if sign > 0 else (nxt, prev)
        prev, cur, fcur = cur, nxt, fnxt


# more than 10 parameters: scikit-learn's GaussianProcessRegressor spells the same search with as
# many (bounds, restarts, random_state, the optimizer's tolerance); the estimator builds them
# from GPOptions
def gp_hyperparameter_search(X, Y, kernel, h0, *, h_bounds=None, noise_bounds=(1e-6, 100.0),
                             amplitude=None, approximation="hss", hss_options=None,
                             n_components=None, n_restarts=0, random_state=None, xatol=1e-2,
                             noise0=None, memory_budget=None, log=None,
                             dense_max_n=GPOptions.dense_max_n):
    """Maximise the profile log marginal likelihood over the width h and the noise ratio.

    For each width evaluated: one preparation (compression + first factor at the lower noise
    bound), then :func:`noise_search`. The width is searched in log h by a local bounded
    search from ``h0`` (an uphill bracket by doubling steps, then bounded Brent inside it) and
    from ``n_restarts`` more starting widths drawn log-uniformly in ``h_bounds``; the best
    wins (scikit-learn's ``n_restarts_optimizer``).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, k)
    kernel : {"gaussian", "laplacian"}
    h0 : float
        The initial width (the only one when ``h_bounds`` is None).
    h_bounds : (float, float) or None
    noise_bounds : (float, float)
        Range of beta = sigma^2 / s^2.
    amplitude : float or None
        A fixed amplitude s^2 (None: its closed-form optimum, the profile likelihood).
    approximation : {"auto", "hss", "exact", "nystrom"}
        "nystrom": Titsias' bound on the Nystrom approximation at ``n_components`` inducing
        points (the module docstring). "exact": the dense route
        (:mod:`~hsskern.solvers.engines.gp_dense`: the exact likelihood and its gradient, L-BFGS-B in
        (log h, log beta) from (``h0``, ``noise0``) and the restarts). "auto":
        :func:`resolve_approximation`.
    hss_options : HSSOptions or None
    n_components : int or None
        The number of inducing points for "nystrom".
    n_restarts : int
    random_state : int, Generator or None
        Draws the restarts' starting widths (and the inducing points for "nystrom",
        :func:`inducing_pivots`).
    xatol : float
        Tolerance of both searches, in log h and log beta (the dense route: how near a bound
        counts as at it).
    noise0 : float or None
        The dense route's starting beta (clipped to the bounds; None: their geometric mean).
    memory_budget : float or None
        Checked before any work (:func:`check_gp_memory`).
    log : callable or None
    dense_max_n : int, default GPOptions.dense_max_n (10000)
        "auto"'s crossover (:func:`resolve_approximation`).

    Returns
    -------
    GPSearchResult
    """
    lo_n, hi_n = _check_bounds(noise_bounds, "noise_bounds")
    n, d = X.shape
    approximation = resolve_approximation(approximation, n, dense_max_n, d=d, k=Y.shape[1],
                                          memory_budget=memory_budget)
    check_gp_memory(n, d, Y.shape[1], approximation, hss_options=hss_options,
                    n_components=n_components, memory_budget=memory_budget)
    if approximation == "exact":
        return _dense_route(X, Y, kernel, float(h0), h_bounds, (lo_n, hi_n), amplitude,
                            n_restarts, random_state, xatol, noise0, memory_budget, log)
    timings = {"prepare": 0.0, "factor": 0.0, "solve": 0.0}
    pivots = None
    if approximation == "nystrom":
        t0 = time.perf_counter()
        pivots = inducing_pivots(X, kernel, float(h0), n_components,
                                 random_state=random_state, memory_budget=memory_budget)
        timings["prepare"] += time.perf_counter() - t0
    results = {}  # log h -> (lml, h, NoiseSearchResult, problem) of the best so far only
    history = []
    floors = []
    counts = []
    state = {"best": None}

    def evaluate(t):
        t = float(t)
        if t in results:
            return results[t]
        h = math.exp(t)
        t0 = time.perf_counter()
        problem = prepare_gp_problem(X, kernel, h, beta=lo_n, approximation=approximation,
                                     hss_options=hss_options, pivots=pivots,
                                     memory_budget=memory_budget)
        timings["prepare"] += time.perf_counter() - t0
        res = noise_search(problem, Y, (lo_n, hi_n), amplitude=amplitude, xatol=xatol,
                           warn=False, log=log)
        floors.append(res.lower)
        counts.append(res.n_evals)
        timings["factor"] += res.timings["factor"]
        timings["solve"] += res.timings["solve"]
        results[t] = res.lml
        history.append((h, res.beta, res.lml))
        if log is not None:
            log(1, f"h={h:.4g}: beta={res.beta:.4g}, amplitude {res.amplitude:.4g}, log "
                   f"marginal likelihood {res.lml:.8g} ({res.n_evals} factorizations, "
                   f"{time.perf_counter() - t0:.3g} s)")
        if state["best"] is None or res.lml > state["best"][0]:
            state["best"] = (res.lml, h, res, problem)  # only the best keeps its problem
        return res.lml

    h0 = float(h0)
    if h_bounds is None:
        evaluate(math.log(h0))
        h_at_bound = None
    else:
        lo_h, hi_h = (math.log(b) for b in _check_bounds(h_bounds, "h_bounds"))
        if not lo_h <= math.log(h0) <= hi_h:
            raise ValueError(f"the initial width h={h0:g} is outside h_bounds "
                             f"({math.exp(lo_h):g}, {math.exp(hi_h):g})")
        rng = np.random.default_rng(random_state)
        starts = [math.log(h0)] + list(rng.uniform(lo_h, hi_h, size=int(n_restarts)))
        for x0 in starts:
            a, b = _bracket(evaluate, x0, lo_h, hi_h, step=math.log(2.0))
            if b - a > xatol:
                minimize_scalar(lambda t: -evaluate(t), bounds=(a, b), method="bounded",
                                options={"xatol": xatol})
        t_best = math.log(state["best"][1])
        h_at_bound = ("lower" if t_best - lo_h <= xatol else
                      "upper" if hi_h - t_best <= xatol else None)
    if max(floors) > lo_n:
        warnings.warn(_floor_message(lo_n, max(floors)) + f" (at {sum(f > lo_n for f in floors)}"
                      f" of {len(floors)} widths)", UserWarning, stacklevel=2)
    lml, h, res, problem = state["best"]
    return GPSearchResult(h=h, noise=res, problem=problem, lml=lml, history=tuple(history),
                          n_compressions=len(history), n_factorizations=sum(counts),
                          h_at_bound=h_at_bound, timings=timings, pivots=pivots)


# more than 10 parameters: gp_hyperparameter_search's own arguments handed to its dense route
# unchanged (one caller), so both routes read the same names
def _dense_route(X, Y, kernel, h0, h_bounds, noise_bounds, amplitude, n_restarts,
                 random_state, xatol, noise0, memory_budget, log):
    """:func:`gp_hyperparameter_search` on the dense kernel (:mod:`.gp_dense`), then the
    chosen (h, beta)'s dense problem and factor, as the HSS route returns them."""
    lo_n, hi_n = noise_bounds
    b0 = math.sqrt(lo_n * hi_n) if noise0 is None else float(noise0)
    if h_bounds is None:
        hb = (h0, h0)
    else:
        hb = _check_bounds(h_bounds, "h_bounds")
        if not hb[0] <= h0 <= hb[1]:
            raise ValueError(f"the initial width h={h0:g} is outside h_bounds {hb}")
    rng = np.random.default_rng(random_state)
    starts = [(h0, b0)] + [(math.exp(t), b0) for t in
                           rng.uniform(math.log(hb[0]), math.log(hb[1]), size=int(n_restarts))]
    t0 = time.perf_counter()
    lik = DenseLikelihood(X, Y, kernel, amplitude)
    h, beta, lml, h_at, b_at, _ = dense_search(lik, starts, hb, noise_bounds, xatol=xatol,
                                               log=log)
    history, n_evals = tuple(lik.history), lik.n_evals
    del lik  # the distances: the final problem needs the room
    t1 = time.perf_counter()
    if not np.isfinite(lml):
        raise NotPositiveDefiniteError(
            f"K + beta I is not numerically positive definite at any (h, beta) the search "
            f"tried (beta in ({lo_n:.3g}, {hi_n:.3g})): raise the lower noise bound",
            suggested_beta=None)
    problem = prepare_hss(X, make_kernel(kernel, h=h), approximation="exact", beta=beta,
                          memory_budget=memory_budget)
    t2 = time.perf_counter()
    lml, s2, coef = _evaluate_lml(problem.factor, Y, amplitude)
    if log is not None:
        log(1, f"dense route: h={h:.4g}, beta={beta:.4g}, amplitude {s2:.4g}, log marginal "
               f"likelihood {lml:.8g} ({n_evals} evaluations, {t2 - t0:.3g} s)")
    noise_history = tuple((b, v) for hh, b, v in history if hh == h) or ((beta, lml),)
    noise = NoiseSearchResult(beta=beta, amplitude=s2, lml=lml, coef=coef,
                              factor=problem.factor, n_evals=n_evals + 1,
                              history=noise_history, at_bound=b_at, lower=lo_n,
                              timings={"factor": t1 - t0, "solve": time.perf_counter() - t2})
    return GPSearchResult(h=h, noise=noise, problem=problem, lml=lml,
                          history=tuple((hh, b, v) for hh, b, v in history),
                          n_compressions=0, n_factorizations=n_evals + 1, h_at_bound=h_at,
                          timings={"prepare": t2 - t1, "factor": t1 - t0,
                                   "solve": time.perf_counter() - t2})
