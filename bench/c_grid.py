"""C-grid benchmark: dataset x backend x h grid x C grid, with LIBSVM as the reference.

    python bench/c_grid.py ijcnn1 --h 1 --C 1e-2:1e3:10 --backends hss libsvm
    python bench/c_grid.py magic04 --standardize --h 0.5 1 2 --n-train 5000
    python bench/c_grid.py gmm8_100000 --h 1     # synthetic gmm8(n) of ../shared/tools/gen_gmm.py
    python bench/c_grid.py seismic_bumps --standardize --h 3 --class-weight balanced
    python bench/c_grid.py ijcnn1 --h 1 --backends hss onedal libsvm   # a process per backend

Writes ``bench/results/<dataset>.json`` (per fit: phase times, test accuracy, peak extra RSS,
iterations, ranks) and, when matplotlib is installed, ``bench/results/<dataset>.png``
(accuracy over (h, C) per backend and time per backend).

Backends are plain callables in ``BACKENDS``; one takes ``(data, h, Cs, args)`` and returns
``{"setup": {...}, "fits": [{"C", "accuracy", "time", ...}, ...], "peak_rss": bytes}``.
Registered: hss, exact, nystrom (NystromSVC's backend) and sparse (SparseCholeskySVC's,
with sigma = h, a compactly supported kernel), these four through the path protocol; libsvm;
onedal (scikit-learn-intelex's ``sklearnex.svm.SVC``, the bench extra: oneDAL's multi-threaded
SVC, refitted per C as LIBSVM); fpc
(FPCClassifierCV: its grid is over the polynomial degree s, not (h, C), so it runs once, for
the first h, and reports its degree search; ``bench/fpc.py`` holds the full FPC-vs-SVC
comparison). Register another with ``@backend("name")``.

LIBSVM (scikit-learn's SVC) uses gamma = 1 / (2 h^2) and is refitted from scratch per C (it has
no warm start across C); our backends compress and factor once per h and sweep the C grid.

``--class-weight balanced`` weights each class by n / (2 n_class) (SVC's formula): LIBSVM gets
``class_weight="balanced"`` (oneDAL too), hss, exact, nystrom and sparse the same per-point
weights in their path; fpc is skipped (its degree search is not a C grid).

With more than one backend each runs in a fresh interpreter of its own, one after the other
(``--in-process`` runs them in this one): a library's thread pools, allocator state or
environment must not slow the next peer (oneDAL's a9a grid once took 204 s instead of 131 s
in a process that had run hsskern first). Every run records the load average before and
after it; the summary prints a per-C table (time, accuracy, support vectors) for every backend
and the ratio of each peer's grid time to hss's. ``bench/plot_c_grid.py`` draws the figure. Every fit records its test accuracy
and balanced accuracy (the figure that matters on imbalanced data).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import RESULTS, load_shared, measure, write_result  # noqa: E402

BACKENDS = {}


def backend(name):
    def deco(fn):
        BACKENDS[name] = fn
        return fn
    return deco


def _ours(approximation):
    def run(data, h, Cs, args):
        from hsskern.kernels import make_kernel
        from hsskern.options import HSSOptions
        from hsskern.solvers.hss_path import HSSBackend
        refine = False if args.no_refine else {"auto": "auto", "always": True}[args.refine]
        log = (lambda level, msg: print(f"[hss] {msg}", flush=True)
               if level <= args.verbose else None)
        backend = HSSBackend(
            make_kernel("gaussian", h=h), approximation=approximation, start=args.start,
            hss_options=HSSOptions(rel_tol=args.rel_tol, abs_tol=args.abs_tol,
                                   max_rank=args.max_rank, leaf_size=args.leaf_size,
                                   n_neighbors=args.n_neighbors, random_state=0,
                                   verbose=max(0, args.verbose - 1)),
            max_iter=args.max_iter, tol=args.tol, refine=refine, max_chunk=args.max_chunk,
            refine_tol=args.svm_tol, newton=not args.no_newton, block_reuse=not args.no_block_reuse,
            log=log if args.verbose else None)

        def per_fit(sol):
            ft, info, rf = sol.timings, sol.info, sol.info["refinement"]
            return {"admm_time": ft["admm"], "refactor_time": ft["refactor"],
                    "refine_time": ft["refine"],
                    "refine": None if rf is None else {
                        "rounds": rf[0].rounds, "ws_sizes": rf[0].ws_sizes,
                        "smo_iters": rf[0].smo_iters, "gap": float(rf[0].gap),
                        "newton_steps": rf[0].newton_steps,
                        "converged": rf[0].converged, "skipped": rf[0].skipped,
                        "timings": rf[0].timings, "kernel_entries": rf[0].kernel_entries,
                        # one exact decision-value pass at the solution: n x n_SV entries
                        "lower_bound_entries": int(sol.dual_coef.shape[0]
                                                   * np.count_nonzero(sol.dual_coef[:, 0]))},
                    "beta": float(info["beta"]),
                    "n_support": int(np.count_nonzero(sol.dual_coef[:, 0]))}
        return _protocol_run(backend, data, Cs, per_fit, args.class_weight)
    return run


def _balanced_accuracy(y, pred):
    from sklearn.metrics import balanced_accuracy_score
    return float(balanced_accuracy_score(y, pred))


def _print_fits(name, fits):
    for f in fits:
        print(f"    {name} C={f['C']:.3g}: {f['time']:.2f} s, accuracy {100 * f['accuracy']:.2f}%, "
              f"balanced {100 * f['balanced_accuracy']:.2f}%", flush=True)


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return o


@backend("hss")
def _hss(data, h, Cs, args):
    return _ours("hss")(data, h, Cs, args)


@backend("exact")
def _exact(data, h, Cs, args):
    n = len(data[1])
    if n > args.exact_max_n:
        return {"skipped": f"n={n} > --exact-max-n={args.exact_max_n} (dense n x n)"}
    return _ours("exact")(data, h, Cs, args)


@backend("libsvm")
def _libsvm(data, h, Cs, args):
    from sklearn.svm import SVC
    return _svc_grid("libsvm", SVC, data, h, Cs, args, cache_size=args.libsvm_cache)


def _svc_grid(name, SVC, data, h, Cs, args, **extra):
    """An SVC class refitted from scratch per C (LIBSVM, oneDAL): no warm start across C."""
    Xtr, ytr, Xte, yte = data
    fits, peak_all = [], 0
    for C in Cs:
        svc = SVC(C=C, gamma=1.0 / (2 * h * h), class_weight=args.class_weight,
                  tol=args.svm_tol, **extra)
        t, peak, svc = measure(lambda: svc.fit(Xtr, ytr), repeat=1)
        pred = svc.predict(Xte)
        fits.append({"C": float(C), "accuracy": float(np.mean(pred == yte)), "time": t,
                     "balanced_accuracy": _balanced_accuracy(yte, pred),
                     "n_support": int(np.sum(svc.n_support_))})
        peak_all = max(peak_all, peak)
        _print_fits(name, fits[-1:])
    return {"setup": {"total": 0.0}, "fits": fits, "peak_rss": int(peak_all)}


@backend("onedal")
def _onedal(data, h, Cs, args):
    """oneDAL's SVC (scikit-learn-intelex, the bench extra), refitted per C as LIBSVM."""
    try:
        import sklearnex
        from sklearnex.svm import SVC
    except ImportError:
        return {"skipped": "scikit-learn-intelex is not installed (pip install hsskern[bench])"}
    from threadpoolctl import threadpool_info
    r = _svc_grid("onedal", SVC, data, h, Cs, args)
    r["version"] = getattr(sklearnex, "__version__", None)
    r["threadpools"] = [{k: p.get(k) for k in ("prefix", "user_api", "num_threads")}
                        for p in threadpool_info()]
    return r


def _protocol_run(backend, data, Cs, per_fit, class_weight=None):
    """Any path-protocol backend: prepare once, the whole C path, one decision call for all C;
    ``per_fit(solution)`` adds backend-specific fields to each fit's record. ``class_weight``
    ("balanced"): SVC's per-point weights, passed to the path (backends that take weights)."""
    from hsskern.estimators.base import encode_labels, labels_from_decision, point_weights
    Xtr, ytr, Xte, yte = data
    classes, Y = encode_labels(ytr)
    weights = None if class_weight is None else point_weights(ytr, classes, class_weight)

    def fit_path():
        prepared = backend.prepare(Xtr, Y)
        if weights is None:
            return prepared, backend.path(prepared, Y, Cs)
        return prepared, backend.path(prepared, Y, Cs, weights=weights)
    t_fit, peak, (prepared, sols) = measure(fit_path, repeat=1)
    t0 = time.perf_counter()
    dec = backend.model(prepared, sols).decision(Xte)
    t_pred = time.perf_counter() - t0
    preds = [labels_from_decision(classes, dec[j]) for j in range(len(sols))]
    fits = [{"C": float(sol.C), "accuracy": float(np.mean(preds[j] == yte)),
             "balanced_accuracy": _balanced_accuracy(yte, preds[j]),
             "time": float(sum(sol.timings.values())), "n_iter": int(np.max(sol.n_iter)),
             "converged": bool(sol.converged.all()), **per_fit(sol)}
            for j, sol in enumerate(sols)]
    setup = {k: float(v) for k, v in prepared.timings.items()}
    setup["total"] = float(sum(setup.values()))
    stats = {k: v for k, v in prepared.stats.items()
             if isinstance(v, (int, float, str, list, dict))}
    return {"setup": setup, "fits": fits, "peak_rss": int(peak), "fit_path_time": t_fit,
            "predict_all_C_time": t_pred, "stats": _jsonable(stats)}


@backend("nystrom")
def _nystrom(data, h, Cs, args):
    """NystromSVC's backend: k-means landmarks and features once, the warm-started semismooth
    Newton path over C."""
    from hsskern.kernels import make_kernel
    from hsskern.solvers.nystrom_path import NystromBackend
    backend = NystromBackend(make_kernel("gaussian", h=h), n_components=args.n_components,
                             random_state=0)
    return _protocol_run(backend, data, Cs, lambda sol: {}, args.class_weight)


@backend("sparse")
def _sparse(data, h, Cs, args):
    """SparseCholeskySVC's backend with sigma = h: one sparse Gram and one Cholesky factor for
    all C."""
    from hsskern.estimators.sparse_cholesky import default_l
    from hsskern.solvers.sparse_path import SparseCholeskyBackend
    from hsskern.sparse.gram import compact_kernel
    d = data[0].shape[1]
    backend = SparseCholeskyBackend(compact_kernel(h, default_l(d), d), random_state=0)
    r = _protocol_run(backend, data, Cs, lambda sol: {
        "n_support": int(np.count_nonzero(np.any(sol.dual_coef != 0, axis=1)))},
        args.class_weight)
    r["note"] = ("compact Gaussian kernel (support 3 sigma), not the Gaussian the other "
                 "backends use")
    return r


@backend("fpc")
def _fpc(data, h, Cs, args):
    """FPCClassifierCV: its own search over the degree s (features per s computed once)."""
    from hsskern import FPCClassifierCV
    if args._fpc_done:
        return {"skipped": "FPC has no kernel width or C: its degree search ran for the first h"}
    args._fpc_done = True
    Xtr, ytr, Xte, yte = data
    est = FPCClassifierCV(random_state=0)
    t_fit, peak, _ = measure(lambda: est.fit(Xtr, ytr), repeat=1)
    acc = float(est.score(Xte, yte))
    cv = est.cv_results_
    search = [{"degree": int(s), "n_centers": int(n), "cv_accuracy": float(a)}
              for s, n, a in zip(cv["degree"], cv["n_centers"], cv["mean_test_score"])]
    print(f"    fpc: {t_fit:.2f} s, degree {est.degree_} chosen, accuracy {100 * acc:.2f}%",
          flush=True)
    return {"search": search, "degree": int(est.degree_), "accuracy": acc, "time": t_fit,
            "peak_rss": int(peak)}


def _load(name):
    m = re.fullmatch(r"gmm8_(\d+)", name)
    if m:  # the synthetic set of ../shared/tools/gen_gmm.py: gmm8(n), 3% label noise
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared" / "tools"))
        from gen_gmm import gmm8
        return gmm8(int(m.group(1)))
    d = load_shared(name)
    if d is None:
        from hsskern.datasets import load
        d = load(name)
    return d


def _grid(spec):
    if len(spec) == 1 and ":" in spec[0]:
        lo, hi, k = spec[0].split(":")
        return np.logspace(np.log10(float(lo)), np.log10(float(hi)), int(k)).tolist()
    return [float(s) for s in spec]


def plot(dataset, payload, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: skipping the plot")
        return None
    names = [b for b in payload["backends"] if any(
        "fits" in r for r in payload["runs"][b].values())]
    hs, Cs = payload["h"], payload["C"]
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(4.2 * (len(names) + 1), 3.6))
    axes = np.atleast_1d(axes)
    for ax, b in zip(axes, names):
        A = np.full((len(hs), len(Cs)), np.nan)
        for i, h in enumerate(hs):
            r = payload["runs"][b].get(str(h), {})
            for f in r.get("fits", []):
                A[i, Cs.index(f["C"])] = 100 * f["accuracy"]
        im = ax.imshow(A, aspect="auto", origin="lower", cmap="viridis")
        ax.set_xticks(range(len(Cs)), [f"{c:.2g}" for c in Cs], rotation=60, fontsize=7)
        ax.set_yticks(range(len(hs)), [f"{h:g}" for h in hs])
        ax.set_xlabel("C")
        ax.set_ylabel("h")
        ax.set_title(f"{b}: test accuracy [%]")
        fig.colorbar(im, ax=ax)
    ax = axes[-1]
    width = 0.8 / max(1, len(names))
    for k, b in enumerate(names):
        tot = [payload["runs"][b].get(str(h), {}).get("grid_time", np.nan) for h in hs]
        ax.bar(np.arange(len(hs)) + k * width, tot, width, label=b)
    ax.set_xticks(np.arange(len(hs)) + 0.4 - width / 2, [f"h={h:g}" for h in hs])
    ax.set_ylabel("whole C grid [s]")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title(dataset)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_backends(args, data, hs, Cs):
    """Every backend of ``args.backends`` for every h, in this process."""
    runs = {b: {} for b in args.backends}
    for b in args.backends:
        for h in hs:
            print(f"  {b} h={h:g} ...", flush=True)
            load_before = os.getloadavg()
            t0 = time.perf_counter()
            if args.class_weight and b == "fpc":
                r = {"skipped": "fpc's degree search is not a C grid"}
            else:
                r = BACKENDS[b](data, h, Cs, args)
            r["wall_time_with_scoring"] = time.perf_counter() - t0
            r["loadavg_before"], r["loadavg_after"] = load_before, os.getloadavg()
            if "fits" in r:  # training only: setup once per h + every C's fit
                r["grid_time"] = r["setup"]["total"] + sum(f["time"] for f in r["fits"])
            runs[b][str(h)] = r
            if "skipped" in r:
                print(f"    skipped: {r['skipped']}")
                continue
            if "search" in r:  # a search over another parameter (FPC's degree)
                r["grid_time"] = r["time"]
                continue
            if args.class_weight and b not in ("libsvm", "onedal"):
                _print_fits(b, r["fits"])
            metric = "balanced_accuracy" if args.class_weight else "accuracy"
            best = max(r["fits"], key=lambda f: f[metric])
            print(f"    whole grid {r['grid_time']:.2f} s (setup {r['setup']['total']:.2f} s), "
                  f"best {metric.replace('_', ' ')} {100 * best[metric]:.2f}% "
                  f"at C={best['C']:.3g}, "
                  f"peak RSS +{r['peak_rss'] / 2**20:.0f} MB", flush=True)
    return runs


def _run_child(argv, b):
    """Backend ``b`` alone in a fresh interpreter (same arguments); its runs, with the load
    average around it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--backends" not in argv:
        argv.append("--backends")
    i = argv.index("--backends")
    j = i + 1
    while j < len(argv) and not argv[j].startswith("--"):
        j += 1
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "runs.json"
        cmd = [sys.executable, str(Path(__file__).resolve())] + argv[:i] + [
            "--backends", b] + argv[j:] + ["--child-out", str(out)]
        print(f"  [{b}: fresh process, load {os.getloadavg()[0]:.2f}]", flush=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        runs = json.loads(out.read_text())[b]
    for r in runs.values():
        r["process_wall_time"] = time.perf_counter() - t0
    return runs


def _summary(runs, hs, backends):
    """Per h: a per-C table (time, accuracy, support vectors) of every backend with fits,
    and each one's grid time over hss's (> 1: hss faster). Returns the ratios."""
    ratios = {}
    for h in hs:
        key = str(h)
        with_fits = [b for b in backends if "fits" in runs[b].get(key, {})]
        if not with_fits:
            continue
        print(f"\nh={h:g}: per C (time s / accuracy % / support vectors)")
        print("  C         " + "".join(f"{b:>26}" for b in with_fits))
        for k, f0 in enumerate(runs[with_fits[0]][key]["fits"]):
            cells = []
            for b in with_fits:
                f = runs[b][key]["fits"][k]
                nsv = f.get("n_support", -1)
                cells.append(f"{f['time']:8.2f} {100 * f['accuracy']:6.2f} {nsv:8d}  ")
            print(f"  {f0['C']:<10.3g}" + "".join(cells))
        grid = {b: runs[b][key]["grid_time"] for b in with_fits}
        print("  grid      " + "".join(f"{grid[b]:24.2f}  " for b in with_fits))
        print("  load      " + "".join(
            f"{runs[b][key]['loadavg_before'][0]:11.2f} -> {runs[b][key]['loadavg_after'][0]:5.2f}"
            "       " for b in with_fits))
        if "hss" in grid:
            ratios[key] = {b: grid[b] / grid["hss"] for b in with_fits if b != "hss"}
            print("  " + ", ".join(f"{b}/hss = {v:.2f}x" for b, v in ratios[key].items()))
    return ratios


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset")
    p.add_argument("--backends", nargs="+", default=["hss", "libsvm"],
                   help=f"from {sorted(BACKENDS)}")
    p.add_argument("--h", nargs="+", default=["1"])
    p.add_argument("--C", nargs="+", default=["1e-2:1e3:10"],
                   help="values, or lo:hi:k for k log-spaced values")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--n-test", type=int, default=None)
    p.add_argument("--standardize", action="store_true",
                   help="z-score features with the training statistics")
    p.add_argument("--max-iter", type=int, default=100)
    p.add_argument("--tol", type=float, default=1e-2)
    p.add_argument("--svm-tol", type=float, default=1e-3,
                   help="the KKT gap every exact solver stops at: LIBSVM's and oneDAL's tol, "
                        "HSSSVC's refine_tol (--tol is the ADMM's)")
    p.add_argument("--rel-tol", type=float, default=1e-3)
    p.add_argument("--abs-tol", type=float, default=1e-5)
    p.add_argument("--max-rank", type=int, default=500)
    p.add_argument("--leaf-size", type=int, default=128)
    p.add_argument("--n-neighbors", type=int, default=64)
    p.add_argument("--no-refine", action="store_true",
                   help="HSSSVC without the exact-kernel refinement (ADMM only)")
    p.add_argument("--refine", choices=["auto", "always"], default="auto",
                   help="HSSSVC's refine: 'auto' (its default) or always (refine=True)")
    p.add_argument("--no-newton", action="store_true",
                   help="the decomposition without Newton steps on its free set (SMO only)")
    p.add_argument("--no-block-reuse", action="store_true",
                   help="the decomposition computes every working set's block afresh")
    p.add_argument("--max-chunk", type=int, default=16000)
    p.add_argument("--start", choices=["auto", "admm", "decomposition"], default="auto",
                   help="how hss/exact reach the first C (HSSSVC's start): 'auto' (its "
                        "default), 'admm' (approximation, factor, ADMM) or 'decomposition' "
                        "(the exact decomposition from zero)")
    p.add_argument("--verbose", type=int, default=0, help="HSSSVC's verbose (2: per round)")
    p.add_argument("--exact-max-n", type=int, default=8000)
    p.add_argument("--libsvm-cache", type=float, default=1000.0)
    p.add_argument("--n-components", type=int, default=1000, help="Nystrom landmarks")
    p.add_argument("--class-weight", choices=["balanced"], default=None,
                   help="SVC's class_weight (every backend but fpc)")
    p.add_argument("--tag", default="", help="suffix of the result file name")
    p.add_argument("--in-process", action="store_true",
                   help="run every backend in this process (default: a fresh one each)")
    p.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args._fpc_done = False
    unknown = set(args.backends) - set(BACKENDS)
    if unknown:
        p.error(f"unknown backends {sorted(unknown)}; known: {sorted(BACKENDS)}")
    Xtr, ytr, Xte, yte = _load(args.dataset)
    rng = np.random.default_rng(0)
    if args.n_train and args.n_train < len(ytr):
        i = rng.choice(len(ytr), args.n_train, replace=False)
        Xtr, ytr = Xtr[i], ytr[i]
    if args.n_test and args.n_test < len(yte):
        i = rng.choice(len(yte), args.n_test, replace=False)
        Xte, yte = Xte[i], yte[i]
    if args.standardize:
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    data = (Xtr, ytr, Xte, yte)
    hs, Cs = _grid(args.h), _grid(args.C)
    print(f"{args.dataset}: n_train={len(ytr)} n_test={len(yte)} d={Xtr.shape[1]}; "
          f"h={hs}; C={[f'{c:.3g}' for c in Cs]}", flush=True)
    if args.child_out:  # one backend of a parent's run: hand the runs back, write nothing else
        runs = run_backends(args, data, hs, Cs)
        Path(args.child_out).write_text(json.dumps(_jsonable(runs)))
        return 0
    if len(args.backends) > 1 and not args.in_process:
        runs = {b: _run_child(argv, b) for b in args.backends}
    else:
        runs = run_backends(args, data, hs, Cs)
    ratios = _summary(runs, hs, args.backends)
    payload = {"dataset": args.dataset, "n_train": len(ytr), "n_test": len(yte),
               "n_features": Xtr.shape[1], "standardize": args.standardize,
               "backends": args.backends, "h": hs, "C": Cs, "options": vars(args),
               "runs": _jsonable(runs), "ratios_to_hss": ratios,
               "process_per_backend": len(args.backends) > 1 and not args.in_process,
               "notes": "grid_time: ours = kernel+compress+factor once per h + ADMM for every C "
                        "(time to score the test set excluded); libsvm = sum of its fits. "
                        "peak_rss: extra resident memory during the fit(s)."}
    name = args.dataset + (f"_{args.tag}" if args.tag else "")
    path = write_result(name, payload)
    print(f"wrote {path}")
    png = plot(args.dataset, payload, RESULTS / f"{name}.png")
    if png:
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
