"""The exact SVM dual by decomposition as one call: :func:`refine_exact`.

The algorithm, its state and its steps live in :mod:`hsskern.solvers.decomposition`
(:class:`~hsskern.solvers.decomposition.Decomposition`, its tunables in
:class:`~hsskern.solvers.decomposition.DecompositionOptions`); this module keeps the one-call
form every path uses (classifier, SVR, ExactSVC's stages, the Dask engine) and the names
those paths import from here.
"""
from dataclasses import replace

from .decomposition import (Decomposition, DecompositionOptions, LocalProducts, RefineResult,
                            RoundState, continuation_start, feasible_start)

__all__ = ["RefineResult", "RoundState", "LocalProducts", "refine_exact", "feasible_start",
           "continuation_start", "Decomposition", "DecompositionOptions"]

_DEFAULTS = DecompositionOptions()


def refine_exact(K, y, C, alpha=None, *, weights=None, f=None, tol=1e-3, max_ws=None,
                 max_chunk=16000, max_rounds=None, sub_tol=0.1, max_smo_iter=None, newton=True,
                 log=None, workspace=None, p=None, index=None, block_reuse=True,
                 products=None, max_time=None, callback=None, shrinking="auto",
                 options=None):
    """The exact SVM dual by decomposition, from any start:
    ``Decomposition(K, y, C, ...).solve(alpha, f, ...)`` in one call.

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
    weights : ndarray of shape (n,) or None
        Per-point weights >= 0: point i's box is [0, C w_i] (LIBSVM's weighted C; a weight
        of 0 fixes alpha_i = 0 and the point never enters a working set). None: [0, C].
    f : ndarray of shape (n,) or None
        The exact ``K (y o alpha)`` of a *feasible* ``alpha`` (a previous C's result scaled);
        computed (an n x n_SV product) when None.
    tol : float, default 1e-3
        Stop when the KKT gap over all points is below it (LIBSVM's ``tol``/``eps``).
    max_ws : int or None
        Working-set size while the free set is smaller than it. None: 4,000 below 10^5
        points when the rounds' products evaluate their kernel entries, else 8,000.
    max_chunk : int, default 16000
        Largest working set (K[W, W] takes 8 |W|^2 bytes: 2 GB at 16,000); it grows past
        ``max_ws`` only to keep the whole free set in. Lowered to what half the available
        memory holds.
    max_rounds : int or None, default None
        A cap on the rounds (None: none; see :class:`DecompositionOptions`).
    sub_tol : float, default 0.1
        Each working set is solved to a gap of ``max(tol, sub_tol * gap)``, ``gap`` the
        current one over all points (0: every working set to ``tol``).
    max_smo_iter : int or None
        Pair updates per round; None: ``max(10**7, 100 |W|)`` as LIBSVM.
    newton : bool, default True
        When SMO on a working set that is (nearly) all free has not finished in the time a
        Newton step on its free face (``_newton_free``: one Cholesky of ``K_FF``) is
        estimated to take, take that step and let SMO finish from there. At large C the free
        set is the whole working set and SMO crawls through its ill-conditioning, which one
        Cholesky of the free block jumps over.
    log : callable or None
        Called with one line per round.
    workspace : dict or None
        Keeps the working-set block's buffer between calls (a C path): a fresh array of
        gigabytes pays a page fault per page on its first touch, every round that allocates
        it.
    p : ndarray of shape (n_variables,) or None
        The dual's linear term (``min 1/2 a^T Q a + p^T a``); None: -e, the classifier.
    index : ndarray of int, shape (n_variables,) or None
        The point each variable sits on (``Q_st = y_s y_t k(x_index[s], x_index[t])``);
        None: variable i is point i. With it, ``y``, ``alpha``, ``p`` and ``weights`` are per
        variable, while ``f``, ``dual_coef`` and ``decision`` stay on the points
        (``dual_coef`` = y o alpha summed per point). epsilon-SVR passes 2n variables.
        With ``block_reuse`` it also keeps which points the block holds.
    block_reuse : bool, default True
        Take the entries of the new working set's block that the last round's block already
        holds, and evaluate only the new points' rows (``_working_block``). False
        evaluates every block afresh (the same solution up to SMO's tie-breaking). A call
        never starts from an earlier call's block: the order of the block steers SMO's
        tie-breaking, and a class of a one-vs-rest problem must get what its binary problem
        gets whatever was solved before it on the same workspace.
    products : LocalProducts-like or None
        Computes the decision-value products ``add(f, cols, c, skip)`` (the first ``f`` and
        every round's update, the bulk of the kernel entries at large n); None: K itself
        when it is a :class:`~hsskern.kernels.StoredKernelOperator` or
        :class:`~hsskern.kernels.StoredSparseRowsKernelOperator` (its stored rows), else
        :class:`LocalProducts` on K's points. :mod:`hsskern.distributed` passes one that runs
        them on Dask workers. The working set's block is always computed here (from K).
        Entry counts are of entries used: evaluated, or read from a stored K.
    max_time : float or None
        Seconds: no new round starts after them (the result is then feasible, its ``gap`` the
        true gap of the returned point, ``stopped == "max_time"``).
    callback : callable or None
        Called before every round and at the end as ``callback(state)`` with a
        :class:`RoundState` (the current, feasible point and its exact gap); a true return
        value stops the decomposition (``stopped == "callback"``). The arrays are the live
        ones: copy what must outlive the call. With shrinking, a state between syncs is
        marked ``exact=False`` (see :class:`RoundState`).
    shrinking : bool or "auto", default "auto"
        LIBSVM's shrinking at the level of the rounds ("auto": from ``shrink_min_points``
        points on, where the rounds' updates dominate): after a sync (f exact everywhere), the
        bounded points more than ``shrink_margin`` past the bias on their side leave the
        rounds; their decision values are updated only at the next sync, every
        ``sync_rounds`` rounds, when the rest converges, and before any stop, so the gap
        that ends the decomposition is always the one over all points. Not with ``index``,
        nor with a stored kernel's products (which read whole rows either way).

    options : DecompositionOptions or None
        The remaining tunables (the Newton step's, shrinking's, the stored kernel's cap...).
        ``max_ws``, ``max_chunk``, ``max_rounds``, ``sub_tol``, ``max_smo_iter``, ``newton``,
        ``block_reuse`` and ``shrinking`` are fields of it too: an argument given with a
        value other than its default sets that field; left at its default, the field of
        ``options`` stands.

    Returns
    -------
    RefineResult
    """
    given = dict(max_ws=max_ws, max_chunk=max_chunk, max_rounds=max_rounds, sub_tol=sub_tol,
                 max_smo_iter=max_smo_iter, newton=newton, block_reuse=block_reuse,
                 shrinking=shrinking)
    if options is None:
        options = DecompositionOptions(**given)
    else:
        changed = {k: v for k, v in given.items() if not _is_default(k, v)}
        options = replace(options, **changed) if changed else options
    problem = Decomposition(K, y, C, weights=weights, p=p, index=index, products=products,
                            workspace=workspace, options=options)
    return problem.solve(alpha, f, tol=tol, max_time=max_time, callback=callback, log=log)


def _is_default(name, value):
    default = getattr(_DEFAULTS, name)
    return value is default or (type(value) is type(default) and value == default)
