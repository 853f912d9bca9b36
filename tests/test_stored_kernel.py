"""The stored kernel (``KernelOperator.stored()``, issue 22): K evaluated once and kept, for
the exact decomposition's many reads of the same entries. It must be the matrix-free
operator's K exactly (the same entries, blocks, products and decomposition result), refuse
what does not fit with the estimate, and be what the decomposition route takes only where it
pays (many features) and fits the budget beside the working sets.
"""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsskern.estimators.hss_svc import HSSSVC
from hsskern.exceptions import MemoryBudgetError
from hsskern.kernels import KernelOperator, StoredKernelOperator, kernel_operator, make_kernel
from hsskern.solvers.paths.hss_path import HSSBackend, prepare_decomposition
from hsskern.solvers.paths.plan import RouteOptions, decomposition_memory
from hsskern.solvers.engines.exact import LocalProducts, solve_block
from svm_reference import assert_same_svm, gap_tol, svc
from hsskern import HSSSVCOptions
from hsskern.options import PathSettings
from hsskern.options import DecompositionOptions

KINDS = [("gaussian", dict(h=1.3)), ("laplacian", dict(h=2.0)),
         ("polynomial", dict(degree=2, gamma=0.3))]


def _points(seed, n, d):
    return np.random.default_rng(seed).normal(size=(n, d))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 120), d=st.integers(1, 80),
       kind=st.sampled_from(range(len(KINDS))), copies=st.booleans())
def test_stored_operator_is_the_matrix_free_one(seed, n, d, kind, copies):
    name, params = KINDS[kind]
    X = _points(seed, n, d)
    if copies:  # rows repeated: only the distinct points' matrix is kept
        X = X[np.random.default_rng(seed + 2).integers(0, max(1, n // 4), n)]
    K = kernel_operator(X, name, **params)
    S = K.stored()
    u = np.unique(X, axis=0).shape[0]
    kept = u if u <= 0.9 * n else n
    assert isinstance(S, StoredKernelOperator) and S.memory_bytes == 8 * kept * kept
    assert S.entries_evaluated == kept * (kept + 1) // 2
    Kd = K.to_dense()
    # the stored matrix is the operator's own blocks: symmetric to the bit, entries to rounding
    Sd = S.to_dense()
    np.testing.assert_array_equal(Sd, Sd.T)
    np.testing.assert_allclose(Sd, Kd, rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(seed + 1)
    I, J = rng.integers(0, n, rng.integers(0, 2 * n + 1)), rng.integers(0, n, 7)
    np.testing.assert_array_equal(S.submatrix(I, J), Sd[np.ix_(I, J)])
    mask = rng.random(n) < 0.5
    np.testing.assert_array_equal(S.submatrix(mask, mask), Sd[np.ix_(mask, mask)])
    V = rng.normal(size=(n, 3))
    np.testing.assert_allclose(S @ V, Kd @ V, rtol=1e-10, atol=1e-10 * np.abs(V).sum())
    # the decomposition's products: f[~skip] += K[~skip, cols] @ c, skipped rows untouched
    cols = np.sort(rng.choice(n, size=rng.integers(0, n + 1), replace=False))
    c = rng.normal(size=cols.size)
    skip = None if seed % 3 == 0 else rng.random(n) < 0.3
    f0 = rng.normal(size=n)
    ref, out = f0.copy(), f0.copy()
    e_ref = LocalProducts(K.points, K.kernel).add(ref, cols, c, skip)
    entries = S.add(out, cols, c, skip)
    assert entries == e_ref or copies  # (LocalProducts evaluates copies once)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10 * (1 + np.abs(c).sum()))
    if skip is not None:
        np.testing.assert_array_equal(out[skip], f0[skip])


@st.composite
def integer_points(draw):
    """Integer-valued points whose squared distances stay within a byte (binary, one-hot or
    small-range features, any offset), repeated rows or not."""
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(2, 120))
    span = draw(st.sampled_from([1, 2, 3]))
    d = draw(st.integers(1, 255 // span ** 2))
    X = rng.integers(0, span + 1, (n, d)).astype(float)
    X[:, rng.random(d) < 0.3] = 0.0  # constant features
    if draw(st.booleans()):
        X = X[rng.integers(0, max(1, n // 3), n)]
    return X + draw(st.sampled_from([0.0, -7.0, 1e6])), seed


CODED = [("gaussian", dict(h=1.3)), ("laplacian", dict(h=2.0)),
         ("compact_gaussian", dict(sigma=2.0))]


@settings(max_examples=30, deadline=None)
@given(data=integer_points(), kind=st.sampled_from(range(len(CODED))))
def test_integer_points_are_stored_as_distance_codes_with_the_same_entries(data, kind):
    # one byte an entry (the squared distance) and a table: the same matrix as evaluated
    X, seed = data
    n = X.shape[0]
    name, params = CODED[kind]
    K = kernel_operator(X, name, **params)
    S = K.stored()
    u = np.unique(X, axis=0).shape[0]
    kept = u if u <= 0.9 * n else n
    assert S.memory_bytes == kept * kept + 8 * 256 and K.stored_bytes() == kept * kept
    Kd, Sd = K.to_dense(), S.to_dense()
    np.testing.assert_array_equal(Sd, Sd.T)
    np.testing.assert_allclose(Sd, Kd, rtol=1e-13, atol=1e-300)
    rng = np.random.default_rng(seed + 1)
    I, J = rng.integers(0, n, rng.integers(0, 2 * n + 1)), rng.integers(0, n, 7)
    np.testing.assert_array_equal(S.submatrix(I, J), Sd[np.ix_(I, J)])
    V = rng.normal(size=(n, 3))
    np.testing.assert_allclose(S @ V, Kd @ V, rtol=1e-10, atol=1e-10 * np.abs(V).sum())
    np.testing.assert_allclose(S.matvec(V[:, 0]), Kd @ V[:, 0], rtol=1e-10,
                               atol=1e-10 * np.abs(V).sum())
    cols = np.sort(rng.choice(n, size=rng.integers(0, n + 1), replace=False))
    c = rng.normal(size=cols.size)
    skip = rng.random(n) < 0.3
    f0 = rng.normal(size=n)
    out = f0.copy()
    S.add(out, cols, c, skip)
    ref = f0 + np.where(skip, 0.0, Kd[:, cols] @ c)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10 * (1 + np.abs(c).sum()))
    np.testing.assert_array_equal(out[skip], f0[skip])


def test_points_that_do_not_fit_a_byte_are_stored_in_float64():
    rng = np.random.default_rng(0)
    B = rng.integers(0, 2, (60, 20)).astype(float)
    for X, name in [(B + 0.5 * (rng.random(B.shape) < 0.1), "gaussian"),  # not integers
                    (B * 4, "gaussian"),                    # squared distances up to 320
                    (B, "polynomial")]:                     # not a distance kernel
        S = kernel_operator(X, name, h=1.0) if name != "polynomial" else \
            kernel_operator(X, name, degree=2)
        u = np.unique(X, axis=0).shape[0]
        assert S.stored().memory_bytes == 8 * u * u
    # binary rows of few ones: the bound |a|^2 + |b|^2 (nonnegative points) lets 300 features in
    W = np.zeros((50, 300))
    W[np.arange(50)[:, None], rng.integers(0, 300, (50, 6))] = 1.0
    assert kernel_operator(W, "gaussian", h=1.0).stored().memory_bytes == 50 * 50 + 8 * 256


def test_stored_pickles_as_the_plain_operator_and_refuses_over_the_budget():
    K = kernel_operator(_points(0, 50, 4), "gaussian", h=1.0)
    S = K.stored()
    back = pickle.loads(pickle.dumps(S))
    assert type(back) is KernelOperator  # the stored matrix is a cache, not state
    np.testing.assert_allclose(back.to_dense(), S.to_dense(), rtol=1e-12, atol=1e-14)
    with pytest.raises(MemoryBudgetError, match="50 x 50 kernel matrix.*19.5 KB"):
        K.stored(max_bytes=8 * 50 * 50 - 1)
    assert K.stored(max_bytes=8 * 50 * 50).memory_bytes == 8 * 50 * 50


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1, 2.5), ws=st.sampled_from([50, 400]),
       copies=st.booleans(), binary=st.booleans())
def test_decomposition_on_the_stored_kernel_is_the_same_optimum(seed, logC, ws, copies,
                                                                binary):
    rng = np.random.default_rng(seed)
    n = 150
    X = rng.normal(size=(n, 5))
    if binary:  # stored as distance codes
        X = (rng.random((n, 12)) < 0.3) + 0.0
    if copies:  # 40 distinct points, copies of one point may carry both labels
        X = X[rng.integers(0, 40, n)]
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    eps = 1e-10
    options = DecompositionOptions(max_ws=ws, max_chunk=ws, max_rounds=100_000)
    a = solve_block(K, y, C, tol=eps, options=options)
    b = solve_block(K.stored(), y, C, tol=eps, options=options)
    assert a.converged and b.converged
    # entries equal to rounding, so the rounds may part ways; two points at gap eps have
    # kernel parts of their decision values within svm_reference.gap_tol
    Kd = K.to_dense()
    np.testing.assert_allclose(Kd @ b.dual_coef, Kd @ a.dual_coef,
                               atol=gap_tol(eps, C, np.ones(n)))
    # and the decision values it returns are the exact ones of its coefficients
    np.testing.assert_allclose(b.decision - b.bias, Kd @ b.dual_coef, rtol=1e-9, atol=1e-9)


def test_a_stored_kernel_caps_the_working_sets_and_updates_from_its_rows():
    # a stored kernel's rounds are cheap (rows read, not evaluated): smaller working sets,
    # and no block matvec in the update (the products read every row anyway)
    from hsskern.solvers.engines.decomposition import DecompositionOptions
    rng = np.random.default_rng(5)
    n = 200
    X = (rng.random((n, 10)) < 0.4) + 0.0
    y = np.where(X[:, :3].sum(1) + 0.5 * rng.normal(size=n) > 1.2, 1.0, -1.0)
    K = kernel_operator(X, "gaussian", h=1.0)
    kw = dict(tol=1e-8, C=5.0, options=DecompositionOptions(
        max_ws=120, max_chunk=120, max_rounds=100_000, stored_max_chunk=40,
        stored_cap_rounds=10 ** 6))
    a, b = solve_block(K, y, **kw), solve_block(K.stored(), y, **kw)
    assert a.converged and b.converged
    assert max(a.ws_sizes) > 40 >= max(b.ws_sizes)
    Kd = K.to_dense()
    np.testing.assert_allclose(Kd @ b.dual_coef, Kd @ a.dual_coef,
                               atol=gap_tol(1e-8, 5.0, np.ones(n)))
    # every update from the stored rows: entries read = n x the changed points, summed
    changed = b.kernel_entries["update"] / n
    assert changed == int(changed) and changed >= np.count_nonzero(b.alpha)
    # the cap is lifted after stored_cap_rounds rounds (many free points may need it)
    kw["options"] = kw["options"].replace(stored_cap_rounds=2)
    c = solve_block(K.stored(), y, **kw)
    assert c.converged and max(c.ws_sizes[:2]) <= 40 < max(c.ws_sizes[2:])


def test_one_fit_keeps_k_matrix_free_and_a_path_stores_it():
    """Storing K costs its n^2 / 2 entries, which the several solves of a path (or a CV's
    folds) pay back and one fit from zero at a small C does not: an estimator's fit keeps
    the float64 K matrix-free, its one-byte codes are still stored, and the SVM is the same
    either way."""
    d, n = RouteOptions().store_min_features, 150
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = np.where(X[:, :3].sum(1) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    est = HSSSVC(h=1.0, options=HSSSVCOptions(start="decomposition"))
    for purpose in ("fit", "path", "search"):
        backend = est._make_backend(X, [1.0], purpose)
        backend = getattr(backend, "inner", backend)  # one-vs-one's binary backend
        assert backend.settings.store_kernel == (purpose != "fit")
    eps = 1e-10
    solutions = []
    for store in (False, True):
        b = HSSBackend(make_kernel("gaussian", h=1.0),
                       HSSSVCOptions(start="decomposition", solve_exact=True),
                       PathSettings(tol=eps, engine="block", store_kernel=store))
        prob = b.prepare(X, y[:, None])
        assert prob.stats["stored_kernel"] == store
        assert isinstance(prob.K, StoredKernelOperator) == store
        solutions.append(b.path(prob, y[:, None], [3.0])[0].dual_coef[:, 0])
        Xb = (X[:, :12] > 0) + 0.0  # codes: stored for one fit too
        assert b.prepare(Xb, y[:, None]).stats["stored_kernel"]
    K = kernel_operator(X, make_kernel("gaussian", h=1.0)).to_dense()
    ref = svc(3.0, 1.0, eps).fit(X, y)
    for coef in solutions:
        np.testing.assert_allclose(K @ coef, ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(eps, 3.0, np.ones(n)))


def test_the_decomposition_route_stores_k_with_many_features_within_the_budget():
    d = RouteOptions().store_min_features
    rng = np.random.default_rng(3)
    n = 150
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = np.where(X[:, :3].sum(1) + 0.3 * rng.normal(size=n) > 0, 1, 0)
    kern = make_kernel("gaussian", h=1.0)
    prob = prepare_decomposition(X, kern)
    assert prob.stats["stored_kernel"] and isinstance(prob.K, StoredKernelOperator)
    assert prob.stats["memory_estimate"]["peak"] == decomposition_memory(n, d, n) + 8 * n * n
    # no room for K beside the working sets: matrix-free, same working sets
    tight = decomposition_memory(n, d, n) + 8 * n * n - 1
    prob = prepare_decomposition(X, kern, memory_budget=tight)
    assert not prob.stats["stored_kernel"] and type(prob.K) is KernelOperator
    assert prob.stats["max_chunk"] == n
    # few features: not stored (no faster, README)
    prob = prepare_decomposition(X[:, :d - 1], kern)
    assert not prob.stats["stored_kernel"] and type(prob.K) is KernelOperator
    # ... unless they are integers: K as one byte an entry is worth keeping at any d
    Xb = (X[:, :12] > 0) + 0.0
    u = np.unique(Xb, axis=0).shape[0]
    prob = prepare_decomposition(Xb, kern)
    assert prob.stats["stored_kernel"] and isinstance(prob.K, StoredKernelOperator)
    assert prob.K.memory_bytes == (u if u <= 0.9 * n else n) ** 2 + 8 * 256
    # the estimator takes the cached engine here, which computes its own rows: K is not
    # stored (it would cost the n x n product the engine saves); SVC's SVM at every C
    eps, Cs = 1e-10, [0.1, 3.0, 100.0]
    models = HSSSVC(h=1.0, options=HSSSVCOptions(start="decomposition"), tol=eps).fit_path(X, y, Cs)
    Xt = rng.normal(size=(30, d)) / np.sqrt(d)
    y_pm = np.where(y == 1, 1.0, -1.0)
    for m, C in zip(models, Cs):
        assert not m.hss_["stored_kernel"]
        ref = svc(C, 1.0, eps).fit(X, y)
        assert_same_svm(m, ref, X, (X, Xt), y_pm, C * np.ones(n), gap_tol(eps, C, np.ones(n)))
    # the block decomposition on the stored kernel: SVC's SVM at every C of a path
    backend = HSSBackend(kern,
                         HSSSVCOptions(start="decomposition", solve_exact=True),
                         PathSettings(tol=eps, engine="block"))
    prob = backend.prepare(X, y_pm[:, None])
    assert prob.stats["stored_kernel"] and isinstance(prob.K, StoredKernelOperator)
    K = kernel_operator(X, kern).to_dense()
    for sol in backend.path(prob, y_pm[:, None], Cs):
        ref = svc(sol.C, 1.0, eps).fit(X, y)
        np.testing.assert_allclose(K @ sol.dual_coef[:, 0],
                                   ref.decision_function(X) - ref.intercept_[0],
                                   atol=gap_tol(eps, sol.C, np.ones(n)))
    # repeated rows (a9a holds 24,947 distinct of 32,561): the distinct points' K, same SVM
    Xr = X[rng.integers(0, 60, n)]
    yr = np.where(Xr[:, :3].sum(1) + 0.3 * rng.normal(size=n) > 0, 1, 0)
    prob = prepare_decomposition(Xr, kern)
    u = np.unique(Xr, axis=0).shape[0]
    assert prob.K.memory_bytes == 8 * u * u
    assert prob.stats["memory_estimate"]["peak"] == decomposition_memory(n, d, n) + 8 * u * u
    yr_pm = np.where(yr == 1, 1.0, -1.0)
    for m, C in zip(HSSSVC(h=1.0,
                           options=HSSSVCOptions(start="decomposition"),
                           tol=eps).fit_path(Xr, yr, Cs), Cs):
        ref = svc(C, 1.0, eps).fit(Xr, yr)
        assert_same_svm(m, ref, Xr, (Xr, Xt), yr_pm, C * np.ones(n),
                        gap_tol(eps, C, np.ones(n)))
