"""epsilon-SVR on the cached SMO engine: LIBSVM's ``solve_epsilon_svr``, weights included.

The 2 l variables of LIBSVM's form (a point's + and - copies, one index map onto the
points): signs (+1, -1), linear term (epsilon - y, epsilon + y), bounds C w_i on both copies,
the start alpha = 0 (y^T alpha = 0 kept). The model is alpha+ - alpha- with intercept
-rho. It takes any kernel the engine evaluates (the dot-product kernels too) and per-point
weights, which the HSS route's 2n-variable decomposition does not; a C path keeps its
kernel rows (one engine session) and starts each C from the last solution scaled.
"""
import time
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from ...utils._memory import check_memory, resolve_budget
from ..engines.cached_smo import SMOOptions, bounded_options, engine_memory, solve_dual
from ...utils.validation import check_weights
from .path import KernelExpansion, PathSolution, PreparedProblem, check_Cs

__all__ = ["CachedSVRBackend", "CachedSVRProblem"]


@dataclass(frozen=True, eq=False)
class CachedSVRProblem(PreparedProblem):
    """What :meth:`CachedSVRBackend.prepare` builds: the points (``K.points``), the engine's
    options bounded by the budget, read-only ``stats``/``timings``, and ``session``: the
    engine's kept rows along one path (filled by ``path``)."""

    K: object
    options: object
    stats: object = field(default_factory=dict)
    timings: object = field(default_factory=dict)
    session: object = field(default_factory=dict)


@dataclass(frozen=True)
class CachedSVRBackend:
    """The path protocol for epsilon-SVR on :func:`~hsskern.solvers.engines.cached_smo.solve_dual`.

    ``prepare`` checks the memory (the points, the engine's vectors, its row cache within
    ``memory_budget``), ``path`` solves every C of an ascending grid for the one target
    column of ``Y`` with per-point ``weights`` (the bound of point i is C w_i), ``model`` a
    :class:`~hsskern.solvers.paths.path.KernelExpansion`.
    """

    kernel: object
    epsilon: float = 0.1
    smo_options: SMOOptions = field(default_factory=SMOOptions)
    memory_budget: float = None
    log: object = None

    def prepare(self, X, Y=None):
        n, d = X.shape
        X = np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
        need = 8 * n * d + engine_memory(n, d, 2 * n) + 32 * n  # points, vectors, two rows
        check_memory(need, f"epsilon-SVR on {n} points x {d} features", self.memory_budget,
                     hint="raise memory_budget or subsample")
        options = bounded_options(self.smo_options, n, d, resolve_budget(self.memory_budget))
        return CachedSVRProblem(K=SimpleNamespace(points=X), options=options,
                                stats={"start": "smo", "n": n})

    def path(self, prepared, Y, Cs, weights=None):
        X = prepared.K.points
        n = X.shape[0]
        y = np.asarray(Y, dtype=np.float64).reshape(n)
        Cs = check_Cs(Cs)
        w = np.ones(n) if weights is None else check_weights(weights, n, "weights")
        sign = np.concatenate([np.ones(n), -np.ones(n)])
        p = np.concatenate([self.epsilon - y, self.epsilon + y])
        index = np.concatenate([np.arange(n), np.arange(n)])
        out, alpha, last = [], None, None
        for C in Cs:
            t0 = time.perf_counter()
            upper = C * np.concatenate([w, w])
            start = None if alpha is None else alpha * (C / last)  # feasible: sums stay 0
            res = solve_dual(X, self.kernel, sign, upper, p, start, index=index,
                             options=prepared.options, session=prepared.session)
            alpha, last = res.alpha, C
            coef = res.alpha[:n] - res.alpha[n:]
            if self.log is not None:
                self.log(1, f"C={C:g}: {res.n_iter} SMO steps of the cached SMO, gap "
                            f"{res.gap:.3g}, {np.count_nonzero(coef)} support vectors, "
                            f"{time.perf_counter() - t0:.3g} s")
            out.append(PathSolution(C=C, intercept=[-res.rho], n_iter=res.n_iter,
                                    converged=res.converged, gap=res.gap,
                                    dual_coef=coef[:, None],
                                    timings={"smo": time.perf_counter() - t0},
                                    info={"route": "cached SMO", "beta": np.nan,
                                          "exact": None}))
        short = [s for s in out if not s.converged[0]]
        if short:  # scikit-learn's words for LIBSVM's step cap
            warnings.warn(f"Solver terminated early (max_iter={prepared.options.max_iter}) "
                          f"for {len(short)} of {len(out)} C value(s). Consider "
                          "pre-processing your data with StandardScaler or MinMaxScaler.",
                          ConvergenceWarning, stacklevel=3)
        return tuple(out)

    def model(self, prepared, solutions):
        return KernelExpansion(prepared.K.points, self.kernel, solutions)
