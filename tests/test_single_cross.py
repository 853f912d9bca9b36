"""The Gaussian's inner products in float32 (``KernelOperator.single_cross``, the
decomposition's ``cross_dtype``): each entry within the bound the operator accepts, and the
decomposition's answer LIBSVM's to its tolerance, its decision values summed in double."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from hsskern import kernel_operator
from hsskern.options import DecompositionOptions
from hsskern.solvers.engines.admm import kkt_violation
from hsskern.solvers.engines.decomposition import Decomposition

U32 = 2.0 ** -24


def _points(seed, n, d, scale, shift, outliers=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale + shift
    # a few points far out (far from the mean: their entries come from the double route),
    # two of them close together (a far pair with an entry that is not small)
    X[:outliers] += rng.normal(size=(outliers, d)) * scale * 40
    if outliers > 1:
        X[1] = X[0] + 0.1 * scale
    return X


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(20, 160), d=st.integers(12, 90),
       scale=st.sampled_from([1e-3, 1.0, 1e3]), shift=st.sampled_from([0.0, 5.0, -1e4]),
       width=st.sampled_from([0.3, 1.0, 3.0]), outliers=st.integers(0, 4))
def test_float32_entries_and_products_are_within_the_accepted_bound(seed, n, d, scale, shift,
                                                                      width, outliers):
    X = _points(seed, n, d, scale, shift, outliers)
    gamma = width / (d * scale ** 2)  # the bulk's "scale" (the outliers' would hide them)
    K = kernel_operator(X, "gaussian", gamma=gamma)
    S = K.single_cross(1e-3)
    if S is K:  # refused: only where a quarter of the points are far, or the double
        # route's own far points are too many for it
        Xc = X - X.mean(axis=0)
        norms = np.einsum("ij,ij->i", Xc, Xc)
        far32 = gamma * 2 * (d + 2) * U32 * norms > 1e-3
        far64 = gamma * 2 * (d + 2) * np.finfo(float).eps * norms > 1e-12
        assert far32.mean() > 0.2 or 2 * far64.mean() > 0.2
        return
    assert K.single_cross(1e-3) is S  # one float32 copy per bound
    rng = np.random.default_rng(seed + 1)
    I, J = rng.integers(0, n, 30), rng.integers(0, n, 25)
    exact, single = K.submatrix(I, J), S.submatrix(I, J)
    Xc = X - X.mean(axis=0)
    norms = np.einsum("ij,ij->i", Xc, Xc)
    # the first-order bound gamma (d + 2) u (|a|^2 + |b|^2), relative, with 10 % for the
    # second-order terms and the exponential's rounding
    bound = 1.1 * gamma * (d + 2) * U32 * (norms[I][:, None] + norms[J][None, :]) + 1e-12
    assert np.all(np.abs(single - exact) <= bound * exact + 1e-300)
    square = S.submatrix(I, I)  # a diagonal block: exactly symmetric, far pairs in double
    np.testing.assert_array_equal(square, square.T)
    np.testing.assert_allclose(square, K.submatrix(I, I), rtol=1e-3, atol=1e-300)
    F = np.flatnonzero(gamma * 2 * (d + 2) * U32 * norms > 1e-3)  # far by the bound
    if F.size:
        np.testing.assert_allclose(S.submatrix(F, F), K.submatrix(F, F), rtol=1e-12)
        G = np.concatenate([F, np.arange(n)])
        np.testing.assert_allclose(S.columns_product(F, np.ones(F.size), G),
                                   K.columns_product(F, np.ones(F.size), G), rtol=1e-12)
    c = rng.normal(size=J.size)
    rows = np.unique(I)
    got = S.columns_product(J, c, rows)
    want = K.columns_product(J, c, rows)
    tol = (1.1 * gamma * (d + 2) * U32 * (norms[rows][:, None] + norms[J][None, :])
           + 1e-12) * K.submatrix(rows, J)
    assert np.all(np.abs(got - want) <= np.abs(c) @ tol.T + 1e-12 * np.abs(want).max())


def test_far_points_take_the_double_entries_and_the_rest_float32():
    X = _points(7, 200, 40, 1.0, 0.0, outliers=3)
    K = kernel_operator(X, "gaussian", gamma=1.0 / 40)
    S = K.single_cross(1e-3)
    assert S is not K
    Xc = X - X.mean(axis=0)
    norms = np.einsum("ij,ij->i", Xc, Xc)
    far = (2 * (40 + 2) * U32 * norms / 40 > 1e-3)
    assert far[:3].all() and not far[3:].any()
    W = np.arange(200)
    exact, single = K.submatrix(W, W), S.submatrix(W, W)
    np.testing.assert_array_equal(single, single.T)
    # the far pairs (points 0 and 1 close together: an entry near 1) in double, to the bit
    # of the double route's far sums
    np.testing.assert_array_equal(single[:3, :3], exact[:3, :3])
    assert single[0, 1] > 0.5
    near = single[3:, 3:] - exact[3:, 3:]
    assert np.abs(near).max() > 0  # float32 cross terms: not the double entries
    assert np.all(np.abs(near) <= 1e-3 * exact[3:, 3:])
    c = np.linspace(-1, 1, 200)
    np.testing.assert_allclose(S.columns_product(W, c), exact @ c, rtol=0, atol=1e-4)


@pytest.mark.parametrize("shift, doubles", [(0.0, 0), (5.0, 1)])
def test_the_float32_operator_holds_its_float32_copy_and_at_most_one_double(shift, doubles):
    # a pair's float32 operator keeps 4 n d bytes of coordinates beside the points: its far
    # columns take the points as they are where their own norms admit the double expansion
    # (centred data), else one centred double copy (8 n d), never two (a fashion_mnist
    # pair held two)
    import gc
    import tracemalloc
    n, d = 3000, 200
    X = _points(7, n, d, 1.0, shift)
    K = kernel_operator(X, "gaussian", gamma=1.0 / d)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        S = K.single_cross(1e-3)
        S.submatrix(np.arange(50), np.arange(50))
        S.columns_product(np.arange(10), np.ones(10))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert S is not K
    expected = 4 * n * d + doubles * 8 * n * d
    assert expected <= held < expected + n * d


def test_single_cross_keeps_the_double_operator_where_it_cannot_apply():
    rng = np.random.default_rng(0)
    narrow = kernel_operator(rng.normal(size=(50, 5)), "gaussian", gamma=0.1)
    assert narrow.single_cross(1e-3) is narrow  # below 12 features: no dgemm route
    lap = kernel_operator(rng.normal(size=(50, 20)), "laplacian", gamma=0.1)
    assert lap.single_cross(1e-3) is lap
    wide = kernel_operator(rng.normal(size=(50, 20)), "gaussian", gamma=0.05)
    assert wide.single_cross(1e-3) is not wide
    assert wide.single_cross(1e-12) is wide  # no point within so tight a bound
    with pytest.raises(ValueError, match="max_rel_error"):
        wide.single_cross(0.0)


def _problem(seed, n=500, d=30):
    X, y = make_classification(n, d, n_informative=8, random_state=seed, flip_y=0.05)
    return X, np.where(y == 1, 1.0, -1.0)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.0), max_ws=st.sampled_from([40, 4000]))
def test_the_float32_decomposition_is_libsvms_answer(seed, logC, max_ws):
    X, y = _problem(seed)
    C, gamma = 10.0 ** logC, 1.0 / (X.shape[1] * X.var())
    K = kernel_operator(X, "gaussian", gamma=gamma)
    options = DecompositionOptions(max_ws=max_ws, max_chunk=max_ws)
    dec = Decomposition(K, y, C, options=options.replace(cross_dtype="float32"))
    r = dec.solve(tol=1e-3)
    assert dec.block_kernel is not K  # the float32 route ran
    assert r.converged
    # its gap recomputed in double over all points: LIBSVM's gradient over float rows
    # stops at tol with entries within 1e-3 relative, so the double gap is within a few tol
    KYa = K.to_dense() @ (y * r.alpha)
    assert kkt_violation(KYa[:, None], y[:, None], r.alpha[:, None], C)[0] <= 3e-3
    double = Decomposition(K, y, C, options=options.replace(cross_dtype="float64"))
    rd = double.solve(tol=1e-3)
    assert double.block_kernel is K
    ref = SVC(C=C, gamma=gamma).fit(X, y).decision_function(X)
    scale = max(1.0, C ** 0.5)
    np.testing.assert_allclose(r.decision, ref, atol=5e-2 * scale)
    np.testing.assert_allclose(r.decision, rd.decision, atol=5e-2 * scale)


def test_auto_computes_in_float32_from_libsvms_tolerance_up():
    X, y = _problem(3, n=200)
    K = kernel_operator(X, "gaussian", gamma=1.0 / (X.shape[1] * X.var()))
    loose = Decomposition(K, y, 1.0)
    loose.solve(tol=1e-3)
    tight = Decomposition(K, y, 1.0)
    tight.solve(tol=1e-5)
    assert loose.block_kernel is not K and tight.block_kernel is K


def test_the_options_refuse_an_unknown_cross_dtype():
    with pytest.raises(ValueError, match="cross_dtype"):
        DecompositionOptions(cross_dtype="half")
    with pytest.raises(ValueError, match="float32_max_rel_error"):
        DecompositionOptions(float32_max_rel_error=0.0)
