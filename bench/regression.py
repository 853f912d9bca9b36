"""Kernel ridge and Gaussian-process regression on the HSS factor vs scikit-learn, on kin40k.

    python bench/regression.py --part krr --n 20000          # KRR: exact / direct vs KernelRidge
    python bench/regression.py --part gp                      # GP: subsample vs sklearn, then full
    python bench/regression.py --part gp --gp-parts full --gp-h 1.6   # GP on all points only
    python bench/regression.py --part krr --dataset synthetic3d --h 0.5 --alpha 0.01 --path

``--dataset synthetic3d`` is a control where HSS compresses well (3-d, 32,000 / 8,000 points).

Data: ../shared/datasets/regression/kin40k.npz (32,000 train / 8,000 test, 8 features; the
script exits cleanly without it). Features standardised with the training mean and std; the
target is used as distributed (mean 0, std ~1).

Part ``krr`` (bench/results/regression_krr_<dataset>_n<n>.json): on the first n training points, one
(h, alpha) (default h = 1.7, alpha = 0.004: the isotropic GP optimum scikit-learn finds on a
4,000-point subsample, sigma^2 / s^2 = 0.0064 / 1.6) fitted by

* ``KernelRidge(kernel="rbf", gamma=1/(2 h^2))`` (forms the n x n kernel; skipped with the
  reason when the memory check says it cannot);
* ``HSSKernelRidge(solver="exact")``: CG on the exact kernel preconditioned by the HSS factor,
  to relative residual 1e-10 (the KernelRidge solution): time, CG iterations, the prediction
  difference to KernelRidge;
* ``HSSKernelRidge(solver="direct")`` at the same alpha (it refuses, with the numbers, when the
  approximation + alpha I is indefinite) and at ``--direct-alpha`` values;
* ``HSSKernelRidge(solver="exact", approximation="nystrom", n_components=k)`` for each of
  ``--ranks``: the same CG preconditioned by a rank-k randomly pivoted Cholesky (no
  compression); ``--approximations`` picks which preconditioners run; ``--direct-ranks``:
  ``solver="direct"`` on it (Nystrom kernel ridge, the approximate model);
* ``make_pipeline(Nystroem(n_components=k), Ridge(alpha))`` for each of ``--nystroem-ks``
  (the approximate model at comparable time: test RMSE against time);
* a 10-value alpha path (``fit_path``, logspace(-3, 0)) vs one alpha, exact solver.

Test RMSE on the 8,000 test points for every model; the time ratio KernelRidge / ours.

Part ``gp`` (bench/results/regression_gp_<dataset>.json):

1. on a ``--gp-sub``-point subsample: scikit-learn's ``GaussianProcessRegressor(C * RBF +
   White, normalize_y=True)`` (L-BFGS-B with gradients, one start) against
   ``HSSGaussianProcessRegressor(normalize_y=True)`` with ``approximation="exact"`` and
   ``"hss"``: fit time, hyperparameters, log marginal likelihood (ours re-evaluated by
   scikit-learn at our hyperparameters), test RMSE and mean negative log predictive density;
2. on all 32,000 training points: ``HSSGaussianProcessRegressor`` with the width fixed at
   the subsample's (one compression) and the noise ratio searched by refactorizations, then
   prediction with std on the test set. scikit-learn cannot run here (its fit forms the
   32,000^2 kernel, 8 GB, plus a copy for the Cholesky and the 3 x 8 GB gradient tensor).
   ``--gp-full-approximation nystrom --gp-ranks k ...``: the sparse GP (Titsias' bound on a
   rank-k randomly pivoted Cholesky) instead, with the width searched too unless
   ``--gp-h`` is given (``--gp-tol``: the searches' tolerance in log h and log beta).

BLAS runs single-threaded for every contender (``threadpool_limits(1)``; this machine is
shared and OpenBLAS's spinning threads made small dense factorizations 20x slower at load 7 on
2 cores) unless ``--gp-blas-threads`` says otherwise for the GP part (for every contender
there too); the kernel tiles use OpenMP threads. The load average is recorded with each result.
"""
import argparse
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.kernel_ridge import KernelRidge  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from _common import SHARED, rss_bytes, write_result  # noqa: E402
from hsskern import HSSGaussianProcessRegressor, HSSKernelRidge  # noqa: E402
from hsskern.utils._memory import available_memory  # noqa: E402


def load_regression(name):
    """A shared regression set with features standardised on the training split; the
    target too (kernel ridge has no intercept), except kin40k's, standardised at source."""
    path = SHARED / "regression" / f"{name}.npz"
    if not path.exists():
        print(f"{path} not present: nothing to run")
        sys.exit(0)
    d = np.load(path)
    mu, sd = d["X_train"].mean(0), d["X_train"].std(0)
    sd = np.where(sd > 0, sd, 1.0)  # a constant column stays 0
    y, yt = d["y_train"], d["y_test"]
    if name != "kin40k":
        y_mu, y_sd = y.mean(), y.std()
        y, yt = (y - y_mu) / y_sd, (yt - y_mu) / y_sd
    return (d["X_train"] - mu) / sd, y, (d["X_test"] - mu) / sd, yt


def synthetic3d(n=40000, seed=0):
    """A low-dimensional control where HSS compresses well: 3-d points, smooth target +
    noise 0.1 (80/20 split)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 2] + 0.1 * rng.normal(size=n)
    cut = 4 * n // 5
    return X[:cut], y[:cut], X[cut:], y[cut:]


def rmse(p, y):
    return float(np.sqrt(np.mean((p - y) ** 2)))


def nlpd(mu, sd, y):
    """Mean negative log predictive density of y under N(mu, sd^2)."""
    return float(np.mean(0.5 * np.log(2 * np.pi * sd ** 2) + 0.5 * ((y - mu) / sd) ** 2))


def load():
    return os.getloadavg()[0]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_krr(args, X, y, Xt, yt):
    n = args.n
    X, y = X[:n], y[:n]
    h, alpha = args.h, args.alpha
    out = {"n": n, "d": X.shape[1], "h": h, "alpha": alpha, "n_test": len(yt), "runs": {}}
    hss = dict(rel_tol=args.rel_tol, abs_tol=args.rel_tol * 1e-2, max_rank=args.max_rank,
               random_state=0)
    out["hss_options"] = hss
    ref_pred = None
    # KernelRidge: rbf_kernel (n x n) and a Cholesky solve on a copy of it
    need = 2 * 8 * n * n
    avail = available_memory()
    if args.skip_kernel_ridge:
        out["runs"]["KernelRidge"] = {"skipped": "--skip-kernel-ridge"}
    elif avail is not None and need > 0.8 * avail:
        out["runs"]["KernelRidge"] = {"skipped": f"needs ~{need / 2**30:.1f} GiB, "
                                                 f"{avail / 2**30:.1f} GiB available"}
    else:
        kr = KernelRidge(alpha=alpha, kernel="rbf", gamma=1.0 / (2 * h * h))
        la = load()
        t_fit, _ = timed(lambda: kr.fit(X, y))
        t_pred, ref_pred = timed(lambda: kr.predict(Xt))
        out["runs"]["KernelRidge"] = {"fit_s": t_fit, "predict_s": t_pred,
                                      "rmse": rmse(ref_pred, yt), "load": la}
        del kr
        print(f"KernelRidge n={n}: fit {t_fit:.1f} s, test RMSE {rmse(ref_pred, yt):.4f}",
              flush=True)

    def ours(name, **kw):
        la = load()
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                m = HSSKernelRidge(alpha=kw.pop("alpha", alpha), h=h, tol=args.cg_tol, **hss,
                                   **kw)
                t_fit, _ = timed(lambda: m.fit(X, y))
        except Exception as exc:  # a refusal (indefinite approximation) is a result
            out["runs"][name] = {"error": f"{type(exc).__name__}: {exc}", "load": la}
            print(f"{name}: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
            return None
        t_pred, p = timed(lambda: m.predict(Xt))
        rec = {"alpha": m.alpha, "cg_tol": m.tol, "fit_s": t_fit, "predict_s": t_pred, "rmse": rmse(p, yt),
               "fit_time": m.fit_time_, "n_iter": m.n_iter_.tolist(),
               "residual": m.residual_.tolist(), "max_rank": m.hss_.get("max_rank"),
               "hss_memory_MB": m.hss_.get("memory_bytes", 0) / 2**20,
               "warnings": [str(x.message)[:200] for x in w], "load": la}
        if ref_pred is not None and m.alpha == alpha:
            rec["pred_rel_diff_vs_KernelRidge"] = float(np.linalg.norm(p - ref_pred)
                                                        / np.linalg.norm(ref_pred))
            rec["time_ratio_KernelRidge_over_ours"] = out["runs"]["KernelRidge"]["fit_s"] / t_fit
        out["runs"][name] = rec
        print(f"{name}: fit {t_fit:.1f} s ({', '.join(f'{k} {v:.1f}' for k, v in m.fit_time_.items() if v > 0.05)}),"
              f" CG iterations {m.n_iter_.tolist()}, RMSE {rec['rmse']:.4f}"
              + (f", rel. diff to KernelRidge {rec['pred_rel_diff_vs_KernelRidge']:.2e}"
                 if "pred_rel_diff_vs_KernelRidge" in rec else ""), flush=True)
        return m

    if "hss" in args.approximations:
        ours("HSSKernelRidge_exact", solver="exact")
        ours("HSSKernelRidge_direct", solver="direct")
        for a in args.direct_alpha:
            ours(f"HSSKernelRidge_direct_alpha{a:g}", solver="direct", alpha=a)
    if "nystrom" in args.approximations:
        for k in args.ranks:
            ours(f"HSSKernelRidge_exact_nystrom{k}", solver="exact", approximation="nystrom",
                 n_components=k)
        for k in args.direct_ranks:  # Nystrom kernel ridge on the RPCholesky factor
            ours(f"HSSKernelRidge_direct_nystrom{k}", solver="direct", approximation="nystrom",
                 n_components=k)
    for k in args.nystroem_ks:  # scikit-learn's Nystroem features + Ridge: uniform landmarks
        la = load()
        pipe = make_pipeline(Nystroem(gamma=1.0 / (2 * h * h), n_components=k, random_state=0),
                             Ridge(alpha=alpha))
        t_fit, _ = timed(lambda: pipe.fit(X, y))
        p = pipe.predict(Xt)
        out["runs"][f"Nystroem{k}_Ridge"] = {"fit_s": t_fit, "rmse": rmse(p, yt), "load": la}
        print(f"Nystroem({k}) + Ridge: fit {t_fit:.1f} s, test RMSE {rmse(p, yt):.4f}",
              flush=True)
        del pipe
    if args.path:
        alphas = np.logspace(-3, 0, 10)
        la = load()
        t_path, models = timed(lambda: HSSKernelRidge(h=h, solver="exact", **hss).fit_path(
            X, y, alphas))
        out["runs"]["path_exact_10_alphas"] = {
            "alphas": alphas.tolist(), "total_s": t_path,
            "n_iter": [int(m.n_iter_[0]) for m in models],
            "rmse": [rmse(m.predict(Xt), yt) for m in models], "load": la}
        print(f"10-alpha exact path: {t_path:.1f} s, CG iterations "
              f"{[int(m.n_iter_[0]) for m in models]}", flush=True)
    return out


def run_gp(args, X, y, Xt, yt):
    out = {"sub": {"n": args.gp_sub}, "full": {"n": len(y)}}
    h = None
    if "sub" in args.gp_parts:
        h = run_gp_sub(args, X, y, Xt, yt, out)
    if "full" in args.gp_parts:
        run_gp_full(args, X, y, Xt, yt, out, args.gp_h or h)
    return out


def run_gp_sub(args, X, y, Xt, yt, out):
    rng = np.random.default_rng(0)
    idx = rng.choice(len(y), args.gp_sub, replace=False)
    Xs, ys = X[idx], y[idx]
    sk_model = None
    if args.gp_sklearn:
        la = load()
        kernel = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)
        g = GaussianProcessRegressor(kernel, normalize_y=True, random_state=0)
        t_fit, _ = timed(lambda: g.fit(Xs, ys))
        t_pred, (mu, sd) = timed(lambda: g.predict(Xt, return_std=True))
        out["sub"]["sklearn"] = {"fit_s": t_fit, "predict_s": t_pred, "kernel": str(g.kernel_),
                                 "lml": float(g.log_marginal_likelihood_value_),
                                 "rmse": rmse(mu, yt), "nlpd": nlpd(mu, sd, yt), "load": la}
        sk_model = g
        print(f"sklearn GPR n={args.gp_sub}: fit {t_fit:.1f} s, {g.kernel_}, "
              f"LML {g.log_marginal_likelihood_value_:.2f}, RMSE {rmse(mu, yt):.4f}, "
              f"NLPD {nlpd(mu, sd, yt):.4f}", flush=True)
    chosen = None
    for approx in args.gp_sub_approximations:
        la = load()
        kw = {} if approx == "exact" else dict(rel_tol=args.gp_rel_tol,
                                               abs_tol=args.gp_rel_tol * 1e-2,
                                               max_rank=args.max_rank)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m = HSSGaussianProcessRegressor(normalize_y=True, h=1.0, h_bounds=(0.1, 10.0),
                                            approximation=approx, random_state=0, **kw)
            t_fit, _ = timed(lambda: m.fit(Xs, ys))
        t_pred, (mu, sd) = timed(lambda: m.predict(Xt, return_std=True))
        rec = {"fit_s": t_fit, "predict_s": t_pred, "kernel": str(m.kernel_),
               "lml": m.log_marginal_likelihood_value_, "rmse": rmse(mu, yt),
               "nlpd": nlpd(mu, sd, yt), "n_compressions": m.search_["n_compressions"],
               "n_factorizations": m.search_["n_factorizations"], "fit_time": m.fit_time_,
               "max_rank": m.hss_.get("max_rank"), "load": la,
               "warnings": [str(x.message)[:200] for x in w]}
        if sk_model is not None:  # our hyperparameters scored by scikit-learn
            rec["lml_by_sklearn_at_ours"] = float(sk_model.log_marginal_likelihood(
                m.kernel_.theta))
        out["sub"][f"hss_gp_{approx}"] = rec
        if approx == "exact":
            chosen = m
        print(f"HSSGaussianProcessRegressor({approx}) n={args.gp_sub}: fit {t_fit:.1f} s "
              f"({rec['n_compressions']} widths, {rec['n_factorizations']} factorizations), "
              f"{m.kernel_}, LML {rec['lml']:.2f}, RMSE {rec['rmse']:.4f}, NLPD "
              f"{rec['nlpd']:.4f}", flush=True)
    return None if chosen is None else chosen.h_


def run_gp_full(args, X, y, Xt, yt, out, h):
    """All points: the given width, the noise ratio searched on one compression (or the
    sparse GP at each of ``--gp-ranks``)."""
    if args.gp_full_approximation == "nystrom":
        for k in args.gp_ranks:
            run_gp_full_nystrom(args, X, y, Xt, yt, out, k)
        return out
    la = load()
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m = HSSGaussianProcessRegressor(normalize_y=True, h=h, h_bounds="fixed",
                                            rel_tol=args.gp_rel_tol,
                                            abs_tol=args.gp_rel_tol * 1e-2,
                                            max_rank=args.max_rank, random_state=0,
                                            verbose=2)
            t_fit, _ = timed(lambda: m.fit(X, y))
        t_pred, (mu, sd) = timed(lambda: m.predict(Xt, return_std=True))
        out["full"]["hss_gp"] = {
            "h_from_subsample": h, "fit_s": t_fit, "predict_s": t_pred, "kernel": str(m.kernel_),
            "lml": m.log_marginal_likelihood_value_, "rmse": rmse(mu, yt),
            "nlpd": nlpd(mu, sd, yt), "n_factorizations": m.search_["n_factorizations"],
            "noise_history": m.search_["noise_history"], "fit_time": m.fit_time_,
            "max_rank": m.hss_.get("max_rank"), "hss_memory_MB": m.hss_["memory_bytes"] / 2**20,
            "peak_rss_GB": rss_bytes("VmHWM") / 2**30, "load": la,
            "warnings": [str(x.message)[:300] for x in w]}
        print(f"full n={len(y)}: fit {t_fit:.1f} s, {m.kernel_}, RMSE {rmse(mu, yt):.4f}, "
              f"NLPD {nlpd(mu, sd, yt):.4f}, predict+std {t_pred:.1f} s", flush=True)
    except Exception as exc:
        out["full"]["hss_gp"] = {"error": f"{type(exc).__name__}: {exc}",
                                 "traceback": traceback.format_exc()[-2000:], "load": la}
        print(f"full: {type(exc).__name__}: {exc}", flush=True)
    return out


def run_gp_full_nystrom(args, X, y, Xt, yt, out, k):
    """All points, the sparse GP of rank k: width (unless --gp-h) and noise searched."""
    la = load()
    fixed = args.gp_h is not None
    m = HSSGaussianProcessRegressor(normalize_y=True, h=args.gp_h or 1.7,
                                    h_bounds="fixed" if fixed else (0.3, 10.0),
                                    approximation="nystrom", n_components=k, tol=args.gp_tol,
                                    random_state=0, verbose=1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t_fit, _ = timed(lambda: m.fit(X, y))
    t_pred, (mu, sd) = timed(lambda: m.predict(Xt, return_std=True))
    out["full"][f"nystrom_gp_k{k}"] = {
        "rank": k, "width_searched": not fixed, "tol": args.gp_tol, "fit_s": t_fit,
        "predict_s": t_pred, "kernel": str(m.kernel_), "h": m.h_, "beta": m.noise_ratio_,
        "lml_bound": m.log_marginal_likelihood_value_, "rmse": rmse(mu, yt),
        "nlpd": nlpd(mu, sd, yt), "n_widths": m.search_["n_compressions"],
        "n_factorizations": m.search_["n_factorizations"], "history": m.search_["history"],
        "fit_time": m.fit_time_, "residual_trace": m.hss_["residual_trace"],
        "peak_rss_GB": rss_bytes("VmHWM") / 2**30, "load": la,
        "warnings": [str(x.message)[:300] for x in w]}
    print(f"full n={len(y)} sparse GP k={k}: fit {t_fit:.1f} s ({m.search_['n_compressions']} "
          f"widths), {m.kernel_}, RMSE {rmse(mu, yt):.4f}, NLPD {nlpd(mu, sd, yt):.4f}, "
          f"predict+std {t_pred:.1f} s", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", choices=["krr", "gp"], required=True)
    p.add_argument("--dataset", default="kin40k",
                   choices=["kin40k", "synthetic3d", "protein", "pol", "california_housing",
                            "elevators", "bike"],
                   help="a shared regression set (features standardised on the training "
                        "split, and the target except kin40k's) or the 3-d control")
    p.add_argument("--n", type=int, default=20000, help="KRR training points")
    p.add_argument("--h", type=float, default=1.7)
    p.add_argument("--alpha", type=float, default=0.004)
    p.add_argument("--direct-alpha", type=float, nargs="*", default=[0.1, 1.0])
    p.add_argument("--rel-tol", type=float, default=1e-3)
    p.add_argument("--max-rank", type=int, default=500)
    p.add_argument("--path", action="store_true", help="also the 10-alpha exact path")
    p.add_argument("--skip-kernel-ridge", action="store_true")
    p.add_argument("--approximations", nargs="*", choices=["hss", "nystrom"],
                   default=["hss", "nystrom"],
                   help="KRR preconditioners: the HSS factor, and/or randomly pivoted Cholesky")
    p.add_argument("--nystroem-ks", type=int, nargs="*", default=[],
                   help="also scikit-learn's Nystroem(k) + Ridge(alpha) for these k")
    p.add_argument("--ranks", type=int, nargs="+", default=[2000, 4000],
                   help="ranks of the randomly pivoted Cholesky preconditioner")
    p.add_argument("--cg-tol", type=float, default=1e-10,
                   help="relative residual of the exact solver's CG (HSSKernelRidge's tol)")
    p.add_argument("--direct-ranks", type=int, nargs="*", default=[],
                   help="also solver='direct' on the randomly pivoted Cholesky of these ranks")
    p.add_argument("--gp-sub", type=int, default=3000)
    p.add_argument("--gp-rel-tol", type=float, default=1e-4)
    p.add_argument("--gp-sklearn", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--gp-sub-approximations", nargs="*", choices=["exact", "hss"],
                   default=["exact", "hss"], help="ours on the subsample, beside scikit-learn")
    p.add_argument("--gp-parts", nargs="+", choices=["sub", "full"], default=["sub", "full"])
    p.add_argument("--gp-h", type=float, default=None,
                   help="width of the full-data GP (default: the subsample's exact fit; "
                        "with nystrom: searched)")
    p.add_argument("--gp-full-approximation", choices=["hss", "nystrom"], default="hss")
    p.add_argument("--gp-ranks", type=int, nargs="+", default=[2000, 4000])
    p.add_argument("--gp-tol", type=float, default=1e-2)
    p.add_argument("--gp-blas-threads", type=int, default=1)
    p.add_argument("--tag", default="")
    args = p.parse_args()
    X, y, Xt, yt = (synthetic3d() if args.dataset == "synthetic3d"
                    else load_regression(args.dataset))
    threads = args.gp_blas_threads if args.part == "gp" else 1
    with threadpool_limits(threads, user_api="blas"):
        if args.part == "krr":
            res = run_krr(args, X, y, Xt, yt)
            name = f"regression_krr_{args.dataset}_n{args.n}{args.tag}"
        else:
            res = run_gp(args, X, y, Xt, yt)
            name = f"regression_gp_{args.dataset}{args.tag}"
    res["command"] = "python bench/regression.py " + " ".join(sys.argv[1:])
    print("wrote", write_result(name, {"dataset": args.dataset, **res}))


if __name__ == "__main__":
    main()
