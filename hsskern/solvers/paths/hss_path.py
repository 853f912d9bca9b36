"""The HSS backend of the path protocol: compress and factor once, then every C exactly.

``prepare_hss`` builds what does not depend on C or on the labels: the kernel operator, its
HSS approximation (or the dense kernel for small n) and one factor of K + beta I.
``hss_svm_path`` then runs, for every C of an ascending grid and every label column at once,

1. the closed-form dual ADMM on that factor (:func:`~hsskern.solvers.engines.admm.svm_dual_admm`),
   warm-started from the previous C, and
2. with ``solve_exact``, the exact decomposition on the exact kernel
   (:func:`~hsskern.solvers.engines.exact.solve_block`) from the ADMM's point; once one C is solved
   exactly, the next C starts from that solution scaled by C / C_prev
   (:func:`~hsskern.solvers.engines.exact.continuation_start`: feasible, its bounded alphas at the
   new bound, its decision values scaled too), and the ADMM is skipped.

Per-point ``weights`` (LIBSVM's weighted C) turn the box into 0 <= alpha_i <= C w_i in both
steps; the bounds scale with C, so the continuation stays feasible.

The first C's start (``start``): on a small problem the compression, the factor and the
ADMM cost more than they save, and ``start="decomposition"`` skips all three: the first C is
solved by the exact decomposition from alpha = 0 (its working sets are the whole problem's
worst violators, its memory only their kernel block), the later C by the same scaled
continuation. ``start="auto"`` (:meth:`HSSBackend.resolve_start`) takes it for n <=
``RouteOptions.small_n``, and past it for one fit whose measured support vectors keep
n x n_SV within ``exact_limit``; the ADMM route otherwise. The memory budget caps its
working sets.
"""
import time
import warnings
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from ...exceptions import NotPositiveDefiniteError
from ...factors import DenseCholeskyFactor
from ...kernels import kernel_operator
from ...kernels.sparse_rows import densify, rows_nbytes, shifted_sparse_rows
from ...options import ENGINES, HSSOptions, HSSSVCOptions, PathSettings, compression_of
from ...utils._memory import check_memory, format_bytes, resolve_budget
from ...utils._threads import one_blas_thread, one_openmp_thread
from ..engines.admm import DualADMMOptions, default_beta, svm_dual_admm
from ...utils.validation import check_weights
from .path import KernelExpansion, PathSolution, PreparedProblem, check_Cs, check_labels
from ..engines.cached_smo import KERNELS as CACHED_KERNELS
from ..engines.cached_smo import (SMOOptions, bounded_options, engine_cache,
                         expands_distances, probe_sv_share)
from ..engines.interface import BlockEngine, CachedEngine, DualProblem, DualStart
from .plan import (FitPlan, RouteOptions, decomposition_memory, largest_block, plan_fit,
                   plan_start)
from ..engines.exact import ExactResult, continuation_start
from .warm import near_options

__all__ = ["HSSProblem", "HSSBackend", "prepare_hss", "prepare_decomposition",
           "decomposition_chunk", "hss_svm_path", "threads_for", "with_plan",
           "exact_info", "check_dual_start"]

#: What a MemoryBudgetError on densifying sparse rows for the compression suggests: the routes
#: that take the rows as they are
SPARSE_ROWS_HINT = ('the exact decomposition takes sparse rows as they are: '
                    'HSSSVC(options=HSSSVCOptions(start="decomposition")) or ExactSVC (its '
                    'subsample within '
                    f'{RouteOptions().small_n} points), or raise memory_budget')

def threads_for(problem):
    """The threads of a decomposition-route problem's plan (``stats["plan"]``, see
    :func:`~hsskern.solvers.paths.plan.plan_fit`): one thread (OpenMP and BLAS) where it says 1,
    else as is."""
    plan = problem.stats.get("plan") if problem.start == "decomposition" else None
    if plan is None or plan["threads"] != 1:
        return nullcontext()
    stack = ExitStack()
    stack.enter_context(one_openmp_thread())  # this thread's count only
    stack.enter_context(one_blas_thread())  # composes with concurrent limits (utils._threads)
    return stack


@dataclass(frozen=True, eq=False)
class HSSProblem(PreparedProblem):
    """The C-independent part of an HSS SVM: kernel, approximation, one factor.

    Attributes
    ----------
    K : KernelOperator
        The exact kernel on the training points (the decomposition evaluates it).
    approximation : HSSMatrix, ndarray or None
        What the ADMM applies for its bias and objective (the dense K when exact); None for
        ``start="decomposition"`` (no ADMM: the first C is solved exactly from zero).
    factor : factor of ``approximation + beta I``, or None with the approximation
        The current one: :meth:`refactor` replaces it. A path that reads it from here and
        keeps no reference of its own holds at most two factors at once (the old one while
        the new one is built), which is what :func:`~hsskern.hss.estimate_memory` counts; a
        factor is as large as the approximation. One path at a time per problem.
    beta_floor : float
        > 0 when K + beta I was indefinite below it (the factor was retried at this beta).
    stats : mapping
        Ranks and memory of the approximation and its factor; for ``start="decomposition"``
        its ``max_chunk`` (the working-set cap the memory budget allows) and memory estimate.
    timings : mapping
        Seconds: ``kernel``, ``compress`` (HSS), ``factor``.
    points : array or None
        The training points as the caller gave them, where K evaluates the same kernel on
        other ones (shifted sparse rows, :func:`prepare_decomposition`); None: K's points.
    """

    K: object
    approximation: object
    factor: object
    beta_floor: float = 0.0
    stats: object = field(default_factory=dict)
    timings: object = field(default_factory=dict)
    points: object = None

    @property
    def n_samples(self):
        return self.K.shape[0]

    @property
    def start(self):
        """"admm" (an approximation and its factor) or "decomposition" (the exact kernel only)."""
        return "admm" if self.factor is not None else "decomposition"

    def refactor(self, beta, *, suggest=True):
        """A factor of ``approximation + beta I`` (never a recompression), which becomes the
        problem's :attr:`factor`; on failure (an indefinite matrix) the current one stays and
        the error suggests a working shift unless ``suggest`` is False (for HSS that takes a
        Lanczos run)."""
        if self.approximation is None:
            raise ValueError('a problem prepared with start="decomposition" has no '
                             'approximation to factor')
        if isinstance(self.approximation, np.ndarray):
            factor = DenseCholeskyFactor(self.approximation, beta)
        else:
            factor = self.approximation.factor(beta, suggest=suggest)
        object.__setattr__(self, "factor", factor)  # frozen otherwise: only this replaces it
        return factor


def prepare_hss(X, kernel, *, approximation="hss", hss_options=None, beta=None,
                memory_budget=None, log=None):
    """Kernel operator, approximation and factor of K + beta I for the points X.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Validated training points (scipy sparse rows are densified, their 8 n d bytes
        checked against ``memory_budget`` first: the compression needs dense coordinates).
    kernel : Kernel
    approximation : {"hss", "exact"}
        "exact" keeps the dense K (n x n: small n only).
    hss_options : HSSOptions or None
    beta : float or None
        ADMM penalty; None: :func:`~hsskern.solvers.engines.admm.default_beta`.
    memory_budget : float or None
        Bytes the preparation may take (default 80% of the available memory).
    log : callable or None
        ``log(level, line)``: level 1, one line per phase.

    Returns
    -------
    HSSProblem
    """
    n = X.shape[0]
    log = log or (lambda level, msg: None)
    timings = {}
    t0 = time.perf_counter()
    # the compression's trees and samples need dense coordinates
    X = densify(X, "the HSS compression", memory_budget, hint=SPARSE_ROWS_HINT)
    K = kernel_operator(X, kernel)
    beta = float(beta) if beta is not None else default_beta(n)
    floor = 0.0
    if approximation == "exact":
        # K dense (kept for the bias products) + the factor's own n x n array
        check_memory(2 * 8 * n * n, f'approximation="exact" on {n} points', memory_budget,
                     hint='use approximation="hss" for large n')
        Kd = K.to_dense(max_bytes=max(8 * n * n, 1))
        timings["kernel"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        factor = DenseCholeskyFactor(Kd, beta)
        timings["factor"] = time.perf_counter() - t0
        stats = {"approximation": "exact", "start": "admm", "n": n,
                 "memory_bytes": int(Kd.nbytes),
                 "factor_memory_bytes": factor.memory_bytes()}
        return HSSProblem(K, Kd, factor, 0.0, stats, timings)
    from ...hss import compress
    opts = hss_options or HSSOptions()
    timings["kernel"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    H = compress(K, opts)
    timings["compress"] = time.perf_counter() - t0
    log(1, f"compressed in {timings['compress']:.3g} s; factoring K + {beta:g} I")
    t0 = time.perf_counter()
    try:
        factor = H.factor(beta)
    except NotPositiveDefiniteError as exc:
        # a loose approximation can be indefinite: the shift has to cover its most negative
        # eigenvalue. Once, with the factor's own suggestion, and say so.
        warnings.warn(f"{exc}; continuing with beta={exc.suggested_beta:.3g}", stacklevel=3)
        beta = floor = float(exc.suggested_beta)
        factor = H.factor(beta)
    timings["factor"] = time.perf_counter() - t0
    stats = dict(H.stats())
    stats["approximation"] = "hss"
    stats["start"] = "admm"
    stats["factor_memory_bytes"] = int(factor.memory_bytes())
    return HSSProblem(K, H, factor, floor, stats, timings)


# more than 10 parameters: each is one fact of the problem the plan reads (its shape, rows, budget,
# engine, labels, measured share) and they pass to plan_fit by the same names
def prepare_decomposition(X, kernel, *, max_chunk=16000, n_rhs=1, memory_budget=None,
                          log=None, engine="block", smo_options=None, y=None,
                          store_kernel=True, sv_share=None, route=None):
    """The problem of ``start="decomposition"``: the exact kernel operator and nothing else.

    No compression, no factor: :func:`hss_svm_path` solves the first C by the exact
    decomposition from zero. X may be scipy sparse: the operator then evaluates its entries
    from the sparse rows (:class:`~hsskern.kernels.SparseRowsKernelOperator`), never
    densified. Its memory is the working set's block, so ``memory_budget``
    caps the working set: the largest q <= min(n, max_chunk) with
    :func:`~hsskern.solvers.paths.plan.decomposition_memory` within the budget
    (``stats["max_chunk"]``).

    The engine, the store and the threads are :func:`~hsskern.solvers.paths.plan.plan_fit`'s
    (``route``: its :class:`~hsskern.solvers.paths.plan.RouteOptions`), recorded in
    ``stats["plan"]``. K is stored (a :class:`~hsskern.kernels.StoredKernelOperator`,
    ``stats["stored_kernel"]``) from ``route.store_min_features`` features
    (``store_kernel=False``: one fit, whose small C reads too few entries to repay float64
    ones) or for points whose K is stored as one-byte distance codes (integer features,
    :meth:`~hsskern.kernels.KernelOperator.stored_bytes`), when it fits the budget and the
    plan takes the block route (the cached engine computes its own rows); ``store_kernel=None``
    stores nothing (a warm start, whose few products would not pay for stored entries). With
    labels ``y``
    (one column) and ``engine="auto"``, the support vectors' share is measured on a
    subsample where it moves the engine (:func:`~hsskern.solvers.engines.cached_smo.probe_sv_share`,
    ``stats["sv_share"]``); ``sv_share`` given is a share measured already.

    Raises
    ------
    MemoryBudgetError
        When the budget does not hold working sets of min(n, ``route.min_chunk``) points.
    """
    n, d = X.shape
    log = log or (lambda level, msg: None)
    route = RouteOptions() if route is None else route
    t0 = time.perf_counter()
    K = kernel_operator(X, kernel)  # sparse X: kernel entries from its sparse rows
    pb = rows_nbytes(K.points)
    budget = resolve_budget(memory_budget)
    q = _working_set_cap(n, d, max_chunk, n_rhs, pb, memory_budget, budget, log, route)
    peak = decomposition_memory(n, d, q, n_rhs, pb)
    smo_options = SMOOptions() if smo_options is None else smo_options
    dense = not sp.issparse(K.points)
    probe = None if y is None else (
        lambda m: probe_sv_share(K.points, K.kernel, y, smo_options, points=m))
    # the store: never when the OS does not say how much memory there is
    plan = plan_fit(n, d, route=route, max_chunk=q, engine=engine, dense=dense,
                    cache_bytes=engine_cache(n, d, smo_options, budget),
                    cached_kernel=getattr(K.kernel, "name", None) in CACHED_KERNELS,
                    expanded=expands_distances(K.kernel, d, smo_options),
                    store_wanted=store_kernel is not None and (
                        (d >= route.store_min_features and store_kernel)
                        or K.code_origin() is not None),
                    store_room=budget is not None and peak + K.stored_bytes() <= budget,
                    measured_share=sv_share, probe=probe)
    if plan.measured_share is not None:
        log(1, f"support vectors measured on {plan.probe_points} points: "
               f"{100 * plan.measured_share:.2g} %, expected at {n}: {100 * plan.sv_share:.2g} %")
    log(1, f"plan: the {plan.engine} engine ({plan.reason}), "
           f"{'one thread' if plan.threads == 1 else 'every thread'}")
    if plan.store:
        K = K.stored(max_bytes=budget - peak)
        peak += K.memory_bytes
        log(1, f"kernel matrix stored: {format_bytes(K.memory_bytes)} "
               f"({time.perf_counter() - t0:.1f} s)")
    # the block route evaluates entries; from the few entries a row that differ from their
    # column's common value (standardized binary features) it pays those, not d
    shifted = None if plan.store or plan.engine != "block" or not dense else \
        shifted_sparse_rows(X, kernel)
    if shifted is not None:
        K = kernel_operator(shifted, kernel)
        log(1, f"kernel entries from the shifted rows' {shifted.nnz} stored entries "
               f"({100.0 * shifted.nnz / (float(n) * d):.2g} % of {n} x {d})")
    stats = {"approximation": None, "start": "decomposition", "n": n, "max_chunk": q,
             "stored_kernel": plan.store, "shifted_rows": shifted is not None,
             "sv_share": plan.measured_share, "plan": plan.as_dict(),
             "memory_bytes": K.memory_bytes if plan.store else 0,
             "memory_budget": budget,
             "memory_estimate": {"peak": peak, "peak_phase": "exact"}}
    return HSSProblem(K, None, None, 0.0, stats, {"kernel": time.perf_counter() - t0},
                      points=None if shifted is None else X)


def _working_set_cap(n, d, max_chunk, n_rhs, pb, memory_budget, budget, log, route):
    """The largest q <= min(n, max_chunk) whose decomposition memory fits ``budget``; a
    MemoryBudgetError when not even min(n, ``route.min_chunk``) does."""
    q = min(n, int(max_chunk))
    if budget is not None and decomposition_memory(n, d, q, n_rhs, pb) > budget:
        q = largest_block(budget - decomposition_memory(n, d, 0, n_rhs, pb))
        q_min = min(n, route.min_chunk)
        check_memory(decomposition_memory(n, d, max(q, q_min), n_rhs, pb),
                     f'start="decomposition" on {n} points x {d} features (working sets of '
                     f'{q_min} points)', memory_budget,
                     hint="raise memory_budget")
        log(1, f"working sets capped at {q} points by memory_budget={format_bytes(budget)}")
    return q


def with_plan(problem, **fields):
    """``problem`` with these fields in its plan (``stats["plan"]``, :class:`FitPlan`'s)."""
    plan = {**problem.stats.get("plan", {}), **fields}
    return replace(problem, stats={**problem.stats, "plan": plan})


def decomposition_chunk(problem, solve_exact, max_chunk):
    """The working-set cap a path runs with on ``problem``: for a ``start="decomposition"``
    problem, what its memory budget allowed when it was prepared (and a ValueError with
    ``solve_exact`` false: no approximation to run the ADMM on); else ``max_chunk``."""
    if problem.start != "decomposition":
        return max_chunk
    if not solve_exact:
        raise ValueError('solve_exact=False needs the ADMM: a problem prepared with '
                         'start="decomposition" has no approximation to run it on '
                         '(prepare it with start="admm")')
    return min(max_chunk, problem.stats.get("max_chunk", max_chunk))


def _exact_log(log, C, j):
    return None if log is None else (lambda line: log(2, f"solve_exact C={C:g} column {j}:{line}"))


def _gap(res):
    """The last KKT gap the ADMM measured, per column (NaN when it measured none)."""
    r = np.size(res.bias)
    if not res.kkt_history:
        return np.full(r, np.nan)
    return np.atleast_1d(np.asarray(res.kkt_history[-1][1], dtype=np.float64))


def _admm_solution(res, Y, exact_results=None):
    """A PathSolution from an ADMM result, its columns replaced by the exact ones refined."""
    n, r = Y.shape
    coef = np.array(res.dual_coef, dtype=np.float64).reshape(n, r)
    bias = np.atleast_1d(np.array(res.bias, dtype=np.float64))
    converged = np.full(r, bool(res.converged))
    gap = _gap(res)
    timings = {"admm": res.timings["iterations"] + res.timings["setup"],
               "refactor": res.timings["refactor"], "bias": res.timings["bias"],
               "kkt": res.timings["kkt"], "exact": 0.0}
    for j, rr in enumerate(exact_results or ()):
        timings["exact"] += rr.time
        if rr.skipped:
            continue
        coef[:, j], bias[j], converged[j], gap[j] = rr.dual_coef, rr.bias, rr.converged, rr.gap
    info = {"beta": res.beta, "beta_floor": res.state["beta_floor"],
            "primal_residuals": res.primal_residuals, "dual_residuals": res.dual_residuals,
            "objective": res.objective, "admm_converged": res.converged,
            "n_margin": res.n_margin, "equality_residual": res.equality_residual,
            "exact": None if exact_results is None else tuple(exact_results)}
    return PathSolution(C=res.C, intercept=bias, n_iter=res.n_iter, converged=converged,
                        gap=gap, dual_coef=coef, timings=timings, info=info)


def exact_info(Y, coef, exact_results, beta=np.nan, beta_floor=0.0):
    """The ``info`` of a solution no ADMM produced (dual coefficients ``coef``, one column per
    label column of Y): the ADMM's records empty, the equality residual |y' alpha| measured,
    ``exact_results`` the exact decompositions' results."""
    r = Y.shape[1]
    empty = np.zeros((0, r))
    return {"beta": beta, "beta_floor": beta_floor, "primal_residuals": empty,
            "dual_residuals": empty, "objective": np.full(r, np.nan), "admm_converged": False,
            "n_margin": np.full(r, -1), "equality_residual": np.abs((Y * np.abs(coef)).sum(0)),
            "exact": tuple(exact_results)}


def _exact_solution(C, Y, out, beta, beta_floor, phase="decomposition"):
    """A PathSolution from the exact decomposition alone (from zero, or continuation from the
    previous C). Its one timed phase is the engine's, ``phase`` ("smo": the cached SMO
    engine; "decomposition": the block decomposition): no ADMM ran. ``n_iter`` counts the
    engine's iterations per column (the SMO's pair steps, LIBSVM's count; the block
    decomposition's rounds)."""
    coef = np.column_stack([rr.dual_coef for rr in out])
    info = exact_info(Y, coef, out, beta, beta_floor)
    timings = {phase: sum(rr.time for rr in out)}
    return PathSolution(C=C, intercept=[rr.bias for rr in out],
                        n_iter=[int(rr.rounds) for rr in out],
                        converged=[rr.converged for rr in out], gap=[rr.gap for rr in out],
                        dual_coef=coef, timings=timings, info=info)


def _exact_starts(prev, C, r, dual_start, start_decision, cold_ratio):
    """Each column's (alpha, f) start of the exact decomposition at C: the previous C's exact
    solution ``prev`` (C_prev, results) scaled, or (no previous C) the given start, or alpha =
    0, with its decision values (the first C's decomposition computes none). ``cold_ratio``
    (the cached engine's ``warm_max_ratio``; False: none): past it in C / C_prev, alpha = 0,
    where the scaled start's gradient product costs more than the steps it saves (that
    engine keeps its kernel rows along the path, its session)."""
    if prev is None:
        if dual_start is None:
            return [(None, None)] * r
        return [(dual_start[:, j], None if start_decision is None else start_decision[:, j])
                for j in range(r)]
    if cold_ratio and C / prev[0] > cold_ratio:
        return [(None, None)] * r
    return [continuation_start(pr, C / prev[0], ray=False)[1:] for pr in prev[1]]


def exact_limit(settings, route=None):
    """``settings.exact_limit``, or where it is None the route's (``route``: default
    :class:`~hsskern.solvers.paths.plan.RouteOptions`)."""
    if settings.exact_limit is not None:
        return settings.exact_limit
    return (RouteOptions() if route is None else route).exact_limit


def _exact_columns(engine, K, Y, C, coef, options, settings, log, weights):
    """The exact decomposition of every label column from the ADMM's dual coefficients
    (``options``: the path's options, its ``decomposition`` capped at the path's working
    set)."""
    n, r = Y.shape
    out = []
    for j in range(r):
        alpha = Y[:, j] * coef[:, j]
        n_sv = np.count_nonzero(alpha)
        limit = exact_limit(settings)
        if options.solve_exact == "auto" and n * n_sv > limit:
            out.append(ExactResult(alpha=alpha, dual_coef=coef[:, j].copy(), bias=np.nan,
                                    decision=None, converged=False,
                                    skipped=f"n x n_SV = {n} x {n_sv} kernel entries exceed "
                                            f"{limit:.0e} (solve_exact='auto')"))
            continue
        out.append(engine.solve(DualProblem(K, Y[:, j], weights=weights), C,
                                DualStart(alpha), tol=settings.tol,
                                log=_exact_log(log, C, j)))
    return out


class _Fresh:
    """A :class:`~hsskern.solvers.engines.interface.CachedEngine` per solve: no kernel rows kept
    between the C of a path (one-vs-rest's several classes would each keep a cache)."""

    def __init__(self, options):
        self.options = options

    def solve(self, problem, C, start=None, *, tol=None):
        return CachedEngine(self.options).solve(problem, C, start, tol=tol)


def hss_svm_path(problem, Y, Cs, weights=None, *, options=None, settings=None, log=None,
                 warn=True, dual_start=None, start_decision=None):
    """The SVM for every C of an ascending grid and every label column, on one problem.

    Parameters
    ----------
    problem : HSSProblem
        From :func:`prepare_hss` (the ADMM reaches the first C) or
        :func:`prepare_decomposition` (the exact decomposition from zero does, for every
        label column; ``solve_exact`` must then be true, and the ADMM options do not apply).
    Y : ndarray of shape (n, r)
        Label columns in {-1, +1} (one-vs-rest classes are solved together).
    Cs : sequence of float
        Sorted ascending here (:func:`~hsskern.solvers.paths.path.check_Cs`).
    weights : ndarray of shape (n,) or None
        Per-point weights >= 0, shared by every label column: point i's box is
        [0, C w_i] in the ADMM and in the decomposition (LIBSVM's weighted C; a weight of 0
        keeps alpha_i = 0). None: the unweighted problem, computed exactly as before weights
        existed (no per-point bound array anywhere on that path).
    options : HSSSVCOptions or None
        The path's options, handed down whole (None: :class:`~hsskern.HSSSVCOptions`'
        defaults): the ADMM's (``admm_max_iter``, ``relaxation``, ``adaptive_beta``: beta
        moved by 10x and K + beta I refactored when the residuals differ by more than 10x,
        never a recompression), the exact solve's (``solve_exact``: run the exact
        decomposition after the ADMM, "auto" skipping a column whose start costs more than
        ``settings.exact_limit`` kernel entries; ``max_chunk``; ``decomposition``, the
        block engine's tunables; ``smo``, the cached engine's). Only ``approximation``,
        ``start``, ``beta`` and the compression are the preparation's.
    settings : PathSettings or None
        What the estimator resolved (None: the defaults): ``tol``, the exact solve's
        stopping gap (LIBSVM's); ``admm_tol``, the ADMM's (None: ``admm_max_iter``
        iterations, the paper's); ``n_decades``: reach the first C from C / 10^n_decades
        through one C per decade (not returned; their cost is counted in the first
        solution): a cold ADMM at a large C is a poor start for the decomposition, a scaled
        exact solution of a smaller C a good one (not on a ``start="decomposition"``
        problem, which starts from zero); ``engine`` of a problem solved from zero
        ("auto": its plan's).
    warn : bool, default True
        A ``ConvergenceWarning`` for the C values not solved to ``tol``.
    log : callable or None
        ``log(level, line)``: level 1 per C, level 2 per decomposition round.
    dual_start : ndarray of shape (n, r) or None
        A start for the first C: alpha per label column (a previous fit's, mapped to these
        points: a refit's warm start, :func:`~hsskern.solvers.paths.warm.carry_start`). The exact
        decomposition solves the first C from it (made feasible by
        :func:`~hsskern.solvers.engines.exact.feasible_start`: clipped to the box, y' alpha = 0
        restored by shrinking the heavier side), with no ADMM and no continuation
        (``n_decades`` is not used). ``solve_exact`` must be true. None: the start of the
        problem's route.
    start_decision : ndarray of shape (n, r) or None
        ``K (y o alpha)`` of a *feasible* ``dual_start``, per column; None: computed (one
        n x n_SV product per column).

    Returns
    -------
    tuple of PathSolution, one per C in ascending order.
    """
    o = HSSSVCOptions() if options is None else options
    settings = PathSettings() if settings is None else settings
    Y = check_labels(Y, problem.n_samples)
    dual_start = check_dual_start(dual_start, Y.shape, o.solve_exact)
    Cs = check_Cs(Cs)
    weights = check_weights(weights, problem.n_samples)
    exact_start = problem.start == "decomposition"
    o = o.replace(decomposition=o.decomposition_options(
        decomposition_chunk(problem, o.solve_exact, o.max_chunk)))
    smo_options = o.smo
    engine = resolve_engine(problem, settings.engine) if exact_start else "block"
    admm = DualADMMOptions(max_iter=o.admm_max_iter, kkt_tol=settings.admm_tol,
                           relaxation=o.relaxation)
    # the continuation serves a cold ADMM at a large C; a decomposition from zero (or from a
    # given start) reaches the first C faster by itself (docs/design_notes.md)
    n_extra = 0 if exact_start or dual_start is not None else int(settings.n_decades)
    if engine == "cached":
        smo_options = bounded_options(smo_options, *problem.K.points.shape,
                                      problem.stats.get("memory_budget"))
        if (problem.stats.get("plan") or {}).get("threads") == 1 and smo_options.threads == 0:
            smo_options = replace(smo_options, threads=1)  # as threads_for: one thread
    grid = [Cs[0] * 10.0 ** -k for k in range(n_extra, 0, -1)] + list(Cs)
    # the ADMM moves beta up past a failed shift by itself: no Lanczos run for a suggestion
    refactor = partial(problem.refactor, suggest=False) if o.adaptive_beta else None
    t0 = time.perf_counter()
    floor = problem.beta_floor
    # no local reference to a factor: a rebalanced beta replaces problem.factor, and the old
    # one must be freed then (two factors alive at most, as the memory estimate counts)
    w = None if exact_start else problem.factor.solve(np.ones(Y.shape[0]))
    setup = time.perf_counter() - t0
    solutions, state, prev = [], None, None
    duals = [DualProblem(problem.K, Y[:, j], weights=weights) for j in range(Y.shape[1])]
    block = BlockEngine(o.decomposition)  # its block buffer is shared by every C
    # one label column: the cached engine and its kernel rows serve every C (several would
    # hold a row cache per class: a fresh engine each solve)
    cached = [_Fresh(smo_options) if Y.shape[1] > 1 else CachedEngine(smo_options)
              for _ in range(Y.shape[1])] if engine == "cached" else None
    for C in grid:
        t_c = time.perf_counter()
        if prev is not None or exact_start or dual_start is not None:
            starts = _exact_starts(prev, C, Y.shape[1], dual_start, start_decision,
                                   engine == "cached" and smo_options.warm_max_ratio)
            if engine == "cached":  # its own thread count: no thread-pool scan on its path
                out = [cached[j].solve(duals[j], C, DualStart(a, f), tol=settings.tol)
                       for j, (a, f) in enumerate(starts)]
            else:
                # a given start is near its answer (solvers.warm: small working sets)
                near = prev is None and dual_start is not None
                with threads_for(problem):
                    out = [block.solve(duals[j], C, DualStart(a, f), tol=settings.tol,
                                       options=o.decomposition.replace(**near_options(
                                           start=a, C=C, weights=weights)) if near else None,
                                       log=_exact_log(log, C, j))
                           for j, (a, f) in enumerate(starts)]
            sol = _exact_solution(C, Y, out, np.nan if exact_start else problem.factor.beta,
                                  floor, "smo" if engine == "cached" else "decomposition")
        else:
            # with refactor=problem.refactor every factor the ADMM moves to is the problem's.
            # Plain keywords: a ** call would pin the first factor in its argument tuple
            res = svm_dual_admm(problem.factor, problem.approximation, Y, C, w=w,
                                warm_start=state, beta_floor=floor, refactor=refactor,
                                weights=weights, options=admm)
            w = res.state["w"]
            state, floor = res.state, res.state["beta_floor"]
            out = None
            if o.solve_exact:
                coef = np.asarray(res.dual_coef).reshape(Y.shape)
                out = _exact_columns(block, problem.K, Y, C, coef, o, settings, log, weights)
            sol = _admm_solution(res, Y, out)
        if out is not None and not any(rr.skipped for rr in out):
            prev = (C, out)
        if not solutions and "admm" in sol.timings:  # the ADMM's setup solve
            sol = replace(sol, timings={**sol.timings, "admm": sol.timings["admm"] + setup})
        solutions.append(sol)
        if log is not None:
            k = int(sol.n_iter.max())
            steps = (f"{k} ADMM iterations" if "admm" in sol.timings else
                     f"{k} SMO steps of the cached SMO" if engine == "cached" else
                     f"{k} working sets of the block decomposition")
            log(1, f"C={C:g}: {steps}, gap "
                f"{np.nanmax(sol.gap) if np.isfinite(sol.gap).any() else float('nan'):.3g}, "
                f"{np.count_nonzero(np.any(sol.dual_coef != 0, axis=1))} support vectors, "
                f"{time.perf_counter() - t_c:.3g} s")
    if n_extra:  # the continuation's C are part of the first requested C's cost
        head, solutions = solutions[:n_extra + 1], solutions[n_extra:]
        timings = {k: sum(s.timings.get(k, 0.0) for s in head)
                   for k in dict.fromkeys(k for s in head for k in s.timings)}
        n_iter = sum(s.n_iter for s in head)
        solutions[0] = replace(head[-1], timings=timings, n_iter=n_iter)
    if warn and settings.admm_tol is not None:
        warn_unsolved(solutions, settings.admm_tol, o.admm_max_iter,
                      step_cap=smo_options.max_iter if engine == "cached" else None)
    return tuple(replace(s, info={**s.info, "route": _route(problem, exact_start, engine, s)})
                 for s in solutions)


def _route(problem, exact_start, engine, sol):
    """The route a solution took, in words (an estimator's ``route_``): "cached SMO" or
    "block decomposition" from zero; "HSS + ADMM start" (or "dense + ADMM start") when the
    ADMM's point started the exact decomposition; "HSS + ADMM (approximate)" when no exact
    solve followed it."""
    if exact_start:
        return "cached SMO" if engine == "cached" else "block decomposition"
    kind = "HSS" if problem.stats.get("approximation") == "hss" else "dense"
    refined = any(r is not None and not r.skipped for r in (sol.info.get("exact") or ()))
    return f"{kind} + ADMM start" if refined else f"{kind} + ADMM (approximate)"


def check_dual_start(dual_start, shape, solve_exact=True):
    """A path's ``dual_start`` as a float array of ``shape`` (n, r), finite and >= 0, or None;
    a clear ValueError otherwise (and without ``solve_exact``: only the exact decomposition takes a
    start)."""
    if dual_start is None:
        return None
    if not solve_exact:
        raise ValueError("dual_start is solved from by the exact decomposition: it needs "
                         "solve_exact=True or 'auto'")
    a = np.asarray(dual_start, dtype=np.float64)
    if a.ndim == 1 and len(shape) == 2 and shape[1] == 1:
        a = a[:, None]
    if a.shape != tuple(shape):
        raise ValueError(f"dual_start must have shape {tuple(shape)}, got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("dual_start must hold finite alphas >= 0")
    return a


def _first_labels(Y, n):
    """The first label column of a classifier's Y (n rows), else None (no labels, or a
    caller's placeholder: the SVR's Y has no row per point)."""
    if Y is None or np.ndim(Y) == 0 or np.shape(Y)[0] != n or np.size(Y) == 0:
        return None
    return np.reshape(Y, (n, -1))[:, 0]


def resolve_engine(problem, engine):
    """The engine a ``start="decomposition"`` problem is solved by: "cached" or "block".

    "auto": its plan's (``stats["plan"]``, :func:`~hsskern.solvers.paths.plan.plan_fit`, decided
    when it was prepared); a problem without a plan takes the block decomposition."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine != "auto":
        return engine
    plan = problem.stats.get("plan")
    return "block" if plan is None else plan["engine"]


def warn_unsolved(solutions, tol, max_iter, step_cap=None):
    """One ConvergenceWarning for the C values whose solution did not reach ``tol``, naming
    what fell short: the exact decomposition skipped (``solve_exact="auto"`` past
    ``exact_limit``: the answer is the ADMM's), the exact decomposition itself, or the
    ADMM (with why when the approximation is indefinite: its dual is then not convex, and
    the ADMM's answer at large C can be poor)."""
    bad = [s for s in solutions if not s.converged.all()]
    if not bad:
        return
    msg = (f"the SVM did not reach its tolerance for {len(bad)} of {len(solutions)} C "
           "value(s) (C = " + ", ".join(f"{s.C:.3g}" for s in bad[:5])
           + (", ..." if len(bad) > 5 else "") + ")")
    refined = [r for s in bad for r in (s.info.get("exact") or ()) if not r.converged]
    skipped = [r.skipped for r in refined if r.skipped]
    if skipped:
        msg += (f": the exact decomposition was skipped ({skipped[0]}), so the model is the "
                f"ADMM's approximate answer, which did not reach tol={tol:g} within "
                f"admm_max_iter={max_iter} iterations either. solve_exact=True solves it exactly "
                "(slowly); ExactSVC solves it within a time budget.")
    elif step_cap is not None and any(r.rounds >= step_cap for r in refined):
        # scikit-learn's words for LIBSVM's step cap
        msg += (f": the solver terminated early (max_iter={step_cap}) at gap "
                f"{max(r.gap for r in refined):.3g}. Consider pre-processing your data with "
                "StandardScaler or MinMaxScaler, or raise max_iter.")
    elif refined:
        msg += (f": the exact decomposition stopped at gap {max(r.gap for r in refined):.3g} "
                "(a round changed nothing: the kernel may be indefinite or the C extreme).")
    else:
        msg += f" within admm_max_iter={max_iter} ADMM iterations (tol={tol:g})."
        floor = max(s.info["beta_floor"] for s in solutions)
        if floor > 0:
            msg += (f" beta had to stay >= {floor:.3g} (below it K + beta I was indefinite "
                    "or the iterates diverged), which slows the ADMM at large C. With an HSS "
                    "approximation this means it is indefinite: its dual is not convex and "
                    "the solution at large C can be poor; tighten rel_tol or raise max_rank.")
        else:
            msg += " Raise options.admm_max_iter or loosen tol."
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)


@dataclass(frozen=True)
class HSSBackend:
    """The path protocol for the HSS + ULV + dual ADMM (+ exact decomposition) SVM.

    ``prepare`` is :func:`prepare_hss`, ``path`` is :func:`hss_svm_path` with these options,
    ``model`` a :class:`~hsskern.solvers.paths.path.KernelExpansion` over the support vectors.

    ``options`` (an :class:`~hsskern.HSSSVCOptions` or :class:`~hsskern.HSSSVROptions`) is
    handed down whole: the compression, the ADMM, the exact solve and its engines' groups
    (``decomposition``, ``smo``). ``settings`` (:class:`~hsskern.options.PathSettings`) is
    what the estimator resolved: the tolerances, the compression's seed, the engine of a
    problem solved from zero, ``store_kernel`` (False, one fit: K matrix-free unless it
    stores as one-byte codes, :func:`prepare_decomposition`) and ``probe_C`` (one fit's C;
    None for a path, whose first C is its smallest: it lets ``start="auto"`` measure the
    support vectors' share past ``route.small_n`` points, :meth:`resolve_start`). ``route``
    holds the route's thresholds: the start's ``small_n``, and the plan of a
    ``start="decomposition"`` problem (:func:`~hsskern.solvers.paths.plan.plan_fit`: engine,
    store, threads), recorded in its ``stats["plan"]``.

    ``options.start`` chooses how the first C is reached: "admm" (compression or dense K,
    factor, ADMM, then the exact decomposition from the ADMM's point), "decomposition" (the
    exact decomposition from zero, no approximation: :func:`prepare_decomposition`) or
    "auto" (:meth:`resolve_start`). The default here is "admm", which every other user of
    this backend's ``prepare`` (the SVR's, which needs the factor) relies on; the classifier
    estimators pass "auto".
    """

    kernel: object
    options: HSSSVCOptions = HSSSVCOptions(start="admm")
    settings: PathSettings = PathSettings()
    memory_budget: float = None
    log: object = None
    route: RouteOptions = field(default_factory=RouteOptions)

    @classmethod
    def of_compression(cls, kernel, hss_options, *, memory_budget=None, log=None,
                       settings=None, **fields):
        """The backend whose compression is ``hss_options`` (an
        :class:`~hsskern.options.HSSOptions`: its fields, seed and verbosity; None: the
        defaults), whose other options are ``fields`` (``start="admm"`` unless given) and
        whose :class:`~hsskern.options.PathSettings` are ``settings`` (a dict)."""
        hss_options = HSSOptions() if hss_options is None else hss_options
        options = HSSSVCOptions(**{"start": "admm", **compression_of(hss_options), **fields})
        settings = PathSettings(**{"random_state": hss_options.random_state,
                                   "verbose": hss_options.verbose, **(settings or {})})
        return cls(kernel, options, settings, memory_budget=memory_budget, log=log)

    # what resolve_start and probe_share read, by the names they read them
    @property
    def start(self):
        return self.options.start

    @property
    def approximation(self):
        return self.options.approximation

    @property
    def solve_exact(self):
        return self.options.solve_exact

    @property
    def exact_limit(self):
        return exact_limit(self.settings, self.route)

    @property
    def probe_C(self):
        return self.settings.probe_C

    @property
    def smo_options(self):
        return self.options.smo

    @property
    def hss_options(self):
        """The compression's :class:`~hsskern.options.HSSOptions` (with the seed and the
        verbosity of ``settings``)."""
        return self.options.hss_options(self.settings.random_state, self.settings.verbose)

    def memory_estimate(self, n, d, n_rhs=1, max_rank=None):
        """Bytes by phase of a fit on n points of d features with these options
        (:func:`hsskern.hss.estimate_memory`, ranks at ``max_rank``, default the options'
        cap; None for ``approximation="exact"``, whose dense kernel and factor are checked in
        :func:`prepare_hss`)."""
        if self.approximation == "exact":
            return None
        from ...hss import estimate_memory
        o = self.hss_options
        return estimate_memory(n, d, leaf_size=o.leaf_size,
                               max_rank=o.max_rank if max_rank is None else max_rank,
                               n_neighbors=o.n_neighbors, ann_iterations=o.ann_iterations,
                               n_random=o.n_random, n_rhs=n_rhs,
                               adaptive_beta=self.options.adaptive_beta,
                               solve_exact=bool(self.solve_exact), max_chunk=self.options.max_chunk)

    def resolve_start(self, n, d, sv_share=None):
        """The start ``prepare`` takes on n points of d features: "admm" or "decomposition"
        (:func:`~hsskern.solvers.paths.plan.plan_start`, the one rule, at ``route``'s thresholds,
        with ``exact_limit`` the exact step's reach). ``sv_share``: the support vectors'
        share measured on a subsample at the fit's C
        (:func:`~hsskern.solvers.engines.cached_smo.probe_sv_share`)."""
        return self.plan_start(n, sv_share)[0]

    def plan_start(self, n, sv_share=None, staged=False):
        """:func:`~hsskern.solvers.paths.plan.plan_start` with these options: (start, reason)."""
        return plan_start(n, route=self.route, start=self.start, exact=self.solve_exact,
                          approximation=self.approximation,
                          kernel=None if self.kernel is None else self.kernel.name,
                          sv_share=sv_share, exact_limit=self.exact_limit, staged=staged,
                          probe_points=self.route.probe_points)

    def probe_share(self, X, Y, min_points=None):
        """The support vectors' share at ``probe_C`` on a subsample, where it can move the
        start (past ``min_points`` dense points, default ``route.small_n``, "auto"); else
        None. ``prepare`` measures it itself unless given it."""
        n = X.shape[0]
        y = _first_labels(Y, n)
        least = self.route.small_n if min_points is None else min_points
        if (self.probe_C is None or self.start != "auto" or n <= least or y is None
                or sp.issparse(X) or self.kernel is None
                or self.kernel.name not in CACHED_KERNELS
                or self.resolve_start(n, X.shape[1], sv_share=0.0) != "decomposition"):
            return None
        t0 = time.perf_counter()
        share = probe_sv_share(X, self.kernel, y, self.smo_options, C=self.probe_C,
                               points=self.route.probe_points)
        if share is not None and self.log is not None:
            self.log(1, f"support vectors at C={self.probe_C:g} on a subsample: "
                        f"{100 * share:.2g} % ({time.perf_counter() - t0:.2f} s)")
        return share

    def prepare(self, X, Y=None, *, sv_share=None):
        """The problem of the points X (the labels Y are not needed: one factor serves
        every class; their count sizes the memory estimate). ``sv_share``: the share
        :meth:`probe_share` measured already (None: measured here where it can move the
        start).

        With :meth:`resolve_start` "decomposition": :func:`prepare_decomposition` (its
        working sets capped by ``memory_budget``; a ValueError with ``solve_exact=False``, which
        needs the ADMM). Otherwise:

        Memory is checked before any work. The ranks the compression reaches depend on the
        tolerances and the data, so the estimate is a range: at rank 1 (what the points, the
        neighbours, the leaves and the working set take whatever the ranks) and at
        ``max_rank`` (an upper bound). A fit whose lower end exceeds ``memory_budget`` is
        refused; one whose upper end exceeds it runs with a warning saying so.
        """
        n, d = X.shape
        n_rhs = 1 if Y is None else np.shape(Y)[-1]
        share = self.probe_share(X, Y) if sv_share is None else sv_share
        start, reason = self.plan_start(n, share)
        if start == "decomposition":
            if not self.solve_exact:
                raise ValueError('start="decomposition" solves every C exactly: it needs '
                                 'solve_exact=True or "auto" (the backend\'s solve_exact; '
                                 'solve_exact=False needs start="admm")')
            if self.log is not None:
                self.log(1, f"start: the exact solve from zero on {n} points")
            # the engine's options at the tol it will solve at: its rows' bytes with them
            smo = replace(self.smo_options, tol=float(self.settings.tol))
            problem = prepare_decomposition(X, self.kernel, max_chunk=self.options.max_chunk,
                                            engine=self.settings.engine, smo_options=smo,
                                            y=_first_labels(Y, n), sv_share=share,
                                            n_rhs=n_rhs, memory_budget=self.memory_budget,
                                            log=self.log,
                                            store_kernel=self.settings.store_kernel,
                                            route=self.route)
            return with_plan(problem, start_reason=reason)
        est = self.memory_estimate(n, d, n_rhs)
        if est is not None:
            o = self.hss_options
            what = (f"an HSS fit on {n} points x {d} features (leaf_size={o.leaf_size}, "
                    f"max_chunk={self.options.max_chunk})")
            low = self.memory_estimate(n, d, n_rhs, max_rank=1)
            check_memory(low["peak"], what + " at the smallest ranks", self.memory_budget,
                         hint="lower leaf_size, n_neighbors or max_chunk, or raise "
                              "memory_budget")
            budget = resolve_budget(self.memory_budget)
            if budget is not None and est["peak"] > budget:
                warnings.warn(f"{what} needs {format_bytes(low['peak'])} at the smallest "
                              f"ranks and up to {format_bytes(est['peak'])} if the ranks "
                              f"reach max_rank={o.max_rank} ({est['peak_phase']} phase), more "
                              f"than the {format_bytes(budget)} allowed; it goes on, since "
                              "ranks stay below the cap when the tolerances allow. Lower "
                              "max_rank to bound it.", UserWarning, stacklevel=4)
            if self.log is not None:
                self.log(1, f"memory estimate {format_bytes(low['peak'])} to "
                            f"{format_bytes(est['peak'])} (at max_rank={o.max_rank}; peak: "
                            f"{est['peak_phase']})")
        problem = prepare_hss(X, self.kernel, approximation=self.approximation,
                              hss_options=self.hss_options, beta=self.options.beta,
                              memory_budget=self.memory_budget, log=self.log)
        plan = FitPlan.of_route("admm", reason, self.options.max_chunk, share,
                                self.route.probe_points)
        problem = with_plan(problem, **plan.as_dict())
        if est is None:
            return problem
        return replace(problem, stats={**problem.stats, "memory_estimate": est,
                                       "memory_estimate_low": low})

    def warm_backend(self, entries=None, limit=None):
        """This backend for a path from a given start (``path``'s ``dual_start``: a refit's
        warm start), or None where this backend would not solve the first C exactly:
        ``solve_exact`` false (the ADMM's answer on the approximation), or "auto" with the
        start's n x n_SV ``entries`` past ``limit`` (default ``exact_limit``: what the
        exact step of this route skips).

        The start replaces what the ADMM route and the staged growth are for, a point near
        the answer: the problem is prepared for the exact decomposition alone
        (``start="decomposition"``, no compression or factor), whatever n.
        """
        limit = self.exact_limit if limit is None else limit
        if not self.solve_exact or (self.solve_exact == "auto" and entries is not None
                               and entries > limit):
            return None
        # the block engine takes the start's decision values as they are, where the cached
        # one would pay a product over every bounded alpha for its G_bar; no stored K: a
        # start near the answer reads a few columns of it
        return replace(self, options=self.options.replace(start="decomposition"),
                       settings=self.settings.replace(n_decades=0, probe_C=None,
                                                      engine="block", store_kernel=None))

    def path(self, prepared, Y, Cs, weights=None, dual_start=None, start_decision=None):
        """:func:`hss_svm_path` with these options (``weights``: per-point weights, see
        the protocol in :mod:`hsskern.solvers.paths.path`; ``dual_start`` and its
        ``start_decision``: the first C's start, see :meth:`warm_backend`)."""
        settings = self.settings.replace(exact_limit=self.exact_limit)  # the route's
        return hss_svm_path(prepared, Y, Cs, weights, options=self.options, settings=settings,
                            log=self.log, dual_start=dual_start,
                            start_decision=start_decision)

    def model(self, prepared, solutions):
        points = prepared.K.points if prepared.points is None else prepared.points
        return KernelExpansion(points, self.kernel, solutions)
