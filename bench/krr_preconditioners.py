"""Preconditioners for exact kernel ridge regression: what else was tried against the
randomly pivoted Cholesky (RPCholesky) Nystrom factor that ``HSSKernelRidge(solver="exact",
approximation="nystrom")`` uses.

Every variant preconditions the same conjugate gradients on the exact kernel operator + alpha I
(from zero, to a relative residual of ``--tol``, 1e-10 as the estimator's default) with a
rank-k Nystrom approximation K ~ C W^{-1} C^T + alpha I on k landmark columns C = K[:, S],
applied by Woodbury. They differ in how S is chosen and what the setup costs:

* ``rpcholesky``: the library route: S and F (C W^{-1/2}) from :func:`hsskern.lowrank.rp_cholesky`
  (O(n k^2): every block updates all n rows), then F^T F + alpha I and its Cholesky
  (:class:`hsskern.factors.LowRankShiftFactor`, another n k^2).
* ``uniform``: S uniformly at random, no F: (C K_SS^{-1} C^T + alpha I)^{-1} =
  (I - C (C^T C + alpha K_SS)^{-1} C^T) / alpha, one n k^2 product and a k x k Cholesky.
* ``subsample``: S from RPCholesky on a uniform subsample of ``--subsample`` x k points
  (O(m k^2), m << n), then as ``uniform``.
* ``float32``: the RPCholesky F stored in single precision (F^T F by ``ssyrk``, the k x k
  Cholesky in double), so each application reads half the bytes.

Reported per variant: setup seconds (pivots, factor), CG iterations and seconds, the true
relative residual of the answer (in double), to ``bench/results/krr_preconditioners_<set>.json``.
BLAS single-threaded, the kernel products on OpenMP threads, as in ``bench/regression.py``.

    python bench/krr_preconditioners.py --dataset kin40k --n 32000 --h 1.7 --alpha 0.004 --rank 4000
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from threadpoolctl import threadpool_limits  # noqa: E402

from _common import write_result  # noqa: E402
from regression import load_regression  # noqa: E402
from hsskern.factors import LowRankShiftFactor  # noqa: E402
from hsskern.kernels import kernel_operator  # noqa: E402
from hsskern.kernels.functions import make_kernel  # noqa: E402
from hsskern.lowrank import rp_cholesky  # noqa: E402

VARIANTS = ("rpcholesky", "uniform", "subsample", "float32")


def pcg(K, alpha, y, apply_m, tol, max_iter=1000):
    """Preconditioned CG from zero; (iterations, seconds, true relative residual)."""
    t0 = time.perf_counter()
    x = np.zeros_like(y)
    r = y.copy()
    z = apply_m(r)
    p = z.copy()
    rz = r @ z
    ny = np.linalg.norm(y)
    for it in range(1, max_iter + 1):
        Ap = K.matvec(p) + alpha * p
        a = rz / (p @ Ap)
        x += a * p
        r -= a * Ap
        if np.linalg.norm(r) <= tol * ny:
            break
        z = apply_m(r)
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    seconds = time.perf_counter() - t0
    true = np.linalg.norm(y - K.matvec(x) - alpha * x) / ny
    return it, seconds, float(true)


def landmark_woodbury(K, S, alpha):
    """(C K_SS^{-1} C^T + alpha I)^{-1} as a function, C = K[:, S]."""
    C = K.submatrix(np.arange(K.shape[0]), S)
    M = C.T @ C
    M += alpha * C[S]
    L = scipy.linalg.cholesky(M, lower=True, check_finite=False)
    return lambda v: (v - C @ scipy.linalg.cho_solve((L, True), C.T @ v,
                                                     check_finite=False)) / alpha


def float32_woodbury(F, alpha):
    F32 = F.astype(np.float32)
    M = (F32.T @ F32).astype(np.float64)
    M[np.diag_indices_from(M)] += alpha
    L = scipy.linalg.cholesky(M, lower=True, check_finite=False)

    def apply_m(v):
        z = scipy.linalg.cho_solve((L, True), (F32.T @ v.astype(np.float32)).astype(np.float64),
                                   check_finite=False)
        return (v - F32 @ z.astype(np.float32)) / alpha
    return apply_m


def run(variant, X, y, kernel, alpha, k, tol, subsample, seed=0):
    K = kernel_operator(X, kernel)
    n = X.shape[0]
    t0 = time.perf_counter()
    if variant in ("rpcholesky", "float32"):
        F = rp_cholesky(K, k, random_state=seed).F
        t1 = time.perf_counter()
        apply_m = (LowRankShiftFactor(F, alpha).solve if variant == "rpcholesky"
                   else float32_woodbury(F, alpha))
    else:
        rng = np.random.default_rng(seed)
        if variant == "uniform":
            S = np.sort(rng.choice(n, k, replace=False))
        else:
            sub = np.sort(rng.choice(n, min(n, subsample * k), replace=False))
            S = np.sort(sub[rp_cholesky(kernel_operator(X[sub], kernel), k,
                                        random_state=seed).pivots])
        t1 = time.perf_counter()
        try:
            apply_m = landmark_woodbury(K, S, alpha)
        except np.linalg.LinAlgError as exc:  # repeated rows drawn as landmarks: K_SS singular
            return {"variant": variant, "rank": k, "pivots_s": t1 - t0, "failed": str(exc),
                    "load": os.getloadavg()[0]}
    t2 = time.perf_counter()
    its, cg_s, true = pcg(K, alpha, y, apply_m, tol)
    return {"variant": variant, "rank": k, "pivots_s": t1 - t0, "factor_s": t2 - t1,
            "iterations": its, "cg_s": cg_s, "total_s": t2 - t0 + cg_s,
            "true_residual": true, "load": os.getloadavg()[0]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="kin40k")
    p.add_argument("--n", type=int, default=32000)
    p.add_argument("--h", type=float, default=1.7)
    p.add_argument("--alpha", type=float, default=0.004)
    p.add_argument("--rank", type=int, default=4000)
    p.add_argument("--tol", type=float, default=1e-10)
    p.add_argument("--subsample", type=int, default=4, help="subsample size / rank")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--tag", default="")
    args = p.parse_args()
    X, y = load_regression(args.dataset)[:2]
    X, y = np.ascontiguousarray(X[:args.n]), np.ascontiguousarray(y[:args.n], dtype=float)
    kernel = make_kernel("gaussian", h=args.h)
    runs = []
    with threadpool_limits(1, user_api="blas"):
        for variant in args.variants:
            runs.append(run(variant, X, y, kernel, args.alpha, args.rank, args.tol,
                            args.subsample))
            r = runs[-1]
            if "failed" in r:
                print(f"{args.dataset} k={args.rank} {variant:>10}: failed ({r['failed']})")
                continue
            print(f"{args.dataset} n={len(y)} k={args.rank} {variant:>10}: setup "
                  f"{r['pivots_s']:.1f} + {r['factor_s']:.1f} s, {r['iterations']} iterations "
                  f"{r['cg_s']:.1f} s, total {r['total_s']:.1f} s, true residual "
                  f"{r['true_residual']:.1e}", flush=True)
    path = write_result(f"krr_preconditioners_{args.dataset}_k{args.rank}{args.tag}",
                        {"dataset": args.dataset, "n": len(y), "d": X.shape[1], "h": args.h,
                         "alpha": args.alpha, "tol": args.tol, "subsample": args.subsample,
                         "runs": runs})
    print(path)


if __name__ == "__main__":
    main()
