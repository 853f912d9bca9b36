"""The exact SVM at any n, anytime: a subsample's exact solution, grown in stages to all
points, under a time budget.

At large n the exact decomposition (:func:`~hsskern.solvers.engines.exact.solve_block`) costs one
n x |changed| kernel product per round, and an HSS compression of all n points (the HSS
path's start) is what the machine cannot afford. A random subsample of m points is cheap to
solve exactly (the HSS path with its exact solve). Its solution padded with zeros is a
*feasible* point of a larger problem's dual, so the problem grows in stages (m, 2m, 4m, ...,
all training points), each decomposition started from the last stage's exact solution: every
finished stage is the exact SVM of a larger random subsample, and every round keeps its point
feasible and its exact KKT gap known. Started on all points at once, the decomposition spends
its early rounds on iterates worse than the subsample; the stages cost about as much in all
and pass through exact models on the way.

When the budget (``max_time``) stops it, the model returned is the best, on held-out
validation points (a ``validation_fraction`` of the data, trained on by no stage), among the
subsample's own model and every round's point: never worse there than subsampling. Each
round's validation decision values cost n_val x |changed| entries, updated from the
coefficients that changed. A converged last stage returns the exact SVM of the training
points, whatever the validation says (that is what was asked for; choosing C is
cross-validation's job).

Along a C path the last point of the previous C, scaled by C'/C
(:func:`~hsskern.solvers.engines.exact.continuation_start`), starts the next at the stage where it
stopped (feasible, its decision values scaled: no kernel product), as in the HSS path.
"""
import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ...exceptions import TimeBudgetError
from ...kernels.sparse_rows import rows_nbytes, rows_operator
from ...options import ExactSVCOptions, PathSettings
from ...utils._memory import check_memory, format_bytes, resolve_budget
from ..engines.admm import kkt_violation
from .hss_path import HSSBackend, decomposition_chunk, prepare_decomposition
from .plan import block_memory, largest_block
from ...utils.validation import check_weights
from .path import KernelExpansion, PathSolution, PreparedProblem, check_Cs, check_labels
from ..engines.interface import BlockEngine, DualProblem, DualStart
from ..engines.exact import LocalProducts, ExactResult, continuation_start

__all__ = ["ExactBackend", "ExactProblem", "split_points"]


@dataclass(frozen=True, eq=False)
class ExactProblem(PreparedProblem):
    """The points of an exact fit, split once.

    Attributes
    ----------
    points : ndarray of shape (n, d)
    train : ndarray of int
        Indices of the training points (the decomposition's).
    validation : ndarray of int
        Indices of the held-out points that choose a stopped decomposition's model (their
        coefficients stay 0).
    order : ndarray of int
        Positions in ``train``, the subsample's first: stage k solves the first
        ``stages[k]`` of them.
    stages : tuple of int
        The stages' sizes: the subsample's, growing by ``growth``, to all training points.
    """

    points: np.ndarray
    train: np.ndarray
    validation: np.ndarray
    order: np.ndarray
    stages: tuple
    stats: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)


def split_points(n, validation_fraction, subsample, random_state):
    """(train, validation, order) for n points: ``order`` holds positions in train, the
    subsample's first, all drawn with one generator (the same ``random_state``, the same
    split); returns the subsample's size too."""
    rng = check_random_state(random_state)
    perm = rng.permutation(n)
    n_val = int(np.floor(validation_fraction * n))
    n_val = min(n_val, n - 2)  # the training part keeps two points at least
    val, train = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    m = subsample if isinstance(subsample, (int, np.integer)) else int(np.ceil(subsample * n))
    m = int(min(max(m, 2), train.size))
    order = rng.permutation(train.size)
    order[:m].sort()  # the subsample by position
    return train, val, order, m


def hinge_bias(f, y, w=None):
    """The b minimizing the weighted hinge loss sum_i w_i max(0, 1 - y_i (f_i + b)).

    The loss is convex and piecewise linear in b with its kinks at t_i = y_i - f_i; its slope
    sum_{y=-1, t<b} w - sum_{y=+1, t>b} w rises through 0 at a kink, found after one sort.
    At the SVM's optimum this is its bias (the primal's optimal offset for the optimal f); for
    a point short of the optimum it is the best offset of its f under the SVM's own loss,
    where LIBSVM's rule (the mean over the free points, which are not yet on their margins)
    swings by the size of the gap.
    """
    t = y - f
    c = np.ones_like(t) if w is None else w
    order = np.argsort(t, kind="stable")
    ts, ys, cs = t[order], y[order], c[order]
    neg = np.cumsum(np.where(ys < 0, cs, 0.0))  # negatives' mass at t <= ts[k]
    pos_above = cs[ys > 0].sum() - np.cumsum(np.where(ys > 0, cs, 0.0))
    k = int(np.searchsorted(neg - pos_above, 0.0, side="left"))
    return float(ts[min(k, ts.size - 1)])


class _Rate:
    """Kernel entries per second of this process's products, as measured so far (the
    certifying product of :meth:`ExactBackend._solve_column` is estimated from it)."""

    def __init__(self):
        self.entries, self.seconds = 0, 0.0

    def add(self, entries, seconds):
        self.entries += entries
        self.seconds += seconds

    def seconds_for(self, entries):
        """Seconds for ``entries`` more at the measured rate; None before a measurement."""
        if self.entries < _RATE_MIN_ENTRIES or self.seconds <= 0:
            return None
        return entries * self.seconds / self.entries


def _certify_seconds(rate, n_outside, alpha):
    """Seconds, at the measured rate, of the product that certifies a stage's next model over
    the ``n_outside`` points outside it: its support vectors ~ a quarter more than alpha's
    nonzeros (0 before a measurement)."""
    return rate.seconds_for(int(1.25 * n_outside * max(1, np.count_nonzero(alpha)))) or 0.0


#: entries the rate must have seen before it estimates anything (a few ms of products)
_RATE_MIN_ENTRIES = 10 ** 6
#: n-vectors per label column of a stage (the decomposition's, the validation's and the
#: candidates' coefficients and decision values)
_STAGE_VECTORS = 32
#: copies of dense points' bytes a stage's kernel operator holds beside the training points'
#: and the stage's own: its centred, transposed and float32 ones (a count of what the code
#: allocates, measured with tracemalloc at 100 features, not a threshold; sparse rows: none)
_STAGE_OPERATOR_COPIES = 3
#: rows x columns of the product that measures the rate of kernel entries
_PROBE = (256, 4096)


def _probe_rate(X, kernel):
    """Kernel entries a second of one blocked product on X's points (its first rows against
    the next ones; at least one entry a second)."""
    n = X.shape[0]
    r, c = min(_PROBE[0], n), min(_PROBE[1], n)
    t = time.perf_counter()
    rows_operator(X[:r], kernel).cross(X[n - c:]) @ np.ones(r)
    return max(r * c / max(time.perf_counter() - t, 1e-6), 1.0)


class _ValidationTracker:
    """Scores every round's point on the validation points; keeps the best one seen.

    The validation decision values follow the coefficients that changed since the last call
    (n_val x |changed| kernel entries a round). A point short of ``tol`` is scored with the
    bias that minimizes its training hinge loss (:func:`hinge_bias`), a converged one with
    LIBSVM's. Ties go to the later point (more exact).

    With a ``deadline``, it also stops the rounds (returns True) once the time left would not
    hold the product that certifies the model to be returned: ``n_certify`` entries per
    support vector of the best point (the training points outside the stage, where its
    decision values are not known), unless that point is of the ``final_stage`` (its gap is
    already over all points); ``rival`` is (score, kernel entries of its certifying product)
    of the best point of the earlier stages. The time comes from ``rate``, which this
    tracker's products feed.
    """

    # more than 10 parameters: the tracker holds what the stages share (training and validation
    # points, labels, weights, the time rate, deadline and rival); it is that bundle
    def __init__(self, Xtr, Xval, kernel, yval, wval, ytr=None, wtr=None, tol=0.0, *,
                 rate=None, deadline=None, n_certify=0, rival=None, final_stage=False):
        self.Xtr, self.Xval, self.kernel = Xtr, Xval, kernel
        self.y, self.w = yval, wval
        self.ytr, self.wtr, self.tol = ytr, wtr, tol
        self.rate = _Rate() if rate is None else rate
        self.deadline, self.n_certify = deadline, n_certify
        self.rival, self.final_stage = rival, final_stage
        self.fval = np.zeros(Xval.shape[0])
        self.last = np.zeros(Xtr.shape[0])
        self.best = None
        self.history = []

    def score(self, fval, bias):
        pred = np.where(fval + bias > 0, 1.0, -1.0)
        return float(np.average(pred == self.y, weights=self.w))

    def _product(self, coef, cols):
        t = time.perf_counter()
        out = rows_operator(self.Xtr[cols], self.kernel).cross(self.Xval) @ coef[cols]
        self.rate.add(cols.size * self.Xval.shape[0], time.perf_counter() - t)
        return out

    def decision(self, coef):
        """K(X_val, X_train) coef, from scratch (a candidate the rounds did not produce)."""
        sv = np.flatnonzero(coef)
        out = np.zeros(self.Xval.shape[0])
        if sv.size:
            out += self._product(coef, sv)
        return out

    def __call__(self, state):
        if not state.exact:  # shrunk points' f is stale: scored at the next sync
            return self._past_deadline()
        delta = state.dual_coef - self.last
        ch = np.flatnonzero(delta)
        if ch.size:
            self.fval += self._product(delta, ch)
            self.last = state.dual_coef.copy()
        bias = state.bias
        if self.ytr is not None and not state.gap < self.tol:
            bias = hinge_bias(state.f, self.ytr, self.wtr)
        s = self.score(self.fval, bias)
        self.history.append((state.elapsed, state.gap, s))
        if self.best is None or s >= self.best["score"]:
            self.best = {"score": s, "alpha": state.alpha.copy(), "bias": bias,
                         "gap": state.gap, "rounds": state.rounds, "f": state.f.copy()}
        return self._past_deadline()

    def _past_deadline(self):
        return (self.deadline is not None and self.best is not None
                and time.perf_counter() + self.reserve() >= self.deadline)

    def reserve(self):
        """Seconds the certifying product of the model now to be returned would take."""
        if self.rival is not None and self.rival[0] > self.best["score"]:
            entries = self.rival[1]  # an earlier stage's point wins (ties go to this stage)
        elif self.final_stage:
            return 0.0
        else:
            entries = self.n_certify * np.count_nonzero(self.best["alpha"])
        t = self.rate.seconds_for(entries)
        return 0.0 if t is None else t


def _gap_of(products, y, alpha, ub, known=None):
    """The exact KKT gap of a feasible ``alpha`` over all training points (one product).

    ``known``: (points, their decision values), the stage's, where the product is skipped."""
    f = np.zeros(y.size)
    skip = None
    if known is not None:
        skip = np.zeros(y.size, dtype=bool)
        skip[known[0]] = True
        f[known[0]] = known[1]
    sv = np.flatnonzero(alpha)
    products.add(f, sv, y[sv] * alpha[sv], skip)
    return float(kkt_violation(f[:, None], y[:, None], alpha[:, None],
                               ub if np.ndim(ub) == 0 else ub[:, None])[0])


def _certify_entries(candidate, n_train):
    """Kernel entries of the product that certifies a candidate's gap over all points."""
    alpha, known = candidate[2], candidate[6]
    return np.count_nonzero(alpha) * (n_train - (0 if known is None else known[0].size))


def _extend_decision(products, f, coef):
    """K coef at all of a stage's points, given ``f``, its values at the first ``f.size`` (the
    last stage's points, whose coefficients are all of ``coef``'s nonzeros): one product over
    the new points only."""
    out = np.concatenate([f, np.zeros(coef.size - f.size)])
    skip = np.zeros(coef.size, dtype=bool)
    skip[:f.size] = True
    sv = np.flatnonzero(coef)
    products.add(out, sv, coef[sv], skip)
    return out


@dataclass(frozen=True)
class ExactBackend:
    """The path protocol for the exact SVM from a subsample's exact solution.

    ``options`` (an :class:`~hsskern.ExactSVCOptions`) is handed down whole: the subsample,
    the hold-out, the stages' growth and working sets, the time shares, the subsample's
    compression and the block decomposition's group. ``settings``
    (:class:`~hsskern.options.PathSettings`) holds what the estimator resolved: ``tol``,
    ``max_time``, ``n_decades``, the seed, ``started`` and ``products``.

    ``prepare`` splits the points (validation, training, subsample) and sizes the stages
    (``growth`` times the last, up to all training points); ``path`` solves the subsample's
    whole C path with :class:`~hsskern.solvers.paths.hss_path.HSSBackend` (exact, with its
    exact solve), then each (C, class) by the decomposition through the stages within its
    share of ``max_time``; ``model`` is a :class:`~hsskern.solvers.paths.path.KernelExpansion`.

    ``settings.products`` is a factory ``products(points, kernel)`` of the engine that computes the
    decomposition's kernel products (None: :class:`~hsskern.solvers.engines.exact.LocalProducts`;
    :mod:`hsskern.distributed` passes one running on Dask workers), called once per stage
    (and once more to measure an earlier stage's model on all points); an engine with a
    ``close()`` is closed when its stage ends.
    """

    kernel: object
    options: ExactSVCOptions = ExactSVCOptions()
    settings: PathSettings = PathSettings()
    memory_budget: float = None
    log: object = None

    @property
    def hss_options(self):
        """The subsample's compression (with the seed and verbosity of ``settings``)."""
        return self.options.hss_options(self.settings.random_state, self.settings.verbose)

    def prepare(self, X, Y=None):
        """Split the points and size the stages. Under ``max_time`` the subsample is also
        sized to the time (:meth:`plan_subsample`), or a TimeBudgetError refuses the fit
        before any solve."""
        t0 = time.perf_counter()
        self.check_memory(X, 1 if Y is None else np.shape(Y)[-1])
        subsample, stats = self.options.subsample, {}
        if self.settings.max_time is not None:
            subsample, stats = self.plan_subsample(X)
        train, val, order, m = split_points(X.shape[0], self.options.validation_fraction,
                                            subsample, self.settings.random_state)
        stages = self._schedule(m, train.size)
        chunk = self.stage_chunk(X, 1 if Y is None else np.shape(Y)[-1])
        problem = ExactProblem(points=X, train=train, validation=val, order=order,
                               stages=tuple(stages),
                               stats={"n_train": int(train.size), "n_validation": int(val.size),
                                      "subsample_size": m, "stages": tuple(stages),
                                      "max_chunk": chunk, **stats},
                               timings={"split": time.perf_counter() - t0})
        return problem

    def memory_estimate(self, X, n_rhs=1, q=None):
        """The bytes a fit on X takes with working sets of at most q points (None: the
        least, min(n, 256)): the copies of the points a stage holds (each up to X's size: the
        training points', the stage's and, for dense points, its operator's
        ``_STAGE_OPERATOR_COPIES``), the decomposition's vectors per label column and its
        working set's kernel block (:func:`~.plan.block_memory`)."""
        n = X.shape[0]
        q = min(n, 256) if q is None else q
        copies = 2 + (0 if sp.issparse(X) else _STAGE_OPERATOR_COPIES)
        return (copies * rows_nbytes(X) + 8 * _STAGE_VECTORS * n * int(n_rhs)
                + block_memory(q))

    def stage_chunk(self, X, n_rhs=1):
        """The stages' working-set cap: the largest q <= ``options.max_chunk`` whose
        :meth:`memory_estimate` fits ``memory_budget`` (at least min(n, 256), which
        :meth:`check_memory` has checked)."""
        q = min(X.shape[0], int(self.options.max_chunk))
        budget = resolve_budget(self.memory_budget)
        if budget is None or self.memory_estimate(X, n_rhs, q) <= budget:
            return q
        q = max(largest_block(budget - self.memory_estimate(X, n_rhs, 0)),
                min(X.shape[0], 256))
        if self.log is not None:
            self.log(1, f"the stages' working sets capped at {q} points by "
                        f"memory_budget={format_bytes(budget)}")
        return q

    def check_memory(self, X, n_rhs=1):
        """MemoryBudgetError, with the estimate, before any work when :meth:`memory_estimate`
        exceeds ``memory_budget`` (default 80% of the available memory)."""
        n, d = X.shape
        check_memory(self.memory_estimate(X, n_rhs), f"an exact fit on {n} points x {d} "
                     "features (the copies of the points a stage holds, the decomposition's "
                     "vectors and a working set of 256 points at least)", self.memory_budget,
                     hint="fit on fewer points, or raise memory_budget")

    def _clock(self):
        """The perf_counter time the budget started at: the fit's (``started``, its
        validation included) or now."""
        return self.settings.started if self.settings.started is not None else time.perf_counter()

    def plan_subsample(self, X):
        """(subsample size, stats) under ``max_time``: the largest subsample whose solve from
        zero (~m^2 kernel entries) and whose model's certifying product over the other points
        (~m/2 support vectors by n) fit ``subsample_time_share`` of the time left (plus
        ``time_slack``), at the rate of kernel entries measured on X; a TimeBudgetError when
        not even min(n, ``min_subsample``) points do."""
        n, o, max_time = X.shape[0], self.options, self.settings.max_time
        requested = (o.subsample if isinstance(o.subsample, (int, np.integer))
                     else int(np.ceil(o.subsample * n)))
        rate = _probe_rate(X, self.kernel)
        left = max(0.0, max_time - (time.perf_counter() - self._clock()))
        entries = rate * (o.subsample_time_share * left + o.time_slack)
        # m^2 + m n / 2 <= entries
        fit = int((-0.5 * n + np.sqrt(0.25 * n * n + 4.0 * entries)) / 2.0)
        smallest = min(n, o.min_subsample)
        if fit < smallest:
            need = (smallest ** 2 + 0.5 * smallest * n) / rate
            raise TimeBudgetError(
                f"max_time={max_time:g} s cannot hold the preparation of an exact fit on "
                f"{n} points: a subsample of {smallest} points and its model's certifying "
                f"product over the others need about {need:.3g} s at the {rate:.3g} kernel "
                f"entries a second measured, and {left:.3g} s are left (validation "
                "included); raise max_time to at least "
                f"{(need - o.time_slack) / o.subsample_time_share + max_time - left:.3g}"
                " s, or fit on fewer points")
        m = max(2, min(requested, fit))
        if self.log is not None and m < requested:
            self.log(1, f"subsample of {m} points (not {requested}): what max_time="
                        f"{max_time:g} s holds at {rate:.3g} kernel entries a second")
        return m, {"probe_rate": rate, "subsample_requested": requested}

    def _schedule(self, first, n_train):
        """Stage sizes from ``first``, growing by ``growth``, to all ``n_train`` points."""
        sizes = [first]
        while sizes[-1] < n_train:
            sizes.append(min(n_train, int(np.ceil(sizes[-1] * self.options.growth))))
        return sizes

    def _fitted_schedule(self, n, n0, seconds, left, n_train):
        """The stages after one of ``n`` points that grew from ``n0`` in ``seconds``: the next
        sized to end within ``left`` seconds by the cost model above (at most ``growth`` times
        n), then growing by ``growth``; [] when not even ``min_stage_growth`` times n
        would end in time."""
        nxt = min(n_train, int(np.ceil(n * self.options.growth)))
        if n > n0 and seconds > 0:
            kappa = seconds / ((n - n0) * n)
            budget = self.options.stage_time_share * left
            smallest = min(n_train, int(np.ceil(n * self.options.min_stage_growth)))
            if kappa * (smallest - n) * smallest > budget:
                return []
            fit = 0.5 * (n + np.sqrt(n * n + 4.0 * budget / kappa))
            nxt = max(min(nxt, int(fit)), smallest)
        return self._schedule(nxt, n_train)

    def _subsample_path(self, prepared, Y, Cs, weights, deadline=None):
        """The exact solutions of the subsample at every C (the HSS path, refined; under a
        ``deadline``, the exact decomposition from zero stopped by it)."""
        X = prepared.points[prepared.train[prepared.order[:prepared.stages[0]]]]
        if deadline is not None:
            return self._subsample_timed(X, Y, Cs, weights, deadline)
        # start="auto": up to 10^5 points the exact decomposition from zero beats compression
        hss = HSSBackend.of_compression(
            self.kernel, self.hss_options, memory_budget=self.memory_budget, log=self.log,
            settings=dict(tol=self.settings.tol, n_decades=self.settings.n_decades),
            solve_exact=True, start="auto", max_chunk=self.options.max_chunk,
            decomposition=self.options.decomposition)
        prob = hss.prepare(X, Y)
        sols = hss.path(prob, Y, Cs, weights)
        setup = sum(prob.timings.values())
        return sols, setup

    def _subsample_timed(self, X, Y, Cs, weights, deadline):
        """The subsample's C path by the exact decomposition from zero (continuation along
        C), each (C, class) with its share of the time to ``deadline``: a feasible point
        with its exact gap where the time runs out (the stages start from it all the same)."""
        t0 = time.perf_counter()
        prob = prepare_decomposition(X, self.kernel, max_chunk=self.options.max_chunk,
                                     n_rhs=Y.shape[1], memory_budget=self.memory_budget,
                                     log=self.log)
        q = decomposition_chunk(prob, True, self.options.max_chunk)
        setup = time.perf_counter() - t0
        sols, prev = [], None
        engine = BlockEngine(replace(self.options.decomposition, max_chunk=q))
        pairs = len(Cs) * Y.shape[1]
        for C in Cs:
            tc, out = time.perf_counter(), []
            for j in range(Y.shape[1]):
                a = f = None
                if prev is not None:
                    _, a, f = continuation_start(prev[1][j], C / prev[0], ray=False)
                left = max(deadline - time.perf_counter(), 0.0) / pairs
                pairs -= 1
                out.append(engine.solve(DualProblem(prob.K, Y[:, j], weights=weights), C,
                                        DualStart(a, f), tol=self.settings.tol,
                                        max_time=left))
            prev = (C, out)
            sols.append(PathSolution(C=C, intercept=[rr.bias for rr in out],
                                     n_iter=[rr.rounds for rr in out],
                                     converged=[rr.converged for rr in out],
                                     gap=[rr.gap for rr in out],
                                     dual_coef=np.column_stack([rr.dual_coef for rr in out]),
                                     timings={"exact": time.perf_counter() - tc}))
        return tuple(sols), setup

    def path(self, prepared, Y, Cs, weights=None):
        t0 = self._clock() if self.settings.max_time is not None else time.perf_counter()
        n = prepared.points.shape[0]
        Y = check_labels(Y, n)
        Cs = check_Cs(Cs)
        weights = check_weights(weights, n)
        tr, val = prepared.train, prepared.validation
        sub = prepared.order[:prepared.stages[0]]
        Ytr = Y[tr]
        wtr = None if weights is None else weights[tr]
        r = Y.shape[1]
        log = self.log
        if log is not None:
            log(1, f"exact SVM: {tr.size} training points, {val.size} validation, "
                   f"subsample of {sub.size}")
        deadline = None
        # its share of the time left, or the slack at least (a subsample of at most
        # min_subsample points, too little work to stop, is solved to the end)
        if self.settings.max_time is not None and sub.size > self.options.min_subsample:
            left = max(0.0, self.settings.max_time - (time.perf_counter() - t0))
            deadline = time.perf_counter() + max(self.options.subsample_time_share * left,
                                                 self.options.time_slack)
        sub_sols, sub_setup = self._subsample_path(
            prepared, Ytr[sub], Cs, None if wtr is None else wtr[sub], deadline)
        t_sub = time.perf_counter() - t0
        if log is not None:
            log(1, f"subsample solved at {len(Cs)} C in {t_sub:.1f} s")
        Xtr = prepared.points[tr]
        solutions, prev = [], [None] * r
        workspace = {}
        pairs_left = len(Cs) * r
        for C, ssol in zip(Cs, sub_sols):
            tc = time.perf_counter()
            coef = np.zeros((n, r))
            bias, conv, gap = np.zeros(r), np.zeros(r, bool), np.zeros(r)
            selected, history, results = [], [], []
            for j in range(r):
                budget = None
                if self.settings.max_time is not None:
                    budget = max(0.0, (self.settings.max_time - (time.perf_counter() - t0))
                                 / pairs_left)
                pairs_left -= 1
                if len(prepared.stages) == 1:  # the subsample is every training point
                    out = self._subsample_only(ssol, j, Ytr[:, j])
                else:
                    out = self._solve_column(prepared, Xtr, Ytr[:, j], Y[val, j], C, ssol,
                                             j, wtr, weights, prev[j], budget, workspace)
                rr, a, b, g, sel, hist = out
                prev[j] = (C, rr)
                coef[tr, j] = Ytr[:, j] * a
                bias[j], conv[j], gap[j] = b, sel == "exact", g
                selected.append(sel)
                history.append(hist)
                results.append(rr)
            timings = {"decomposition": time.perf_counter() - tc,
                       "subsample": t_sub if not solutions else 0.0}
            info = {"selected": tuple(selected), "history": tuple(history),
                    "exact": tuple(results), "subsample_gap": tuple(ssol.gap),
                    "subsample_time": t_sub, "subsample_setup": sub_setup}
            solutions.append(PathSolution(C=C, intercept=bias,
                                          n_iter=[rr.rounds for rr in results],
                                          converged=conv, gap=gap, dual_coef=coef,
                                          timings=timings, info=info))
            if log is not None:
                log(1, f"C={C:g}: " + ", ".join(
                    f"class {j}: {s} (gap {g:.3g}, {rr.rounds} rounds)"
                    for j, (s, g, rr) in enumerate(zip(selected, gap, results)))
                    + f", {time.perf_counter() - tc:.1f} s")
        return tuple(solutions)

    @staticmethod
    def _subsample_only(ssol, j, y):
        """The subsample's exact solution when it holds every training point."""
        coef = ssol.dual_coef[:, j]
        rr = ExactResult(alpha=y * coef, dual_coef=coef, bias=float(ssol.intercept[j]),
                          decision=None, converged=bool(ssol.converged[j]),
                          gap=float(ssol.gap[j]))
        return rr, rr.alpha, rr.bias, rr.gap, "exact" if rr.converged else "last", ()

    def _stage_products(self, op):
        """The decomposition's products on a stage's points (``op``, their kernel operator):
        the settings' factory's, else local ones through ``op`` itself, so the stage holds
        its points and their centred and float32 copies once."""
        if self.settings.products is None:
            return LocalProducts(op.points, self.kernel, op)
        return self.settings.products(op.points, self.kernel)

    # more than 10 parameters: one (C, class) of a staged fit reads the stage's problem (prepared, Xtr,
    # y, weights), its validation points (yval, ssol) and the path's state (prev, budget,
    # workspace) by name; bundling them would only rename the same facts
    def _solve_column(self, prepared, Xtr, y, yval, C, ssol, j, wtr, weights, prev, budget,
                      workspace):
        """One (C, class) through the stages: (result, alpha, bias, gap, selected, history);
        alpha on the training points, gap over all of them. Under a budget each stage after
        a finished one is sized to end in the time left (:meth:`_fitted_schedule`)."""
        t0 = time.perf_counter()
        tr, val, order = prepared.train, prepared.validation, prepared.order
        sizes = list(prepared.stages)
        ub = C if wtr is None else C * wtr
        sub = order[:sizes[0]]
        sub_coef = np.zeros(tr.size)
        sub_coef[sub] = ssol.dual_coef[:, j]  # the subsample's exact solution (stage 0)
        sub_bias = float(ssol.intercept[j])
        if prev is None:  # stage 0 is solved: the next starts from its solution, padded
            start, f = (y * sub_coef)[sub], None
        else:  # the previous C's last point, scaled: feasible, its decision values known,
            C_prev, pr = prev  # first on the points it had
            _, start, f = continuation_start(pr, C / C_prev, ray=False)
            sizes = sizes[:1] + self._schedule(start.size, tr.size)
        candidates, history = [], []
        # the budget holds the stages and, when an earlier stage's point wins, the product
        # that certifies it over all training points (its time estimated by the trackers)
        deadline = None if budget is None else t0 + budget
        rate = _Rate()
        if "probe_rate" in prepared.stats:  # the plan's measurement, until rounds measure
            rate.add(_RATE_MIN_ENTRIES, _RATE_MIN_ENTRIES / prepared.stats["probe_rate"])
        if val.size:
            Xval = prepared.points[val]
            wval = None if weights is None else weights[val]
            probe = _ValidationTracker(Xtr, Xval, self.kernel, yval, wval, rate=rate)
            # (score, stage, alpha, bias, label, gap over the stage's points or None,
            # (the stage's points, their decision values) or None)
            candidates.append((probe.score(probe.decision(sub_coef), sub_bias), 0,
                               y * sub_coef, sub_bias, "subsample", None, None))
        k, rr = 0, None
        chunk = prepared.stats["max_chunk"]  # the stages' working sets: the cap from the start
        stage_options = replace(self.options.decomposition, max_chunk=chunk, max_ws=chunk,
                                sub_tol=self.options.stage_sub_tol)
        while k + 1 < len(sizes):  # the sizes after a finished stage may be re-planned
            k += 1
            pts = order[:sizes[k]]
            ts, n0 = time.perf_counter(), start.size
            if start.size < pts.size:  # the last stage's point, padded with zeros
                start = np.concatenate([start, np.zeros(pts.size - start.size)])
            tracker = None
            if val.size:
                top = max(candidates, key=lambda c: (c[0], c[1]))
                tracker = _ValidationTracker(
                    Xtr[pts], Xval, self.kernel, yval, wval, y[pts],
                    None if wtr is None else wtr[pts], self.settings.tol, rate=rate,
                    deadline=deadline,
                    n_certify=tr.size - pts.size, rival=(top[0], _certify_entries(top, tr.size)),
                    final_stage=k == len(sizes) - 1)
            log = None if self.log is None else (
                lambda line, n_k=pts.size: self.log(1, f"C={C:g} class {j}, {n_k} points:{line}"))
            remaining = None  # the rounds end before the certifying product's share
            if budget is not None:
                remaining = max(0.0, budget - (time.perf_counter() - t0)
                                - _certify_seconds(rate, tr.size - pts.size, start))
            op = rows_operator(Xtr[pts], self.kernel)
            engine = self._stage_products(op)
            offset = time.perf_counter() - t0
            try:
                if f is not None and f.size < pts.size:  # the last stage's decision values:
                    f = _extend_decision(engine, f, y[pts] * start)  # only the new points'
                stage = DualProblem(op, y[pts], weights=None if wtr is None else wtr[pts])
                rr = BlockEngine(stage_options, products=engine, log=log,
                                 workspace=workspace).solve(
                    stage, C, DualStart(start, f), tol=self.settings.tol, max_time=remaining,
                    callback=tracker)
            finally:
                if hasattr(engine, "close"):
                    engine.close()
            if tracker is not None:
                history += [(offset + t, pts.size, g, sc) for t, g, sc in tracker.history]
                b = tracker.best
                alpha = np.zeros(tr.size)
                alpha[pts] = b["alpha"]
                candidates.append((b["score"], k, alpha, b["bias"],
                                   f"{pts.size} points, round {b['rounds']}", b["gap"],
                                   (pts, b["f"])))
            if not rr.converged:
                break
            start, f = rr.alpha, rr.decision - rr.bias
            if deadline is not None and k + 1 < len(sizes):
                # what is left once the next model's certifying product is set aside
                cert = _certify_seconds(rate, tr.size - pts.size, start)
                plan = self._fitted_schedule(pts.size, n0, time.perf_counter() - ts,
                                             deadline - time.perf_counter() - cert, tr.size)
                if not plan:  # no stage would end in time: this one's model is the answer
                    break
                sizes = sizes[:k + 1] + plan
        last = len(sizes) - 1
        if rr.converged and k == last:  # LIBSVM's exact SVM of the training points
            alpha = np.empty(tr.size)
            alpha[order] = rr.alpha  # the stage holds the points in the order of ``order``
            return rr, alpha, rr.bias, rr.gap, "exact", tuple(history)
        pts = order[:sizes[k]]
        alpha, bias, gap, label = self._best_model(Xtr, y, wtr, ub, rr, pts, k, last,
                                                   candidates)
        return rr, alpha, bias, gap, label, tuple(history)

    def _best_model(self, Xtr, y, wtr, ub, rr, pts, k, last, candidates):
        """(alpha, bias, gap over all training points, label) of the stages' best model on
        the validation points (without them: stage ``k``'s point ``rr`` on ``pts``); ``last``
        is the last stage's index, whose gap is already over all training points."""
        if candidates:
            _, kc, alpha, bias, label, gap, known = max(candidates, key=lambda c: (c[0], c[1]))
        else:  # no validation points: the last point
            kc, alpha, bias, label = k, np.zeros(y.size), rr.bias, "last"
            alpha[pts] = rr.alpha
            known = (pts, rr.decision - rr.bias)
            if not rr.converged:  # the best offset of an unfinished point (see hinge_bias)
                bias = hinge_bias(known[1], y[pts], None if wtr is None else wtr[pts])
            gap = rr.gap
        # a model of an earlier stage is a feasible point of the full dual: one product over
        # the points outside its stage measures its gap over all training points
        if kc != last:
            engine = (self.settings.products or LocalProducts)(Xtr, self.kernel)
            try:
                gap = _gap_of(engine, y, alpha, ub, known)
            finally:
                if hasattr(engine, "close"):
                    engine.close()
        return alpha, bias, gap, label

    def model(self, prepared, solutions):
        return KernelExpansion(prepared.points, self.kernel, solutions)
