"""Classifiers: HSSSVC (``--ours``: or the drop-in SVC, ExactSVC, NystromSVC) against
LIBSVM (sklearn.svm.SVC), oneDAL (sklearnex.svm.SVC) and LIBLINEAR on Nystroem features: one
fit at SVC's defaults, the C path, GridSearchCV.

    python -m bench c_grid --data ijcnn1 --peers onedal libsvm          # the headline row
    python -m bench c_grid --data magic04 --standardize --modes fit path cv --peers libsvm
    python -m bench c_grid --data a9a --ours-option start=admm --tag admm   # a variant
    python -m bench c_grid --data ijcnn1 --kernel poly --modes fit path --standardize \
        --peers libsvm onedal                                # SVC's poly kernel, degree 3

Modes (each system in a fresh process of its own, one after the other):

* ``fit``: one fit at SVC's defaults, C = 1 (or each ``--fit-C``), gamma = "scale", on
  z-scored X (whatever ``--standardize`` says); multiclass sets as SVC trains them
  (one-vs-one);
* ``path`` (default): the C grid (``--C``, default 10 values 1e-2 ... 1e3) at each kernel
  width ``--h`` (gamma = 1 / (2 h^2)): our estimator's ``fit_path`` (one preparation, each C
  warm-started) against one fit per C for the peers (they have no path);
* ``cv``: ``HSSSVCCV`` (``SVCCV`` with ``--ours svc``) against ``GridSearchCV(SVC, {"C":
  grid}, cv=--folds)``, the refit on all points included;
* ``grid``: model selection as a user runs it, ``--grid-C`` x ``--gamma-factors`` times
  gamma = "scale" (default 4 x 3), ``--folds`` stratified folds shared by all:
  ``HSSSVCCV(param_grid=...)``, ``GridSearchCV(HSSSVC(), ...)`` (as ``hsskern_gscv``) and
  ``GridSearchCV`` of each peer's SVC, the refit included; ``--n-jobs`` gives every one the
  same ``n_jobs`` (oneDAL's SVC threads on every core whatever it is).

``--kernel poly|linear|sigmoid`` (with ``--degree``, ``--coef0``) gives every system SVC's
kernel of that name at gamma = "scale" (``--h`` is then not used; LIBLINEAR is Gaussian only);
the result is then named ``c_grid_<data>_<kernel>``.

Times are training only (scoring the test set is excluded); ``score`` is test accuracy
(balanced accuracy with ``--class-weight balanced``). A fit's case also records ``agreement``:
per system, the fraction of test points whose ``predict`` equals LIBSVM's (oneDAL's when
LIBSVM did not run), the system named in ``agreement_with``. Variants of ours pass options to the
estimator (``--ours-option key=value``), never patch module names.
"""
import functools
import json
import statistics
import time

import numpy as np

from bench.harness import (DataSpec, describe, load_data, pack_labels, peer_class,
                           unpack_labels)

DESCRIPTION = "classifiers vs LIBSVM / oneDAL / LIBLINEAR: fit at defaults, C path, grid search"
TASKS = "bench.suites.c_grid"
OURS = {"svc": ("SVC", "SVCCV"), "hss": ("HSSSVC", "HSSSVCCV"), "exact": ("ExactSVC", None),
        "nystrom": ("NystromSVC", "NystromSVCCV")}


def add_arguments(p):
    p.add_argument("--data", default="ijcnn1", help="a data set name (bench/README.md)")
    p.add_argument("--peers", nargs="*", default=["libsvm"],
                   help="from libsvm, onedal, liblinear (hsskern always runs)")
    p.add_argument("--modes", nargs="+", default=["path"],
                   choices=["fit", "path", "cv", "grid"])
    p.add_argument("--fit-C", nargs="+", type=float, default=[1.0],
                   help="fit mode's C values (one fit each, SVC's other defaults)")
    p.add_argument("--grid-C", nargs="+", type=float, default=[0.1, 1.0, 10.0, 100.0],
                   help="grid mode's C values")
    p.add_argument("--gamma-factors", nargs="+", type=float, default=[0.25, 1.0, 4.0],
                   help='grid mode\'s gamma values, as multiples of gamma="scale"')
    p.add_argument("--h", nargs="+", type=float, default=[1.0], help="kernel widths (path, cv)")
    p.add_argument("--C", nargs="+", default=["1e-2:1e3:10"],
                   help="values, or lo:hi:k for k log-spaced values")
    p.add_argument("--folds", type=int, default=3, help="cv mode's folds")
    p.add_argument("--n-jobs", type=int, default=None,
                   help="grid mode's n_jobs, the same for every system (default: none given)")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--n-test", type=int, default=None)
    p.add_argument("--standardize", action="store_true",
                   help="z-score X for path and cv too (fit always does)")
    p.add_argument("--class-weight", choices=["balanced"], default=None)
    p.add_argument("--kernel", choices=["rbf", "poly", "linear", "sigmoid"], default="rbf",
                   help="SVC's kernel for every system (not rbf: gamma='scale', no --h)")
    p.add_argument("--degree", type=int, default=3, help="the poly kernel's degree")
    p.add_argument("--coef0", type=float, default=0.0, help="the poly / sigmoid constant")
    p.add_argument("--tol", type=float, default=1e-3,
                   help="the KKT gap every exact solver stops at (SVC's tol)")
    p.add_argument("--libsvm-cache", type=float, default=1000.0, help="SVC's cache_size [MB]")
    p.add_argument("--ours", choices=sorted(OURS), default="hss",
                   help="our estimator: HSSSVC (hss: the drop-in's routes, with the records of "
                        "where a fit ended), the drop-in SVC a user imports (svc), ExactSVC "
                        "(exact), NystromSVC (nystrom)")
    p.add_argument("--face-cg", action="store_true",
                   help="fit mode, binary: also solve the final face's system by conjugate "
                        "gradients from zero to --tol (slow: thousands of K_FF products)")
    p.add_argument("--ours-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of our estimator (value parsed as JSON when it parses)")


def grid(spec):
    if len(spec) == 1 and ":" in spec[0]:
        lo, hi, k = spec[0].split(":")
        return np.logspace(np.log10(float(lo)), np.log10(float(hi)), int(k)).tolist()
    return [float(s) for s in spec]


def ours_options(pairs):
    out = {}
    for pair in pairs:
        k, _, v = pair.partition("=")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


# whose predictions a fit's are compared with, the first of these that ran
AGREEMENT_WITH = ("libsvm", "onedal")


def run(args, bench):
    Cs = grid(args.C)
    unknown = set(args.peers) - {"hsskern", "libsvm", "onedal", "liblinear"}
    if unknown:
        raise SystemExit(f"unknown peers {sorted(unknown)}: c_grid has libsvm, onedal, liblinear")
    systems = ["hsskern"] + [p for p in args.peers if p != "hsskern"]
    if args.kernel != "rbf" and "liblinear" in systems:
        raise SystemExit(f"--kernel {args.kernel}: the liblinear peer has Gaussian Nystroem "
                         "features only; drop it from --peers")
    common = {"class_weight": args.class_weight, "tol": args.tol,
              "cache_size": args.libsvm_cache, "ours": ours_options(args.ours_option),
              "ours_estimator": args.ours, "kernel": _kernel_params(args),
              "face_cg": args.face_cg}
    if "cv" in args.modes and OURS[args.ours][1] is None:
        raise SystemExit(f"--ours {args.ours} has no CV estimator: drop the cv mode")
    for mode in args.modes:
        spec = DataSpec(args.data, args.n_train, args.n_test,
                        standardize=args.standardize or mode == "fit")
        bench.data = describe(spec, load_data(spec))
        print(f"{args.data}: {bench.data['n_train']} training / {bench.data['n_test']} test "
              f"points, {bench.data['n_features']} features, mode {mode}", flush=True)
        if mode == "fit":
            cases = [(f"fit C={C:g} gamma=scale", {"C": C, "gamma": "scale"})
                     for C in args.fit_C]
        elif mode == "grid":
            cases = [(f"grid {len(args.grid_C)} C x {len(args.gamma_factors)} gamma x "
                      f"{args.folds} folds" + ("" if args.n_jobs is None else
                                               f", n_jobs={args.n_jobs}"),
                      {"grid_C": args.grid_C, "folds": args.folds, "n_jobs": args.n_jobs,
                       "gamma_factors": args.gamma_factors})]
        elif args.kernel != "rbf":
            what = _kernel_label(args)
            cases = [(f"{mode} {what} ({len(Cs)} C" + (f" x {args.folds} folds)"
                                                       if mode == "cv" else ")"),
                      {"gamma": "scale", "Cs": Cs, "folds": args.folds})]
        else:
            cases = [(f"{mode} h={h:g} ({len(Cs)} C" + (f" x {args.folds} folds)" if mode == "cv"
                                                       else ")"),
                      {"gamma": 1.0 / (2 * h * h), "h": h, "Cs": Cs, "folds": args.folds})
                     for h in args.h]
        for label, params in cases:
            print(f"{label}:", flush=True)
            recs = {s: bench.measure(f"{TASKS}:{mode}_task", s, spec, {**common, **params},
                                     args.repeat) for s in systems}
            if mode == "grid":  # ours as a GridSearchCV user meets it: no shared path
                recs["hsskern_gscv"] = bench.measure(
                    f"{TASKS}:grid_task", "hsskern", spec,
                    {**common, **params, "via": "gridsearchcv"}, args.repeat)
            extra = {}
            if mode == "fit" and recs["hsskern"].get("status") == "ok":
                with_floor_ratio(recs["hsskern"])  # the median fit over the floor
            if mode == "fit":
                ref = next((p for p in AGREEMENT_WITH if recs.get(p, {}).get("status") == "ok"),
                           None)
                extra = {"agreement": _agreement(recs, ref), "agreement_with": ref}
                for s, a in extra["agreement"].items():
                    print(f"  {s}: predict() equal to {ref}'s on {a:.4%} of the test set")
            bench.add_case(label, mode, recs, metric=_metric(args), params=params,
                           standardized=spec.standardize, **extra)
    bench.data["standardized"] = args.standardize
    return f"c_grid_{args.data}" + ("" if args.kernel == "rbf" else f"_{args.kernel}")


def _agreement(recs, reference):
    """Per system but ``reference``, the fraction of test points whose ``predict`` equals the
    reference's (SVC's answer where LIBSVM ran); the label strings are dropped from the
    records (too large to keep)."""
    preds = {s: rec.pop("predictions", None) for s, rec in recs.items()}
    if reference is None or preds.get(reference) is None:
        return {}
    ref = unpack_labels(preds[reference])
    return {s: float(np.mean(unpack_labels(p) == ref)) for s, p in preds.items()
            if p is not None and s != reference}


def _kernel_params(args):
    """The kernel keywords every system gets: none for the Gaussian (each one's default)."""
    if args.kernel == "rbf":
        return {}
    return {"kernel": args.kernel, "degree": args.degree, "coef0": args.coef0}


def _kernel_label(args):
    if args.kernel == "poly":
        return f"poly degree={args.degree} coef0={args.coef0:g} gamma=scale"
    return f"{args.kernel}" + (f" coef0={args.coef0:g}" if args.kernel == "sigmoid" else "")


def _metric(args):
    return "balanced_accuracy" if args.class_weight else "accuracy"


# ----------------------------------------------------------------------------- tasks (child)

def _score(est, X, y, params):
    pred = est.predict(X)
    if params.get("class_weight"):
        from sklearn.metrics import balanced_accuracy_score
        return float(balanced_accuracy_score(y, pred))
    return float(np.mean(pred == y))


def _estimator(params, C, gamma):
    s = params["system"]
    if s == "hsskern":
        import hsskern
        cls = getattr(hsskern, OURS[params["ours_estimator"]][0])
        return cls(C=C, gamma=gamma, class_weight=params["class_weight"], random_state=0,
                   **params.get("kernel", {}), **params["ours"])
    if s == "liblinear":
        return peer_class(s, "svc")(C=C, gamma=gamma)
    extra = {"cache_size": params["cache_size"]} if s == "libsvm" else {}
    return peer_class(s, "svc")(C=C, gamma=gamma, tol=params["tol"],
                                class_weight=params["class_weight"],
                                **params.get("kernel", {}), **extra)


def _n_support(est):
    n = getattr(est, "n_support_", None)
    return None if n is None else int(np.sum(n))


def _route(est):
    stats = getattr(est, "hss_", None)
    return None if stats is None else stats.get("start")


def fit_task(data, params):
    Xtr, ytr, Xte, yte = data
    est = _estimator(params, params["C"], params["gamma"])
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    rec = {"time": t, "score": _score(est, Xte, yte, params), "n_support": _n_support(est),
           "route": _route(est), "phases": getattr(est, "fit_time_", None),
           "predictions": pack_labels(est.predict(Xte))}
    if params["system"] == "hsskern":
        # the fit's and the predictions' high-water mark, not the floor product's: that is
        # the harness's instrumentation (K(X_train, SV) on all training points), which no
        # peer runs
        rec.update(peak_rss=_peak_before_floor(), **_floor(est, Xtr), ends=_ends(est),
                   **_final_face(est, params))
    return with_floor_ratio(rec)


@functools.cache
def _peak_before_floor():
    """This process's resident high-water mark (bytes) when its first floor product was
    about to run: each system runs in a fresh process, so later repeats report the first's
    (their own high-water mark would include the first floor's)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ----------------------------------------------------------------------------- a fit's floor
# Every certified fit computes the gradient K(X_train, SV) alpha at least once (the KKT gap
# is measured on it), so one such product is the work no fit can avoid; the fit's time over
# it says how close the fit is to that floor (issue 62: at most 5x).

#: the floor product's repeats after a fit (the median is kept)
FLOOR_REPEATS = 3


def floor_product(est, X):
    """K(X, SV) @ coef of a fitted estimator of ours, as its decision path computes it
    (``decision_function``: the exact kernel between X and the model's support vectors,
    times every model column's dual coefficients at once, one-vs-one: all pairs' in one
    product, in the row chunks prediction takes); None for a model without support vectors
    (a feature map)."""
    return est.decision_function(X) if _has_floor(est) else None


def _has_floor(est):
    """Whether a fitted estimator's model has support vectors and a kernel."""
    model = getattr(est, "_model", None)
    sv = getattr(model, "support_vectors", None)
    return sv is not None and getattr(model, "kernel", None) is not None and sv.shape[0] > 0


def _median_seconds(work):
    """``(median, times)``: seconds of ``FLOOR_REPEATS`` calls of ``work()``."""
    times = []
    for _ in range(FLOOR_REPEATS):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def _floor(est, X):
    """``floor_s`` (median seconds of :func:`floor_product` on the training points),
    ``floor_times`` and ``floor_entries`` (n x n_SV); {} where there is no such product."""
    if not _has_floor(est):
        return {}
    median, times = _median_seconds(lambda: floor_product(est, X))
    return {"floor_s": median, "floor_times": times,
            "floor_entries": int(X.shape[0]) * int(est._model.support_vectors.shape[0])}


def _final_face(est, params):
    """A binary fit's final face: ``face_free`` (support vectors strictly inside the box),
    ``face_at_bound`` (at it) and ``face_cholesky_s``, the median seconds of one Cholesky
    of K_FF on the free ones, as the Newton step factors it. A method told the face in
    advance would still solve that |F|-dimensional dense system once, beside the floor
    product: on wide free sets it is a second piece of work no fit avoids. With
    ``params["face_cg"]``, also ``face_cg_iterations`` and ``face_cg_s``: conjugate
    gradients on the same system from zero until every free point is within ``tol`` of its
    margin, the iterative alternative to the factorization. {} for a multiclass model or
    none free."""
    import scipy.linalg
    from hsskern import kernel_operator
    from hsskern.options import DecompositionOptions
    from hsskern.solvers.engines.admm import kkt_sets
    model, C = getattr(est, "_model", None), params["C"]
    coef = np.asarray(getattr(est, "dual_coef_", np.empty((0, 0))))
    if model is None or coef.shape[0] != 1 or getattr(model, "kernel", None) is None:
        return {}
    weights = np.asarray(getattr(est, "class_weight_", np.ones(2)), dtype=float)
    box = C * weights[(coef[0] > 0).astype(int)]  # dual_coef = y alpha: + is the 2nd class
    up, low = kkt_sets(np.sign(coef[0]), np.abs(coef[0]), box)
    free = up & low  # strictly inside the box, as the solver counts it
    if not free.any():
        return {}
    # scikit-learn's order: dual_coef_ pairs with support_vectors_ (the model's own arrays
    # may hold the support vectors in another order)
    SV = est.support_vectors_
    KFF = kernel_operator(SV[free], model.kernel).to_dense()
    # the Newton step's ridge: duplicate points make K_FF singular (float32 fails to factor
    # it on credit_default's final face; double is what the Newton step uses)
    ridge = DecompositionOptions().newton_ridge
    KFF[np.diag_indices_from(KFF)] += ridge * KFF.diagonal().mean()
    median, _ = _median_seconds(
        lambda: scipy.linalg.cholesky(KFF, lower=True, check_finite=False))
    out = {"face_free": int(free.sum()), "face_at_bound": int((~free).sum()),
           "face_cholesky_s": median}
    if params.get("face_cg"):
        # K_FF c_F = y_F - b - K_FB c_B: the free points on their margins, the bounded
        # ones' coefficients fixed at the fit's
        KFB = kernel_operator(SV[~free], model.kernel).cross(SV[free]) @ coef[0, ~free]
        rhs = np.sign(coef[0, free]) - est.intercept_[0] - KFB
        t0 = time.perf_counter()
        out["face_cg_iterations"] = _cg_iterations(KFF, rhs, params["tol"])
        out["face_cg_s"] = time.perf_counter() - t0
    return out


def _cg_iterations(A, b, tol, max_iter=100_000):
    """Conjugate-gradient iterations on A x = b from x = 0 until max |b - A x| < tol (the
    residual r = b - A x is all the count needs; x itself is not kept)."""
    r = b.copy()
    p, rr = r.copy(), r @ r
    for it in range(max_iter):
        if np.abs(r).max() < tol:
            return it
        Ap = A @ p
        r -= (rr / (p @ Ap)) * Ap
        rr, rr_old = r @ r, rr
        p = r + (rr / rr_old) * p
    return max_iter


def with_floor_ratio(rec):
    """``rec`` with ``fit_over_floor``, its fit ``time`` over ``floor_s`` (where both are):
    set again on the median time once the repeats are in."""
    if rec.get("floor_s"):
        rec["fit_over_floor"] = rec["time"] / rec["floor_s"]
    return rec


def _ends(est):
    """Where the fit's time went beyond ``fit_time_``: the exact solver's phases (seconds)
    and kernel entries by phase, summed over its runs (one-vs-one: the pairs, which run
    side by side, so the sums can exceed the wall time); None without them."""
    runs = [r for r in (getattr(est, "admm_", None) or {}).get("exact") or ()
            if r is not None and getattr(r, "skipped", None) is None]
    if not runs:
        return None
    solver, entries = {}, {}
    for r in runs:
        for k, v in getattr(r, "timings", {}).items():
            solver[k] = solver.get(k, 0.0) + float(v)
        for k, v in getattr(r, "kernel_entries", {}).items():
            entries[k] = entries.get(k, 0) + int(v)
    return {"solver": solver, "kernel_entries": entries, "runs": len(runs),
            "rounds": int(sum(getattr(r, "rounds", 0) for r in runs))}


def path_task(data, params):
    Xtr, ytr, Xte, yte = data
    Cs, gamma = params["Cs"], params["gamma"]
    per_c = []
    if params["system"] == "hsskern":
        est = _estimator(params, Cs[0], gamma)
        t0 = time.perf_counter()
        models = est.fit_path(Xtr, ytr, Cs)
        t = time.perf_counter() - t0
        for m in models:
            per_c.append({"C": float(m.C), "time": float(sum(m.fit_time_.values())),
                          "score": _score(m, Xte, yte, params), "n_support": _n_support(m)})
        route = _route(models[0])
    else:
        t = 0.0
        for C in Cs:
            est = _estimator(params, C, gamma)
            t0 = time.perf_counter()
            est.fit(Xtr, ytr)
            dt = time.perf_counter() - t0
            t += dt
            per_c.append({"C": float(C), "time": dt, "score": _score(est, Xte, yte, params),
                          "n_support": _n_support(est)})
            print(f"C={C:.3g}: {dt:.2f} s, score {per_c[-1]['score']:.4f}", flush=True)
        route = None
    best = max(per_c, key=lambda f: f["score"])
    return {"time": t, "score": best["score"], "best_C": best["C"], "per_C": per_c,
            "route": route}


def cv_task(data, params):
    Xtr, ytr, Xte, yte = data
    Cs, folds = params["Cs"], params["folds"]
    if params["system"] == "hsskern":
        import hsskern
        est = getattr(hsskern, OURS[params["ours_estimator"]][1])(
            Cs=Cs, gamma=params["gamma"], cv=folds, class_weight=params["class_weight"],
            random_state=0, **params["ours"])
    else:
        from sklearn.model_selection import GridSearchCV, StratifiedKFold
        key = "linearsvc__C" if params["system"] == "liblinear" else "C"
        est = GridSearchCV(_estimator(params, 1.0, params["gamma"]), {key: Cs},
                           cv=StratifiedKFold(folds, shuffle=True, random_state=0))
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    best_C = float(est.C_ if hasattr(est, "C_") else next(iter(est.best_params_.values())))
    return {"time": t, "score": _score(est, Xte, yte, params), "best_C": best_C}


def grid_task(data, params):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    Xtr, ytr, Xte, yte = data
    scale = 1.0 / (Xtr.shape[1] * Xtr.var())  # SVC's gamma="scale"
    grid = {"C": [float(C) for C in params["grid_C"]],
            "gamma": [float(f * scale) for f in params["gamma_factors"]]}
    cv = StratifiedKFold(params["folds"], shuffle=True, random_state=0)
    if params["system"] == "hsskern" and params.get("via") != "gridsearchcv":
        import hsskern
        est = getattr(hsskern, OURS[params["ours_estimator"]][1])(
            param_grid=grid, cv=cv, class_weight=params["class_weight"], random_state=0,
            n_jobs=params.get("n_jobs"), **params["ours"])
    else:
        est = GridSearchCV(_estimator(params, 1.0, "scale"), grid, cv=cv,
                           n_jobs=params.get("n_jobs"))
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    best = {k: float(v) for k, v in est.best_params_.items()}
    best["gamma"] /= scale
    return {"time": t, "score": _score(est, Xte, yte, params),
            "best_params": best, "best_cv_score": float(est.best_score_)}
