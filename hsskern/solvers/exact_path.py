"""The exact SVM at any n, anytime: a subsample's exact solution, then the decomposition on all
points under a time budget.

At large n the exact decomposition (:func:`~hsskern.solvers.refine.refine_exact`) costs one
n x |changed| kernel product per round, and an HSS compression of all n points (the HSS
path's start) is what the machine cannot afford. A random subsample of m points is cheap
to solve exactly (the HSS path with its refinement), and its solution padded with zeros is a
*feasible* point of the full dual: the decomposition starts there, every round keeps the
point feasible and its exact KKT gap over all n points known. So the solver can stop at any
round and say exactly how far from LIBSVM's answer it is.

When it stops before converging (``max_time``), the model returned is the best, on held-out
validation points (a ``validation_fraction`` of the data, trained on by neither), among the
subsample's own model and every round's point: never worse there than subsampling. Each
round's validation decision values cost n_val x |changed| entries, updated from the
coefficients that changed. A converged decomposition returns the exact SVM of the training
points, whatever the validation says (that is what was asked for; choosing C is
cross-validation's job).

Along a C path the last point of the previous C, scaled by C'/C, starts the next (feasible,
its decision values scaled: no kernel product), as in the HSS path.
"""
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state

from ..kernels.operator import KernelOperator
from ..options import HSSOptions
from .admm import kkt_violation
from .hss_path import HSSBackend
from .path import (KernelExpansion, PathSolution, PreparedProblem, check_Cs, check_labels,
                   check_weights)
from .refine import LocalProducts, refine_exact

__all__ = ["ExactBackend", "ExactProblem", "split_points"]

_NO_ROUND_LIMIT = 10 ** 9  # the time budget bounds the rounds; a round without change ends them


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
    subsample : ndarray of int
        Positions in ``train`` of the subsample solved first.
    """

    points: np.ndarray
    train: np.ndarray
    validation: np.ndarray
    subsample: np.ndarray
    stats: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)


def split_points(n, validation_fraction, subsample, random_state):
    """(train, validation, subsample positions in train) for n points, drawn with one
    generator: the same ``random_state`` gives the same split."""
    rng = check_random_state(random_state)
    perm = rng.permutation(n)
    n_val = int(np.floor(validation_fraction * n))
    n_val = min(n_val, n - 2)  # the training part keeps two points at least
    val, train = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    m = subsample if isinstance(subsample, (int, np.integer)) else int(np.ceil(subsample * n))
    m = int(min(max(m, 2), train.size))
    sub = np.sort(rng.permutation(train.size)[:m])
    return train, val, sub


class _ValidationTracker:
    """Scores every round's point on the validation points; keeps the best one seen.

    The validation decision values follow the coefficients that changed since the last call
    (n_val x |changed| kernel entries a round). Ties go to the later point (more exact).
    """

    def __init__(self, Xtr, Xval, kernel, yval, wval):
        self.Xtr, self.Xval, self.kernel = Xtr, Xval, kernel
        self.y, self.w = yval, wval
        self.fval = np.zeros(Xval.shape[0])
        self.last = np.zeros(Xtr.shape[0])
        self.best = None
        self.history = []

    def score(self, fval, bias):
        pred = np.where(fval + bias > 0, 1.0, -1.0)
        return float(np.average(pred == self.y, weights=self.w))

    def decision(self, coef):
        """K(X_val, X_train) coef, from scratch (a candidate the rounds did not produce)."""
        sv = np.flatnonzero(coef)
        out = np.zeros(self.Xval.shape[0])
        if sv.size:
            out += KernelOperator(self.Xtr[sv], self.kernel).cross(self.Xval) @ coef[sv]
        return out

    def __call__(self, state):
        delta = state.dual_coef - self.last
        ch = np.flatnonzero(delta)
        if ch.size:
            self.fval += (KernelOperator(self.Xtr[ch], self.kernel).cross(self.Xval)
                          @ delta[ch])
            self.last = state.dual_coef.copy()
        s = self.score(self.fval, state.bias)
        self.history.append((state.elapsed, state.gap, s))
        if self.best is None or s >= self.best["score"]:
            self.best = {"score": s, "alpha": state.alpha.copy(), "bias": state.bias,
                         "gap": state.gap, "rounds": state.rounds}
        return False


def _gap_of(products, y, alpha, ub):
    """The exact KKT gap of a feasible ``alpha`` over all training points (one product)."""
    f = np.zeros(y.size)
    sv = np.flatnonzero(alpha)
    products.add(f, sv, y[sv] * alpha[sv])
    return float(kkt_violation(f[:, None], y[:, None], alpha[:, None],
                               ub if np.ndim(ub) == 0 else ub[:, None])[0])


@dataclass(frozen=True)
class ExactBackend:
    """The path protocol for the exact SVM from a subsample's exact solution.

    ``prepare`` splits the points (validation, training, subsample); ``path`` solves the
    subsample's whole C path with :class:`~hsskern.solvers.hss_path.HSSBackend` (exact, with
    its refinement), then each (C, class) by the decomposition on all training points within
    its share of ``max_time``; ``model`` is a
    :class:`~hsskern.solvers.path.KernelExpansion`.

    ``products`` is a factory ``products(points, kernel)`` of the engine that computes the
    decomposition's kernel products (None: :class:`~hsskern.solvers.refine.LocalProducts`;
    :mod:`hsskern.distributed` passes one running on Dask workers); an engine with a
    ``close()`` is closed at the end of ``path``.
    """

    kernel: object
    subsample: object = 50000
    validation_fraction: float = 0.02
    max_time: float = None
    tol: float = 1e-3
    hss_options: HSSOptions = field(default_factory=HSSOptions)
    max_chunk: int = 16000
    newton: bool = True
    continuation: int = 0
    memory_budget: float = None
    random_state: object = None
    products: object = None
    log: object = None

    def prepare(self, X, Y=None):
        t0 = time.perf_counter()
        train, val, sub = split_points(X.shape[0], self.validation_fraction, self.subsample,
                                       self.random_state)
        problem = ExactProblem(points=X, train=train, validation=val, subsample=sub,
                               stats={"n_train": int(train.size), "n_validation": int(val.size),
                                      "subsample_size": int(sub.size)},
                               timings={"split": time.perf_counter() - t0})
        return problem

    def _subsample_path(self, prepared, Y, Cs, weights):
        """The exact solutions of the subsample at every C (HSS path + its refinement)."""
        X = prepared.points[prepared.train[prepared.subsample]]
        hss = HSSBackend(self.kernel, hss_options=self.hss_options, refine=True,
                         refine_tol=self.tol, max_chunk=self.max_chunk, newton=self.newton,
                         continuation=self.continuation, memory_budget=self.memory_budget,
                         log=self.log)
        prob = hss.prepare(X, Y)
        sols = hss.path(prob, Y, Cs, weights)
        setup = sum(prob.timings.values())
        return sols, setup

    def path(self, prepared, Y, Cs, weights=None):
        t0 = time.perf_counter()
        n = prepared.points.shape[0]
        Y = check_labels(Y, n)
        Cs = check_Cs(Cs)
        weights = check_weights(weights, n)
        tr, val, sub = prepared.train, prepared.validation, prepared.subsample
        Ytr = Y[tr]
        wtr = None if weights is None else weights[tr]
        r = Y.shape[1]
        log = self.log
        if log is not None:
            log(1, f"exact SVM: {tr.size} training points, {val.size} validation, "
                   f"subsample of {sub.size}")
        sub_sols, sub_setup = self._subsample_path(
            prepared, Ytr[sub], Cs, None if wtr is None else wtr[sub])
        t_sub = time.perf_counter() - t0
        if log is not None:
            log(1, f"subsample solved at {len(Cs)} C in {t_sub:.1f} s")
        Xtr = prepared.points[tr]
        Ktr = KernelOperator(Xtr, self.kernel)
        engine = (self.products or LocalProducts)(Xtr, self.kernel)
        solutions, prev = [], [None] * r
        workspace = {}
        try:
            pairs_left = len(Cs) * r
            for C, ssol in zip(Cs, sub_sols):
                tc = time.perf_counter()
                coef = np.zeros((n, r))
                bias, conv, gap = np.zeros(r), np.zeros(r, bool), np.zeros(r)
                selected, history, results = [], [], []
                for j in range(r):
                    budget = None
                    if self.max_time is not None:
                        budget = max(0.0, (self.max_time - (time.perf_counter() - t0))
                                     / pairs_left)
                    pairs_left -= 1
                    out = self._solve_column(prepared, engine, Ktr, Xtr, Ytr[:, j],
                                             Y[val, j], C, ssol, j, wtr, weights, prev[j],
                                             budget, workspace)
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
                        "refinement": tuple(results), "subsample_gap": tuple(ssol.gap),
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
        finally:
            if hasattr(engine, "close"):
                engine.close()
        return tuple(solutions)

    def _solve_column(self, prepared, engine, Ktr, Xtr, y, yval, C, ssol, j, wtr, weights,
                      prev, budget, workspace):
        """One (C, class): (result, alpha, bias, gap, selected, history)."""
        tr, val, sub = prepared.train, prepared.validation, prepared.subsample
        ub = C if wtr is None else C * wtr
        sub_alpha = np.zeros(tr.size)
        sub_alpha[sub] = y[sub] * ssol.dual_coef[:, j]
        sub_bias = float(ssol.intercept[j])
        if prev is None:
            start, f = sub_alpha, None
        else:  # the previous C's last point, scaled: feasible, its decision values known
            C_prev, pr = prev
            s = C / C_prev
            start, f = s * pr.alpha, s * (pr.decision - pr.bias)
        tracker = None
        if val.size:
            wval = None if weights is None else weights[val]
            tracker = _ValidationTracker(Xtr, prepared.points[val], self.kernel, yval, wval)
        log = None if self.log is None else (lambda line: self.log(1, f"C={C:g} class {j}:"
                                                                   f"{line}"))
        rr = refine_exact(Ktr, y, C, start, weights=wtr, f=f, tol=self.tol,
                          max_chunk=self.max_chunk, newton=self.newton, log=log,
                          max_rounds=_NO_ROUND_LIMIT,
                          workspace=workspace, products=engine, max_time=budget,
                          callback=tracker)
        history = () if tracker is None else tuple(tracker.history)
        if rr.converged or tracker is None:
            return rr, rr.alpha, rr.bias, rr.gap, "exact" if rr.converged else "last", history
        best = tracker.best
        sub_score = tracker.score(tracker.decision(y * sub_alpha), sub_bias)
        if sub_score > best["score"]:
            # started there, the first round saw its gap; else one product measures it
            gap = history[0][1] if prev is None else _gap_of(engine, y, sub_alpha, ub)
            return rr, sub_alpha, sub_bias, gap, "subsample", history
        return rr, best["alpha"], best["bias"], best["gap"], f"round {best['rounds']}", history

    def model(self, prepared, solutions):
        return KernelExpansion(prepared.points, self.kernel, solutions)
