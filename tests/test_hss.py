import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy.sparse.linalg import cg

from hsskern import NotPositiveDefiniteError, kernel_operator
from hsskern.cluster.tree import build_cluster_tree
from hsskern.testing import hard_clustered_points
from hsskern.hss import HSSOptions, compress

from strategies import point_sets

#: ||K - H||_F / ||K||_F <= C_TOL * max(rel_tol, abs_tol) with max_rank unbounded
C_TOL_HARD = 20  # clustered low-d regime below: worst measured 11.1 tol in 300 inputs
C_TOL = 10.0
UNBOUNDED = 10**6


def _relerr(A, B):
    return np.linalg.norm(A - B) / np.linalg.norm(B)


def _width(X, factor):
    spread = float(np.sqrt(np.mean(np.var(X, axis=0)) * X.shape[1])) or 1.0
    return spread * factor


@settings(max_examples=12)
@given(X=point_sets(n_min=50, n_max=700, d_max=30),
       tol=st.sampled_from([1e-2, 1e-4, 1e-6, 1e-8]),
       hfac=st.sampled_from([1e-3, 0.1, 0.3, 1.0, 1e3]),
       leaf=st.integers(16, 128), seed=st.integers(0, 2**31))
def test_ann_compression_error_bounded_by_tolerance(X, tol, hfac, leaf, seed):
    K = kernel_operator(X, "gaussian", h=_width(X, hfac))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # unbounded rank: no node may report failure
        H = compress(K, rel_tol=tol, abs_tol=tol, max_rank=UNBOUNDED, leaf_size=leaf,
                     random_state=seed)
    Kd, Hd = K.to_dense(), H.to_dense()
    assert _relerr(Hd, Kd) <= C_TOL * tol
    np.testing.assert_allclose(Hd, Hd.T, rtol=0, atol=1e-14 * np.abs(Hd).max())
    V = np.random.default_rng(seed).standard_normal((len(X), 3))
    np.testing.assert_allclose(H @ V, Hd @ V, rtol=1e-12, atol=1e-12 * np.abs(Hd @ V).max())


@settings(max_examples=10)
@given(X=point_sets(n_min=200, n_max=1200, d_min=1, d_max=3, clustered=True),
       tol=st.sampled_from([1e-4, 1e-6, 1e-8]), seed=st.integers(0, 2**31))
def test_ann_compression_bound_in_the_hard_regime(X, tol, seed):
    # Low-d clusters (often a quarter duplicates), h = 0.1 spread, leaves of 16: a node's
    # nearest outside points often sit in a far stratum of the tree, beyond every neighbour
    # list. Same C_TOL; bench/hss_property_explore.py measures the failure rate here
    # (1 of 300 over 10 tol after the far-strata probes, worst 11 tol; 5 of 200 before,
    # worst 160 tol). The stated constant here is therefore 20, not C_TOL.
    K = kernel_operator(X, "gaussian", h=_width(X, 0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        H = compress(K, rel_tol=tol, abs_tol=tol, max_rank=UNBOUNDED, leaf_size=16,
                     random_state=seed)
    assert _relerr(H.to_dense(), K.to_dense()) <= C_TOL_HARD * tol


@settings(max_examples=6)
@given(X=point_sets(n_min=50, n_max=400, d_max=10),
       tol=st.sampled_from([1e-2, 1e-4, 1e-6]), hfac=st.sampled_from([0.1, 0.5, 2.0]),
       seed=st.integers(0, 2**31))
def test_sketch_compression_meets_same_bound(X, tol, hfac, seed):
    K = kernel_operator(X, "gaussian", h=_width(X, hfac))
    H = compress(K, rel_tol=tol, abs_tol=tol, max_rank=UNBOUNDED, leaf_size=32,
                 method="sketch", random_state=seed)
    assert _relerr(H.to_dense(), K.to_dense()) <= C_TOL * tol


def test_laplacian_kernel_compresses_too():
    X = np.random.default_rng(0).normal(size=(600, 3))
    K = kernel_operator(X, "laplacian", h=1.0)
    H = compress(K, rel_tol=1e-6, abs_tol=1e-6, max_rank=UNBOUNDED, leaf_size=64,
                 random_state=0)
    assert _relerr(H.to_dense(), K.to_dense()) <= C_TOL * 1e-6


@pytest.mark.parametrize("n", [1, 2, 37])
def test_fewer_points_than_a_leaf_is_one_exact_leaf(n):
    X = np.random.default_rng(n).normal(size=(n, 3))
    K = kernel_operator(X, "gaussian")
    H = compress(K, leaf_size=64)
    assert H.tree.n_nodes == 1
    # the leaf is K[I, I] in tree order with its upper triangle mirrored: exact up to the
    # last bit of entries whose (i, j) and (j, i) evaluations round differently
    np.testing.assert_allclose(H.to_dense(), K.to_dense(), rtol=4e-16, atol=0)
    F = H.factor(0.5)
    b = np.arange(n, dtype=float)
    np.testing.assert_allclose(K.to_dense() @ F.solve(b) + 0.5 * F.solve(b), b, atol=1e-12)


def test_identical_points_give_rank_one_blocks():
    X = np.ones((300, 4))
    K = kernel_operator(X, "gaussian")
    H = compress(K, rel_tol=1e-10, abs_tol=1e-12, leaf_size=32, random_state=0)
    assert H.max_rank == 1
    np.testing.assert_allclose(H.to_dense(), np.ones((300, 300)), atol=1e-12)
    assert H.tree.depth > 1  # duplicate points still split (by halving the range)


def test_one_dimensional_and_one_huge_cluster():
    rng = np.random.default_rng(1)
    for X in (rng.uniform(size=(800, 1)), rng.normal(size=(800, 6)) * 1e-3):
        K = kernel_operator(X, "gaussian", h=_width(X, 0.3))
        H = compress(K, rel_tol=1e-6, abs_tol=1e-6, max_rank=UNBOUNDED, leaf_size=50,
                     random_state=1)
        assert _relerr(H.to_dense(), K.to_dense()) <= C_TOL * 1e-6


def test_max_rank_cap_warns_once_and_records_error():
    X = np.random.default_rng(2).normal(size=(800, 10))
    K = kernel_operator(X, "gaussian", h=3.0)
    with pytest.warns(UserWarning, match="max_rank=5") as rec:
        H = compress(K, rel_tol=1e-8, abs_tol=1e-8, max_rank=5, leaf_size=64, random_state=0)
    assert len(rec) == 1
    assert H.max_rank == 5
    assert H.stats()["max_node_error"] > 1e-8


def test_tree_is_a_partition_with_flat_arrays():
    X = np.random.default_rng(3).normal(size=(1000, 5))
    for split in ("2means", "pca", "kd"):
        tree = build_cluster_tree(X, leaf_size=40, split=split, random_state=0)
        assert np.array_equal(np.sort(tree.perm), np.arange(1000))
        for t in range(tree.n_nodes):
            if tree.left[t] >= 0:
                a, b = tree.left[t], tree.right[t]
                assert tree.lo[a] == tree.lo[t] and tree.hi[b] == tree.hi[t]
                assert tree.hi[a] == tree.lo[b] and a > t and b > t
                assert tree.parent[a] == t == tree.parent[b]
            else:
                assert 0 < tree.hi[t] - tree.lo[t] <= 40


def test_user_points_not_reordered_and_reproducible():
    X = np.random.default_rng(4).normal(size=(500, 3))
    X0 = X.copy()
    K = kernel_operator(X, "gaussian")
    H1 = compress(K, leaf_size=32, random_state=7)
    H2 = compress(K, leaf_size=32, random_state=7)
    np.testing.assert_array_equal(X, X0)
    v = np.arange(500.0)
    np.testing.assert_array_equal(H1 @ v, H2 @ v)


def test_stats_and_memory_are_reported():
    X = np.random.default_rng(5).normal(size=(2000, 4))
    # the tolerances HSSOptions defaulted to before its defaults became the estimators'
    H = compress(kernel_operator(X, "gaussian"), rel_tol=1e-2, abs_tol=1e-3, max_rank=200,
                 leaf_size=64, random_state=0)
    s = H.stats()
    assert s["max_rank"] == max(s["ranks_per_level"]) > 0
    assert 0 < s["memory_bytes"] < 8 * 2000 * 2000 / 4  # far below the dense matrix
    assert set(s["timings"]) == {"tree", "neighbors", "compression"}


def test_options_validation():
    with pytest.raises(ValueError, match="leaf_size"):
        HSSOptions(leaf_size=1)
    with pytest.raises(ValueError, match="method"):
        HSSOptions(method="magic")
    with pytest.raises(ValueError, match="both be 0"):
        HSSOptions(rel_tol=0, abs_tol=0)


# -- ULV ------------------------------------------------------------------------------------

def _random_hss(seed, n, tol):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * rng.choice([0.3, 1.0, 3.0])
    K = kernel_operator(X, "gaussian", h=1.0)
    return compress(K, rel_tol=tol, abs_tol=tol * 1e-2, max_rank=UNBOUNDED,
                    leaf_size=int(rng.integers(16, 100)), random_state=seed)


@settings(max_examples=15)
@given(seed=st.integers(0, 2**31), n=st.integers(20, 900),
       tol=st.sampled_from([1e-3, 1e-6, 1e-10]), beta_exp=st.floats(-6, 3),
       nrhs=st.sampled_from([None, 1, 4]))
@example(seed=0, n=545, tol=1e-6, beta_exp=-6.0, nrhs=None)
def test_ulv_solve_residual_and_logdet(seed, n, tol, beta_exp, nrhs):
    H = _random_hss(seed, n, tol)
    Hd = H.to_dense()
    norm = np.linalg.norm(Hd, 2)
    beta = 10.0 ** beta_exp if beta_exp > 0 else 10.0 ** beta_exp * norm
    lam_min = np.linalg.eigvalsh(Hd)[0]
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(n if nrhs is None else (n, nrhs))
    try:
        F = H.factor(beta)
    except NotPositiveDefiniteError as exc:
        # only allowed when H + beta I really is (numerically) indefinite
        assert lam_min + beta <= 1e-10 * norm
        assert exc.suggested_beta > -lam_min
        H.factor(exc.suggested_beta)  # and the suggestion works
        return
    x = F.solve(b)
    assert x.shape == b.shape
    resid = np.linalg.norm(H @ x + beta * x - b) / np.linalg.norm(b)
    # a backward-stable solve's relative residual is within a small multiple of u times
    # the condition number (seed 0, n 545, beta 1e-6 |H|: condition 1.05e6, 1.2e-10)
    cond = (norm + beta) / (lam_min + beta)
    assert resid <= max(1e-10, 10 * np.finfo(float).eps * cond)
    sign, ld = np.linalg.slogdet(Hd + beta * np.eye(n))
    assert sign == 1
    assert abs(F.logdet() - ld) <= 1e-8 * max(abs(ld), 1.0)


def test_ulv_refactor_reuses_compression_and_rejects_bad_beta():
    H = _random_hss(0, 500, 1e-6)
    F1, F2 = H.factor(1.0), H.factor(100.0)
    b = np.ones(500)
    assert not np.allclose(F1.solve(b), F2.solve(b))
    assert F1.memory_bytes() > 0
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="beta"):
            H.factor(bad)
    with pytest.raises(ValueError, match="shape"):
        F1.solve(np.ones(3))


def test_ulv_preconditions_cg_on_exact_kernel():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 4))
    K = kernel_operator(X, "gaussian", h=1.0)
    beta = 1e-2
    H = compress(K, rel_tol=1e-4, abs_tol=1e-6, max_rank=UNBOUNDED, leaf_size=128,
                 random_state=0)
    M = H.factor(beta).as_linear_operator()
    b = rng.standard_normal(2000)
    counts = {"pre": 0, "plain": 0}

    def counter(key):
        def cb(_):
            counts[key] += 1
        return cb
    x, info = cg(K.shifted(beta), b, M=M, rtol=1e-10, maxiter=200, callback=counter("pre"))
    assert info == 0 and counts["pre"] <= 15
    cg(K.shifted(beta), b, rtol=1e-10, maxiter=4 * counts["pre"], callback=counter("plain"))
    # without it, cg is still far from converged after 4x as many iterations
    assert counts["plain"] == 4 * counts["pre"]
    assert np.linalg.norm(K @ x + beta * x - b) <= 1e-9 * np.linalg.norm(b)


@pytest.mark.parametrize("seed", [10, 31, 132, 166, 171])
def test_medium_range_columns_are_not_missed(seed):
    # Clustered 3-d points, a quarter duplicates of one point (neighbour lists swamped),
    # h = 0.1 spread, small leaves, tight tolerance: with uniform random columns and
    # frequency-ranked neighbours these inputs ended 2.5e3 / 2.3e4 times over tol, because
    # sibling points just beyond every neighbour list were never sampled nor checked.
    # Seeds 132, 166, 171 (d = 1 / 3 / 1) ended 66 / 19 / 160 times over tol after that fix:
    # a node's nearest outside points lay in a far stratum (seen in bench/hss_property_explore.py);
    # the far-strata probes of _far_targets/_far_probes catch them.
    X, h = hard_clustered_points(seed)
    K = kernel_operator(X, "gaussian", h=h)
    H = compress(K, rel_tol=1e-8, abs_tol=1e-8, max_rank=UNBOUNDED, leaf_size=16,
                 random_state=seed)
    assert _relerr(H.to_dense(), K.to_dense()) <= C_TOL * 1e-8


@given(n=st.integers(1, 120), d=st.integers(1, 6), n_groups=st.integers(1, 6),
       per=st.integers(1, 5), dup=st.booleans(), seed=st.integers(0, 2**31))
def test_far_probes_are_the_points_nearest_the_box(n, d, n_groups, per, dup, seed):
    # the compiled probe choice equals its definition: per group, the unskipped points by
    # squared gap to the box, then squared distance to its centre, then input order (sums
    # over coordinates in order, as the compiled loop adds them)
    from hsskern.hss._compress_ops import nearest_to_box
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if dup:
        X[rng.integers(0, n, n // 2)] = X[0]  # ties in both keys
    lo = rng.normal(size=d) - rng.uniform(0, 1, d)
    hi = lo + rng.uniform(0, 2, d)
    cols = rng.integers(0, n, rng.integers(0, 3 * n))
    starts = np.sort(np.concatenate(([0, len(cols)], rng.integers(0, len(cols) + 1,
                                                                  n_groups - 1))))
    skip = (rng.random(n) < 0.3).astype(np.uint8)
    sel, grp = nearest_to_box(X, cols, starts, lo, hi, skip, per)
    want_sel, want_grp = [], []
    for g in range(n_groups):
        c = cols[starts[g]:starts[g + 1]]
        c = c[skip[c] == 0]
        gap = np.maximum(np.maximum(lo - X[c], X[c] - hi), 0.0)
        off = X[c] - 0.5 * (lo + hi)
        k1, k2 = np.zeros(len(c)), np.zeros(len(c))
        for j in range(d):
            k1 += gap[:, j] * gap[:, j]
            k2 += off[:, j] * off[:, j]
        order = np.lexsort((np.arange(len(c)), k2, k1))[:per]
        want_sel.extend(c[order])
        want_grp.extend([g] * len(order))
    np.testing.assert_array_equal(sel, want_sel)
    np.testing.assert_array_equal(grp, want_grp)


def _dense_from_generators(H):
    """H assembled from its definition (hss/matrix.py): leaf blocks D_t, and between sibling
    subtrees a, b the block Ubig_a B_t Ubig_b^T with Ubig the product of the nested bases."""
    from scipy.linalg import block_diag
    tree = H.tree
    left, right, lo, hi = tree.left, tree.right, tree.lo, tree.hi
    big = [None] * tree.n_nodes
    for t in range(tree.n_nodes - 1, 0, -1):
        big[t] = H.U[t] if left[t] < 0 else block_diag(big[left[t]], big[right[t]]) @ H.U[t]
    A = np.zeros((tree.n_points, tree.n_points))
    for t in range(tree.n_nodes):
        a, b = left[t], right[t]
        if a < 0:
            A[lo[t]:hi[t], lo[t]:hi[t]] = H.D[t]
        else:
            A[lo[a]:hi[a], lo[b]:hi[b]] = big[a] @ H.B[t] @ big[b].T
            A[lo[b]:hi[b], lo[a]:hi[a]] = A[lo[a]:hi[a], lo[b]:hi[b]].T
    out = np.empty_like(A)
    out[np.ix_(tree.perm, tree.perm)] = A  # tree order back to the user's
    return out


@settings(max_examples=25)
@given(X=point_sets(n_max=500, d_max=6), leaf=st.integers(4, 64),
       tol=st.sampled_from([1e-1, 1e-3, 1e-8]), wide=st.booleans(),
       nrhs=st.sampled_from([0, 1, 3]), seed=st.integers(0, 2**31))
def test_hss_product_equals_its_generators_assembled(X, leaf, tol, wide, nrhs, seed):
    # the compiled tree walk computes exactly the matrix the generators define, rank-0
    # nodes (abs_tol above every entry) and single-leaf trees included
    K = kernel_operator(X, "gaussian", h=_width(X, 3.0 if wide else 0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        H = compress(K, rel_tol=tol, abs_tol=tol, leaf_size=leaf, random_state=seed)
    A = _dense_from_generators(H)
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((len(X), nrhs))
    scale = np.abs(A).sum(axis=1).max() * max(np.abs(V).max(initial=0.0), 1.0)
    np.testing.assert_allclose(H @ V, A @ V, rtol=0, atol=1e-13 * scale)
    v = rng.standard_normal(len(X))
    np.testing.assert_allclose(H.matvec(v), A @ v, rtol=0,
                               atol=1e-13 * np.abs(A).sum(axis=1).max() * np.abs(v).max())
