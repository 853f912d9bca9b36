"""HSS compression and ULV factorization: time per phase, ranks, memory, error.

    python bench/hss_compress.py [--sizes 10000,50000,100000] [--threads 1,2] [--ijcnn1]
                                 [--opts first,second]
    python bench/hss_compress.py --profile 100000

Synthetic: gmm8(n) from ../shared/tools/gen_gmm.py (d = 8), Gaussian kernel h = 1.
ijcnn1 (--ijcnn1): h = 1 and h = 0.1. For n <= 100,000 the relative error ||K - H|| / ||K||
is estimated with 4 Gaussian probe vectors against the exact blocked operator (for Gaussian
probes E||A w||^2 = ||A||_F^2, so this is a Frobenius-norm estimate).

Option sets (ours, chosen to land at or below the C++ reference's error):
  first : rel_tol 0.07, abs_tol 0.007, max_rank 200, n_neighbors 64,  leaf 128
  second: rel_tol 0.03, abs_tol 0.003, max_rank 2000, n_neighbors 512, leaf 256
The reference (STRUMPACK 8.0, HSS-ANN, first option set, 2 threads, beta = 100) measured on
this machine class: compress 1.36 / 17.1 / 56.1 s, error 0.245 / 0.27 / 0.30, max rank
21 / 41 / 40, HSS memory 33 / 172 / 344 MB; ULV factor 0.12 / 1.09 / 3.1 s, one solve 0.005 /
0.084 / 0.17 s, ULV memory 63 / 315 / 629 MB at n = 1e4 / 5e4 / 1e5.
"""
import argparse
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(__file__))
from _common import SHARED, load_shared, rss_bytes, write_result  # noqa: E402

from hsskern import kernel_operator  # noqa: E402
from hsskern.hss import HSSOptions, compress  # noqa: E402

OPTION_SETS = {
    "first": dict(rel_tol=0.07, abs_tol=0.007, max_rank=200, n_neighbors=64, leaf_size=128),
    "second": dict(rel_tol=0.03, abs_tol=0.003, max_rank=2000, n_neighbors=512,
                   leaf_size=256),
}
REFERENCE = {10000: dict(compress=1.36, error=0.245, max_rank=21, hss_MB=33, factor=0.12,
                         solve=0.005, ulv_MB=63),
             50000: dict(compress=17.1, error=0.27, max_rank=41, hss_MB=172, factor=1.09,
                         solve=0.084, ulv_MB=315),
             100000: dict(compress=56.1, error=0.30, max_rank=40, hss_MB=344, factor=3.1,
                          solve=0.17, ulv_MB=629)}


def gmm8(n):
    sys.path.insert(0, str(SHARED.parent / "tools"))
    from gen_gmm import gmm8 as g
    return g(n)[0]


def probe_error(K, H, n_probe=4, seed=0):
    W = np.random.default_rng(seed).standard_normal((K.shape[0], n_probe))
    KW = K @ W
    return float(np.linalg.norm(H @ W - KW) / np.linalg.norm(KW))


def run_one(X, h, opts, threads, beta=100.0, seed=0, max_err_n=100000):
    with threadpool_limits(threads):
        K = kernel_operator(X, "gaussian", h=h)
        rss0 = rss_bytes()
        t0 = time.perf_counter()
        H = compress(K, HSSOptions(random_state=seed, **opts))
        t_compress = time.perf_counter() - t0
        t0 = time.perf_counter()
        F = H.factor(beta)
        t_factor = time.perf_counter() - t0
        b = np.random.default_rng(1).standard_normal(len(X))
        solves = []
        for _ in range(5):
            t0 = time.perf_counter()
            F.solve(b)
            solves.append(time.perf_counter() - t0)
        err = probe_error(K, H) if len(X) <= max_err_n else None
        peak_abs = rss_bytes("VmHWM")
        peak = peak_abs - rss0
    st = H.stats()
    return {"n": len(X), "h": h, "threads": threads, "compress_s": t_compress,
            "phases_s": st["timings"], "max_rank": st["max_rank"],
            "ranks_per_level": st["ranks_per_level"], "hss_MB": st["memory_bytes"] / 2**20,
            "error": err, "factor_s": t_factor, "solve_s": float(np.median(solves)),
            "ulv_MB": F.memory_bytes() / 2**20, "beta": beta,
            "peak_rss_MB_above_start": peak / 2**20, "peak_rss_MB": peak_abs / 2**20,
            "load_1min_after": os.getloadavg()[0]}


def fmt(r):
    ph = ", ".join(f"{k} {v:.2f}" for k, v in r["phases_s"].items())
    err = "n/a" if r["error"] is None else f"{r['error']:.3f}"
    return (f"n={r['n']:>8} h={r['h']:<4} thr={r['threads']} compress {r['compress_s']:7.2f} s "
            f"({ph}) err {err} rank {r['max_rank']:>4} HSS {r['hss_MB']:7.1f} MB | factor "
            f"{r['factor_s']:6.2f} s solve {r['solve_s']:.4f} s ULV {r['ulv_MB']:7.1f} MB")


def profile(n):
    """The compiled-vs-Python split of one compression. Cython functions do not show in
    cProfile: their time is the tottime of the Python function that calls them."""
    import cProfile
    import pstats
    X = gmm8(n)
    with threadpool_limits(1):
        K = kernel_operator(X, "gaussian", h=1.0)
        pr = cProfile.Profile()
        pr.enable()
        H = compress(K, HSSOptions(random_state=0, **OPTION_SETS["first"]))
        pr.disable()
    print("phases [s]:", {k: round(v, 2) for k, v in H.stats()["timings"].items()})
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,50000,100000")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--opts", default="first")
    ap.add_argument("--ijcnn1", action="store_true")
    ap.add_argument("--out", default="hss_compress", help="result file name (bench/results/)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="instead: cProfile one compression of gmm8(N) (first option set, one "
                         "thread) and print where the time goes")
    args = ap.parse_args()
    if args.profile:
        return profile(args.profile)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    threads = [int(t) for t in args.threads.split(",")]
    runs = []
    for name in args.opts.split(","):
        opts = OPTION_SETS[name]
        for n in sizes:
            X = gmm8(n)
            for th in threads:
                r = run_one(X, 1.0, opts, th)
                r.update(data="gmm8", option_set=name, reference=REFERENCE.get(n))
                runs.append(r)
                print(name, fmt(r), f"peak RSS {r['peak_rss_MB']:.0f} MB load {r['load_1min_after']:.1f}",
                      flush=True)
        if args.ijcnn1:
            data = load_shared("ijcnn1")
            if data is None:
                print("ijcnn1 not present; skipped")
                continue
            for h in (1.0, 0.1):
                for th in threads:
                    r = run_one(data[0], h, opts, th)
                    r.update(data="ijcnn1", option_set=name)
                    runs.append(r)
                    print(name, "ijcnn1", fmt(r), flush=True)
    path = write_result(args.out, {"option_sets": OPTION_SETS, "runs": runs})
    print("wrote", path)


if __name__ == "__main__":
    main()
