"""A/B of the exact decomposition: the same fits on two checkouts, iterates compared bit for bit.

    python bench/decomposition_ab.py run --repo /work/main --tag ref
    python bench/decomposition_ab.py run --tag new                 # this checkout
    python bench/decomposition_ab.py compare ref new
    python bench/decomposition_ab.py run --tag study --option small_max_ws=2000

``run`` fits, on a stratified subsample of ijcnn1, a9a and magic04 (``--n`` points, X
standardized, h = 1 as in bench/c_grid.py), through the estimator and its options only:

* ``det``: ``HSSSVC(options=HSSSVCOptions(start="decomposition", engine="block",
  decomposition=DecompositionOptions(smo_before_newton=0, ...))).fit_path``, the block
  decomposition's C path (each C from the previous solution scaled), and one ``fit`` at
  C = 10 with shrinking forced on (by default only from 10^5 points), both with the Newton
  step's SMO budget at 0: the run is then a function of the data alone, and two checkouts
  must agree to the last bit;
* ``path``: ``HSSSVC(options=HSSSVCOptions(start="decomposition", solve_exact=True)).fit_path`` as
  users run it (the engine the plan chooses), for the times.

It writes ``bench/results/decomposition_ab_<tag>.json`` (rounds, SMO steps, Newton steps,
times per fit) and ``.npz`` (alpha, decision values). ``compare`` reports, per fit, whether
alpha and the decision values are equal to the last bit (else the largest difference),
whether the iteration counts agree, and the times.

``--option name=value`` sets a field of ``DecompositionOptions`` for the ``det`` runs, as
``options__decomposition__<name>`` would. Both checkouts need the options tree (the
estimator's ``decomposition`` group and ``engine``).
"""
import argparse
import ast
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
SETS = ("ijcnn1", "a9a", "magic04")


def _subsample(X, y, n, seed=0):
    rng = np.random.default_rng(seed)
    if X.shape[0] <= n:
        return X, y
    # stratified: each class keeps its share
    rows = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        k = max(1, int(round(n * idx.size / y.size)))
        rows.append(rng.choice(idx, k, replace=False))
    rows = np.sort(np.concatenate(rows))
    return X[rows], y[rows]


def _load(name, n):
    path = HERE.parent / "shared" / "datasets" / f"{name}.npz"
    if not path.exists():
        raise SystemExit(f"{path} not found")
    data = np.load(path, allow_pickle=False)
    X, y = data["X_train"], data["y_train"]
    if hasattr(X, "toarray"):
        X = X.toarray()
    X, y = _subsample(np.asarray(X, dtype=np.float64), np.asarray(y), n)
    sd = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return X, np.where(y == np.unique(y)[-1], 1.0, -1.0)


def _options(pairs, deterministic):
    """The ``det`` runs' HSSSVCOptions: the block decomposition from zero, its options'
    ``pairs`` (name=value) and, ``deterministic``, no measured time in Newton's budget."""
    from hsskern import HSSSVCOptions
    if "decomposition" not in HSSSVCOptions.field_names():
        raise SystemExit("this checkout's estimator options do not reach the decomposition")
    from hsskern.options import DecompositionOptions
    fields = {"smo_before_newton": 0.0} if deterministic else {}
    for pair in pairs:
        name, value = pair.split("=", 1)
        fields[name] = ast.literal_eval(value)
    return HSSSVCOptions(start="decomposition", solve_exact=True, engine="block",
                         decomposition=DecompositionOptions(**fields))


def _record(summary, arrays, key, rr, seconds, decision=None):
    summary["fits"][key] = {"rounds": rr.rounds, "smo_iters": rr.smo_iters,
                            "ws_sizes": rr.ws_sizes, "newton_steps": rr.newton_steps,
                            "syncs": rr.syncs, "time": seconds, "gap": rr.gap}
    arrays[key + "/alpha"] = rr.alpha
    arrays[key + "/decision"] = rr.decision if decision is None else decision


def _fits(est, X, y, Cs):
    """(C, the exact solution, seconds, decision values) of ``est``'s path over ``Cs``."""
    out = []
    for C, m in zip(sorted(Cs), est.fit_path(X, y, Cs)):
        [rr] = m.admm_["exact"]
        out.append((C, rr, rr.time, m.decision_function(X)))
    return out


def run(args):
    sys.path.insert(0, str(Path(args.repo).resolve()))  # its hsskern
    import hsskern
    from hsskern import HSSSVC, HSSSVCOptions
    det = _options(args.option, deterministic=True)
    summary = {"repo": str(Path(hsskern.__file__).resolve().parents[1]), "n": args.n,
               "Cs": args.C, "options": args.option, "fits": {}}
    arrays = {}
    for name in args.sets:
        X, y = _load(name, args.n)
        if "det" in args.modes:
            t0 = time.perf_counter()
            for C, rr, seconds, f in _fits(HSSSVC(options=det, h=1.0), X, y, args.C):
                _record(summary, arrays, f"{name}/det/C={C:g}", rr, seconds, f)
            summary["fits"][f"{name}/det"] = {"time": time.perf_counter() - t0}
            # shrinking at this n (by default only from 10^5 points on)
            shrink = HSSSVC(C=10.0, h=1.0, options=det).set_params(
                options__decomposition__shrinking=True).fit(X, y)
            [rr] = shrink.admm_["exact"]
            _record(summary, arrays, f"{name}/shrink/C=10", rr, rr.time,
                    shrink.decision_function(X))
        if "path" in args.modes:
            # the estimator as users run it (the plan's engine)
            t0 = time.perf_counter()
            est = HSSSVC(options=HSSSVCOptions(start="decomposition", solve_exact=True), h=1.0)
            fits = _fits(est, X, y, args.C)
            t_path = time.perf_counter() - t0
            for C, rr, seconds, f in fits:
                _record(summary, arrays, f"{name}/path/C={C:g}", rr, seconds, f)
            summary["fits"][f"{name}/path"] = {"time": t_path}
        print(f"{name} done", flush=True)
    out = HERE / "bench" / "results" / f"decomposition_ab_{args.tag}"
    out.parent.mkdir(exist_ok=True)
    np.savez(str(out) + ".npz", **arrays)
    Path(str(out) + ".json").write_text(json.dumps(summary, indent=1))
    print(f"wrote {out}.json/.npz ({summary['repo']})")


def compare(args):
    res = HERE / "bench" / "results"
    a = json.loads((res / f"decomposition_ab_{args.a}.json").read_text())
    b = json.loads((res / f"decomposition_ab_{args.b}.json").read_text())
    A = np.load(res / f"decomposition_ab_{args.a}.npz")
    B = np.load(res / f"decomposition_ab_{args.b}.npz")
    same_all = True
    for key, fa in a["fits"].items():
        if key not in b["fits"]:
            continue
        fb = b["fits"][key]
        line = f"{key:28s} time {fa['time']:7.3f} / {fb['time']:7.3f} s"
        if "rounds" in fa:
            iters = (fa["rounds"], fa["smo_iters"], fa["newton_steps"]) == (
                fb["rounds"], fb["smo_iters"], fb["newton_steps"])
            bits = []
            for arr in ("alpha", "decision"):
                x, z = A[f"{key}/{arr}"], B[f"{key}/{arr}"]
                eq = x.shape == z.shape and np.array_equal(x.view(np.int64), z.view(np.int64))
                bits.append("bit-equal" if eq else f"max diff {np.abs(x - z).max():.3g}")
                same_all &= eq
            same_all &= iters
            line += (f"  rounds {fa['rounds']:4d} smo {sum(fa['smo_iters']):8d} newton "
                     f"{fa['newton_steps']:2d} iterations {'equal' if iters else 'DIFFER'}; "
                     f"alpha {bits[0]}, decision {bits[1]}")
        print(line)
    print("all fits identical" if same_all else "SOME FITS DIFFER")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--repo", default=str(HERE), help="checkout whose hsskern is imported")
    r.add_argument("--tag", required=True)
    r.add_argument("--n", type=int, default=5000)
    r.add_argument("--C", type=float, nargs="+", default=[0.1, 1.0, 10.0, 100.0])
    r.add_argument("--sets", nargs="+", default=list(SETS))
    r.add_argument("--option", action="append", default=[], help="name=value")
    r.add_argument("--modes", nargs="+", default=["det", "path"], choices=["det", "path"])
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    run(args) if args.cmd == "run" else compare(args)


if __name__ == "__main__":
    main()
