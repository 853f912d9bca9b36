"""Where kernel entries from sparse rows are not slower than from the densified rows.

    python bench/sparse_rows_threshold.py                 # every shape below
    python bench/sparse_rows_threshold.py --shapes w8a 300:0.04

The exact decomposition (ExactSVC, HSSSVC(start="decomposition")) touches the points through
two operations: each round's working-set block K[W, W] (|W| = 4000 here, the upper triangle
mirrored) and the decision-value update K(X, X[cols]) @ c over all rows (4000 columns here).
Both are timed on the same rows through the dense operator (the rows densified, as the
estimators did before) and through the sparse-rows operator, medians of ``--repeat`` runs,
Gaussian kernel with h^2 = mean |x|^2. Shapes: ``w8a`` (the shared set: 300 binary features,
3.9% nonzero) and synthetic ``d:density`` rows whose features are drawn with Zipf-like
frequencies (as words in text: a few features in many rows) and normal values. Writes
``bench/results/sparse_rows_threshold.json`` (``--name``) with the load average before and
after each shape.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import load_shared, measure, write_result  # noqa: E402

DEFAULT_SHAPES = ["w8a", "100:0.05", "100:0.2", "300:0.04", "300:0.1", "300:0.25",
                  "2000:0.01", "2000:0.05", "2000:0.2", "20000:0.002", "20000:0.01"]


def zipf_rows(n, d, density, seed):
    """n CSR rows of d features, ~density * d nonzeros each, feature k drawn with
    probability ~ 1 / (k + 10) (a permuted order), values normal."""
    rng = np.random.default_rng(seed)
    per_row = max(1, int(round(density * d)))
    p = 1.0 / (np.arange(d) + 10.0)
    p /= p.sum()
    perm = rng.permutation(d)
    rows = []
    for _ in range(n):
        k = np.unique(perm[rng.choice(d, size=per_row, p=p)])
        rows.append(k)
    indptr = np.concatenate([[0], np.cumsum([r.size for r in rows])])
    indices = np.concatenate(rows)
    data = rng.normal(size=indices.size)
    return sp.csr_matrix((data, indices, indptr), shape=(n, d))


def run_shape(label, X, n_block, n_cols, repeat):
    from hsskern.kernels import KernelOperator, make_kernel
    from hsskern.kernels.sparse_rows import SparseRowsKernelOperator, check_sparse_rows
    X = check_sparse_rows(X)
    n, d = X.shape
    h = float(np.sqrt(X.multiply(X).sum() / n)) or 1.0
    kern = make_kernel("gaussian", h=h)
    t0 = time.perf_counter()
    Xd = X.toarray()
    t_densify = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    W = np.sort(rng.choice(n, size=min(n_block, n), replace=False))
    cols = np.sort(rng.choice(n, size=min(n_cols, n), replace=False))
    c = rng.normal(size=cols.size)
    out = {"shape": label, "n": n, "d": d, "density": X.nnz / (n * d),
           "nnz_per_row": X.nnz / n, "h": h, "densify_s": t_densify,
           "block": W.size, "product_columns": cols.size, "load_before": os.getloadavg()}
    dense, sparse = KernelOperator(Xd, kern), SparseRowsKernelOperator(X, kern)
    res = {}
    for name, op, P in (("dense", dense, Xd), ("sparse", sparse, X)):
        buf = np.empty((W.size, W.size))
        tb, _, B = measure(lambda: op.submatrix(W, W, out=buf).copy(), repeat)

        def product():
            K = (KernelOperator if name == "dense" else SparseRowsKernelOperator)(P[cols], kern)
            return K.cross(P) @ c
        tp, _, f = measure(product, repeat)
        res[name] = (tb, tp, B, f)
    (tbd, tpd, Bd, fd), (tbs, tps, Bs, fs) = res["dense"], res["sparse"]
    out.update({"block_dense_s": tbd, "block_sparse_s": tbs, "product_dense_s": tpd,
                "product_sparse_s": tps, "block_ratio": tbs / tbd, "product_ratio": tps / tpd,
                "block_max_abs_diff": float(np.abs(Bs - Bd).max()),
                "product_max_rel_diff": float(np.abs(fs - fd).max() / np.abs(fd).max()),
                "load_after": os.getloadavg()})
    print(f"{label:>12} n={n} d={d} density={out['density']:.4f} ({out['nnz_per_row']:.0f}/row)"
          f"  block {tbd:.3f} dense / {tbs:.3f} sparse ({tbs / tbd:.2f}x)"
          f"  product {tpd:.3f} / {tps:.3f} ({tps / tpd:.2f}x)  densify {t_densify:.3f} s"
          f"  load {out['load_before'][0]:.1f}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES)
    ap.add_argument("--n", type=int, default=10000, help="rows of the synthetic shapes")
    ap.add_argument("--n-wide", type=int, default=5000,
                    help="rows of the shapes with d >= 10000 (their dense copies: 8 n d bytes)")
    ap.add_argument("--block", type=int, default=4000)
    ap.add_argument("--columns", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--name", default="sparse_rows_threshold",
                    help="results file bench/results/<name>.json")
    args = ap.parse_args()
    results = []
    for shape in args.shapes:
        if shape == "w8a":
            data = load_shared("w8a")
            if data is None:
                print("w8a not found, skipped")
                continue
            X = sp.csr_matrix(data[0][:args.n])
        else:
            d, density = shape.split(":")
            d = int(d)
            X = zipf_rows(args.n if d < 10000 else args.n_wide, d, float(density), seed=0)
        results.append(run_shape(shape, X, args.block, args.columns, args.repeat))
    path = write_result(args.name, {"args": vars(args), "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
