"""``CalibratedClassifierCV(SVC(), ensemble=False)`` with hsskern's SVC and scikit-learn's:
scikit-learn 1.9's replacement for ``SVC(probability=True)`` (issue 60, item 4).

    python -m bench calibration --repeat 3                  # raw load_digits, both SVCs
    python -m bench calibration --data satimage --standardize

Each system runs in a fresh process (one untimed warm-up fit on a slice first) and times
``CalibratedClassifierCV(<SVC>(), ensemble=False).fit(X, y)``: 5 cross-validated fits for the
decision values, the sigmoids, one fit on all points. The record keeps the median of
``--repeat`` runs (and the CPU seconds of the last), the test accuracy, the log loss of
``predict_proba`` and ``agreement``: the fraction of test points the first two systems label
alike. ``--mode fit`` times the plain ``SVC().fit`` instead; ``--systems`` adds ``onedal``
(scikit-learn-intelex's SVC). ``--data digits`` is scikit-learn's ``load_digits`` (1,797 raw
pixel rows, 0..16), fitted on all of it and scored on the same points, as the issue's call
does.
"""
import numpy as np

from bench.harness import DataSpec, describe, load_data, pack_labels, peer_class, unpack_labels

DESCRIPTION = ("CalibratedClassifierCV(SVC(), ensemble=False): hsskern's SVC vs "
               "scikit-learn's, each in a fresh process")
TASKS = "bench.suites.calibration"


def add_arguments(p):
    p.add_argument("--data", default="digits",
                   help="'digits' (scikit-learn's load_digits) or a data set name "
                        "(bench/README.md)")
    p.add_argument("--mode", nargs="+", default=["calibrated"], choices=["calibrated", "fit"])
    p.add_argument("--systems", nargs="+", default=["hsskern", "libsvm"],
                   choices=["hsskern", "libsvm", "onedal"])
    p.add_argument("--cv", type=int, default=5, help="CalibratedClassifierCV's folds")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--n-test", type=int, default=None)
    p.add_argument("--standardize", action="store_true", help="z-score X")


def _svc(system):
    """The system's SVC class: hsskern.SVC (not the harness's HSSSVC), scikit-learn's, or
    scikit-learn-intelex's."""
    if system == "hsskern":
        from hsskern import SVC
        return SVC
    return peer_class(system, "svc")


def fit_task(data, params):
    """One system's timed fit (``params["system"]``, set by the child): the calibrated SVC
    (``calibrated``) or the SVC alone (``fit``), at SVC's defaults."""
    import time

    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.metrics import log_loss
    Xtr, ytr, Xte, yte = data
    est = _svc(params["system"])()
    if params["mode"] == "calibrated":
        est = CalibratedClassifierCV(est, ensemble=False, cv=params["cv"])
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(Xtr, ytr)
    t, cpu = time.perf_counter() - t0, time.process_time() - c0
    pred = est.predict(Xte)
    loss = (float(log_loss(yte, est.predict_proba(Xte), labels=est.classes_))
            if params["mode"] == "calibrated" else None)
    # CPU seconds beside the wall time: on a loaded machine the wall time of a fit on two
    # threads waits for a core, its CPU time less so
    return {"time": t, "cpu_time": cpu, "score": float(np.mean(pred == yte)), "log_loss": loss,
            "predictions": pack_labels(np.searchsorted(est.classes_, pred))}


def run(args, bench):
    spec = DataSpec(args.data, args.n_train, args.n_test, standardize=args.standardize)
    bench.data = describe(spec, load_data(spec))
    print(f"{args.data}: {bench.data['n_train']} training / {bench.data['n_test']} test "
          f"points, {bench.data['n_features']} features", flush=True)
    for mode in args.mode:
        label = ("CalibratedClassifierCV(SVC(), ensemble=False).fit" if mode == "calibrated"
                 else "SVC().fit")
        print(f"{label}:", flush=True)
        recs = {s: bench.measure(f"{TASKS}:fit_task", s, spec, {"mode": mode, "cv": args.cv},
                                 args.repeat)
                for s in args.systems}
        ok = [r for r in recs.values() if r.get("status") == "ok"]
        agreement = None
        if len(ok) >= 2:  # the first two systems' labels
            p = [unpack_labels(r["predictions"]) for r in ok[:2]]
            agreement = float(np.mean(p[0] == p[1]))
        for r in recs.values():
            r.pop("predictions", None)
        bench.add_case(label, mode, recs, reference="hsskern", agreement=agreement)
    return f"calibration_{args.data}"
