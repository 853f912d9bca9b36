"""Where OneClassSVM's ADMM start pays: the same fits from LIBSVM's start and from the ADMM's.

    python bench/one_class_start.py run --tag gmm8 --data gmm8 --n 20000 50000 100000
    python bench/one_class_start.py run --tag skin --data skin_nonskin:-1 --n 135938
    python bench/one_class_start.py run --tag loose --data gmm8 --n 20000 --starts admm \\
        --option rel_tol=0.01 --option max_rank=100
    python bench/one_class_start.py show gmm8 skin

``run`` fits ``OneClassSVM(options=OneClassSVMOptions(start=...))`` for every (n, start,
mode), each in a fresh process, one after another: ``fit`` at scikit-learn's defaults
(nu = 0.5, or ``--nu``; gamma = "scale") and ``path`` (``fit_path`` over 10 nu log-spaced
0.01 ... 0.5; the ADMM start serves its first nu, the others start from the previous nu's
exact solution unless ``--option admm_every_nu=true``).
Data: ``gmm8`` (``../shared/tools/gen_gmm.py``'s mixture, all its points the inliers) or
``NAME:LABEL``, the training points of that label of a shared set (z-scored with the whole
training set's statistics), subsampled to n with a fixed seed. It writes
``bench/results/one_class_start_<tag>.json``: per fit the time, the phases (compress,
factor, admm, exact), the exact engine's steps, the support vectors, the offset (equal
between starts to the tolerance) and the machine's load before the fit. ``show`` prints
the tables of the given tags.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
NUS = np.geomspace(0.01, 0.5, 10).tolist()


def _data(name, n):
    if name == "gmm8":
        sys.path.insert(0, str(HERE.parent / "shared" / "tools"))
        from gen_gmm import gmm8
        return gmm8(n)[0]
    base, label = name.split(":")
    d = np.load(HERE.parent / "shared" / "datasets" / f"{base}.npz")
    X, y = d["X_train"], d["y_train"]
    X = (X - X.mean(0)) / X.std(0)
    X = X[y == float(label)]
    if n < X.shape[0]:
        X = X[np.sort(np.random.default_rng(0).choice(X.shape[0], n, replace=False))]
    return X


def child(args):
    """One fit in this process: a JSON line on stdout."""
    sys.path.insert(0, str(HERE))
    from hsskern import OneClassSVM, OneClassSVMOptions
    X = _data(args.data, args.n[0])
    extra = dict(json.loads(args.options))
    est = OneClassSVM(options=OneClassSVMOptions(start=args.starts[0], **extra))
    t0 = time.perf_counter()
    models = ([est.set_params(nu=args.nu).fit(X)] if args.modes[0] == "fit"
              else est.fit_path(X, nus=NUS))
    t = time.perf_counter() - t0
    print("RESULT " + json.dumps({
        "data": args.data, "n": int(X.shape[0]), "d": int(X.shape[1]),
        "start": args.starts[0], "start_taken": models[0].start_, "mode": args.modes[0],
        "nu": args.nu if args.modes[0] == "fit" else NUS,
        "options": extra, "time": t, "phases": models[0].fit_time_,
        "n_iter": [int(m.n_iter_[0]) for m in models],
        "n_support": [int(m.support_.size) for m in models],
        "offset": [float(m.offset_[0]) for m in models],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
        flush=True)


def run(args):
    options = dict(o.split("=", 1) for o in args.option)
    options = {k: json.loads(v) if v[:1] in "0123456789-.tfn[{\"" else v
               for k, v in options.items()}
    out = HERE / "bench" / "results" / f"one_class_start_{args.tag}.json"
    records = json.loads(out.read_text())["runs"] if out.exists() else []
    for n in args.n:
        for mode in args.modes:
            for start in args.starts:
                load = os.getloadavg()
                cmd = [sys.executable, __file__, "child", "--data", args.data, "--n", str(n),
                       "--nu", str(args.nu),
                       "--starts", start, "--modes", mode, "--options", json.dumps(options)]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
                if not line:
                    print(p.stderr[-2000:], file=sys.stderr)
                    continue
                rec = {**json.loads(line[-1][7:]), "load_before": load,
                       "date": time.strftime("%Y-%m-%d %H:%M")}
                records.append(rec)
                print(_row(rec), flush=True)
                out.write_text(json.dumps({"command": " ".join(sys.argv), "runs": records},
                                          indent=1))


def _row(r):
    ph = r["phases"]
    return (f"{r['data']:>16} n={r['n']:>7} {r['mode']:>4} {r['start_taken']:>13} "
            f"{r['time']:8.2f} s (compress {ph['compress']:.2f}, factor {ph['factor']:.2f}, "
            f"admm {ph['admm']:.2f}, exact {ph['exact']:.2f}) steps {r['n_iter'][0]} "
            f"SV {r['n_support'][0]} load {r['load_before'][0]:.1f}")


def show(args):
    for tag in args.tags:
        path = HERE / "bench" / "results" / f"one_class_start_{tag}.json"
        for r in json.loads(path.read_text())["runs"]:
            print(_row(r))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("run", "child"):
        q = sub.add_parser(name)
        q.add_argument("--data", default="gmm8")
        q.add_argument("--n", type=int, nargs="+", default=[20000, 50000, 100000])
        q.add_argument("--starts", nargs="+", default=["decomposition", "admm"])
        q.add_argument("--modes", nargs="+", default=["fit"], choices=["fit", "path"])
        q.add_argument("--tag", default="default")
        q.add_argument("--nu", type=float, default=0.5, help="fit's nu")
        q.add_argument("--option", action="append", default=[],
                       help="a OneClassSVMOptions field, name=value")
        q.add_argument("--options", default="{}", help=argparse.SUPPRESS)
        q.add_argument("--timeout", type=float, default=3600)
    q = sub.add_parser("show")
    q.add_argument("tags", nargs="+")
    args = p.parse_args()
    {"run": run, "child": child, "show": show}[args.cmd](args)


if __name__ == "__main__":
    main()
