"""Wide sparse classification from sparse rows: hsskern's exact SVM against LIBSVM.

    python bench/sparse_rows.py                  # n = 20,000, d = 50,000, ~50 nonzeros/row, C = 1
    python bench/sparse_rows.py --n 4000 --C 1 10   # smaller, two C

At the defaults LIBSVM takes ~380 s of the ~6.5 minutes (hsskern ~10 s).

The data (``make_problem``): rows with ~``nnz`` features each, drawn with Zipf-like
frequencies (a few features in many rows, most in few, as words in documents), values
|normal| (counts-like, all >= 0) scaled to unit row norm (as tf-idf rows are); labels from a
sparse linear rule (a random weight on the 2% most frequent features, which make up about
half of each row's nonzeros) through a threshold at the median, 5% flipped. Its dense copy would take 8 n d bytes (8 GB at the defaults): the estimators take
the rows as they are (``HSSSVC(start="decomposition")``: the exact decomposition from zero on
all training points, kernel entries from the sparse rows) and LIBSVM (scikit-learn's ``SVC``)
reads CSR natively. Both at gamma="scale" (SVC's formula on the sparse matrix), tol 1e-3, each
C fitted from scratch by each, back to back in this process; test accuracy, fit time, peak
extra RSS and the load average before and after are written to
``bench/results/sparse_rows_<n>x<d>.json``.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import measure, write_result  # noqa: E402


def make_problem(n, d, nnz, seed=0, informative=0.02, flip=0.05):
    """(X, y): n CSR rows of d features (~nnz each, Zipf-like feature frequencies, unit
    norm) and labels in {0, 1} from a sparse linear rule on the ``informative`` fraction of
    most frequent features."""
    rng = np.random.default_rng(seed)
    p = 1.0 / (np.arange(d) + 10.0)
    p /= p.sum()
    perm = rng.permutation(d)
    counts = rng.poisson(nnz, size=n).clip(1, d)
    cols = perm[rng.choice(d, size=int(counts.sum()), p=p)]
    rows = np.repeat(np.arange(n), counts)
    vals = np.abs(rng.normal(size=cols.size))
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, d))  # repeated features add up
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ X
    w = np.zeros(d)  # on the most frequent features: each row holds a few of them
    top = perm[:max(1, int(informative * d))]
    w[top] = rng.normal(size=top.size)
    s = X @ w
    y = (s > np.median(s)).astype(int)
    flipped = rng.random(n) < flip
    y[flipped] = 1 - y[flipped]
    return sp.csr_matrix(X), y


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000, help="training rows")
    ap.add_argument("--n-test", type=int, default=5000)
    ap.add_argument("--d", type=int, default=50000)
    ap.add_argument("--nnz", type=int, default=50, help="mean nonzeros per row")
    ap.add_argument("--C", type=float, nargs="+", default=[1.0])
    ap.add_argument("--memory-budget", type=float, default=2e9,
                    help="hsskern's memory_budget (bytes); 8 n^2 above it: K not stored")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-libsvm", action="store_true")
    args = ap.parse_args()
    from sklearn.svm import SVC

    from hsskern import HSSSVC
    from hsskern.estimators.hss_params import resolve_gamma

    X, y = make_problem(args.n + args.n_test, args.d, args.nnz, seed=0)
    Xtr, ytr, Xte, yte = X[:args.n], y[:args.n], X[args.n:], y[args.n:]
    gamma = resolve_gamma("scale", Xtr)
    info = {"n": args.n, "n_test": args.n_test, "d": args.d,
            "nnz_per_row": Xtr.nnz / args.n, "density": Xtr.nnz / (args.n * args.d),
            "dense_copy_bytes": 8 * args.n * args.d, "gamma": gamma,
            "positives": float(ytr.mean())}
    print(f"n={args.n} d={args.d}: {info['nnz_per_row']:.1f} nonzeros per row (density "
          f"{info['density']:.2e}; dense copy {8 * args.n * args.d / 2**30:.1f} GiB), "
          f"gamma={gamma:.4g}", flush=True)
    fits = []
    for C in args.C:
        runs = {"hsskern": lambda: HSSSVC(gamma=gamma, C=C, start="decomposition",
                                          memory_budget=args.memory_budget).fit(Xtr, ytr)}
        if not args.skip_libsvm:
            runs["libsvm"] = lambda: SVC(C=C, gamma=gamma, tol=1e-3).fit(Xtr, ytr)
        for name, fit in runs.items():
            load = os.getloadavg()
            t, peak, m = measure(fit, args.repeat)
            t0 = time.perf_counter()
            acc = float((m.predict(Xte) == yte).mean())
            t_pred = time.perf_counter() - t0
            row = {"backend": name, "C": C, "fit_s": t, "predict_s": t_pred,
                   "accuracy": acc, "n_support": int(len(m.support_)),
                   "peak_rss_bytes": int(peak), "load_before": load,
                   "load_after": os.getloadavg()}
            if name == "hsskern":
                row["sparse_rows"] = bool(sp.issparse(m.support_vectors_))
            fits.append(row)
            print(f"C={C:g} {name:>8}: fit {t:7.1f} s, predict {t_pred:5.1f} s, accuracy "
                  f"{acc:.4f}, {row['n_support']} SVs, peak +{peak / 2**20:.0f} MiB, load "
                  f"{load[0]:.1f}", flush=True)
    path = write_result(f"sparse_rows_{args.n}x{args.d}", {"args": vars(args), "data": info,
                                                            "fits": fits})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
