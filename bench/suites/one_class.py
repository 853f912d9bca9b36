"""Novelty detection: hsskern's OneClassSVM against scikit-learn's (LIBSVM) and oneDAL's
(``sklearnex.svm.OneClassSVM``, where sklearnex has one): one fit at the defaults and a ν path.

    python -m bench one_class --data magic04 --inlier 1 --peers libsvm onedal
    python -m bench one_class --data credit_default --inlier -1 --modes fit path

Data: a shared set's training points of one class (``--inlier``) are the training set, all
its test points the test set (that class +1, every other -1); X is z-scored with the whole
training set's statistics. Modes (each system in a fresh process of its own):

* ``fit``: one fit at scikit-learn's defaults (nu = 0.5, gamma = "scale", rbf kernel);
* ``path``: ``--nus`` (default 10 values log-spaced 0.01 ... 0.5): ``OneClassSVM.fit_path``
  on one preparation (each nu warm-started from the last) against one fit per nu.

Times are training only. ``score`` is the test ROC AUC of ``decision_function`` for the
inlier class against the rest (a path: the best nu's). Every case also records
``agreement``: per system, the fraction of test points whose ``predict`` equals
scikit-learn's at the same nu (a path: the smallest over the nus, ``per_C`` has each).
"""
import time

import numpy as np

from bench.harness import (DataSpec, PeerLacks, describe, load_data, pack_labels,
                           peer_class, unpack_labels)
from bench.suites.c_grid import grid

DESCRIPTION = "OneClassSVM vs scikit-learn's / oneDAL's: fit at the defaults, a nu path"
TASKS = "bench.suites.one_class"
REFERENCE_PEER = "libsvm"  # whose predictions the agreement is measured against


def add_arguments(p):
    p.add_argument("--data", default="magic04", help="a shared classification set")
    p.add_argument("--inlier", type=float, default=1.0,
                   help="the label of the training class kept as inliers")
    p.add_argument("--peers", nargs="*", default=["libsvm", "onedal"],
                   help="from libsvm (sklearn.svm.OneClassSVM), onedal (hsskern always runs)")
    p.add_argument("--modes", nargs="+", default=["fit", "path"], choices=["fit", "path"])
    p.add_argument("--nus", nargs="+", default=["1e-2:0.5:10"],
                   help="the path's nu values, or lo:hi:k for k log-spaced values")
    p.add_argument("--n-train", type=int, default=None,
                   help="subsample the training set (all classes) first")
    p.add_argument("--n-test", type=int, default=None)
    p.add_argument("--tol", type=float, default=1e-3, help="every system's tol")
    p.add_argument("--libsvm-cache", type=float, default=1000.0,
                   help="scikit-learn's cache_size [MB]")


def run(args, bench):
    unknown = set(args.peers) - {"libsvm", "onedal"}
    if unknown:
        raise SystemExit(f"unknown peers {sorted(unknown)}: one_class has libsvm, onedal")
    systems = ["hsskern"] + [p for p in args.peers if p != "hsskern"]
    spec = DataSpec(args.data, args.n_train, args.n_test, standardize=True)
    data = load_data(spec)
    inliers = int(np.sum(data[1] == args.inlier))
    if inliers == 0:
        raise SystemExit(f"no training point of {args.data} has label {args.inlier:g}")
    bench.data = {**describe(spec, data), "inlier": args.inlier, "n_inliers": inliers,
                  "test_inlier_fraction": float(np.mean(data[3] == args.inlier))}
    print(f"{args.data}: {inliers} inliers (label {args.inlier:g}) of "
          f"{bench.data['n_train']} training points, {bench.data['n_test']} test points, "
          f"{bench.data['n_features']} features", flush=True)
    common = {"inlier": args.inlier, "tol": args.tol, "cache_size": args.libsvm_cache}
    for mode in args.modes:
        nus = [0.5] if mode == "fit" else grid(args.nus)
        label = "fit nu=0.5 gamma=scale" if mode == "fit" else f"path ({len(nus)} nu)"
        print(f"{label}:", flush=True)
        recs = {s: bench.measure(f"{TASKS}:task", s, spec, {**common, "mode": mode,
                                                               "nus": nus}, args.repeat)
                for s in systems}
        agreement = _agreement(recs)
        bench.add_case(label, mode, recs, metric="roc_auc", params={"nus": nus},
                       agreement=agreement, agreement_with=REFERENCE_PEER)
        for s, a in agreement.items():
            print(f"  {s}: predict() equal to {REFERENCE_PEER}'s on {a:.4f} of the test set")
    return f"one_class_{args.data}"


def _agreement(recs):
    """Per system, the smallest fraction over the nus of test points predicted as the
    reference peer predicts; the label strings are dropped from the records (too large to
    keep), each nu's fraction kept in its ``per_C`` entry."""
    ref = recs.get(REFERENCE_PEER, {})
    ref_pred = ref.get("predictions") if ref.get("status") == "ok" else None
    out = {}
    for s, rec in recs.items():
        pred = rec.pop("predictions", None)
        if pred is None or ref_pred is None or s == REFERENCE_PEER:
            continue
        fractions = [float(np.mean(unpack_labels(a) == unpack_labels(b)))
                     for a, b in zip(pred, ref_pred)]
        for f, frac in zip(rec["per_C"], fractions):
            f["agreement"] = frac
        out[s] = min(fractions)
    return out


# ----------------------------------------------------------------------------- tasks (child)

def _estimator(params, nu):
    s = params["system"]
    if s == "hsskern":
        return peer_class(s, "one_class")(nu=nu, tol=params["tol"])
    extra = {"cache_size": params["cache_size"]} if s == "libsvm" else {}
    return peer_class(s, "one_class")(nu=nu, tol=params["tol"], **extra)


def _record(est, nu, Xte, inlier, dt=None):
    from sklearn.metrics import roc_auc_score
    rec = {"C": float(nu), "score": float(roc_auc_score(inlier, est.decision_function(Xte))),
           "n_support": int(len(est.support_)), "predictions": pack_labels(est.predict(Xte))}
    if dt is not None:
        rec["time"] = dt
    return rec


def task(data, params):
    Xtr, ytr, Xte, yte = data
    X = Xtr[ytr == params["inlier"]]
    inlier = (yte == params["inlier"]).astype(int)
    nus = params["nus"]
    try:
        cls = peer_class(params["system"], "one_class")
    except PeerLacks as e:
        return {"status": "unavailable", "reason": str(e)}
    per = []
    if params["system"] == "hsskern" and params["mode"] == "path":
        est = cls(nu=nus[0], tol=params["tol"])
        t0 = time.perf_counter()
        models = est.fit_path(X, nus=nus)
        t = time.perf_counter() - t0
        per = [_record(m, m.nu, Xte, inlier) for m in models]
    else:
        t = 0.0
        for nu in nus:
            est = _estimator(params, nu)
            t0 = time.perf_counter()
            est.fit(X)
            dt = time.perf_counter() - t0
            t += dt
            per.append(_record(est, nu, Xte, inlier, dt))
            print(f"nu={nu:.3g}: {dt:.2f} s, AUC {per[-1]['score']:.4f}", flush=True)
    best = max(per, key=lambda f: f["score"])
    predictions = [f.pop("predictions") for f in per]
    return {"time": t, "score": best["score"], "best_nu": best["C"], "per_C": per,
            "path_parameter": "nu", "predictions": predictions,
            "n_support": per[0]["n_support"] if len(per) == 1 else None}
