import re

from hsskern.demo import run_demo


def test_demo_runs_a_small_grid_and_reports_every_c(capsys):
    assert run_demo(Cs=[0.1, 10.0], n_train=1200, n_test=800) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(\S+)\s+\d+\s+[\d.]+\s+([\d.]+)%", out, flags=re.M)
    assert [float(c) for c, _ in rows] == [0.1, 10.0]
    assert "<- chosen" in out
    acc = float(re.search(r"test accuracy ([\d.]+)%", out).group(1))
    assert acc >= 93.0  # the majority class alone scores 90.5%: a constant model fails here
