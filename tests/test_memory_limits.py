"""Fits and predictions under an address-space limit (ulimit -v, a container's cap): whatever
needs more than the limit ends in a Python MemoryError (or MemoryBudgetError, a subclass),
never a signal; what is matrix-free fits under it.

Each case runs in its own child, which imports everything, starts its threads (OpenMP's pool,
each thread's stack and malloc arena count towards the limit), then caps RLIMIT_AS at its own
address space plus _HEADROOM and runs the case. The children run side by side.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="RLIMIT_AS and /proc/self/status")]

_REPO = Path(__file__).resolve().parents[1]
_HEADROOM = 256 * 2**20

_PRELUDE = f"""
import resource
import numpy as np
from hsskern import (ExactSVC, HSSKernelRidge, HSSSVC, NystromSVC, kernel_operator)

def address_space():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))

# start the thread pools first: their stacks and arenas are part of the baseline
K = kernel_operator(np.random.default_rng(0).normal(size=(300, 20)), "gaussian", h=4.0)
K @ np.ones((300, 2)), K.submatrix(np.arange(300), np.arange(300))
kernel_operator(K.points[:, :3], "laplacian", h=1.0) @ np.ones(300)
limit = address_space() + {_HEADROOM}
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
rng = np.random.default_rng(0)
"""

# name -> (code run under the limit, whether it must fit: else it needs more than the limit)
_CASES = {
    # the compiled evaluators' scratch: d x len(I) doubles (2.2 GB) gathered for one block
    "block scratch, direct sums": (
        "K = kernel_operator(rng.normal(size=(300, 1000)), 'laplacian', h=30.0)\n"
        "K.submatrix(np.zeros(300000, dtype=np.intp), [0])", False),
    "block scratch, dgemm route": (
        "K = kernel_operator(rng.normal(size=(300, 1000)), 'gaussian', h=30.0)\n"
        "K.submatrix(np.zeros(300000, dtype=np.intp), [0])", False),
    # every product's per-thread tile (1 MB, malloc'ed inside the parallel region) when 600 KB
    # of address space are left: each raises, none writes through NULL
    "tiles at the edge of the limit": (
        "X = rng.normal(size=(4096, 13))\n"
        "ops = [kernel_operator(X, 'laplacian', h=4.0).cross(X[:64]),\n"
        "       kernel_operator(X, 'laplacian', h=4.0),\n"
        "       kernel_operator(X, 'gaussian', h=4.0).cross(X[:64]),\n"
        "       kernel_operator(X, 'gaussian', h=4.0)]\n"
        "v = np.ones(4096)\n"
        "for K in ops:\n"
        "    K @ v\n"
        "reserve = np.empty(600 * 1024, np.uint8)\n"
        "ballast, step = [], 2**24\n"
        "while step >= 4096:\n"
        "    try:\n"
        "        ballast.append(np.empty(step, np.uint8))\n"
        "    except MemoryError:\n"
        "        step //= 2\n"
        "errors = []\n"
        "for K in ops:\n"
        "    del reserve\n"
        "    try:\n"
        "        K @ v\n"
        "    except MemoryError as e:\n"
        "        errors.append(str(e))\n"
        "    reserve = np.empty(600 * 1024, np.uint8)\n"
        "assert len(errors) == 4 and all('tile' in e for e in errors), errors", True),
    # 3,000,000 points: the copies of the points a stage holds and the decomposition's
    # vectors pass the limit (at 20,000 the cached engine needs no stored kernel and fits)
    "ExactSVC.fit": (
        "X = rng.normal(size=(3000000, 3))\n"
        "ExactSVC(h=1.0).fit(X, X[:, 0] > 0)", False),
    # 600,000 points on the HSS route: the neighbour lists alone are 600,000 x 65 x 8 bytes,
    # refused by the budget (which reads the limit) before any work. At SVC's defaults the
    # route is the matrix-free decomposition, which ExactSVC.fit's case covers
    "HSSSVC.fit": (
        "X = rng.normal(size=(600000, 3))\n"
        "from hsskern import HSSSVCOptions\n"
        "HSSSVC(h=1.0, options=HSSSVCOptions(start='admm')).fit(X, X[:, 0] > 0)", False),
    "HSSKernelRidge.fit": (
        "X = rng.normal(size=(600000, 3))\n"
        "HSSKernelRidge(h=1.0).fit(X, X[:, 0])", False),
    # K(Z, Z) of 8,000 landmarks and its eigendecomposition
    "NystromSVC.fit": (
        "X = rng.normal(size=(20000, 3))\n"
        "NystromSVC(n_components=8000, h=1.0).fit(X, X[:, 0] > 0)", False),
    # an output of 200,000 x 300 doubles (458 MB)
    "kernel cross product": (
        "K = kernel_operator(rng.normal(size=(1000, 3)), 'gaussian', h=1.0)\n"
        "K.cross(rng.normal(size=(200000, 3))) @ rng.normal(size=(1000, 300))", False),
    # float32 test points that fit, their float64 copy that does not
    "HSSSVC.predict": (
        "X = rng.normal(size=(2000, 1))\n"
        "m = HSSSVC(h=1.0).fit(X, X[:, 0] > 0)\n"
        "m.predict(np.ones((30000000, 1), dtype=np.float32))", False),
    # matrix-free prediction: 400,000 test points against the support vectors would be
    # more than twice the headroom as one kernel block; blocked it is the points and the
    # decision values
    "HSSSVC.predict, blocked": (
        "X = rng.normal(size=(3000, 2))\n"
        "m = HSSSVC(h=0.3, C=10.0).fit(X, X[:, 0] * X[:, 1] > 0)\n"
        f"assert 8 * 400000 * len(m.support_) > 2 * {_HEADROOM}, len(m.support_)\n"
        "m.decision_function(rng.normal(size=(400000, 2)))", True),
    "HSSKernelRidge.predict, blocked": (
        "X = rng.normal(size=(3000, 2))\n"
        "m = HSSKernelRidge(h=0.3).fit(X, np.sin(3 * X[:, 0]))\n"
        "m.predict(rng.normal(size=(400000, 2)))", True),
}


def _run_all():
    # glibc: a fixed mmap threshold, so a freed tile does not move the next one to the heap,
    # and one malloc arena: a thread's own arena is address space reserved before the limit,
    # from which its tile could still be carved
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_="65536", MALLOC_ARENA_MAX="1",
               PYTHONPATH=os.pathsep.join(
                   [str(_REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    procs = {name: subprocess.Popen([sys.executable, "-c", _PRELUDE + code + "\nprint('ok')"],
                                    cwd=_REPO, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, (code, _) in _CASES.items()}
    out = {}
    for name, p in procs.items():
        try:
            stdout, stderr = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        out[name] = (p.returncode, stdout, stderr)
    return out


@pytest.fixture(scope="module")
def results():
    return _run_all()


@pytest.mark.parametrize("case", list(_CASES))
def test_a_memory_limit_gives_memory_error_never_a_signal(results, case):
    code, fits = _CASES[case]
    rc, stdout, stderr = results[case]
    assert rc is not None and rc >= 0, f"{case}: killed by signal {-rc}\n{stderr[-3000:]}"
    if fits:
        assert rc == 0 and stdout.strip() == "ok", f"{case}: rc={rc}\n{stderr[-3000:]}"
        return
    assert rc == 1, f"{case}: rc={rc}\n{stderr[-3000:]}"
    last = stderr.strip().splitlines()[-1]
    assert last.split(":")[0].rsplit(".", 1)[-1] in (
        "MemoryError", "MemoryBudgetError", "_ArrayMemoryError"), f"{case}:\n{stderr[-3000:]}"
