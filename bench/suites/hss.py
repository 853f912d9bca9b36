"""HSS compression and ULV factorization against the C++ reference's figures.

    python -m bench hss --sizes 10000 50000 100000 --threads 1 2
    python -m bench hss --sizes 50000 --options second
    python -m bench hss --modes kernel --threads 1 2      # the kernel operator's K v

``kernel`` mode: the Gaussian operator's K v on ``--kernel-n`` rows of ``--kernel-data``
(ijcnn1: d = 22) against scikit-learn's ``rbf_kernel`` in row blocks of 2,000 followed by a
dot (K v without an n x n array), per thread count; ``score`` is their relative difference.

gmm8(n) of ../shared/tools/gen_gmm.py (d = 8), Gaussian h = 1, beta = 100, ours at an option
set chosen to land at or below the reference's error. Measured per (n, threads), each in a
fresh process: compression (and its phases), ranks per level, HSS memory, ||K - H|| / ||K||
(Frobenius, 4 Gaussian probes against the exact operator, n <= 10^5), ULV factor time and
memory, one solve. ``time`` is compression + factor; ``score`` the relative error.

The reference: STRUMPACK 8.0 HSS-ANN, the first option set, 2 threads, beta = 100, measured
on this machine class; its figures sit in each case next to ours (``reference_figures``).
"""
import time

import numpy as np

from bench.harness import DataSpec, describe, load_data

DESCRIPTION = ("HSS compression and ULV factorization vs the STRUMPACK reference figures; "
               "the kernel operator's K v vs scikit-learn")
TASKS = "bench.suites.hss"

OPTION_SETS = {
    "first": dict(rel_tol=0.07, abs_tol=0.007, max_rank=200, n_neighbors=64, leaf_size=128),
    "second": dict(rel_tol=0.03, abs_tol=0.003, max_rank=2000, n_neighbors=512,
                   leaf_size=256),
}
# seconds, relative error, max rank, MB: STRUMPACK 8.0, first option set, 2 threads
REFERENCE = {
    10000: dict(compress=1.36, error=0.245, max_rank=21, hss_MB=33, factor=0.12,
                solve=0.005, ulv_MB=63),
    50000: dict(compress=17.1, error=0.27, max_rank=41, hss_MB=172, factor=1.09,
                solve=0.084, ulv_MB=315),
    100000: dict(compress=56.1, error=0.30, max_rank=40, hss_MB=344, factor=3.1,
                 solve=0.17, ulv_MB=629),
}


def add_arguments(p):
    p.add_argument("--sizes", nargs="+", type=int, default=[10000, 50000, 100000])
    p.add_argument("--threads", nargs="+", type=int, default=[2])
    p.add_argument("--options", choices=sorted(OPTION_SETS), default="first")
    p.add_argument("--h", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=100.0)
    p.add_argument("--modes", nargs="+", default=["compress"], choices=["compress", "kernel"])
    p.add_argument("--kernel-data", default="ijcnn1")
    p.add_argument("--kernel-n", type=int, default=50000)


def run(args, bench):
    if "kernel" in args.modes:
        spec = DataSpec(args.kernel_data, args.kernel_n)
        bench.data = describe(spec, load_data(spec))
        for threads in args.threads:
            label = f"K v, {bench.data['n_train']} x {bench.data['n_features']}, " \
                    f"threads={threads}"
            print(f"{label}:", flush=True)
            params = {"threads": threads, "h": args.h}
            recs = {s: bench.measure(f"{TASKS}:kernel_task", s, spec, params, args.repeat)
                    for s in ("hsskern", "sklearn")}
            bench.add_case(label, "kernel", recs, metric="rel_diff", params=params)
    if "compress" not in args.modes:
        return f"hss_kernel_{args.kernel_data}"
    for n in args.sizes:
        spec = DataSpec(f"gmm8_{n}")
        info = describe(spec, load_data(spec))
        bench.data = {"name": "gmm8", "sizes": args.sizes, "n_features": info["n_features"]}
        for threads in args.threads:
            label = f"n={n} threads={threads}"
            print(f"{label}:", flush=True)
            params = {"threads": threads, "h": args.h, "beta": args.beta,
                      "options": OPTION_SETS[args.options]}
            rec = bench.measure(f"{TASKS}:task", "hsskern", spec, params, args.repeat)
            ref = REFERENCE.get(n) if args.options == "first" else None
            vs = {}
            if ref and rec["status"] == "ok":
                vs = {"compress": ref["compress"] / rec["compress"],
                      "factor": ref["factor"] / rec["factor"],
                      "solve": ref["solve"] / rec["solve"]}
            bench.add_case(label, "compress+factor", {"hsskern": rec}, metric="rel_error",
                           params=params, reference_figures=ref, reference_over_ours=vs)
    return f"hss_{args.options}"


def task(data, params):
    from threadpoolctl import threadpool_limits

    from hsskern import kernel_operator
    from hsskern.hss import HSSOptions, compress
    X = data[0]
    with threadpool_limits(params["threads"]):
        K = kernel_operator(X, "gaussian", h=params["h"])
        t0 = time.perf_counter()
        H = compress(K, HSSOptions(random_state=0, **params["options"]))
        t_compress = time.perf_counter() - t0
        t0 = time.perf_counter()
        F = H.factor(params["beta"])
        t_factor = time.perf_counter() - t0
        b = np.random.default_rng(1).standard_normal(len(X))
        solves = []
        for _ in range(5):
            t0 = time.perf_counter()
            F.solve(b)
            solves.append(time.perf_counter() - t0)
        err = None
        if len(X) <= 100_000:
            W = np.random.default_rng(0).standard_normal((len(X), 4))
            KW = K @ W
            err = float(np.linalg.norm(H @ W - KW) / np.linalg.norm(KW))
    st = H.stats()
    return {"time": t_compress + t_factor, "score": err, "compress": t_compress,
            "phases": st["timings"], "max_rank": st["max_rank"],
            "ranks_per_level": st["ranks_per_level"], "hss_MB": st["memory_bytes"] / 2**20,
            "factor": t_factor, "solve": float(np.median(solves)),
            "ulv_MB": F.memory_bytes() / 2**20}


def kernel_task(data, params):
    from threadpoolctl import threadpool_limits
    X = data[0]
    v = np.random.default_rng(1).standard_normal(len(X))
    gamma = 1.0 / (2 * params["h"] ** 2)
    with threadpool_limits(params["threads"]):
        if params["system"] == "hsskern":
            from hsskern import kernel_operator
            K = kernel_operator(X, "gaussian", h=params["h"])
            t0 = time.perf_counter()
            y = K @ v
        else:
            from sklearn.metrics.pairwise import rbf_kernel
            t0 = time.perf_counter()
            y = np.concatenate([rbf_kernel(X[i:i + 2000], X, gamma=gamma) @ v
                                for i in range(0, len(X), 2000)])
        t = time.perf_counter() - t0
    # each system in its own process: both are checked on 200 rows against the plain formula
    rows = np.random.default_rng(2).choice(len(X), min(200, len(X)), replace=False)
    sq = np.einsum("ij,ij->i", X, X)
    d2 = np.maximum(sq[rows, None] + sq[None, :] - 2.0 * (X[rows] @ X.T), 0.0)
    ref = np.exp(-gamma * d2) @ v
    return {"time": t, "score": float(np.linalg.norm(y[rows] - ref) / np.linalg.norm(ref))}
