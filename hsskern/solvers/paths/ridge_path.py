"""Kernel ridge regression on the HSS backend of the path protocol: one compression, every alpha.

Kernel ridge regression solves (K + alpha I) c = y and predicts f(x) = sum_i c_i k(x_i, x)
(scikit-learn's ``KernelRidge``: no intercept). The preparation is the classifier's
(:func:`~hsskern.solvers.paths.hss_path.prepare_hss`: kernel operator, HSS compression, one ULV
factor); a new alpha is a new shift, so each alpha of an ascending grid costs one
refactorization (O(n r^2)), never a recompression, and then

* ``solver="direct"``: c = (H + alpha I)^{-1} y by the factor's solve (O(n r) per column).
  Its error is the compression's: (K + alpha I)(c - c*) = (K - H) c, so the relative residual
  on the exact system is at most ||K - H||_2 ||c|| / ||y|| <= ||K - H||_2 / alpha.
* ``solver="exact"``: conjugate gradients on the exact ``KernelOperator`` + alpha I, started
  from the direct solution and preconditioned by the same factor, to a relative residual
  ``tol``: the answer is the exact kernel ridge solution. Few iterations are needed because
  the preconditioned operator is (H + alpha I)^{-1}(K + alpha I) = I + (H + alpha I)^{-1}(K - H),
  the identity plus a perturbation of norm delta <= ||K - H||_2 / (lambda_min(H) + alpha),
  about compression error / alpha. Its eigenvalues lie in [1 - delta, 1 + delta], so (for
  delta < 1) CG gains at least a factor ~delta / 2 per iteration: log(tol) / log(delta / 2)
  iterations, e.g. 3-5 for delta = 1e-3 and tol = 1e-10. Each iteration is one exact kernel
  product (O(n^2 d), blocked, never stored) and one factor solve; a loose compression
  (delta near 1 or above, at small alpha) costs iterations, not accuracy.

Where the kernel has a single-precision product (:meth:`KernelOperator.single_precision`:
Gaussian or Laplacian, d <= 12), ``"exact"`` runs the same preconditioned CG with that
product (points, entries and sums in float32) and reliable updates: each time the
recursive residual has fallen by ``_RELIABLE_DROP``, it is replaced by the true residual
y - (K + alpha I) x computed in double, and CG goes on from it (no restart). Single precision's
error in a product scales with the vector, so between two updates it stays small against the
residual of the last one, and the iterations stay close to double CG's; the stopping test is
on the double residual, so the answer is the same exact solution to ``tol``, from about one
double product per 1.5 digits. If an update finds the true residual not halved (alpha so small
that single precision's error, magnified by ||K|| / alpha, dominates), CG finishes in double.

Where the HSS approximation is indefinite (a loose tolerance, alpha below its most negative
eigenvalue), ``"exact"`` preconditions with the factor at the smallest shift that is definite
(still symmetric positive definite, so CG applies), while ``"direct"`` cannot solve the
requested system and raises :class:`~hsskern.exceptions.NotPositiveDefiniteError`.

``approximation="nystrom"`` (:func:`prepare_nystrom`) replaces the compression by a rank-k
randomly pivoted Cholesky F (:func:`~hsskern.lowrank.rp_cholesky`: k kernel columns, O(n k^2)),
and every "factor" is F F^T + alpha I by Woodbury (a new alpha: one k x k Cholesky). Since
F F^T <= K it is always definite, and as a preconditioner the eigenvalues of
(F F^T + alpha I)^{-1}(K + alpha I) lie in [1, 1 + lambda_max(K - F F^T) / alpha]: where the
kernel does not compress hierarchically (moderate dimension, small alpha) and the HSS factor
is indefinite at alpha, this bound still holds, and CG needs about sqrt of it iterations per
digit. "direct" is then Nystrom kernel ridge (an approximation, bounded the same way).

Leave-one-out: with G = H + alpha I and c = G^{-1} y, the leave-one-out residual of point i is
c_i / (G^{-1})_ii (the ridge identity), and the factor gives diag(G^{-1}) in O(n r^2 depth)
(``ULVFactor.inverse_diagonal``), so a whole alpha grid of leave-one-out errors costs one
compression and one refactorization per alpha.
"""
import time
import warnings
from dataclasses import dataclass, field
from numbers import Real

import numpy as np
from scipy.sparse.linalg import cg
from sklearn.exceptions import ConvergenceWarning

from ...exceptions import NotPositiveDefiniteError
from ...factors import LowRankShiftFactor
from ...kernels import kernel_operator
from ...lowrank import nystrom_on_pivots, rp_cholesky
from ...options import HSSOptions, RidgeOptions
from ...utils._memory import check_memory, format_bytes
from .hss_path import HSSBackend, prepare_hss
from .path import KernelExpansion, PathSolution, PreparedProblem, check_grid
from ..engines.ridge_dense import dense_fits, dense_memory, dense_ridge

#: Mixed-precision CG (_mixed_cg) replaces its recursive residual by the double one each time
#: it has fallen by this factor (a "reliable update"), before single precision's error, which
#: scales with the residual it started from, can matter.
_RELIABLE_DROP = 0.03

__all__ = ["RidgeBackend", "NystromProblem", "prepare_nystrom", "ridge_path", "check_alphas",
           "check_targets", "loo_residuals", "per_target", "DIRECT_REFUSES"]

_SOLVERS = ("direct", "exact")
DIRECT_REFUSES = ("alpha=0 is solved by solver='exact' only: the direct solver factors the "
                   "HSS approximation H + alpha I, which is singular (or indefinite) at "
                   "alpha=0; solver='exact' solves it densely below options.dense_max_n "
                   "points (a least-squares solution where K is singular, as KernelRidge)")
#: n-vectors per target of the exact solver (CG's iterate, residual, direction, product,
#: preconditioned residual, the start and the residual check)
_CG_VECTORS = 8


def check_alphas(alphas, name="alphas", allow_zero=False):
    """alphas as a sorted float array, or a clear error before any work is done
    (:func:`~hsskern.solvers.paths.path.check_grid`); ``allow_zero``: 0 is taken too (the exact
    solver's dense route solves it, as ``KernelRidge``)."""
    if allow_zero and isinstance(alphas, (Real, np.number, list, tuple, np.ndarray)):
        vals = np.asarray([alphas] if np.ndim(alphas) == 0 else alphas, dtype=object)
        zero = np.array([_is_zero(v) for v in vals.ravel()], dtype=bool)
        if vals.ndim == 1 and zero.any():
            check_grid([1.0 if z else v for v, z in zip(vals, zero)], name)  # the others
            return np.sort(np.where(zero, 0.0, vals).astype(np.float64))
    return check_grid(alphas, name)


def _is_zero(v):
    return isinstance(v, (Real, np.number)) and not isinstance(v, (bool, np.bool_)) and v == 0


def check_targets(Y, n):
    """Y as a C-contiguous (n, k) float array of finite regression targets."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[0] != n or Y.shape[1] == 0:
        raise ValueError(f"Y must have shape ({n},) or ({n}, k), got {Y.shape}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y must hold finite values (no NaN or infinity)")
    return np.ascontiguousarray(Y)


@dataclass(frozen=True)
class NystromProblem(PreparedProblem):
    """The exact kernel operator and a randomly pivoted Cholesky F (F F^T <= K), the
    ridge path's problem for ``approximation="nystrom"``: :meth:`refactor` gives the
    Woodbury factor of F F^T + beta I (always definite, so ``beta_floor`` stays 0).
    ``residual_trace`` is tr(K - F F^T); ``pivots`` and ``weights`` (F = K[:, pivots]
    weights, with ``return_map``) extend F's rows to new points."""

    K: object
    F: np.ndarray
    factor: object
    beta_floor: float = 0.0
    stats: object = field(default_factory=dict)
    timings: object = field(default_factory=dict)
    residual_trace: float = 0.0
    pivots: object = None
    weights: object = None

    @property
    def n_samples(self):
        return self.K.shape[0]

    def refactor(self, beta, *, suggest=True):
        factor = self.factor.shifted(beta)
        object.__setattr__(self, "factor", factor)  # frozen otherwise: only this replaces it
        return factor


def prepare_nystrom(X, kernel, *, rank, beta, random_state=None, memory_budget=None,
                    return_map=False, pivots=None, log=None):
    """Kernel operator and a rank-``rank`` randomly pivoted Cholesky of K, factored at
    ``beta`` (:class:`NystromProblem`; ``return_map``: with the map to new points). Given
    ``pivots``, the Nystrom approximation on those columns instead
    (:func:`~hsskern.lowrank.nystrom_on_pivots`, always with its map)."""
    t0 = time.perf_counter()
    K = kernel_operator(X, kernel)
    if pivots is not None:
        F, pivots, resid, weights = nystrom_on_pivots(K, pivots, memory_budget=memory_budget)
    else:
        F, pivots, resid, weights = rp_cholesky(K, rank, random_state=random_state,
                                                memory_budget=memory_budget,
                                                return_map=return_map)
    t1 = time.perf_counter()
    factor = LowRankShiftFactor(F, beta)
    t2 = time.perf_counter()
    if log is not None:
        log(1, f"randomly pivoted Cholesky: rank {F.shape[1]} from {pivots.size} columns, "
               f"residual trace {resid.sum():.3g} ({t1 - t0:.3g} s)")
    stats = {"approximation": "nystrom", "n": K.shape[0], "rank": F.shape[1],
             "columns_read": int(pivots.size), "residual_trace": float(resid.sum()),
             "memory_bytes": int(F.nbytes), "factor_memory_bytes": factor.memory_bytes()}
    return NystromProblem(K=K, F=F, factor=factor, stats=stats,
                          timings={"kernel": 0.0, "compress": t1 - t0, "factor": t2 - t1},
                          residual_trace=float(resid.sum()), pivots=pivots, weights=weights)


def _factor_for(problem, alpha, factor, floor, solver):
    """The factor for this alpha: the current one when its shift fits, else a refactor.

    Returns (factor, floor, seconds); ``floor`` is the smallest shift known to give a
    definite factor (0 while none failed). Below it the "exact" solver gets the factor at
    the floor (a valid preconditioner); "direct" has no valid system to solve.
    """
    t0 = time.perf_counter()
    beta = max(alpha, floor)
    if beta != alpha and solver == "direct":
        raise _indefinite(alpha, floor)
    if factor is None or factor.beta != beta:
        try:
            factor = problem.refactor(beta)
        except NotPositiveDefiniteError as exc:
            if solver == "direct":
                raise _indefinite(alpha, exc.suggested_beta) from exc
            floor = float(exc.suggested_beta)
            factor = problem.refactor(floor)
    return factor, floor, time.perf_counter() - t0


def _indefinite(alpha, floor):
    floor = float("nan") if floor is None else floor
    return NotPositiveDefiniteError(
        f"H + alpha I is not positive definite for alpha={alpha:g}: the HSS approximation of "
        f"K is indefinite (it needs a shift >= {floor:.3g}), so solver='direct' cannot solve "
        "the ridge system at this alpha. Tighten rel_tol / abs_tol (or raise max_rank), use "
        "alpha values above the shift, or solver='exact' (exact conjugate gradients, the "
        "factor only preconditions)", suggested_beta=floor)


def loo_residuals(factor, coef):
    """Leave-one-out residuals y_i - f_{-i}(x_i) = c_i / (G^{-1})_ii of the ridge problem whose
    matrix G the factor holds, with c = G^{-1} y (shape (n, k))."""
    d = factor.inverse_diagonal()
    return coef / d[:, None]


def _cg_columns(K, alpha, M, Y, X0, tol, max_iter):
    """Preconditioned CG on (K + alpha I) x = y, one column at a time, from X0: in mixed
    precision where K has a single-precision product (:func:`_mixed_cg`), then (or else) in
    double to ``tol``."""
    A = K.shifted(alpha)
    K32 = K.single_precision()
    X = np.empty_like(Y)
    n_iter = np.zeros(Y.shape[1], dtype=np.int64)
    ok = np.zeros(Y.shape[1], dtype=bool)
    for j in range(Y.shape[1]):
        y, x, count = Y[:, j], X0[:, j], [0]

        def step(_, count=count):
            count[0] += 1
        if K32 is not None:
            x, done = _mixed_cg(A, K32, alpha, M, y, x, tol, max_iter, step, count)
            if done:
                X[:, j], n_iter[j], ok[j] = x, count[0], True
                continue
        x, info = cg(A, y, x0=x, rtol=tol, atol=0.0, maxiter=max(max_iter - count[0], 1),
                     M=M, callback=step)
        X[:, j], n_iter[j], ok[j] = x, count[0], info == 0
    return X, n_iter, ok


def _mixed_cg(A, K32, alpha, M, y, x, tol, max_iter, step, count):
    """Preconditioned CG whose products are K32's (single precision), with reliable updates:
    each time the recursive residual has fallen by _RELIABLE_DROP, it is replaced by the true
    residual y - A x in double, and the search goes on from it. The stopping test is on that
    double residual. If an update finds the true residual not halved since the last one,
    single precision no longer gains here: the caller finishes in double from the best x.
    Returns (x, converged)."""
    ynorm = np.linalg.norm(y)
    x = x.copy()
    r = y - A.matvec(x)
    best, x_best = np.linalg.norm(r), x.copy()
    if best <= tol * ynorm:
        return x, True
    z = M.matvec(r)
    p = z.copy()
    rz = r @ z
    while count[0] < max_iter:
        q = K32.matvec(p) + alpha * p
        pq = p @ q
        if not (pq > 0 and rz > 0):  # only a broken product gets here: finish in double
            return x_best, False
        a = rz / pq
        x += a * p
        r -= a * q
        step(x)
        rnorm = np.linalg.norm(r)
        if rnorm <= _RELIABLE_DROP * best or rnorm <= tol * ynorm:
            r = y - A.matvec(x)
            rnorm = np.linalg.norm(r)
            if rnorm <= tol * ynorm:
                return x, True
            if not rnorm <= 0.5 * best:
                return x_best, False
            best, x_best = rnorm, x.copy()
        z = M.matvec(r)
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    return x_best, False


def per_target(solutions, alphas):
    """One PathSolution whose column j is the solution at ``alphas[j]`` (a path of the
    distinct alphas: ``KernelRidge``'s one alpha per target)."""
    at = {float(s.C): s for s in solutions}
    cols = [at[float(a)] for a in alphas]
    pick = [(sol, j) for j, sol in enumerate(cols)]

    def stack(name):
        return np.array([np.asarray(getattr(sol, name))[j] for sol, j in pick])
    timings = {key: sum(s.timings.get(key, 0.0) for s in solutions)
               for key in solutions[0].timings}
    return PathSolution(C=float(alphas[0]), intercept=np.zeros(len(alphas)),
                        n_iter=stack("n_iter"), converged=stack("converged"),
                        gap=stack("gap"),
                        dual_coef=np.column_stack([sol.dual_coef[:, j] for sol, j in pick]),
                        timings=timings, info={"alphas": np.asarray(alphas, dtype=float)})


def _skipped(alpha, n, k, exc, seconds):
    """The solution slot of an alpha the direct solver cannot solve: NaN, not converged."""
    return PathSolution(C=float(alpha), intercept=np.zeros(k), n_iter=0, converged=False,
                        gap=np.nan, dual_coef=np.full((n, k), np.nan),
                        timings={"refactor": seconds, "solve": 0.0, "cg": 0.0,
                                 "residual": 0.0, "loo": 0.0},
                        info={"beta": np.nan, "skipped": str(exc),
                              "loo_residuals": np.full((n, k), np.nan)})


# more than 10 parameters: KernelRidge's and RidgeCV's (solver, tol, max_iter, leave-one-out,
# weights) beside the path's problem, targets and grid, and RidgeOptions' fields by name
def ridge_path(problem, Y, alphas, *, solver="direct", tol=1e-10, max_iter=1000,
               leave_one_out=False, indefinite="raise", warn=True, log=None, weights=None,
               dense_max_n=RidgeOptions.dense_max_n, memory_budget=None, residual_warning=0.05,
               accept_residual=RidgeOptions.accept_residual):
    """Kernel ridge regression for every alpha of an ascending grid on one prepared problem.

    Parameters
    ----------
    problem : HSSProblem or NystromProblem
        From :func:`~hsskern.solvers.paths.hss_path.prepare_hss` or :func:`prepare_nystrom`; its
        factor is reused when its shift equals the first alpha.
    Y : ndarray of shape (n,) or (n, k)
        Targets (every column solved with the same factor).
    alphas : sequence of float
        Regularization values > 0, solved in increasing order (:func:`check_alphas`).
    solver : {"direct", "exact"}
        See the module docstring.
    tol : float, default 1e-10
        ``"exact"``: stop CG when ||(K + alpha I) c - y|| <= tol ||y|| (per column).
    max_iter : int, default 1000
        ``"exact"``: most CG iterations per alpha and column.
    leave_one_out : bool, default False
        Also compute the leave-one-out residuals of the factor's ridge problem (H + alpha I)
        into ``info["loo_residuals"]`` (n, k) (one inverse diagonal per alpha).
    indefinite : {"raise", "skip"}, default "raise"
        What the direct solver (and ``leave_one_out``) does at an alpha where H + alpha I is
        indefinite: raise ``NotPositiveDefiniteError``, or return that alpha's solution as
        NaN coefficients with ``converged`` False and the reason in ``info["skipped"]`` (a
        cross-validation then ranks it last and goes on with the other alphas).
    warn : bool, default True
        A ``ConvergenceWarning`` for the alphas where CG did not reach ``tol``.
    log : callable or None
        ``log(level, line)``: level 1, one line per alpha.
    weights : ndarray of shape (n,) or None
        Per-point weights of the squared loss (``KernelRidge``'s ``sample_weight``): either
        solver solves the weighted system exactly by the dense route
        (:mod:`~hsskern.solvers.engines.ridge_dense`; the HSS factor has one scalar shift).
    dense_max_n : int, default RidgeOptions.dense_max_n (4000)
        The largest n the dense route takes (within ``memory_budget``): for weights,
        ``"exact"`` at alpha = 0, and wherever its CG stops short of ``tol``. Above it such a fit
        raises a ``ValueError`` naming the residual and the conditioning.
    memory_budget : float or None
        Bytes the dense route may use (default 80% of the available memory).
    residual_warning : float, default 0.05
        ``"direct"``: a UserWarning naming the measured value when the relative residual of
        the exact system on a sample of rows (:func:`sampled_residual`, in
        ``info["sampled_residual"]``) exceeds it (with ``warn``).

    Returns
    -------
    tuple of PathSolution
        One per alpha, ascending, with ``C`` = alpha, ``dual_coef`` (n, k), ``intercept`` 0
        (as ``KernelRidge``), ``n_iter`` the CG iterations (0 for ``"direct"``), ``gap`` the
        relative residual on the exact system for ``"exact"`` (one extra kernel product; NaN
        for ``"direct"``, whose bound is ||K - H|| / alpha), ``info["beta"]`` the shift of
        the factor used (> alpha only where ``"exact"`` preconditioned above an indefinite
        approximation's floor), ``info["route"]`` "direct", "cg" or "dense".
    """
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
    if indefinite not in ("raise", "skip"):
        raise ValueError(f"indefinite must be 'raise' or 'skip', got {indefinite!r}")
    n = problem.n_samples
    Y = check_targets(Y, n)
    alphas = check_alphas(alphas, allow_zero=True)
    dense = _DenseRoute(problem.K, dense_max_n, memory_budget)
    if solver == "direct" and alphas[0] == 0:
        raise ValueError(DIRECT_REFUSES)
    state = {"factor": problem.factor, "floor": problem.beta_floor}
    solutions = []
    for alpha in alphas:
        sol = _one_alpha(problem, Y, float(alpha), state, dense, solver=solver, tol=tol,
                         max_iter=max_iter, leave_one_out=leave_one_out,
                         indefinite=indefinite, weights=weights,
                         accept_residual=accept_residual)
        solutions.append(sol)
        if log is not None:
            log(1, _log_line(sol, solver))
    if warn and solver == "direct":
        _warn_sampled(solutions, residual_warning)
    if warn and solver == "exact":
        bad = [s.C for s in solutions if not s.converged.all()]
        if bad:
            warnings.warn(f"conjugate gradients did not reach tol={tol:g} within "
                          f"max_iter={max_iter} iterations for alpha = "
                          + ", ".join(f"{a:.3g}" for a in bad[:5])
                          + ("..." if len(bad) > 5 else "")
                          + "; the relative residual reached is at most 1e-6 (larger "
                          "ones are refused). Raise max_iter, or tighten the compression "
                          "(a better preconditioner)", ConvergenceWarning, stacklevel=3)
    return tuple(solutions)


def _warn_sampled(solutions, limit):
    """Say so where the direct solve's sampled residual shows the compression's error."""
    bad = [(s.C, s.info["sampled_residual"], s.info["sampled_rows"]) for s in solutions
           if s.info.get("sampled_residual", 0.0) > limit]
    if bad:
        alpha, r, rows = max(bad, key=lambda b: b[1])
        warnings.warn(f"the direct (HSS) solve's relative residual on the exact system, "
                      f"measured on {rows} rows, is {r:.3g} at alpha={alpha:g} (above "
                      f"options.residual_warning={limit:g}): predictions at the training "
                      f"points may be off KernelRidge's by about that fraction (the HSS "
                      f"compression's error over alpha: duplicated rows, small alpha or few "
                      f"dimensions). Use solver='exact' for the exact solution, or tighten "
                      f"rel_tol / abs_tol", UserWarning, stacklevel=3)


def _log_line(sol, solver):
    if "skipped" in sol.info:
        return f"alpha={sol.C:g}: skipped ({sol.info['skipped'][:80]})"
    what = (f"{sol.info['route']}, {int(sol.n_iter.max())} CG iterations, relative residual "
            f"{np.max(sol.gap):.3g}, " if solver == "exact" else "direct solve, ")
    return f"alpha={sol.C:g}: {what}{sum(sol.timings.values()):.3g} s"


# more than 10 parameters: ridge_path's own arguments for one alpha of its loop (one caller)
def _one_alpha(problem, Y, alpha, state, dense, *, solver, tol, max_iter, leave_one_out,
               indefinite, weights, accept_residual):
    """One alpha's PathSolution: the direct solve, CG from it, or the dense route."""
    n, k = Y.shape
    t0 = time.perf_counter()
    if weights is not None or alpha == 0:
        return _dense_solution(alpha, Y, dense, weights, t0, why=(
            "sample_weight" if weights is not None else "alpha=0"))
    try:
        factor, state["floor"], t_factor = _factor_for(problem, alpha, state["factor"],
                                                       state["floor"], solver)
        state["factor"] = factor
        if leave_one_out and factor.beta != alpha:
            raise _indefinite(alpha, factor.beta)
    except NotPositiveDefiniteError as exc:
        if indefinite == "raise":
            raise
        state["floor"] = max(state["floor"], exc.suggested_beta or 0.0)
        return _skipped(alpha, n, k, exc, time.perf_counter() - t0)
    t0 = time.perf_counter()
    coef = factor.solve(Y)
    timings = {"refactor": t_factor, "solve": time.perf_counter() - t0, "cg": 0.0,
               "residual": 0.0, "loo": 0.0}
    info = {"beta": factor.beta, "route": "direct"}
    if leave_one_out:
        t0 = time.perf_counter()
        info["loo_residuals"] = loo_residuals(factor, coef)
        timings["loo"] = time.perf_counter() - t0
    n_iter = np.zeros(k, dtype=np.int64)
    converged = np.ones(k, dtype=bool)
    gap = np.full(k, np.nan)
    if solver == "direct" and not leave_one_out:
        t0 = time.perf_counter()
        info["sampled_residual"], info["sampled_rows"] = sampled_residual(problem.K, alpha,
                                                                           coef, Y)
        timings["residual"] = time.perf_counter() - t0
    if solver == "exact":
        coef, n_iter, converged, gap = _exact_cg(problem.K, alpha, factor, Y, coef, tol,
                                                 max_iter, timings)
        info["route"] = "cg"
        if not converged.all() and dense.open(n):
            return _dense_solution(alpha, Y, dense, None, time.perf_counter(),
                                   why="CG stopped short", spent=timings)
        if not converged.all() and np.max(gap) > max(tol, accept_residual):
            exc = ValueError(_unconverged(alpha, gap, max_iter, n, dense, problem.K))
            if indefinite == "raise":
                raise exc
            return _skipped(alpha, n, k, exc, sum(timings.values()))
    return PathSolution(C=alpha, intercept=np.zeros(k), n_iter=n_iter, converged=converged,
                        gap=gap, dual_coef=coef, timings=timings, info=info)


def sampled_residual(K, alpha, coef, Y, rows=256):
    """The relative residual ||(K + alpha I) c - y|| / ||y|| of the exact system on a fixed
    random sample of ``rows`` rows (all of them for small n), the largest over the columns,
    and the rows it read: O(rows n d), and an unbiased estimate of the full one. It bounds the error of the
    in-sample predictions: K c - K c* = K (K + alpha I)^{-1} r, whose norm is at most ||r||."""
    n = Y.shape[0]
    pick = np.sort(np.random.default_rng(0).choice(n, min(n, rows), replace=False))
    R = K.cross(K.points[pick]) @ coef + alpha * coef[pick] - Y[pick]
    ynorm = np.linalg.norm(Y[pick], axis=0)
    return (float(np.max(np.linalg.norm(R, axis=0) / np.where(ynorm > 0, ynorm, 1.0))),
            len(pick))


def _exact_cg(K, alpha, factor, Y, coef, tol, max_iter, timings):
    """CG from the direct solution; the relative residual measured on the exact system."""
    t0 = time.perf_counter()
    coef, n_iter, converged = _cg_columns(K, alpha, factor.as_linear_operator(), Y, coef,
                                          tol, max_iter)
    timings["cg"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ynorm = np.linalg.norm(Y, axis=0)
    resid = np.linalg.norm(K @ coef + alpha * coef - Y, axis=0)
    gap = np.divide(resid, ynorm, out=np.zeros(Y.shape[1]), where=ynorm > 0)
    timings["residual"] = time.perf_counter() - t0
    return coef, n_iter, converged, gap


def _dense_solution(alpha, Y, dense, weights, t0, why, spent=None):
    """The dense route's PathSolution (a clear error when it is not open at this n)."""
    n, k = Y.shape
    if not dense.open(n):
        raise ValueError(f"{why} is solved by the exact solver's dense route only (a "
                         f"Cholesky factor of K + alpha I), open up to n = "
                         f"{dense.max_n} points within the memory budget "
                         f"({format_bytes(dense_memory(n))} needed at n = {n}): raise "
                         "options.dense_max_n or memory_budget, or fit on fewer points")
    coef, gap = dense_ridge(dense.matrix(), Y, alpha, weights)
    seconds = time.perf_counter() - t0
    return PathSolution(C=alpha, intercept=np.zeros(k), n_iter=np.ones(k, dtype=np.int64),
                        converged=np.ones(k, dtype=bool), gap=gap, dual_coef=coef,
                        timings={"refactor": 0.0, "solve": 0.0, "cg": 0.0, "residual": 0.0,
                                 "loo": 0.0, **(spent or {}), "dense": seconds},
                        info={"beta": alpha, "route": "dense", "why_dense": why})


def _unconverged(alpha, gap, max_iter, n, dense, K):
    """Why the exact solver refuses: CG's residual, the conditioning, the ways out."""
    diag = float(np.max(K.diag())) if hasattr(K, "diag") else float("nan")
    return (f"the exact solver did not converge at alpha={alpha:g}: conjugate gradients "
            f"stopped at max_iter={max_iter} with relative residual {np.max(gap):.3g} of "
            f"(K + alpha I) c = y. K + alpha I is ill-conditioned there (||K|| >= "
            f"{diag:.3g}, so its condition number is at least {diag / alpha:.3g} "
            f"where K is singular), and the dense route (a Cholesky factor) is open only up "
            f"to n = {dense.max_n} points within the memory budget (n = {n} here). Raise "
            "alpha, tighten the compression (a better preconditioner), use "
            "options.approximation='nystrom', raise max_iter, or raise "
            "options.dense_max_n / memory_budget")


class _DenseRoute:
    """The dense route's gate and its kernel matrix, computed once per path when first
    needed."""

    def __init__(self, K, max_n, memory_budget):
        self.K, self.max_n, self.memory_budget = K, int(max_n), memory_budget
        self._Kd = None

    def open(self, n):
        return dense_fits(n, self.max_n, self.memory_budget)

    def matrix(self):
        if self._Kd is None:
            self._Kd = self.K.to_dense()
        return self._Kd


@dataclass(frozen=True)
class RidgeBackend:
    """The path protocol for kernel ridge regression on the HSS (or dense, or Nystrom) factor.

    ``prepare`` is :func:`~hsskern.solvers.paths.hss_path.prepare_hss` with the first factor at
    shift ``beta`` (give the path's smallest alpha, so that factor is used, not redone), or
    :func:`prepare_nystrom` (rank ``n_components``) for ``approximation="nystrom"``;
    ``path`` is :func:`ridge_path`; ``model`` a :class:`~hsskern.solvers.paths.path.KernelExpansion`.
    """

    kernel: object
    approximation: str = "hss"
    hss_options: HSSOptions = field(default_factory=HSSOptions)
    n_components: int = 2000
    solver: str = "direct"
    tol: float = 1e-10
    max_iter: int = 1000
    beta: float = 1.0
    leave_one_out: bool = False
    indefinite: str = "raise"
    memory_budget: float = None
    log: object = None
    dense_max_n: int = RidgeOptions.dense_max_n
    residual_warning: float = 0.05
    accept_residual: float = RidgeOptions.accept_residual

    def memory_estimate(self, n, d, n_rhs=1):
        """The least bytes a fit on n points of d features with ``n_rhs`` targets takes:
        the points, the approximation at its smallest (HSS ranks of 1,
        :func:`hsskern.hss.estimate_memory`; the dense K and its factor; the n x
        ``n_components`` Nystrom factor) and the solver's vectors. Checked before any work."""
        points = 8 * n * d
        vectors = 8 * n * n_rhs * (_CG_VECTORS if self.solver == "exact" else 2)
        if self.approximation == "exact":
            return points + 16 * n * n + vectors
        if self.approximation == "nystrom":
            return points + 8 * n * min(int(self.n_components), n) + vectors
        hss = HSSBackend.of_compression(self.kernel, self.hss_options, adaptive_beta=False,
                                        solve_exact=False)
        return hss.memory_estimate(n, d, n_rhs, max_rank=1)["peak"] + vectors

    def check_memory(self, n, d, n_rhs=1):
        """MemoryBudgetError, with the estimate, when :meth:`memory_estimate` exceeds
        ``memory_budget`` (default 80% of the available memory)."""
        o = self.hss_options
        what = {"exact": "the dense kernel and its Cholesky factor",
                "nystrom": f"a rank-{self.n_components} Nystrom factor"}.get(
            self.approximation, f"an HSS compression (leaf_size={o.leaf_size}) at the "
                                "smallest ranks")
        hint = {"exact": 'use approximation="hss" for large n',
                "nystrom": "lower n_components"}.get(self.approximation,
                                                     "lower leaf_size or n_neighbors")
        check_memory(self.memory_estimate(n, d, n_rhs),
                     f"kernel ridge on {n} points x {d} features with {what}",
                     self.memory_budget, hint=hint + ", fit on fewer points, or raise "
                                                     "memory_budget")

    def prepare(self, X, Y=None):
        """The problem of the points X (targets are not needed: one factor serves all;
        their count sizes the memory estimate, checked first)."""
        self.check_memory(*X.shape, 1 if Y is None else np.shape(Y)[-1])
        if self.approximation == "nystrom":
            return prepare_nystrom(X, self.kernel, rank=self.n_components, beta=self.beta,
                                   random_state=self.hss_options.random_state,
                                   memory_budget=self.memory_budget, log=self.log)
        return prepare_hss(X, self.kernel, approximation=self.approximation,
                           hss_options=self.hss_options, beta=self.beta,
                           memory_budget=self.memory_budget, log=self.log)

    def path(self, prepared, Y, alphas, weights=None):
        return ridge_path(prepared, Y, alphas, solver=self.solver, tol=self.tol,
                          max_iter=self.max_iter, leave_one_out=self.leave_one_out,
                          indefinite=self.indefinite, log=self.log, weights=weights,
                          dense_max_n=self.dense_max_n, memory_budget=self.memory_budget,
                          residual_warning=self.residual_warning,
                          accept_residual=self.accept_residual)

    def model(self, prepared, solutions):
        return KernelExpansion(prepared.K.points, self.kernel, solutions)
