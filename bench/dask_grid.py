"""(width, C) grid on a Dask LocalCluster vs serial: speed-up and peak memory per worker.

    python bench/dask_grid.py                      # ijcnn1, all 49,990 training points
    python bench/dask_grid.py --n 8000 --tag _n8000  # a stratified subsample (busy machine)

4 kernel widths x 10 C (``--h``, ``--Cs``), one hold-out fold (``--cv``). Serial: HSSSVCCV
in this process with BLAS/OpenMP capped at one thread. Dask: DaskHSSSVCCV on a LocalCluster
of ``--workers`` single-threaded worker processes (one task per width x fold). Both searches
run with refit=False (the grid is what is distributed); the refit on all data, one task on
one worker, is timed separately. The dask result must equal the serial one (scores, chosen
h and C); the script exits non-zero otherwise. Peak memory per worker is the worker
process's resident high-water mark (ru_maxrss; includes the interpreter and libraries),
next to the same figure for a fresh idle worker, and the largest peak one task added on top
of the resident size it started from (the memory a grid cell really needs).

``--control`` also runs the same cells in a plain ``multiprocessing`` pool of ``--workers``
single-threaded processes (no Dask): the speed-up two processes get on this machine at all,
so what the shared cores and memory cost can be told apart from what Dask costs. The CPU
time the hypervisor took from the machine (steal, from /proc/stat) is reported per phase.

The wall-clock speed-up needs an otherwise idle machine: with other sessions running, Linux
autogroup scheduling gives this whole session one fair share of the cores however many
processes it starts. The script also reports a CPU-time speed-up (serial CPU seconds over the
busiest worker's summed task CPU seconds), which load does not distort as much: the
wall-clock speed-up two uncontended workers would reach, minus scheduling overhead.
"""
import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_result  # noqa: E402


def loadavg():
    return [round(v, 2) for v in os.getloadavg()]


def cpu_ticks():
    """(busy, steal) clock ticks of the whole machine so far (/proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    return v[0] + v[1] + v[2] + v[5] + v[6], v[7]


def ticks_since(t0):
    t1 = cpu_ticks()
    if t0 is None or t1 is None:
        return None
    hz = os.sysconf("SC_CLK_TCK")
    return {"busy_cpu_seconds": (t1[0] - t0[0]) / hz, "steal_seconds": (t1[1] - t0[1]) / hz}


def _control_cell(job):
    from threadpoolctl import threadpool_limits
    from hsskern.estimators.cv import score_fold
    with threadpool_limits(1):
        t0 = time.perf_counter()
        score_fold(*job)
        return time.perf_counter() - t0


def _backend(est, h):
    """The HSS backend the estimator's cells run, built from its public parameters."""
    from hsskern.kernels import make_kernel
    from hsskern.options import HSSOptions
    from hsskern.solvers.hss_path import HSSBackend
    p = est.get_params()
    opts = HSSOptions(**{k: p[k] for k in ("rel_tol", "abs_tol", "max_rank", "leaf_size",
                                            "n_neighbors", "random_state")})
    return HSSBackend(make_kernel(p["kernel"], h=h), approximation=p["approximation"],
                      hss_options=opts, beta=p["beta"], max_iter=p["max_iter"], tol=p["tol"],
                      relaxation=p["relaxation"], adaptive_beta=p["adaptive_beta"],
                      refine=p["refine"], max_chunk=p["max_chunk"])


def control(est, X, y, workers):
    """The same (width, fold) cells in a plain process pool, longest-first: no Dask at all."""
    import multiprocessing as mp
    from hsskern.estimators.cv import make_splits
    Cs = np.logspace(-2, 3, est.Cs) if np.ndim(est.Cs) == 0 else np.sort(est.Cs)
    jobs = [(_backend(est, w), X, y, tr, va, Cs) for w in np.atleast_1d(est.h)
            for tr, va in make_splits(est.cv, X, y, est.random_state)]
    ctx = mp.get_context("fork")
    with ctx.Pool(workers, maxtasksperchild=1) as pool:
        t0 = time.perf_counter()
        cells = pool.map(_control_cell, jobs, chunksize=1)
        return time.perf_counter() - t0, cells


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="ijcnn1")
    p.add_argument("--n", type=int, default=None, help="stratified subsample of the train set")
    p.add_argument("--h", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    p.add_argument("--Cs", type=int, default=10, help="np.logspace(-2, 3, Cs)")
    p.add_argument("--cv", type=float, default=0.2, help="<1: hold-out fraction; >=2: folds")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--max-iter", type=int, default=100)
    p.add_argument("--tag", default="", help="suffix of the result file name")
    p.add_argument("--control", action="store_true",
                   help="also run the cells in a plain process pool (no Dask)")
    args = p.parse_args()

    from distributed import Client, LocalCluster
    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    from hsskern import HSSSVCCV
    from hsskern.datasets import load
    from hsskern.distributed import DaskHSSSVCCV, limit_worker_threads

    X, y, _, _ = load(args.dataset)
    if args.n is not None and args.n < len(y):
        X, _, y, _ = train_test_split(X, y, train_size=args.n, stratify=y, random_state=0)
    cv = int(args.cv) if args.cv >= 1 else args.cv
    params = dict(h=args.h, Cs=args.Cs, cv=cv, refit=False, random_state=0,
                  max_iter=args.max_iter)
    print(f"{args.dataset}: n={len(y)}, d={X.shape[1]}, h={args.h}, {args.Cs} C, cv={cv}; "
          f"load {loadavg()}", flush=True)

    load_before = loadavg()
    k0 = cpu_ticks()
    with threadpool_limits(1):
        t0, c0 = time.perf_counter(), time.thread_time()
        ser = HSSSVCCV(**params).fit(X, y)
        t_serial = time.perf_counter() - t0
        cpu_serial = time.thread_time() - c0
    serial_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ticks = {"serial": ticks_since(k0)}
    print(f"serial: {t_serial:.1f} s, best h={ser.h_:g} C={ser.C_:g} "
          f"({ser.best_score_:.4f}); load {loadavg()}", flush=True)

    env = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, env=env) as cluster, Client(cluster) as client:
        limit_worker_threads(client, 1)
        # import everything on the workers first: start-up is not part of the grid's cost
        client.run(lambda: __import__("hsskern.estimators.hss_svc"))
        idle = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        t0, k0 = time.perf_counter(), cpu_ticks()
        dsk = DaskHSSSVCCV(**params).fit(X, y)
        t_dask = time.perf_counter() - t0
        ticks["dask"] = ticks_since(k0)
        print(f"dask ({args.workers} workers): {t_dask:.1f} s, best h={dsk.h_:g} "
              f"C={dsk.C_:g}; load {loadavg()}", flush=True)
        # the refit of the winner: one task on one worker (a 1 x 1 grid whose search cells
        # are left out of the figures; only its last task, the refit, is kept)
        refit = DaskHSSSVCCV(**{**params, "h": [dsk.h_], "Cs": [dsk.C_], "refit": True})
        refit.fit(X, y)
        refit_info = refit.task_info_[-1:]
        t_refit = refit_info[0]["seconds"]
        peaks, extra = {}, {}
        for t in dsk.task_info_ + refit_info:
            peaks[t["worker"]] = max(peaks.get(t["worker"], 0), t["peak_rss_bytes"])
            extra[t["worker"]] = max(extra.get(t["worker"], 0), t["task_peak_extra_bytes"] or 0)
        tasks = [{"h": t["width"], "fold": t["fold"], "worker": t["worker"],
                  "seconds": round(t["seconds"], 3), "cpu_seconds": round(t["cpu_seconds"], 3),
                  "task_peak_extra_bytes": t["task_peak_extra_bytes"]}
                 for t in dsk.task_info_ + refit_info]
        # the busiest worker's CPU: what the wall time would be if every worker had a core
        # to itself (the wall-clock speed-up is only meaningful on an otherwise idle machine)
        cpu_per_worker = {}
        for t in dsk.task_info_:
            cpu_per_worker[t["worker"]] = cpu_per_worker.get(t["worker"], 0) + t["cpu_seconds"]
    t_control = cells = None
    if args.control:
        k0 = cpu_ticks()
        t_control, cells = control(ser, X, y, args.workers)
        ticks["control"] = ticks_since(k0)
        print(f"control (plain pool of {args.workers} processes): {t_control:.1f} s = "
              f"{t_serial / t_control:.2f}x; cells {[round(c, 1) for c in cells]}", flush=True)
    load_after = loadavg()
    print(f"machine CPU and hypervisor steal per phase: {ticks}", flush=True)

    same = all(np.array_equal(ser.cv_results_[k], dsk.cv_results_[k])
               for k in ser.cv_results_ if not k.endswith("_time"))
    same = same and (ser.h_, ser.C_) == (dsk.h_, dsk.C_)
    speedup = t_serial / t_dask
    cpu_speedup = cpu_serial / max(cpu_per_worker.values())
    print(f"speed-up {speedup:.2f}x (target >= 1.7), results identical: {same}; "
          f"refit {t_refit:.1f} s; peak RSS per worker "
          f"{[f'{v / 2**20:.0f} MB' for v in peaks.values()]} "
          f"(idle worker {max(idle.values()) / 2**20:.0f} MB), largest task on top of it "
          f"{[f'{v / 2**20:.1f} MB' for v in extra.values()]}; load {load_after}", flush=True)
    print(f"CPU-time speed-up {cpu_speedup:.2f}x (serial CPU {cpu_serial:.1f} s / busiest "
          f"worker CPU {max(cpu_per_worker.values()):.1f} s)", flush=True)
    path = write_result("dask_grid" + args.tag, {
        "command": "python " + " ".join(sys.argv),
        "dataset": args.dataset, "n": int(len(y)), "d": int(X.shape[1]),
        "h": args.h, "Cs": [float(c) for c in np.logspace(-2, 3, args.Cs)], "cv": cv,
        "workers": args.workers, "threads_per_worker": 1,
        "serial_seconds": t_serial, "dask_seconds": t_dask, "speedup": speedup,
        "refit_seconds_on_worker": t_refit,
        "serial_cpu_seconds": cpu_serial, "cpu_seconds_per_worker": cpu_per_worker,
        "cpu_speedup": cpu_speedup,
        "identical_to_serial": bool(same),
        "control_pool_seconds": t_control, "control_cell_seconds": cells,
        "control_speedup": None if t_control is None else t_serial / t_control,
        "machine_ticks": ticks,
        "best": {"h": dsk.h_, "C": dsk.C_, "validation_accuracy": dsk.best_score_},
        "peak_rss_bytes_per_worker": peaks,
        "task_peak_extra_bytes_per_worker": extra,
        "idle_worker_rss_bytes": max(idle.values()),
        "serial_process_peak_rss_bytes": serial_peak,
        "tasks": tasks,
        "loadavg_before": load_before, "loadavg_after": load_after,
        "cpu_count": os.cpu_count(),
    })
    print(f"-> {path}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
