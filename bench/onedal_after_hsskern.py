"""Does a process that ran hsskern slow oneDAL down? A/B in fresh interpreters.

    python bench/onedal_after_hsskern.py [--dataset ijcnn1] [--n 10000] [--repeat 3]

Issue 22 saw oneDAL's a9a grid take 204 s in a process that had run hsskern's grid first,
131 s in a fresh one. Each run here is a fresh interpreter, in one of three modes, alternating
so load from other processes hits them alike:

* ``fresh``: oneDAL's SVC fitted per C, nothing else in the process;
* ``import``: hsskern imported (and its compiled modules loaded) first;
* ``after``: an ``HSSSVC.fit_path`` over the same C first, then oneDAL.

Timed: the oneDAL fits only, wall and CPU seconds (user + system of the process, so threads
left spinning show). Also recorded per mode: the environment variables that differ from the
fresh process's, the thread pools (threadpoolctl), the CPU affinity, the process's thread
count and its resident memory before the oneDAL fits. Writes
``bench/results/onedal_after_hsskern.json``.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CS = [0.1, 1.0, 10.0, 100.0]


def _state():
    from threadpoolctl import threadpool_info
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {"env": dict(os.environ), "threadpools": [
        {k: p.get(k) for k in ("prefix", "user_api", "num_threads")} for p in threadpool_info()],
        "affinity": sorted(os.sched_getaffinity(0)), "threads": int(status["Threads"]),
        "rss_mb": int(status["VmRSS"].split()[0]) // 1024}


def child(mode, dataset, n):
    import numpy as np
    from bench._common import load_shared
    Xtr, ytr = load_shared(dataset)[:2]
    idx = np.random.default_rng(0).choice(len(ytr), min(n, len(ytr)), replace=False)
    X, y = Xtr[idx], ytr[idx]
    t_hss = 0.0
    if mode in ("import", "after"):
        import hsskern  # noqa: F401
        from hsskern import HSSSVC
    if mode == "after":
        t0 = time.perf_counter()
        HSSSVC(h=1.0, random_state=0).fit_path(X, y, CS)
        t_hss = time.perf_counter() - t0
    from sklearnex.svm import SVC
    state = _state()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for C in CS:
        SVC(C=C, gamma=0.5).fit(X, y)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(json.dumps({"mode": mode, "wall": wall, "cpu": cpu, "hss_time": t_hss,
                      "load": os.getloadavg()[0], **state}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="ijcnn1")
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.child, args.dataset, args.n)
    runs = []
    for k in range(args.repeat):
        for mode in ("fresh", "import", "after"):
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--dataset",
                                  args.dataset, "--n", str(args.n)], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            runs.append(r)
            print(f"{mode:7s} oneDAL {r['wall']:6.2f} s wall, {r['cpu']:6.2f} s CPU "
                  f"(threads {r['threads']}, load {r['load']:.1f})", flush=True)
    fresh_env = runs[0]["env"]
    summary = {}
    for mode in ("fresh", "import", "after"):
        rs = [r for r in runs if r["mode"] == mode]
        summary[mode] = {
            "wall_median": statistics.median(r["wall"] for r in rs),
            "cpu_median": statistics.median(r["cpu"] for r in rs),
            "env_changed": sorted({k for r in rs for k in set(r["env"]) ^ set(fresh_env)
                                   | {k for k in r["env"] if r["env"][k] != fresh_env.get(k)}}),
            "threadpools": rs[0]["threadpools"], "affinity": rs[0]["affinity"],
            "threads": rs[0]["threads"], "rss_mb": rs[0]["rss_mb"]}
        print(mode, json.dumps(summary[mode]))
    for r in runs:
        del r["env"]
    from bench._common import write_result
    print("wrote", write_result("onedal_after_hsskern", {
        "dataset": args.dataset, "n": args.n, "C": CS, "runs": runs, "summary": summary}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
