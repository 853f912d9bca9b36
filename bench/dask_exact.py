"""The exact decomposition of ONE problem with its kernel products on Dask workers, vs serial.

    python bench/dask_exact.py                           # gmm8(2e5), C = 1, h = 1
    python bench/dask_exact.py --n 100000 --tag _1e5

Both runs are ``refine_exact`` on all n gmm8 points from the same start: the exact solution of a
random ``--warm`` subsample padded with zeros (``--warm 0``: from alpha = 0), computed once.

* serial: ``LocalProducts`` in this process, BLAS/OpenMP capped at ``--threads`` (2) threads;
* dask: ``DaskProducts`` on a ``LocalCluster`` of ``--workers`` single-threaded worker
  processes (one row block each); the working set's block and SMO stay in this process, with
  the same thread cap as serial.

Reported: wall times (the dask one includes placing the blocks) and their ratio, the test
accuracy and how far the two solutions are apart, bytes sent/received per call, per-worker
throughput (kernel entries per second of task time), the per-call overhead (call wall time
minus its longest task: Dask's round trip), and a PROJECTION of the 10^6-point, 10-C grid on
8 and 32 such workers from these measurements (model in ``project``). Results to
``bench/results/dask_exact<tag>.json`` with ``os.getloadavg()`` before and after each run.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's hsskern, here and (spawned) in the workers
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_result  # noqa: E402

PHASES = ("start", "select", "block", "smo", "newton", "update", "sync")


def loadavg():
    return [round(v, 2) for v in os.getloadavg()]


def gmm8(n):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared" / "tools"))
    from gen_gmm import gmm8 as gen
    return gen(n)


def wait_for_big_memory_run():
    flag = Path("/work/BIG_MEMORY_RUN")
    while flag.exists():
        print("waiting: /work/BIG_MEMORY_RUN exists", flush=True)
        time.sleep(30)


class TimedLocal:
    """LocalProducts with each call's wall time and size recorded (the serial reference)."""

    def __init__(self, X, kernel):
        from hsskern.solvers.refine import LocalProducts
        self.inner, self.log = LocalProducts(X, kernel), []

    def add(self, f, cols, c, skip=None):
        t0 = time.perf_counter()
        e = self.inner.add(f, cols, c, skip)
        if e:
            self.log.append({"cols": int(cols.size), "entries": int(e),
                             "seconds": time.perf_counter() - t0})
        return e


def solve(X, y, C, kernel, alpha0, products, max_time, max_rounds):
    from hsskern.kernels import KernelOperator
    from hsskern.solvers.refine import refine_exact
    lines, rounds = [], []
    t0 = time.perf_counter()

    def cb(state):
        rounds.append((time.perf_counter() - t0, state.rounds, float(state.gap)))

    res = refine_exact(KernelOperator(X, kernel), y, C, alpha0, products=products,
                       max_time=max_time, max_rounds=max_rounds, callback=cb,
                       log=lines.append, workspace={})
    return res, time.perf_counter() - t0, lines, rounds


def test_decision(res, X, Xt, kernel):
    from hsskern.kernels import KernelOperator
    sv = np.flatnonzero(res.dual_coef)
    return KernelOperator(X[sv], kernel).cross(Xt) @ res.dual_coef[sv] + res.bias


def summary(name, res, wall, Xt, yt, X, kernel, products_log, extra=None):
    dec = test_decision(res, X, Xt, kernel)
    prod = sum(c["seconds"] for c in products_log)
    out = {"run": name, "seconds": wall, "rounds": res.rounds, "converged": bool(res.converged),
           "gap": float(res.gap), "stopped": res.stopped,
           "n_support": int(np.count_nonzero(res.alpha)),
           "test_accuracy": float(np.mean(np.where(dec > 0, 1.0, -1.0) == yt)),
           "timings": {k: float(v) for k, v in res.timings.items()},
           "kernel_entries": {k: int(v) for k, v in res.kernel_entries.items()},
           "product_calls": len(products_log), "product_seconds": prod,
           "product_entries": int(sum(c["entries"] for c in products_log))}
    out["product_throughput"] = out["product_entries"] / max(prod, 1e-12)
    if extra:
        out.update(extra)
    print(f"  {name}: {wall:.1f} s, {res.rounds} rounds, gap {res.gap:.3g}, "
          f"{out['n_support']} SV, test accuracy {100 * out['test_accuracy']:.2f}%, "
          f"products {prod:.1f} s in {len(products_log)} calls "
          f"({out['product_throughput'] / 1e6:.0f} M entries/s)", flush=True)
    return out, dec


def project(serial, dask, n, d, n_target, n_C, P, bandwidth, latency=None):
    """Projected seconds of an n_C-value C grid at n_target points on P workers.

    Model (per round, the seam as it is: the client's part, then the products):
        round = t_client + s e / (P thr) + L + bytes / B,
        bytes = 8 n' (one update vector back per point) + P |ch| (d + 1) 8 (X[ch], c out),
    t_client = s (select + bookkeeping) + (block + SMO + Newton) per round, s = n' / n (the
    selection and bookkeeping are O(n), the working set's block and SMO are O(|W|^2), |W|
    capped); rounds' = s * rounds (s times as many coefficients to move with the same
    working-set cap); e = the kernel entries of a round's products as measured (n |ch| without
    shrinking, fewer with it: the shrunk points are updated at the syncs only), |ch| per
    round as measured; thr = measured per-worker throughput;
    L = measured per-call overhead (Dask's round trip on this machine) unless given; every C of
    the grid costs what the measured C cost (a path warm-starts the next C from the last, so
    this is pessimistic at small C and optimistic at large C). ``pipelined`` is the lower bound
    if the client's part and the products overlapped: max(t_client, products).
    """
    R = serial["rounds"]
    s = n_target / n
    tm = serial["timings"]
    wall = serial["seconds"]
    t_prod = serial["product_seconds"]
    t_blk = (tm["block"] + tm["smo"] + tm["newton"]) / R
    t_lin = max(0.0, wall - t_prod - tm["block"] - tm["smo"] - tm["newton"]) / R
    ch = dask["mean_cols_per_update"]
    thr = dask["worker_throughput_median"]
    L = dask["overhead_per_call_median"] if latency is None else latency
    t_client = s * t_lin + t_blk
    e = (serial["kernel_entries"]["update"] + serial["kernel_entries"].get("sync", 0)) / R
    t_products = s * e / (P * thr) + L + (8 * n_target + P * ch * (d + 1) * 8) / bandwidth
    rounds = s * R
    start = n_target * dask["start_cols"] * s / (P * thr)  # the first C's first product
    return {"workers": P, "bandwidth_bytes_per_s": bandwidth, "latency_s": L,
            "rounds_per_C": rounds, "client_s_per_round": t_client,
            "products_s_per_round": t_products,
            "grid_seconds": n_C * rounds * (t_client + t_products) + start,
            "grid_seconds_pipelined": n_C * rounds * max(t_client, t_products) + start,
            "client_only_floor_seconds": n_C * rounds * t_client}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--h", type=float, default=1.0)
    ap.add_argument("--warm", type=int, default=20000,
                    help="start from the exact solution of this many random points (0: zero)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="BLAS/OpenMP threads of serial")
    ap.add_argument("--max-time", type=float, default=None)
    ap.add_argument("--max-rounds", type=int, default=10 ** 9,
                    help="refine_exact's round limit (default: none; its own default is 200)")
    ap.add_argument("--order", choices=["serial-first", "dask-first"], default="serial-first")
    ap.add_argument("--tag", default="")
    args = ap.parse_args()

    from distributed import Client, LocalCluster
    from threadpoolctl import threadpool_limits

    from hsskern.distributed import DaskProducts, limit_worker_threads
    from hsskern.kernels import KernelOperator, make_kernel
    from hsskern.solvers.refine import refine_exact

    X, y, Xt, yt = gmm8(args.n)
    n, d = X.shape
    kernel = make_kernel("gaussian", h=args.h)
    print(f"gmm8({n}), d = {d}, C = {args.C:g}, h = {args.h:g}, load {loadavg()}", flush=True)
    wait_for_big_memory_run()
    alpha0, warm = None, None
    with threadpool_limits(args.threads):
        if args.warm:
            t0 = time.perf_counter()
            idx = np.sort(np.random.default_rng(0).permutation(n)[:args.warm])
            r0 = refine_exact(KernelOperator(X[idx], kernel), y[idx], args.C)
            alpha0 = np.zeros(n)
            alpha0[idx] = r0.alpha
            warm = {"points": args.warm, "seconds": time.perf_counter() - t0,
                    "rounds": r0.rounds, "n_support": int(np.count_nonzero(r0.alpha))}
            print(f"  start: exact solution of {args.warm} points in {warm['seconds']:.1f} s, "
                  f"{warm['n_support']} SV", flush=True)

    runs, decs = {}, {}

    def run_serial():
        wait_for_big_memory_run()
        load0 = loadavg()
        eng = TimedLocal(X, kernel)
        with threadpool_limits(args.threads):
            res, wall, lines, rounds = solve(X, y, args.C, kernel, alpha0, eng, args.max_time,
                                                 args.max_rounds)
        out, dec = summary("serial", res, wall, Xt, yt, X, kernel, eng.log,
                           {"threads": args.threads, "load_before": load0,
                            "load_after": loadavg(), "log": lines, "round_times": rounds,
                            "calls": eng.log})
        runs["serial"], decs["serial"] = (out, res), dec

    def run_dask():
        wait_for_big_memory_run()
        env = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
        t0 = time.perf_counter()
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, env=env) as cluster, Client(cluster) as client:
            limit_worker_threads(client, 1)
            t_cluster = time.perf_counter() - t0
            load0 = loadavg()
            with threadpool_limits(args.threads):
                tp = time.perf_counter()
                eng = DaskProducts(X, kernel, client=client)
                t_place = time.perf_counter() - tp
                res, wall, lines, rounds = solve(X, y, args.C, kernel, alpha0, eng,
                                                 args.max_time, args.max_rounds)
            calls = eng.log
            over = [c["seconds"] - c["task_seconds"] for c in calls]
            thr = {w: s["entries"] / s["seconds"] for w, s in eng.worker_stats.items()}
            extra = {"workers": args.workers, "cluster_start_seconds": t_cluster,
                     "place_seconds": t_place, "bytes_placed": eng.bytes_placed,
                     "wall_with_placing": wall + t_place,
                     "load_before": load0, "load_after": loadavg(),
                     "bytes_sent": eng.bytes_sent, "bytes_received": eng.bytes_received,
                     "bytes_sent_per_call_mean": eng.bytes_sent / max(1, eng.calls),
                     "bytes_received_per_call_mean": eng.bytes_received / max(1, eng.calls),
                     "bytes_received_per_call_max": max(c["bytes_received"] for c in calls),
                     "overhead_per_call_median": float(np.median(over)),
                     "overhead_per_call_p90": float(np.percentile(over, 90)),
                     "overhead_total": float(np.sum(over)),
                     "worker_stats": eng.worker_stats, "worker_throughput": thr,
                     "worker_throughput_median": float(np.median(list(thr.values()))),
                     "mean_cols_per_update": float(np.mean(
                         [c["cols"] for c in calls[1 if res.kernel_entries["start"] else 0:]])),
                     "start_cols": res.kernel_entries["start"] // n,
                     "resubmitted": eng.resubmitted, "replaced": eng.replaced,
                     "log": lines, "round_times": rounds, "calls": calls}
            eng.close()
        out, dec = summary("dask", res, wall + t_place, Xt, yt, X, kernel, calls, extra)
        runs["dask"], decs["dask"] = (out, res), dec

    for r in ((run_serial, run_dask) if args.order == "serial-first" else (run_dask, run_serial)):
        r()

    (s, rs), (k, rk) = runs["serial"], runs["dask"]
    same = {"rounds_equal": s["rounds"] == k["rounds"],
            "max_abs_alpha_diff": float(np.max(np.abs(rs.alpha - rk.alpha))),
            "max_abs_test_decision_diff": float(np.max(np.abs(decs["serial"] - decs["dask"]))),
            "test_predictions_equal": bool(np.array_equal(decs["serial"] > 0,
                                                          decs["dask"] > 0))}
    ratio = k["seconds"] / s["seconds"]
    print(f"  dask / serial wall: {ratio:.3f} (target <= 1.15); {same}", flush=True)
    proj = []
    for n_target in (10 ** 6,):
        for P in (2, 8, 32):
            for bw in (125e6, 1.25e9):  # 1 and 10 Gbit/s
                proj.append({"n": n_target, "n_C": 10,
                             **project(s, k, n, d, n_target, 10, P, bw)})
    check = project(s, k, n, d, n, 1, args.workers, np.inf)  # the model at the measured point
    print("  PROJECTION (a model, not a measurement) of the 10-C grid at n = 10^6:")
    for p in proj:
        print(f"    P = {p['workers']:2d}, {p['bandwidth_bytes_per_s'] * 8 / 1e9:g} Gbit/s: "
              f"{p['grid_seconds'] / 60:.0f} min (pipelined bound "
              f"{p['grid_seconds_pipelined'] / 60:.0f} min, client floor "
              f"{p['client_only_floor_seconds'] / 60:.0f} min)", flush=True)
    print(f"  model at the measured point: {check['grid_seconds']:.1f} s vs measured "
          f"{k['seconds']:.1f} s", flush=True)
    write_result(f"dask_exact{args.tag}", {
        "n": n, "d": d, "C": args.C, "h": args.h, "warm_start": warm,
        "max_rounds": args.max_rounds, "max_time": args.max_time,
        "overhead_ratio": ratio, "same_solution": same,
        "runs": [s, k], "projection": proj, "projection_check_at_measured_point": check,
        "projection_model": project.__doc__.strip(), "load_end": loadavg()})


if __name__ == "__main__":
    main()
