"""Regression: HSSKernelRidge, HSSGaussianProcessRegressor and HSSSVR against scikit-learn's
KernelRidge, GaussianProcessRegressor and SVR (LIBSVM; oneDAL's SVR with ``--peers onedal``).

    python -m bench regression --data kin40k --models krr svr --n-train 8000
    python -m bench regression --data kin40k --models gp --n-train 3000
    python -m bench regression --data ccpp --models svr --modes path --peers libsvm onedal
    python -m bench regression --data protein --models krr --modes fit --n-train 32000 \\
        --h 1.05 --alpha 0.307 --ours-option approximation=nystrom --ours-option n_components=2000

Data: ../shared/datasets/regression/<name>.npz (skipped cleanly without it), features and
target z-scored with the training statistics (epsilon = 0.1 is a tenth of the target's std).

Modes per model (each system in a fresh process):

* ``fit``: one fit, KRR at (``--h``, ``--alpha``) (ours ``solver="exact"``: CG on the exact
  kernel, the KernelRidge solution), SVR at C = 1, gamma = "scale"; GP: hyperparameters by
  maximum likelihood from h = 1 (sklearn: ``C * RBF + White``, ``normalize_y``);
* ``path``: KRR over ``--alphas`` (``HSSKernelRidge.fit_path``), SVR over ``--C``
  (``HSSSVR.fit_path``) against a fit per value;
* ``cv``: KRR's alpha chosen by ``--folds``-fold CV: HSSKernelRidgeCV against GridSearchCV.

``score`` is the test RMSE (in the standardized target's units): lower is better. A path's
records keep the value under ``C`` whatever the parameter (``path_parameter``: alpha or C).
"""
import time

import numpy as np

from bench.harness import DataSpec, describe, load_data, peer_class
from bench.suites.c_grid import grid, ours_options

DESCRIPTION = "KRR, GP and SVR vs scikit-learn's KernelRidge, GaussianProcessRegressor, SVR"
TASKS = "bench.suites.regression"
PEERS_OF = {"krr": ["sklearn"], "gp": ["sklearn"], "svr": ["libsvm", "onedal"]}


def add_arguments(p):
    p.add_argument("--data", default="kin40k")
    p.add_argument("--models", nargs="+", default=["krr", "svr"], choices=["krr", "gp", "svr"])
    p.add_argument("--modes", nargs="+", default=["fit", "path"], choices=["fit", "path", "cv"])
    p.add_argument("--peers", nargs="*", default=["sklearn", "libsvm"],
                   help="sklearn (KRR, GP), libsvm / onedal (SVR)")
    p.add_argument("--n-train", type=int, default=8000)
    p.add_argument("--n-test", type=int, default=None)
    p.add_argument("--h", type=float, default=1.7, help="KRR's kernel width")
    p.add_argument("--alpha", type=float, default=0.004, help="KRR's alpha (fit mode)")
    p.add_argument("--alphas", nargs="+", default=["1e-3:1:10"], help="KRR's path / cv grid")
    p.add_argument("--C", nargs="+", default=["1e-1:1e3:10"], help="SVR's path")
    p.add_argument("--epsilon", type=float, default=0.1)
    p.add_argument("--folds", type=int, default=3)
    p.add_argument("--ours-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of our estimator of every --models (value parsed as "
                        "JSON when it parses), e.g. approximation=nystrom")


def run(args, bench):
    spec = DataSpec(args.data, args.n_train, args.n_test, standardize=True)
    bench.data = describe(spec, load_data(spec))
    print(f"{args.data}: {bench.data['n_train']} training / {bench.data['n_test']} test "
          f"points, {bench.data['n_features']} features", flush=True)
    for model in args.models:
        for mode in args.modes:
            if (model, mode) in (("gp", "path"), ("gp", "cv"), ("svr", "cv")):
                continue  # no such comparison: a GP has no C path, SVR's CV is c_grid's
            params = {"model": model, "mode": mode, "h": args.h, "alpha": args.alpha,
                      "alphas": grid(args.alphas), "Cs": grid(args.C),
                      "epsilon": args.epsilon, "folds": args.folds,
                      "ours": ours_options(args.ours_option)}
            label = f"{model} {mode}"
            print(f"{label}:", flush=True)
            systems = ["hsskern"] + [p for p in args.peers if p in PEERS_OF[model]]
            recs = {s: bench.measure(f"{TASKS}:task", s, spec, params, args.repeat)
                    for s in systems}
            bench.add_case(label, mode, recs, metric="rmse", params=params)
    return f"regression_{args.data}"


# ----------------------------------------------------------------------------- tasks (child)

def _rmse(est, X, y):
    return float(np.sqrt(np.mean((est.predict(X) - y) ** 2)))


def _make(params, model, **kw):
    s = params["system"]
    gamma = 1.0 / (2 * params["h"] ** 2)
    if s == "hsskern":
        kw = {**params.get("ours", {}), **kw}
    if model == "krr":
        if s == "hsskern":
            return peer_class(s, "krr")(h=params["h"], solver="exact", random_state=0, **kw)
        return peer_class(s, "krr")(kernel="rbf", gamma=gamma, **kw)
    if model == "svr":
        extra = {"random_state": 0} if s == "hsskern" else {}
        return peer_class(s, "svr")(gamma="scale", epsilon=params["epsilon"], **extra, **kw)
    if s == "hsskern":
        return peer_class(s, "gp")(h=1.0, normalize_y=True, random_state=0, **kw)
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    return peer_class(s, "gp")(ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1),
                               normalize_y=True, random_state=0)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def task(data, params):
    Xtr, ytr, Xte, yte = data
    mu, sd = ytr.mean(), ytr.std() or 1.0
    ytr, yte = (ytr - mu) / sd, (yte - mu) / sd
    model, mode, s = params["model"], params["mode"], params["system"]
    if mode == "fit":
        kw = {"alpha": params["alpha"]} if model == "krr" else (
            {"C": 1.0} if model == "svr" else {})
        est = _make(params, model, **kw)
        t, _ = _timed(lambda: est.fit(Xtr, ytr))
        return {"time": t, "score": _rmse(est, Xte, yte)}
    if mode == "cv":
        if s == "hsskern":
            from hsskern import HSSKernelRidgeCV
            est = HSSKernelRidgeCV(alphas=params["alphas"], h=params["h"], cv=params["folds"],
                                   solver="exact", random_state=0,
                                   **params.get("ours", {}))
        else:
            from sklearn.model_selection import GridSearchCV, KFold
            est = GridSearchCV(_make(params, model), {"alpha": params["alphas"]},
                               cv=KFold(params["folds"], shuffle=True, random_state=0),
                               scoring="neg_mean_squared_error")
        t, _ = _timed(lambda: est.fit(Xtr, ytr))
        return {"time": t, "score": _rmse(est, Xte, yte)}
    key, values = ("alpha", params["alphas"]) if model == "krr" else ("C", params["Cs"])
    per = []
    if s == "hsskern":
        t, models = _timed(lambda: _make(params, model).fit_path(Xtr, ytr, values))
        per = [{"C": float(getattr(m, key)), "time": float(sum(m.fit_time_.values())),
                "score": _rmse(m, Xte, yte)} for m in models]
    else:
        t = 0.0
        for v in values:
            est = _make(params, model, **{key: v})
            dt, _ = _timed(lambda: est.fit(Xtr, ytr))
            t += dt
            per.append({"C": float(v), "time": dt, "score": _rmse(est, Xte, yte)})
            print(f"{key}={v:.3g}: {dt:.2f} s, RMSE {per[-1]['score']:.4f}", flush=True)
    best = min(per, key=lambda f: f["score"])
    return {"time": t, "score": best["score"], "best": best["C"], "path_parameter": key,
            "per_C": per}
