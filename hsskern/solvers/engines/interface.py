"""The exact engines behind one interface, in the spirit of LIBSVM's
``Solver::Solve(l, Q, p, y, C, ...)``: a problem as data and ``solve(problem, C, start)``.

:class:`DualProblem` is the dual

    min 1/2 a^T Q a + p^T a,  0 <= a_t <= C w_t,  y^T a fixed by the start,
    Q_st = y_s y_t k(x_index[s], x_index[t]),

which serves C-SVC (p = -e), epsilon-SVR (2n variables on n points, ``index``), and with
``nu=True`` (LIBSVM's Solver_NU: e^T a fixed per label too) nu-SVC, nu-SVR and the one-class
SVM. Two engines solve it:

- :class:`BlockEngine`, the block decomposition
  (:class:`~hsskern.solvers.engines.decomposition.Decomposition`): decision values of every point
  kept current by n x |changed| products, working sets of thousands solved on their dense
  kernel block. It keeps its block buffer across the solves of a path.
- :class:`CachedEngine`, LIBSVM's SMO with kernel rows on demand, a row cache and shrinking
  (:func:`~hsskern.solvers.engines.cached_smo.solve_dual`). It keeps its engine and cached rows
  across the solves of one problem (a path's C values).

A path's C loop then reads: the start is the last C's solution scaled
(:func:`~hsskern.solvers.engines.decomposition.continuation_start`) or the ADMM's point;
``engine.solve(problem, C, start)``.
"""
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ...options import DecompositionOptions, SMOOptions
from .cached_smo import solve_cached, solve_dual
from .decomposition import Decomposition

__all__ = ["DualProblem", "DualStart", "BlockEngine", "CachedEngine"]


@dataclass(frozen=True)
class DualProblem:
    """An SVM dual as data (see the module docstring).

    Attributes
    ----------
    K : KernelOperator or SparseRowsKernelOperator
        The exact kernel on the points.
    y : ndarray of shape (l,)
        The variables' signs in {-1, +1}.
    p : ndarray of shape (l,) or None
        The linear term; None: -e (C-SVC).
    index : ndarray of int of shape (l,) or None
        The point of each variable; None: variable t on point t.
    weights : ndarray of shape (l,) or None
        Per-variable box scales w_t >= 0 (the box is [0, C w_t]); None: [0, C].
    nu : bool, default False
        LIBSVM's Solver_NU (pairs within one sign, so e^T a per sign stays as the start set
        it); the cached engine only.
    """

    K: object
    y: np.ndarray
    p: np.ndarray = None
    index: np.ndarray = None
    weights: np.ndarray = None
    nu: bool = False


@dataclass(frozen=True)
class DualStart:
    """Where a solve starts: ``alpha`` per variable (None: 0; the block engine and the
    cached engine's C-SVC make it feasible) and, when known, ``f`` = K (y o alpha) on the
    points (its decision values without the bias) or, for the cached engine's general form,
    the gradient ``G`` = Q alpha + p per variable (None: computed, one n x n_SV product)."""

    alpha: np.ndarray = None
    f: np.ndarray = None
    G: np.ndarray = None


_THREAD = threading.local()


@contextmanager
def shared_blocks(workspace):
    """Within it, the :class:`BlockEngine` made on this thread without a workspace of its
    own keep their block buffer in ``workspace``: the problems a worker thread solves one
    after another (one-vs-one pairs) fill one buffer, not a fresh one each (a pair's first
    4,000-point block in a fresh buffer took 0.6-1.0 s where its second, as large, took
    0.2 s). No solve reads another's entries (:class:`Decomposition` keeps only the
    buffer)."""
    before = getattr(_THREAD, "workspace", None)
    _THREAD.workspace = workspace
    try:
        yield workspace
    finally:
        _THREAD.workspace = before


class BlockEngine:
    """The block decomposition as an exact engine.

    Parameters
    ----------
    options : DecompositionOptions or None
        Its tunables (working sets, Newton steps, shrinking).
    products : LocalProducts-like or None
        Computes the decision-value products (None: the kernel's own; the Dask engine
        passes one that runs them on workers).
    log : callable or None
        Called with one line per round.
    workspace : dict or None
        The working set's block buffer, kept across solves (a path; None: the one
        :func:`shared_blocks` gives this thread, else this engine's own): a fresh array of
        gigabytes pays a page fault per page on its first touch.
    """

    def __init__(self, options=None, *, products=None, log=None, workspace=None):
        self.options = DecompositionOptions() if options is None else options
        self.products, self.log = products, log
        if workspace is None:
            workspace = getattr(_THREAD, "workspace", None)
        self.workspace = {} if workspace is None else workspace

    def solve(self, problem, C, start=None, *, tol=1e-3, max_time=None, callback=None,
              options=None, log=None):
        """The dual at C to the KKT gap ``tol`` from ``start`` (a :class:`DualStart`);
        ``max_time`` and ``callback`` as :meth:`Decomposition.solve`; ``options`` and
        ``log`` this solve's (None: the engine's; a start near its answer takes smaller
        working sets, :data:`~hsskern.solvers.paths.warm.WARM_OPTIONS`). Returns a
        :class:`~hsskern.solvers.engines.decomposition.ExactResult`."""
        if problem.nu:
            raise ValueError("the block decomposition solves the C form; nu=True needs the "
                             "cached engine")
        start = DualStart() if start is None else start
        dec = Decomposition(problem.K, problem.y, C, weights=problem.weights, p=problem.p,
                            index=problem.index, products=self.products,
                            workspace=self.workspace,
                            options=self.options if options is None else options)
        return dec.solve(start.alpha, start.f, tol=tol, max_time=max_time, callback=callback,
                         log=self.log if log is None else log)


class CachedEngine:
    """The row-cached SMO as an exact engine (dense points, the kernels it computes rows
    of: :data:`~hsskern.solvers.engines.cached_smo.KERNELS`).

    Parameters
    ----------
    options : SMOOptions or None
        Its tunables; ``tol`` is each solve's.
    """

    def __init__(self, options=None):
        self.options = SMOOptions() if options is None else options
        self.session = {}  # its engine and cached rows, kept across the solves of a problem

    def solve(self, problem, C, start=None, *, tol=None):
        """The dual at C to the gap ``tol`` (None: the options') from ``start``.

        C-SVC (no ``p``, ``index`` or ``nu``) returns a
        :class:`~hsskern.solvers.engines.decomposition.ExactResult`, as the block engine does;
        any other dual the engine's :class:`~hsskern.solvers.engines.cached_smo.SMOResult` (with
        ``rho``, and ``r`` in nu mode), from ``start.alpha`` (feasible) and ``start.G``."""
        start = DualStart() if start is None else start
        options = self.options if tol is None else self.options.replace(tol=float(tol))
        if problem.p is None and problem.index is None and not problem.nu:
            return solve_cached(problem.K, problem.y, C, start.alpha,
                                 weights=problem.weights, f=start.f, tol=options.tol,
                                 options=options, session=self.session)
        upper = C if problem.weights is None else C * np.asarray(problem.weights)
        return solve_dual(problem.K.points, problem.K.kernel, problem.y, upper, problem.p,
                          start.alpha, index=problem.index, G=start.G, nu=problem.nu,
                          options=options, session=self.session)
