"""Whole-kernel cache vs evaluating the kernel: the exact decomposition from zero over a C grid.

    python bench/small_n_dense_cache.py magic04 --standardize --h 1 --mode cache
    python bench/small_n_dense_cache.py magic04 --standardize --h 1 --mode evaluate
    python bench/small_n_dense_cache.py a9a --h 1 --mode stored

``evaluate`` runs ``refine_exact`` from alpha = 0 at the first C and the scaled continuation
after it on the kernel operator (what ``start="decomposition"`` does); ``cache`` first holds
the dense n x n kernel (8 n^2 bytes) and serves the working sets' blocks and the decision-value
updates from it by NumPy gathers (the operator's ``submatrix`` and the ``products`` hook of
``refine_exact``). Prints per-C phase times and the grid's total, with the load average.
Measured 2026-11-27 (README, "Small problems"): the cache was slower on magic04 (54.5 vs 22.3 s,
load 5) and phishing (8.5 vs 4.8 s, load 1.8), so the library evaluates. ``stored`` is what
the library does from 64 features on (``KernelOperator.stored()``: compiled gathers and row
streaming instead of NumPy's fancy indexing).
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import load_shared  # noqa: E402
from hsskern.kernels import kernel_operator, make_kernel  # noqa: E402
from hsskern.solvers.refine import refine_exact  # noqa: E402


class CachedKernel:
    """The kernel operator's points and kernel, its blocks gathered from a dense K."""

    def __init__(self, K, Kd):
        self.points, self.kernel, self.shape, self.Kd = K.points, K.kernel, K.shape, Kd

    def submatrix(self, I, J, out=None):
        r = self.Kd[np.ix_(np.asarray(I), np.asarray(J))]
        if out is None:
            return r
        out[...] = r
        return out


class CachedProducts:
    """``refine_exact``'s products from the dense K (row bands: K is symmetric)."""

    def __init__(self, Kd):
        self.Kd = Kd

    def add(self, f, cols, c, skip=None):
        if not cols.size:
            return 0
        t = np.zeros(self.Kd.shape[0])
        for a in range(0, cols.size, 512):
            t += c[a:a + 512] @ self.Kd[cols[a:a + 512]]
        keep = np.ones(f.size, bool) if skip is None else ~skip
        f[keep] += t[keep]
        return int(keep.sum()) * cols.size


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset")
    p.add_argument("--h", type=float, default=1.0)
    p.add_argument("--standardize", action="store_true")
    p.add_argument("--mode", choices=["cache", "stored", "evaluate"], default="evaluate")
    args = p.parse_args(argv)
    X, y = load_shared(args.dataset)[:2]
    if args.standardize:
        sd = X.std(0)
        X = (X - X.mean(0)) / np.where(sd == 0, 1.0, sd)
    n = len(y)
    K = kernel_operator(X, make_kernel("gaussian", h=args.h))
    t0 = time.perf_counter()
    kw, KK = {}, K
    if args.mode == "cache":
        idx = np.arange(n)
        Kd = K.submatrix(idx, idx)
        KK, kw = CachedKernel(K, Kd), {"products": CachedProducts(Kd)}
        print(f"dense kernel {time.perf_counter() - t0:.3f} s ({8 * n * n / 2**30:.2f} GiB)")
    elif args.mode == "stored":
        KK = K.stored()
        print(f"stored kernel {time.perf_counter() - t0:.3f} s ({8 * n * n / 2**30:.2f} GiB)")
    total, ws, prev = time.perf_counter() - t0, {}, None
    for C in np.logspace(-2, 3, 10):
        t = time.perf_counter()
        if prev is None:
            r = refine_exact(KK, y, C, None, workspace=ws, **kw)
        else:
            s = C / prev[0]
            r = refine_exact(KK, y, C, s * prev[1].alpha, f=s * (prev[1].decision - prev[1].bias),
                             workspace=ws, **kw)
        prev = (C, r)
        dt = time.perf_counter() - t
        total += dt
        print(f"C={C:.3g} {dt:.3f} s, {r.rounds} rounds, converged {r.converged}, "
              + ", ".join(f"{k} {v:.3f}" for k, v in r.timings.items()), flush=True)
    print(f"grid {total:.2f} s ({args.mode}), load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
