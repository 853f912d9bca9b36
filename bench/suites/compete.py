"""One fit beside CPU-bound processes: the default threads against one thread.

    python -m bench compete                          # ijcnn1, C = 1, 11 pairs
    python -m bench compete --data credit_default --C 1 100 --repeat 21
    python -m bench compete --late 0.2                 # competitors arrive mid-fit

Issue 62's target: with a core taken by another process, the default fit is no slower than
the same fit on one thread. The competitors (``--competitors`` processes running
``while True: pass``; default: one less than the cores) start before the first fit and are
stopped after the last; with ``--late`` each fit starts its own that many seconds into the
fit (after the plan has seen an idle machine) and stops them when it ends. Each repeat fits
both variants, each in a fresh process, in alternating order, so that a drift in the
machine's speed falls on both:

* ``default``: the fit as a user runs it;
* ``one_thread``: the same with ``OMP_NUM_THREADS=1`` in its environment, which OpenMP and
  OpenBLAS both read when they load;
* ``one_blas_thread`` (on request, ``--variants``): ``OPENBLAS_NUM_THREADS=1`` only, OpenMP
  left at every core: which of the two runtimes a difference comes from.

Each record holds the variant's median time over the repeats, its CPU seconds (``cpu_times``)
and the plan's threads where the estimator records them (``plan_threads``: 1 where the plan
saw the other core taken). The case adds, per variant, the paired ratios ``variant /
default`` of each repeat (> 1: the default is faster), their median and a distribution-free
95 % interval for that median (order statistics). Fresh processes under such a load spread
by 20 % and more, so a difference of a few percent needs the interval, not two medians.
"""
import os
import subprocess
import sys
import threading
import time

import numpy as np

from bench.harness import DataSpec, describe, load_data

DESCRIPTION = "a fit beside CPU-bound processes: default threads vs OMP_NUM_THREADS=1"
TASKS = "bench.suites.compete"
VARIANTS = {"default": {}, "one_thread": {"OMP_NUM_THREADS": "1"},
            "one_blas_thread": {"OPENBLAS_NUM_THREADS": "1"}}
ESTIMATORS = {"hss": "HSSSVC", "svc": "SVC"}


def add_arguments(p):
    p.add_argument("--data", default="ijcnn1", help="a data set name (bench/README.md)")
    p.add_argument("--C", nargs="+", type=float, default=[1.0], help="one case per C")
    p.add_argument("--competitors", type=int, default=None,
                   help="CPU-bound processes beside the fits (default: cores - 1)")
    p.add_argument("--ours", choices=sorted(ESTIMATORS), default="hss",
                   help="HSSSVC (records its plan's threads) or the drop-in SVC; the same "
                        "routes at SVC's defaults")
    p.add_argument("--late", type=float, default=None, metavar="SECONDS",
                   help="the competitors start this long into each fit, not before the run")
    p.add_argument("--variants", nargs="+", choices=sorted(set(VARIANTS) - {"default"}),
                   default=["one_thread"], help="each fitted beside the default, alternating")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--n-test", type=int, default=None)
    p.set_defaults(repeat=11)


def fit_task(data, params):
    """One fit at SVC's defaults but C: wall and CPU seconds, test accuracy, the plan's
    threads and the OpenMP threads the process started with (what the variant set)."""
    from threadpoolctl import threadpool_info

    import hsskern
    Xtr, ytr, Xte, yte = data
    openmp = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp")
    est = getattr(hsskern, ESTIMATORS[params["ours"]])(C=params["C"], random_state=0)
    late = _LateCompetitors(params["late"], params["competitors"])
    t0, c0 = time.perf_counter(), time.process_time()
    with late:
        est.fit(Xtr, ytr)
    t, cpu = time.perf_counter() - t0, time.process_time() - c0
    plan = (getattr(est, "hss_", None) or {}).get("plan") or {}
    return {"time": t, "cpu_time": cpu, "score": float(np.mean(est.predict(Xte) == yte)),
            "plan_threads": plan.get("threads"), "openmp_threads": openmp}


def median_interval(ratios, level=0.95):
    """The median of ``ratios`` and a distribution-free ``level`` interval for it: the k-th
    smallest and largest values, k the largest with P(Binomial(n, 1/2) < k) <= (1 - level)
    / 2; (nan, nan) where n is too small for any such k (n < 6 at 95 %)."""
    from scipy.stats import binom
    r = np.sort(np.asarray(ratios, dtype=float))
    n = r.size
    k = 0
    while binom.cdf(k, n, 0.5) <= (1 - level) / 2:  # P(B <= k) = P(B < k + 1)
        k += 1
    if k == 0:
        return float(np.median(r)), (float("nan"), float("nan"))
    return float(np.median(r)), (float(r[k - 1]), float(r[n - k]))


def _competitors(k):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]


def _stop(procs):
    for p in procs:
        p.kill()
        p.wait()


class _LateCompetitors:
    """``k`` competitors started ``delay`` seconds into a ``with`` block (None: none) and
    stopped at its end, whether they had started or not."""

    def __init__(self, delay, k):
        self.delay, self.k, self.procs = delay, k, []
        self.timer = None

    def __enter__(self):
        if self.delay is not None:
            self.timer = threading.Timer(self.delay,
                                         lambda: self.procs.extend(_competitors(self.k)))
            self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()
        _stop(self.procs)
        return False


def _merge(recs):
    """Per-repeat child records of one variant as one record: the median time, every time."""
    ok = [r for r in recs if r.get("status") == "ok"]
    if len(ok) < len(recs):
        bad = next(r for r in recs if r.get("status") != "ok")
        return {"status": bad["status"], "reason": bad.get("reason", "")}
    times = [r["time"] for r in ok]
    return {"status": "ok", "time": float(np.median(times)), "times": times,
            "cpu_times": [r["cpu_time"] for r in ok], "score": ok[-1]["score"],
            "peak_rss": max(r["peak_rss"] for r in ok),
            "plan_threads": sorted({r["plan_threads"] for r in ok}, key=str),
            "openmp_threads": sorted({r["openmp_threads"] for r in ok})}


def run(args, bench):
    spec = DataSpec(args.data, args.n_train, args.n_test, standardize=True)
    bench.data = describe(spec, load_data(spec))
    k = (os.cpu_count() or 2) - 1 if args.competitors is None else args.competitors
    print(f"{args.data}: {bench.data['n_train']} training points, {bench.data['n_features']} "
          f"features; {k} competing process(es), {args.repeat} pairs", flush=True)
    procs = _competitors(k) if args.late is None else []
    try:
        time.sleep(1.0 if procs else 0.0)  # the competitors running before the first plan
        variants = ["default"] + args.variants
        for C in args.C:
            recs = {v: [] for v in variants}
            for i in range(args.repeat):
                for v in (variants if i % 2 == 0 else variants[::-1]):
                    recs[v].append(bench.measure(
                        f"{TASKS}:fit_task", "hsskern", spec,
                        {"C": C, "ours": args.ours, "variant": v, "late": args.late,
                         "competitors": k}, env=VARIANTS[v]))
            _case(bench, C, k, args.late, {v: _merge(r) for v, r in recs.items()})
    finally:
        _stop(procs)
    for c in bench.cases:
        for v, p in c["paired"].items():
            lo, hi = p["interval"]
            print(f"{c['case']}: {v} / default, median of {len(p['ratios'])} pairs "
                  f"{p['median']:.3f}, 95 % interval [{lo:.3f}, {hi:.3f}]")
    return f"compete_{args.data}"


def _case(bench, C, k, late, systems):
    """The case: per variant beside the default, its paired ratios, their median and the
    median's interval (a variant or the default that failed: none)."""
    paired = {}
    for v, rec in systems.items():
        if v != "default" and rec["status"] == "ok" == systems["default"]["status"]:
            ratios = [t / d for t, d in zip(rec["times"], systems["default"]["times"])]
            med, (lo, hi) = median_interval(ratios)
            paired[v] = {"ratios": ratios, "median": med, "interval": [lo, hi]}
    when = "" if late is None else f" from {late:g} s into the fit"
    bench.add_case(f"fit C={C:g} beside {k} CPU-bound process(es){when}", "fit", systems,
                   reference="default", competitors=k, late=late, paired=paired)


def plot(result, path):
    """Per case and variant, the paired ratios (one dot a repeat), their median and its
    interval, against the line of no difference. False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return False
    rows = [(c["case"], v, p) for c in result["cases"] for v, p in c["paired"].items()]
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.6 * max(1, len(rows))))
    for k, (_, v, p) in enumerate(rows):
        ax.plot(p["ratios"], np.full(len(p["ratios"]), k), "o", ms=4, alpha=0.5, color="C0")
        lo, hi = p["interval"]
        if np.isfinite(np.array([lo, hi], dtype=float)).all():  # None: no interval
            ax.plot([lo, hi], [k, k], "-", lw=3, color="C1", alpha=0.7)
        ax.plot([p["median"]], [k], "|", ms=16, mew=2, color="C3")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{v} / default\n{case}" for case, v, _ in rows],
                  fontsize=7)
    ax.set_xlabel("paired time ratio: variant / default (> 1: the default is faster)")
    ax.set_title(f"compete, {result['data']['name']}: {result['date'][:10]}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
