"""Run-time dispatch (hsskern.utils._cpu): the CPU level from /proc/cpuinfo flags, the
HSSKERN_CPU override, and that every variant build is a drop-in for its base module."""
import importlib
import os
import subprocess
import sys
import warnings

import pytest
from hypothesis import given, settings, strategies as st

import hsskern
from hsskern.utils import _cpu

from build_config import DISPATCHED

V3 = "avx2 fma bmi1 bmi2 f16c movbe abm"
V4 = V3 + " avx512f avx512bw avx512cd avx512dq avx512vl"
BASE = "fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt avx"  # AVX alone is not v3


def _cpuinfo(*flag_lines):
    return "".join(f"processor\t: {i}\nvendor_id\t: GenuineIntel\nflags\t\t: {flags}\n\n"
                   for i, flags in enumerate(flag_lines))


@pytest.mark.parametrize("flags, level", [
    (BASE, "baseline"), (f"{BASE} {V3}", "v3"), (f"{BASE} {V4}", "v4"),
    # AVX-512 without the v3 set (no such CPU, but the level needs both)
    (f"{BASE} avx512f avx512bw avx512cd avx512dq avx512vl", "baseline"),
    (f"{BASE} {V4}".replace("avx512vl", ""), "v3"),
    (f"{BASE} {V3}".replace("abm", ""), "baseline"),  # no LZCNT
    ("", "baseline"),
])
def test_level_from_cpuinfo_flags(flags, level):
    assert _cpu.level_of(_cpu.cpuinfo_flags(_cpuinfo(flags))) == level


@given(st.lists(st.sampled_from(sorted(set(V4.split()) | set(BASE.split()))), unique=True))
def test_a_level_needs_every_one_of_its_flags(flags):
    level = _cpu.level_of(flags)
    assert (level == "v4") == (set(V4.split()) <= set(flags))
    assert (level != "baseline") == (set(V3.split()) <= set(flags))


def test_every_processor_must_have_the_flags():
    # a CPU whose cores differ (the kernel lists each): the level all of them run
    assert _cpu.level_of(_cpu.cpuinfo_flags(_cpuinfo(V4, V3, V4))) == "v3"
    assert _cpu.cpuinfo_flags("model name : x\n") == set()


def test_unreadable_cpuinfo_is_baseline(tmp_path):
    assert _cpu.detected_level(tmp_path / "missing") == "baseline"
    (tmp_path / "bin").write_bytes(b"\xff\xfe flags : avx2")
    assert _cpu.detected_level(tmp_path / "bin") == "baseline"


@pytest.mark.parametrize("env, detected, level", [
    ({}, "v4", "v4"), ({}, "baseline", "baseline"), ({"HSSKERN_CPU": ""}, "v3", "v3"),
    ({"HSSKERN_CPU": "baseline"}, "v4", "baseline"), ({"HSSKERN_CPU": "V3"}, "v4", "v3"),
    ({"HSSKERN_CPU": " v4 "}, "v4", "v4"),
])
def test_env_lowers_the_level(env, detected, level):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _cpu.chosen_level(env, detected) == level


def test_env_cannot_raise_the_level_above_the_cpu():
    with pytest.warns(RuntimeWarning, match="runs only v3"):
        assert _cpu.chosen_level({"HSSKERN_CPU": "v4"}, "v3") == "v3"


def test_env_rejects_unknown_levels():
    with pytest.raises(ValueError, match="one of baseline, v3, v4"):
        _cpu.chosen_level({"HSSKERN_CPU": "avx512"}, "v4")


def _variants_built():
    try:
        importlib.import_module("hsskern.kernels._eval_v3")
    except ModuleNotFoundError:
        return False
    return True


@pytest.mark.parametrize("name", DISPATCHED)
@pytest.mark.parametrize("level", _cpu.LEVELS)
def test_chosen_module_is_a_drop_in_for_the_base(name, level):
    if _cpu.LEVELS.index(level) > _cpu.LEVELS.index(_cpu.detected_level()):
        pytest.skip(f"this CPU does not run {level}")
    base = importlib.import_module(name)
    module = _cpu.load(name, level)
    public = {n for n in dir(base) if not n.startswith("__")}
    assert public == {n for n in dir(module) if not n.startswith("__")}
    if level != "baseline" and _variants_built():
        assert module.__name__ == f"{name}_{level}"


def test_load_falls_back_to_the_base_module(monkeypatch):
    # a native build (or a compiler that refused -march=x86-64-v4) has no variants
    real = importlib.import_module

    def no_variants(name):
        if name.endswith(("_v3", "_v4")):
            raise ModuleNotFoundError(name=name)
        return real(name)

    monkeypatch.setattr(_cpu.importlib, "import_module", no_variants)
    assert _cpu.load("hsskern.kernels._eval", "v4").__name__ == "hsskern.kernels._eval"


def test_every_importing_site_uses_the_one_choice():
    code = ("from hsskern.kernels import functions, operator, _surface, sparse_rows\n"
            "from hsskern.solvers.engines import cached_smo, decomposition\n"
            "print(functions._eval.__name__, operator._eval.__name__, _surface._eval.__name__,"
            " _surface._sparse_eval.__name__, sparse_rows._sparse_eval.__name__,"
            " cached_smo._cached_smo.__name__, cached_smo.Engine.__module__,"
            " decomposition._smo.__name__, decomposition.smo_block.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "HSSKERN_CPU": "baseline",
                              # the hsskern this test imports, installed or not
                              "PYTHONPATH": os.path.dirname(os.path.dirname(hsskern.__file__))},
                         ).stdout.split()
    assert out == ["hsskern.kernels._eval"] * 3 + ["hsskern.kernels._sparse_eval"] * 2 + \
        ["hsskern.solvers.engines._cached_smo"] * 2 + ["hsskern.solvers.engines._smo"] * 2


def _use_level(monkeypatch, level):
    """Point every importing site at ``level``'s kernel modules (the process chose at import)."""
    from hsskern.kernels import _surface, functions, operator, sparse_rows
    ev, sev = _cpu.load("hsskern.kernels._eval", level), _cpu.load("hsskern.kernels._sparse_eval",
                                                                     level)
    for module in (functions, operator, _surface):
        monkeypatch.setattr(module, "_eval", ev)
    for module in (_surface, sparse_rows):
        monkeypatch.setattr(module, "_sparse_eval", sev)


@pytest.mark.parametrize("level", ["v3", "v4"])
@given(seed=st.integers(0, 2**16), n=st.integers(1, 70), d=st.integers(1, 40),
       kernel=st.sampled_from(["gaussian", "laplacian", "polynomial", "sigmoid"]))
@settings(max_examples=15, deadline=None)
def test_variants_compute_the_baseline_entries_to_rounding(level, seed, n, d, kernel):
    # wider exp() and FMA contraction may move the last bits, nothing more
    if _cpu.LEVELS.index(level) > _cpu.LEVELS.index(_cpu.detected_level()):
        pytest.skip(f"this CPU does not run {level}")
    import numpy as np
    import scipy.sparse as sp

    from hsskern import kernel_operator
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3)
    Xs = sp.csr_matrix(np.where(rng.uniform(size=(n, d)) < 0.3, X, 0.0))
    v = rng.normal(size=n)
    results = {}
    for lvl in ("baseline", level):
        with pytest.MonkeyPatch.context() as mp:
            _use_level(mp, lvl)
            results[lvl] = [f(kernel_operator(P, kernel, gamma=1 / d))
                            for P in (X, Xs) for f in (lambda K: K.submatrix(range(n), range(n)),
                                                       lambda K: K @ v)]
    for ref, got in zip(results["baseline"], results[level]):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13 * np.abs(ref).max())


@pytest.mark.parametrize("level", ["v3", "v4"])
@given(seed=st.integers(0, 2**16), q=st.integers(2, 700), C=st.sampled_from([0.5, 10.0, 1e3]),
       weighted=st.booleans(), threads=st.sampled_from([1, 2]), dup=st.booleans())
@settings(max_examples=15, deadline=None)
def test_variants_take_the_baseline_smo_steps_bit_for_bit(level, seed, q, C, weighted, threads,
                                                         dup):
    # the block SMO is built without contraction: its wider passes round every operation as
    # the baseline does, and min/max reductions are exact in any order
    if _cpu.LEVELS.index(level) > _cpu.LEVELS.index(_cpu.detected_level()):
        pytest.skip(f"this CPU does not run {level}")
    if not _variants_built():
        pytest.skip("a native build has no variants")
    import numpy as np
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(q, 5))
    if dup:  # repeated points: ties in both passes
        X[q // 2:] = X[:q - q // 2]
    y = np.where(X[:, 0] + rng.normal(size=q) > 0, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    sq = (X * X).sum(1)
    K = np.exp(-0.3 * np.maximum(sq[:, None] + sq[None] - 2 * X @ X.T, 0.0))
    upper = rng.uniform(0.1, 1.0, size=q) * C if weighted else None
    out = []
    for module in (importlib.import_module("hsskern.solvers.engines._smo"),
                   _cpu.load("hsskern.solvers.engines._smo", level)):
        alpha, v = np.zeros(q), y.copy()
        res = module.smo_block(K, y, alpha, v, C, 1e-3, 50 * q, upper=upper, threads=threads)
        out.append((res, alpha, v))
    (r0, a0, v0), (r1, a1, v1) = out
    assert r0 == r1
    assert np.array_equal(a0, a1) and np.array_equal(v0, v1)
