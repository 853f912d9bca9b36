"""Large n: ExactSVC under a time budget (anytime) against the subsample baseline.

    python -m bench large_n --n 200000 --max-time 300 --baselines 50000 100000
    python -m bench large_n --n 1000000 --C 1.668 --max-time 900 --subsample 100000 \\
        --baselines 100000 200000 300000 --tag 1e6
    python -m bench large_n --n 200000 --modes path --C 0.1 1 10      # ExactSVC.fit_path

gmm8(n) (../shared/tools/gen_gmm.py). Each run in a fresh process, one after another:

* ``ExactSVC``: ``ExactSVC(C, h, subsample, max_time)`` on all n points: the returned
  model's test accuracy, its certified KKT gap, which model it kept, rounds (accuracy against
  time in ``history``);
* ``HSSSVC m``: the exact SVM (``HSSSVC(options=HSSSVCOptions(solve_exact=True))``, LIBSVM's answer) on a random m-point
  subsample, for each ``--baselines`` m; a process past 1.25 x ``--max-time`` (+ 60 s to
  start) is stopped and recorded as "timeout" (no baseline). The baseline is the largest m
  that finishes within the budget; ExactSVC should match or beat it.

``path`` mode: ``ExactSVC.fit_path`` over ``--C`` (no budget) on all n points.
"""
import time

import numpy as np

from bench.harness import DataSpec, describe, load_data

DESCRIPTION = "ExactSVC at large n under a time budget vs the subsample baseline"
TASKS = "bench.suites.large_n"


def add_arguments(p):
    p.add_argument("--n", type=int, default=200000)
    p.add_argument("--C", nargs="+", type=float, default=[1.668])
    p.add_argument("--h", type=float, default=1.0)
    p.add_argument("--max-time", type=float, default=300.0)
    p.add_argument("--subsample", type=int, default=100000, help="ExactSVC's subsample")
    p.add_argument("--baselines", nargs="*", type=int, default=[50000, 100000])
    p.add_argument("--modes", nargs="+", default=["anytime"], choices=["anytime", "path"])


def run(args, bench):
    spec = DataSpec(f"gmm8_{args.n}")
    bench.data = describe(spec, load_data(spec))
    base = {"h": args.h, "subsample": args.subsample}
    if "anytime" in args.modes:
        C = args.C[0]
        recs = {"ExactSVC": bench.measure(f"{TASKS}:anytime_task", "hsskern", spec,
                                          {**base, "C": C, "max_time": args.max_time},
                                          warmup=False)}
        # the process's limit leaves room for its start-up; the baseline counts its fit only
        timeout, bench.timeout = bench.timeout, 1.25 * args.max_time + 60.0
        for m in args.baselines:
            recs[f"HSSSVC {m}"] = bench.measure(f"{TASKS}:subsample_task", "hsskern", spec,
                                                {**base, "C": C, "m": m}, warmup=False)
        bench.timeout = timeout
        ok = [m for m in args.baselines if recs[f"HSSSVC {m}"]["status"] == "ok"
              and recs[f"HSSSVC {m}"]["time"] <= args.max_time]
        bench.add_case(f"anytime C={C:g} max_time={args.max_time:g}", "anytime", recs,
                       reference="ExactSVC", params={**base, "C": C},
                       baseline=f"HSSSVC {max(ok)}" if ok else None)
    if "path" in args.modes:
        rec = bench.measure(f"{TASKS}:path_task", "hsskern", spec, {**base, "Cs": args.C},
                            warmup=False)
        bench.add_case(f"path {len(args.C)} C", "path", {"ExactSVC": rec}, reference="ExactSVC",
                       params={**base, "Cs": args.C})
    return f"large_n_{args.n}"


def _accuracy(m, X, y):
    return float(np.mean(m.predict(X) == y))


def anytime_task(data, params):
    from hsskern import ExactSVC, ExactSVCOptions
    X, y, Xt, yt = data
    m = ExactSVC(C=params["C"], h=params["h"],
                 options=ExactSVCOptions(subsample=params["subsample"]),
                 max_time=params["max_time"], random_state=0, verbose=1)
    t0 = time.perf_counter()
    m.fit(X, y)
    t = time.perf_counter() - t0
    return {"time": t, "score": _accuracy(m, Xt, yt), "gap": float(m.gap_[0]),
            "converged": bool(m.converged_[0]), "selected": m.selected_[0],
            "rounds": int(m.n_iter_[0]), "history": [list(map(float, h)) for h in m.history_[0]],
            "phases": {k: float(v) for k, v in m.fit_time_.items()}}


def subsample_task(data, params):
    from hsskern import HSSSVC, HSSSVCOptions
    X, y, Xt, yt = data
    idx = np.sort(np.random.default_rng(0).permutation(len(y))[:params["m"]])
    m = HSSSVC(C=params["C"], h=params["h"], options=HSSSVCOptions(solve_exact=True),
               random_state=0)
    t0 = time.perf_counter()
    m.fit(X[idx], y[idx])
    return {"time": time.perf_counter() - t0, "score": _accuracy(m, Xt, yt),
            "n_support": int(m.support_.size)}


def path_task(data, params):
    from hsskern import ExactSVC, ExactSVCOptions
    X, y, Xt, yt = data
    t0 = time.perf_counter()
    models = ExactSVC(h=params["h"], options=ExactSVCOptions(subsample=params["subsample"]),
                      random_state=0).fit_path(X, y, params["Cs"])
    t = time.perf_counter() - t0
    per = [{"C": float(m.C), "time": float(sum(v for v in m.fit_time_.values())),
            "score": _accuracy(m, Xt, yt)} for m in models]
    return {"time": t, "score": max(f["score"] for f in per), "per_C": per}
