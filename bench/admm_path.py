"""ADMM along a C path: total iterations to an optimality gap of 1e-2 for three beta policies.

    python bench/admm_path.py

On the exact kernel (dense Cholesky, n = 2000 subsets of ijcnn1 and standardized magic04, h = 1,
C = logspace(-2, 3, 10), relaxation 1.6, warm starts, cap 1000 iterations per C):

* ``balanced``: start at default_beta(n) and rebalance from the residuals (HSSSVC's default;
  the new beta carries over to the next C);
* ``fixed``: the paper's single beta for the whole path (100, its smallest value);
* ``c/C``: a new factor per C with beta = c / C (c = 1, 3).

Writes ``bench/results/admm_path.json``.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import load_shared, write_result  # noqa: E402
from hsskern import kernel_operator  # noqa: E402
from hsskern.factors import DenseCholeskyFactor  # noqa: E402
from hsskern.solvers.admm import default_beta, svm_dual_admm, svm_dual_admm_path  # noqa: E402

KW = dict(max_iter=1000, kkt_tol=1e-2, relaxation=1.6)


def main():
    rng = np.random.default_rng(0)
    Cs = np.logspace(-2, 3, 10)
    out = []
    for name, standardize in (("ijcnn1", False), ("magic04", True)):
        d = load_shared(name)
        if d is None:
            continue
        i = rng.choice(len(d[1]), 2000, replace=False)
        X, y = d[0][i], d[1][i]
        if standardize:
            X = (X - X.mean(0)) / X.std(0)
        K = kernel_operator(X, "gaussian", h=1.0).to_dense()
        rows = {}
        n_fac = []
        res = svm_dual_admm_path(DenseCholeskyFactor(K, default_beta(len(y))), K, y, Cs,
                                 refactor=lambda b: n_fac.append(b) or DenseCholeskyFactor(K, b),
                                 **KW)
        rows["balanced"] = {"iters": [r.n_iter for r in res], "factorizations": 1 + len(n_fac),
                            "beta": [r.beta for r in res]}
        res = svm_dual_admm_path(DenseCholeskyFactor(K, 100.0), K, y, Cs, **KW)
        rows["fixed beta=100"] = {"iters": [r.n_iter for r in res], "factorizations": 1}
        for c in (1.0, 3.0):
            its, st = [], None
            for C in Cs:
                r = svm_dual_admm(DenseCholeskyFactor(K, c / C), K, y, C, warm_start=st, **KW)
                st = r.state
                its.append(r.n_iter)
            rows[f"beta={c:g}/C"] = {"iters": its, "factorizations": len(Cs)}
        for k, v in rows.items():
            v["total_iters"] = int(sum(v["iters"]))
            print(f"{name:8s} {k:16s} total {v['total_iters']:5d} iterations, "
                  f"{v['factorizations']:2d} factorizations: {v['iters']}", flush=True)
        out.append({"dataset": name, "n": 2000, "h": 1.0, "C": Cs.tolist(), "policies": rows})
    print(write_result("admm_path", {"settings": {k: v for k, v in KW.items()}, "runs": out}))


if __name__ == "__main__":
    main()
