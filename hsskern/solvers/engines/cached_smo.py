"""The single-fit engine: LIBSVM's SMO with kernel rows on demand, a row cache and shrinking.

The block decomposition (:func:`~hsskern.solvers.engines.exact.solve_block`) keeps the decision
values of all n points current by n x |changed| products and solves working sets of
thousands of points; it is built for large n and a C path. At small and mid n LIBSVM's way
is faster: two variables a step, the two kernel rows from a cache, the rows over the active
variables only (shrinking). :func:`solve_dual` is that solver for any dual of LIBSVM's form
(:mod:`hsskern.solvers.engines._cached_smo`), :func:`solve_cached` its classifier case with
:func:`~hsskern.solvers.engines.exact.solve_block`'s signature and result, so a C path runs its
continuation on either.

Warm starts: a feasible alpha's gradient G = Q alpha + p and G_bar (the bounded variables'
share of it, which shrinking rebuilds the gradient from) take one blocked product
``K(X, X[nz]) [c, c_bar]`` over the points with a nonzero coefficient, never row by row.
"""
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ...kernels import gaussian_expansion, kernel_operator, single_far
from ...options import SMOOptions
from ...utils._cpu import load
from ...utils._threads import one_blas_thread
from ...utils.validation import check_weights
from .exact import ExactResult, feasible_start

# the widest build of the exp-bound module this CPU runs (setup.py, utils/_cpu.py)
_cached_smo = load("hsskern.solvers.engines._cached_smo")
Engine, max_threads = _cached_smo.Engine, _cached_smo.max_threads

#: the kernels whose rows the engine computes (a callable or precomputed kernel's come from
#: its own operator: the block decomposition)
KERNELS = ("gaussian", "laplacian", "polynomial", "compact_gaussian", "sigmoid")

__all__ = ["KERNELS", "SMOOptions", "SMOResult", "solve_dual", "solve_cached",
           "solve_classifier", "engine_cache", "expands_distances", "probe_sv_share",
           "bounded_options", "engine_memory", "single_cross_terms"]


@dataclass
class SMOResult:
    """What :func:`solve_dual` returns (arrays per variable, in the caller's order).

    ``rho`` is LIBSVM's (the decision function is sum_t y_t alpha_t k(x_m(t), x) - rho;
    with ``nu``, Solver_NU's rho and r: the function is divided by r);
    ``gap`` is m(a) - M(a) over all variables at return; ``stats``: steps, rows computed,
    kernel entries computed, row requests (cache hits are requests minus rows computed).
    """

    alpha: np.ndarray
    G: np.ndarray
    rho: float
    n_iter: int
    gap: float
    converged: bool
    time: float = 0.0
    stats: dict = field(default_factory=dict)
    r: float = None


def expands_distances(kernel, d, options):
    """Whether the engine's rows on d features expand the distances (a Gaussian from
    ``expand_min_features``) rather than sum them directly."""
    return getattr(kernel, "name", None) == "gaussian" and d >= options.expand_min_features


def _expansion(kernel, pts, options):
    """The kernel operator's expansion of the Gaussian's distances on ``pts``
    (:func:`~hsskern.kernels.operator.gaussian_expansion`: centered points, squared norms,
    far flags), from ``expand_min_features`` features; None: direct sums."""
    if not expands_distances(kernel, pts.shape[1], options):
        return None
    return gaussian_expansion(kernel, pts)


def single_cross_terms(kernel, xn, far, d, options=None):
    """The far flags of the float32 inner products on centered points of squared norms
    ``xn`` (``far``: the double expansion's flags, kept), or None where more than
    ``options.float32_max_far_share`` (:class:`SMOOptions`, None: the defaults) of the
    points would be far for the float32 cross term to pay.

    The bound. With a_32 = fl32(a), b_32 = fl32(b) and their inner product summed in float32
    (u = 2^-24, d features), |fl(a_32.b_32) - a.b| <= (d + 2) u sum_k |a_k b_k|
    <= (d + 2) u (|a|^2 + |b|^2) / 2 to first order (the inputs' rounding 2u, the sum's
    d u: Higham, Accuracy and Stability, (3.5)). The norms and the sum |a|^2 + |b|^2 - 2 a.b
    are double, so the squared distance's error is (d + 2) u (|a|^2 + |b|^2) and the
    Gaussian's relative entry error gamma (d + 2) u (|a|^2 + |b|^2). LIBSVM's Qfloat loses
    u relative (one rounding of the entry); the bound is 2 (d + 2) gamma |a|^2 times that,
    which is more than 1 for every dense set of a dozen features or more at gamma="scale"
    (gamma |a|^2 is about 1 on average for centered points): no worst-case bound puts the
    float32 cross term within Qfloat's loss. It is accepted at ``options.float32_max_rel_error``
    relative (the SMO's stopping rule tolerates 1e-3 in the gradient, and a gradient entry
    sums alpha_j |k_ij| times the entry's error). Measured on fashion_mnist (standardized,
    gamma="scale"): largest entry error 8.3e-6 where the bound says 4e-3, mean 2.1e-8
    against Qfloat's 4.6e-9 (docs/design_notes.md). A point whose norm alone passes the
    bound is far: its distances to other far points are summed directly in double (as the
    kernel operator's rule, :func:`~hsskern.kernels.operator._gemm_route`, does for the
    double expansion), and its distances to near points keep the expansion, where the
    Gaussian is small. The caller keeps the certificate and the decision values in double.
    """
    options = SMOOptions() if options is None else options
    if not xn.size:
        return None
    far32 = single_far(kernel.gamma, xn, d, options.float32_max_rel_error, far)
    if far32.mean() > options.float32_max_far_share:
        return None
    return far32.view(np.uint8) if far32.any() else np.empty(0, dtype=np.uint8)


def _start_gradient(X, kernel, y, p, upper, alpha, index, G):
    """(G, G_bar) of a feasible alpha: one blocked product for both (G given: G_bar's)."""
    l = y.size
    at_upper = alpha >= upper
    need_g = G is None and np.any(alpha != 0)
    if not need_g and not at_upper.any():
        return (p.copy() if G is None else G), np.zeros(l)
    cols = []
    if need_g:
        cols.append(y * alpha)
    cols.append(np.where(at_upper, y * upper, 0.0))
    V = np.column_stack(cols)
    if index is not None:  # the variables' coefficients summed on their points
        V = np.column_stack([np.bincount(index, v, minlength=X.shape[0]) for v in V.T])
    # only the points with a nonzero coefficient contribute: K(X, X[nz]) V[nz], not a whole
    # n x n product (a warm start along a C path has a few support vectors of n points)
    nz = np.flatnonzero(np.any(V != 0, axis=1))
    KV = (np.asarray(kernel_operator(X[nz], kernel).cross(X) @ V[nz]).reshape(X.shape[0], -1)
          if nz.size else np.zeros((X.shape[0], V.shape[1])))
    if index is not None:
        KV = KV[index]
    G_bar = y * KV[:, -1]
    if need_g:
        G = y * KV[:, 0] + p
    elif G is None:
        G = p.copy()
    return G, G_bar


# more than 10 parameters: LIBSVM's Solve(l, Q, p, y, C, ...) itself: the problem as data (X, kernel,
# y, upper, p, index, nu), its start (alpha, G) and the engine's options and state
def solve_dual(X, kernel, y, upper, p=None, alpha=None, *, index=None, G=None, nu=False,
               options=SMOOptions(), session=None, kernel_matrix=None):
    """min 1/2 a^T Q a + p^T a, 0 <= a <= upper, y^T a fixed by the start (LIBSVM's Solver).

    Parameters
    ----------
    X : ndarray of shape (n_points, d)
        Dense points (trusted: finite, validated by the caller).
    kernel : Kernel
    y : ndarray of shape (l,)
        Signs in {-1, +1} of the variables.
    upper : float or ndarray of shape (l,)
        The bounds C_t >= 0.
    p : ndarray of shape (l,) or None
        The linear term; None: -e (the classifier).
    alpha : ndarray of shape (l,) or None
        A feasible start (None: 0); its y^T alpha is kept.
    index : ndarray of int of shape (l,) or None
        The point of each variable (None: variable t on point t).
    G : ndarray of shape (l,) or None
        Q alpha + p when the caller knows it (else one blocked product computes it).
    nu : bool, default False
        LIBSVM's Solver_NU: pairs within one label, so e^T a stays fixed too (the start sets
        it); the result's ``rho`` and ``r`` are its two offsets.
    options : SMOOptions
    session : dict or None
        Kept by the caller across the solves of a path whose problems differ only in
        ``upper`` and the start (the same X, kernel, y, p, index, nu and options): the first
        call leaves its engine there, the next reuse it and its cached kernel rows.
    kernel_matrix : ndarray of shape (l, l) or None
        K of the variables' points, computed by the caller (``index`` None): every row is
        cached from it before the run (``Engine.preload``) and none is computed. C-ordered,
        float32 with single rows (:attr:`SMOOptions.single_rows`), float64 without; signed
        in place (it becomes Q). The cache must hold its l^2 entries.

    Returns
    -------
    SMOResult
    """
    t0 = time.perf_counter()
    if session is not None and "engine" in session:
        return _resolve(session, upper, alpha, G, options, t0)
    if kernel.name not in KERNELS:
        raise ValueError(f"the cached engine computes the rows of the {KERNELS} kernels, not "
                         f"{kernel.name!r}: use the block decomposition (engine=\"block\")")
    # the points and width the kernel operator evaluates (rescaled by a power of two where
    # the data's scale would take gamma or the distances out of range): the same entries
    X, kernel = kernel_operator(np.ascontiguousarray(X, dtype=np.float64),
                                kernel).evaluation_inputs()
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.array(y, dtype=np.float64)
    l = y.size
    p = -np.ones(l) if p is None else np.array(p, dtype=np.float64)
    upper = np.array(np.broadcast_to(upper, (l,)), dtype=np.float64)
    alpha = np.zeros(l) if alpha is None else np.array(alpha, dtype=np.float64)
    if index is not None:
        index = np.asarray(index, dtype=np.intp)
    G, G_bar = _start_gradient(X, kernel, y, p, upper, alpha, index, G)
    G = np.array(G, dtype=np.float64)
    pts = X if index is None else X[index]
    xn = far = xt32 = None
    expansion = _expansion(kernel, pts, options)
    if expansion is not None:  # distances as |a|^2 + |b|^2 - 2 a.b, centered
        pts, xn, far = expansion
        far32 = (single_cross_terms(kernel, xn, far, pts.shape[1], options)
                 if options.single_cross else None)
        if far32 is not None:  # the inner products in float32, far pairs summed in double
            far = far32
        far = np.array(far)  # the engine swaps it with the variables
    xt = np.array(pts.T, order="C")  # a copy always (swapped in place; pts.T of d = 1 is
    # already contiguous, and a view would permute the caller's points)
    if expansion is not None and far32 is not None:
        xt32 = xt.astype(np.float32)
    QD = np.ascontiguousarray(kernel.diag(pts), dtype=np.float64)
    threads = options.threads or min(2, max_threads())
    max_iter = options.max_iter
    if max_iter is None:
        max_iter = max(10 ** 7, 100 * l)
    upper_orig = upper.copy()  # the engine permutes its arrays in place
    problem = dict(X=X, kernel=kernel, y=y.copy(), p=p.copy(), index=index, nu=nu,
                   max_iter=max_iter)
    eng = Engine(int(kernel.code), np.array(kernel.params, dtype=np.float64), xt, y, p, upper,
                 alpha, G, G_bar, QD, options.cache_bytes / options.row_bytes,
                 float(options.tol), bool(options.shrinking), int(options.shrink_interval),
                 int(max_iter), int(threads), float(options.parallel_work), xn, bool(nu), far,
                 options.single_rows, xt32)
    if kernel_matrix is not None:  # Q = y y' o K, in place: the caller's copy
        kernel_matrix *= y[:, None]
        kernel_matrix *= y[None, :]
        eng.preload(kernel_matrix)
    if session is not None:
        session.update(engine=eng, **problem)
    return _run(eng, alpha, G, nu, options, t0, l, problem=problem, upper=upper_orig)


def _certify(eng, alpha, problem, upper, options):
    """The float32 SMO's result resumed from its gradient recomputed in double, until the
    gap in double is within tol (or a few resumptions); (steps, gap, alpha, G) with the
    engine's new arrays, in its positions' order."""
    steps, gap = 0, np.inf
    for _ in range(3):
        order = eng.order()
        a = np.empty_like(alpha)
        a[order] = alpha
        G, G_bar = _start_gradient(problem["X"], problem["kernel"], problem["y"],
                                   problem["p"], upper, a, problem["index"], None)
        alpha = np.ascontiguousarray(alpha)
        G = np.ascontiguousarray(G[order])
        eng.reset(np.ascontiguousarray(upper[order]), alpha, G,
                  np.ascontiguousarray(G_bar[order]), float(options.tol),
                  int(problem["max_iter"]))
        with one_blas_thread():
            it, gap = eng.run()
        steps += it
        if it == 0:  # the double gradient's gap is within tol: certified as it stands
            break
    return steps, gap, alpha, G


def _run(eng, alpha, G, nu, options, t0, l, counted=(0, 0, 0), problem=None, upper=None):
    """Run the engine on its current problem; ``alpha`` and ``G`` are its arrays, in its
    positions' order; ``counted``: its counters before this solve; ``problem`` (the
    original-order inputs) and ``upper`` (the bounds, original order) for the double
    certificate."""
    with one_blas_thread():  # sgemv inside the engine's own threads
        n_iter, gap = eng.run()
    if (options.double_certificate and (options.single_rows or options.single_cross)
            and problem is not None):
        more, gap, alpha, G = _certify(eng, alpha, problem, upper, options)
        n_iter += more
    r = None
    if nu:
        rho, r = eng.rho_nu()
    else:
        rho = eng.rho()
    order = eng.order()
    a_out, g_out = np.empty(l), np.empty(l)
    a_out[order], g_out[order] = alpha, G
    stats = {"iterations": int(n_iter), "rows_computed": int(eng.rows_computed) - counted[0],
             "entries_computed": int(eng.entries_computed) - counted[1],
             "row_requests": int(eng.row_requests) - counted[2]}
    return SMOResult(alpha=a_out, G=g_out, rho=float(rho), n_iter=int(n_iter), gap=float(gap),
                     converged=bool(gap < options.tol), time=time.perf_counter() - t0,
                     stats=stats, r=None if r is None else float(r))


def _resolve(session, upper, alpha, G, options, t0):
    """The next problem of a session on its engine: the new bounds and start, in the
    engine's positions' order, and the cached rows kept."""
    eng, y, p, index = session["engine"], session["y"], session["p"], session["index"]
    l = y.size
    upper = np.array(np.broadcast_to(upper, (l,)), dtype=np.float64)
    alpha = np.zeros(l) if alpha is None else np.array(alpha, dtype=np.float64)
    G, G_bar = _start_gradient(session["X"], session["kernel"], y, p, upper, alpha, index, G)
    order = eng.order()
    alpha, G = np.ascontiguousarray(alpha[order]), np.array(G, dtype=np.float64)[order]
    counted = (eng.rows_computed, eng.entries_computed, eng.row_requests)
    eng.reset(np.ascontiguousarray(upper[order]), alpha, G, np.ascontiguousarray(G_bar[order]),
              float(options.tol), int(session["max_iter"]))
    return _run(eng, alpha, G, session["nu"], options, t0, l, counted, problem=session,
                upper=upper)


def solve_cached(K, y, C, alpha=None, *, weights=None, f=None, tol=1e-3,
                  options=SMOOptions(), session=None):
    """The classifier's dual by :func:`solve_dual`, as a
    :class:`~hsskern.solvers.engines.exact.ExactResult` (what :func:`solve_block` returns), so a C
    path's continuation (:func:`~hsskern.solvers.engines.exact.continuation_start`) runs on it.

    ``K`` is the kernel operator on dense points; ``alpha`` a start made feasible by
    :func:`~hsskern.solvers.engines.exact.feasible_start`, ``f`` its K (y o alpha) when known;
    ``tol`` replaces the options' tolerance; ``session``: see :func:`solve_dual` (the same
    K, y and weights across its calls).
    """
    return solve_classifier(K.points, K.kernel, y, C, alpha, weights=weights, f=f, tol=tol,
                            options=options, session=session)


# more than 10 parameters: LIBSVM's Solve(l, Q, p, y, C, ...) spelled for one classifier: the problem's
# data (X, kernel, y, C, weights), its start (alpha, f), the stop (tol) and the engine's state
# (options, session, a preloaded Q), each one fact; the estimators reach it through
# interface.CachedEngine, which holds the options
def solve_classifier(X, kernel, y, C, alpha=None, *, weights=None, f=None, tol=1e-3,
                     options=SMOOptions(), session=None, kernel_matrix=None):
    """:func:`solve_cached` on the dense points ``X`` and their ``kernel`` (no operator
    built: one-vs-one pairs solved together, :mod:`hsskern.solvers.paths.pairwise`);
    ``kernel_matrix``: :func:`solve_dual`'s."""
    t0 = time.perf_counter()
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    weights = check_weights(weights, n)
    ub = np.full(n, float(C)) if weights is None else C * weights
    alpha = None if alpha is None else feasible_start(alpha, y, ub)
    G = None if f is None else y * np.asarray(f, dtype=np.float64) - 1.0
    opts = options if options.tol == tol else replace(options, tol=float(tol))
    res = solve_dual(X, kernel, y, ub, None, alpha, G=G, options=opts, session=session,
                     kernel_matrix=kernel_matrix)
    bias = -res.rho
    decision = y * (res.G + 1.0) + bias  # y_i (Q a)_i = (K (y o a))_i
    return ExactResult(alpha=res.alpha, dual_coef=y * res.alpha, bias=bias,
                        decision=decision, converged=res.converged, gap=res.gap,
                        rounds=res.n_iter, ws_sizes=[2], smo_iters=[res.n_iter],
                        time=time.perf_counter() - t0,
                        timings={"smo": res.time},
                        kernel_entries={"rows": res.stats["entries_computed"]})



def engine_memory(n, d, l=None, single_cross=True):
    """Bytes :func:`solve_dual` takes on n points of d features for l variables (default n),
    besides its row cache: the variables' copy of the coordinates, its float32 copy with
    ``single_cross`` (``SMOOptions.single_cross``; counted by default: an upper bound) and a
    dozen vectors."""
    l = n if l is None else l
    return (12 if single_cross else 8) * l * d + 8 * 12 * l


def bounded_options(options, n, d, budget):
    """``options`` with its cache within what ``budget`` (bytes, None: no bound) leaves
    beside the points (8 n d bytes) and :func:`engine_memory`; never below two rows."""
    if budget is None:
        return options
    room = budget - 8 * n * d - engine_memory(n, d, single_cross=options.single_cross)
    cache = max(16.0 * n, min(float(options.cache_bytes), room))
    return options if cache == options.cache_bytes else replace(options, cache_bytes=cache)


def engine_cache(n, d, options, budget):
    """The row cache the engine gets on n points of d features within ``budget`` (bytes, None:
    no bound; :func:`bounded_options`), or None where the budget does not hold its copy of
    the points and two rows."""
    if budget is not None and budget < (8 * n * d + 16 * n
                                        + engine_memory(n, d, single_cross=options.single_cross)):
        return None
    return bounded_options(options, n, d, budget).cache_bytes


def probe_sv_share(X, kernel, y, options, C=1.0, tol=1e-3, points=2000):
    """The support vectors' share of the exact fit at C on a subsample of ``points`` points
    drawn with a fixed seed (the same share each call), at
    least one point's; None when X has no more points than that or the subsample one class.
    A subsample's share is at least the whole set's, as a rule: fewer points, more of them
    on the margin (:func:`~hsskern.solvers.paths.plan.expected_share` corrects it for n)."""
    n, m = X.shape[0], int(points)
    if m < 2 or n <= m:
        return None
    idx = np.sort(np.random.default_rng(0).choice(n, m, replace=False))
    ys = np.asarray(y, dtype=np.float64)[idx]
    if np.unique(ys).size < 2:
        return None
    res = solve_dual(X[idx], kernel, ys, float(C), options=replace(options, tol=float(tol)))
    return max(np.count_nonzero(res.alpha), 1) / m
