"""Kernel operator throughput vs the blocked scikit-learn route, same process, 1 and 2 threads.

    python bench/kernel_ops.py [--n 50000] [--repeat 3] [--d D --h H] [--tag T]

matvec of the Gaussian operator (h = 1, or ``--h``) against rbf_kernel computed in row blocks
of 2000 followed by a dot (the usual way to get K @ v without an n x n array), plus submatrix
throughput for 512 x 512 and 32 x 4096 blocks. Data: ijcnn1 (n = 50,000 rows of
../shared/datasets/ijcnn1.npz) when present, else standard normal points of the same shape;
``--d``: standard normal points with d features (kin40k's shape is ``--d 8 --h 1.7``), where
d <= 12 takes the fused one-vector product (and ``K.single_precision()``'s float32 product is
timed too). Run it on two builds (PYTHONPATH) with ``--tag``
to compare them.
"""
import argparse
import sys

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel
from threadpoolctl import threadpool_limits

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import load_shared, measure, write_result  # noqa: E402

from hsskern import kernel_operator  # noqa: E402


def sklearn_matvec(X, v, gamma, rows=2000):
    out = np.empty(len(X))
    for i in range(0, len(X), rows):
        out[i:i + rows] = rbf_kernel(X[i:i + rows], X, gamma=gamma) @ v
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--d", type=int, default=None)
    ap.add_argument("--h", type=float, default=1.0)
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    data = None if args.d else load_shared("ijcnn1")
    if args.d:
        X = np.random.default_rng(0).standard_normal((args.n, args.d))
        source = f"normal(0,1), d={args.d}"
    elif data is not None:
        X = data[0][:args.n]
        source = "ijcnn1"
    else:
        X = np.random.default_rng(0).standard_normal((args.n, 22))
        source = "normal(0,1), d=22"
    n = len(X)
    K = kernel_operator(X, "gaussian", h=args.h)
    v = np.random.default_rng(1).standard_normal(n)
    rng = np.random.default_rng(2)
    results = {"n": n, "d": X.shape[1], "h": args.h, "data": source, "threads": {}}
    for threads in (1, 2):
        with threadpool_limits(threads):
            t_ours, m_ours, y_ours = measure(lambda: K @ v, args.repeat)
            single = K.single_precision()  # None unless Gaussian with d <= 12
            if single is not None:
                t_single, _, y_single = measure(lambda: single @ v, args.repeat)
            t_sk, m_sk, y_sk = measure(lambda: sklearn_matvec(X, v, K.kernel.gamma),
                                       args.repeat)
            sub = {}
            for (a, b) in ((512, 512), (32, 4096)):
                I = rng.integers(0, n, a)
                J = rng.integers(0, n, b)
                reps = 200
                t, _, _ = measure(lambda: [K.submatrix(I, J) for _ in range(reps)], 3)
                sub[f"{a}x{b}"] = a * b * reps / t
        err = float(np.linalg.norm(y_ours - y_sk) / np.linalg.norm(y_sk))
        results["threads"][threads] = {
            "matvec_s": t_ours, "matvec_peak_extra_MB": m_ours / 2**20,
            "sklearn_blocked_s": t_sk, "sklearn_peak_extra_MB": m_sk / 2**20,
            "speedup_vs_sklearn": t_sk / t_ours, "rel_diff": err,
            "submatrix_entries_per_s": sub}
        if single is not None:
            results["threads"][threads].update(
                single_matvec_s=t_single,
                single_rel_diff=float(np.linalg.norm(y_single - y_ours) / np.linalg.norm(y_ours)))
            print(f"threads={threads}: single-precision matvec {t_single:.2f} s, rel diff "
                  f"{results['threads'][threads]['single_rel_diff']:.1e}")
        print(f"threads={threads}: matvec {t_ours:.2f} s ({m_ours / 2**20:.0f} MB extra) | "
              f"sklearn blocked {t_sk:.2f} s ({m_sk / 2**20:.0f} MB) | ratio "
              f"{t_sk / t_ours:.2f}x | rel diff {err:.1e} | submatrix 512x512 "
              f"{sub['512x512'] / 1e6:.0f} M/s, 32x4096 {sub['32x4096'] / 1e6:.0f} M/s")
    path = write_result("kernel_ops" + args.tag, results)
    print("wrote", path)


if __name__ == "__main__":
    main()
