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

``Y`` is what the estimators pass every backend: one-vs-rest columns in {-1, +1} (one per
class). A single column (two classes) is passed through to the wrapped backend unchanged, so
a binary problem is solved and decided exactly as without the wrapper. A class with no point
in Y (a cross-validation fold may lack one) leaves its pairs with one class: such a pair is
not trained and decides a constant (+1 or -1, the class present), as LIBSVM does in its
internal cross-validation.
"""
import time
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from ..utils._threads import thread_map, usable_cores
from .path import KernelExpansion, PathSolution, PreparedProblem, check_labels

__all__ = ["PairwiseBackend", "PairwiseProblem", "class_pairs", "vote", "ovr_scores",
           "pairwise_coupling"]


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

    def live(self):
        """The pairs with two classes (the trained ones)."""
        if self.deferred:
            return [p for p, yp in enumerate(self.labels) if np.unique(yp).size == 2]
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
    prepared = backend.prepare(X[rows], yp)
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
        if all(v is None for v in vals):  # e.g. no refinement in any pair: None, as binary
            out[key] = None
        elif all(isinstance(v, tuple) for v in vals if v is not None):
            out[key] = tuple(x for v in vals for x in ((None,) if v is None else v))
        else:
            out[key] = tuple(vals)
    return out


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
    """

    inner: object
    n_jobs: int = None
    release: bool = False

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
        live = prepared.live()
        shape = (prepared.points.shape[0], len(prepared.pairs))
        if dual_start is not None and np.shape(dual_start) != shape:
            raise ValueError(f"dual_start must have shape {shape} (points, pairs), got "
                             f"{np.shape(dual_start)}")
        tasks = [(prepared.labels[p], prepared.problems[p], Cs,
                  None if weights is None else weights[prepared.rows[p]],
                  _pair_start(start, prepared.rows[p], p)) for p in live]
        if prepared.deferred:  # the rows, not a preparation: prepared on the worker
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
        if prepared.deferred:
            solved = self._map(lambda yp, r, C, w, a: _prepare_and_solve(
                inner, prepared.points, r, yp, C, w, a), tasks, sizes)
            _record_deferred(prepared, live, solved)
            solved = [sols for sols, _, _ in solved]
        else:
            solved = self._map(lambda yp, pr, C, w, a: _solve(inner, pr, yp, C, w, a), tasks,
                               sizes)
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
