"""What every suite shares: the data loader, the peer registry, the result schema, the plot.

A suite (a module registered in :data:`bench.run.SUITES`) adds its arguments to the command
line and, in ``run(args, bench)``, asks this module's :class:`Bench` to run *tasks*: a task is
a function ``task(data, params) -> dict`` of a module importable as ``bench.<...>``, run for
one *system* (ours or a peer) in a fresh interpreter (:mod:`bench.peer_runner`), ``repeat``
times. The child prints one JSON object on stdout; the parent keeps the median time, the
child's peak resident memory (``ru_maxrss``) and whatever the task reported (accuracy, per-C
records), and writes one JSON per run (:func:`validate` is its schema) and its PNG.
"""
import importlib
import importlib.util
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
SCHEMA = "hsskern-bench/1"


class DataUnavailable(Exception):
    """A data set that can be neither found nor fetched: the run stops with an error saying
    where the set comes from."""


class PeerLacks(Exception):
    """A peer installed but without the estimator a task asks for (oneDAL's one-class SVM,
    say): the task reports the system "unavailable" with this message."""


# ----------------------------------------------------------------------------- data

@dataclass(frozen=True)
class DataSpec:
    """Which data a task runs on; a child rebuilds the same arrays from it (seeded)."""

    name: str
    n_train: int = None
    n_test: int = None
    standardize: bool = False
    seed: int = 0

    def as_dict(self):
        return {"name": self.name, "n_train": self.n_train, "n_test": self.n_test,
                "standardize": self.standardize, "seed": self.seed}


def _gmm8(n):
    sys.path.insert(0, str(ROOT.parent / "shared" / "tools"))
    try:
        from gen_gmm import gmm8
    except ImportError:
        raise DataUnavailable("gmm8 needs ../shared/tools/gen_gmm.py") from None
    return gmm8(n)


#: sets made by scikit-learn's loaders, not read from a file
RAW_SETS = ("digits",)


def _raw(name):
    m = re.fullmatch(r"gmm8_(\d+)", name)
    if m:
        return _gmm8(int(m.group(1)))
    if name == "digits":  # RAW_SETS: scikit-learn's load_digits, raw pixels: fitted and scored on all
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True)
        return X, y, X, y
    from hsskern.datasets import load
    try:  # bundled, the cache, ../shared/datasets, else downloaded from its public source
        return load(name)
    except FileNotFoundError as e:
        raise DataUnavailable(str(e)) from None


def load_data(spec):
    """(X_train, y_train, X_test, y_test) for a :class:`DataSpec` (or its dict): random
    subsamples of ``n_train`` / ``n_test`` points (seeded), z-scored with the training
    statistics when ``standardize``. Raises :class:`DataUnavailable` when the file is absent."""
    if isinstance(spec, dict):
        spec = DataSpec(**spec)
    Xtr, ytr, Xte, yte = _raw(spec.name)
    rng = np.random.default_rng(spec.seed)
    if spec.n_train and spec.n_train < len(ytr):
        i = np.sort(rng.choice(len(ytr), spec.n_train, replace=False))
        Xtr, ytr = Xtr[i], ytr[i]
    if spec.n_test and spec.n_test < len(yte):
        i = np.sort(rng.choice(len(yte), spec.n_test, replace=False))
        Xte, yte = Xte[i], yte[i]
    if spec.standardize:
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    return (np.ascontiguousarray(Xtr, dtype=np.float64), ytr,
            np.ascontiguousarray(Xte, dtype=np.float64), yte)


def describe(spec, data):
    Xtr, ytr, Xte, yte = data
    return {**spec.as_dict(), "n_train": int(len(ytr)), "n_test": int(len(yte)),
            "n_features": int(Xtr.shape[1])}


def pack_labels(pred):
    """A child's predicted integer labels (every shared set's: +-1 or 0..k-1) as a hex string
    of int16, to send in its record; :func:`unpack_labels` reads it back."""
    return np.rint(np.asarray(pred, dtype=np.float64)).astype(np.int16).tobytes().hex()


def unpack_labels(hexed):
    return np.frombuffer(bytes.fromhex(hexed), np.int16)


# ----------------------------------------------------------------------------- peers

@dataclass(frozen=True)
class Peer:
    """A system measured in a child process. ``requires``: the module it imports (checked
    before a child is started; absent -> status "unavailable"). ``factory(kind)`` (called in
    the child) returns the estimator class for a task kind ("svc", "svr", "krr", "gp", ...)."""

    name: str
    label: str
    factory: object
    requires: str = None
    install: str = None

    def unavailable(self):
        if self.requires and importlib.util.find_spec(self.requires) is None:
            return f"{self.requires} is not installed" + (
                f" ({self.install})" if self.install else "")
        return None


PEERS = {}


def peer(name, label, requires=None, install=None):
    """Register a peer: ``@peer("libsvm", "LIBSVM (sklearn.svm.SVC)")`` on its factory."""
    def deco(factory):
        PEERS[name] = Peer(name, label, factory, requires, install)
        return factory
    return deco


@peer("hsskern", "hsskern")
def _hsskern(kind):
    import hsskern
    return {"svc": hsskern.HSSSVC, "svc_cv": hsskern.HSSSVCCV, "svr": hsskern.HSSSVR,
            "krr": hsskern.HSSKernelRidge, "gp": hsskern.HSSGaussianProcessRegressor,
            "exact": hsskern.ExactSVC, "one_class": hsskern.OneClassSVM}[kind]


@peer("libsvm", "LIBSVM (sklearn.svm.SVC / SVR / OneClassSVM)")
def _libsvm(kind):
    from sklearn import svm
    return {"svc": svm.SVC, "svr": svm.SVR, "one_class": svm.OneClassSVM}[kind]


@peer("onedal", "oneDAL (sklearnex.svm.SVC / SVR / OneClassSVM)", requires="sklearnex",
      install="pip install scikit-learn-intelex, or the bench extra")
def _onedal(kind):
    from importlib.metadata import version

    from sklearnex import svm
    names = {"svc": "SVC", "svr": "SVR", "one_class": "OneClassSVM"}
    if not hasattr(svm, names[kind]):
        raise PeerLacks(f"scikit-learn-intelex {version('scikit-learn-intelex')} has no svm.{names[kind]} "
                        f"(its svm module has {', '.join(sorted(svm.__all__))})")
    return getattr(svm, names[kind])


@peer("liblinear", "LIBLINEAR on Nystroem features (sklearn LinearSVC)")
def _liblinear(kind):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    def build(C=1.0, gamma="scale", n_components=1000, random_state=0):
        if gamma == "scale":
            gamma = None  # Nystroem's None is 1 / n_features: gamma="scale" on z-scored X
        return make_pipeline(Nystroem(gamma=gamma, n_components=n_components,
                                      random_state=random_state), LinearSVC(C=C))
    return {"svc": build}[kind]


@peer("sklearn", "scikit-learn (KernelRidge, GaussianProcessRegressor)")
def _sklearn(kind):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.kernel_ridge import KernelRidge
    return {"krr": KernelRidge, "gp": GaussianProcessRegressor}[kind]


def peer_class(name, kind):
    return PEERS[name].factory(kind)


# ----------------------------------------------------------------------------- machine

def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine():
    import scipy
    import sklearn
    mem = None
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    return {"cpu_count": os.cpu_count(), "cpu": _cpu_model(), "memory_bytes": mem,
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "sklearn": sklearn.__version__,
            "hostname": platform.node()}


def git_commit():
    def git(*a):
        r = subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    commit = git("rev-parse", "HEAD")
    # the results directory is the runs' output, not the code measured: a run after another
    # that rewrote its JSON measures the same checkout
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                f":(exclude){RESULTS.relative_to(ROOT).as_posix()}")
    return {"commit": commit, "dirty": bool(dirty) if dirty is not None else None}


# ----------------------------------------------------------------------------- running

def _tail(lines, k=15):
    return "".join(lines[-k:]).strip()


def run_in_child(task, system, data, params, repeat=1, timeout=None, quiet=False,
                 warmup=False, env=None):
    """``task`` ("bench.module:function") for ``system`` in a fresh interpreter: the record
    the child printed (status "ok"), or {"status": "failed" | "timeout", "reason": ...}.

    The child's stderr (its progress lines) is echoed as it comes, unless ``quiet``. ``env``:
    variables set for the child beside this process's (``OMP_NUM_THREADS``, say)."""
    spec = {"task": task, "system": system, "data": data.as_dict(), "params": params,
            "repeat": int(repeat), "warmup": bool(warmup)}
    env = {**os.environ, **(env or {})}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "bench.peer_runner"], cwd=str(ROOT),
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdin.write(json.dumps(spec))
    proc.stdin.close()
    err, out = [], []

    def echo():
        for line in proc.stderr:
            err.append(line)
            if not quiet:
                sys.stderr.write(f"    [{system}] {line}")
                sys.stderr.flush()
    readers = [threading.Thread(target=echo, daemon=True),
               threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)]
    for r in readers:
        r.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return {"status": "timeout", "reason": f"stopped after {timeout:g} s",
                "process_time": time.perf_counter() - t0}
    for r in readers:
        r.join()
    out = "".join(out)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"status": "failed", "reason": f"exit {proc.returncode}: {_tail(err)}",
                "process_time": wall}
    try:
        rec = json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"status": "failed", "reason": f"no JSON on stdout: {out[-500:]!r}",
                "process_time": wall}
    rec["process_time"] = wall
    return rec


WARMUP_POINTS = 300


def warm_up(fn, data, params):
    """One untimed run on a random ``WARMUP_POINTS``-point slice, so that the timed runs do
    not pay a library's first-call costs (lazy imports, thread pools); seconds, or None when
    the slice cannot be fitted (a class missing, say): the timed runs then go cold."""
    Xtr, ytr, Xte, yte = data
    if len(ytr) <= WARMUP_POINTS:
        i = np.arange(len(ytr))
    else:
        i = np.sort(np.random.default_rng(1).choice(len(ytr), WARMUP_POINTS, replace=False))
    t0 = time.perf_counter()
    try:
        fn((Xtr[i], ytr[i], Xte[:WARMUP_POINTS], yte[:WARMUP_POINTS]), params)
    except Exception as e:  # only a warm-up: the timed runs report real failures
        print(f"warm-up failed ({type(e).__name__}: {e}); timed runs start cold", flush=True)
        return None
    return time.perf_counter() - t0


def run_task(task, data, params, repeat=1, warmup=False):
    """The child's side (also usable in-process): the task ``repeat`` times, its median time.

    A task returns a dict with ``time`` (seconds of the work measured; setup such as
    building the estimator and scoring excluded) and anything else it reports; the record
    keeps every repeat's time and the last repeat's other fields. ``warmup``: first one
    untimed run on a small slice (:func:`warm_up`)."""
    mod, fn = task.split(":")
    fn = getattr(importlib.import_module(mod), fn)
    warm = warm_up(fn, data, params) if warmup else None
    times, rec = [], None
    for _ in range(max(1, repeat)):
        rec = fn(data, params)
        if rec.get("status") in ("unavailable", "skipped"):
            return rec
        times.append(float(rec["time"]))
    rec = {"status": "ok", **rec}
    rec["warmup"] = warm
    rec["times"] = times
    rec["time"] = float(statistics.median(times))
    return rec


# ----------------------------------------------------------------------------- results

def jsonable(o):
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, float) and not np.isfinite(o):
        return None
    return o


_TOP = {"schema": str, "suite": str, "name": str, "date": str, "command": str, "git": dict,
        "machine": dict, "data": (dict, type(None)), "options": dict, "cases": list,
        "loadavg": dict}
_CASE = {"case": str, "mode": str, "reference": str, "metric": (str, type(None)),
         "systems": dict, "ratios": dict}
_STATUS = {"ok", "unavailable", "failed", "timeout", "skipped"}


def validate(result):
    """The result schema: raise ValueError naming the first field that does not conform.

    A run: ``schema``, ``suite``, ``name``, ``date`` (UTC, ISO 8601), ``command``, ``git``
    (``commit``, ``dirty``), ``machine``, ``data`` (name, n_train, n_test, n_features, ...;
    None for a suite without one data set), ``options`` (the parsed arguments), ``loadavg``
    (``before`` / ``after``), ``cases``. A case: ``case`` (its label), ``mode``,
    ``reference`` (the system ratios divide by), ``metric`` (what ``score`` means, e.g.
    "accuracy" or "rmse"), ``systems`` (name -> record), ``ratios`` (name -> its time / the
    reference's; > 1: the reference is faster). A record: ``status`` in
    {ok, unavailable, failed, timeout, skipped}; with "ok" ``time`` (median seconds),
    ``times`` (every repeat), ``peak_rss`` (bytes, the child's ru_maxrss), ``score``
    (number or None); otherwise ``reason``.
    """
    def check(obj, spec, where):
        for k, t in spec.items():
            if k not in obj:
                raise ValueError(f"{where}: missing {k!r}")
            if not isinstance(obj[k], t):
                raise ValueError(f"{where}.{k}: {type(obj[k]).__name__}, expected {t}")
    check(result, _TOP, "result")
    if result["schema"] != SCHEMA:
        raise ValueError(f"result.schema {result['schema']!r} != {SCHEMA!r}")
    datetime.fromisoformat(result["date"])
    for i, case in enumerate(result["cases"]):
        check(case, _CASE, f"cases[{i}]")
        for name, rec in case["systems"].items():
            where = f"cases[{i}].systems[{name!r}]"
            if rec.get("status") not in _STATUS:
                raise ValueError(f"{where}.status: {rec.get('status')!r}")
            if rec["status"] == "ok":
                check(rec, {"time": (int, float), "times": list, "peak_rss": int,
                            "score": (int, float, type(None))}, where)
            else:
                check(rec, {"reason": str}, where)
        for name, r in case["ratios"].items():
            if not isinstance(r, (int, float)) or case["systems"].get(name, {}).get(
                    "status") != "ok":
                raise ValueError(f"cases[{i}].ratios[{name!r}]: {r!r} without an ok time")
    return result


# ----------------------------------------------------------------------------- one run

@dataclass
class Bench:
    """One run of a suite: runs tasks, collects cases, writes the JSON and the PNG."""

    suite: str
    argv: list
    options: dict
    out_dir: Path = RESULTS
    tag: str = ""
    timeout: float = None
    cases: list = field(default_factory=list)
    data: dict = None

    def __post_init__(self):
        self.started = datetime.now(timezone.utc)
        self.load_before = os.getloadavg()
        self.git = git_commit()  # the code measured: the checkout as the run starts

    def unavailable(self, system):
        if system not in PEERS:
            raise ValueError(f"unknown system {system!r}; registered: {sorted(PEERS)}")
        return PEERS[system].unavailable()

    def measure(self, task, system, data, params, repeat=1, warmup=True, env=None):
        """One system's record for a task (a child process, or "unavailable"); ``warmup``:
        an untimed run on a small slice first (off where a run starts a cluster, say);
        ``env``: variables set for the child (:func:`run_in_child`)."""
        why = self.unavailable(system)
        if why:
            print(f"  {system}: unavailable ({why})", flush=True)
            return {"status": "unavailable", "reason": why}
        print(f"  {system}: fresh process, load {os.getloadavg()[0]:.2f}", flush=True)
        rec = run_in_child(task, system, data, params, repeat, self.timeout, warmup=warmup,
                           env=env)
        if rec["status"] == "ok":
            print(f"  {system}: {rec['time']:.2f} s"
                  + ("" if rec.get("score") is None else f", score {rec['score']:.4g}")
                  + f", peak RSS {rec.get('peak_rss', 0) / 2**20:.0f} MB", flush=True)
        else:
            print(f"  {system}: {rec['status']}: {rec['reason'].splitlines()[-1]}", flush=True)
        return rec

    def add_case(self, case, mode, systems, reference="hsskern", metric="accuracy", **extra):
        """Record a case; the ratios are each ok system's time over the reference's."""
        ref = systems.get(reference, {})
        ratios = {}
        if ref.get("status") == "ok" and ref["time"] > 0:
            ratios = {k: r["time"] / ref["time"] for k, r in systems.items()
                      if k != reference and r.get("status") == "ok"}
        c = {"case": case, "mode": mode, "reference": reference, "metric": metric,
             "systems": systems, "ratios": ratios, **extra}
        self.cases.append(c)
        return c

    def summary(self):
        for c in self.cases:
            print(f"\n{c['case']} ({c['mode']}): time / {c['metric'] or 'score'} / peak RSS")
            for k, r in c["systems"].items():
                if r.get("status") != "ok":
                    why = (r.get("reason") or "").strip().splitlines() or [""]
                    print(f"  {k:<10} {r.get('status')}: {why[-1]}")
                    continue
                ratio = c["ratios"].get(k)
                score = "-" if r.get("score") is None else f"{r['score']:.4f}"
                print(f"  {k:<10} {r['time']:9.2f} s  {score:>8}  "
                      f"{r.get('peak_rss', 0) / 2**20:7.0f} MB"
                      + ("" if ratio is None else f"   {ratio:.2f}x {c['reference']}'s time"))
                if r.get("fit_over_floor") is not None:
                    print(floor_line(r))

    def result(self, name):
        return jsonable({
            "schema": SCHEMA, "suite": self.suite, "name": name,
            "date": self.started.isoformat(timespec="seconds"),
            "command": "python -m bench " + " ".join(shlex.quote(a) for a in self.argv),
            "git": self.git, "machine": machine(), "data": self.data,
            "options": self.options,
            "loadavg": {"before": list(self.load_before), "after": list(os.getloadavg())},
            "cases": self.cases})

    def write(self, name, plot=None):
        """The run's JSON (validated) and, with matplotlib, its PNG: the paths."""
        name = name + (f"_{self.tag}" if self.tag else "")
        result = validate(self.result(name))
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"{name}.json"
        png = self.out_dir / f"{name}.png"
        result["plot"] = png.name if (plot or plot_cases)(result, png) else None
        path.write_text(json.dumps(result, indent=1))
        print(f"wrote {path}" + (f" and {png.name}" if result["plot"] else ""))
        return path


def _top(seconds, k=3):
    """The ``k`` largest of a {phase: seconds}, as "name 1.23 s, ..." (1 % of the sum or more)."""
    total = sum((seconds or {}).values())
    big = sorted(((v, n) for n, v in (seconds or {}).items() if v >= 0.01 * total),
                 reverse=True)[:k]  # a phase under 1 % says nothing about where time goes
    return ", ".join(f"{n} {v:.2f} s" for v, n in big)


def floor_line(r):
    """A fit record's floor (fields ``floor_s``, ``floor_entries``, ``fit_over_floor``,
    ``phases``, ``ends``) as one summary line: the ratio, then where the time went."""
    line = (f"  {'':<10} {r['fit_over_floor']:9.2f}x its floor: K(X, SV) alpha "
            f"{r['floor_s']:.3f} s ({r['floor_entries']:.3g} entries)")
    if r.get("phases"):
        line += f"; phases {_top(r['phases'])}"
    ends = r.get("ends") or {}
    if ends.get("solver"):
        line += f" (solver: {_top(ends['solver'])})"
    computed = sum(v for k, v in (ends.get("kernel_entries") or {}).items()
                   if k != "block_reused")  # reused entries were not computed again
    if computed:
        line += f"; {computed / r['floor_entries']:.2f}x the floor's kernel entries"
    if r.get("face_cholesky_s"):
        line += (f"; final face {r['face_free']} free, {r['face_at_bound']} at the bound, "
                 f"its Cholesky {r['face_cholesky_s']:.3f} s "
                 f"({r['face_cholesky_s'] / r['floor_s']:.2f}x the floor)")
    if r.get("face_cg_iterations") is not None:
        line += (f", conjugate gradients {r['face_cg_iterations']} iterations "
                 f"{r['face_cg_s']:.2f} s")
    return line


def plot_cases(result, path):
    """The default figure: per case, each system's median time (log scale); for cases with
    per-C records, time and score along C. False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return False
    cases = result["cases"]
    per_c = [c for c in cases if any("per_C" in r for r in c["systems"].values())]
    ncol = 1 + 2 * len(per_c)
    fig, axes = plt.subplots(1, ncol, figsize=(4.4 * ncol, 3.6), squeeze=False)
    axes = axes[0]
    systems = sorted({k for c in cases for k in c["systems"]})
    width = 0.8 / max(1, len(systems))
    color = {s: f"C{j}" for j, s in enumerate(systems)}
    ax = axes[0]
    for j, s in enumerate(systems):
        t = [c["systems"].get(s, {}).get("time", np.nan) if c["systems"].get(s, {}).get(
            "status") == "ok" else np.nan for c in cases]
        ax.bar(np.arange(len(cases)) + j * width, t, width, label=s, color=color[s])
    ax.set_xticks(np.arange(len(cases)) + 0.4 - width / 2, [c["case"] for c in cases],
                  rotation=20, fontsize=7)
    ax.set_yscale("log")
    ok = [r["time"] for c in cases for r in c["systems"].values()
          if r.get("status") == "ok" and r["time"] > 0]
    if ok:  # log-scale bars need a floor below the smallest one to be seen
        ax.set_ylim(bottom=min(ok) / 3)
    ax.set_ylabel("time [s] (median)")
    ax.set_title(f"{result['suite']}: {result['date'][:10]}", fontsize=9)
    ax.legend(fontsize=7)
    for k, c in enumerate(per_c):
        at, aa = axes[1 + 2 * k], axes[2 + 2 * k]
        xlabel = "C"
        for s, r in c["systems"].items():
            if "per_C" not in r:
                continue
            xlabel = r.get("path_parameter", xlabel)
            Cs = [f["C"] for f in r["per_C"]]
            if all("time" in f for f in r["per_C"]):  # a path may time only its whole
                at.plot(Cs, np.cumsum([f["time"] for f in r["per_C"]]), "o-", label=s,
                        ms=3, color=color[s])
            aa.plot(Cs, [f.get("score", np.nan) for f in r["per_C"]], "o-", label=s, ms=3,
                    color=color[s])
        for a, lab in ((at, "cumulative time [s]"), (aa, c["metric"] or "score")):
            a.set_xscale("log")
            if lab.startswith("cumulative"):
                a.set_yscale("log")
            a.set_xlabel(xlabel)
            a.set_ylabel(lab)
            a.set_title(c["case"], fontsize=9)
            a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
