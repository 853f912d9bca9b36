"""The exact engines behind one interface (hsskern.solvers.engines.interface): a problem as data and
``solve(problem, C, start)``, for the block decomposition and the cached SMO alike."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from hsskern.kernels import kernel_operator, make_kernel
from hsskern.options import DecompositionOptions, SMOOptions
from hsskern.solvers.engines.cached_smo import solve_dual
from hsskern.solvers.engines.decomposition import Decomposition, continuation_start
from hsskern.solvers.engines.interface import (BlockEngine, CachedEngine, DualProblem, DualStart,
                                               shared_blocks)
from hsskern.solvers.paths.svr_path import svr_variables
from svm_reference import gap_tol


def _problem(seed, n=120, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.0))
def test_both_engines_solve_one_problem_to_svcs_svm(seed, logC):
    X, y = _problem(seed)
    C, tol = 10.0 ** logC, 1e-8
    K = kernel_operator(X, "gaussian", gamma=0.5)
    problem = DualProblem(K, y)
    ref = SVC(C=C, gamma=0.5, tol=tol).fit(X, y)
    Kd = K.to_dense()
    for engine in (BlockEngine(), CachedEngine(SMOOptions(tol=tol))):
        r = engine.solve(problem, C, tol=tol)
        assert r.converged
        np.testing.assert_allclose(Kd @ r.dual_coef, ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(tol, C, np.ones(y.size)))


def test_a_path_reads_start_from_the_last_solution_then_solve():
    # the C loop of every path: the last exact solution scaled is the next start; the block
    # engine keeps one block buffer for all of them
    X, y = _problem(3)
    K = kernel_operator(X, "gaussian", gamma=0.5)
    problem, engine = DualProblem(K, y), BlockEngine(DecompositionOptions(max_ws=20))
    prev, buffers = None, set()
    for C in (0.1, 1.0, 10.0):
        start = None if prev is None else DualStart(*continuation_start(prev[1], C / prev[0],
                                                                        ray=False)[1:])
        r = engine.solve(problem, C, start, tol=1e-6)
        cold = Decomposition(K, y, C, options=engine.options).solve(tol=1e-6)
        assert r.converged and abs(r.gap) < 1e-6
        np.testing.assert_allclose(K.to_dense() @ r.dual_coef, K.to_dense() @ cold.dual_coef,
                                   atol=gap_tol(1e-6, C, np.ones(y.size)))
        buffers.add(id(engine.workspace))
        prev = (C, r)
    assert len(buffers) == 1 and engine.workspace


def test_the_block_engine_is_the_decomposition_bit_for_bit_on_the_svrs_dual():
    X, _ = _problem(5, n=80)
    t = np.sin(X[:, 0])
    yv, p, index = svr_variables(t, 0.1)
    K = kernel_operator(X, "gaussian", gamma=0.5)
    options = DecompositionOptions(max_ws=16, max_chunk=16)
    a = BlockEngine(options).solve(DualProblem(K, yv, p=p, index=index), 3.0)
    b = Decomposition(K, yv, 3.0, p=p, index=index, options=options).solve()
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.rounds == b.rounds


def test_the_cached_engines_nu_mode_is_solver_nu():
    # nu-SVC's dual (LIBSVM's Solver_NU): p = 0, e^T alpha per label fixed by the start
    X, y = _problem(7)
    K = kernel_operator(X, "gaussian", gamma=0.5)
    nu, n = 0.4, y.size
    alpha = np.zeros(n)
    for label in (1.0, -1.0):  # LIBSVM's start: nu n / 2 of each label's first points at 1
        idx = np.flatnonzero(y == label)[:int(nu * n / 2)]
        alpha[idx] = 1.0
    opts = SMOOptions(tol=1e-6)
    via = CachedEngine(opts).solve(DualProblem(K, y, p=np.zeros(n), nu=True), 1.0,
                                   DualStart(alpha))
    direct = solve_dual(X, make_kernel("gaussian", gamma=0.5), y, 1.0, np.zeros(n), alpha,
                        nu=True, options=opts)
    np.testing.assert_array_equal(via.alpha, direct.alpha)
    assert via.rho == direct.rho and via.r == direct.r and via.converged
    with pytest.raises(ValueError, match="cached engine"):
        BlockEngine().solve(DualProblem(K, y, nu=True), 1.0)


def test_engines_made_inside_shared_blocks_keep_their_block_in_the_threads_workspace():
    X, y = make_classification(300, 6, random_state=0)
    y = np.where(y == 1, 1.0, -1.0)
    problem = DualProblem(kernel_operator(X, "gaussian", gamma=0.1), y)
    ws = {}
    with shared_blocks(ws):
        first = BlockEngine()
        first.solve(problem, 1.0)
        with shared_blocks({}) as inner:
            assert BlockEngine().workspace is inner  # the innermost one
        second = BlockEngine()
    assert first.workspace is ws and second.workspace is ws and "block" in ws
    buffer = ws["block"]
    again = second.solve(problem, 1.0)  # the next problem pages in no buffer of its own
    assert ws["block"] is buffer
    np.testing.assert_allclose(again.alpha, BlockEngine().solve(problem, 1.0).alpha, atol=1e-12)
    assert BlockEngine().workspace is not ws  # outside: each engine its own
