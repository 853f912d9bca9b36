"""One fit at SVC's defaults: HSSSVC(gamma="scale") against scikit-learn's SVC (LIBSVM) and
oneDAL's (scikit-learn-intelex) SVC, when installed.

Each fit runs in a fresh process (``--worker``), X standardized (StandardScaler fitted on the
training part), C = 1 and C = 100, gamma = "scale". Systems alternate within each repeat
(the order rotates), and each figure is the median of ``--repeat`` runs; the machine is
shared, so the seconds are noisy and the ratios (taken within one repeat's window) are the
figures to read. Recorded: fit seconds, test accuracy, the fraction of test predictions equal
to SVC's, peak RSS of the worker process, and for HSSSVC the engine its fit took.

    python -m bench.single_fit                      # every set below, 3 repeats
    python -m bench.single_fit --sets ijcnn1:2000,magic04 --repeat 1

Results: bench/results/single_fit.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench._common import load_shared, write_result

SETS = ["ijcnn1:2000", "ijcnn1:5000", "ijcnn1:10000", "ijcnn1:20000", "phishing", "magic04",
        "credit_default", "a9a", "ijcnn1"]
SYSTEMS = ["hsskern", "svc", "onedal"]
TEST_POINTS = 20000  # predictions are not timed; a capped test set keeps the runs short


def _data(spec):
    name, _, size = spec.partition(":")
    Xtr, ytr, Xte, yte = load_shared(name)
    if size:
        idx = np.random.default_rng(0).permutation(Xtr.shape[0])[:int(size)]
        Xtr, ytr = Xtr[idx], ytr[idx]
    from sklearn.preprocessing import StandardScaler
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), ytr, sc.transform(Xte[:TEST_POINTS]), yte[:TEST_POINTS]


def _peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def worker(system, spec, C, out_path):
    Xtr, ytr, Xte, yte = _data(spec)
    if system == "hsskern":
        from hsskern import HSSSVC
        model = HSSSVC(gamma="scale", C=C)
    elif system == "svc":
        from sklearn.svm import SVC
        model = SVC(C=C)
    else:
        from sklearnex.svm import SVC
        model = SVC(C=C)
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    seconds = time.perf_counter() - t0
    pred = model.predict(Xte)
    res = {"seconds": seconds, "accuracy": float(np.mean(pred == yte)),
           "peak_rss": _peak_rss(), "n_train": int(Xtr.shape[0]), "d": int(Xtr.shape[1])}
    if system == "hsskern":
        rr = (model.admm_.get("refinement") or [None])[0]
        res["engine"] = ("cached" if rr is not None and "rows" in rr.kernel_entries
                         else "block")
        res["n_support"] = int(model.support_.size)
    np.save(out_path, pred)
    print(json.dumps(res))


def _run(system, spec, C, tmp):
    out = os.path.join(tmp, f"{system}-{spec.replace(':', '_')}-{C:g}.npy")
    proc = subprocess.run([sys.executable, "-m", "bench.single_fit", "--worker", system, spec,
                           str(C), out], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}, None
    return json.loads(proc.stdout.strip().splitlines()[-1]), np.load(out)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=4)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--Cs", default="1,100")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    args = ap.parse_args(argv)
    if args.worker:
        system, spec, C, out = args.worker
        return worker(system, spec, float(C), out)
    systems = args.systems.split(",")
    if "onedal" in systems:
        try:
            import sklearnex  # noqa: F401
        except ImportError:
            systems.remove("onedal")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sets.split(","):
            for C in (float(c) for c in args.Cs.split(",")):
                runs = {s: [] for s in systems}
                preds = {}
                for r in range(args.repeat):
                    order = systems[r % len(systems):] + systems[:r % len(systems)]
                    for s in order:
                        res, pred = _run(s, spec, C, tmp)
                        runs[s].append(res)
                        if pred is not None:
                            preds[s] = pred
                row = {"set": spec, "C": C}
                for s in systems:
                    ok = [x for x in runs[s] if "error" not in x]
                    if not ok:
                        row[s] = {"error": runs[s][-1]["error"]}
                        continue
                    row[s] = {"seconds": statistics.median(x["seconds"] for x in ok),
                              "all_seconds": [x["seconds"] for x in ok],
                              "accuracy": ok[-1]["accuracy"],
                              "peak_rss_mb": max(x["peak_rss"] for x in ok) / 2 ** 20}
                    for key in ("engine", "n_support", "n_train", "d"):
                        if key in ok[-1]:
                            row[s][key] = ok[-1][key]
                    if "svc" in preds and s in preds:
                        row[s]["equal_to_svc"] = float(np.mean(preds[s] == preds["svc"]))
                for s in systems:
                    if s != "hsskern" and "seconds" in row.get(s, {}) and \
                            "seconds" in row.get("hsskern", {}):
                        row[f"hsskern_speedup_vs_{s}"] = (row[s]["seconds"]
                                                          / row["hsskern"]["seconds"])
                results.append(row)
                print(json.dumps(row), flush=True)
                write_result("single_fit", {
                    "note": "each fit in a fresh process; medians of the repeats; shared, "
                            "loaded machine (other sessions running): noisy timings",
                    "repeat": args.repeat, "rows": results})


if __name__ == "__main__":
    main()
