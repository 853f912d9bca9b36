"""The exact SVM dual by decomposition as one call: :func:`solve_block`.

The algorithm, its state and its steps live in :mod:`hsskern.solvers.engines.decomposition`
(:class:`~hsskern.solvers.engines.decomposition.Decomposition`, its tunables in
:class:`~hsskern.solvers.engines.decomposition.DecompositionOptions`); this module keeps the one-call
form of the C-SVC dual and the names the paths import from here; the paths solve through
the engine interface (:mod:`hsskern.solvers.engines.interface`).
"""
from .decomposition import (Decomposition, DecompositionOptions, LocalProducts, ExactResult,
                            RoundState, continuation_start, feasible_start)

__all__ = ["ExactResult", "RoundState", "LocalProducts", "solve_block", "feasible_start",
           "continuation_start", "Decomposition", "DecompositionOptions"]


def solve_block(K, y, C, alpha=None, *, f=None, weights=None, tol=1e-3, options=None,
                 log=None, workspace=None):
    """The exact C-SVC dual by decomposition, from any start:
    ``Decomposition(K, y, C, ...).solve(alpha, f, ...)`` in one call. A dual of another form
    (``p``, ``index``: the SVR's), the Dask products, a time budget or a callback:
    :class:`~hsskern.solvers.engines.interface.BlockEngine` on a
    :class:`~hsskern.solvers.engines.interface.DualProblem`.

    Parameters
    ----------
    K : KernelOperator or SparseRowsKernelOperator
        The exact kernel on the training points (dense or sparse rows): its points, kernel
        and blocks are used.
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
    weights : ndarray of shape (n,) or None
        Per-point weights >= 0: point i's box is [0, C w_i] (LIBSVM's weighted C; a weight
        of 0 fixes alpha_i = 0 and the point never enters a working set). None: [0, C].
    tol : float, default 1e-3
        Stop when the KKT gap over all points is below it (LIBSVM's ``tol``/``eps``).
    options : DecompositionOptions or None
        The tunables: working sets (``max_ws``, ``max_chunk``, ``sub_tol``), rounds
        (``max_rounds``, ``max_smo_iter``), the Newton step on the free face (``newton``),
        the block's reuse (``block_reuse``), shrinking (``shrinking``); None: the defaults.
    log : callable or None
        Called with one line per round.
    workspace : dict or None
        Keeps the working-set block's buffer between calls (a C path): a fresh array of
        gigabytes pays a page fault per page on its first touch, every round that allocates
        it. A call never starts from an earlier call's block (the block's order steers SMO's
        tie-breaking, and each class of a one-vs-rest problem must get what its binary
        problem gets).

    Returns
    -------
    ExactResult
    """
    problem = Decomposition(K, y, C, weights=weights, workspace=workspace, options=options)
    return problem.solve(alpha, f, tol=tol, log=log)
