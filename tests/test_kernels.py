import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from scipy.sparse.linalg import cg, eigsh

from hsskern import MemoryBudgetError, kernel_operator, make_kernel
from hsskern.kernels import KERNELS
from hsskern.kernels.operator import add_symmetric_rows
from hsskern.kernels.sparse_rows import SparseRowsKernelOperator, rows_operator
from hsskern.testing import check_kernel_operator, reference_kernel

from strategies import point_sets


def _kernel_kwargs(name, scale, draw_value):
    if name in ("gaussian", "laplacian"):
        return {"h": scale * draw_value}
    if name == "polynomial":
        return {"degree": 1 + int(draw_value * 3) % 4, "coef0": 1.0}
    return {"sigma": scale * draw_value}


@given(X=point_sets(n_max=300, d_max=20), name=st.sampled_from(KERNELS),
       width=st.floats(0.05, 20.0), seed=st.integers(0, 10**6))
def test_operator_matches_dense_reference(X, name, width, seed):
    scale = float(np.std(X)) or 1.0
    if name == "polynomial":
        X = X / (np.abs(X).max() or 1.0)  # keep (1 + x.y)^s from overflowing the comparison
    K = kernel_operator(X, name, **_kernel_kwargs(name, scale, width))
    dense = reference_kernel(K.kernel, X)
    check_kernel_operator(K, dense, rng=seed, rtol=1e-12)
    np.testing.assert_allclose(K.to_dense(), dense, rtol=1e-12, atol=1e-14)

    rng = np.random.default_rng(seed)
    Y = X[rng.integers(0, len(X), 17)] + rng.normal(size=(17, X.shape[1])) * scale * 0.1
    check_kernel_operator(K.cross(Y), reference_kernel(K.kernel, Y, X), rng=seed, rtol=1e-12)


@given(n=st.integers(1, 700), d=st.sampled_from([3, 15]), r=st.sampled_from([1, 4]),
       small=st.booleans(), seed=st.integers(0, 99))
def test_symmetric_product_computes_each_entry_once_and_equals_dense(n, d, r, small, seed):
    # K @ V from the upper half (each tile added to its rows and, transposed, to its columns;
    # d = 3 the direct sums, d = 15 the dgemm route), with many column tiles when ``small``;
    # the same bits on every call (threads sum fixed tiles); and the one-sided product where
    # the per-thread buffers would not fit
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    K = kernel_operator(X, "gaussian", h=0.5 * np.sqrt(d),
                        block_memory=16 * 1024 if small else 32 * 2**20)
    V = rng.normal(size=(n, r))
    ref = reference_kernel(K.kernel, X) @ V
    out = K @ V
    tol = 1e-13 * (np.abs(reference_kernel(K.kernel, X)) @ np.abs(V)).max()
    np.testing.assert_allclose(out, ref, rtol=0, atol=tol)
    np.testing.assert_array_equal(K @ V, out)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("hsskern.kernels.operator._SYM_MIN_BYTES", 0)
        one_sided = kernel_operator(X, "gaussian", h=0.5 * np.sqrt(d), block_memory=4096)
        np.testing.assert_allclose(one_sided @ V, ref, rtol=0, atol=tol)


@given(n=st.integers(1, 300), m=st.integers(1, 40), d=st.integers(1, 12),
       name=st.sampled_from(["gaussian", "laplacian"]), spread=st.floats(0.3, 40.0),
       seed=st.integers(0, 10**6))
def test_fused_product_of_one_vector_equals_dense(n, m, d, name, spread, seed):
    # one right-hand side, d <= 12: the fused loop (four rows a pass, features padded to 4, 8
    # or 12, the clamped exp where a wide spread lets entries underflow), symmetric and cross
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * spread
    K = kernel_operator(X, name, h=np.sqrt(d))
    v = rng.normal(size=n)
    dense = reference_kernel(K.kernel, X)
    out = K @ v
    np.testing.assert_allclose(out, dense @ v, rtol=0,
                               atol=1e-13 * (np.abs(dense) @ np.abs(v)).max() + 1e-300)
    np.testing.assert_array_equal(K @ v, out)
    Y = rng.normal(size=(m, d)) * spread
    cross = reference_kernel(K.kernel, Y, X)
    np.testing.assert_allclose(K.cross(Y) @ v, cross @ v, rtol=0,
                               atol=1e-13 * (np.abs(cross) @ np.abs(v)).max() + 1e-300)


@given(n=st.integers(1, 300), d=st.integers(1, 12), name=st.sampled_from(["gaussian", "laplacian"]),
       spread=st.floats(0.3, 40.0), seed=st.integers(0, 10**6))
def test_single_precision_product_is_the_product_to_float32_rounding(n, d, name, spread, seed):
    # float32 points, entries and sums (the clamp below exp(-80) where the spread allows an
    # underflow): within a few float32 roundings of |K| |v|, and the same on every call
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * spread
    K = kernel_operator(X, name, h=np.sqrt(d))
    v = rng.normal(size=n)
    dense = reference_kernel(K.kernel, X)
    S = K.single_precision()
    out = S @ v
    assert out.dtype == np.float64 and out.shape == (n,)
    np.testing.assert_allclose(out, dense @ v, rtol=0,
                               atol=2e-5 * (np.abs(dense) @ np.abs(v)).max() + 1e-30)
    np.testing.assert_array_equal(S @ v, out)


def test_single_precision_product_exists_only_for_the_fused_kernels():
    X = np.random.default_rng(0).normal(size=(50, 13))
    assert kernel_operator(X, "gaussian", h=3.0).single_precision() is None  # d > 12
    assert kernel_operator(X[:, :4], "polynomial", degree=2).single_precision() is None
    K = kernel_operator(X[:, :4], "laplacian", h=1.0)
    assert K.single_precision() is not None and K.stored().single_precision() is None


@given(X=point_sets(n_max=200, d_max=8), beta=st.floats(0.0, 1e3), seed=st.integers(0, 99))
def test_shifted_adds_beta_identity_exactly(X, beta, seed):
    K = kernel_operator(X, "gaussian", h=float(np.std(X)) or 1.0)
    S = K.shifted(beta)
    v = np.random.default_rng(seed).standard_normal(len(X))
    np.testing.assert_array_equal(S.matvec(v), K.matvec(v) + beta * v)
    np.testing.assert_array_equal(S.diag(), K.diag() + beta)
    I = np.arange(len(X))
    np.testing.assert_array_equal(S.submatrix(I, I), K.submatrix(I, I) + beta * np.eye(len(X)))
    assert S.shifted(1.0).beta == pytest.approx(beta + 1.0)


def test_blocked_path_runs_under_cg_and_eigsh():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    K = kernel_operator(X, "gaussian", h=1.5, block_memory=64 * 1024)  # many column tiles
    assert K._col_tile < len(X)
    dense = reference_kernel(K.kernel, X)
    b = rng.standard_normal(600)
    x, info = cg(K.shifted(1.0), b, rtol=1e-10, maxiter=500)
    assert info == 0
    np.testing.assert_allclose((dense + np.eye(600)) @ x, b, rtol=0, atol=1e-8 * np.linalg.norm(b))
    vals = eigsh(K, k=4, return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(vals), np.sort(np.linalg.eigvalsh(dense))[-4:], rtol=1e-8)


def test_gamma_spelling_maps_to_h():
    assert make_kernel("gaussian", gamma=0.5).h == pytest.approx(1.0)
    assert make_kernel("gaussian", h=2.0).gamma == pytest.approx(1 / 8)
    assert make_kernel("laplacian", gamma=4.0).h == pytest.approx(0.25)
    X = np.random.default_rng(1).normal(size=(40, 3))
    from sklearn.metrics.pairwise import rbf_kernel
    np.testing.assert_allclose(kernel_operator(X, gamma=0.3).to_dense(),
                               rbf_kernel(X, gamma=0.3), rtol=1e-12)


def test_compact_kernel_support_and_default_power():
    k = make_kernel("compact_gaussian", sigma=0.5, n_features=5)
    assert k.power == 3 and k.support_radius == pytest.approx(1.5)
    X = np.array([[0.0], [1.49], [1.51]])
    K = kernel_operator(X, k)
    row = K.submatrix([0], [0, 1, 2])[0]
    assert row[1] > 0 and row[2] == 0.0
    with pytest.warns(UserWarning, match="Askey"):
        make_kernel("compact_gaussian", sigma=1.0, power=1, n_features=6)


def test_pickle_roundtrip_and_immutability():
    X = np.random.default_rng(2).normal(size=(50, 3))
    K = kernel_operator(X, "laplacian", h=0.7)
    K2 = pickle.loads(pickle.dumps(K))
    v = np.arange(50.0)
    np.testing.assert_array_equal(K @ v, K2 @ v)
    with pytest.raises(ValueError):
        K.points[0, 0] = 1.0
    before = K @ v
    X[0, 0] = 99.0  # a later write to the caller's array must not change the operator
    np.testing.assert_array_equal(K @ v, before)


def test_only_a_frozen_array_is_kept_without_a_copy():
    # read-only and owning its data: nobody can write to it but through it, so it is kept
    # (a one-vs-one pair's rows); a read-only view of a writeable array is still copied
    X = np.random.default_rng(4).normal(size=(20, 3))
    frozen = X.copy()
    frozen.flags.writeable = False
    assert np.shares_memory(kernel_operator(frozen, "gaussian").points, frozen)
    view = X[:, :]
    view.flags.writeable = False
    K = kernel_operator(view, "gaussian")
    assert not np.shares_memory(K.points, X)
    before = K @ np.ones(20)
    X[0, 0] = 50.0
    np.testing.assert_array_equal(K @ np.ones(20), before)
    # frozen() makes such an array: in place when it owns its data, else one copy
    from hsskern.kernels import frozen
    own = X.copy()
    assert frozen(own) is own and not own.flags.writeable
    kept = frozen(X[:, :2])
    assert not np.shares_memory(kept, X) and not kept.flags.writeable
    assert np.shares_memory(kernel_operator(kept, "gaussian").points, kept)


def test_a_cross_product_keeps_its_columns_once():
    # K(Y, X) @ V reads the centred columns transposed: after the product the operator holds
    # the centred rows and that transpose, not the centred columns as well
    import gc
    import tracemalloc
    rng = np.random.default_rng(5)
    X, Y, d = rng.normal(size=(3000, 60)), rng.normal(size=(500, 60)), 60
    K = kernel_operator(X, "gaussian", gamma=1.0 / d)
    C = K.cross(Y)
    V = rng.normal(size=(3000, 2))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = C @ V
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before - out.nbytes
    finally:
        tracemalloc.stop()
    assert 8 * d * (3000 + 500) <= held < 8 * d * (3000 + 500) + 8 * d * 3000 // 4
    np.testing.assert_allclose(out, C @ V, rtol=1e-14, atol=1e-14)


def test_user_array_never_reordered_or_written():
    X = np.random.default_rng(3).normal(size=(30, 2))
    X0 = X.copy()
    K = kernel_operator(X, "gaussian")
    K @ np.ones(30), K.submatrix([3, 1], [2, 0]), K.cross(X[:5]) @ np.ones(30)
    np.testing.assert_array_equal(X, X0)


@pytest.mark.parametrize("bad, exc, match", [
    (np.array([[0.0, np.nan]]), ValueError, "NaN"),
    (np.array([[0.0, np.inf]]), ValueError, "infinity"),
    (np.zeros(5), ValueError, "2-D"),
    (np.zeros((0, 3)), ValueError, "at least 1"),
    (np.array([["a", "b"]]), TypeError, "numeric"),
    (np.ones((2, 2)) * 1j, TypeError, "real"),
])
def test_bad_points_raise(bad, exc, match):
    with pytest.raises(exc, match=match):
        kernel_operator(bad)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"kernel": "gaussian", "h": 0.0}, ValueError, "h must be > 0"),
    ({"kernel": "gaussian", "h": -1.0}, ValueError, "h must be > 0"),
    ({"kernel": "gaussian", "gamma": 0.0}, ValueError, "gamma"),
    ({"kernel": "gaussian", "h": 1.0, "gamma": 1.0}, ValueError, "either"),
    ({"kernel": "compact_gaussian", "sigma": -2.0}, ValueError, "sigma"),
    ({"kernel": "polynomial", "degree": 0}, ValueError, "degree"),
    ({"kernel": "polynomial", "degree": 1.5}, TypeError, "integer"),
    ({"kernel": "tanh"}, ValueError, "kernel must be one of"),
    ({"kernel": "sigmoid", "coef0": np.inf}, ValueError, "coef0"),
    ({"kernel": "poly", "gamma": -1.0}, ValueError, "gamma"),
])
def test_bad_kernel_parameters_raise(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        kernel_operator(np.ones((3, 2)), **kwargs)


def test_cross_feature_mismatch_and_index_errors():
    K = kernel_operator(np.ones((4, 2)))
    with pytest.raises(ValueError, match="3 features"):
        K.cross(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
        K.submatrix([0, 4], [0])
    with pytest.raises(ValueError, match="beta"):
        K.shifted(-1.0)


def test_to_dense_refuses_large_n_with_estimate():
    K = kernel_operator(np.zeros((100, 1)))
    with pytest.raises(MemoryBudgetError, match="78.1 KB"):
        K.to_dense(max_bytes=1000)


@given(n=st.integers(2, 400), d=st.integers(12, 60), offset=st.sampled_from([0.0, 1e3, 1e7]),
       hfac=st.floats(0.02, 20.0), seed=st.integers(0, 10**6))
def test_gaussian_blas_route_keeps_relative_accuracy(n, d, offset, hfac, seed):
    # the dgemm route (|a|^2 + |b|^2 - 2 a.b on centered points) must give every entry to
    # 1e-12 relative, tiny entries included, or not be taken: far-offset clouds and narrow
    # kernels fall back to the direct sums
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + offset
    h = hfac * np.sqrt(d)
    K = kernel_operator(X, "gaussian", h=h)
    dense = reference_kernel(K.kernel, X)
    V = rng.normal(size=(n, 3))
    # entries below exp(-708) = 3.3e-308 are 0 (see the exponent-floor test below)
    floor = 3.4e-308 * np.abs(V).sum()
    np.testing.assert_allclose(K @ V, dense @ V, rtol=1e-12,
                               atol=1e-12 * np.abs(dense).sum(axis=1).max() + floor)
    idx = rng.integers(0, n, min(n, 150))
    S = K.submatrix(idx, idx)
    tiny = dense[np.ix_(idx, idx)] > 1e-250
    np.testing.assert_allclose(S[tiny], dense[np.ix_(idx, idx)][tiny], rtol=1e-11)
    np.testing.assert_array_equal(S, S.T)  # leaf blocks and SVM chunks must be symmetric
    Y = rng.normal(size=(7, d)) + offset
    KY = reference_kernel(K.kernel, Y, X)
    np.testing.assert_allclose(K.cross(Y) @ V, KY @ V, rtol=1e-12,
                               atol=1e-12 * (KY @ np.abs(V)).max() + floor)


@given(n=st.integers(100, 400), d=st.integers(12, 40), n_far=st.integers(1, 2),
       hfac=st.floats(0.5, 2.0), reach=st.sampled_from([1.5, 4.0, 1e3]),
       rows=st.integers(1, 9), seed=st.integers(0, 10**6))
def test_gaussian_blas_route_sums_far_points_directly(n, d, n_far, hfac, reach, rows, seed):
    # a few points far from the others (as a rare binary feature makes them once z-scored):
    # their norms alone break the expansion's bound, yet the dgemm route is still taken.
    # Between two far points (close to each other here, entries O(1), where the expansion
    # would be off by up to reach x 1e-12) the distances are summed directly: 1e-12; between
    # a far point and a near one the expansion's error stays within 2.5e-12 or 8 times the
    # direct sum's own rounding, gamma |a - b|^2 (d + 2) u
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    h = hfac * np.sqrt(d)
    gamma = 1.0 / (2.0 * h * h)
    limit = 1e-12 / (gamma * 2.0 * (d + 2) * np.finfo(float).eps)  # the norm^2 of "far"
    centre = rng.normal(size=d)
    centre *= np.sqrt(reach * limit) / np.linalg.norm(centre)
    X[:n_far] = centre + 0.3 * rng.normal(size=(n_far, d))
    K = kernel_operator(X, "gaussian", h=h)
    route = K._gemm()
    assert route is not None and np.flatnonzero(route[4]).tolist() == list(range(n_far))
    dense = reference_kernel(K.kernel, X)
    V = rng.normal(size=(n, rows))
    floor = 3.4e-308 * np.abs(V).sum()
    np.testing.assert_allclose(K @ V, dense @ V, rtol=1e-12,
                               atol=1e-12 * np.abs(dense).sum(axis=1).max() + floor)
    idx = np.concatenate([np.arange(n_far), rng.integers(0, n, 60)])
    S, R = K.submatrix(idx, idx), dense[np.ix_(idx, idx)]
    np.testing.assert_array_equal(S, S.T)
    kept = R > 1e-250
    with np.errstate(divide="ignore"):
        E = -np.log(R[kept])  # gamma |a - b|^2
    u = np.finfo(float).eps / 2
    tol = (2.5e-12 + 8 * (d + 2) * u * E + 8 * u) * R[kept]
    assert np.all(np.abs(S[kept] - R[kept]) <= tol)
    far = np.zeros(idx.size, dtype=bool)
    far[:n_far] = True
    both = np.outer(far, far)
    np.testing.assert_allclose(S[both], R[both], rtol=1e-12)
    Y = np.vstack([X[:n_far] + 0.1 * rng.normal(size=(n_far, d)), rng.normal(size=(5, d))])
    KY = reference_kernel(K.kernel, Y, X)
    np.testing.assert_allclose(K.cross(Y) @ V, KY @ V, rtol=1e-12,
                               atol=1e-12 * (KY @ np.abs(V)).max() + floor)


@given(n=st.integers(2, 200), d=st.sampled_from([3, 20]), far=st.booleans(),
       name=st.sampled_from(["gaussian", "laplacian"]), seed=st.integers(0, 10**6))
def test_columns_product_is_the_dense_columns_times_c(n, d, far, name, seed):
    # K[rows, J] @ c, the decomposition's update: the dgemm route (d = 20, outliers or not)
    # and the direct sums, all rows or some, against the dense reference
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if far:
        X[0] += 1e4
    K = kernel_operator(X, name, h=np.sqrt(d))
    dense = reference_kernel(K.kernel, X)
    J = rng.choice(n, int(rng.integers(1, n + 1)), replace=False)
    c = rng.normal(size=J.size)
    rows = rng.choice(n, int(rng.integers(1, n + 1)), replace=False)
    for r, R in ((None, dense[:, J]), (rows, dense[np.ix_(rows, J)])):
        np.testing.assert_allclose(K.columns_product(J, c, r), R @ c, rtol=1e-12,
                                   atol=1e-12 * np.abs(R).sum(axis=1).max() + 1e-300)
    with pytest.raises(ValueError, match="one entry per column"):
        K.columns_product(J, c[:-1] if c.size > 1 else np.ones(2))


@given(n=st.integers(1, 150), d=st.integers(1, 6), spread=st.floats(0.5, 60.0),
       name=st.sampled_from(["gaussian", "laplacian"]), rows=st.sampled_from(["dense", "csr"]),
       seed=st.integers(0, 10**6))
def test_entries_past_the_exponent_floor_are_zero_and_the_others_exact(n, d, spread, name,
                                                                        rows, seed):
    # a narrow kernel: many exponents below -708, where the vectorized exp would leave its fast
    # path, in rows that mix them with ordinary ones. Those entries are 0 (each is below
    # exp(-708) = 3.3e-308), every other one its reference value, in blocks and in products
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * spread
    K = kernel_operator(sp.csr_matrix(X) if rows == "csr" else X, name, h=1.0)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    e = d2 / 2.0 if name == "gaussian" else np.sqrt(d2)  # the entry is exp(-e)
    S = K.submatrix(np.arange(n), np.arange(n))
    assert np.all(S[e >= 708.0 + 1e-9] == 0.0)
    kept = e < 708.0 - 1e-9
    np.testing.assert_allclose(S[kept], np.exp(-e[kept]), rtol=1e-11)
    np.testing.assert_array_less(S[~kept], 3.4e-308)
    V = rng.normal(size=(n, 2))
    np.testing.assert_allclose(K @ V, np.exp(-e) @ V, rtol=1e-12,
                               atol=1e-12 * (np.exp(-e) @ np.abs(V)).max() + 1e-300)


def test_gaussian_blas_route_taken_only_when_its_bound_holds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 30))
    assert kernel_operator(X, "gaussian", h=5.0)._gemm() is not None
    assert kernel_operator(X, "gaussian", h=1e-4)._gemm() is None       # narrow kernel
    assert kernel_operator(X[:, :4], "gaussian", h=5.0)._gemm() is None  # few features
    assert kernel_operator(X, "laplacian", h=5.0)._gemm() is None       # not the Gaussian


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_diagonal_blocks_from_their_upper_triangle_match_the_full_evaluation(kernel):
    # K[W, W] is computed as its upper triangle and mirrored (half the work of the SVM's
    # working sets); large enough for the threaded path, in a caller's buffer
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 30))
    K = kernel_operator(X, kernel, h=4.0)
    W = rng.choice(1500, 700, replace=False)
    buf = np.full((700, 700), np.nan)
    S = K.submatrix(W, W.copy(), out=buf)
    assert S is buf
    full = K.submatrix(W, W[::-1].copy())[:, ::-1]  # not symmetric as asked: every entry
    np.testing.assert_array_equal(S, S.T)
    np.testing.assert_allclose(S, full, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(S, reference_kernel(K.kernel, X[W]), rtol=1e-11, atol=1e-15)


# the serial and the threaded branch of each evaluator
@pytest.mark.parametrize("form, m", [(f, m) for f in ("gaussian", "laplacian", "sparse")
                                     for m in ((300, 1100) if f == "sparse" else (517, 1100))])
def test_diagonal_blocks_mirrored_chunk_by_chunk_equal_the_reference(form, m):
    # working-set blocks are computed from their diagonal in chunks of 64 rows (the dense
    # Gaussian's dgemm route in tiles of 512 columns, the Laplacian's direct rows, sparse
    # rows), each copied onto the lower triangle as it is made: sizes that end mid-chunk, a
    # stride, far points (summed directly) in the dgemm route; exactly symmetric, every
    # entry the reference's, the padding untouched
    rng = np.random.default_rng(m)
    X = rng.normal(size=(m + 50, 30))
    if form == "sparse":
        X[rng.random(X.shape) < 0.8] = 0.0
        K = kernel_operator(sp.csr_matrix(X), "gaussian", h=6.0)
        assert isinstance(K, SparseRowsKernelOperator)
    elif form == "laplacian":
        K = kernel_operator(X, "laplacian", h=6.0)
        assert K._gemm() is None
    else:
        X[:5] += 40.0  # far from the others' mean: their distances summed directly
        K = kernel_operator(X, "gaussian", h=6.0)
        assert K._gemm() is not None and K._gemm()[4].any()
    W = rng.permutation(m + 50)[:m]
    buf = np.full((m, m + 37), np.nan)
    S = K.submatrix(W, W.copy(), out=buf[:, :m])
    np.testing.assert_array_equal(S, S.T)
    assert np.isnan(buf[:, m:]).all()
    np.testing.assert_allclose(S, reference_kernel(K.kernel, X[W]), rtol=1e-11, atol=1e-15)
    full = K.submatrix(W, W[::-1].copy())[:, ::-1]  # not symmetric as asked: every entry
    np.testing.assert_allclose(S, full, rtol=1e-13, atol=1e-15)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), q=st.sampled_from([1, 7, 300, 2049, 3000]),
       pad=st.integers(0, 9), share=st.floats(0.0, 1.0))
def test_adding_a_symmetric_blocks_rows_is_the_block_times_c(seed, q, pad, share):
    """add_symmetric_rows(B, rows, c, out): out += B[:q, rows] @ c for the symmetric block in
    the first q columns of B's rows (a working set's block in its wider buffer; the padding is
    NaN and must not be read), from the rows of ``rows``; sizes on both sides of the threaded
    branch; bad input refused."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(q, q))
    B = np.full((q, q + pad), np.nan)
    B[:, :q] = A + A.T
    rows = np.flatnonzero(rng.random(q) < share).astype(np.intp)
    c = rng.normal(size=rows.size)
    t0 = rng.normal(size=q)
    t = t0.copy()
    add_symmetric_rows(B, rows, c, t)
    scale = 1.0 + np.abs(B[:, :q]).sum() * np.abs(c).max(initial=0)
    np.testing.assert_allclose(t, t0 + B[:, :q][:, rows] @ c, rtol=1e-12, atol=1e-12 * scale)
    with pytest.raises(ValueError, match="coefficients"):
        add_symmetric_rows(B, rows, np.ones(rows.size + 1), t)
    with pytest.raises(ValueError, match="C-contiguous"):
        add_symmetric_rows(np.zeros((q, 2 * (q + pad) + 2))[:, ::2], rows, c, t)
    with pytest.raises(ValueError, match="holds no"):
        add_symmetric_rows(B, rows, c, np.zeros(q + pad + 1))
    with pytest.raises(ValueError):
        add_symmetric_rows(B, np.array([q]), np.ones(1), t)


def _three_operators(X, name, width, beta, rng):
    """(operator, dense reference) for K, K + beta I and K(Y, X)."""
    scale = float(np.std(X)) or 1.0
    K = kernel_operator(X, name, **_kernel_kwargs(name, scale, width))
    dense = reference_kernel(K.kernel, X)
    Y = X[rng.integers(0, len(X), 9)] + rng.normal(size=(9, X.shape[1])) * scale * 0.1
    return [(K, dense), (K.shifted(beta), dense + beta * np.eye(len(X))),
            (K.cross(Y), reference_kernel(K.kernel, Y, X))]


@given(X=point_sets(n_max=150, d_max=20), name=st.sampled_from(KERNELS),
       width=st.floats(0.05, 20.0), beta=st.floats(0.0, 1e3),
       same=st.sampled_from(["object", "copy", "other"]), seed=st.integers(0, 10**6))
def test_submatrix_into_out_matches_dense_reference(X, name, width, beta, same, seed):
    # every operator fills a caller's buffer with exactly its dense reference's entries,
    # repeated indices included (beta I then lands off the block's diagonal too); J the same
    # object as I, an equal copy or unrelated
    rng = np.random.default_rng(seed)
    if name == "polynomial":
        X = X / (np.abs(X).max() or 1.0)
    for k, (op, dense) in enumerate(_three_operators(X, name, width, beta, rng)):
        m, n = op.shape
        symmetric = k < 2  # K and K + beta I; K(Y, X) is square only when Y has len(X) points
        I = rng.integers(0, m, rng.integers(0, 40))
        if symmetric and same != "other":
            J = I if same == "object" else I.copy()
        else:
            J = rng.integers(0, n, rng.integers(0, 40))
        want = dense[np.ix_(I, J)]
        buf = np.full((len(I), len(J)), np.nan)
        got = op.submatrix(I, J, out=buf)
        assert got is buf
        np.testing.assert_allclose(got, want, rtol=1e-12,
                                   atol=1e-13 * (np.abs(want).max() if want.size else 0.0))
        np.testing.assert_array_equal(op.submatrix(I, J), got)  # out= or not: same entries
        if symmetric and same != "other":
            np.testing.assert_array_equal(got, got.T)


@given(X=point_sets(n_min=2, n_max=120, d_max=12), name=st.sampled_from(KERNELS),
       form=st.sampled_from(["dense", "sparse", "stored", "shifted", "callable"]),
       pad=st.integers(1, 9),
       symmetric=st.booleans(), seed=st.integers(0, 10**6))
def test_submatrix_into_rows_a_stride_apart_is_the_c_order_block(X, name, form, pad,
                                                                 symmetric, seed):
    # the decomposition's working-set block lives at a row stride wider than the block: the
    # entries written there are the C-order block's, bit for bit, and the columns past the
    # block are not touched (evaluators that write rows by pointer, or the copy of the rest)
    rng = np.random.default_rng(seed)
    if name == "polynomial":
        X = X / (np.abs(X).max() or 1.0)
    K = kernel_operator(sp.csr_matrix(X) if form == "sparse" else X, name)
    if form == "stored":
        K = K.stored()
    elif form == "shifted":
        K = K.shifted(0.5)
    elif form == "callable":  # the same kernel as a function k(A, B)
        k = K.kernel
        K = rows_operator(X, make_kernel(lambda A, B: reference_kernel(k, A, B)))
    I = rng.integers(0, len(X), rng.integers(1, 40))
    J = I if symmetric else rng.integers(0, len(X), rng.integers(1, 40))
    buf = np.full((len(I), len(J) + pad), np.nan)
    got = K.submatrix(I, J, out=buf[:, :len(J)])
    assert np.shares_memory(got, buf)
    np.testing.assert_array_equal(buf[:, :len(J)], K.submatrix(I, J))
    assert np.isnan(buf[:, len(J):]).all()


@pytest.mark.parametrize("form", ["dense", "sparse"])
@pytest.mark.parametrize("name", ["gaussian", "laplacian"])
def test_a_large_block_at_a_row_stride_is_the_c_order_block(form, name):
    # large enough for the evaluators' threaded branches, which place rows by the stride
    X = np.random.default_rng(3).normal(size=(1100, 12))
    K = kernel_operator(sp.csr_matrix(X) if form == "sparse" else X, name)
    W = np.random.default_rng(4).permutation(1100)[:1000]
    buf = np.full((1000, 1250), np.nan)
    K.submatrix(W, W, out=buf[:, :1000])
    np.testing.assert_array_equal(buf[:, :1000], K.submatrix(W, W))
    assert np.isnan(buf[:, 1000:]).all()


_BAD_INDEX = [
    ([[0, 1]], "1-D"),
    ([0.5], "integers"),
    ([0, 1, 6], r"outside \[0, 6\)"),
    ([-1], r"outside \[0, 6\): smallest -1"),
    (np.ones(5, bool), r"boolean I must have shape \(6,\)"),
]


def _ops(rows):
    # the same checks whether the points are dense or sparse rows
    X = np.random.default_rng(0).normal(size=(6, 2))
    if rows == "sparse":
        X = sp.csr_matrix(X)
    K = kernel_operator(X)
    return {"plain": K, "shifted": K.shifted(0.5), "cross": K.cross(X[::-1].copy())}


@pytest.mark.parametrize("rows", ["dense", "sparse"])
@pytest.mark.parametrize("which", ["plain", "shifted", "cross"])
@pytest.mark.parametrize("I, match", _BAD_INDEX)
def test_submatrix_rejects_bad_indices(rows, which, I, match):
    op = _ops(rows)[which]
    with pytest.raises(ValueError, match=match):
        op.submatrix(I, [0, 1])
    with pytest.raises(ValueError, match=match.replace("I", "J")):
        op.submatrix([0, 1], I)


def _readonly_buffer():
    a = np.zeros((2, 3))
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("rows", ["dense", "sparse"])
@pytest.mark.parametrize("which", ["plain", "shifted", "cross"])
@pytest.mark.parametrize("out, match", [
    (np.zeros((3, 2)), r"shape \(2, 3\)"),
    (np.zeros((2, 3), np.float32), "float64"),
    (np.zeros((2, 3), order="F"), "C-contiguous"),
    (np.zeros((2, 6))[:, ::2], "C-contiguous"),
    (np.zeros((4, 3))[::-2], "C-contiguous"),
    (_readonly_buffer(), "writeable"),
    ([[0.0] * 3] * 2, "numpy array"),
])
def test_submatrix_rejects_bad_out(rows, which, out, match):
    with pytest.raises(ValueError, match=match):
        _ops(rows)[which].submatrix([0, 1], [2, 3, 4], out=out)


@pytest.mark.slow
def test_fused_cross_product_of_a_million_rows_equals_dense_in_a_fresh_process():
    # the fused loop once read the vector at row indices (valid only for the symmetric
    # product), past its end when the rows outnumber the columns: a signal at ~1e5 rows.
    # Every row is computed; the reference checks the first and last thousand and 30,000
    # drawn between (the whole reference took 15 s of the suite)
    code = (
        "import numpy as np\n"
        "from hsskern import kernel_operator\n"
        "from hsskern.testing import reference_kernel\n"
        "r = np.random.default_rng(1)\n"
        "X = r.normal(size=(300, 2)); Y = r.normal(size=(10**6, 2)); v = r.normal(size=300)\n"
        "K = kernel_operator(X, 'gaussian', h=1.0)\n"
        "out = K.cross(Y) @ v\n"
        "rows = np.r_[:1000, np.sort(r.choice(10**6, 30000)), 10**6 - 1000:10**6]\n"
        "ref = reference_kernel(K.kernel, Y[rows], X)\n"
        "err = np.abs(out[rows] - ref @ v).max() / (np.abs(ref) @ np.abs(v)).max()\n"
        "assert err < 1e-13, err\n"
        "print('ok')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert res.stdout.strip() == "ok"


@given(X=point_sets(n_max=120, d_max=8), Y=point_sets(n_max=30, d_max=8),
       name=st.sampled_from(["poly", "sigmoid", "linear"]), gamma=st.floats(0.01, 2.0),
       coef0=st.floats(-1.0, 1.0), degree=st.integers(1, 4), sparse=st.booleans(),
       seed=st.integers(0, 99))
def test_svc_kernels_equal_scikit_learns(X, Y, name, gamma, coef0, degree, sparse, seed):
    # SVC's poly, sigmoid and linear kernels with SVC's parameter names, dense and sparse rows
    from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, sigmoid_kernel
    Y = Y[:, :X.shape[1]] if Y.shape[1] >= X.shape[1] else np.resize(Y, (Y.shape[0], X.shape[1]))
    kw = {"poly": dict(gamma=gamma, coef0=coef0, degree=degree),
          "sigmoid": dict(gamma=gamma, coef0=coef0), "linear": {}}[name]
    ref = {"poly": polynomial_kernel, "sigmoid": sigmoid_kernel, "linear": linear_kernel}[name]
    K = kernel_operator(sp.csr_matrix(X) if sparse else X, name, **kw)
    dense = ref(X, X, **kw)
    v = np.random.default_rng(seed).normal(size=X.shape[0])
    scale = (np.abs(dense) @ np.abs(v)).max() + 1e-300
    np.testing.assert_allclose(K @ v, dense @ v, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(K.diag(), np.diag(dense), rtol=1e-12, atol=1e-300)
    I = np.arange(min(7, X.shape[0]))
    np.testing.assert_allclose(K.submatrix(I, I), dense[np.ix_(I, I)], rtol=1e-12, atol=1e-12)
    cross = ref(Y, X, **kw)
    np.testing.assert_allclose(K.cross(Y) @ v, cross @ v, rtol=0,
                               atol=1e-12 * ((np.abs(cross) @ np.abs(v)).max() + 1e-300))


def test_svc_kernel_spellings_resolve_to_hsskerns():
    X = np.random.default_rng(0).normal(size=(20, 3))
    assert kernel_operator(X, "rbf", gamma=0.5).kernel == make_kernel("gaussian", h=1.0)
    lin = kernel_operator(X, "linear").kernel
    assert (lin.name, lin.degree, lin.coef0, lin.dot_scale) == ("polynomial", 1, 0.0, 1.0)
    poly = make_kernel("poly", gamma=0.5)
    assert (poly.degree, poly.coef0, poly.gamma) == (3, 0.0, 0.5)  # SVC's defaults
    own = make_kernel("polynomial")
    assert (own.degree, own.coef0, own.gamma) == (2, 1.0, 1.0)  # FPC's form, unchanged
    assert not make_kernel("sigmoid").positive_definite


# ------------------------------------------------------------------ tile boundaries of every route
# The products run in tiles: ROW_TILE = 32 rows a thread's tile, the fused loop four rows a pass
# (a short last group repeats a row with weight 0), col_tile columns a tile (block_memory 4096
# gives the smallest, 256; the other width is not a multiple of 4 or 32), and the dgemm route
# _GEMM_ROW_TILE x _GEMM_COL_TILE. Every count around every edge (t - 1, t, t + 1), against one
# dense reference of the largest sets whose leading blocks are the smaller ones'.
_ROW_TILE = 32


def _around(*edges):
    return sorted({v for t in edges for v in (t - 1, t, t + 1) if v >= 1})


def _dense(kernel, Y, X, rows=256):
    """reference_kernel(kernel, Y, X) a band of rows at a time (its broadcast is m x n x d)."""
    return np.vstack([reference_kernel(kernel, Y[s:s + rows], X) for s in range(0, len(Y), rows)])


def _block_memory_for(col_tile):
    from os import cpu_count
    return 8 * _ROW_TILE * col_tile * max(1, cpu_count() or 1)  # inverse of _col_tile


def _assert_product(got, dense, V, rel, what):
    tol = rel * (np.abs(dense) @ np.abs(V)).max(initial=0.0) + 1e-300
    err = np.abs(got - dense @ V).max(initial=0.0)
    assert err <= tol, f"{what}: error {err:.3g} > {tol:.3g}"


# (kernel, d, r, spread): the fused loop with D = 4, 8 and 12 (a wide spread: the clamped
# exp), the direct tiles' one-vector and several-vector branches (d > 12, another kernel, r > 1)
_DIRECT_ROUTES = [("gaussian", 3, 1, 1.0), ("gaussian", 7, 1, 20.0), ("laplacian", 12, 1, 1.0),
                  ("laplacian", 9, 1, 1.0), ("laplacian", 13, 1, 1.0),
                  ("compact_gaussian", 4, 1, 1.0), ("gaussian", 3, 3, 1.0)]


@pytest.mark.parametrize("col_tile", [256, 299])
@pytest.mark.parametrize("name, d, r, spread", _DIRECT_ROUTES)
def test_products_at_every_tile_boundary_equal_dense(name, d, r, spread, col_tile):
    rng = np.random.default_rng(d * 100 + r)
    rows = _around(1, 4, 8, _ROW_TILE, 2 * _ROW_TILE)
    cols = _around(1, 5, _ROW_TILE, col_tile, col_tile + _ROW_TILE, 2 * col_tile)
    X = rng.normal(size=(cols[-1], d)) * spread
    Y = rng.normal(size=(rows[-1], d)) * spread
    V = rng.normal(size=(cols[-1], r))
    kw = {"sigma": np.sqrt(d)} if name == "compact_gaussian" else {"h": np.sqrt(d)}
    bm = _block_memory_for(col_tile)
    kernel = kernel_operator(X, name, block_memory=bm, **kw).kernel
    cross, sym = _dense(kernel, Y, X), _dense(kernel, X, X)
    for n in cols:
        K = kernel_operator(X[:n], name, block_memory=bm, **kw)
        assert K._col_tile == min(col_tile, n) and K._gemm() is None
        v = V[:n, 0] if r == 1 else V[:n]
        _assert_product(K @ v, sym[:n, :n], v, 1e-13, f"K(X, X), n={n}")
        S = K.single_precision() if r == 1 else None
        if S is not None:
            _assert_product(S @ v, sym[:n, :n], v, 2e-5, f"float32 K(X, X), n={n}")
        # the row edges against a few widths (the row and column tilings are independent)
        for m in rows if n in (1, 5, col_tile + 1) else (1, 3, _ROW_TILE + 1):
            _assert_product(K.cross(Y[:m]) @ v, cross[:m, :n], v, 1e-13,
                            f"K(Y, X), m={m}, n={n}")


@pytest.mark.parametrize("d, r", [(12, 1), (12, 3), (20, 1)])
def test_gaussian_blas_route_at_its_tile_boundaries_equals_dense(d, r):
    from hsskern.kernels.operator import _GEMM_COL_TILE, _GEMM_ROW_TILE
    rng = np.random.default_rng(d + r)
    rows = _around(1, _GEMM_ROW_TILE, 2 * _GEMM_ROW_TILE)
    cols = [c for c in _around(1, 5, _GEMM_ROW_TILE, _GEMM_COL_TILE,
                               _GEMM_COL_TILE + _GEMM_ROW_TILE) if c != 5 or r == 1]
    X = rng.normal(size=(cols[-1], d))
    Y = rng.normal(size=(rows[-1], d))
    V = rng.normal(size=(cols[-1], r))
    kernel = kernel_operator(X[:2], "gaussian", h=np.sqrt(d)).kernel
    cross, sym = _dense(kernel, Y, X), _dense(kernel, X, X)
    for n in cols:
        K = kernel_operator(X[:n], "gaussian", h=np.sqrt(d))
        assert K._gemm() is not None
        v = V[:n, 0] if r == 1 else V[:n]
        _assert_product(K @ v, sym[:n, :n], v, 1e-12, f"K(X, X), n={n}")
        for m in rows if n in (1, _GEMM_COL_TILE - 1, _GEMM_COL_TILE, _GEMM_COL_TILE + 1) \
                else (1, rows[-1]):
            _assert_product(K.cross(Y[:m]) @ v, cross[:m, :n], v, 1e-12,
                            f"K(Y, X), m={m}, n={n}")


@given(m=st.integers(1, 3000), n=st.integers(1, 40), d=st.integers(1, 12),
       name=st.sampled_from(["gaussian", "laplacian"]), spread=st.floats(0.3, 40.0),
       seed=st.integers(0, 10**6))
def test_cross_product_with_rows_far_beyond_columns_equals_dense(m, n, d, name, spread, seed):
    # the case of the old out-of-bounds read (the fused loop took the vector at row indices):
    # many more rows than columns, every d of the fused loop, both of its kernels
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * spread
    Y = rng.normal(size=(m, d)) * spread
    K = kernel_operator(X, name, h=np.sqrt(d))
    v = rng.normal(size=n)
    _assert_product(K.cross(Y) @ v, reference_kernel(K.kernel, Y, X), v, 1e-12, "K(Y, X)")


_GUARDED_PRODUCTS = r"""
import ctypes, mmap, sys
import numpy as np
from hsskern import kernel_operator
from hsskern.testing import reference_kernel

libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
keep = []

def guarded(a):
    # a copy of ``a`` whose last byte is followed by a page that may not be read
    page = mmap.PAGESIZE
    pages = -(-a.nbytes // page) + 1
    buf = mmap.mmap(-1, pages * page)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    assert libc.mprotect(addr + (pages - 1) * page, page, 0) == 0
    g = np.frombuffer(buf, np.float64, a.size, (pages - 1) * page - a.nbytes).reshape(a.shape)
    g[...] = a
    keep.append(buf)
    return g

rng = np.random.default_rng(0)
for name, d, r, n, m in [("gaussian", 2, 1, 3, 5000), ("laplacian", 12, 1, 37, 3000),
                         ("gaussian", 7, 1, 300, 6000), ("gaussian", 3, 2, 5, 4000),
                         ("laplacian", 13, 1, 5, 4000), ("gaussian", 14, 1, 5, 4000),
                         ("gaussian", 14, 3, 129, 3000), ("gaussian", 5, 1, 1500, 7)]:
    X, Y = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    V = guarded(rng.normal(size=(n, r)))
    for bm in (4096, 32 * 2**20):
        K = kernel_operator(X, name, h=np.sqrt(d), block_memory=bm)
        v = V[:, 0] if r == 1 else V
        for A, B, out in [(Y, X, K.cross(Y) @ v), (X, X, K @ v)]:
            ref = reference_kernel(K.kernel, A, B)
            err = np.abs(out - ref @ v).max() / (np.abs(ref) @ np.abs(v)).max()
            assert err < 1e-12, (name, d, r, n, m, bm, err)
print("ok")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect via ctypes")
def test_products_read_no_vector_entry_past_its_end():
    # the right-hand sides end where an unreadable page begins: a read past their end (as the
    # fused cross product once read v at row indices) is a signal, caught here in a child
    res = subprocess.run([sys.executable, "-c", _GUARDED_PRODUCTS], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert res.stdout.strip() == "ok"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 300), d=st.integers(1, 200),
       rows=st.sampled_from([1, 7, 64, 256]), single=st.booleans(), upper=st.booleans())
def test_a_gathered_gaussian_block_is_the_reference_whatever_its_chunk_rows(
        seed, m, d, rows, single, upper):
    # the chunk rows (64 or 256 by features in the operator) only cut the GEMM calls: every
    # entry is the dense reference's to the expansion's precision, a diagonal block exactly
    # symmetric
    from hsskern.kernels import _eval
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, d))
    X -= X.mean(axis=0)
    norms = np.einsum("ij,ij->i", X, X)
    I = rng.choice(400, m, replace=False)
    J = I if upper else rng.choice(400, 1 + m // 2, replace=False)
    out = np.empty((I.size, J.size))
    pts = X.astype(np.float32) if single else X
    _eval.gather_gauss(1.0 / d, pts, norms, I, J, out, upper, None, rows)
    sq = ((X[I][:, None, :] - X[J][None, :, :]) ** 2).sum(-1)
    ref = np.exp(-sq / d)
    tol = (2e-6 if single else 1e-12) * (norms[I][:, None] + norms[J][None, :]) / d + 1e-14
    assert np.all(np.abs(out - ref) <= tol * ref + 1e-300)
    if upper:
        np.testing.assert_array_equal(out, out.T)
