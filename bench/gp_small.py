"""HSSGaussianProcessRegressor against scikit-learn's GaussianProcessRegressor on small n.

Each fit runs in a fresh process (subprocess): the time of fit (hyperparameter search
included), the peak resident memory of that process, and the fitted model's predictions
on held-out points. Both maximise the same likelihood, of ConstantKernel(s^2) * RBF(h) +
WhiteKernel(sigma^2), from the same start (s^2 = 1, h = 1, sigma^2 = 0.01) and within
equivalent bounds; the rows compare the predictive means (max abs difference) and the
log marginal likelihoods reached. Routes: "auto" (the default), "exact" (the dense route
forced) and "hss" (compression forced), to find where compression starts to pay.

    python bench/gp_small.py                      # n = 1000, 2000, 5000; writes the json
    python bench/gp_small.py --n 1000 2000 --routes auto hss --threads 1
    # the crossover rows of issue 59: n = 2,000 / 4,000 / 8,000 / 20,000 at d = 3, scikit-learn
    # and the forced dense route only where they run (up to --sklearn-max-n, --exact-max-n)
    python bench/gp_small.py --preset crossover --threads 2 --out bench/results/gp_crossover.json
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "gp_small.json"

CHILD = r"""
import json, resource, sys, time
import numpy as np
n, d, route, seed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = np.random.default_rng(seed)
X = rng.uniform(-3, 3, size=(n, d))
f = lambda Z: np.sin(Z[:, 0]) * np.cos(Z[:, 1]) + 0.5 * np.sin(Z.sum(1))
y = f(X) + 0.1 * rng.normal(size=n)
Xt = rng.uniform(-3, 3, size=(1000, d))
t0 = time.perf_counter()
if route == "sklearn":
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    kern = (ConstantKernel(1.0, (1e-5, 1e5)) * RBF(1.0, (1e-3, 1e3))
            + WhiteKernel(1e-2, (1e-8, 1e3)))
    m = GaussianProcessRegressor(kern, alpha=0.0, random_state=0).fit(X, y)
    lml = float(m.log_marginal_likelihood_value_)
    theta = np.exp(m.kernel_.theta).tolist()
    extra = {}
else:
    from hsskern import GPOptions, HSSGaussianProcessRegressor
    m = HSSGaussianProcessRegressor(h=1.0, noise_ratio=1e-2,
                                    options=GPOptions(approximation=route),
                                    random_state=0).fit(X, y)
    lml = float(m.log_marginal_likelihood_value_)
    theta = [m.amplitude_, m.h_, m.noise_level_]
    extra = {"approximation": m.hss_.get("approximation"),
             "n_compressions": m.search_["n_compressions"],
             "n_factorizations": m.search_["n_factorizations"]}
fit = time.perf_counter() - t0
t0 = time.perf_counter()
mu, sd = m.predict(Xt, return_std=True)
pred = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
np.save(sys.argv[5], np.column_stack([mu, sd]))
print(json.dumps({"fit_s": fit, "predict_s": pred, "lml": lml, "theta": theta,
                  "peak_bytes": peak, "test_rmse": float(np.sqrt(np.mean((mu - f(Xt)) ** 2))),
                  **extra}))
"""


#: ``--preset crossover``: where "auto" should switch from the dense route to the HSS one
CROSSOVER = {"n": [2000, 4000, 8000, 20000], "routes": ["auto", "exact", "hss"]}


def run(n, d, route, seed, tmp, threads=None, timeout=None):
    out = tmp / f"pred_{route}_{n}.npy"
    env = dict(os.environ)
    if threads:  # both sides alike: BLAS threads (their spinning dominates on a busy machine)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(n), str(d), route, str(seed),
                               str(out)], capture_output=True, text=True, cwd=HERE.parent,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout} s", "fit_s": None}, None
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}, None
    return json.loads(proc.stdout.strip().splitlines()[-1]), np.load(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 2000, 5000])
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--routes", nargs="+", default=["auto", "exact", "hss"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None,
                    help="BLAS/OpenMP threads of every child (default: the libraries' own)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--preset", choices=["crossover"], default=None,
                    help="crossover: n = 2000 4000 8000 20000, routes auto exact hss")
    ap.add_argument("--sklearn-max-n", type=int, default=8000,
                    help="scikit-learn's fit only up to this n (its n^3 search, 4 n^2 floats)")
    ap.add_argument("--exact-max-n", type=int, default=8000,
                    help="the forced dense route only up to this n")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per child fit")
    args = ap.parse_args()
    if args.preset == "crossover":
        args.n, args.routes = CROSSOVER["n"], CROSSOVER["routes"]
    import tempfile
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for n in args.n:
            ref, P_ref = ({"skipped": f"n > --sklearn-max-n={args.sklearn_max_n}"}, None) \
                if n > args.sklearn_max_n else run(n, args.d, "sklearn", args.seed, tmp,
                                                   args.threads, args.timeout)
            row = {"n": n, "d": args.d, "threads": args.threads,
                   "load_average": os.getloadavg()[0], "sklearn": ref}
            for route in args.routes:
                if route == "exact" and n > args.exact_max_n:
                    row[route] = {"skipped": f"n > --exact-max-n={args.exact_max_n}"}
                    continue
                r, P = run(n, args.d, route, args.seed, tmp, args.threads, args.timeout)
                if P is not None and P_ref is not None and r.get("fit_s"):
                    r["mean_max_abs_diff"] = float(np.max(np.abs(P[:, 0] - P_ref[:, 0])))
                    r["std_max_abs_diff"] = float(np.max(np.abs(P[:, 1] - P_ref[:, 1])))
                    r["lml_diff"] = r["lml"] - ref["lml"]
                    r["speedup_vs_sklearn"] = ref["fit_s"] / r["fit_s"]
                row[route] = r
                print(f"n={n} {route}: " + json.dumps(r), flush=True)
            print(f"n={n} sklearn: " + json.dumps(ref), flush=True)
            rows.append(row)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
