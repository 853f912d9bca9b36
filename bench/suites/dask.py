"""Dask: the (width, C) grid and one large exact problem on a LocalCluster, against serial.

    python -m bench dask --data ijcnn1 --workers 2                      # the grid
    python -m bench dask --data ijcnn1 --n-train 8000 --tag n8000
    python -m bench dask --modes exact --data gmm8_200000 --C 1

``grid``: ``HSSSVCCV`` in one process (BLAS/OpenMP at one thread) against ``DaskHSSSVCCV``
on a LocalCluster of ``--workers`` single-threaded worker processes (a task per width x
fold), both with ``refit=False`` (the grid is what is distributed); the two must choose the
same (h, C) with the same scores (``identical``). ``exact``: ``ExactSVC`` against
``DaskExactSVC`` (its kernel products on workers holding row blocks of X), the same C.

``peak_rss`` is the driving process's; a worker's own peak is in ``worker_peak_rss``. The
wall-clock speed-up needs an otherwise idle machine (with other jobs running, the session
gets one fair share of the cores however many processes it starts).
"""
import resource
import time

import numpy as np

from bench.harness import PEERS, DataSpec, Peer, describe, load_data

DESCRIPTION = "the (width, C) grid and one exact problem on a Dask LocalCluster vs serial"
TASKS = "bench.suites.dask"

PEERS.setdefault("dask", Peer("dask", "hsskern.distributed on a Dask LocalCluster", None,
                              requires="distributed", install="pip install 'hsskern[dask]'"))


def add_arguments(p):
    p.add_argument("--data", default="ijcnn1")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--n-test", type=int, default=None)
    p.add_argument("--modes", nargs="+", default=["grid"], choices=["grid", "exact"])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--h", nargs="+", type=float, default=[0.5, 1.0, 2.0, 4.0])
    p.add_argument("--Cs", type=int, default=10, help="np.logspace(-2, 3, Cs)")
    p.add_argument("--cv", type=float, default=0.2, help="< 1: hold-out fraction; >= 2: folds")
    p.add_argument("--C", type=float, default=1.0, help="exact mode's C")


def run(args, bench):
    spec = DataSpec(args.data, args.n_train, args.n_test)
    bench.data = describe(spec, load_data(spec))
    params = {"h": args.h, "Cs": args.Cs, "cv": int(args.cv) if args.cv >= 1 else args.cv,
              "workers": args.workers, "C": args.C}
    for mode in args.modes:
        label = (f"grid {len(args.h)} h x {args.Cs} C, {args.workers} workers" if mode == "grid"
                 else f"exact C={args.C:g}, {args.workers} workers")
        print(f"{label}:", flush=True)
        recs = {s: bench.measure(f"{TASKS}:{mode}_task", s, spec, params, args.repeat,
                                 warmup=False) for s in ("hsskern", "dask")}
        case = bench.add_case(label, mode, recs, params=params)
        if recs["dask"]["status"] == "ok" and recs["hsskern"]["status"] == "ok":
            case["speedup"] = recs["hsskern"]["time"] / recs["dask"]["time"]
            case["identical"] = recs["hsskern"]["choice"] == recs["dask"]["choice"]
    return f"dask_{args.data}"


def _cluster(workers):
    from distributed import Client, LocalCluster
    env = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, env=env)
    return cluster, Client(cluster)


def _worker_peaks(client):
    return list(client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                           * 1024).values())


def grid_task(data, params):
    from threadpoolctl import threadpool_limits
    X, y, Xt, yt = data
    kw = dict(h=params["h"], Cs=params["Cs"], cv=params["cv"], refit=False, random_state=0)
    if params["system"] == "hsskern":
        from hsskern import HSSSVCCV
        with threadpool_limits(1):
            t0 = time.perf_counter()
            est = HSSSVCCV(**kw).fit(X, y)
            t = time.perf_counter() - t0
        extra = {}
    else:
        from hsskern.distributed import DaskHSSSVCCV, limit_worker_threads
        cluster, client = _cluster(params["workers"])
        with cluster, client:
            limit_worker_threads(client, 1)
            client.run(lambda: __import__("hsskern.estimators.hss_svc"))  # start-up excluded
            t0 = time.perf_counter()
            est = DaskHSSSVCCV(**kw).fit(X, y)
            t = time.perf_counter() - t0
            extra = {"worker_peak_rss": _worker_peaks(client)}
    scores = np.asarray(est.cv_results_["mean_test_score"]).tolist()
    return {"time": t, "score": float(est.best_score_),
            "choice": {"h": float(est.h_), "C": float(est.C_), "scores": scores}, **extra}


def exact_task(data, params):
    X, y, Xt, yt = data
    kw = dict(C=params["C"], h=params["h"][0] if len(params["h"]) == 1 else 1.0,
              random_state=0)
    if params["system"] == "hsskern":
        from hsskern import ExactSVC
        t0 = time.perf_counter()
        est = ExactSVC(**kw).fit(X, y)
        t = time.perf_counter() - t0
        extra = {}
    else:
        from hsskern.distributed import DaskExactSVC
        cluster, client = _cluster(params["workers"])
        with cluster, client:
            t0 = time.perf_counter()
            est = DaskExactSVC(scheduler=cluster.scheduler_address, **kw).fit(X, y)
            t = time.perf_counter() - t0
            extra = {"worker_peak_rss": _worker_peaks(client)}
    acc = float(np.mean(est.predict(Xt) == yt))
    return {"time": t, "score": acc, "choice": {"n_support": int(est.support_.size)}, **extra}
