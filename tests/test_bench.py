"""The benchmark harness end to end on a tiny configuration: each system in a fresh process,
one JSON per run that matches the schema, a peer that cannot run reported as unavailable."""
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import harness  # noqa: E402
from bench.run import SUITES, main  # noqa: E402


def test_c_grid_tiny_run_writes_a_result_matching_the_schema(tmp_path, capsys):
    argv = ["c_grid", "--data", "ijcnn1", "--n-train", "400", "--n-test", "300",
            "--C", "0.5", "5", "--peers", "libsvm", "--repeat", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    [path] = tmp_path.glob("*.json")
    result = harness.validate(json.loads(path.read_text()))
    assert result["suite"] == "c_grid"
    assert result["command"] == "python -m bench " + " ".join(argv)
    assert result["data"]["n_train"] == 400 and result["data"]["n_test"] == 300
    assert result["git"]["commit"] and result["machine"]["cpu_count"] >= 1
    [case] = result["cases"]
    assert case["mode"] == "path"
    ours, svc = case["systems"]["hsskern"], case["systems"]["libsvm"]
    for rec in (ours, svc):
        assert rec["status"] == "ok" and len(rec["times"]) == 1 and rec["time"] > 0
        assert rec["warmup"] > 0  # one untimed run on a slice came first
        assert [f["C"] for f in rec["per_C"]] == [0.5, 5.0]
        # the child's high-water mark holds at least the data it loaded
        assert rec["peak_rss"] >= rec["data_rss"] > 0
        assert 0.9 <= rec["score"] <= 1.0  # ijcnn1's majority class scores 0.905
    assert case["ratios"] == {"libsvm": pytest.approx(svc["time"] / ours["time"])}
    assert ours["route"] in ("decomposition", "admm")
    # both solve the same SVM to SVC's tolerance: the same test accuracy up to a few points
    for a, b in zip(ours["per_C"], svc["per_C"]):
        assert abs(a["score"] - b["score"]) <= 3 / 300
    if result["plot"]:
        assert (tmp_path / result["plot"]).stat().st_size > 0


@pytest.mark.shared_data
def test_c_grid_fit_mode_records_how_often_predict_agrees_with_svcs(tmp_path):
    # a fit's case carries, per system, the share of test points predicted as LIBSVM does
    # (the label strings the children sent are dropped): the same SVM to SVC's tolerance
    # predicts nearly every point alike; a multiclass set (one-vs-one) too, where it is on
    # this machine (the cache or ../shared: no test downloads)
    from hsskern.datasets import find
    for data in ("ijcnn1", "satimage"):
        if data != "ijcnn1" and find(data) is None:
            pytest.skip(f"{data} is neither cached nor in ../shared/datasets")
        out = tmp_path / data
        argv = ["c_grid", "--data", data, "--n-train", "400", "--n-test", "300", "--modes",
                "fit", "--fit-C", "1", "--peers", "libsvm", "--repeat", "1", "--out", str(out)]
        assert main(argv) == 0
        [path] = out.glob("*.json")
        [case] = harness.validate(json.loads(path.read_text()))["cases"]
        assert case["agreement_with"] == "libsvm"
        assert set(case["agreement"]) == {"hsskern"}
        assert 0.99 <= case["agreement"]["hsskern"] <= 1.0
        assert all("predictions" not in rec for rec in case["systems"].values())


def test_c_grid_grid_mode_searches_C_by_gamma_as_gridsearchcv_does(tmp_path):
    # HSSSVCCV(param_grid) and GridSearchCV(HSSSVC()) on the same folds choose the same
    # parameters with the same CV score (HSSSVCCV's contract), and so does SVC's search
    argv = ["c_grid", "--data", "ijcnn1", "--n-train", "300", "--n-test", "200",
            "--modes", "grid", "--grid-C", "1", "10", "--gamma-factors", "0.5", "2",
            "--folds", "2", "--standardize", "--peers", "libsvm", "--out", str(tmp_path)]
    assert main(argv) == 0
    [path] = tmp_path.glob("*.json")
    [case] = harness.validate(json.loads(path.read_text()))["cases"]
    assert case["mode"] == "grid"
    recs = case["systems"]
    assert set(recs) == {"hsskern", "hsskern_gscv", "libsvm"}
    assert all(r["status"] == "ok" for r in recs.values())
    ours, gscv = recs["hsskern"], recs["hsskern_gscv"]
    assert ours["best_params"]["C"] in (1.0, 10.0)
    assert ours["best_params"]["gamma"] == pytest.approx(gscv["best_params"]["gamma"])
    assert ours["best_params"]["C"] == gscv["best_params"]["C"]
    assert ours["best_cv_score"] == pytest.approx(gscv["best_cv_score"], abs=1e-12)
    assert set(case["ratios"]) == {"hsskern_gscv", "libsvm"}


def test_a_peer_that_cannot_be_imported_is_unavailable_without_a_process(monkeypatch):
    monkeypatch.setitem(harness.PEERS, "absent", harness.Peer(
        "absent", "a peer whose module is missing", None, requires="no_such_module_xyz"))
    bench = harness.Bench("c_grid", ["c_grid"], {})
    rec = bench.measure("bench.suites.c_grid:path_task", "absent",
                        harness.DataSpec("ijcnn1"), {})
    assert rec == {"status": "unavailable",
                   "reason": "no_such_module_xyz is not installed"}
    case = bench.add_case("x", "path", {"absent": rec})
    assert case["ratios"] == {}


def test_an_unknown_data_set_is_an_error_naming_the_known_ones(tmp_path, capsys):
    assert main(["c_grid", "--data", "no_such_data_set", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "error: 'no_such_data_set'" in err and "usps" in err
    assert not list(tmp_path.iterdir())


def test_a_set_that_cannot_be_fetched_is_an_error_naming_its_source(tmp_path, monkeypatch,
                                                                      capsys):
    # nothing cached, no ../shared, and a source that refuses connections: exit 1, the
    # repository and file the set comes from in the message (never a silent exit 0)
    from hsskern.datasets import SOURCES, _fetch, _sources
    monkeypatch.setenv("HSSKERN_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(_fetch, "SHARED", tmp_path / "no_shared")
    monkeypatch.setattr(_sources, "_RAW", "http://127.0.0.1:9/{repo}/{commit}/{path}")
    assert main(["c_grid", "--data", "usps", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "usps" in err and SOURCES["usps"].files[0].repo in err and "zip.train.gz" in err
    assert not (tmp_path / "out").exists()


def _git_status():
    import subprocess
    return subprocess.run(["git", "-C", str(harness.ROOT), "status", "--porcelain"],
                          capture_output=True, text=True, check=True).stdout


_TINY = ["c_grid", "--data", "ijcnn1", "--n-train", "200", "--n-test", "100", "--modes", "fit",
         "--peers", "libsvm"]


def test_a_run_writes_to_a_new_run_directory_not_the_records(tmp_path):
    # python -m bench from another directory, without --out: a new bench-runs/<time>_<suite>/
    # there; the checkout (and its bench/results records) untouched. PYTHONPATH stands in for
    # an install that lists bench (pyproject's package find)
    import os
    import subprocess
    before = _git_status()
    env = {**os.environ, "PYTHONPATH": str(harness.ROOT)}
    proc = subprocess.run([sys.executable, "-m", "bench", *_TINY], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    [run] = (tmp_path / "bench-runs").iterdir()
    assert run.name.endswith("_c_grid")
    assert [p.name for p in run.glob("*.json")] == ["c_grid_ijcnn1.json"]
    assert _git_status() == before


def test_only_record_writes_the_records(tmp_path, monkeypatch):
    import bench.run
    records = tmp_path / "records"  # bench/results, moved aside so the test rewrites nothing
    monkeypatch.setattr(bench.run, "RESULTS", records)
    monkeypatch.chdir(tmp_path)
    assert main(_TINY + ["--record"]) == 0
    assert [p.name for p in records.glob("*.json")] == ["c_grid_ijcnn1.json"]
    assert not (tmp_path / "bench-runs").exists()
    with pytest.raises(SystemExit):  # one destination
        main(_TINY + ["--record", "--out", str(tmp_path)])


def _minimal():
    rec = {"status": "ok", "time": 1.0, "times": [1.0], "peak_rss": 1, "score": 0.5}
    return {"schema": harness.SCHEMA, "suite": "s", "name": "n",
            "date": "2026-12-01T00:00:00+00:00", "command": "python -m bench s",
            "git": {}, "machine": {}, "data": None, "options": {},
            "loadavg": {}, "cases": [{"case": "c", "mode": "m", "reference": "a",
                                      "metric": None, "systems": {"a": rec, "b": dict(rec)},
                                      "ratios": {"b": 1.0}}]}


@pytest.mark.parametrize("breaks", [
    lambda r: r.pop("git"),
    lambda r: r.update(schema="other/1"),
    lambda r: r["cases"][0]["systems"]["a"].pop("peak_rss"),
    lambda r: r["cases"][0]["systems"]["a"].update(status="fine"),
    lambda r: r["cases"][0]["systems"]["b"].update(status="failed"),  # a ratio without a time
    lambda r: r["cases"][0]["systems"]["a"].update(time="1 s"),
])
def test_schema_rejects_what_does_not_conform(breaks):
    harness.validate(_minimal())
    r = copy.deepcopy(_minimal())
    breaks(r)
    with pytest.raises(ValueError):
        harness.validate(r)


def test_every_registered_suite_has_the_interface():
    import importlib
    for name, module in SUITES.items():
        mod = importlib.import_module(module)
        if not hasattr(mod, "run"):  # a plain script registered as it is
            assert callable(mod.main), name
            continue
        assert isinstance(mod.DESCRIPTION, str) and callable(mod.add_arguments)
        assert callable(mod.run), name


def test_one_class_tiny_run_records_agreement_with_scikit_learn(tmp_path):
    argv = ["one_class", "--data", "ijcnn1", "--inlier", "-1", "--n-train", "400",
            "--n-test", "300", "--nus", "0.2", "0.5", "--peers", "libsvm", "onedal",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    [path] = tmp_path.glob("*.json")
    assert path.name == "one_class_ijcnn1.json"
    result = harness.validate(json.loads(path.read_text()))
    assert result["suite"] == "one_class" and result["data"]["inlier"] == -1
    assert 0 < result["data"]["n_inliers"] < 400
    fit, nu_path = result["cases"]
    assert (fit["mode"], nu_path["mode"]) == ("fit", "path")
    for case, nus in ((fit, [0.5]), (nu_path, [0.2, 0.5])):
        ours, sk = case["systems"]["hsskern"], case["systems"]["libsvm"]
        for rec in (ours, sk):
            assert rec["status"] == "ok" and rec["time"] > 0 and 0.5 <= rec["score"] <= 1
            assert [f["C"] for f in rec["per_C"]] == nus and rec["path_parameter"] == "nu"
            assert "predictions" not in rec  # the bit strings stay out of the JSON
            assert rec["peak_rss"] >= rec["data_rss"] > 0
        # the same dual to LIBSVM's tolerance: predictions differ only at the boundary
        assert case["agreement_with"] == "libsvm"
        assert case["agreement"]["hsskern"] >= 0.97
        assert [f["agreement"] for f in ours["per_C"]] >= [0.97] * len(nus)
        assert abs(ours["score"] - sk["score"]) <= 0.02
        assert case["ratios"]["libsvm"] == pytest.approx(sk["time"] / ours["time"])
        onedal = case["systems"]["onedal"]  # sklearnex has no one-class SVM (yet)
        if onedal["status"] != "ok":
            assert onedal["status"] == "unavailable" and onedal["reason"]


def test_c_grid_takes_svcs_poly_kernel_for_every_system(tmp_path):
    argv = ["c_grid", "--data", "ijcnn1", "--kernel", "poly", "--n-train", "400",
            "--n-test", "300", "--modes", "fit", "path", "--C", "0.5", "5", "--standardize",
            "--peers", "libsvm", "--out", str(tmp_path)]
    assert main(argv) == 0
    [path] = tmp_path.glob("*.json")
    assert path.name == "c_grid_ijcnn1_poly.json"
    result = harness.validate(json.loads(path.read_text()))
    fit, c_path = result["cases"]
    assert c_path["case"] == "path poly degree=3 coef0=0 gamma=scale (2 C)"
    def close(ours, svc):  # the same poly SVM (not each one's default Gaussian kernel)
        assert abs(ours["n_support"] - svc["n_support"]) <= 0.02 * svc["n_support"] + 2
        assert abs(ours["score"] - svc["score"]) <= 3 / 300

    for case in (fit, c_path):
        ours, svc = case["systems"]["hsskern"], case["systems"]["libsvm"]
        assert ours["status"] == svc["status"] == "ok"
    close(fit["systems"]["hsskern"], fit["systems"]["libsvm"])
    for a, b in zip(c_path["systems"]["hsskern"]["per_C"], c_path["systems"]["libsvm"]["per_C"]):
        close(a, b)


def test_dirty_means_the_code_not_the_results(tmp_path, monkeypatch):
    import subprocess

    def git(*a):
        subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "bench" / "results" / "run.json").write_text("{}\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.setattr(harness, "ROOT", tmp_path)
    monkeypatch.setattr(harness, "RESULTS", tmp_path / "bench" / "results")
    assert harness.git_commit()["dirty"] is False
    (tmp_path / "bench" / "results" / "run.json").write_text('{"rewritten": 1}\n')
    assert harness.git_commit()["dirty"] is False  # an earlier run's output
    (tmp_path / "code.py").write_text("x = 2\n")
    assert harness.git_commit()["dirty"] is True


def _blobs(n, classes, seed=0):
    """A tiny synthetic set: ``classes`` Gaussian clusters in 4 dimensions, half for test."""
    import numpy as np
    rng = np.random.default_rng(seed)
    y = rng.integers(classes, size=2 * n)
    X = rng.normal(size=(2 * n, 4)) + 2.0 * np.eye(4)[y]
    return X[:n], y[:n], X[n:], y[n:]


@pytest.mark.parametrize("classes", [2, 3])
def test_fit_mode_times_the_fits_floor_on_its_decision_path(classes):
    # the floor is one product K(X_train, SV) coef, the one decision_function computes
    # (one-vs-one: every pair's coefficients in one matmat); the record holds its median
    # time, its n x n_SV entries and the fit's time over it
    import numpy as np

    from bench.suites import c_grid
    data = _blobs(200, classes)
    params = {"system": "hsskern", "C": 1.0, "gamma": "scale", "class_weight": None,
              "tol": 1e-3, "cache_size": 200.0, "ours": {}, "ours_estimator": "hss",
              "kernel": {}}
    rec = harness.run_task("bench.suites.c_grid:fit_task", data, params)
    assert rec["floor_s"] > 0 and len(rec["floor_times"]) == c_grid.FLOOR_REPEATS
    assert rec["floor_s"] == sorted(rec["floor_times"])[c_grid.FLOOR_REPEATS // 2]
    assert rec["fit_over_floor"] == pytest.approx(rec["time"] / rec["floor_s"], rel=1e-12)
    assert rec["floor_entries"] == 200 * rec["n_support"]
    assert rec["ends"]["solver"] and sum(rec["ends"]["kernel_entries"].values()) > 0

    est = c_grid._estimator(params, 1.0, "scale").set_params(decision_function_shape="ovo")
    est.fit(*data[:2])
    face = c_grid._final_face(est, dict(params, face_cg=True))
    if classes == 2:
        # the final face: every support vector free or at the bound, and the free ones on
        # their margin (|f| = 1 to the solver's tolerance), which the bounded ones need not be
        assert face["face_free"] + face["face_at_bound"] == rec["n_support"]
        assert face["face_free"] > 0 and face["face_cholesky_s"] > 0
        size = np.abs(est.dual_coef_[0])
        free = (size > 1e-8) & (size < 1 - 1e-8)
        assert free.sum() == face["face_free"]
        margin = np.abs(est.decision_function(data[0][est.support_[free]]))
        np.testing.assert_allclose(margin, 1.0, atol=2e-3)
        # conjugate gradients from zero on the face's system reach the tolerance (a few
        # iterations on 21 free points, at most a few times their number)
        assert 1 <= face["face_cg_iterations"] <= 5 * face["face_free"]
    else:
        assert face == {}  # one-vs-one: no single face
    F = np.reshape(c_grid.floor_product(est, data[0]), (200, -1))
    assert F.shape == (200, classes * (classes - 1) // 2)
    # the decision path is one K(X, SV) product plus the intercepts, nothing more
    from hsskern import kernel_operator
    model = est._model
    KX = kernel_operator(model.support_vectors, model.kernel).cross(data[0])
    np.testing.assert_allclose(F, KX @ model.dual_coef.T + est.intercept_, rtol=1e-12,
                               atol=1e-12)


def test_c_grid_fit_case_reports_the_floor_ratio_on_the_median_time(tmp_path, capsys):
    # the parent sets fit_over_floor again on the median of the repeats, and the summary
    # prints it with where the fit's time went
    argv = ["c_grid", "--data", "ijcnn1", "--n-train", "300", "--n-test", "100", "--modes",
            "fit", "--peers", "--repeat", "2", "--out", str(tmp_path)]
    assert main(argv) == 0
    [path] = tmp_path.glob("*.json")
    [case] = harness.validate(json.loads(path.read_text()))["cases"]
    rec = case["systems"]["hsskern"]
    assert len(rec["times"]) == 2 and rec["floor_s"] > 0
    # the fit's high-water mark excludes the floor product the harness runs after it
    assert rec["data_rss"] <= rec["peak_rss"] <= rec["process_peak_rss"]
    assert rec["fit_over_floor"] == pytest.approx(rec["time"] / rec["floor_s"], rel=1e-12)
    assert "x its floor: K(X, SV) alpha" in capsys.readouterr().out


def test_c_grid_measures_the_drop_in_svc_on_request(tmp_path):
    # --ours svc fits hsskern.SVC, the estimator a user imports, with its floor; its model
    # is HSSSVC's (the same routes at SVC's defaults)
    recs = {}
    for ours in ("svc", "hss"):
        out = tmp_path / ours
        argv = ["c_grid", "--data", "ijcnn1", "--n-train", "300", "--n-test", "100", "--modes",
                "fit", "--peers", "--ours", ours, "--out", str(out)]
        assert main(argv) == 0
        [path] = out.glob("*.json")
        [case] = harness.validate(json.loads(path.read_text()))["cases"]
        recs[ours] = rec = case["systems"]["hsskern"]
        assert rec["status"] == "ok" and rec["floor_s"] > 0
    assert recs["svc"]["score"] == recs["hss"]["score"]
    assert recs["svc"]["n_support"] == recs["hss"]["n_support"]


def _children_running(pattern):
    out = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", pattern],
                         capture_output=True, text=True).stdout
    return out.split()


def test_compete_fits_both_variants_beside_a_competitor_and_stops_it(tmp_path, capsys):
    argv = ["compete", "--data", "ijcnn1", "--n-train", "400", "--n-test", "200",
            "--repeat", "1", "--competitors", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert not _children_running("while True")  # the competitor did not outlive the run
    [path] = tmp_path.glob("*.json")
    [case] = harness.validate(json.loads(path.read_text()))["cases"]
    default, one = case["systems"]["default"], case["systems"]["one_thread"]
    # the variant's environment reached the child's OpenMP runtime, and only that child's
    assert one["openmp_threads"] == [1]
    assert default["openmp_threads"] == [int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))]
    for rec in (default, one):
        assert rec["status"] == "ok" and len(rec["times"]) == len(rec["cpu_times"]) == 1
        assert rec["score"] > 0.85
        assert rec["plan_threads"] == [1]  # 400 points: one thread by the plan's own rule
    # a ratio per repeat: the same repeat's one-thread time over its default time
    assert case["paired"]["one_thread"]["ratios"] == pytest.approx(
        [o / d for o, d in zip(one["times"], default["times"])])
    assert case["competitors"] == 1 and case["ratios"]["one_thread"] > 0
    assert "one_thread / default, median of 1 pairs" in capsys.readouterr().out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.1, 10.0), min_size=1, max_size=40))
def test_compete_interval_is_the_widest_order_statistics_within_the_binomial_bound(ratios):
    from math import comb

    from bench.suites.compete import median_interval
    n = len(ratios)
    med, (lo, hi) = median_interval(ratios)
    assert med == pytest.approx(float(np.median(ratios)))

    def below(k):  # P(Binomial(n, 1/2) < k)
        return sum(comb(n, j) for j in range(k)) / 2 ** n
    k = max((k for k in range(1, n // 2 + 1) if below(k) <= 0.025), default=0)
    if k == 0:
        assert np.isnan(lo) and np.isnan(hi)
        return
    r = sorted(ratios)
    assert (lo, hi) == (r[k - 1], r[n - k]) and lo <= med <= hi


def test_compete_late_competitors_start_inside_the_block_and_never_outlive_it():
    import time

    from bench.suites.compete import _LateCompetitors
    with _LateCompetitors(0.0, 1) as late:
        time.sleep(0.5)
        assert len(late.procs) == 1 and late.procs[0].poll() is None  # running in the block
    assert late.procs[0].poll() is not None and not _children_running("while True")
    with _LateCompetitors(30.0, 1) as late:  # a block that ends first starts none
        pass
    assert late.procs == [] and not _children_running("while True")
