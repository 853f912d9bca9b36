"""The demo tells the truth about the run it made: its route, only the phases that ran, a line
per C as that C finishes, the model the path already solved, the refit at the chosen C on all
training points started from the path's solution, and SVC's time on the grid."""
import re

import numpy as np
import pytest

from hsskern.__main__ import main
from hsskern.demo import run_demo

_PATH_LINE = re.compile(r"^  C=(\S+)\s+\S+ s\s+.*\[([\d.]+) s\]$", re.M)
_HELD_LINE = re.compile(r"^  C=(\S+)\s+([\d.]+)%\s+\d+ support vectors", re.M)
# a phase with a time: "HSS compression 0.04 s", "ULV factor 0.10 s", "ADMM (first C) 0.2 s"
_PHASE_TIMED = re.compile(r"(HSS compression|ULV factor|ADMM \(first C\)) [\d.e-]+ s")


def _common(out, Cs):
    path = _PATH_LINE.findall(out)
    assert [float(c) for c, _ in path] == pytest.approx(list(Cs), rel=5e-3)
    stamps = [float(t) for _, t in path]
    assert stamps == sorted(stamps)
    # every per-C line comes before the summary printed after the path
    assert out.index("route:") > max(m.end() for m in _PATH_LINE.finditer(out))
    held = _HELD_LINE.findall(out)
    assert [float(c) for c, _ in held] == pytest.approx(list(Cs), rel=5e-3)
    assert out.count("<- chosen") == 1
    chosen = [c for c, _ in held][[float(a) for _, a in held].index(
        max(float(a) for _, a in held))]
    assert f"the path's model at C={chosen}" in out
    refit = re.search(rf"refit at C={re.escape(chosen)} on all (\d+) training points, started "
                      r"from the path's solution: [\d.]+ s, \d+ SMO steps, gap ([\d.e+-]+), "
                      r"\d+ support vectors, test accuracy ([\d.]+)% \(from zero: [\d.]+ s, "
                      r"\d+ steps\)", out)
    assert refit, "no refit line"
    n_train = int(re.search(r"data: (\d+) training points", out).group(1))
    assert int(refit.group(1)) == n_train  # the fit points and the held-out ones
    assert float(refit.group(2)) < 1e-3  # the exact SVM of all training points, to SVC's tol
    assert float(refit.group(3)) >= 93.0
    assert not re.search(r"\b0 B\b", out)  # no memory figure of nothing
    assert not re.search(r"(?<!\d)0 ADMM iterations", out)
    acc = float(re.search(r"test accuracy ([\d.]+)%", out).group(1))
    assert acc >= 93.0  # the majority class alone scores 90.5%: a constant model fails here
    return path


def test_decomposition_route_prints_no_phase_that_did_not_run(capsys):
    assert main(["demo", "--n-train", "1500", "--n-test", "800", "--svc-n", "0"]) == 0
    out = capsys.readouterr().out
    _common(out, np.logspace(-2, 3, 10))
    assert "route: the exact decomposition from alpha = 0" in out
    assert "on the single-fit engine" in out  # 1,200 points: the cached engine's size
    assert not _PHASE_TIMED.search(out)
    assert "memory:" not in out  # no approximation, no factor: nothing to report
    assert "scikit-learn SVC" not in out  # svc_n=0: no comparison


def test_admm_route_names_its_phases_and_compares_with_svc(capsys):
    assert run_demo(Cs=[0.1, 10.0], n_train=1500, n_test=800, svc_n=300, start="admm") == 0
    out = capsys.readouterr().out
    path = _common(out, [0.1, 10.0])
    assert "route: HSS compression of K, ULV factor of K + beta I, dual ADMM" in out
    assert re.search(r"HSS compression [\d.e-]+ s", out)
    assert re.search(r"ULV factor [\d.e-]+ s", out)
    first = _PATH_LINE.search(out).group(0)
    assert re.search(r"[1-9]\d* ADMM iterations", first)  # the first C ran the ADMM
    assert re.search(r"memory: approximation \d", out)
    svc = re.search(r"on 300 of these points, measured now: hsskern ([\d.]+) s, "
                    r"scikit-learn SVC \(LIBSVM, a fit per C\) ([\d.]+) s", out)
    assert svc and float(svc.group(1)) > 0 and float(svc.group(2)) > 0
    assert len(path) == 2
