"""``python -m hsskern demo``: HSSSVC's C path on the bundled ijcnn1, told as it runs.

It prints the route the fit took (the exact decomposition from zero, or HSS compression +
ULV factor + ADMM and then the exact decomposition: ``hss_["start"]``) and the engine of its
exact solves, only the phases that ran, a line per C as that C finishes (HSSSVC's
``verbose=1`` lines, reformatted), the C chosen on held-out points, the refit at that C on
all training points started from the path's solution, and the grid's time next to
scikit-learn's SVC on the same grid.

ijcnn1 ships already scaled to [-1, 1] by LIBSVM, so no further standardization is applied.
"""
import contextlib
import io
import re
import sys
import time

import numpy as np

from .utils._memory import format_bytes
from hsskern import HSSSVCOptions

_PREFIX = "[HSSSVC] "
_C_LINE = re.compile(r"C=([^:]+): (.*)")


def _say(msg=""):
    print(msg, flush=True)


class _PathLines(io.TextIOBase):
    """Where HSSSVC's ``verbose=1`` lines go during the path: each finished C becomes one
    line of the demo's (without an ADMM iteration count where no ADMM ran), the route line
    is kept, anything else passes through indented."""

    def __init__(self, out):
        self.out, self.buf, self.t0, self.n_done = out, "", time.perf_counter(), 0

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self._line(line)
        return len(s)

    def _line(self, line):
        if not line.startswith(_PREFIX):
            self.out.write(line + "\n")
            return
        msg = line[len(_PREFIX):]
        m = _C_LINE.fullmatch(msg)
        if m is None:
            self.out.write(f"  {msg}\n")
        else:
            fields = [f.strip() for f in m.group(2).split(",")]
            seconds = fields.pop() if fields and fields[-1].endswith(" s") else ""
            fields = [f for f in fields if f != "0 ADMM iterations"]
            self.n_done += 1
            self.out.write(f"  C={float(m.group(1)):<9.3g} {seconds:>8}   {', '.join(fields)}"
                           f"   [{time.perf_counter() - self.t0:.1f} s]\n")
        self.out.flush()


_ENGINES = {"cached": "the single-fit engine (LIBSVM's SMO, kernel rows from a cache)",
            "block": "the block decomposition (working sets on their dense kernel block)"}


def _engine(stats):
    """The engine of an exact fit from zero: its plan's (``stats["plan"]``)."""
    return (stats.get("plan") or {}).get("engine", "block")


def _route(stats, start, n, d):
    why = (f"start='auto' chose it at n = {n}" if start == "auto"
           else f"start={start!r}")
    if stats.get("start") == "decomposition":
        return (f"the exact decomposition from alpha = 0 ({why}) on "
                f"{_ENGINES[_engine(stats)]}: no compression, no factor, no ADMM")
    approx = "HSS compression of K" if stats.get("approximation") == "hss" else "dense K"
    return (f"{approx}, ULV factor of K + beta I, dual ADMM at the first C, then the exact "
            f"decomposition from the ADMM's point ({why})")


def _phases(models):
    """The phases that ran, from ``fit_time_`` (the first model holds the preparation):
    (preparation, solving, memory) as lists of "name seconds" / "name bytes"."""
    first = models[0]
    stats, ft = first.hss_, first.fit_time_
    decomposition = stats.get("start") == "decomposition"
    names = (("kernel", "kernel operator"),) if decomposition else (
        ("kernel", "kernel operator"), ("compress", "HSS compression"), ("factor", "ULV factor"))
    prep = [f"{label} {ft[k]:.3g} s" for k, label in names if ft.get(k, 0.0) > 0.0]
    solve = []
    if not decomposition:
        solve.append(f"ADMM (first C) {ft.get('admm', 0.0) + ft.get('refactor', 0.0):.3g} s")
    # the exact solve: "exact" after the ADMM, "smo" / "decomposition" from zero or from
    # the previous C
    solve_exact = sum(m.fit_time_.get(k, 0.0) for m in models
                 for k in ("exact", "smo", "decomposition"))
    if solve_exact > 0.0:
        solve.append(f"exact decomposition {solve_exact:.3g} s")
    mem = []
    if stats.get("approximation") is not None and stats.get("memory_bytes"):
        mem.append(f"approximation {format_bytes(stats['memory_bytes'])}"
                   + (f" (max rank {stats['max_rank']})" if "max_rank" in stats else ""))
    if stats.get("factor_memory_bytes"):
        mem.append(f"factor {format_bytes(stats['factor_memory_bytes'])}")
    if stats.get("stored_kernel"):
        mem.append(f"stored kernel {format_bytes(stats['memory_bytes'])}")
    return prep, solve, mem


def _subsample(rng, X, y, n):
    if n is None or n >= len(y):
        return X, y
    i = np.sort(rng.choice(len(y), n, replace=False))
    return X[i], y[i]


def _svc_grid(X, y, Cs, gamma):
    """Seconds of scikit-learn's SVC over the grid (a fit per C: it has no path)."""
    from sklearn.svm import SVC
    t0 = time.perf_counter()
    for C in Cs:
        SVC(C=C, gamma=gamma).fit(X, y)
    return time.perf_counter() - t0


def _refit(X, y, fit, held, model, h):
    """The chosen C solved again on every training point (the fit and the held-out ones),
    started from the path's solution on the fit points padded with zeros (a feasible point
    of the larger dual), and once from zero for comparison: the seconds and pair steps of
    both, and the warm-started solution's decision function."""
    from .kernels import kernel_operator, make_kernel
    from .solvers.engines.interface import BlockEngine, CachedEngine, DualProblem, DualStart
    order = np.concatenate([fit, held])
    Xa = X[order]
    ya = np.where(y[order] == model.classes_[1], 1.0, -1.0)
    alpha = np.zeros(len(order))
    alpha[model.support_] = np.abs(model.dual_coef_[0])  # support_ indexes the fit points
    kernel = make_kernel("gaussian", h=h)
    K = kernel_operator(Xa, kernel)
    engine = _engine(model.hss_) if model.hss_.get("start") == "decomposition" \
        else "block"
    runs = {}
    for name, start in (("warm", alpha), ("cold", None)):
        t0 = time.perf_counter()
        solver = CachedEngine() if engine == "cached" else BlockEngine()
        res = solver.solve(DualProblem(K, ya), model.C, DualStart(start), tol=1e-3)
        runs[name] = (time.perf_counter() - t0, int(np.sum(res.smo_iters)), res)
    res = runs["warm"][2]
    sv = np.flatnonzero(res.alpha)
    K_sv = kernel_operator(Xa[sv], kernel)

    def decision(Z):
        return np.asarray(K_sv.cross(Z) @ res.dual_coef[sv]).ravel() + res.bias

    return runs, decision, len(order), len(sv)


def run_demo(Cs=None, h=1.0, n_train=20000, n_test=20000, svc_n=4000, start="auto",
             random_state=0):
    """HSSSVC's C path on (a subsample of) ijcnn1, C chosen on a held-out 20%.

    Parameters
    ----------
    Cs : sequence of float, default ``np.logspace(-2, 3, 10)``
    h : float, default 1.0
        Gaussian width, exp(-|x - y|^2 / (2 h^2)) (SVC's gamma = 1 / (2 h^2)).
    n_train : int or None, default 20000
        Training subsample (None: all 49,990 points); 80% fit the path, 20% choose C.
    n_test : int or None, default 20000
        Test subsample (None: all 91,701 points).
    svc_n : int, default 4000
        Points of the fit split on which the grid is timed against SVC (0: not compared).
    start : {"auto", "admm", "decomposition"}, default "auto"
        HSSSVC's ``start``: the route to the first C.
    random_state : int

    Returns
    -------
    int
        0 (a process exit status).
    """
    t_start = time.perf_counter()
    _say("hsskern demo: HSSSVC's C path on the bundled ijcnn1, C chosen on held-out points")
    from .datasets import load
    from .estimators.hss_svc import HSSSVC

    Cs = np.logspace(-2, 3, 10) if Cs is None else np.asarray(Cs, dtype=float)
    X, y, Xte, yte = load("ijcnn1")
    n_all = len(y)
    rng = np.random.default_rng(random_state)
    X, y = _subsample(rng, X, y, n_train)
    Xte, yte = _subsample(rng, Xte, yte, n_test)
    perm = rng.permutation(len(y))
    n_fit = int(round(0.8 * len(y)))
    fit, held = perm[:n_fit], perm[n_fit:]
    sub = ("" if len(y) == n_all else
           f" (a random {len(y)} of its {n_all}, to keep the demo within a minute)")
    _say(f"data: {len(y)} training points{sub}: {n_fit} fit the C path, {len(held)} are held "
         f"out to choose C; {len(yte)} test points; {X.shape[1]} features, Gaussian h={h:g}")
    _say(f"C path, {len(Cs)} values {Cs.min():g} ... {Cs.max():g}, a line as each C finishes "
         "(its time, then what the solver reports):")
    est = HSSSVC(h=h, C=float(Cs[0]),
                 options=HSSSVCOptions(start=start), verbose=1, random_state=random_state)
    t0 = time.perf_counter()
    lines = _PathLines(sys.stdout)
    with contextlib.redirect_stdout(lines):
        models = est.fit_path(X[fit], y[fit], Cs)
    t_path = time.perf_counter() - t0
    first = models[0]
    _say(f"route: {_route(first.hss_, start, *first.shape_fit_)}")
    prep, solve, mem = _phases(models)
    _say(f"path: {t_path:.2f} s in all; prepared once: {', '.join(prep)}; the {len(Cs)} C: "
         + ", ".join(solve))
    if mem:
        _say(f"  memory: {', '.join(mem)}")
    t0 = time.perf_counter()
    scores = [m.score(X[held], y[held]) for m in models]
    best = int(np.argmax(scores))
    _say(f"held-out accuracy per C (scored in {time.perf_counter() - t0:.2f} s):")
    for m, s in zip(models, scores):
        _say(f"  C={m.C:<9.3g} {100 * s:6.2f}%  {int(np.sum(m.n_support_)):6d} support vectors"
             + ("  <- chosen" if m is models[best] else ""))
    chosen = models[best]
    _say(f"the path's model at C={chosen.C:.3g} (trained on the {n_fit} fit points): test "
         f"accuracy {100 * chosen.score(Xte, yte):.2f}%")
    runs, decision, n_all_fit, n_sv = _refit(X, y, fit, held, chosen, h)
    (tw, sw, res), (tc, sc, _) = runs["warm"], runs["cold"]
    pred = np.where(decision(Xte) > 0, chosen.classes_[1], chosen.classes_[0])
    _say(f"refit at C={chosen.C:.3g} on all {n_all_fit} training points, started from the "
         f"path's solution: {tw:.2f} s, {sw} SMO steps, gap {float(res.gap):.3g}, {n_sv} "
         f"support vectors, test accuracy {100 * np.mean(pred == yte):.2f}% (from zero: "
         f"{tc:.2f} s, {sc} steps)")
    if svc_n:
        _compare_svc(X[fit], y[fit], Cs, h, svc_n, rng, random_state)
    _say(f"demo: {time.perf_counter() - t_start:.1f} s in all")
    return 0


def _seconds(t):
    # milliseconds stay visible: a small grid takes a few of them
    return f"{t:.2f}" if t >= 0.1 else f"{t:.4f}"


def _compare_svc(X, y, Cs, h, n, rng, random_state):
    from .estimators.hss_svc import HSSSVC
    Xs, ys = _subsample(rng, X, y, n)
    t0 = time.perf_counter()
    HSSSVC(h=h, random_state=random_state).fit_path(Xs, ys, Cs)
    ours = time.perf_counter() - t0
    svc = _svc_grid(Xs, ys, Cs, 1.0 / (2 * h * h))
    _say(f"the same {len(Cs)}-value grid on {len(ys)} of these points, measured now: hsskern "
         f"{_seconds(ours)} s, scikit-learn SVC (LIBSVM, a fit per C) {_seconds(svc)} s "
         f"(SVC / hsskern = {svc / ours:.1f}x)."
         " At full size: python -m bench c_grid --data ijcnn1 --peers onedal libsvm")
