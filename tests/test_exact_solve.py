"""Exact-kernel decomposition (hsskern.solvers.engines.exact, ._smo) and its use in HSSSVC."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from hsskern import HSSSVC, kernel_operator, HSSSVCOptions
from hsskern.kernels import make_kernel
from hsskern.solvers.paths.hss_path import HSSBackend, hss_svm_path
from hsskern.kernels._eval import max_threads
from hsskern.solvers.engines._smo import smo_block
from hsskern.solvers.engines.admm import kkt_sets, kkt_violation
from hsskern.solvers.engines.exact import continuation_start, feasible_start, solve_block
from hsskern.options import PathSettings
from hsskern.solvers.engines.interface import BlockEngine, DualProblem
from hsskern.options import DecompositionOptions


def _problem(seed, n=240, d=4, sep=0.8):
    X, y = make_classification(n, d, n_informative=min(d, 3), n_redundant=0,
                               random_state=seed, class_sep=sep, flip_y=0.05)
    return X, np.where(y == 1, 1.0, -1.0)


def _dual_objective(Kd, y, alpha):
    ya = y * alpha
    return 0.5 * ya @ Kd @ ya - alpha.sum()


def _assert_exact_svm(K, y, C, r, X, h, tol=1e-3):
    # feasible, LIBSVM's optimality gap over ALL points (recomputed here from the dense
    # kernel, not taken from the solver) below tol, and SVC's decision values
    alpha = r.alpha
    assert np.all(alpha >= 0) and np.all(alpha <= C)
    assert abs(y @ alpha) <= 1e-9 * C * len(y)
    KYa = K.to_dense() @ (y * alpha)
    gap = kkt_violation(KYa[:, None], y[:, None], alpha[:, None], C)[0]
    assert gap <= tol * (1 + 1e-6)
    np.testing.assert_allclose(r.decision, KYa + r.bias, atol=1e-8 * max(1.0, C))
    ref = SVC(C=C, gamma=1 / (2 * h * h), tol=1e-6).fit(X, y)
    # a gap of 1e-3 moves O(1) decision values by ~1e-2
    np.testing.assert_allclose(r.decision, ref.decision_function(X),
                               atol=5e-2 * max(1.0, C ** 0.5))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.5, 2.5), h=st.sampled_from([0.5, 1.0, 3.0]),
       start=st.sampled_from(["zeros", "random", "svc"]), max_ws=st.sampled_from([4, 16, 1000]))
def test_decomposition_reaches_the_exact_svm_from_any_start(seed, logC, h, start, max_ws):
    # any start (made feasible), any working-set size down to 4 points: the exact optimum
    X, y = _problem(seed)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=h)
    rng = np.random.default_rng(seed)
    alpha0 = {"zeros": np.zeros(len(y)), "random": rng.uniform(0, 2 * C, len(y)),
              "svc": np.zeros(len(y))}[start]
    if start == "svc":  # LIBSVM's own answer at another C: a near-but-wrong start
        ref = SVC(C=2 * C, gamma=1 / (2 * h * h)).fit(X, y)
        alpha0[ref.support_] = np.abs(ref.dual_coef_[0])
    options = DecompositionOptions(max_ws=max_ws, max_chunk=max(max_ws, 8), max_rounds=100_000)
    r = solve_block(K, y, C, alpha0, options=options)
    assert r.converged and r.gap < 1e-3
    assert max(r.ws_sizes, default=0) <= max(max_ws, 8)
    _assert_exact_svm(K, y, C, r, X, h)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.floats(0.01, 100.0))
def test_feasible_start_is_in_the_box_and_balanced(seed, C):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(50) < 0.3, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    a = feasible_start(rng.normal(C / 2, C, 50), y, C)
    assert np.all(a >= 0) and np.all(a <= C)
    assert abs(y @ a) <= 1e-10 * C * 50


def test_a_scaled_exact_solution_keeps_its_bounded_points_at_the_bound():
    # along a C path the previous alpha scaled by C'/C must stay bounded where it was: an ulp
    # below C' would count as free and flood the first working set
    X, y = _problem(7, n=400, sep=0.3)
    K = kernel_operator(X, "gaussian", h=1.0)
    Cs = np.logspace(-2, 3, 10)
    for C0, C1 in zip(Cs[:-1], Cs[1:]):
        a = solve_block(K, y, C0).alpha
        b = feasible_start(C1 / C0 * a, y, C1)
        assert np.count_nonzero(a == C0) > 0
        np.testing.assert_array_equal(b == C1, a == C0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-2.0, 3.0), ratio=st.floats(1.0, 10.0),
       weighted=st.booleans())
def test_continuation_start_is_the_best_feasible_point_on_the_ray(seed, logC, ratio, weighted):
    # the next C's start: feasible at C' = ratio C, decision values those of its alpha, the
    # dual at C' no higher anywhere on the ray [0, ratio] (checked on a fine grid against the
    # dense kernel), and at an exact solution s >= 1 (up to the solve's tolerance)
    X, y = _problem(seed, n=200, sep=0.5)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    w = np.random.default_rng(seed).uniform(0.2, 2.0, len(y)) if weighted else None
    rr = solve_block(K, y, C, weights=w, tol=1e-6)
    s, a, f = continuation_start(rr, ratio)
    ub = ratio * C * (1.0 if w is None else w)
    assert 0.0 <= s <= ratio and np.all(a >= 0) and np.all(a <= ub * (1 + 1e-12))
    assert abs(y @ a) <= 1e-9 * C * len(y)
    Kd = K.to_dense()
    np.testing.assert_allclose(f, Kd @ (y * a), atol=1e-9 * max(1.0, C))
    ray = [_dual_objective(Kd, y, t * rr.alpha) for t in np.linspace(0.0, ratio, 201)]
    assert _dual_objective(Kd, y, a) <= min(ray) + 1e-9 * max(1.0, abs(min(ray)))
    assert s >= min(1.0 - 1e-3, ratio)
    if ratio > 1.0 and not np.any(rr.alpha >= (C if w is None else C * w) * (1 - 1e-9)):
        assert s == pytest.approx(1.0, abs=1e-3)  # nothing bounded: the solution stands
    # ray=False: C'/C, every bounded alpha exactly at its new bound after feasible_start
    s2, a2, f2 = continuation_start(rr, ratio, ray=False)
    ub0 = C * (1.0 if w is None else w)
    b2 = feasible_start(a2, y, ub)
    assert s2 == ratio and np.all((b2 == ub)[rr.alpha == ub0])
    np.testing.assert_allclose(f2, ratio * (rr.decision - rr.bias))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.0))
def test_smo_block_on_all_points_solves_the_dual(seed, logC):
    # W = every point, no fixed rest: the SMO alone ends at LIBSVM's optimum
    X, y = _problem(seed, n=150)
    C = 10.0 ** logC
    Kd = kernel_operator(X, "gaussian", h=1.0).to_dense()
    Q = Kd * np.outer(y, y)
    alpha = np.zeros(len(y))
    v = y.copy()  # -y G at alpha = 0
    it, m, M = smo_block(Kd, y, alpha, v, C, 1e-4, 10 ** 7)
    assert it > 0 and m - M < 1e-4
    # kept current: v = -y (Q alpha - 1)
    np.testing.assert_allclose(v, -y * (Q @ alpha - 1.0), atol=1e-9 * max(1.0, C))
    ref = SVC(C=C, kernel="precomputed", tol=1e-6).fit(Kd, y)
    ref_alpha = np.zeros(len(y))
    ref_alpha[ref.support_] = np.abs(ref.dual_coef_[0])
    assert _dual_objective(Kd, y, alpha) <= _dual_objective(Kd, y, ref_alpha) + 1e-4 * C


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(0.0, 3.0), stop=st.sampled_from([300, None]))
def test_smo_block_shrinking_keeps_every_v_current(seed, logC, stop):
    # a working set with a fixed rest (v offset by the rest's contribution): with shrinking
    # the variables left out of the passes get their v rebuilt, so v = v_start - K (y o da)
    # on all q whether SMO converged or stopped at max_iter; converged, the gap holds on all
    # q (the returned extremes are all q's) and the subproblem's objective is the unshrunk
    # solve's
    X, y = _problem(seed, n=200)
    C = 10.0 ** logC
    Kd = kernel_operator(X, "gaussian", h=1.0).to_dense()
    rng = np.random.default_rng(seed)
    W = rng.permutation(len(y))[:150]
    a_rest = rng.uniform(0, C, len(y))
    a_rest[W] = 0.0
    v_start = y[W] - Kd[W] @ (y * a_rest)
    KW = np.ascontiguousarray(Kd[np.ix_(W, W)])
    objective, runs = {}, {}
    # LIBSVM's rule, a first shrink made only if it keeps at most half, none, no shrinking
    for name, kw in (("all", {}), ("half", {"shrink_share": 0.5}),
                     ("none", {"shrink_share": 0.0}), ("off", {"shrinking": False})):
        aW, vW = np.zeros(W.size), v_start.copy()
        it, m, M = smo_block(KW, y[W], aW, vW, C, 1e-4, stop or 10 ** 7, **kw)
        runs[name] = (it, aW, vW)
        np.testing.assert_allclose(vW, v_start - KW @ (y[W] * aW), atol=1e-9 * max(1.0, C))
        if stop is None:
            up, low = kkt_sets(y[W], aW, C)
            assert m == vW[up].max() and M == vW[low].min() and m - M < 1e-4
            # 1/2 a^T Q a + G_start^T a, with G_start = -y v_start
            objective[name] = _dual_objective(KW, y[W], aW) + aW.sum() - (y[W] * v_start) @ aW
    # a share of 0 declines every shrink: the unshrunk iterates bit for bit
    assert runs["none"][0] == runs["off"][0]
    np.testing.assert_array_equal(runs["none"][1], runs["off"][1])
    np.testing.assert_array_equal(runs["none"][2], runs["off"][2])
    for name in objective:
        assert objective[name] == pytest.approx(objective["off"], abs=1e-3 * max(1.0, C))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 3.0), weighted=st.booleans(),
       shrink=st.booleans(), stop=st.sampled_from([150, 10 ** 7]))
def test_smo_block_threads_give_the_same_iterates(seed, logC, weighted, shrink, stop):
    # the passes split between threads join their parts in the serial order: the same pairs,
    # the same roundings, so the same alpha and v bit for bit, also through shrinking (parts
    # of a few active variables, some empty with three threads) and a max_iter stop
    X, y = _problem(seed, n=300)
    C = 10.0 ** logC
    Kd = kernel_operator(X, "gaussian", h=1.0).to_dense()
    upper = C * np.random.default_rng(seed).uniform(0.0, 2.0, len(y)) if weighted else None
    out = {}
    for threads in (1, 2, 3):
        alpha, v = np.zeros(len(y)), y.copy()
        res = smo_block(Kd, y, alpha, v, C, 1e-4, stop, upper, shrinking=shrink,
                        threads=threads)
        out[threads] = (res, alpha, v)
    for threads in (2, 3):
        assert out[threads][0] == out[1][0]
        np.testing.assert_array_equal(out[threads][1], out[1][1])
        np.testing.assert_array_equal(out[threads][2], out[1][2])


def test_smo_block_carries_its_thread_timing_between_calls():
    # a decomposition's blocks share one timing vector: the rates measured by the first block
    # serve the next (no second probe), and the iterates are those of a call without it
    X, y = _problem(3, n=1200)
    Kd = kernel_operator(X, "gaussian", h=1.0).to_dense()
    timing = np.zeros(4)
    runs = []
    for carried in (timing, timing, None):
        alpha, v = np.zeros(len(y)), y.copy()
        runs.append((smo_block(Kd, y, alpha, v, 10.0, 1e-4, 10 ** 7, timing=carried), alpha))
        if carried is not None and max_threads() >= 2:  # one thread: nothing to measure
            assert timing[3] > 0
    for res, alpha in runs[1:]:
        assert res == runs[0][0]
        np.testing.assert_array_equal(alpha, runs[0][1])
    with pytest.raises(ValueError, match="not 4"):
        smo_block(Kd, y, np.zeros(len(y)), y.copy(), 1.0, 1e-3, 10, timing=np.zeros(3))
    with pytest.raises(ValueError, match="shrink_share"):
        smo_block(Kd, y, np.zeros(len(y)), y.copy(), 1.0, 1e-3, 10, shrink_share=1.5)

def test_dual_objective_never_rises_over_rounds():
    # Osuna's decomposition: every round solves a subproblem from a feasible point
    X, y = _problem(5, n=300)
    K = kernel_operator(X, "gaussian", h=1.0)
    Kd = K.to_dense()
    capped = [DecompositionOptions(max_ws=20, max_chunk=20, max_rounds=k) for k in range(0, 12)]
    objs = [_dual_objective(Kd, y, solve_block(K, y, 10.0, options=o).alpha) for o in capped]
    assert np.all(np.diff(objs) <= 1e-9)
    assert objs[-1] < objs[0]
    r = solve_block(K, y, 10.0,
                     options=DecompositionOptions(max_ws=20, max_chunk=20, max_rounds=3))
    assert not r.converged and r.rounds == 3 and r.gap > 1e-3  # honest when it stops early


def test_given_decision_values_are_used_as_given():
    # f passed by the caller (a previous C's exact values, scaled) replaces the kernel product;
    # the right f gives the same answer as computing it, a wrong one a wrong answer
    X, y = _problem(6)
    K = kernel_operator(X, "gaussian", h=1.0)
    a0 = solve_block(K, y, 1.0).alpha
    f0 = K.to_dense() @ (y * a0)
    plain = solve_block(K, y, 3.0, 3 * a0)
    given_f = solve_block(K, y, 3.0, 3 * a0, f=3 * f0)
    np.testing.assert_allclose(given_f.decision, plain.decision, atol=1e-3)
    wrong = solve_block(K, y, 3.0, 3 * a0, f=np.zeros(len(y)))
    assert np.abs(wrong.decision - plain.decision).max() > 0.1


@pytest.mark.filterwarnings("ignore:HSS compression")
def test_hssvc_path_gives_svc_at_every_c():
    # the path: the first C from the ADMM, every later C from the previous exact solution
    X, y = make_classification(500, 5, n_informative=4, n_redundant=0, random_state=2,
                               flip_y=0.05)
    Cs = [0.1, 1.0, 10.0, 100.0]
    models = HSSSVC(h=1.0, options=HSSSVCOptions(rel_tol=1e-2), random_state=0).fit_path(X, y, Cs)
    # no ADMM after the first C: no ADMM record, no ADMM time
    assert models[1].admm_["primal_residuals"].size == 0 and "admm" not in models[1].fit_time_
    for m in models:
        info = m.admm_["exact"][0]
        assert info.converged and info.skipped is None
        ref = SVC(C=m.C, gamma=0.5, tol=1e-6).fit(X, y)
        np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X),
                                   atol=5e-2 * max(1.0, m.C ** 0.5))


@pytest.mark.filterwarnings("ignore:HSS compression")
def test_hssvc_refine_recovers_svc_from_a_loose_approximation():
    # a deliberately poor HSS (rel_tol 0.3) and a 5-iteration ADMM: exact solve still gives the
    # exact SVM, and without it the model is visibly worse
    X, y = make_classification(1600, 6, n_informative=5, n_redundant=0, random_state=4,
                               flip_y=0.02)
    Xtr, ytr, Xt = X[:1200], y[:1200], X[1200:]
    opts = HSSSVCOptions(rel_tol=0.3, abs_tol=1e-2, max_rank=8, leaf_size=64, start="admm",
                         admm_max_iter=5)
    loose = dict(h=1.0, C=30.0, random_state=0)
    ref = SVC(C=30.0, gamma=0.5).fit(Xtr, ytr)
    m = HSSSVC(options=opts, **loose).fit(Xtr, ytr)
    agree = np.mean(m.predict(Xt) == ref.predict(Xt))
    assert agree >= 0.99
    info = m.admm_["exact"][0]
    assert info.converged and info.rounds >= 1
    assert m.route_ == "HSS + ADMM start" and m.fit_time_["exact"] > 0
    raw = HSSSVC(options=opts.replace(solve_exact=False), **loose).fit(Xtr, ytr)
    assert raw.admm_["exact"] is None
    assert np.mean(raw.predict(Xt) == ref.predict(Xt)) < agree


def test_auto_refine_skips_when_the_exact_product_is_too_large():
    # solve_exact="auto" keeps the ADMM's solution when n x n_SV exceeds the limit (lowered
    # here); solve_exact=True refines regardless
    X, y = make_classification(300, 4, random_state=0)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    backend = HSSBackend(make_kernel("gaussian", h=1.0),
                         HSSSVCOptions(start="admm", approximation="exact"))
    problem = backend.prepare(X)
    Cs = [1e-3, 1e-2, 0.1, 1.0]
    auto = hss_svm_path(problem, Y, Cs, options=HSSSVCOptions(solve_exact="auto"),
                        settings=PathSettings(exact_limit=10.0))
    info = auto[-1].info["exact"][0]
    assert info.skipped is not None and "solve_exact='auto'" in info.skipped and info.rounds == 0
    raw = hss_svm_path(problem, Y, Cs, options=HSSSVCOptions(solve_exact=False))
    for a, r in zip(auto, raw):
        np.testing.assert_array_equal(a.dual_coef, r.dual_coef)
        np.testing.assert_array_equal(a.intercept, r.intercept)
    forced = hss_svm_path(problem, Y, Cs, options=HSSSVCOptions(solve_exact=True),
                          settings=PathSettings(exact_limit=10.0))
    assert all(s.info["exact"][0].converged for s in forced)


def test_hssvc_max_chunk_bounds_the_working_set():
    X, y = make_classification(400, 4, random_state=0, flip_y=0.2)
    m = HSSSVC(options=HSSSVCOptions(approximation="exact", max_chunk=30), C=1.0).fit(X, y)
    info = m.admm_["exact"][0]
    assert info.converged and max(info.ws_sizes) <= 30


def test_multiclass_refine_equals_per_class_binary():
    from sklearn.datasets import make_blobs
    X, y = make_blobs(300, centers=3, n_features=3, random_state=1, cluster_std=2.0)
    opts = HSSSVCOptions(approximation="exact", adaptive_beta=False, admm_max_iter=20)
    # h=1: a width given as is (gamma="scale"'s rounding can tip a tie in one column)
    fixed = dict(C=5.0, h=1.0, tol=None, options=opts)
    m = HSSSVC(C=5.0, h=1.0, tol=None, options=opts.replace(multiclass="ovr")).fit(X, y)
    dec = m.decision_function(X)
    for k, c in enumerate(m.classes_):
        b = HSSSVC(**fixed).fit(X, np.where(y == c, 1, 0))
        np.testing.assert_allclose(dec[:, k], b.decision_function(X), atol=1e-9)


def test_working_set_shrinks_to_the_available_memory(monkeypatch):
    # K[W, W] takes 8 |W|^2 bytes: with room for a 30-point block only, W stays at 30 points
    # and the decomposition still ends at the optimum
    from hsskern.solvers.engines import decomposition
    monkeypatch.setattr(decomposition, "available_memory", lambda: 2 * 8 * 30 ** 2)
    X, y = _problem(8, n=300)
    K = kernel_operator(X, "gaussian", h=1.0)
    r = solve_block(K, y, 1.0, options=DecompositionOptions(max_rounds=10_000))
    assert r.converged and max(r.ws_sizes) <= 30
    _assert_exact_svm(K, y, 1.0, r, X, 1.0)


def test_verbose_2_reports_each_decomposition_round(capsys):
    X, y = make_classification(300, 4, random_state=0)
    m = HSSSVC(options=HSSSVCOptions(approximation="exact"), C=1.0, verbose=2).fit(X, y)
    out = capsys.readouterr().out
    rounds = sum(rr.rounds for rr in [m.admm_["exact"][0]])
    assert rounds >= 1
    assert out.count("solve_exact C=1 column 0:  round") == rounds
    assert "SMO steps" in out
    HSSSVC(options=HSSSVCOptions(approximation="exact"), C=1.0, verbose=1).fit(X, y)
    assert "round" not in capsys.readouterr().out


def _exact_solution(K, y, C):
    return solve_block(K, y, C, tol=1e-9,
                        options=DecompositionOptions(newton=False, max_rounds=100_000)).alpha


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(0.0, 3.0), jitter=st.floats(0.0, 0.3),
       max_fixed=st.sampled_from([0, 1000]))
def test_newton_step_keeps_feasibility_and_lowers_the_objective(seed, logC, jitter, max_fixed):
    # from the exact solution with its free alphas moved (in the box, y^T alpha kept), one
    # Newton step: stays feasible, keeps v = y - K(y o alpha) exact, lowers the objective,
    # and (the free set being the optimum's) lands back on the optimum. max_fixed=0 sends
    # every step that leaves the box to the fallbacks (projected arc, scaled face step)
    from hsskern.solvers.engines.decomposition import DecompositionOptions, _newton_free
    X, y = _problem(seed, n=200, sep=0.5)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    Kd = K.to_dense()
    opt = _exact_solution(K, y, C)
    free = np.flatnonzero((opt > 1e-9 * C) & (opt < C * (1 - 1e-9)))
    if free.size < 4:
        return
    rng = np.random.default_rng(seed)
    a = opt.copy()
    pos, neg = free[y[free] > 0], free[y[free] < 0]
    for side in (pos, neg):  # move each side by a zero-sum amount, staying inside the box
        if side.size >= 2:
            d = rng.normal(0, 1, side.size)
            d -= d.mean()
            room = np.minimum(a[side], C - a[side]).min()
            a[side] += jitter * room * d / np.abs(d).max()
    v = y - Kd @ (y * a)
    obj0 = _dual_objective(Kd, y, a)
    ridge, start = DecompositionOptions().newton_ridge, a.copy()
    fixed, t = _newton_free(Kd, y, a, v, C, ridge, max_fixed=max_fixed)
    assert np.all(a >= 0) and np.all(a <= C)
    assert abs(y @ a) <= 1e-9 * C * len(y)
    np.testing.assert_allclose(v, y - Kd @ (y * a), atol=1e-8 * C)
    assert (fixed < 0 or t == 1.0) and 0.0 <= t <= 1.0
    if t == 0:  # rejected: nothing moved
        assert _dual_objective(Kd, y, a) == obj0
        return
    # the step checks its own decrease; recomputed here it may differ by rounding in |obj|
    assert _dual_objective(Kd, y, a) <= obj0 + 1e-12 * (C + abs(obj0))
    gap = kkt_violation((Kd @ (y * a))[:, None], y[:, None], a[:, None], C)[0]
    if fixed == 0 and jitter > 0:
        # the step solves K_FF + ridge I (the Gaussian's diagonal is 1): each gradient entry
        # is off by ridge times the step there, each end of the gap by at most the largest
        assert gap < 1e-3 + 2 * ridge * np.abs(a - start).max()


@settings(max_examples=10, deadline=None)  # the suite's slowest test: 26 s at 15 examples
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 3.0), max_ws=st.sampled_from([16, 1000]))
def test_decomposition_with_newton_on_every_round_reaches_the_exact_svm(seed, logC, max_ws):
    # Newton on any working set with two free points, after one SMO step (the thresholds and
    # the cost estimate that normally keep it for large, nearly all-free sets lowered): still
    # the exact SVM, and it was used
    from hsskern.solvers.engines import decomposition as decomposition_mod
    from hsskern.solvers.engines.decomposition import DecompositionOptions
    X, y = _problem(seed, sep=0.5)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    eager = DecompositionOptions(newton_min_free=2, newton_free_fraction=0.0,
                                 newton_rate=0.0)
    with pytest.MonkeyPatch.context() as mp:
        events = []
        newton_free, smo_block = decomposition_mod._newton_free, decomposition_mod.smo_block

        def smo(KW, yW, aW, vW, C, target, budget, **kw):
            it, m, M = smo_block(KW, yW, aW, vW, C, target, budget, **kw)
            # an eligible round's first SMO has the Newton step's estimated cost as its budget
            # (tiny here); the unlimited budget is 10**7 steps
            events.append("due" if budget < 10 ** 6 and m - M >= target else "smo")
            return it, m, M

        def newton(*a):
            events.append("newton")
            return newton_free(*a)

        mp.setattr(decomposition_mod, "smo_block", smo)
        mp.setattr(decomposition_mod, "_newton_free", newton)
        r = solve_block(K, y, C, options=eager.replace(max_ws=max_ws, max_chunk=max(max_ws, 8),
                                                        max_rounds=100_000))
    assert r.converged and r.gap < 1e-3
    _assert_exact_svm(K, y, C, r, X, 1.0)
    plain = solve_block(K, y, C, options=DecompositionOptions(
        max_ws=max_ws, max_chunk=max(max_ws, 8), newton=False, max_rounds=100_000))
    assert plain.newton_steps == 0
    # a Newton step exactly after each eligible SMO left unfinished
    after = [b for a, b in zip(events, events[1:] + ["end"]) if a == "due"]
    assert after == ["newton"] * events.count("due") and events.count("newton") == len(after)
    assert r.newton_steps <= len(after)


def test_the_decomposition_does_not_depend_on_the_clock(monkeypatch):
    """When SMO gives way to a Newton step is decided by a cost model, not by measured
    times: under a clock that ticks by random amounts the rounds take the same steps, to
    the bit (with measured rates the same fit gave another answer within tol run to run)."""
    from types import SimpleNamespace
    from hsskern.solvers.engines import decomposition as decomposition_mod
    from hsskern.solvers.engines.decomposition import DecompositionOptions
    X, y = _problem(5, n=600, sep=0.5)
    K = kernel_operator(X, "gaussian", h=1.0)
    opts = DecompositionOptions(newton_min_free=20, newton_free_fraction=0.5, max_ws=200,
                                max_chunk=200, max_rounds=100_000)
    base = solve_block(K, y, 30.0, options=opts)
    assert base.newton_steps > 0 and base.converged
    for seed in (0, 1):
        ticks = iter(np.cumsum(np.random.default_rng(seed).exponential(1.0, 10 ** 6)))
        monkeypatch.setattr(decomposition_mod, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
        r = solve_block(K, y, 30.0, options=opts)
        np.testing.assert_array_equal(r.alpha, base.alpha)
        assert r.rounds == base.rounds and r.newton_steps == base.newton_steps


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(1.0, 3.0), scaled=st.booleans(),
       max_fixed=st.sampled_from([0, 5, 1000]))
def test_newton_step_from_the_previous_c_lowers_the_objective(seed, logC, scaled, max_fixed):
    # the C path's starts (the exact solution at C / 5, as is or scaled by 5) put many points
    # on the wrong side of the box: the face step fixes them, and where fixing a batch makes
    # the face's minimum worse (forced by a small max_fixed) the fallbacks step instead. Every
    # kept step is feasible, keeps v exact and lowers the exact objective
    from hsskern.solvers.engines.decomposition import DecompositionOptions, _newton_free
    X, y = _problem(seed, n=200, sep=0.5)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    Kd = K.to_dense()
    a = np.minimum(_exact_solution(K, y, C / 5) * (5.0 if scaled else 1.0), C)  # rounding
    v = y - Kd @ (y * a)
    obj0 = _dual_objective(Kd, y, a)
    fixed, t = _newton_free(Kd, y, a, v, C, DecompositionOptions().newton_ridge, max_fixed=max_fixed)
    assert np.all(a >= 0) and np.all(a <= C) and abs(y @ a) <= 1e-9 * C * len(y)
    np.testing.assert_allclose(v, y - Kd @ (y * a), atol=1e-8 * C)
    obj = _dual_objective(Kd, y, a)
    assert obj <= obj0 + 1e-12 * (C + abs(obj0))
    if t > 0:
        assert obj < obj0
    if max_fixed == 0:  # no point fixed: the face step stayed in the box, or the fallback
        assert fixed <= 0  # moved (or nothing did)


def test_newton_fallback_takes_most_steps_a_face_step_cannot():
    # max_fixed=0: every step that leaves the box would have been rejected before the
    # fallbacks; from the C path's starts they keep a lowering step in most cases
    from hsskern.solvers.engines.decomposition import DecompositionOptions, _newton_free
    kept = 0
    for seed in range(10):
        X, y = _problem(seed, n=200, sep=0.5)
        C = 100.0
        K = kernel_operator(X, "gaussian", h=1.0)
        Kd = K.to_dense()
        a = np.minimum(_exact_solution(K, y, C / 5) * 5.0, C)
        v = y - Kd @ (y * a)
        obj0 = _dual_objective(Kd, y, a)
        fixed, t = _newton_free(Kd, y, a, v, C, DecompositionOptions().newton_ridge, max_fixed=0)
        kept += t > 0 and _dual_objective(Kd, y, a) < obj0
    assert kept >= 8


@settings(max_examples=50, deadline=None)
@given(data=st.data(), m=st.integers(1, 30))
def test_projection_onto_box_and_zero_sum(data, m):
    # the projected Newton arc's projection: in the box, summing to zero, and optimal: a shift
    # lam with e = clip(x - lam, lo, hi), i.e. x - e = lam where e is strictly inside, <= lam
    # where e is at lo, >= lam where e is at hi
    from hsskern.solvers.engines.decomposition import _project_zero_sum
    flt = st.floats(0.0, 10.0)
    lo = -np.array(data.draw(st.lists(flt, min_size=m, max_size=m)))
    hi = np.array(data.draw(st.lists(flt, min_size=m, max_size=m)))
    x = np.array(data.draw(st.lists(st.floats(-30.0, 30.0), min_size=m, max_size=m)))
    e = _project_zero_sum(x, lo, hi)
    assert np.all(e >= lo) and np.all(e <= hi)
    assert abs(e.sum()) <= 1e-9 * (1.0 + np.abs(x).sum())
    tol = 1e-7 * (1.0 + np.abs(x).max())
    inside = (e > lo + tol) & (e < hi - tol)
    d = x - e
    if inside.any():
        lam = d[inside].mean()
        np.testing.assert_allclose(d[inside], lam, atol=tol)
        at_lo, at_hi = e <= lo + tol, e >= hi - tol  # both where lo = hi: no condition
        assert np.all(d[at_lo & ~at_hi] <= lam + tol)
        assert np.all(d[at_hi & ~at_lo] >= lam - tol)


def _true_gap(K, y, alpha, C):
    KYa = K.to_dense() @ (y * alpha)
    return kkt_violation(KYa[:, None], y[:, None], alpha[:, None], C)[0], KYa


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.5), stop_after=st.integers(0, 4))
def test_a_stopped_decomposition_reports_the_true_gap_of_what_it_returns(seed, logC, stop_after):
    # stopped by its callback after a few rounds (small working sets, so it is far from done):
    # the point is feasible, its reported gap is the one recomputed from the dense kernel, its
    # decision values are exact, and every state the callback saw marked exact was exact; one
    # between syncs (shrinking) has exact f at its free points and a gap below the true one
    X, y = _problem(seed)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    seen = []

    def cb(state):
        gap, KYa = _true_gap(K, y, state.alpha, C)
        if not state.exact:
            free = (state.alpha > 1e-6 * C) & (state.alpha < C * (1 - 1e-6))
            assert np.max(np.abs(state.f - KYa)[free], initial=0) <= 1e-9 * max(1.0, C)
            assert state.gap <= gap + 1e-9 * C
            return state.rounds >= stop_after
        seen.append((state.gap, gap, np.max(np.abs(state.f - KYa))))
        return state.rounds >= stop_after

    engine = BlockEngine(DecompositionOptions(max_ws=4, max_chunk=8, max_rounds=10_000,
                                              shrinking=True))
    r = engine.solve(DualProblem(K, y), C, callback=cb)
    assert np.all(r.alpha >= 0) and np.all(r.alpha <= C)
    assert abs(y @ r.alpha) <= 1e-9 * C * len(y)
    gap, KYa = _true_gap(K, y, r.alpha, C)
    np.testing.assert_allclose(r.gap, gap, rtol=1e-9, atol=1e-9 * C)
    np.testing.assert_allclose(r.decision, KYa + r.bias, atol=1e-9 * max(1.0, C))
    for reported, true, f_err in seen:
        np.testing.assert_allclose(reported, true, rtol=1e-9, atol=1e-9 * C)
        assert f_err <= 1e-9 * max(1.0, C)
    if not r.converged:
        assert r.stopped == "callback" and r.rounds == stop_after
        assert seen[-1][0] == r.gap  # the final call saw the returned point


def test_max_time_stops_between_rounds_with_a_valid_point():
    X, y = _problem(3, n=400)
    K = kernel_operator(X, "gaussian", h=0.5)
    small = DecompositionOptions(max_ws=4, max_chunk=8, max_rounds=10_000)
    r = BlockEngine(small).solve(DualProblem(K, y), 10.0, max_time=0.0)
    assert r.stopped == "max_time" and r.rounds == 0 and not r.converged
    gap, _ = _true_gap(K, y, r.alpha, 10.0)
    assert r.gap == pytest.approx(gap) and gap > 1e-3
    full = BlockEngine(small).solve(DualProblem(K, y), 10.0, max_time=1e9)
    assert full.converged and full.stopped is None


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.5), h=st.sampled_from([0.5, 1.0, 3.0]),
       max_ws=st.sampled_from([8, 32]))
def test_shrinking_reaches_the_exact_svm_of_all_points(seed, logC, h, max_ws):
    # points far from the margin leave the rounds and are brought up to date at syncs: the
    # result is still the exact SVM over ALL points (gap recomputed from the dense kernel),
    # LIBSVM's answer as without shrinking, and points did leave (at least the final sync)
    X, y = _problem(seed, n=400)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=h)
    options = DecompositionOptions(max_ws=max_ws, max_chunk=max_ws, max_rounds=100_000)
    on = solve_block(K, y, C, options=options.replace(shrinking=True))
    off = solve_block(K, y, C, options=options.replace(shrinking=False))
    assert on.converged and off.converged and off.syncs == 0
    assert on.syncs >= 1 and on.kernel_entries["sync"] > 0
    _assert_exact_svm(K, y, C, on, X, h)
    np.testing.assert_allclose(on.decision, off.decision, atol=5e-2 * max(1.0, C ** 0.5))


def test_shrinking_spares_kernel_entries_of_points_far_from_the_margin():
    # most points sit far outside the margin, and the rounds' updates plus the syncs evaluate
    # fewer entries than updating every point every round (here about half)
    X, y = _problem(1, n=4000, sep=1.0)
    K = kernel_operator(X, "gaussian", h=1.0)
    options = DecompositionOptions(max_ws=256, max_chunk=256, max_rounds=100_000)
    on = solve_block(K, y, 10.0, options=options.replace(shrinking=True))
    off = solve_block(K, y, 10.0, options=options.replace(shrinking=False))
    assert on.converged and off.converged
    used = on.kernel_entries["update"] + on.kernel_entries["sync"]
    assert used < 0.7 * off.kernel_entries["update"]


class _CountingProducts:
    """The local products, counted: what a remote engine must reproduce call for call."""

    def __init__(self, points, kernel):
        from hsskern.solvers.engines.exact import LocalProducts
        self.inner, self.calls = LocalProducts(points, kernel), 0

    def add(self, f, cols, c, skip=None):
        self.calls += 1
        return self.inner.add(f, cols, c, skip)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.0))
def test_the_decision_products_go_through_the_given_engine(seed, logC):
    X, y = _problem(seed)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=1.0)
    eng = _CountingProducts(X, make_kernel("gaussian", h=1.0))
    options = DecompositionOptions(max_ws=16, max_chunk=16, max_rounds=10_000, shrinking=True)
    a = solve_block(K, y, C, options=options)
    b = BlockEngine(options, products=eng).solve(DualProblem(K, y), C)
    assert eng.calls == b.rounds + 1 + b.syncs  # the start, one update per round, the syncs
    np.testing.assert_array_equal(a.alpha, b.alpha)
    np.testing.assert_allclose(a.decision, b.decision, rtol=0, atol=1e-12)
