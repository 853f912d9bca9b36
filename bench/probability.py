"""probability=True: HSSSVC's Platt scaling vs SVC(probability=True) (LIBSVM's internal 5-fold
Platt), fit time and test log-loss at one (h, C), back to back in one process.

    python bench/probability.py                      # ijcnn1, h = 1, C = 77.43 (README grid)
    python bench/probability.py --n-train 20000      # a stated subsample of the training set

Both also fit without probabilities, so the cost of the calibration is reported as a ratio.
The machine is shared: every timing carries the load average before and after it.
"""
import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_shared, measure, write_result  # noqa: E402

from hsskern.estimators.hss_svc import HSSSVC  # noqa: E402

# the best C of the README's ijcnn1 grid (h = 1, 10 values 1e-2 .. 1e3: 98.785 % test accuracy)
BEST_C = float(np.logspace(-2, 3, 10)[7])


def run(name, make, X, y, Xt, yt, proba):
    load0 = os.getloadavg()
    seconds, peak, model = measure(lambda: make().fit(X, y), repeat=1)
    load1 = os.getloadavg()
    out = {"name": name, "probability": proba, "fit_seconds": seconds,
           "peak_extra_rss_bytes": peak, "loadavg_before": load0, "loadavg_after": load1,
           "accuracy": float(np.mean(model.predict(Xt) == yt)),
           "n_support": int(model.support_.size)}
    if proba:
        P = model.predict_proba(Xt)
        out.update(log_loss=float(log_loss(yt, P, labels=model.classes_)),
                   brier=float(brier_score_loss(yt == model.classes_[1], P[:, 1])),
                   argmax_agrees_with_predict=float(np.mean(
                       model.classes_[np.argmax(P, axis=1)] == model.predict(Xt))),
                   probA=np.ravel(model.probA_).tolist(), probB=np.ravel(model.probB_).tolist())
    if hasattr(model, "fit_time_"):
        out["fit_time_"] = {k: float(v) for k, v in model.fit_time_.items()}
    print(f"{name:28s} fit {seconds:8.1f} s  acc {out['accuracy']:.5f}"
          + (f"  log-loss {out['log_loss']:.5f}" if proba else "")
          + f"  load {load0[0]:.1f} -> {load1[0]:.1f}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="ijcnn1")
    ap.add_argument("--h", type=float, default=1.0)
    ap.add_argument("--C", type=float, default=BEST_C)
    ap.add_argument("--n-train", type=int, default=None,
                    help="stratified random subsample of the training set (both methods)")
    ap.add_argument("--cache", type=float, default=1000.0, help="LIBSVM cache (MB)")
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    data = load_shared(args.dataset)
    if data is None:
        sys.exit(f"{args.dataset}.npz not found in ../shared/datasets")
    X, y, Xt, yt = data
    if args.n_train is not None and args.n_train < len(y):
        rng = np.random.default_rng(0)
        keep = np.sort(rng.choice(len(y), args.n_train, replace=False))
        X, y = X[keep], y[keep]
    gamma = 1.0 / (2.0 * args.h ** 2)
    print(f"{args.dataset}: {X.shape[0]} train, {Xt.shape[0]} test, d = {X.shape[1]}; "
          f"h = {args.h} (gamma = {gamma}), C = {args.C:.6g}", flush=True)
    warnings.simplefilter("ignore", FutureWarning)  # SVC's probability is deprecated in 1.9
    hss = lambda p: (lambda: HSSSVC(h=args.h, C=args.C, probability=p, random_state=0))  # noqa
    svc = lambda p: (lambda: SVC(C=args.C, gamma=gamma, probability=p,  # noqa
                                 cache_size=args.cache, random_state=0))
    runs = []
    # back to back: ours, then LIBSVM, with and without probabilities
    for p in (False, True):
        runs.append(run(f"HSSSVC probability={p}", hss(p), X, y, Xt, yt, p))
        runs.append(run(f"SVC probability={p}", svc(p), X, y, Xt, yt, p))
    by = {(r["name"].split()[0], r["probability"]): r for r in runs}
    summary = {
        "log_loss_ratio_hss_over_svc": by["HSSSVC", True]["log_loss"] / by["SVC", True]["log_loss"],
        "fit_time_ratio_svc_over_hss_probability": (by["SVC", True]["fit_seconds"]
                                                    / by["HSSSVC", True]["fit_seconds"]),
        "calibration_cost_hss": (by["HSSSVC", True]["fit_seconds"]
                                 / by["HSSSVC", False]["fit_seconds"]),
        "calibration_cost_svc": (by["SVC", True]["fit_seconds"]
                                 / by["SVC", False]["fit_seconds"]),
    }
    print({k: round(v, 4) for k, v in summary.items()})
    name = f"probability_{args.dataset}" + (f"_n{X.shape[0]}" if args.n_train else "") + args.tag
    path = write_result(name, {"dataset": args.dataset, "n_train": int(X.shape[0]),
                               "n_test": int(Xt.shape[0]), "n_features": int(X.shape[1]),
                               "h": args.h, "gamma": gamma, "C": args.C,
                               "threads": os.environ.get("OMP_NUM_THREADS"),
                               "runs": runs, "summary": summary,
                               "command": " ".join(["python"] + sys.argv)})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
