"""One-vs-one multiclass through the path protocol: a binary problem per pair of classes.

:class:`PairwiseBackend` wraps a binary dual backend (one whose solutions carry
``dual_coef``) and is itself a backend: ``prepare`` builds one binary preparation per pair
(i, j), i < j in the order of the label columns, on the points of those two classes (+1
for class i, -1 for class j: LIBSVM's order and sign); ``path`` solves every C of every pair
(each pair warm-started along C by the wrapped backend's own path); the solutions it returns
hold one column per pair, so ``model`` is one kernel expansion over the union of the pairs'
support vectors and the decision values of all pairs cost one kernel product, as LIBSVM's
predict computes each support vector's kernel value once.

The pairs are independent, so they run on a pool of threads, each pair's own OpenMP and BLAS
regions capped to one thread (the kernel and SMO code release the GIL): P pairs at once on
P cores rather than one pair at a time on all of them, which small problems use poorly.

Small pairs cost less to solve than to set up: on 10 classes of 1,800 points each pair's
SMO takes about 0.5 ms, its preparation, plan, path and pool task about 3 ms more. Where the
wrapped backend's own preparation of the largest and the smallest pair says it would solve
them by the cached SMO alone (from zero, no probe, no stored K: :class:`CachedPairs`), every
pair is solved by that engine directly (:func:`~hsskern.solvers.engines.cached_smo.solve_classifier`,
with the options the wrapped path would give it), one pool task per worker taking the pairs
one at a time: the same calls on the same inputs, so the same solutions bit for bit.

``Y`` is what the estimators pass every backend: one-vs-rest columns in {-1, +1} (one per
class). A single column (two classes) is passed through to the wrapped backend unchanged, so
a binary problem is solved and decided exactly as without the wrapper. A class with no point
in Y (a cross-validation fold may lack one) leaves its pairs with one class: such a pair is
not trained and decides a constant (+1 or -1, the class present), as LIBSVM does in its
internal cross-validation.
"""
import time
from dataclasses import dataclass, field, replace
import threading
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ...kernels import frozen
from ...utils._threads import thread_map, usable_cores
from ..engines.cached_smo import bounded_options, solve_classifier
from ..engines.interface import shared_blocks
from .hss_path import exact_info, warn_unsolved
from .path import KernelExpansion, PathSolution, PreparedProblem, check_Cs, check_labels
from .plan import RouteOptions, pair_workers, shares_pair_blocks

__all__ = ["PairwiseBackend", "PairwiseProblem", "CachedPairs", "ClassBlocks", "class_pairs",
           "vote", "ovr_scores", "pairwise_coupling"]


def class_pairs(n_classes):
    """(i, j) for i < j in LIBSVM's order: (0, 1), (0, 2), ..., (1, 2), ..."""
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


def vote(D, n_classes):
    """LIBSVM's one-vs-one vote: the class index per row of pairwise decision values.

    Pair (i, j) votes i when its value is > 0, else j; the class of most votes wins, ties to
    the lowest index.

    Parameters
    ----------
    D : ndarray of shape (m, n_classes (n_classes - 1) / 2)
    n_classes : int

    Returns
    -------
    ndarray of int, shape (m,)
    """
    votes = np.zeros((D.shape[0], n_classes), dtype=np.intp)
    for p, (i, j) in enumerate(class_pairs(n_classes)):
        pos = D[:, p] > 0
        votes[:, i] += pos
        votes[:, j] += ~pos
    return np.argmax(votes, axis=1)


def ovr_scores(D, n_classes):
    """SVC's ``decision_function_shape="ovr"`` values from pairwise ones, shape (m, k).

    Per class: its votes (pair (i, j) votes j when its value is < 0, else i, as scikit-learn
    counts them) plus its summed confidences s (pair (i, j)'s value counts for i, minus it
    for j) squashed to s / (3 (|s| + 1)), in (-1/3, 1/3), so they break ties between equal
    vote counts without changing the vote order.
    """
    votes = np.zeros((D.shape[0], n_classes))
    conf = np.zeros((D.shape[0], n_classes))
    for p, (i, j) in enumerate(class_pairs(n_classes)):
        neg = D[:, p] < 0
        votes[:, i] += ~neg
        votes[:, j] += neg
        conf[:, i] += D[:, p]
        conf[:, j] -= D[:, p]
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


def pairwise_coupling(R, n_classes, eps=None, max_iter=None):
    """Class probabilities from pairwise ones (Wu, Lin & Weng 2004, their second method).

    With r_ij = P(i | i or j), the probabilities p minimise sum_i sum_{j != i}
    (r_ji p_i - r_ij p_j)^2 over the simplex, i.e. p' Q p with Q_tt = sum_{j != t} r_jt^2
    and Q_tj = -r_jt r_tj, subject to sum p = 1. Solved by their fixed-point iteration
    (LIBSVM's ``multiclass_probability``), every row at once, from p = 1/k, until
    max_t |(Qp)_t - p'Qp| < eps.

    Parameters
    ----------
    R : ndarray of shape (m, n_pairs)
        r_ij for the pairs of :func:`class_pairs`, each in (0, 1).
    n_classes : int
    eps : float or None
        None: LIBSVM's 0.005 / k.
    max_iter : int or None
        None: LIBSVM's max(100, k).

    Returns
    -------
    ndarray of shape (m, n_classes), rows summing to 1
    """
    k, m = n_classes, R.shape[0]
    eps = 0.005 / k if eps is None else eps
    max_iter = max(100, k) if max_iter is None else max_iter
    r = np.zeros((m, k, k))  # r[:, i, j] = r_ij
    for p, (i, j) in enumerate(class_pairs(k)):
        r[:, i, j], r[:, j, i] = R[:, p], 1.0 - R[:, p]
    Q = -r.transpose(0, 2, 1) * r  # Q_tj = -r_jt r_tj
    idx = np.arange(k)
    Q[:, idx, idx] = (r ** 2).sum(axis=1) - r[:, idx, idx] ** 2  # sum_{j != t} r_jt^2
    P = np.full((m, k), 1.0 / k)
    active = np.arange(m)
    for _ in range(max_iter):
        Qa, Pa = Q[active], P[active]
        Qp = np.einsum("rtj,rj->rt", Qa, Pa)
        pQp = np.einsum("rt,rt->r", Pa, Qp)
        done = np.max(np.abs(Qp - pQp[:, None]), axis=1) < eps
        active, Qa, Pa, Qp, pQp = (a[~done] for a in (active, Qa, Pa, Qp, pQp))
        if active.size == 0:
            break
        rows = np.arange(active.size)
        for t in range(k):  # one coordinate at a time, renormalised (their Algorithm 2)
            qtt = Qa[:, t, t]
            diff = (pQp - Qp[:, t]) / qtt
            Pa[:, t] += diff
            pQp = (pQp + diff * (diff * qtt + 2.0 * Qp[:, t])) / (1.0 + diff) ** 2
            Qp = (Qp + diff[:, None] * Qa[rows, t, :]) / (1.0 + diff)[:, None]
            Pa /= (1.0 + diff)[:, None]
        P[active] = Pa
    return P


@dataclass(frozen=True, eq=False)
class PairwiseProblem(PreparedProblem):
    """One binary preparation per pair of classes.

    Attributes
    ----------
    points : ndarray or sparse CSR matrix of shape (n, d)
        The points given to ``prepare`` (the pairs' rows index them).
    n_classes : int
        The label columns' count (classes).
    pairs : tuple of (int, int)
    rows : tuple of ndarray of int
        Per pair, its points' indices in ``points`` (class i's and class j's, increasing).
    labels : tuple of ndarray
        Per pair, +1 (class i) / -1 (class j) for its rows.
    problems : tuple
        Per pair, the wrapped backend's preparation, or None for a pair with one class
        (every pair None when ``deferred``).
    stats : mapping
        ``pairs``: each pair's preparation statistics (filled by ``path`` when deferred).
    timings : mapping
        Seconds per phase, summed over the pairs (CPU seconds of the pool, not wall time).
    deferred : bool
        The pairs are prepared by ``path``, each on its worker when it is solved, and
        dropped after (:class:`PairwiseBackend`'s ``release``).
    cached : CachedPairs or None
        Every pair goes to the cached SMO directly; a path that does not (several C, a
        start) prepares the pairs as a deferred problem's.
    """

    points: object
    n_classes: int
    pairs: tuple
    rows: tuple
    labels: tuple
    problems: tuple
    stats: object = field(default_factory=dict)
    timings: object = field(default_factory=dict)
    deferred: bool = False
    cached: object = None

    def live(self):
        """The pairs with two classes (the trained ones)."""
        if self.deferred or self.cached is not None:  # labels +-1: two classes, two values
            return [p for p, yp in enumerate(self.labels) if yp.size and yp.min() != yp.max()]
        return [p for p, pr in enumerate(self.problems) if pr is not None]


def _solve(backend, prepared, Y, Cs, weights, start=None):
    """``backend.path``, with ``weights`` and a ``start`` (``dual_start``,
    ``start_decision``) only when there are any (the protocol's rule)."""
    extra = {} if start is None else dict(zip(("dual_start", "start_decision"), start))
    if weights is None:
        return backend.path(prepared, Y, Cs, **extra)
    return backend.path(prepared, Y, Cs, weights=weights, **extra)


def _pair_start(start, rows, p):
    """Pair p's (dual_start, start_decision) on its rows, as one column; None for None."""
    if start is None:
        return None
    return tuple(None if a is None else np.asarray(a)[rows, p][:, None] for a in start)


def _prepare_and_solve(backend, X, rows, yp, Cs, weights, start=None):
    """A deferred pair: its preparation made, solved and dropped here (on its worker);
    (solutions, the preparation's stats, its timings)."""
    points = X[rows]
    if isinstance(points, np.ndarray):  # the kernel operator keeps it, not a copy
        points = frozen(points)
    prepared = backend.prepare(points, yp)
    del points
    sols = _solve(backend, prepared, yp, Cs, weights, start)
    return sols, dict(prepared.stats), dict(prepared.timings)


def _record_deferred(prepared, live, solved):
    """A deferred problem's per-pair stats and summed timings, once its pairs ran."""
    stats = [None] * len(prepared.pairs)
    for p, (_, st, _) in zip(live, solved):
        stats[p] = st
    # the read-only mappings replaced, not edited: what prepare deferred, path now knows
    object.__setattr__(prepared, "stats",
                       MappingProxyType({**prepared.stats, "pairs": tuple(stats)}))
    object.__setattr__(prepared, "timings",
                       MappingProxyType(_sum_timings(t for _, _, t in solved)))


def _sum_timings(mappings):
    out = {}
    for t in mappings:
        for k, v in t.items():
            out[k] = out.get(k, 0.0) + float(v)
    return out


def _merge_info(infos):
    """Per-column records concatenated (a tuple per pair becomes one per pair's column),
    anything else kept as a tuple with one entry per pair; None for an untrained pair."""
    keys = dict.fromkeys(k for info in infos if info is not None for k in info)
    out = {}
    for key in keys:
        vals = [None if info is None else info.get(key) for info in infos]
        if all(v is None for v in vals):  # e.g. no exact solve in any pair: None, as binary
            out[key] = None
        elif all(isinstance(v, tuple) for v in vals if v is not None):
            out[key] = tuple(x for v in vals for x in ((None,) if v is None else v))
        else:
            out[key] = tuple(vals)
    return out


@dataclass(frozen=True)
class CachedPairs:
    """How every pair of a problem goes to the cached SMO engine directly: what the wrapped
    backend's path would pass it (:func:`~hsskern.solvers.paths.hss_path.hss_svm_path` on a
    problem whose plan is the cached engine), read once for all pairs.

    Attributes
    ----------
    kernel : Kernel
    options : SMOOptions
        The wrapped backend's, bounded per pair by ``budget``
        (:func:`~hsskern.solvers.engines.cached_smo.bounded_options`).
    tol : float
        The SMO's stopping gap (the wrapped backend's ``exact_tol``).
    budget : float or None
        The memory budget its preparations resolved.
    one_thread : bool
        Its plan ran the engine on one thread.
    warn : tuple
        ``(tol, max_iter)`` of its :func:`~hsskern.solvers.paths.hss_path.warn_unsolved`.
    stats : mapping
        The largest pair's preparation statistics (each pair's, with its own ``n``).
    timings : mapping
        The two pairs' preparations' seconds per phase.
    log : callable or None
        The wrapped backend's ``log(level, line)``: a line per pair, as its path's.
    classes : ndarray of int or None
        Each point's class (the label column of its +1), with ``share_blocks``.
    share_blocks : bool
        The plan's :func:`~hsskern.solvers.paths.plan.shares_pair_blocks`: the pairs' kernel
        matrices are assembled from class blocks, each class's own block computed once for
        its k - 1 pairs (:class:`ClassBlocks`), and cached whole in the engine.
    workers : int
        The threads that take the pairs (the plan's
        :func:`~hsskern.solvers.paths.plan.pair_workers`, or the backend's ``n_jobs``).
    """

    kernel: object
    options: object
    tol: float
    budget: float
    one_thread: bool
    warn: tuple
    stats: object
    timings: object
    log: object = None
    classes: object = None
    share_blocks: bool = False
    workers: int = 1


#: the wrapped backend's attributes :class:`CachedPairs` reads (HSSBackend's; OneFitBackend
#: holds one as ``hss``)
_CACHED_FIELDS = ("kernel", "smo_options", "options", "settings")


def _plain_cached(prepared):
    """Whether a pair's preparation by the wrapped backend leaves it to the cached SMO
    alone: from zero, that engine by its plan, no support vectors measured, no stored or
    shifted K, one thread."""
    stats = getattr(prepared, "stats", None) or {}
    plan = stats.get("plan") or {}
    return (stats.get("start") == "decomposition" and plan.get("engine") == "cached"
            and plan.get("measured_share") is None and plan.get("threads") == 1
            and not stats.get("stored_kernel") and not stats.get("shifted_rows")
            and getattr(prepared, "points", None) is None)


def _solve_on_blocks(blocks, pair, r, X, C, w, cfg, opts):
    """Pair (i, j) on its kernel matrix from ``blocks`` (every row cached before the SMO
    runs), its points in class order; the result in the order of its rows ``r``."""
    i, j = pair
    order, K = blocks.pair(i, j)
    ys = np.concatenate([np.ones(blocks.members[i].size), -np.ones(blocks.members[j].size)])
    rr = solve_classifier(X[order], cfg.kernel, ys, C, weights=None if w is None else w[order],
                          tol=cfg.tol, options=opts, kernel_matrix=K)
    at = np.searchsorted(r, order)  # each solved point's place among the pair's rows

    def back(v):
        out = np.empty_like(v)
        out[at] = v
        return out
    return replace(rr, alpha=back(rr.alpha), dual_coef=back(rr.dual_coef),
                   decision=back(rr.decision))


class ClassBlocks:
    """The Gaussian kernel's blocks K(X_a, X_b) between classes, for one-vs-one pairs solved
    on whole kernel matrices: each class's own block is computed once, by one BLAS product,
    for the k - 1 pairs it enters; a pair's cross block by the pair's worker. A pair's
    matrix is [[K_ii, K_ij], [K_ji, K_jj]] over its points in class order.

    The squared distances are |a|^2 + |b|^2 - 2 a.b on points centered on their mean
    (clipped at 0, the diagonal exactly 1): the engine's own rows' entries to rounding, not
    bit for bit, so a pair solved on them reaches the same solution to the solver's
    tolerance.
    """

    def __init__(self, X, classes, n_classes, kernel, dtype):
        self.gamma, self.dtype = float(kernel.gamma), dtype
        X = np.asarray(X, dtype=np.float64)
        mu = X.mean(axis=0)
        self.members = [np.flatnonzero(classes == c) for c in range(n_classes)]
        self.points = [np.ascontiguousarray(X[m] - mu) for m in self.members]
        self.norms = [np.einsum("ij,ij->i", P, P) for P in self.points]
        self.own = [self.block(c, c) if m.size else None for c, m in enumerate(self.members)]

    def block(self, a, b):
        """K(X_a, X_b) in ``dtype``."""
        A, B = self.points[a], self.points[b]
        D = A @ B.T
        D *= -2.0
        D += self.norms[a][:, None]
        D += self.norms[b][None, :]
        np.maximum(D, 0.0, out=D)
        D *= -self.gamma
        np.exp(D, out=D)
        if a == b:
            np.fill_diagonal(D, 1.0)
        return D.astype(self.dtype, copy=False)

    def pair(self, i, j):
        """(the pair's points: class i's then class j's, their kernel matrix, C-ordered)."""
        Kij = self.block(i, j)
        K = np.block([[self.own[i], Kij], [Kij.T, self.own[j]]])
        return np.concatenate([self.members[i], self.members[j]]), K

    @staticmethod
    def bytes_needed(sizes, pair_sizes, row_bytes, workers):
        """The classes' own blocks, and per worker a pair's cross block, its matrix and the
        engine's copy of it."""
        largest = max(pair_sizes, default=0)
        return row_bytes * (sum(float(m) ** 2 for m in sizes) + 3.0 * workers * largest ** 2)


class _PairSolution:
    """One pair's solution in the shape :meth:`PairwiseBackend._merge` reads (a
    PathSolution's fields without its checks: the engine's result is trusted)."""

    __slots__ = ("C", "dual_coef", "intercept", "n_iter", "converged", "gap", "timings",
                 "info")

    def __init__(self, C, yp, rr):
        self.C, self.dual_coef = C, rr.dual_coef[:, None]
        self.intercept, self.n_iter = (rr.bias,), (int(rr.rounds),)
        self.converged, self.gap = (bool(rr.converged),), (float(rr.gap),)
        self.timings = {"smo": rr.time}
        # what hss_svm_path's exact solution records (no ADMM ran)
        self.info = {**exact_info(yp, self.dual_coef, [rr]), "route": "cached SMO"}


@dataclass(frozen=True)
class PairwiseBackend:
    """One-vs-one through the path protocol, around a binary dual backend ``inner``.

    Parameters
    ----------
    inner : a path-protocol backend whose solutions carry ``dual_coef`` and whose ``kernel``
        attribute is the kernel of its expansion (every kernel backend here).
    n_jobs : int or None
        Threads running pairs at once (None: every core this process may use). 1 runs them
        one after another on the calling thread, with the wrapped backend's own threading.

    A wrapped backend with a ``max_time`` (seconds for its whole path, counted from its
    ``started`` time when it has one) gets, per pair, the pairs' equal share of the pool's
    time left, ``time left * workers / n_pairs``, from the pair's own start, so that the
    one-vs-one path keeps the budget of the fit.

    release : bool, default False
        Memory: without it every pair's preparation is held from ``prepare`` to the end of
        ``path`` (the pairs' copies of their points sum to (n_classes - 1) n points: 9 n
        with 10 classes; a preparation that stores its pair's kernel matrix stores one per
        pair). With it ``prepare`` only splits the points, and ``path`` prepares each pair
        on its worker, solves it and drops the preparation: at most one pair's per worker
        is held at a time. For a preparation solved by one ``path`` call (a fit): a second
        call prepares the pairs again, and the preparations are not kept for a caller.
    small_pairs : bool, default True
        Where the wrapped backend would solve the largest and the smallest pair by the
        cached SMO alone (:class:`CachedPairs`), a path of one C from zero calls that engine
        on every pair directly, one pool task per worker: no preparation, plan or task per
        pair, the same solutions (any other path prepares the pairs as ``release`` does).
        False: every pair through the wrapped backend.
    """

    inner: object
    n_jobs: int = None
    release: bool = False
    small_pairs: bool = True

    #: what the estimators and the fold scorer read: decisions are pairwise, labels by vote
    one_vs_one = True

    @property
    def kernel(self):
        """The wrapped backend's kernel (every pair's)."""
        return self.inner.kernel

    def _workers(self):
        return usable_cores() if self.n_jobs is None else self.n_jobs

    def _map(self, fn, tasks, sizes):
        """[fn(*t) for t in tasks], on the pool when there are several."""
        # the largest pairs first: the pool's last pair is then a small one
        return thread_map(fn, tasks, self._workers(),
                          order=np.argsort(-np.asarray(sizes), kind="stable"))

    def prepare(self, X, Y):
        """A :class:`PairwiseProblem`: each pair's rows and the wrapped backend's
        preparation of them; the wrapped backend's own preparation for one label column."""
        Y = check_labels(Y, X.shape[0])
        if Y.shape[1] == 1:
            return self.inner.prepare(X, Y)
        k = Y.shape[1]
        label = np.argmax(Y, axis=1)
        pairs = class_pairs(k)
        rows, labels = [], []
        for i, j in pairs:
            r = np.flatnonzero((label == i) | (label == j))
            rows.append(r)
            labels.append(np.where(label[r] == i, 1.0, -1.0)[:, None])
        live = [p for p, yp in enumerate(labels) if np.unique(yp).size == 2]
        cached = self._cached_pairs(X, rows, labels, live, Y)
        if cached is not None:  # every pair straight to the cached SMO (see CachedPairs)
            stats = tuple({**cached.stats, "n": int(rows[p].size)} if p in live else None
                          for p in range(len(pairs)))
            return PairwiseProblem(points=X, n_classes=k, pairs=tuple(pairs),
                                   rows=tuple(rows), labels=tuple(labels),
                                   problems=(None,) * len(pairs), stats={"pairs": stats},
                                   timings=cached.timings, deferred=self.release,
                                   cached=cached)
        if self.release:  # prepared by path, a pair at a time per worker
            return PairwiseProblem(points=X, n_classes=k, pairs=tuple(pairs),
                                   rows=tuple(rows), labels=tuple(labels),
                                   problems=(None,) * len(pairs),
                                   stats={"pairs": (None,) * len(pairs)}, timings={},
                                   deferred=True)
        # each pair's rows gathered on its worker: the copies are made in parallel
        prepared = self._map(lambda r, yp: self.inner.prepare(X[r], yp),
                             [(rows[p], labels[p]) for p in live],
                             [rows[p].size for p in live])
        problems = [None] * len(pairs)
        for p, prob in zip(live, prepared):
            problems[p] = prob
        stats = {"pairs": tuple(None if pr is None else dict(pr.stats) for pr in problems)}
        timings = _sum_timings(pr.timings for pr in problems if pr is not None)
        return PairwiseProblem(points=X, n_classes=k, pairs=tuple(pairs), rows=tuple(rows),
                               labels=tuple(labels), problems=tuple(problems), stats=stats,
                               timings=timings)

    def _cached_pairs(self, X, rows, labels, live, labels_matrix):
        """A :class:`CachedPairs` where the wrapped backend's preparations of the largest and
        the smallest pair both leave them to the cached SMO alone (its plan's rules are
        monotone in n, so the pairs between do too); else None."""
        inner = getattr(self.inner, "hss", self.inner)  # OneFitBackend's HSSBackend
        if (not self.small_pairs or len(live) < 2 or sp.issparse(X)
                or not all(hasattr(inner, a) for a in _CACHED_FIELDS)
                or getattr(getattr(self.inner, "settings", None), "max_time", None) is not None):
            return None
        sizes = [rows[p].size for p in live]
        ends = dict.fromkeys((live[int(np.argmax(sizes))], live[int(np.argmin(sizes))]))
        preps = [self.inner.prepare(X[rows[p]], labels[p]) for p in ends]
        if not all(_plain_cached(pr) for pr in preps):
            return None
        stats = dict(preps[0].stats)
        budget = stats.get("memory_budget")
        n, d = X.shape
        sizes = np.bincount(np.argmax(labels_matrix, axis=1), minlength=labels_matrix.shape[1])
        cache = bounded_options(inner.smo_options, n, d, budget)
        route = getattr(inner, "route", RouteOptions())
        pair_sizes = [rows[p].size for p in live]
        workers = self._workers() if self.n_jobs is not None else pair_workers(
            pair_sizes, d, self._workers(), route)
        need = ClassBlocks.bytes_needed(sizes, pair_sizes, cache.row_bytes,
                                        min(workers, len(live)))
        share = shares_pair_blocks(d, getattr(inner.kernel, "name", None), need,
                                   cache.cache_bytes, route)
        return CachedPairs(kernel=inner.kernel, options=inner.smo_options,
                           tol=inner.settings.tol, budget=budget, one_thread=True,
                           warn=(inner.settings.admm_tol, inner.options.admm_max_iter),
                           stats=stats,
                           timings=_sum_timings(pr.timings for pr in preps),
                           log=getattr(inner, "log", None),
                           classes=np.argmax(labels_matrix, axis=1) if share else None,
                           share_blocks=share, workers=workers)

    def _cached_path(self, prepared, Cs, weights):
        """One C from zero on every pair by the cached SMO directly (``prepared.cached``):
        the call :func:`~hsskern.solvers.paths.hss_path.hss_svm_path` makes on a cached-engine
        problem, one pool task per worker taking the pairs one at a time."""
        cfg, X, live = prepared.cached, prepared.points, prepared.live()
        C = float(check_Cs(Cs)[0])
        w = None if weights is None else np.asarray(weights, dtype=np.float64)

        blocks = None
        if cfg.share_blocks:  # the classes' own blocks, on every core
            single = replace(cfg.options, tol=cfg.tol).single_rows
            blocks = ClassBlocks(X, cfg.classes, prepared.n_classes, cfg.kernel,
                                 np.float32 if single else np.float64)

        # the pairs handed out one at a time, largest first, to one task per worker: a
        # worker whose core another process holds takes fewer (no static split)
        queue, lock = iter(sorted(live, key=lambda p: -prepared.rows[p].size)), threading.Lock()

        def solve():
            out = []
            while True:
                with lock:
                    p = next(queue, None)
                if p is None:
                    return out
                r, yp = prepared.rows[p], prepared.labels[p]
                opts = bounded_options(cfg.options, r.size, X.shape[1], cfg.budget)
                if cfg.one_thread and opts.threads == 0:
                    opts = replace(opts, threads=1)
                if blocks is not None and float(r.size) ** 2 * opts.row_bytes <= \
                        opts.cache_bytes:
                    rr = _solve_on_blocks(blocks, prepared.pairs[p], r, X, C, w, cfg, opts)
                else:
                    rr = solve_classifier(X[r], cfg.kernel, yp[:, 0], C,
                                          weights=None if w is None else w[r], tol=cfg.tol,
                                          options=opts)
                out.append((p, _PairSolution(C, yp, rr)))
                if cfg.log is not None:  # the wrapped path's line
                    cfg.log(1, f"C={C:g}: {rr.rounds} SMO steps of the cached SMO, gap "
                               f"{rr.gap:.3g}, {np.count_nonzero(rr.dual_coef)} support "
                               f"vectors, {rr.time:.3g} s")
            return out

        workers = min(cfg.workers, len(live))
        per_pair = [None] * len(prepared.pairs)
        for solved in thread_map(solve, [()] * workers, workers):
            for p, sol in solved:
                per_pair[p] = (sol,)
        out = (self._merge(prepared, per_pair, 0, C),)
        warn_unsolved(out, *cfg.warn, step_cap=cfg.options.max_iter)
        return out

    def warm_backend(self, entries=None):
        """This backend around the wrapped one's :meth:`warm_backend` (None where that has
        none): each pair's path then starts from its column of ``dual_start``."""
        warm = getattr(self.inner, "warm_backend", None)
        inner = None if warm is None else warm(entries)
        return None if inner is None else replace(self, inner=inner)

    def path(self, prepared, Y, Cs, weights=None, dual_start=None, start_decision=None):
        """Every C of every pair (the wrapped backend's path on each pair's rows and
        weights), as one solution per C with a column per pair. ``dual_start`` (n,
        n_pairs) and its ``start_decision`` (or None): each pair's start for its first C,
        on all n points (a pair reads its own rows' entries)."""
        start = None if dual_start is None else (dual_start, start_decision)
        if not isinstance(prepared, PairwiseProblem):
            return self._inner_path(prepared, Y, Cs, weights, start)
        if self.small_pairs and prepared.cached is not None and len(Cs) == 1 and start is None:
            return self._cached_path(prepared, Cs, weights)
        live = prepared.live()
        shape = (prepared.points.shape[0], len(prepared.pairs))
        if dual_start is not None and np.shape(dual_start) != shape:
            raise ValueError(f"dual_start must have shape {shape} (points, pairs), got "
                             f"{np.shape(dual_start)}")
        tasks = [(prepared.labels[p], prepared.problems[p], Cs,
                  None if weights is None else weights[prepared.rows[p]],
                  _pair_start(start, prepared.rows[p], p)) for p in live]
        on_worker = prepared.deferred or prepared.cached is not None
        if on_worker:  # the rows, not a preparation: prepared on the worker
            tasks = [(yp, prepared.rows[p], C, w, a)
                     for p, (yp, _, C, w, a) in zip(live, tasks)]
        inner = self.inner
        settings = getattr(inner, "settings", None)  # what the estimator resolved
        budget = getattr(settings, "max_time", None)
        if budget is not None and len(live) > 1:
            # a time budget is the whole fit's: each pair gets its share of the pool's time
            # left, counted from the pair's own start
            if settings.started is not None:
                budget = max(0.0, budget - (time.perf_counter() - settings.started))
            share = budget * min(self._workers(), len(live)) / len(live)
            inner = replace(inner, settings=settings.replace(started=None, max_time=share))
        sizes = [prepared.rows[p].size for p in live]
        buffers = threading.local()  # each worker's block buffer, for its pairs in turn

        def with_blocks(task):
            if not hasattr(buffers, "blocks"):
                buffers.blocks = {}
            with shared_blocks(buffers.blocks):
                return task()

        if on_worker:
            solved = self._map(lambda yp, r, C, w, a: with_blocks(lambda: _prepare_and_solve(
                inner, prepared.points, r, yp, C, w, a)), tasks, sizes)
            _record_deferred(prepared, live, solved)
            solved = [sols for sols, _, _ in solved]
        else:
            solved = self._map(lambda yp, pr, C, w, a: with_blocks(
                lambda: _solve(inner, pr, yp, C, w, a)), tasks, sizes)
        per_pair = [None] * len(prepared.pairs)
        for p, sols in zip(live, solved):
            per_pair[p] = sols
        return tuple(self._merge(prepared, per_pair, s, C) for s, C in enumerate(Cs))

    def _inner_path(self, prepared, Y, Cs, weights, start=None):
        return _solve(self.inner, prepared, Y, Cs, weights, start)

    @staticmethod
    def _merge(prepared, per_pair, s, C):
        """The s-th C's solution of every pair as one solution with a column per pair."""
        n, P = prepared.points.shape[0], len(prepared.pairs)
        coef = np.zeros((n, P))
        intercept, n_iter = np.zeros(P), np.zeros(P, dtype=np.int64)
        converged, gap = np.ones(P, bool), np.zeros(P)
        infos, timings = [], []
        for p in range(P):
            if per_pair[p] is None:  # one class only: a constant decision, its label
                intercept[p] = prepared.labels[p][0, 0] if prepared.rows[p].size else 1.0
                infos.append(None)
                continue
            sol = per_pair[p][s]
            coef[prepared.rows[p], p] = sol.dual_coef[:, 0]
            intercept[p], n_iter[p] = sol.intercept[0], sol.n_iter[0]
            converged[p], gap[p] = sol.converged[0], sol.gap[0]
            infos.append(dict(sol.info))
            timings.append(sol.timings)
        C = next((pp[s].C for pp in per_pair if pp is not None), C)
        return PathSolution(C=C, intercept=intercept, n_iter=n_iter, converged=converged,
                            gap=gap,
                            dual_coef=coef, timings=_sum_timings(timings),
                            info=_merge_info(infos))

    def model(self, prepared, solutions):
        """One kernel expansion over the union of the pairs' support vectors."""
        if not isinstance(prepared, PairwiseProblem):
            return self.inner.model(prepared, solutions)
        return KernelExpansion(prepared.points, self.inner.kernel, solutions)
