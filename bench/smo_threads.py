"""SMO pair steps on one and two threads: ``smo_block`` on a credit_default working set.

    python bench/smo_threads.py [--q 1000 3000 6000] [--C 1000] [--repeat 3] [--hogs 0]

A random q-point block of credit_default (standardized, Gaussian h = 3.4, class weights
"balanced", as the C grid in the README) solved from alpha = 0 to LIBSVM's gap 1e-3 (at most
300,000 steps) with ``threads`` = 1, 2 and 0 (the measured choice), alternating in one process;
medians of microseconds per pair step. ``--hogs k`` starts k busy processes beside it: what the
two threads' barriers cost when a core is taken.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import SHARED, write_result  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--q", type=int, nargs="+", default=[1000, 3000, 6000])
    p.add_argument("--C", type=float, default=1000.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--hogs", type=int, default=0)
    p.add_argument("--tag", default="")
    args = p.parse_args()
    from hsskern import kernel_operator
    from hsskern.solvers._smo import smo_block
    path = SHARED / "credit_default.npz"
    if not path.exists():
        sys.exit(f"{path} not found")
    d = np.load(path)
    X, y = d["X_train"].astype(float), d["y_train"].astype(float)
    X = (X - X.mean(0)) / np.maximum(X.std(0), 1e-12)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.hogs)]
    rows = []
    try:
        for q in args.q:
            idx = np.random.default_rng(0).permutation(len(y))[:q]
            K = kernel_operator(X[idx], "gaussian", h=3.4).to_dense()
            yq = y[idx]
            w = np.where(yq > 0, q / (2.0 * (yq > 0).sum()), q / (2.0 * (yq < 0).sum()))
            us = {1: [], 2: [], 0: []}
            for _ in range(args.repeat):
                for threads in us:
                    alpha, v = np.zeros(q), yq.copy()
                    t0 = time.perf_counter()
                    it, m, M = smo_block(K, yq, alpha, v, args.C, 1e-3, 300_000, args.C * w,
                                         threads=threads)
                    us[threads].append(1e6 * (time.perf_counter() - t0) / max(it, 1))
            row = {"q": q, "steps": int(it), "gap": float(m - M),
                   **{f"us_per_step_threads{t}": statistics.median(v) for t, v in us.items()}}
            rows.append(row)
            print(f"q = {q}: {it} steps; us per step: one thread "
                  f"{row['us_per_step_threads1']:.1f}, two {row['us_per_step_threads2']:.1f}, "
                  f"measured choice {row['us_per_step_threads0']:.1f}", flush=True)
    finally:
        for h in hogs:
            h.kill()
    out = write_result(f"smo_threads{args.tag}", {"C": args.C, "hogs": args.hogs,
                                                  "repeat": args.repeat, "rows": rows})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
