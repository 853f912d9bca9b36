"""hss.estimate_memory: a bound by phase, from the sizes alone, checked against measured peaks."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import assume, given, settings, strategies as st

from hsskern.hss import estimate_memory
from hsskern.options import HSSSVCOptions
from hsskern.options import HSSSVROptions

GEN_GMM = Path(__file__).resolve().parents[2] / "shared" / "tools" / "gen_gmm.py"

_KEYS = ("points", "tree", "neighbors", "compression_peak", "hss", "factor", "factor_peak",
         "solver", "exact_block", "exact_newton", "peak", "peak_newton")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 10**7), dn=st.integers(1, 10**6), d=st.integers(1, 300),
       max_rank=st.integers(1, 3000), dr=st.integers(1, 1000),
       leaf_size=st.integers(2, 1024), solve_exact=st.booleans())
def test_estimate_is_monotone_in_n_and_max_rank(n, dn, d, max_rank, dr, leaf_size, solve_exact):
    # with a single leaf (n <= leaf_size) the whole matrix is one dense block, and the first
    # split really does shrink it (two half-size leaves): monotone from two leaves on
    assume(n > leaf_size)
    kw = dict(leaf_size=leaf_size, solve_exact=solve_exact)
    e = estimate_memory(n, d, max_rank=max_rank, **kw)
    assert all(isinstance(e[k], int) and e[k] >= 0 for k in _KEYS)
    assert e["peak"] == max(e["phases"].values()) and e["peak_phase"] in e["phases"]
    assert e["peak_newton"] >= e["peak"] >= e["points"] + e["hss"]
    for bigger in (estimate_memory(n + dn, d, max_rank=max_rank, **kw),
                   estimate_memory(n, d, max_rank=max_rank + dr, **kw)):
        for key in ("hss", "factor", "peak"):
            assert bigger[key] >= e[key], key
    if solve_exact:
        q = min(n, 16000)
        assert e["exact_block"] == 8 * q * q and e["phases"]["exact"] >= e["exact_block"]


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="n and d"):
        estimate_memory(0, 3)
    with pytest.raises(ValueError, match="max_rank"):
        estimate_memory(100, 3, max_rank=0)


@pytest.mark.shared_data
@pytest.mark.skipif(not GEN_GMM.exists(), reason="shared gmm8 generator not present")
def test_estimate_within_1_5x_of_the_measured_peak_of_compression_and_factor():
    """gmm8, n = 3000, the HSSSVC options (rel_tol 1e-3, abs_tol 1e-5, max_rank 500): the
    peak resident memory that compression and one ULV factor add, measured in a fresh process
    (VmHWM reset after the data are made), against the estimate's factorization phase."""
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(GEN_GMM.parent)!r})
        from gen_gmm import gmm8
        from hsskern import kernel_operator
        from hsskern.hss import HSSOptions, compress

        def status(key):
            with open("/proc/self/status") as f:
                return [int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":")][0]

        K = kernel_operator(gmm8(3000)[0], h=1.0)
        base = status("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        H = compress(K, HSSOptions(rel_tol=1e-3, abs_tol=1e-5, max_rank=500, random_state=0))
        F = H.factor(100.0)
        print(json.dumps({{"peak": status("VmHWM") - base, "hss": H.memory_bytes(),
                          "factor": F.memory_bytes()}}))
    """)
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("needs Linux /proc to reset the peak")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    e = estimate_memory(3000, 8, max_rank=500)
    assert got["hss"] <= e["hss"] <= 1.5 * got["hss"]
    assert got["factor"] <= e["factor"] <= 1.5 * got["factor"]
    est = e["phases"]["factorization"]
    assert got["peak"] / 1.5 <= est <= 1.5 * got["peak"], (est, got)


def test_a_c_path_keeps_at_most_two_factors_alive(monkeypatch):
    """Residual balancing refactors K + beta I during the path: the old factor must be gone
    once the new one is built (the estimate's ADMM phase counts two), also across the C values
    of a path and the ADMM's restore point. Counted with weak references at every build."""
    import weakref

    import numpy as np

    from hsskern.hss import HSSMatrix, HSSOptions
    from hsskern.kernels import make_kernel
    from hsskern.solvers import hss_svm_path, hss_svr_path, prepare_hss

    alive, most, builds = [], [0], []
    build = HSSMatrix.factor

    def counted(self, beta, **kw):
        builds.append(beta)
        alive[:] = [r for r in alive if r() is not None]
        most[0] = max(most[0], len(alive) + 1)  # the ones held, and this one
        f = build(self, beta, **kw)
        alive.append(weakref.ref(f))
        return f

    monkeypatch.setattr(HSSMatrix, "factor", counted)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=600) > 0, 1.0, -1.0)
    # a shift far from the balanced one: the ADMM rebalances beta at every C
    problem = prepare_hss(X, make_kernel("gaussian", h=1.0), beta=1e-4,
                          hss_options=HSSOptions(rel_tol=1e-6, leaf_size=64, random_state=0))
    sols = hss_svm_path(problem, y[:, None], [0.1, 1.0, 10.0, 100.0],
                        options=HSSSVCOptions(solve_exact=False, admm_max_iter=60), warn=False)
    assert len(builds) >= 3, builds  # the first factor and at least two refactors
    assert most[0] <= 2
    assert problem.factor.beta == sols[-1].info["beta"]  # the path's last factor is the problem's
    # the SVR path on the same kind of problem: its ADMM balances its shift the same way
    builds.clear()
    problem = prepare_hss(X, make_kernel("gaussian", h=1.0), beta=1e-4,
                          hss_options=HSSOptions(rel_tol=1e-6, leaf_size=64, random_state=0))
    hss_svr_path(problem, X[:, 0] + 0.1 * rng.normal(size=600), [0.1, 1.0, 10.0, 100.0],
                 epsilon=0.1, options=HSSSVROptions(solve_exact=False, admm_max_iter=60),
                 warn=False)
    assert len(builds) >= 3, builds
    assert most[0] <= 2
