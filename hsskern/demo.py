"""The ``python -m hsskern demo`` run: a whole C grid on the bundled ijcnn1 for one compression.

ijcnn1 ships already scaled to [-1, 1] by LIBSVM and the HSS/ADMM paper uses it as is (its
reference driver reads the features unchanged), so no further standardization is applied.
"""
import sys
import time

import numpy as np

from .utils._memory import format_bytes


def _say(msg, end="\n"):
    print(msg, end=end, flush=True)


def run_demo(Cs=None, h=1.0, n_train=None, n_test=20000, approximation="hss", random_state=0,
             out=None):
    """Choose C for the HSS SVM on ijcnn1 with HSSSVCCV: ONE compression and factorization for
    the whole grid, C picked on a held-out 20%, then a refit on all training points.

    Prints the one-off compression/factorization times and memory, per C the solve time
    (ADMM + exact refinement) and held-out accuracy, the chosen C and its test accuracy.

    Parameters
    ----------
    Cs : sequence of float, default ``np.logspace(-2, 3, 10)``
    h : float, default 1.0
        Gaussian width, exp(-|x - y|^2 / (2 h^2)).
    n_train : int or None
        Training subsample (None: all 49,990 points).
    n_test : int or None, default 20000
        Test subsample (None: all 91,701 points).
    approximation : {"hss", "exact"}, default "hss"
        "exact" factors the dense kernel matrix: for small ``n_train`` only.
    random_state : int
    out : file-like or None

    Returns
    -------
    int
        0 on success (a process exit status).
    """
    from .datasets import load
    from .estimators.hss_svc import HSSSVCCV

    if out is not None:
        sys.stdout = out  # pragma: no cover
    Cs = np.logspace(-2, 3, 10) if Cs is None else np.asarray(Cs, dtype=float)
    Xtr, ytr, Xte, yte = load("ijcnn1")
    rng = np.random.default_rng(random_state)
    if n_train is not None and n_train < len(ytr):
        i = rng.choice(len(ytr), n_train, replace=False)
        Xtr, ytr = Xtr[i], ytr[i]
    if n_test is not None and n_test < len(yte):
        i = rng.choice(len(yte), n_test, replace=False)
        Xte, yte = Xte[i], yte[i]
    _say(f"hsskern demo: ijcnn1, {len(ytr)} training / {len(yte)} test points, "
         f"{Xtr.shape[1]} features, gaussian h={h:g}, approximation={approximation!r}")
    _say(f"C grid: {', '.join(f'{c:g}' for c in Cs)}; C chosen on a held-out 20%")
    cv = HSSSVCCV(h=h, Cs=Cs, cv=0.2, approximation=approximation, random_state=random_state)
    t0 = time.perf_counter()
    cv.fit(Xtr, ytr)
    t_fit = time.perf_counter() - t0
    res = cv.cv_results_
    _say(f"search: compression + factorization once, {res['mean_setup_time'][0]:.2f} s; then")
    _say(f"{'C':>8s} {'iters':>6s} {'solve [s]':>10s} {'held-out acc':>13s}")
    for C, it, t, acc in zip(res["param_C"], res["mean_n_iter"], res["mean_solve_time"],
                             res["mean_test_score"]):
        mark = "  <- chosen" if C == cv.C_ else ""
        _say(f"{C:8.3g} {int(it):6d} {t:10.2f} {100 * acc:12.2f}%{mark}")
    best = cv.best_estimator_
    ft, st = best.fit_time_, best.hss_
    _say(f"refit on all {len(ytr)} points at C={cv.C_:g}: "
         + ", ".join(f"{p} {ft[p]:.2f} s" for p in ("compress", "factor", "admm", "refine")
                     if p in ft))
    mem = st.get("memory_bytes", 0)
    fmem = st.get("factor_memory_bytes", 0)
    _say(f"  memory {format_bytes(mem)} (approximation), {format_bytes(fmem)} (factor)"
         + (f", max rank {st['max_rank']}" if "max_rank" in st else "")
         + f"; {len(best.support_)} support vectors")
    t0 = time.perf_counter()
    acc = float(cv.score(Xte, yte))
    _say(f"test accuracy {100 * acc:.2f}% (scored in {time.perf_counter() - t0:.2f} s); "
         f"total {t_fit:.2f} s")
    return 0
