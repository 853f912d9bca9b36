"""Points and kernel widths at any finite scale: exact entries, valid neighbours, no crash.

The reference works in np.longdouble (x87 extended on x86-64: exponents to +-16382), where
squared distances of coordinates near 1e300 and 1 / (2 h^2) for h near 1e-300 are finite.
"""
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, strategies as st

from hsskern import HsskernError, kernel_operator
from hsskern.cluster import build_cluster_tree, knn
from hsskern.cluster import neighbors as _neighbors
from hsskern.kernels._surface import _MAX_EXTENT_LOG2
from hsskern.kernels.functions import _MAX_POLY_LOG2

LD = np.longdouble
needs_extended = pytest.mark.skipif(np.finfo(LD).maxexp <= 1024,
                                    reason="np.longdouble is double on this platform")
U = np.finfo(np.float64).eps / 2


@st.composite
def scaled_points(draw, n_max=40, d_max=14):
    """Points whose columns have scales 10^e, e in [-300, 300], sometimes offset, with
    duplicates and constant columns."""
    n = draw(st.integers(1, n_max))
    d = draw(st.integers(1, d_max))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    exps = np.array(draw(st.lists(st.integers(-300, 300), min_size=d, max_size=d)))
    X = rng.normal(size=(n, d)) * 10.0 ** exps
    if draw(st.booleans()):  # a common offset, large next to some columns' spread
        X += rng.normal(size=d) * 10.0 ** draw(st.sampled_from(exps))
    if draw(st.booleans()) and n > 2:
        X[rng.integers(0, n, n // 3)] = X[0]
    if draw(st.booleans()):
        X[:, rng.integers(0, d)] = 10.0 ** draw(st.integers(-300, 300))
    return X


def _reference(name, X, Y, w, l=None):
    """(entries, exponent magnitude q) in longdouble: the entry's relative condition is ~q."""
    Xl, Yl, wl = X.astype(LD), Y.astype(LD), LD(w)
    d2 = np.sum((Xl[:, None, :] - Yl[None, :, :]) ** 2, axis=-1)
    if name == "gaussian":
        q = d2 / (2 * wl * wl)
        return np.exp(-q), q
    if name == "laplacian":
        q = np.sqrt(d2) / wl
        return np.exp(-q), q
    t = np.sqrt(d2) / (3 * wl)
    base = np.maximum(1 - t, LD(0))
    q = d2 / (2 * wl * wl)
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = q + np.where(base > 0, LD(l) * t / base, 0)
    return base ** LD(l) * np.exp(-q), cond


def _extent_log2(*arrays):
    A = np.vstack(arrays).astype(LD)
    return float(np.log2(np.max(A.max(axis=0) - A.min(axis=0)) / 2)) if len(A) > 1 and \
        np.ptp(A, axis=0).max() > 0 else -math.inf


def _assert_entries(K, R, q, d):
    A = K.to_dense() if R.shape[0] * R.shape[1] else np.zeros(R.shape)
    # rounding of d^2 (d + 2 ops, relative) times the entry's condition, plus underflow
    tol = 8 * (d + 4) * U * (1 + q) * R + LD(1e-300)
    assert np.all(np.isfinite(A))
    assert np.all(np.abs(A.astype(LD) - R) <= tol)
    v = np.random.default_rng(0).standard_normal(R.shape[1])
    np.testing.assert_array_less(np.abs((K @ v).astype(LD) - R @ v.astype(LD)),
                                 tol @ np.abs(v).astype(LD) + LD(1e-280) + 64 * U *
                                 np.abs(R) @ np.abs(v).astype(LD))


@needs_extended
@given(X=scaled_points(), name=st.sampled_from(["gaussian", "laplacian", "compact_gaussian"]),
       relative=st.booleans(), w_exp=st.integers(-300, 300), w_fac=st.floats(0.1, 10.0),
       seed=st.integers(0, 10**6))
def test_scale_invariant_kernels_exact_at_every_scale(X, name, relative, w_exp, w_fac, seed):
    n, d = X.shape
    # a width at the data's scale (entries of every size) or anywhere in [1e-300, 1e300]
    spread = float(np.ptp(X, axis=0).max())
    w = w_fac * (spread if relative and spread > 0 else 10.0 ** w_exp)
    kw = {"sigma": w, "power": 2} if name == "compact_gaussian" else {"h": w}
    M = float(np.abs(X).max())
    spread_out = _extent_log2(X) - math.log2(w) > _MAX_EXTENT_LOG2
    # refused only where the spread, or the coordinates, over the width leave the float64
    # range; coordinates far past the width with a small spread (one point at 1e268 and
    # h = 1e-39) may be taken, and are then exact
    try:
        K = kernel_operator(X, name, **kw)
    except ValueError as exc:
        assert "h" in str(exc) or "sigma" in str(exc)
        assert spread_out or (M > 0 and math.log2(M) - math.log2(w) > 1019)
        return
    assert not spread_out
    assert K.kernel.width == w and K.points is not None
    np.testing.assert_array_equal(K.points, X)  # the public points are the user's
    R, q = _reference(name, X, X, w, 2)
    _assert_entries(K, R, q, d)
    I = np.random.default_rng(seed).integers(0, n, min(n, 7))
    S = K.submatrix(I, I)
    assert np.all(np.abs(S.astype(LD) - R[np.ix_(I, I)]) <=
                  8 * (d + 4) * U * (1 + q[np.ix_(I, I)]) * R[np.ix_(I, I)] + LD(1e-300))
    # new points anywhere, also far outside the training box (entries exactly 0 there)
    rng = np.random.default_rng(seed)
    Y = np.vstack((X[rng.integers(0, n, 3)] * (1 + 1e-3 * rng.standard_normal((3, d))),
                   rng.normal(size=(2, d)) * 1e300))
    C = K.cross(Y)
    Rc, qc = _reference(name, Y, X, w, 2)
    _assert_entries(C, Rc, qc, d)


@needs_extended
@given(X=scaled_points(n_max=30, d_max=5), degree=st.integers(1, 40),
       coef0=st.sampled_from([0.0, 1.0]))
def test_polynomial_kernel_overflow_is_refused_with_the_numbers(X, degree, coef0):
    Xl = X.astype(LD)
    bound = float(np.max(np.sum(Xl * Xl, axis=1))) + coef0  # >= every |coef0 + x.y|
    if bound > 0 and degree * math.log2(bound) > _MAX_POLY_LOG2:
        with pytest.raises(ValueError, match=f"degree={degree}"):
            kernel_operator(X, "polynomial", degree=degree, coef0=coef0)
        return
    K = kernel_operator(X, "polynomial", degree=degree, coef0=coef0)
    A = K.to_dense()
    assert np.all(np.isfinite(A))
    R = (coef0 + Xl @ Xl.T) ** degree
    assert np.all(np.abs(A - R) <= 4 * (degree + X.shape[1]) * U * (coef0 + np.abs(Xl) @
                                                                    np.abs(Xl).T) ** degree
                  + LD(1e-300))


def test_extreme_widths_work_or_are_refused_clearly():
    X = np.random.default_rng(0).normal(size=(20, 3))
    # very wide: all ones (exp(-1e-400) rounds to 1), no OverflowError from h ** 2
    np.testing.assert_array_equal(kernel_operator(X, h=1e200).to_dense(), np.ones((20, 20)))
    np.testing.assert_array_equal(kernel_operator(X, "laplacian", h=1e308).to_dense(),
                                  np.ones((20, 20)))
    # very narrow next to the points' spread: the identity, still exact
    np.testing.assert_array_equal(kernel_operator(X, h=1e-100).to_dense(), np.eye(20))
    # points spread over ~1e160 widths: refused, naming the width that would work
    with pytest.raises(ValueError, match=r"kernel widths \(h = 1, i\.e\. gamma = 0\.5\).*h >= "):
        kernel_operator(X * 1e160)
    with pytest.raises(ValueError, match=r"sigma = 1"):
        kernel_operator(X * 1e160, "compact_gaussian", sigma=1.0)
    # a tiny width beside huge (constant) coordinates: refused, not inf/NaN
    Z = np.column_stack((np.full(20, 1e10), X[:, 0] * 1e-300))
    with pytest.raises(ValueError, match="too small for points with coordinates up to 1e"):
        kernel_operator(Z, h=1e-300)
    with pytest.raises(ValueError, match="gamma"):
        kernel_operator(X, "laplacian", gamma=1e-320)


@needs_extended
@given(X=scaled_points(n_max=120, d_max=6), k=st.integers(1, 12),
       method=st.sampled_from(["exact", "rptree"]), seed=st.integers(0, 99))
def test_knn_at_every_scale_returns_valid_exact_pairs(X, k, method, seed):
    n = X.shape[0]
    idx, dist = knn(X, k, method=method, random_state=seed, n_iter=2)
    kk = min(k, n - 1)
    assert idx.shape == dist.shape == (n, kk)
    assert idx.dtype == np.intp
    if kk == 0:
        return
    assert idx.min() >= 0 and idx.max() < n
    assert not np.any(idx == np.arange(n)[:, None])
    assert all(len(set(r)) == kk for r in idx)
    Xl = X.astype(LD)
    true = np.sqrt(np.sum((Xl[:, None, :] - Xl[idx]) ** 2, axis=-1))
    assert np.all(np.abs(dist - true) <= 4 * (X.shape[1] + 2) * U * true + LD(1e-300))
    assert np.all(np.diff(dist, axis=1) >= 0)
    if method == "exact":  # the k nearest, to rounding
        D = np.sqrt(np.sum((Xl[:, None, :] - Xl[None, :, :]) ** 2, axis=-1))
        D[np.arange(n), np.arange(n)] = np.inf
        kth = np.sort(D, axis=1)[:, kk - 1]
        assert np.all(true[:, -1] <= kth * (1 + 8 * (X.shape[1] + 2) * U) + LD(1e-300))


def test_knn_scaled_by_powers_of_two_gives_the_same_neighbours():
    X = np.random.default_rng(1).normal(size=(3000, 5))
    i0, d0 = knn(X, 8, random_state=0)
    for e in (-1000, -520, 520, 1000):
        i, dd = knn(np.ldexp(X, e), 8, random_state=0)
        np.testing.assert_array_equal(i, i0)
        np.testing.assert_array_equal(dd, np.ldexp(d0, e))


def test_knn_refuses_out_of_range_indices(monkeypatch):
    X = np.random.default_rng(2).normal(size=(50, 2))

    def broken(Xs, k):  # what cKDTree returns for neighbours it could not reach
        return np.full((len(Xs), k), len(Xs), dtype=np.intp), np.full((len(Xs), k), np.inf)

    monkeypatch.setattr(_neighbors, "_exact", broken)
    with pytest.raises(HsskernError, match=r"index 50 for point 0, outside \[0, 50\)"):
        knn(X, 3, method="exact")


def test_cluster_tree_splits_points_at_extreme_scales():
    X = np.random.default_rng(3).normal(size=(2000, 3))
    t0 = build_cluster_tree(X, 64, random_state=0)

    def leaf_spread(t, Z):  # mean leaf bounding-box diagonal over the whole set's
        Z = Z.astype(LD)
        return float(np.mean([np.linalg.norm(np.ptp(Z[t.indices(v)], axis=0))
                              for v in t.leaves()]) / np.linalg.norm(np.ptp(Z, axis=0)))

    for Z in (X * 1e300, X * 1e-300, X * 1e290 + 1e300,
              np.column_stack((X[:, :2] * 1e-300, X[:, 2] * 1e300))):
        t = build_cluster_tree(Z, 64, random_state=0)
        np.testing.assert_array_equal(np.sort(t.perm), np.arange(2000))
        assert (t.hi - t.lo)[t.leaves()].max() <= 64
        assert t.depth <= t0.depth + 2  # balanced splits, not a chain of halvings
        # as coherent as the unit-scale tree's leaves (an overflowing split rule would fall
        # back to cutting ranges in half: leaves as wide as the whole set)
        assert leaf_spread(t, Z) <= 1.2 * leaf_spread(t0, X) < 0.5


def _run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)


def test_huge_points_are_refused_in_a_subprocess_not_a_crash():
    # issue 21's reproducer: HSSSVC on N(0, 1) * 1e160 used to segfault (neighbour index n)
    res = _run("""
        import numpy as np
        from hsskern import HSSSVC
        rng = np.random.default_rng(0)
        X = rng.normal(size=(300, 2)) * 1e160
        y = (X[:, 0] > 0).astype(int)
        for est in (HSSSVC(h=1.0), HSSSVC()):
            try:
                est.fit(X, y)
            except ValueError as e:
                print("refused:", e)
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    width, scale = res.stdout.splitlines()
    assert width.startswith("refused:") and "kernel widths (h = 1, i.e. gamma = 0.5)" in width
    # the default gamma="scale" on them: X.var() overflows, which is said, not divided by
    assert scale.startswith("refused:") and "X.var() overflows" in scale


def test_fit_at_power_of_two_scales_matches_the_unit_scale_fit():
    # h scaled with the points by 2^e: the same kernel matrix bit for bit, so the same model
    res = _run("""
        import numpy as np
        from hsskern import HSSSVC
        rng = np.random.default_rng(0)
        X = rng.normal(size=(400, 2))
        y = (X[:, 0] * X[:, 1] > 0).astype(int)
        ref = HSSSVC(h=1.0, random_state=0).fit(X, y).decision_function(X)
        for e in (531, 1000, -1000):
            s = 2.0 ** e
            dec = HSSSVC(h=s, random_state=0).fit(X * s, y).decision_function(X * s)
            assert np.all(np.isfinite(dec))
            print(e, np.abs(dec - ref).max())
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.split()
    assert len(lines) == 6 and all(float(v) == 0.0 for v in lines[1::2])
