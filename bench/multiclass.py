"""One-vs-one against one-vs-rest against SVC on multiclass sets: accuracy and fit time.

SVC's defaults (C = 1, gamma = "scale") on standardized features; each (system, data set)
fit runs in a fresh process (imports, thread pools and caches start cold, as a user's first
fit does). Writes bench/results/multiclass.json.

    python bench/multiclass.py                       # all systems on the three sets
    python bench/multiclass.py --data optdigits --systems hss_ovo svc
    python bench/multiclass.py --threads             # one-vs-one pool: 2 threads vs serial
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = ("optdigits", "satimage", "usps")
SYSTEMS = ("hss_ovo", "hss_ovr", "exact_ovo", "exact_ovr", "svc")


def run_one(data, system, n_jobs=None):
    """Fit and score one system on one set in this process; returns a dict."""
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))
    import numpy as np
    from sklearn.preprocessing import StandardScaler
    from _common import load_shared
    Xtr, ytr, Xte, yte = load_shared(data)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    if system == "svc":
        from sklearn.svm import SVC
        est = SVC(C=1.0, gamma="scale")
    else:
        import hsskern
        kind, strategy = system.split("_")
        cls = hsskern.HSSSVC if kind == "hss" else hsskern.ExactSVC
        est = cls(C=1.0, gamma="scale", multiclass=strategy)
    backend_jobs = None
    if n_jobs is not None:  # the one-vs-one pool's size, for the thread comparison
        from dataclasses import replace
        make = est._make_backend
        est._make_backend = lambda X, for_path: replace(make(X, for_path), n_jobs=n_jobs)
        backend_jobs = n_jobs
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = est.predict(Xte)
    predict = time.perf_counter() - t0
    out = {"data": data, "system": system, "n_train": int(Xtr.shape[0]),
           "n_features": int(Xtr.shape[1]), "n_classes": int(np.unique(ytr).size),
           "fit_seconds": fit, "predict_seconds": predict,
           "accuracy": float(np.mean(pred == yte)), "n_support": int(est.support_.size)}
    if backend_jobs is not None:
        out["n_jobs"] = backend_jobs
    out["predictions"] = pred.astype(int).tolist()  # compared with SVC's, then dropped
    return out


def fresh(data, system, n_jobs=None):
    cmd = [sys.executable, __file__, "--one", data, system]
    if n_jobs is not None:
        cmd += ["--n-jobs", str(n_jobs)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=list(DATA))
    ap.add_argument("--systems", nargs="*", default=list(SYSTEMS))
    ap.add_argument("--threads", action="store_true",
                    help="HSSSVC one-vs-one with the pool at 1 and 2 threads")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--n-jobs", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one, n_jobs=args.n_jobs)))
        return
    sys.path.insert(0, str(HERE))
    from _common import write_result
    rows = []
    runs = ([(d, "hss_ovo", j) for d in args.data for j in (1, 2)] if args.threads else
            [(d, s, None) for d in args.data for s in args.systems])
    for data, system, n_jobs in runs:
        r = fresh(data, system, n_jobs)
        rows.append(r)
        print(f"{data:10s} {system:10s} {'' if n_jobs is None else f'n_jobs={n_jobs} '}"
              f"fit {r['fit_seconds']:7.2f} s  accuracy {r['accuracy']:.4f}  "
              f"n_SV {r['n_support']}", flush=True)
    # agreement of each system's test predictions with SVC's
    ref = {r["data"]: r["predictions"] for r in rows if r["system"] == "svc"}
    for r in rows:
        if r["data"] in ref:
            same = sum(a == b for a, b in zip(r["predictions"], ref[r["data"]]))
            r["same_as_svc"] = same / len(ref[r["data"]])
    for r in rows:
        r.pop("predictions")
        if "same_as_svc" in r:
            print(f"{r['data']:10s} {r['system']:10s} same predictions as SVC: "
                  f"{100 * r['same_as_svc']:.2f} %")
    name = "multiclass_threads" if args.threads else "multiclass"
    path = write_result(name, {"settings": "C=1, gamma='scale', StandardScaler; each fit "
                                           "in a fresh process; shared 2-core machine",
                               "rows": rows})
    print(path)


if __name__ == "__main__":
    main()
