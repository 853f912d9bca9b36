"""Anytime exact SVM at large n against the subsample baseline (issue 25).

    python bench/anytime.py --n 1000000 --C 1.668 --max-time 900 --subsample 100000 \
        --baselines 100000 200000 300000 --tag 1e6

Each run is a fresh process (peak RSS and timings of its own), one after another:

* ``anytime``: ``ExactSVC(C, h, subsample, max_time)`` on all n gmm8 points: test accuracy of
  the returned model, its certified KKT gap, which point it chose, and the per-round record
  (seconds, gap, validation accuracy) — accuracy against time;
* ``sub:m``: the exact SVM (``HSSSVC(refine=True)``, LIBSVM's answer) on a random subsample of
  m points: the subsample baseline is the largest m that finishes within ``--max-time``
  (a run is stopped at 1.25 times it and recorded as such);
* ``exact:m`` (``--exact-baselines``): the same baseline solved by ``ExactSVC`` without a
  budget (stages from ``--subsample`` up to the m points, 2 % of them held out): the fastest
  exact solver of a subsample we have, so the strongest baseline per second.

Results to ``bench/results/anytime_<tag>.json`` with the load average before and after each run.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import rss_bytes, write_result  # noqa: E402


def _gmm8(n):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared" / "tools"))
    from gen_gmm import gmm8
    return gmm8(n)


def _run_one(args):
    from hsskern import ExactSVC, HSSSVC
    X, y, Xt, yt = _gmm8(args.n)
    # the anytime run and the exact:m baselines: the same ExactSVC, with and without a budget
    exact = dict(C=args.C, h=args.h, subsample=args.subsample,
                 validation_fraction=args.validation_fraction, random_state=0, verbose=1)
    if args.max_chunk is not None:
        exact["max_chunk"] = args.max_chunk
    base = rss_bytes()
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    if args.one == "anytime":
        m = ExactSVC(max_time=args.max_time, **exact).fit(X, y)
        info = {"gap": float(m.gap_[0]), "converged": bool(m.converged_[0]),
                "selected": m.selected_[0], "rounds": int(m.n_iter_[0]),
                "history": [list(map(float, h)) for h in m.history_[0]],
                "fit_time": {k: float(v) for k, v in m.fit_time_.items()},
                "n_validation": m.n_validation_, "subsample": m.subsample_size_}
    else:
        kind, size = args.one.split(":")
        size = int(size)
        idx = np.sort(np.random.default_rng(0).permutation(args.n)[:size])
        if kind == "exact":
            m = ExactSVC(**exact).fit(X[idx], y[idx])
            info = {"subsample": size, "gap": float(m.gap_[0]),
                    "converged": bool(m.converged_[0]), "selected": m.selected_[0],
                    "history": [list(map(float, h)) for h in m.history_[0]]}
        else:
            m = HSSSVC(C=args.C, h=args.h, refine=True, random_state=0).fit(X[idx], y[idx])
            info = {"subsample": size, "gap": float(np.max(m.admm_["refinement"][0].gap))
                    if m.admm_["refinement"] else None}
    seconds = time.perf_counter() - t0
    acc = float(np.mean(m.predict(Xt) == yt))
    out = {"run": args.one, "n": args.n, "C": args.C, "h": args.h, "seconds": seconds,
           "test_accuracy": acc, "n_support": int(m.support_.size),
           "peak_rss_extra": int(max(0, rss_bytes("VmHWM") - base)),
           "load_before": load0, "load_after": os.getloadavg(), **info}
    print("RESULT " + json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=200000)
    p.add_argument("--C", type=float, default=1.668)
    p.add_argument("--h", type=float, default=1.0)
    p.add_argument("--max-time", type=float, default=300.0)
    p.add_argument("--subsample", type=int, default=100000)
    p.add_argument("--validation-fraction", type=float, default=0.02)
    p.add_argument("--max-chunk", type=int, default=None, help="ExactSVC's (default: its own)")
    p.add_argument("--baselines", type=int, nargs="*", default=[])
    p.add_argument("--exact-baselines", type=int, nargs="*", default=[])
    p.add_argument("--skip-anytime", action="store_true")
    p.add_argument("--tag", default=None)
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        return _run_one(args)
    runs = ([] if args.skip_anytime else ["anytime"]) + [f"sub:{m}" for m in args.baselines] \
        + [f"exact:{m}" for m in args.exact_baselines]
    results = []
    for run in runs:
        cmd = [sys.executable, __file__, "--one", run, "--n", str(args.n), "--C", str(args.C),
               "--h", str(args.h), "--max-time", str(args.max_time),
               "--subsample", str(args.subsample),
               "--validation-fraction", str(args.validation_fraction)] \
            + ([] if args.max_chunk is None else ["--max-chunk", str(args.max_chunk)])
        print(f"== {run}", flush=True)
        # a baseline past the budget is no baseline: stopped a quarter past it, and said so
        limit = None if run == "anytime" else 1.25 * args.max_time
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            print(f"   {run}: stopped after {limit:.0f} s (over the budget)", flush=True)
            results.append({"run": run, "timed_out": limit, "load_after": os.getloadavg()})
            continue
        sys.stdout.write(proc.stdout[-4000:])
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode or not lines:
            print(proc.stderr[-3000:], flush=True)
            results.append({"run": run, "failed": proc.returncode, "stderr": proc.stderr[-2000:]})
            continue
        r = json.loads(lines[-1][7:])
        results.append(r)
        print(f"   {run}: {r['seconds']:.0f} s, test accuracy {100 * r['test_accuracy']:.2f}%"
              + (f", gap {r['gap']:.3g}, {r['selected']}" if run == "anytime" else ""),
              flush=True)
    subs = [r for r in results if r["run"].startswith(("sub:", "exact:")) and "seconds" in r
            and r["seconds"] <= args.max_time]
    baseline = max(subs, key=lambda r: r["subsample"]) if subs else None
    payload = {"n": args.n, "C": args.C, "h": args.h, "max_time": args.max_time,
               "subsample": args.subsample, "runs": results,
               "baseline": None if baseline is None else baseline["run"]}
    path = write_result(f"anytime_{args.tag or args.n}", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
