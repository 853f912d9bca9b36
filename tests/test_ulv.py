"""The compiled ULV factor/solve against dense linear algebra and its numpy reference, on HSS
matrices built directly from random generators, so tree shapes the compressor rarely makes
are covered too: a lone leaf, rank-0 nodes, full-rank nodes (nothing eliminated), deep
unbalanced trees."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hsskern import NotPositiveDefiniteError
from hsskern.cluster.tree import ClusterTree
from hsskern.hss import HSSMatrix


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # tiny blocks: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


def _random_tree(rng, n, max_depth, p_split, min_leaf):
    """Breadth-first numbered binary tree over n points with random, uneven splits."""
    lo, hi, level, parent = [0], [n], [0], [-1]
    left, right = [-1], [-1]
    t = 0
    while t < len(lo):
        size = hi[t] - lo[t]
        if level[t] < max_depth and size >= 2 * min_leaf and rng.random() < p_split:
            cut = lo[t] + int(rng.integers(min_leaf, size - min_leaf + 1))
            for a, b in ((lo[t], cut), (cut, hi[t])):
                lo.append(a), hi.append(b), level.append(level[t] + 1), parent.append(t)
                left.append(-1), right.append(-1)
            left[t], right[t] = len(lo) - 2, len(lo) - 1
        t += 1
    arr = [np.array(x, dtype=np.intp) for x in (lo, hi, left, right, parent, level)]
    return ClusterTree(rng.permutation(n).astype(np.intp), *arr[:2], *arr[2:])


def _random_hss(rng, tree, rank_mode):
    """Random symmetric HSS generators on ``tree``; rank_mode picks each node's rank as
    'low' (a few), 'zero' (often 0) or 'full' (often all of the node's rows)."""
    nn = tree.n_nodes
    D, U, B, J = [None] * nn, [None] * nn, [None] * nn, [None] * nn
    rank = np.zeros(nn, dtype=int)
    for t in range(nn - 1, 0, -1):
        a = tree.left[t]
        rows = tree.hi[t] - tree.lo[t] if a < 0 else rank[a] + rank[tree.right[t]]
        if rank_mode == "zero" and rng.random() < 0.5:
            rank[t] = 0
        elif rank_mode == "full" and rng.random() < 0.5:
            rank[t] = rows
        else:
            rank[t] = min(rows, int(rng.integers(0, 6)))
        U[t] = rng.standard_normal((rows, rank[t]))
        J[t] = np.arange(rank[t])
    for t in range(nn):
        if tree.left[t] < 0:
            m = tree.hi[t] - tree.lo[t]
            G = rng.standard_normal((m, m))
            D[t] = (G + G.T) / 2
        else:
            B[t] = rng.standard_normal((rank[tree.left[t]], rank[tree.right[t]]))
    return HSSMatrix(tree, D, U, B, J, np.zeros(nn), None, {})


@st.composite
def hss_cases(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 160))
    tree = _random_tree(rng, n, max_depth=draw(st.integers(0, 9)),
                        p_split=draw(st.sampled_from([0.5, 0.8, 1.0])),
                        min_leaf=draw(st.integers(1, 12)))
    H = _random_hss(rng, tree, draw(st.sampled_from(["low", "zero", "full"])))
    return H, rng


@settings(max_examples=40)
@given(case=hss_cases(), log_shift=st.floats(-4, 2), nrhs=st.sampled_from([None, 1, 3]))
def test_compiled_solve_matches_dense_and_reference(case, log_shift, nrhs):
    H, rng = case
    n = H.shape[0]
    Hd = H.to_dense()
    lam = np.linalg.eigvalsh(Hd)
    # a shift that makes H + beta I definite with condition number up to ~1e4 * ||H||
    beta = max(0.0, -lam[0]) + 10.0 ** log_shift * max(1.0, np.abs(lam).max())
    F = H.factor(beta)
    A = Hd + beta * np.eye(n)
    b = rng.standard_normal(n if nrhs is None else (n, nrhs))
    x = F.solve(b)
    assert x.shape == b.shape
    scale = np.linalg.norm(b) + np.linalg.norm(A, 2) * np.linalg.norm(x)
    assert np.linalg.norm(A @ x - b) <= 1e-12 * scale
    np.testing.assert_allclose(x, F._solve_reference(b), rtol=0,
                               atol=1e-12 * np.abs(x).max())
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=0,
                               atol=1e-9 * np.linalg.cond(A) * np.abs(x).max() + 1e-300)
    sign, ld = np.linalg.slogdet(A)
    assert sign == 1
    assert abs(F.logdet() - ld) <= 1e-10 * max(abs(ld), 1.0) + 1e-10 * n


@pytest.mark.parametrize("seed", range(4))
def test_solve_is_backward_stable_when_ill_conditioned(seed):
    # The solve applies each node's L^{-T} explicitly (folded into one block M); L's
    # condition number is at most sqrt(cond(H + beta I)), so even at cond ~1e10 the residual
    # must stay at the level of a backward stable solve.
    rng = np.random.default_rng(seed)
    H = _random_hss(rng, _random_tree(rng, 150, 4, 1.0, 6), "low")
    Hd = H.to_dense()
    lam = np.linalg.eigvalsh(Hd)
    beta = -lam[0] + 1e-10 * np.abs(lam).max()
    F = H.factor(beta)
    A = Hd + beta * np.eye(150)
    b = rng.standard_normal((150, 2))
    x = F.solve(b)
    scale = np.linalg.norm(b) + np.linalg.norm(A, 2) * np.linalg.norm(x)
    assert np.linalg.norm(A @ x - b) <= 1e-13 * scale


def test_lone_leaf_is_a_dense_cholesky():
    rng = np.random.default_rng(0)
    H = _random_hss(rng, _random_tree(rng, 25, 0, 1.0, 1), "low")
    assert H.tree.n_nodes == 1
    F = H.factor(30.0)
    A = H.to_dense() + 30.0 * np.eye(25)
    b = rng.standard_normal((25, 2))
    np.testing.assert_allclose(A @ F.solve(b), b, atol=1e-12)
    assert F.logdet() == pytest.approx(np.linalg.slogdet(A)[1], rel=1e-12)


def test_all_ranks_zero_is_block_diagonal():
    rng = np.random.default_rng(1)
    tree = _random_tree(rng, 90, 3, 1.0, 5)
    H = _random_hss(rng, tree, "zero")
    for t in range(1, tree.n_nodes):  # force every rank to 0: H = blockdiag(D_leaf)
        rows = H.U[t].shape[0]
        H.U[t] = np.zeros((0 if tree.left[t] >= 0 else rows, 0))
    for t in range(tree.n_nodes):
        if tree.left[t] >= 0:
            H.B[t] = np.zeros((0, 0))
    Hd = H.to_dense()
    beta = 1.0 - min(0.0, np.linalg.eigvalsh(Hd)[0])
    F = H.factor(beta)
    b = rng.standard_normal(90)
    np.testing.assert_allclose((Hd + beta * np.eye(90)) @ F.solve(b), b, atol=1e-11)


def test_solve_accepts_any_layout_and_empty_block():
    rng = np.random.default_rng(2)
    H = _random_hss(rng, _random_tree(rng, 120, 4, 1.0, 8), "low")
    beta = 1.0 - min(0.0, np.linalg.eigvalsh(H.to_dense())[0])
    F = H.factor(beta)
    B = np.asfortranarray(rng.standard_normal((120, 5)))
    X = F.solve(B)
    np.testing.assert_allclose(X[:, ::2], F.solve(B[:, ::2]), rtol=0, atol=1e-13)
    np.testing.assert_allclose(F.solve(B[:, 3]), X[:, 3], rtol=0, atol=1e-13)
    assert F.solve(np.empty((120, 0))).shape == (120, 0)
    assert F.solve(B.astype(np.float32)).dtype == np.float64


def test_pickle_round_trip():
    rng = np.random.default_rng(3)
    H = _random_hss(rng, _random_tree(rng, 80, 3, 1.0, 6), "low")
    beta = 1.0 - min(0.0, np.linalg.eigvalsh(H.to_dense())[0])
    F = H.factor(beta)
    G = pickle.loads(pickle.dumps(F))
    b = rng.standard_normal(80)
    np.testing.assert_array_equal(G.solve(b), F.solve(b))
    assert G.logdet() == F.logdet() and G.memory_bytes() == F.memory_bytes()


def test_indefinite_reports_a_working_beta():
    rng = np.random.default_rng(4)
    H = _random_hss(rng, _random_tree(rng, 100, 3, 1.0, 6), "low")
    lam = np.linalg.eigvalsh(H.to_dense())[0]
    assert lam < -1e-3
    with pytest.raises(NotPositiveDefiniteError) as info:
        H.factor(-lam / 2)
    assert info.value.suggested_beta > -lam
    H.factor(info.value.suggested_beta)


@settings(max_examples=30)
@given(case=hss_cases(), log_shift=st.floats(-3, 2))
def test_inverse_diagonal_matches_dense_inverse(case, log_shift):
    # every tree shape of the generator: lone leaf, rank-0 and full-rank nodes, deep trees
    H, _ = case
    n = H.shape[0]
    Hd = H.to_dense()
    lam = np.linalg.eigvalsh(Hd)
    beta = max(0.0, -lam[0]) + 10.0 ** log_shift * max(1.0, np.abs(lam).max())
    F = H.factor(beta)
    Ainv = np.linalg.inv(Hd + beta * np.eye(n))
    d = F.inverse_diagonal()
    assert d.shape == (n,)
    cond = np.linalg.cond(Hd + beta * np.eye(n))
    np.testing.assert_allclose(d, np.diag(Ainv), rtol=0,
                               atol=1e-12 * cond * np.abs(np.diag(Ainv)).max())
