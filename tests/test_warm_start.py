"""``warm_start=True``: a refit from the previous dual solution is the cold fit's SVM.

Each refit here must start warm (``warm_start_info_["warm"]``), and its solution is checked
on the new problem by an independent KKT gap (the kernel matrix evaluated here, LIBSVM's
measure m(a) - M(a) <= tol), by its dual objective against the cold fit's and by their
predictions. Rows appended, removed (and shuffled), reweighted, a new C; binary, one-vs-one;
epsilon-SVR. Then the row matching and the start on their own, and the cold fallbacks.
"""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from hsskern import HSSSVC, HSSSVCOptions, HSSSVR
from hsskern.solvers.paths.pairwise import class_pairs
from hsskern.solvers.paths.svr_path import svr_kkt_gap
from hsskern.solvers.paths.warm import balance_coef, carry_start, match_keys, row_keys

TOL = 1e-3
GAMMA = 0.5
SETTINGS = settings(max_examples=12, deadline=None)


def gram(A, B=None):
    B = A if B is None else B
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-GAMMA * np.maximum(d2, 0.0))


def kkt_gap(K, y, alpha, ub):
    """LIBSVM's m(a) - M(a) of min 1/2 a'Qa - e'a, 0 <= a <= ub, y'a = 0."""
    v = y - K @ (y * alpha)  # -y G
    e = 1e-12 * np.maximum(ub, 1.0)
    below, above = alpha < ub - e, alpha > e
    up = np.where(y > 0, below, above)
    low = np.where(y > 0, above, below)
    return v[up].max() - v[low].min()


def dual_objective(K, y, alpha):
    c = y * alpha
    return 0.5 * c @ K @ c - alpha.sum()


def columns(model, X, y, classes, C, w):
    """Per model column: (rows, y in {-1, +1}, alpha, box) of its binary problem."""
    coef = np.zeros((model.dual_coef.shape[0], X.shape[0]))
    coef[:, model.support] = model.dual_coef
    idx = np.searchsorted(classes, y)
    if classes.size == 2:
        probs = [(np.arange(y.size), np.where(idx == 1, 1.0, -1.0))]
    else:
        probs = [(np.flatnonzero((idx == i) | (idx == j)), None)
                 for i, j in class_pairs(classes.size)]
        probs = [(r, np.where(idx[r] == i, 1.0, -1.0))
                 for (r, _), (i, j) in zip(probs, class_pairs(classes.size))]
    return [(r, yy, np.abs(coef[p, r]), C * w[r]) for p, (r, yy) in enumerate(probs)]


def assert_solves(m, X, y, C, w=None):
    """Every binary problem of classifier ``m`` solved to TOL on (X, y, C, w); the dual
    objectives per column."""
    w = np.ones(y.size) if w is None else w
    keep = w > 0
    X, y, w = X[keep], y[keep], w[keep]
    objs = []
    for rows, yy, alpha, ub in columns(m._model, X, y, m.classes_, C, w):
        K = gram(X[rows])
        assert np.all(alpha <= ub * (1 + 1e-12)) and abs(yy @ alpha) <= 1e-9 * ub.sum()
        # the engine's rows are float32 (LIBSVM's Qfloat): each gradient entry within
        # 2^-24 sum(alpha) of its double, so the double gap within twice that of its own
        slack = 2.0 ** -23 * alpha.sum()
        assert kkt_gap(K, yy, alpha, ub) <= TOL * (1 + 1e-6) + slack + 1e-9
        objs.append(dual_objective(K, yy, alpha))
    return np.array(objs)


def assert_like_cold(warm, X, y, C, w=None, X_test=None):
    """``warm`` (refitted warm) solves the problem, as the cold fit does, to TOL."""
    assert warm.warm_start_info_["warm"], warm.warm_start_info_
    cold = HSSSVC(C=C, gamma=GAMMA, tol=TOL).fit(X, y, sample_weight=w)
    ow, oc = assert_solves(warm, X, y, C, w), assert_solves(cold, X, y, C, w)
    box = C * (np.sum(w) if w is not None else y.size)
    # both within TOL of the optimum: their objectives within TOL times the boxes' sum
    np.testing.assert_allclose(ow, oc, atol=TOL * box)
    Z = X if X_test is None else X_test
    assert np.mean(warm.predict(Z) == cold.predict(Z)) >= 0.97


def problem(seed, n, k=2, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X[:, 0] + 0.7 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, k + 1)[1:-1]))
    return X, y, rng


def warm_fit(X, y, C=1.0, **kw):
    return HSSSVC(C=C, gamma=GAMMA, tol=TOL, warm_start=True).fit(X, y, **kw)


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(60, 200), share=st.floats(0.02, 0.3),
       k=st.sampled_from([2, 3]))
def test_appended_rows(seed, n, share, k):
    X, y, _ = problem(seed, n, k)
    n0 = max(int(n * (1 - share)), n - 60)
    m = warm_fit(X[:n0], y[:n0])
    m.fit(X, y)
    assert m.warm_start_info_["dropped"] == 0  # every old row is still there
    assert_like_cold(m, X, y, 1.0)


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(60, 200), share=st.floats(0.02, 0.3),
       k=st.sampled_from([2, 3]))
def test_removed_and_shuffled_rows(seed, n, share, k):
    X, y, rng = problem(seed, n, k)
    m = warm_fit(X, y)
    keep = rng.permutation(n)[:n - max(1, int(share * n))]
    Xs, ys = X[keep], y[keep]
    if np.unique(ys).size < k:
        return
    m.fit(Xs, ys)
    assert_like_cold(m, Xs, ys, 1.0, X_test=X)


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(60, 200), k=st.sampled_from([2, 3]))
def test_reweighted_rows(seed, n, k):
    X, y, rng = problem(seed, n, k)
    m = warm_fit(X, y)
    w = rng.choice([0.0, 0.3, 1.0, 3.0], size=n, p=[0.1, 0.3, 0.4, 0.2])
    w[[np.flatnonzero(y == c)[0] for c in range(k)]] = 1.0  # every class keeps a point
    m.fit(X, y, sample_weight=w)
    assert_like_cold(m, X, y, 1.0, w)


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(60, 200), k=st.sampled_from([2, 3]),
       C=st.sampled_from([0.1, 0.5, 3.0, 30.0]))
def test_new_C(seed, n, k, C):
    X, y, _ = problem(seed, n, k)
    m = warm_fit(X, y)
    m.set_params(C=C).fit(X, y)
    assert_like_cold(m, X, y, C)


def test_everything_at_once_after_pickling():
    """The nightly retrain: a model loaded from disk, rows appended and removed, new C."""
    X, y, rng = problem(7, 300, 3)
    m = pickle.loads(pickle.dumps(warm_fit(X[:250], y[:250])))
    rows = np.r_[rng.permutation(250)[:230], np.arange(250, 300)]
    m.set_params(C=2.0).fit(X[rows], y[rows])
    assert m.warm_start_info_["dropped"] > 0
    assert_like_cold(m, X[rows], y[rows], 2.0, X_test=X)


def test_same_data_refit_takes_no_work():
    """A refit on the rows it was fitted on starts at its own optimum."""
    X, y, _ = problem(3, 200)
    m = warm_fit(X, y)
    before = m.decision_function(X)
    m.fit(X, y)
    assert m.warm_start_info_["warm"]
    assert m.admm_["exact"][0].rounds <= 1
    np.testing.assert_allclose(m.decision_function(X), before, atol=1e-12)


def svr_gap(m, X, y, C, eps):
    b = np.zeros(X.shape[0])
    b[m.support_] = m.dual_coef_[0]
    assert abs(b.sum()) <= 1e-9 * C * X.shape[0] and np.all(np.abs(b) <= C * (1 + 1e-12))
    return svr_kkt_gap(gram(X) @ b, y, b, C, eps)


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(60, 200), share=st.floats(0.0, 0.3),
       C=st.sampled_from([0.3, 1.0, 10.0]))
def test_svr_appended_removed_new_C(seed, n, share, C):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    n0 = int(n * (1 - share))
    m = HSSSVR(C=1.0, gamma=GAMMA, tol=TOL, warm_start=True).fit(X[:n0], y[:n0])
    rows = np.sort(rng.permutation(n)[:n - n // 10])  # some old rows gone, the new ones in
    y2 = y.copy()
    y2[rows[:5]] += 0.3  # targets updated too
    m.set_params(C=C).fit(X[rows], y2[rows])
    assert m.warm_start_info_["warm"], m.warm_start_info_
    assert svr_gap(m, X[rows], y2[rows], C, 0.1) <= TOL * (1 + 1e-6) + 1e-9
    cold = HSSSVR(C=C, gamma=GAMMA, tol=TOL).fit(X[rows], y2[rows])
    np.testing.assert_allclose(m.predict(X), cold.predict(X), atol=0.05)


# ------------------------------------------------------------------ the pieces on their own

@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 120), dup=st.integers(0, 3))
def test_match_keys_pairs_every_common_copy_once(seed, n, dup):
    rng = np.random.default_rng(seed)
    A = rng.integers(-1, 2, size=(n, 3)).astype(float) * (1 + dup)
    B = np.vstack([A[rng.permutation(n)[:n // 2]], rng.integers(-1, 2, size=(n, 3))])
    la, lb = rng.integers(0, 2, n), rng.integers(0, 2, B.shape[0])
    i, j = match_keys(row_keys(A, la), row_keys(sp.csr_matrix(B), lb))
    assert np.all(A[i] == B[j]) and np.all(la[i] == lb[j])
    assert np.unique(i).size == i.size and np.unique(j).size == j.size
    common = 0  # the most pairs there are: per distinct (row, label), the fewer copies
    keys_a = [tuple(r) + (c,) for r, c in zip(A, la)]
    keys_b = [tuple(r) + (c,) for r, c in zip(B, lb)]
    for key in set(keys_a):
        common += min(keys_a.count(key), keys_b.count(key))
    assert i.size == common


def test_row_keys_dense_sparse_and_signed_zero_agree():
    X = np.array([[0.0, 1.5, -0.0], [2.0, 0.0, 0.0]])
    np.testing.assert_array_equal(row_keys(X), row_keys(sp.csr_matrix(X)))
    np.testing.assert_array_equal(row_keys(X)[0], row_keys(np.array([[0.0, 1.5, 0.0]]))[0])
    assert not np.array_equal(row_keys(X, [0, 0]), row_keys(X, [1, 0]))


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 60))
def test_balance_coef_is_feasible_and_keeps_signs(seed, n):
    rng = np.random.default_rng(seed)
    ub = rng.choice([0.0, 0.5, 1.0, 2.0], n)
    c = rng.normal(size=n) * rng.choice([0.0, 1.0, 3.0], n)
    out = balance_coef(c.copy(), ub)
    assert np.all(np.abs(out) <= ub) and np.all(out * c >= 0)
    assert abs(out.sum()) <= 1e-12 * max(1.0, np.abs(out).sum())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(5, 80), m=st.integers(1, 30))
def test_carry_start_decision_values_are_exact(seed, n, m):
    """Known decision values on some rows, a product on the rest, the corrections of the
    box: f = K c on every row, c feasible."""
    from hsskern.kernels import make_kernel
    rng = np.random.default_rng(seed)
    X, Z = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
    at = rng.choice(np.r_[-1, np.arange(n)], size=m, replace=False) if m <= n else \
        np.r_[rng.permutation(n), -np.ones(m - n, int)]
    Z[at >= 0] = X[at[at >= 0]]
    coef = rng.normal(size=(m, 1))
    ratio = rng.choice([0.5, 1.0, 2.0])
    known = gram(X, Z) @ (ratio * coef)
    known[rng.random(n) < 0.5] = np.nan
    ub = rng.choice([0.3, 1.0, 5.0], n)
    c, f = carry_start(X, make_kernel("gaussian", gamma=GAMMA), np.ones((n, 1), bool), ub,
                       Z, coef, at, known, ratio)
    assert np.all(np.abs(c[:, 0]) <= ub) and abs(c.sum()) <= 1e-12 * max(1, np.abs(c).sum())
    np.testing.assert_allclose(f, gram(X) @ c, atol=1e-10)



def test_carry_start_without_decisions_leaves_one_column_to_the_decomposition():
    """No decision values (another kernel): one column's f is left to the decomposition
    (None), several columns get theirs from one shared product, exact."""
    from hsskern.kernels import make_kernel
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    at = rng.permutation(40)[:12]
    coef = rng.normal(size=(12, 2))
    coef -= coef.mean(axis=0)
    k, ub = make_kernel("gaussian", gamma=GAMMA), np.full(40, 10.0)
    c1, f1 = carry_start(X, k, np.ones((40, 1), bool), ub, X[at], coef[:, :1], at)
    assert f1 is None and np.allclose(c1[at, 0], coef[:, 0])
    c2, f2 = carry_start(X, k, np.ones((40, 2), bool), ub, X[at], coef, at)
    np.testing.assert_allclose(f2, gram(X) @ c2, atol=1e-10)

# ------------------------------------------------------------------ cold fallbacks

@pytest.mark.parametrize("change, reason", [
    ({"gamma": 0.25}, "kernel parameters"),
    ({"options": HSSSVCOptions(solve_exact=False, start="admm", approximation="exact")},
     "solves no C exactly"),
])
def test_unmappable_refit_is_cold_and_says_why(change, reason, capsys):
    X, y, _ = problem(1, 120)
    m = warm_fit(X, y)
    m.set_params(verbose=1, **change).fit(X, y)
    assert not m.warm_start_info_["warm"] and reason in m.warm_start_info_["reason"]
    assert "warm_start: cold fit" in capsys.readouterr().out


def test_precomputed_kernel_is_cold():
    X, y, _ = problem(6, 80)
    K = gram(X)
    m = HSSSVC(kernel="precomputed", tol=TOL, warm_start=True).fit(K, y)
    m.fit(K, y)
    assert "precomputed" in m.warm_start_info_["reason"]


def test_other_features_or_classes_are_cold():
    X, y, _ = problem(2, 120, 3)
    m = warm_fit(X, y)
    m.fit(X[:, :2], y)
    assert "number of features" in m.warm_start_info_["reason"]
    m.fit(X[:, :2], np.minimum(y, 1))
    assert "classes" in m.warm_start_info_["reason"]


def test_default_is_cold_and_first_fit_has_no_start():
    X, y, _ = problem(4, 100)
    assert not hasattr(HSSSVC(gamma=GAMMA).fit(X, y), "warm_start_info_")
    assert warm_fit(X, y).warm_start_info_["reason"] == "no previous fit to start from"


def test_sparse_rows_refit_warm():
    """Sparse rows are keyed by their nonzeros: a refit on them starts warm too."""
    rng = np.random.default_rng(5)
    X = sp.random(200, 500, density=0.02, format="csr", random_state=5)
    s = np.asarray(X.sum(axis=1)).ravel() + 0.05 * rng.normal(size=200)
    y = (s > np.median(s)).astype(int)
    m = warm_fit(X[:170], y[:170])
    m.fit(X, y)
    assert m.warm_start_info_["warm"] and m.warm_start_info_["kept"] > 0
    D = X.toarray()
    assert_solves(m, D, y, 1.0)


@pytest.mark.slow
def test_bench_suite_tiny_run(tmp_path):
    """``python -m bench warm_start`` on a slice: a valid result, both systems ok, the two
    models' test labels compared."""
    import json
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import harness
    from bench.run import main
    argv = ["warm_start", "--n-train", "400", "--n-test", "200", "--modes", "append", "C",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    result = harness.validate(json.loads((tmp_path / "warm_start_ijcnn1.json").read_text()))
    for case in result["cases"]:
        assert {s["status"] for s in case["systems"].values()} == {"ok"}
        assert case["systems"]["warm"]["warm_start_info"]["warm"]
        assert case["agreement"] >= 0.95


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("gamma", [GAMMA, "scale"])
def test_the_drop_in_svc_refits_warm(k, gamma):
    """``hsskern.SVC(warm_start=True)``: the nightly retrain on SVC's own parameters, with
    the width fixed or gamma="scale" (resolved again on the new rows)."""
    from hsskern import SVC
    X, y, rng = problem(11, 240, k)
    m = SVC(gamma=gamma, warm_start=True).fit(X[:220], y[:220])
    m.fit(X, y)
    assert m.warm_start_info_["warm"], m.warm_start_info_
    cold = SVC(gamma=gamma).fit(X, y)
    np.testing.assert_allclose(m.intercept_, cold.intercept_, atol=0.05)
    assert np.mean(m.predict(X) == cold.predict(X)) >= 0.98


def test_the_drop_in_svr_refits_warm():
    from hsskern import SVR
    X, _, rng = problem(12, 240)
    t = np.sin(X).sum(axis=1)
    m = SVR(gamma=GAMMA, warm_start=True).fit(X[:220], t[:220])
    m.fit(X, t)
    assert m.warm_start_info_["warm"], m.warm_start_info_
    cold = SVR(gamma=GAMMA).fit(X, t)
    np.testing.assert_allclose(m.predict(X), cold.predict(X), atol=0.05)
