"""A/B of the OpenMP wait policy: OMP_WAIT_POLICY=PASSIVE against libgomp's default (unset).

    python bench/omp_wait_policy.py [--repeat 5] [--sizes 10000,50000] [--svc 20000]

Each run is a fresh interpreter (libgomp reads the variable once, when it loads), the two
settings alternate run by run so load from other processes hits both alike, and the medians
are reported. Timed: ``hsskern.hss.compress`` (default HSSOptions, random_state 0) of a
Gaussian ``kernel_operator`` (h = 1) on gmm8(n) of ../shared/tools/gen_gmm.py (d = 8,
standardized), and one ``HSSSVC(h=1, C=1, random_state=0).fit`` on gmm8(20,000). Wall and
CPU seconds (user + system of the child: spinning threads show there) of the timed call only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import SHARED, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def child(task, n):
    import resource
    import numpy as np  # noqa: F401
    sys.path.insert(0, str(SHARED.parent / "tools"))
    from gen_gmm import gmm8
    import hsskern
    X, y = gmm8(n)[:2]

    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    if task == "compress":
        from hsskern.hss import compress
        K = hsskern.kernel_operator(X, "gaussian", h=1.0)
        c0, t0 = cpu(), time.perf_counter()
        compress(K, random_state=0)
    else:
        est = hsskern.HSSSVC(h=1.0, C=1.0, random_state=0)
        c0, t0 = cpu(), time.perf_counter()
        est.fit(X, y)
    wall, cpu_s = time.perf_counter() - t0, cpu() - c0
    print(json.dumps({"wall": wall, "cpu": cpu_s, "module": hsskern.__file__,
                      "policy": os.environ.get("OMP_WAIT_POLICY")}))


def run(task, n, policy, src):
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("OMP_WAIT_POLICY", None)
    if policy != "unset":
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run([sys.executable, "-W", "ignore", __file__, "--child", task, str(n)],
                         env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="10000,50000")
    ap.add_argument("--svc", type=int, default=20000, help="HSSSVC fit size (0: skip)")
    ap.add_argument("--src", default=str(ROOT),
                    help="directory holding the hsskern package to time (default: this checkout)")
    ap.add_argument("--child", nargs=2, metavar=("TASK", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]))
    cases = [("compress", int(s)) for s in args.sizes.split(",") if s]
    if args.svc:
        cases.append(("svc_fit", args.svc))
    policies = ("PASSIVE", "unset")
    rows = []
    for task, n in cases:
        res = {p: [] for p in policies}
        for i in range(args.repeat):
            order = policies if i % 2 == 0 else policies[::-1]
            for p in order:
                r = run(task, n, p, args.src)
                assert r["module"].startswith(args.src), r["module"]
                res[p].append(r)
        row = {"task": task, "n": n, "load_1min_after": os.getloadavg()[0]}
        for p in policies:
            row[p] = {"wall_median": statistics.median(r["wall"] for r in res[p]),
                      "cpu_median": statistics.median(r["cpu"] for r in res[p]),
                      "wall_all": [round(r["wall"], 3) for r in res[p]]}
        rows.append(row)
        print(f"{task:8s} n={n:>6}  " + "  ".join(
            f"{p}: wall {row[p]['wall_median']:6.2f} s cpu {row[p]['cpu_median']:6.2f} s "
            f"{row[p]['wall_all']}" for p in policies)
            + f"  load {row['load_1min_after']:.1f}", flush=True)
    write_result("omp_wait_policy", {"repeat": args.repeat, "threads": os.cpu_count(),
                                     "src": args.src, "rows": rows})


if __name__ == "__main__":
    main()
