"""``warm_start=True``: the refit of a fitted HSSSVC against a cold fit of the same problem.

    python -m bench warm_start                         # ijcnn1, 5 % rows appended
    python -m bench warm_start --data ijcnn1 a9a w8a skin_nonskin shuttle
    python -m bench warm_start --modes append remove C --gamma fixed scale

The training rows are put in a seeded random order; the model is first fitted (untimed) on
the first n / (1 + share) of them with ``warm_start=True``, then each mode changes the problem
and both systems fit it: ``cold`` a fresh HSSSVC, ``warm`` the fitted one (its refit timed
alone, in its own process; ``cpu_time`` beside it, the process's CPU seconds of the same
fit, which a loaded machine moves less). Modes:

* ``append``: the remaining share of rows appended (the nightly retrain);
* ``remove``: all rows, less a share of them drawn at random;
* ``C``: all rows at ``--C-new``.

``--gamma fixed`` gives both the base fit's ``gamma="scale"`` value as a number (a production
model's chosen width: the refit keeps the kernel, and reuses the decision values of the rows
it had); ``scale`` refits with ``gamma="scale"``, which the new rows move a little, so the
refit recomputes them (one n x n_SV product). Every case records the test accuracy and
``agreement``: the fraction of test points the two models label alike. ``ratios`` hold the
cold fit's time over the warm refit's; with several ``--data`` sets each case names its set
and the run ends with one line per set and case: warm, cold, cold / warm.
"""
import numpy as np

from bench.harness import DataSpec, describe, load_data, pack_labels, unpack_labels

DESCRIPTION = "HSSSVC warm_start: refit after rows appended / removed / a new C vs a cold fit"
TASKS = "bench.suites.warm_start"


def add_arguments(p):
    p.add_argument("--data", nargs="+", default=["ijcnn1"],
                   help="data set names (bench/README.md): each gets every mode and gamma")
    p.add_argument("--modes", nargs="+", default=["append"], choices=["append", "remove", "C"])
    p.add_argument("--share", type=float, default=0.05,
                   help="rows appended (of the base set) or removed (of all rows)")
    p.add_argument("--gamma", nargs="+", default=["fixed"], choices=["fixed", "scale"])
    p.add_argument("--C", type=float, default=1.0, help="the base fit's C")
    p.add_argument("--C-new", type=float, default=2.0, help="the C mode's refit C")
    p.add_argument("--tol", type=float, default=1e-3, help="the KKT gap both fits stop at")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--n-test", type=int, default=None)
    p.add_argument("--standardize", action="store_true", help="z-score X")


def _problems(Xtr, ytr, params):
    """(X_base, y_base, X_new, y_new, C_new): the base fit's rows and the refit's problem."""
    n = len(ytr)
    order = np.random.default_rng(0).permutation(n)
    X, y = Xtr[order], ytr[order]
    share, mode = params["share"], params["mode"]
    n_base = int(round(n / (1 + share))) if mode == "append" else n
    if mode == "append":
        return X[:n_base], y[:n_base], X, y, params["C"]
    if mode == "remove":
        keep = np.sort(np.random.default_rng(1).permutation(n)[:n - int(round(share * n))])
        return X, y, X[keep], y[keep], params["C"]
    return X, y, X, y, params["C_new"]


def refit_task(data, params):
    """One system: ``cold`` fits the changed problem from nothing, ``warm`` refits the model
    fitted (untimed) on the base rows."""
    import time

    from hsskern import HSSSVC
    Xtr, ytr, Xte, yte = data
    Xb, yb, Xn, yn, C_new = _problems(Xtr, ytr, params)
    gamma = params["gamma"]
    if gamma == "fixed":  # the base set's "scale" width, kept as a number
        gamma = float(1.0 / (Xb.shape[1] * Xb.var()))
    est = HSSSVC(C=params["C"], gamma=gamma, tol=params["tol"], random_state=0,
                 warm_start=params["which"] == "warm")
    if params["which"] == "warm":
        est.fit(Xb, yb)
    est.set_params(C=C_new)
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(Xn, yn)
    t, cpu = time.perf_counter() - t0, time.process_time() - c0
    pred = est.predict(Xte)
    return {"time": t, "cpu_time": cpu, "score": float(np.mean(pred == yte)),
            "n_train": int(len(yn)),
            "n_support": int(est.support_.size), "phases": getattr(est, "fit_time_", None),
            "warm_start_info": getattr(est, "warm_start_info_", None),
            "predictions": pack_labels(pred)}


def run(args, bench):
    sets = []
    for name in args.data:
        spec = DataSpec(name, args.n_train, args.n_test, standardize=args.standardize)
        info = describe(spec, load_data(spec))
        sets.append(info)
        print(f"{name}: {info['n_train']} training / {info['n_test']} test points, "
              f"{info['n_features']} features", flush=True)
        for mode in args.modes:
            for gamma in args.gamma:
                _case(args, bench, spec, mode, gamma, several=len(args.data) > 1)
    bench.data = sets[0] if len(sets) == 1 else {
        "name": "+".join(args.data), "sets": sets,
        "n_features": [d["n_features"] for d in sets]}
    bench.summary()
    _ratio_table(bench.cases)
    return f"warm_start_{'_'.join(args.data)}"


def _case(args, bench, spec, mode, gamma, several):
    """One set, mode and gamma: the warm refit and the cold fit, each in its own process."""
    what = {"append": f"{100 * args.share:g} % rows appended",
            "remove": f"{100 * args.share:g} % rows removed",
            "C": f"C {args.C:g} -> {args.C_new:g}"}[mode]
    label = (f"{spec.name}: " if several else "") + f"refit, {what}, gamma {gamma}"
    print(f"{label}:", flush=True)
    params = {"mode": mode, "share": args.share, "gamma": gamma, "C": args.C,
              "C_new": args.C_new, "tol": args.tol}
    recs = {which: bench.measure(f"{TASKS}:refit_task", "hsskern", spec,
                                 {**params, "which": which}, args.repeat)
            for which in ("warm", "cold")}
    agreement = None
    if all(r.get("status") == "ok" for r in recs.values()):
        p = [unpack_labels(r.pop("predictions")) for r in recs.values()]
        agreement = float(np.mean(p[0] == p[1]))
    for r in recs.values():
        r.pop("predictions", None)
    bench.add_case(label, mode, recs, reference="warm", agreement=agreement,
                   data=spec.name, gamma=gamma)


def _ratio_table(cases):
    """The run's answer, one line per set and case: cold / warm (the target: >= 5x)."""
    print("\ncold fit / warm refit:")
    for c in cases:
        warm, cold = c["systems"].get("warm", {}), c["systems"].get("cold", {})
        if "cold" not in c["ratios"]:
            print(f"  {c['case']}: {warm.get('status')} / {cold.get('status')}")
            continue
        cpu = ""
        if warm.get("cpu_time") and cold.get("cpu_time"):  # the load moves it less
            cpu = f" (CPU: {cold['cpu_time'] / warm['cpu_time']:.2f}x)"
        print(f"  {c['case']}: warm {warm['time']:.3f} s, cold {cold['time']:.3f} s, "
              f"{c['ratios']['cold']:.2f}x{cpu}")
