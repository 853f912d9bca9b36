"""epsilon-SVR over a C grid: HSSSVR.fit_path (one factor, each exact solution starting the next
C) against scikit-learn's SVR (LIBSVM), one fit per C.

    python bench/svr.py --dataset kin40k --n 8000
    python bench/svr.py --dataset ccpp

Data: ../shared/datasets/regression/<dataset>.npz (exits cleanly without it). The first ``--n``
training points (all by default), the whole test set. Features and target standardised with
the training mean and std (so epsilon = 0.1 is a tenth of the target's std); gamma = 1 / d
(scikit-learn's ``gamma="scale"`` on standardised features). Grid: ``--Cs`` (default
logspace(-1, 3, 10)). Both stop at LIBSVM's default gap tol = 1e-3; SVR gets
``cache_size=--cache`` MB (default 1000: every kernel row LIBSVM asks for stays cached at
these n, its best case); ours ``max_chunk=--max-chunk`` (default 10,000: an 0.8 GB block at
most, so a run stays under 2 GB on the shared machine).

Recorded per C: test RMSE of both (in the standardised target's units and in the target's),
the largest |prediction difference| on the test set, support vectors, our KKT gap; per grid:
wall time of each, the ratio LIBSVM / ours, and the load average before and after (the machine
is shared: figures taken under load are noisy, the two contenders run back to back).
Result: bench/results/svr_<dataset>_n<n><--tag>.json. ``--rel-tol`` / ``--max-rank`` set the
compression, which only starts the first C (the decomposition makes every C exact whatever
the approximation); ``--skip-libsvm`` runs ours alone.
"""
import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sklearn.svm import SVR  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from _common import SHARED, rss_bytes, write_result  # noqa: E402
from hsskern import HSSSVR  # noqa: E402


def load(name, n):
    path = SHARED / "regression" / f"{name}.npz"
    if not path.exists():
        print(f"{path} not present: nothing to run")
        sys.exit(0)
    d = np.load(path)
    X, y, Xt, yt = d["X_train"][:n], d["y_train"][:n], d["X_test"], d["y_test"]
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    ym, ys = y.mean(), y.std()
    return (X - mu) / sd, (y - ym) / ys, (Xt - mu) / sd, (yt - ym) / ys, float(ys)


def rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="kin40k")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--Cs", type=float, nargs="+", default=list(np.logspace(-1, 3, 10)))
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--cache", type=float, default=1000.0)
    ap.add_argument("--rel-tol", type=float, default=1e-3)
    ap.add_argument("--max-chunk", type=int, default=10000)
    ap.add_argument("--max-rank", type=int, default=500)
    ap.add_argument("--tag", default="")
    ap.add_argument("--skip-libsvm", action="store_true")
    args = ap.parse_args()
    X, y, Xt, yt, ys = load(args.dataset, args.n)
    n, d = X.shape
    gamma = 1.0 / d
    Cs = sorted(args.Cs)
    print(f"{args.dataset}: {n} train x {d}, {len(yt)} test; gamma {gamma:.4g}, "
          f"epsilon {args.epsilon}, {len(Cs)} C in [{Cs[0]:g}, {Cs[-1]:g}]", flush=True)
    out = {"dataset": args.dataset, "n_train": n, "n_test": len(yt), "d": d, "gamma": gamma,
           "epsilon": args.epsilon, "Cs": Cs, "target_std": ys, "cache_size_mb": args.cache,
           "rel_tol": args.rel_tol, "max_rank": args.max_rank, "max_chunk": args.max_chunk}
    with threadpool_limits(1, user_api="blas"):  # see bench/regression.py: a shared machine
        out["load_before_ours"] = os.getloadavg()
        t0 = time.perf_counter()
        models = HSSSVR(gamma=gamma, epsilon=args.epsilon, rel_tol=args.rel_tol,
                        max_rank=args.max_rank, max_chunk=args.max_chunk,
                        random_state=0).fit_path(X, y, Cs)
        ours_time = time.perf_counter() - t0
        out["load_after_ours"] = os.getloadavg()
        pred = np.stack([m.predict(Xt) for m in models])
        out["ours"] = {
            "grid_time": ours_time, "rss_bytes": rss_bytes("VmHWM"),
            "fit_time": [dict(m.fit_time_) for m in models],
            "hss": {k: v for k, v in models[0].hss_.items() if np.isscalar(v)},
            "test_rmse": [rmse(p, yt) for p in pred],
            "n_support": [int(m.n_support_[0]) for m in models],
            "gap": [m.gap_ for m in models], "n_iter": [m.n_iter_ for m in models],
            "fit_status": [m.fit_status_ for m in models]}
        print(f"HSSSVR grid {ours_time:.1f} s (load {out['load_before_ours'][0]:.1f})",
              flush=True)
        if args.skip_libsvm:
            ref = None
        else:
            out["load_before_libsvm"] = os.getloadavg()
            times, ref = [], []
            for C in Cs:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = SVR(C=C, gamma=gamma, epsilon=args.epsilon, tol=1e-3,
                            cache_size=args.cache).fit(X, y)
                times.append(time.perf_counter() - t0)
                ref.append(r)
                print(f"  SVR C={C:.3g}: {times[-1]:.1f} s, {r.support_.size} SV", flush=True)
            out["load_after_libsvm"] = os.getloadavg()
            rpred = np.stack([r.predict(Xt) for r in ref])
            out["libsvm"] = {"grid_time": float(sum(times)), "fit_time": times,
                             "test_rmse": [rmse(p, yt) for p in rpred],
                             "n_support": [int(r.support_.size) for r in ref],
                             "n_iter": [int(r.n_iter_) for r in ref]}
            out["max_abs_prediction_difference"] = [float(np.abs(a - b).max())
                                                    for a, b in zip(pred, rpred)]
            out["time_ratio_libsvm_over_ours"] = out["libsvm"]["grid_time"] / ours_time
    print(f"{'C':>8} {'ours RMSE':>10} {'LIBSVM RMSE':>11} {'max|diff|':>9} "
          f"{'ours SV':>7} {'LIBSVM SV':>9} {'LIBSVM s':>8}")
    for i, C in enumerate(Cs):
        lib = (f"{out['libsvm']['test_rmse'][i]:11.4f} "
               f"{out['max_abs_prediction_difference'][i]:9.2e}" if ref else " " * 21)
        print(f"{C:8.3g} {out['ours']['test_rmse'][i]:10.4f} {lib} "
              f"{out['ours']['n_support'][i]:7d} "
              + (f"{out['libsvm']['n_support'][i]:9d} {out['libsvm']['fit_time'][i]:8.1f}"
                 if ref else ""))
    if ref:
        print(f"grid: HSSSVR {ours_time:.1f} s, SVR {out['libsvm']['grid_time']:.1f} s, "
              f"ratio {out['time_ratio_libsvm_over_ours']:.2f}")
    path = write_result(f"svr_{args.dataset}_n{n}{args.tag}", out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
