"""FPCClassifierCV (its own search over the degree s) vs scikit-learn SVC's 3 x 3 (h, C) grid.

    python bench/fpc.py [--datasets banknote ...] [--svc-cap 25000] [--threads 1] [--repeat 3]
                        [--extend 0] [--svc-h 0.1 1 10] [--out fpc]
    python bench/fpc.py --merge fpc_part1 fpc_part2 ... --out fpc
    python bench/fpc.py --datasets skin_nonskin --svc-cap 50000 --svc-cached fpc --out fpc_new

Both sides are measured in the same process, on the same training rows of
../shared/datasets/NAME.npz, and scored on its whole test set:

* training rows: the training set, or a stratified subsample of ``--svc-cap`` rows (seed 0)
  when it is larger (nine SVC fits on skin_nonskin's 171,539 rows take hours). FPC and SVC
  both train on these rows: ``speedup`` and ``accuracy_gap_points`` compare like with like.
  When capped, FPC is also run on the full training set (``fpc_full_data``), reported
  separately, never divided into an SVC time from other rows.
* FPC: ``FPCClassifierCV(cv=5, random_state=0)`` on the raw features (it min-max scales
  internally); its time is the whole search (features of every s, 5 folds, refit), median of
  ``--repeat`` runs; accuracy is that of the refit on the test set.
* SVC: ``StandardScaler`` then ``SVC(C, gamma=1/(2 h^2), cache_size=1000)`` for h, C in
  {0.1, 1, 10}: its time is the *sum of the nine fits* (one run each), its accuracy the best
  *test* accuracy over the nine -- an oracle choice that favours SVC (no validation split).
* ``--svc-h`` runs only some rows of the grid, so a grid longer than one sitting (credit_default:
  ~20 minutes) can be measured in several processes, each also timing FPC; ``--merge`` sums the
  SVC parts (all nine fits must be present) and takes the median of the parts' FPC times.
* ``--svc-cached NAME`` times FPC only and takes the SVC grid from bench/results/NAME.json (the
  entry of the same dataset on the same number of training rows; the rows are the same since
  the subsample is seeded), so an FPC change can be measured without re-running the grid. The
  row records ``svc_cached_from`` (file, its date, the load then): the two sides were then
  measured in different processes, at different loads -- compare CPU times. A dataset with no
  such entry gets no SVC side (no grid is started).
* ``--extend E`` also runs FPC with degrees 1..s_max + E (reported separately).

Wall times are medians from ``_common.measure``; process CPU times are recorded too, since on an
oversubscribed machine a single-threaded job's CPU time is the steadier figure, and so is the
1-minute load average before and after each dataset.
Everything runs with ``--threads`` BLAS/OpenMP threads (default 1: libsvm is single-threaded,
and the shared 2-core machine is oversubscribed, where multithreaded BLAS slows down 10x).
Results go to bench/results/OUT.json after every dataset.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
# this checkout's hsskern, not whichever copy is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import load_shared, measure, write_result  # noqa: E402

# cheapest SVC grids first; credit_default (21,000 x 23) is the longest
DATASETS = ["banknote", "seismic_bumps", "occupancy", "susy_10k", "magic04", "skin_nonskin",
            "credit_default"]
GRID = (0.1, 1.0, 10.0)


def run_fpc(X, y, Xt, yt, repeat, extra_degrees=0):
    from hsskern.estimators.fpc import FPCClassifierCV
    s_max = FPCClassifierCV.max_degree(*X.shape) + extra_degrees
    degrees = None if extra_degrees == 0 else list(range(1, s_max + 1))
    cpu = []

    def fit():
        c0 = time.process_time()
        est = FPCClassifierCV(degrees, cv=5, random_state=0).fit(X, y)
        cpu.append(time.process_time() - c0)
        return est
    t, peak, est = measure(fit, repeat)
    t0 = time.perf_counter()
    acc = float(est.score(Xt, yt))
    return {"train_time_s": t, "train_cpu_time_s": float(np.median(cpu)),
            "peak_extra_rss_mb": peak / 2**20, "test_accuracy": acc,
            "predict_time_s": time.perf_counter() - t0, "degree": int(est.degree_),
            "n_centers": int(est.best_estimator_.centers_.shape[0]),
            "n_iter": est.n_iter_.tolist(),
            "cv_mean_accuracy": dict(zip(est.cv_results_["param_degree"].tolist(),
                                         np.round(est.cv_results_["mean_test_score"],
                                                  4).tolist()))}


def run_svc_grid(X, y, Xt, yt, h_values=GRID):
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    sc = StandardScaler().fit(X)
    Xs, Xts = sc.transform(X), sc.transform(Xt)
    fits = []
    for h in h_values:
        for C in GRID:
            c0 = time.process_time()
            t, p, est = measure(lambda: SVC(C=C, gamma=1.0 / (2 * h * h),
                                            cache_size=1000).fit(Xs, y), 1)
            cpu = time.process_time() - c0
            acc = float(est.score(Xts, yt))
            fits.append({"h": h, "C": C, "fit_time_s": t, "fit_cpu_time_s": cpu,
                         "peak_extra_rss_mb": p / 2**20, "test_accuracy": acc,
                         "n_support": int(est.n_support_.sum())})
            print(f"    SVC h={h:g} C={C:g}: {t:.2f}s acc {acc:.4f}", flush=True)
    return summarize_svc(fits)


def summarize_svc(fits):
    best = max(fits, key=lambda f: f["test_accuracy"])
    return {"grid_train_time_s": sum(f["fit_time_s"] for f in fits),
            "grid_train_cpu_time_s": sum(f.get("fit_cpu_time_s", 0.0) for f in fits),
            "peak_extra_rss_mb": max(f.get("peak_extra_rss_mb", 0.0) for f in fits),
            "best_test_accuracy": best["test_accuracy"], "best_h": best["h"],
            "best_C": best["C"], "n_fits": len(fits), "fits": fits}


def compare(row):
    """Speedup and accuracy gap of FPC vs the SVC grid, both on the same training rows."""
    svc = row["svc"]
    row["speedup"] = svc["grid_train_time_s"] / row["fpc"]["train_time_s"]
    row["speedup_cpu"] = svc["grid_train_cpu_time_s"] / row["fpc"]["train_cpu_time_s"]
    row["accuracy_gap_points"] = 100 * (svc["best_test_accuracy"] - row["fpc"]["test_accuracy"])
    if "fpc_extended" in row:
        ext = row["fpc_extended"]
        row["extended_speedup"] = svc["grid_train_time_s"] / ext["train_time_s"]
        row["extended_accuracy_gap_points"] = 100 * (svc["best_test_accuracy"]
                                                     - ext["test_accuracy"])
    return row


def merge(names, out, note=None):
    """Combine runs (``--svc-h`` grid parts, or whole runs of other datasets) into one file.

    Parts of the same dataset on the same rows are summed into one grid; a dataset measured on
    several row counts (e.g. two ``--svc-cap`` values) is kept once per count, keyed
    ``NAME@ROWS``.
    """
    import json
    from _common import RESULTS
    runs = [json.loads((RESULTS / f"{n}.json").read_text()) for n in names]
    merged = {"settings": {**runs[0]["settings"], "svc_h": "merged", "merged_from": names,
                           "svc_cap": sorted({r["settings"]["svc_cap"] for r in runs}),
                           "note": note},
              "datasets": {}}
    groups = {}
    for r in runs:
        for name, row in r["datasets"].items():
            groups.setdefault((name, row["train_rows_used"]), []).append(row)
    n_counts = {}
    for name, _ in groups:
        n_counts[name] = n_counts.get(name, 0) + 1
    for (name, rows_used), parts in groups.items():
        fits = [f for p in parts for f in p["svc"]["fits"]]
        if sorted((f["h"], f["C"]) for f in fits) != sorted((h, C) for h in GRID for C in GRID):
            raise SystemExit(f"{name}: the parts do not hold the nine (h, C) fits exactly once")
        row = dict(parts[0])
        row["svc"] = summarize_svc(fits)
        if len(parts) > 1:
            row["fpc_parts"] = [p["fpc"] for p in parts]
            order = np.argsort([p["fpc"]["train_time_s"] for p in parts])
            row["fpc"] = parts[order[len(order) // 2]]["fpc"]  # the part with the median time
            row["load_avg_1min"] = [p["load_avg_1min"] for p in parts]
        key = name if n_counts[name] == 1 else f"{name}@{rows_used}"
        merged["datasets"][key] = compare(row)
    write_result(out, merged)
    print(f"wrote bench/results/{out}.json")


def cached_svc(source, name, rows):
    """The ``svc`` entry of dataset ``name`` on ``rows`` training rows in results file
    ``source`` (keyed NAME or NAME@ROWS), with where it came from; None when absent."""
    import json
    from _common import RESULTS
    path = RESULTS / f"{source}.json"
    if not path.exists():
        raise SystemExit(f"--svc-cached: {path} does not exist")
    data = json.loads(path.read_text())
    for key in (f"{name}@{rows}", name):
        row = data["datasets"].get(key)
        if row and row.get("train_rows_used") == rows and row["svc"].get("n_fits") == 9:
            return row["svc"], {"file": f"bench/results/{source}.json", "key": key,
                                "date": data.get("date"), "load_avg_1min": row.get("load_avg_1min")}
    return None, None


def subsample(X, y, cap, seed=0):
    from sklearn.model_selection import train_test_split
    if X.shape[0] <= cap:
        return X, y
    Xs, _, ys, _ = train_test_split(X, y, train_size=cap, stratify=y, random_state=seed)
    return Xs, ys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="*", default=DATASETS)
    ap.add_argument("--svc-cap", type=int, default=25000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--extend", type=int, default=0,
                    help="also run FPC with degrees 1..s_max + EXTEND (0: paper's range only)")
    ap.add_argument("--svc-h", type=float, nargs="*", default=list(GRID),
                    help="only these rows of the SVC grid (merge the parts with --merge)")
    ap.add_argument("--no-full", action="store_true",
                    help="skip the supplementary full-data FPC run when the rows are capped")
    ap.add_argument("--svc-cached", metavar="NAME",
                    help="reuse the SVC grid of bench/results/NAME.json (same dataset and row "
                         "count) instead of running it; datasets without one get no SVC side")
    ap.add_argument("--merge", nargs="*", metavar="NAME",
                    help="combine bench/results/NAME.json grid parts into --out")
    ap.add_argument("--note", help="free text stored in the merged file's settings")
    ap.add_argument("--out", default="fpc", help="bench/results/OUT.json")
    args = ap.parse_args()
    if args.merge:
        return merge(args.merge, args.out, args.note)
    from threadpoolctl import threadpool_limits
    results = {"settings": {"svc_cap": args.svc_cap, "threads": args.threads,
                            "repeat_fpc": args.repeat, "grid_h": GRID, "grid_C": GRID,
                            "svc_h": args.svc_h, "svc_cached": args.svc_cached,
                            "fpc_extended": f"degrees 1..s_max+{args.extend}",
                            "fpc": "FPCClassifierCV(cv=5, random_state=0), defaults",
                            "svc": "StandardScaler + SVC(gamma=1/(2h^2), cache_size=1000); "
                                   "time = sum of 9 fits; accuracy = best test accuracy",
                            "rows": "FPC and SVC train on the same rows (the training set, "
                                    "or a stratified subsample of svc_cap rows)"},
               "datasets": {}}
    with threadpool_limits(args.threads):
        for name in args.datasets:
            data = load_shared(name)
            if data is None:
                print(f"{name}: not present, skipped")
                continue
            X, y, Xt, yt = data
            Xc, yc = subsample(X, y, args.svc_cap)
            load0 = os.getloadavg()[0]
            print(f"{name}: train {X.shape}, rows used {Xc.shape[0]}, test {Xt.shape}, "
                  f"load {load0:.2f}", flush=True)
            row = {"n_train": int(X.shape[0]), "train_rows_used": int(Xc.shape[0]),
                   "n_test": int(Xt.shape[0]), "n_features": int(X.shape[1])}
            row["fpc"] = run_fpc(Xc, yc, Xt, yt, args.repeat)
            print(f"  FPC: {row['fpc']['train_time_s']:.3f}s acc "
                  f"{row['fpc']['test_accuracy']:.4f} s={row['fpc']['degree']}", flush=True)
            if args.extend:
                row["fpc_extended"] = run_fpc(Xc, yc, Xt, yt, args.repeat, args.extend)
                print(f"  FPC s<=s_max+{args.extend}: {row['fpc_extended']['train_time_s']:.3f}s "
                      f"acc {row['fpc_extended']['test_accuracy']:.4f} "
                      f"s={row['fpc_extended']['degree']}", flush=True)
            if Xc.shape[0] < X.shape[0] and not args.no_full:
                row["fpc_full_data"] = run_fpc(X, y, Xt, yt, 1)
                print(f"  FPC on all {X.shape[0]} rows (not compared): "
                      f"{row['fpc_full_data']['train_time_s']:.3f}s acc "
                      f"{row['fpc_full_data']['test_accuracy']:.4f}", flush=True)
            svc, source = (cached_svc(args.svc_cached, name, int(Xc.shape[0]))
                           if args.svc_cached else (None, None))
            if svc is not None:
                row["svc"], row["svc_cached_from"] = svc, source
                print(f"  SVC grid from {source['file']} ({source['key']}, {source['date']})",
                      flush=True)
            elif args.svc_cached:  # never start an unplanned grid (skin at full size: hours)
                print(f"  no cached SVC grid for {name} on {Xc.shape[0]} rows: FPC only",
                      flush=True)
                results["datasets"][name] = row
                write_result(args.out, results)
                continue
            else:
                row["svc"] = run_svc_grid(Xc, yc, Xt, yt, args.svc_h)
            row["load_avg_1min"] = [load0, os.getloadavg()[0]]
            if row["svc"]["n_fits"] == len(GRID) ** 2:
                compare(row)
                print(f"  SVC grid {row['svc']['grid_train_time_s']:.1f}s "
                      f"(CPU {row['svc']['grid_train_cpu_time_s']:.1f}s) best acc "
                      f"{row['svc']['best_test_accuracy']:.4f}; speedup "
                      f"{row['speedup']:.1f}x (CPU {row['speedup_cpu']:.1f}x), gap "
                      f"{row['accuracy_gap_points']:.2f} points", flush=True)
            else:
                print(f"  SVC part ({row['svc']['n_fits']} fits) "
                      f"{row['svc']['grid_train_time_s']:.1f}s: merge the parts", flush=True)
            results["datasets"][name] = row
            write_result(args.out, results)
    print(f"wrote bench/results/{args.out}.json")


if __name__ == "__main__":
    main()
