"""Kernel entries straight from sparse rows (issue 23): SparseRowsKernelOperator is the dense
KernelOperator of the densified rows (entries, blocks, products, cross kernels) to each
route's rounding; the exact decomposition (ExactSVC, HSSSVC(start="decomposition")) trains
the same model from CSR rows as from the dense array; the boundary keeps sparse input sparse
where the route takes it and the data is sparse and wide or too large to densify.
"""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.svm import SVC, SVR

from hsskern import (ExactSVCOptions, HSSKernelRidge, HSSSVC, HSSSVCOptions, HSSSVR, NystromSVC,
                     kernel_operator)
from hsskern.estimators.exact_svc import ExactSVC
from hsskern.estimators.widths import resolve_gamma
from hsskern.exceptions import MemoryBudgetError
from hsskern.kernels import (KERNELS, SparseRowsCrossKernelOperator, SparseRowsKernelOperator,
                             StoredSparseRowsKernelOperator, make_kernel)
from hsskern.kernels.sparse_rows import prefer_sparse_rows
from hsskern.solvers.paths.hss_path import prepare_decomposition, prepare_hss
from hsskern.solvers.engines.exact import LocalProducts, solve_block
from hsskern.options import PathSettings
from svm_reference import gap_tol, svc

U = np.finfo(np.float64).eps / 2  # unit roundoff


# ------------------------------------------------------------------------ the operator

def _as_sparse(A, layout, rng):
    """A as a scipy sparse matrix stored as ``layout``: csr, csc, csr with each row's
    indices shuffled, or csr with every value split into two duplicate entries."""
    if layout == "csc":
        return sp.csc_matrix(A)
    X = sp.csr_matrix(A)
    if layout == "unsorted":
        idx, val = X.indices.copy(), X.data.copy()
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            p = rng.permutation(hi - lo) + lo
            idx[lo:hi], val[lo:hi] = idx[p], val[p]
        return sp.csr_matrix((val, idx, X.indptr.copy()), shape=X.shape)
    if layout == "duplicates":
        r, c = X.nonzero()
        part = np.ldexp(np.round(X.data * 0.25 * 2.0 ** 20), -20)
        return _dup_csr(r, c, part, X.data - part, X.shape)
    return X


def _dup_csr(r, c, a, b, shape):
    """CSR with two stored entries per position (values a and b): scipy's meaning is a + b."""
    order = np.argsort(np.concatenate([r, r]), kind="stable")
    rows = np.concatenate([r, r])[order]
    cols = np.concatenate([c, c])[order]
    vals = np.concatenate([a, b])[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
    return sp.csr_matrix((vals, cols, indptr), shape=shape)


@st.composite
def sparse_rows(draw, n_max=50, d_max=40):
    """(dense reference, the same rows sparse): several densities, empty rows, all-zero
    columns, duplicated rows, binary or normal values at several scales, and every storage
    (CSC, unsorted CSR indices, duplicate entries)."""
    n = draw(st.integers(1, n_max))
    d = draw(st.integers(1, d_max))
    density = draw(st.sampled_from([0.0, 0.03, 0.1, 0.3, 0.7, 1.0]))
    scale = draw(st.sampled_from([1e-3, 1.0, 300.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    vals = np.ones((n, d)) if draw(st.booleans()) else rng.normal(size=(n, d))
    A = np.where(rng.random((n, d)) < density, vals, 0.0) * scale
    A[rng.random(n) < 0.2] = 0.0  # empty rows
    A[:, rng.random(d) < 0.2] = 0.0  # all-zero columns
    if n > 2 and draw(st.booleans()):
        A[rng.integers(0, n, n // 3)] = A[n - 1]  # duplicated rows: distance exactly 0
    X = _as_sparse(A, draw(st.sampled_from(["csr", "csc", "unsorted", "duplicates"])), rng)
    return X.toarray(), X  # the reference is what scipy means by X (duplicates summed)


def _kernel_params(name, width, A):
    if name == "polynomial":
        return {"degree": 1 + int(width) % 4, "coef0": 1.0}
    w = width * (float(np.sqrt((A * A).sum(1).mean())) or 1.0)
    return {"sigma": w} if name == "compact_gaussian" else {"h": w}


def _entry_tol(kernel, A, B, Kd):
    """Largest |K_sparse - K_dense| each entry may show: the two routes' rounding.

    The sparse route's entry is within a relative 1e-12 of the exact one (the bound it
    checks pair by pair; beyond it, the direct sum over the union of the rows' features).
    The dense route either meets the same bound (the Gaussian's dgemm route) or sums the
    squared distance directly, a relative error below (d + 2) u, which the entry's exponent
    E = -log k (gamma |x - y|^2, or gamma |x - y|) multiplies; exp adds a few ulps. The
    compact Gaussian's support factor (1 - r / 3 sigma)^l adds l (d + 2) u r / (3 sigma - r)
    relatively, and near its edge, where that blows up, at most l (d + 2) u absolutely. A
    polynomial entry (c + x.y)^s moves by s (c + S)^(s-1) times the dot's error
    2 (d + 2) u S, S = sum_k |x_k y_k|, plus the powering's ulps.
    """
    d = A.shape[1]
    if kernel.name == "polynomial":
        S = np.abs(A) @ np.abs(B).T
        base = kernel.coef0 + S
        s = kernel.degree
        return s * base ** (s - 1) * 2 * (d + 2) * U * S + 4 * s * U * base ** s + 1e-300
    with np.errstate(divide="ignore"):
        E = -np.log(Kd)
    E[~np.isfinite(E)] = 0.0
    rel = 2e-12 + 2 * (d + 4) * U * E + 16 * U
    atol = 1e-300
    if kernel.name == "compact_gaussian":
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
        r = np.sqrt(d2)
        q = np.maximum(3 * kernel.sigma - r, 1e-300)
        rel = rel + 2 * kernel.power * (d + 4) * U * r / q
        atol = 4 * kernel.power * (d + 4) * U
    return rel * np.abs(Kd) + atol


def _assert_entries(got, want, tol, what):
    bad = np.abs(got - want) > tol
    assert not bad.any(), (f"{what}: {bad.sum()} entries beyond their bound, e.g. "
                           f"{got[bad][0]!r} vs {want[bad][0]!r} (bound {tol[bad][0]:.3g})")


@settings(max_examples=60, deadline=None)
@given(data=sparse_rows(), other=sparse_rows(n_max=12), name=st.sampled_from(KERNELS),
       width=st.floats(0.05, 20.0), seed=st.integers(0, 10 ** 6))
def test_entries_blocks_products_and_cross_are_the_dense_operators(data, other, name, width,
                                                                   seed):
    A, X = data
    if name == "polynomial":  # keep (1 + x.y)^s from overflowing the comparison
        s = np.abs(A).max() or 1.0
        A, X = A / s, X / s
    params = _kernel_params(name, width, A)
    Ks, Kd = kernel_operator(X, name, **params), kernel_operator(A, name, **params)
    assert isinstance(Ks, SparseRowsKernelOperator)
    n = A.shape[0]
    D = Kd.to_dense()
    T = _entry_tol(Kd.kernel, A, A, D)
    S = Ks.to_dense()
    _assert_entries(S, D, T, "to_dense")
    np.testing.assert_array_equal(S, S.T)  # upper triangle mirrored: exactly symmetric
    if Ks.kernel.scale_invariant:  # a point against itself: distance exactly 0
        np.testing.assert_array_equal(np.diag(S), 1.0)
        np.testing.assert_array_equal(Ks.diag(), 1.0)
    else:
        np.testing.assert_allclose(Ks.diag(), Kd.diag(), rtol=1e-13)
    rng = np.random.default_rng(seed)
    I, J = rng.integers(0, n, rng.integers(0, 2 * n + 1)), rng.integers(0, n, 9)
    _assert_entries(Ks.submatrix(I, J), D[np.ix_(I, J)], T[np.ix_(I, J)], "submatrix")
    B = Ks.submatrix(I, I)
    np.testing.assert_array_equal(B, B.T)
    if Ks.kernel.scale_invariant:  # the same point at two positions: exactly k(x, x)
        np.testing.assert_array_equal(B[I[:, None] == I[None, :]], 1.0)
    out = np.full((I.size, J.size), np.nan)
    assert Ks.submatrix(I, J, out=out) is out
    np.testing.assert_array_equal(out, Ks.submatrix(I, J))
    # products: every entry's bound times |V|, plus the sums' own rounding
    V = rng.normal(size=(n, 3))
    pt = T @ np.abs(V) + 4 * n * U * (np.abs(D) @ np.abs(V))
    _assert_entries(Ks @ V, D @ V, pt, "matmat")
    _assert_entries(Ks.matvec(V[:, 0]), D @ V[:, 0], pt[:, 0], "matvec")
    # cross kernels: sparse rows of another set, or the same rows dense
    Ad, Y = other
    if Ad.shape[1] != A.shape[1]:
        Ad = np.resize(Ad, (Ad.shape[0], A.shape[1]))
        Y = sp.csr_matrix(Ad)
    if name == "polynomial":
        s = np.abs(Ad).max() or 1.0
        Ad, Y = Ad / s, Y / s
    Cd = Kd.cross(Ad).to_dense()
    Tc = _entry_tol(Kd.kernel, Ad, A, Cd)
    for Yin in (Y, Ad):
        Cs = Ks.cross(Yin)
        assert isinstance(Cs, SparseRowsCrossKernelOperator) and Cs.shape == Cd.shape
        _assert_entries(Cs.to_dense(), Cd, Tc, "cross")
        K2 = rng.integers(0, Ad.shape[0], 5)
        _assert_entries(Cs.submatrix(K2, J), Cd[np.ix_(K2, J)], Tc[np.ix_(K2, J)],
                        "cross submatrix")
        _assert_entries(Cs @ V, Cd @ V, Tc @ np.abs(V) + 4 * n * U * (np.abs(Cd) @ np.abs(V)),
                        "cross matmat")
        W = rng.normal(size=(Ad.shape[0], 2))
        _assert_entries(Cs.T @ W, Cd.T @ W,
                        Tc.T @ np.abs(W) + 4 * Ad.shape[0] * U * (np.abs(Cd.T) @ np.abs(W)),
                        "cross adjoint")


def test_nearby_points_with_large_norms_take_the_direct_sum():
    # |x|^2 + |y|^2 - 2 x.y loses everything here (norms 1e12, distances 1): the pairs whose
    # bound fails are summed directly and match the dense evaluator's direct sums
    rng = np.random.default_rng(0)
    A = np.zeros((40, 30))
    A[:, 0] = 1e6
    A[:, 1:4] = rng.normal(size=(40, 3))
    X = sp.csr_matrix(A)
    G = A @ A.T
    sq = np.diag(G)
    naive = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2 * G, 0) / 2)
    for name, params in (("gaussian", {"h": 1.0}), ("laplacian", {"h": 1.0}),
                         ("compact_gaussian", {"sigma": 2.0, "power": 16})):
        Ks, Kd = kernel_operator(X, name, **params), kernel_operator(A, name, **params)
        D = Kd.to_dense()
        _assert_entries(Ks.to_dense(), D, _entry_tol(Kd.kernel, A, A, D), name)
        if name == "gaussian":  # the expansion alone would have been wrong
            assert np.abs(naive - D).max() > 1e-6


@pytest.mark.parametrize("name", ["gaussian", "laplacian"])
def test_rows_mixing_pairs_that_fail_the_bound_and_pairs_that_pass(name):
    # half the points far out (the expansion fails between them), half near 0 (it holds):
    # one kernel row holds both kinds, and a point's own entry, in blocks and products
    rng = np.random.default_rng(1)
    A = np.zeros((60, 30))
    A[:, 1:6] = rng.normal(size=(60, 5))
    A[::2, 0] = 1e6
    X = sp.csr_matrix(A)
    Ks, Kd = kernel_operator(X, name, h=1.5), kernel_operator(A, name, h=1.5)
    D = Kd.to_dense()
    _assert_entries(Ks.to_dense(), D, _entry_tol(Kd.kernel, A, A, D), name)
    I = rng.permutation(60)[:25]
    _assert_entries(Ks.submatrix(I, I), D[np.ix_(I, I)], _entry_tol(Kd.kernel, A[I], A[I],
                                                                  D[np.ix_(I, I)]), name)
    V = rng.normal(size=(60, 2))
    np.testing.assert_allclose(Ks @ V, D @ V, rtol=1e-10, atol=1e-12 * np.abs(V).sum())
    np.testing.assert_allclose(Ks.cross(A[I]) @ V, D[I] @ V, rtol=1e-10,
                               atol=1e-12 * np.abs(V).sum())


@pytest.mark.parametrize("scale, width", [(1e200, 1e200), (1e-200, 1e-200), (1e-150, 1.0)])
def test_extreme_scales_are_rescaled_exactly_as_the_dense_operator(scale, width):
    rng = np.random.default_rng(1)
    A = np.where(rng.random((30, 8)) < 0.4, rng.normal(size=(30, 8)), 0.0) * scale
    for name in ("gaussian", "laplacian"):
        Ks = kernel_operator(sp.csr_matrix(A), name, h=width)
        Kd = kernel_operator(A, name, h=width)
        D = Kd.to_dense()
        assert np.isfinite(Ks.to_dense()).all()
        _assert_entries(Ks.to_dense(), D, _entry_tol(Kd.kernel, A / scale, A / scale, D), name)


def test_values_beyond_the_float_range_of_the_width_are_refused_clearly():
    X = sp.csr_matrix(np.array([[1e300, 0.0], [0.0, -1e300]]))
    with pytest.raises(ValueError, match=r"values up to 1e\+300.*kernel widths.*h >= "):
        kernel_operator(X, "gaussian", h=1e-300)
    with pytest.raises(ValueError, match=r"beyond float64"):
        kernel_operator(sp.csr_matrix(np.array([[1e200, 1.0]])), "polynomial", degree=3)


def test_rows_far_from_every_column_have_entries_exactly_zero_as_the_dense_operator():
    A = np.random.default_rng(2).normal(size=(20, 5))
    Y = np.array([[1e300, 0, 0, 0, 0], [0.5, 0, 0, 0, 0]])
    Cs = kernel_operator(sp.csr_matrix(A), "gaussian", h=1.0).cross(sp.csr_matrix(Y))
    Cd = kernel_operator(A, "gaussian", h=1.0).cross(Y)
    S = Cs.to_dense()
    np.testing.assert_array_equal(S[0], 0.0)
    np.testing.assert_array_equal(S[0], Cd.to_dense()[0])
    np.testing.assert_allclose(S[1], Cd.to_dense()[1], rtol=1e-12)
    np.testing.assert_array_equal((Cs @ np.ones(20))[0], 0.0)


def test_bad_sparse_points_are_clear_errors():
    X = sp.csr_matrix(np.eye(4))
    X.data[2] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity \(first at row 2, column 2\)"):
        kernel_operator(X)
    with pytest.raises(TypeError, match="real-valued"):
        kernel_operator(sp.csr_matrix(np.eye(3) * 1j))
    with pytest.raises(ValueError, match="0 features"):
        kernel_operator(sp.csr_matrix((3, 0)))
    K = kernel_operator(sp.csr_matrix(np.eye(4)))
    with pytest.raises(ValueError, match="Y has 3 features but the operator's points have 4"):
        K.cross(sp.csr_matrix(np.eye(3)))
    with pytest.raises(ValueError, match="Y contains NaN"):
        K.cross(np.full((1, 4), np.nan))


# bad indices and bad ``out`` buffers: tests/test_kernels.py, for dense and sparse rows alike


def test_the_callers_matrix_is_neither_changed_nor_followed_and_pickling_keeps_entries():
    rng = np.random.default_rng(3)
    A = np.where(rng.random((30, 12)) < 0.3, rng.normal(size=(30, 12)), 0.0)
    X = _as_sparse(A, "unsorted", rng)
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    K = kernel_operator(X, "laplacian", h=0.8)
    for a, b in zip(before, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(a, b)  # not sorted in place
    D = K.to_dense()
    X.data[:] = 7.0  # later writes to the caller's matrix do not reach the operator
    np.testing.assert_array_equal(K.to_dense(), D)
    assert not K.points.data.flags.writeable
    K2 = pickle.loads(pickle.dumps(K))
    np.testing.assert_array_equal(K2.to_dense(), D)
    C = K.cross(X[:4])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(C)).to_dense(), C.to_dense())
    assert repr(K).startswith("<SparseRowsKernelOperator n=30 d=12 nnz=")
    S = K.shifted(2.0)
    np.testing.assert_array_equal(S.to_dense(), D + 2.0 * np.eye(30))


def test_stored_operator_is_the_matrix_free_one_and_serves_the_decomposition():
    rng = np.random.default_rng(4)
    A = np.where(rng.random((80, 100)) < 0.05, rng.normal(size=(80, 100)), 0.0)
    K = kernel_operator(sp.csr_matrix(A), "gaussian", h=1.5)
    S = K.stored()
    assert isinstance(S, StoredSparseRowsKernelOperator) and S.memory_bytes == 8 * 80 * 80
    np.testing.assert_array_equal(S.to_dense(), K.to_dense())
    I, J = rng.integers(0, 80, 13), rng.integers(0, 80, 7)
    np.testing.assert_array_equal(S.submatrix(I, J), S.to_dense()[np.ix_(I, J)])
    f0 = rng.normal(size=80)
    cols, c = np.array([3, 10, 50]), rng.normal(size=3)
    a, b = f0.copy(), f0.copy()
    LocalProducts(K.points, K.kernel).add(a, cols, c)
    S.add(b, cols, c)
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    y = np.where(A[:, :50].sum(1) + 0.1 * rng.normal(size=80) > 0, 1.0, -1.0)
    r1, r2 = solve_block(K, y, 1.0, tol=1e-6), solve_block(S, y, 1.0, tol=1e-6)
    assert r1.converged and r2.converged
    np.testing.assert_allclose(r2.alpha, r1.alpha, atol=1e-9)
    assert type(pickle.loads(pickle.dumps(S))) is SparseRowsKernelOperator
    # the decomposition route stores it when the budget holds it (d >= 64)
    p = prepare_decomposition(sp.csr_matrix(A), make_kernel("gaussian", h=1.5),
                              memory_budget=2 ** 30)
    assert p.stats["stored_kernel"] and isinstance(p.K, StoredSparseRowsKernelOperator)


# ------------------------------------------------------------------------ the estimators

def sparse_problem(seed, n, d, k=6, per_center=8, noise=4, n_classes=2):
    """Sparse clustered points: k sparse centers (``per_center`` features each), every point
    a center with jitter plus ``noise`` random features; labels the center's class, 10%
    redrawn. Dense array and CSR of the same rows."""
    rng = np.random.default_rng(seed)
    centers = [(rng.choice(d, per_center, replace=False), rng.normal(size=per_center))
               for _ in range(k)]
    A = np.zeros((n, d))
    y = np.empty(n, dtype=int)
    for i in range(n):
        c = rng.integers(k)
        idx, val = centers[c]
        A[i, idx] = val + 0.3 * rng.normal(size=per_center)
        extra = rng.choice(d, noise, replace=False)
        A[i, extra] += 0.5 * rng.normal(size=noise)
        y[i] = c % n_classes if rng.random() > 0.1 else rng.integers(n_classes)
    return A, sp.csr_matrix(A), y


ESTIMATORS = [
    lambda C: ExactSVC(h=1.5, C=C,
                       options=ExactSVCOptions(subsample=100, validation_fraction=0.0),
                       random_state=0),
    lambda C: HSSSVC(h=1.5, C=C, options=HSSSVCOptions(start="decomposition")),
]


@pytest.mark.parametrize("make", ESTIMATORS, ids=["ExactSVC", "HSSSVC"])
@pytest.mark.parametrize("C", [0.5, 5.0])
def test_sparse_rows_train_the_dense_model(make, C):
    A, X, y = sparse_problem(0, 300, 500)
    At, Xt, _ = sparse_problem(1, 80, 500)
    assert prefer_sparse_rows(X)  # sparse and wide: the rows stay sparse
    sparse, dense = make(C).fit(X, y), make(C).fit(A, y)
    assert sp.issparse(sparse.support_vectors_) and not sp.issparse(dense.support_vectors_)
    if isinstance(sparse, ExactSVC):
        assert sparse.converged_.all() and dense.converged_.all()
    # the same model: entries agree to 1e-12, so both decompositions take the same steps;
    # decision values to the solver's tolerance (two solutions at gap 1e-3) and the same
    # support vectors
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    np.testing.assert_array_equal(sparse.support_vectors_.toarray(), dense.support_vectors_)
    tol = gap_tol(1e-3, C, np.ones(300))
    ds = sparse.decision_function(Xt)
    np.testing.assert_allclose(ds, dense.decision_function(At), atol=tol)
    # and LIBSVM's SVM, which reads CSR itself
    ref = svc(C, 1.5, 1e-6).fit(X, y)
    np.testing.assert_allclose(ds, ref.decision_function(Xt), atol=tol)
    np.testing.assert_array_equal(sparse.predict(Xt), dense.predict(At))
    # dense test rows give what their CSR gives; pickling keeps the predictions
    np.testing.assert_array_equal(sparse.decision_function(At), ds)
    back = pickle.loads(pickle.dumps(sparse))
    np.testing.assert_array_equal(back.decision_function(Xt), ds)
    np.testing.assert_array_equal(back.predict(Xt), sparse.predict(Xt))


def test_multiclass_and_probabilities_from_sparse_rows():
    A, X, y = sparse_problem(2, 240, 400, n_classes=3)
    m = HSSSVC(h=1.5, C=2.0,
               options=HSSSVCOptions(start="decomposition"), probability=True, random_state=0)
    m.fit(X, y)
    assert sp.issparse(m.support_vectors_)
    ref = svc(2.0, 1.5, 1e-6, decision_function_shape="ovr").fit(X, y)
    acc, acc_ref = (m.predict(X) == y).mean(), (ref.predict(X) == y).mean()
    assert abs(acc - acc_ref) <= 0.02
    P = m.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).predict_proba(X), P)
    np.testing.assert_array_equal(m.predict_proba(A), P)


def test_a_matrix_whose_dense_copy_does_not_fit_trains_from_its_sparse_rows():
    # 15% of the entries stored: not "sparse and wide", densified when that fits; beyond the
    # budget the sparse rows are taken (the decomposition's memory fits: its estimate counts
    # two copies of sparse rows and a 200-point working set, so the dense copy must be larger)
    rng = np.random.default_rng(5)
    A = np.where(rng.random((200, 2000)) < 0.15, rng.normal(size=(200, 2000)), 0.0)
    X = sp.csr_matrix(A)
    y = np.where(A[:, :1000].sum(1) > A[:, 1000:].sum(1), 1, 0)
    assert not prefer_sparse_rows(X)
    dense_bytes = 8 * 200 * 2000
    budget = 0.9 * dense_bytes
    kw = dict(h=8.0, C=1.0, options=ExactSVCOptions(subsample=80, validation_fraction=0.0),
              random_state=0)
    m = ExactSVC(memory_budget=budget, **kw).fit(X, y)
    assert sp.issparse(m.support_vectors_) and m.converged_.all()
    roomy = ExactSVC(**kw).fit(X, y)  # fits: densified, the model of the dense array
    assert not sp.issparse(roomy.support_vectors_)
    np.testing.assert_array_equal(m.support_, roomy.support_)
    np.testing.assert_allclose(m.decision_function(X), roomy.decision_function(A),
                               atol=gap_tol(1e-3, 1.0, np.ones(200)))
    # what needs dense coordinates refuses, with the estimate and the routes that take it
    for est in (NystromSVC(h=1.0, memory_budget=budget), HSSSVC(
        options=HSSSVCOptions(start="admm"), memory_budget=budget)):
        with pytest.raises(MemoryBudgetError,
                           match=r"densifying the sparse input \(200 x 2000, \d+ stored "
                                 r"entries.*about 3\.1 MB.*ExactSVC and "
                                 r"HSSSVC\(options=HSSSVCOptions\(start=\"decomposition\"\)\) "
                                 r"take sparse rows"):
            est.fit(X, y)
    with pytest.raises(MemoryBudgetError, match=r"HSS compression: densifying.*ExactSVC"):
        prepare_hss(X, make_kernel("gaussian", h=8.0), memory_budget=budget)


def test_the_boundary_rule():
    A, X, y = sparse_problem(3, 120, 300)
    narrow = sp.csr_matrix(np.where(np.random.default_rng(0).random((120, 6)) < 0.5, 1.0, 0.0))
    # the rule: density <= 10% and d >= 100 keep the rows sparse where the route takes them
    assert prefer_sparse_rows(X) and not prefer_sparse_rows(narrow)
    assert sp.issparse(ExactSVC(
        options=ExactSVCOptions(subsample=50), random_state=0).fit(X, y).support_vectors_)
    assert not sp.issparse(ExactSVC(
        options=ExactSVCOptions(subsample=50), random_state=0).fit(narrow, y)
                           .support_vectors_)
    # start="auto" resolves to the decomposition at this n: sparse rows; "admm" compresses
    assert sp.issparse(HSSSVC().fit(X, y).support_vectors_)
    assert not sp.issparse(HSSSVC(
        options=HSSSVCOptions(start="admm"), random_state=0).fit(X, y).support_vectors_)


def test_gamma_scale_on_sparse_rows_is_svcs():
    A, X, y = sparse_problem(4, 100, 300)
    g = resolve_gamma("scale", X)
    np.testing.assert_allclose(g, resolve_gamma("scale", A), rtol=1e-12)
    np.testing.assert_allclose(g, SVC(gamma="scale").fit(X, y)._gamma, rtol=1e-12)
    # solved tightly: at tol 1e-3 two runs whose kernel entries differ by rounding may stop
    # at different points of the tolerance ball (1e-4 apart), both correct
    kw = dict(gamma="scale", options=ExactSVCOptions(subsample=50), random_state=0, tol=1e-9)
    m = ExactSVC(**kw).fit(X, y)
    np.testing.assert_allclose(m.decision_function(X),
                               ExactSVC(**kw).fit(A, y).decision_function(A), atol=1e-6)


@pytest.mark.parametrize("C", [0.5, 20.0])
def test_svr_from_sparse_rows_is_the_dense_model_and_libsvms(C):
    # HSSSVR's start from zero is the same decomposition: sparse rows, sparse support
    # vectors, the dense array's model and SVR's (which reads CSR itself), at every C of a
    # path
    A, X, _ = sparse_problem(6, 300, 500)
    At, Xt, _ = sparse_problem(7, 80, 500)
    y = A[:, :250].sum(1) - A[:, 250:].sum(1)
    assert prefer_sparse_rows(X)
    Cs = [C / 10, C]
    sparse = HSSSVR(h=1.5, epsilon=0.05).fit_path(X, y, Cs)
    # the dense array's inner products in double, as the sparse rows' (its default takes
    # them in float32 at tol 1e-3: LIBSVM's precision, not the sparse model's bits)
    dense = HSSSVR(h=1.5, epsilon=0.05).set_params(
        options__decomposition__cross_dtype="float64").fit_path(A, y, Cs)
    for s, d, c in zip(sparse, dense, Cs):
        assert s.hss_["start"] == "decomposition" and s.fit_status_ == 0
        assert sp.issparse(s.support_vectors_) and not sp.issparse(d.support_vectors_)
        np.testing.assert_array_equal(s.support_, d.support_)
        ps = s.predict(Xt)
        np.testing.assert_allclose(ps, d.predict(At), atol=1e-9 * max(1.0, c))
        ref = SVR(C=c, gamma=1 / (2 * 1.5 ** 2), epsilon=0.05, tol=1e-8).fit(X, y)
        # two solutions at gap 1e-3 (as tests/test_svr.py)
        np.testing.assert_allclose(ps, ref.predict(Xt), atol=10 * 1e-3 * max(1.0, np.sqrt(c)))
        np.testing.assert_array_equal(s.predict(At), ps)
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(s)).predict(Xt), ps)


def test_regressors_needing_dense_coordinates_name_the_svr_that_takes_sparse_rows():
    rng = np.random.default_rng(5)
    A = np.where(rng.random((200, 1000)) < 0.15, rng.normal(size=(200, 1000)), 0.0)
    X, y = sp.csr_matrix(A), A.sum(1)
    budget = 0.9 * 8 * 200 * 1000
    with pytest.raises(MemoryBudgetError,
                       match=r"densifying the sparse input.*HSSSVR\(options=HSSSVROptions\("
                             r"start=\"decomposition\"\)\) "
                             r"take sparse rows"):
        HSSKernelRidge(memory_budget=budget).fit(X, y)
    m = HSSSVR(h=8.0, memory_budget=budget).fit(X, y)  # beyond the budget: sparse rows
    assert sp.issparse(m.support_vectors_) and m.fit_status_ == 0


def _standardized_binary(seed, n, d, density):
    """Standardized binary features (most of each column one value), and labels."""
    rng = np.random.default_rng(seed)
    B = (rng.random((n, d)) < density).astype(float)
    B[0] = 1.0  # no constant column
    X = (B - B.mean(axis=0)) / B.std(axis=0)
    y = np.where(B[:, :5].sum(axis=1) + 0.3 * rng.normal(size=n) > 5 * density, 1.0, -1.0)
    return X, y


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), name=st.sampled_from(["gaussian", "laplacian"]))
def test_shifted_sparse_rows_have_the_kernel_of_the_dense_points(seed, name):
    """Dense rows that are mostly their columns' common value become sparse rows minus that
    value: the same kernel matrix (to the operators' 1e-12), where the kernel depends on
    differences alone and the shifted rows are sparse and wide; else None."""
    from hsskern.kernels.sparse_rows import shifted_sparse_rows
    X, _ = _standardized_binary(seed, 150, 120, 0.04)
    kern = make_kernel(name, h=3.0)
    Z = shifted_sparse_rows(X, kern)
    assert sp.issparse(Z) and prefer_sparse_rows(Z)
    b = X[1:] - Z[1:].toarray()  # every row: X minus its sparse part is the shift
    np.testing.assert_allclose(b, np.broadcast_to(b[0], b.shape), rtol=0, atol=1e-14)
    np.testing.assert_allclose(kernel_operator(Z, kern).to_dense(),
                               kernel_operator(X, kern).to_dense(), rtol=1e-12, atol=1e-14)
    assert shifted_sparse_rows(X, make_kernel("polynomial", degree=2)) is None  # not x - x'
    assert shifted_sparse_rows(X[:, :99], kern) is None  # too narrow for sparse rows
    dense = np.random.default_rng(seed).normal(size=(150, 120))
    assert shifted_sparse_rows(dense, kern) is None


def test_the_block_route_on_standardized_binary_features_takes_shifted_rows_and_is_svcs():
    """One fit's block route evaluates the kernel from the shifted sparse rows: SVC's SVM,
    and the model's points are the caller's dense rows (predictions on new dense rows)."""
    from hsskern.solvers.paths.hss_path import HSSBackend
    X, y = _standardized_binary(3, 400, 150, 0.05)
    gamma = 1.0 / (X.shape[1] * X.var())
    kern = make_kernel("gaussian", gamma=gamma)
    prob = prepare_decomposition(X, kern, engine="block", store_kernel=False)
    assert prob.stats["shifted_rows"] and isinstance(prob.K, SparseRowsKernelOperator)
    backend = HSSBackend(kern,
                         HSSSVCOptions(start="decomposition", solve_exact=True),
                         PathSettings(tol=1e-8, engine="block", store_kernel=False))
    prob = backend.prepare(X, y[:, None])
    assert prob.stats["shifted_rows"]
    sol, = backend.path(prob, y[:, None], [1.0])
    ref = SVC(C=1.0, gamma=gamma, tol=1e-8).fit(X, y)
    model = backend.model(prob, (sol,))
    Xt, _ = _standardized_binary(4, 60, 150, 0.05)
    Kd = kernel_operator(X, kern).to_dense()
    bound = gap_tol(1e-8, 1.0, np.ones(y.size))
    np.testing.assert_allclose(Kd @ sol.dual_coef[:, 0],
                               ref.decision_function(X) - ref.intercept_[0], atol=bound)
    assert not sp.issparse(model.support_vectors)  # the caller's dense rows
    np.testing.assert_array_equal(model.support_vectors, X[model.support])
    np.testing.assert_allclose(model.decision(Xt)[0, :, 0], ref.decision_function(Xt),
                               atol=bound + 1e-3)  # SVC's intercept: to its tolerance
    assert np.mean(np.sign(model.decision(Xt)[0, :, 0]) == ref.predict(Xt)) >= 0.98
