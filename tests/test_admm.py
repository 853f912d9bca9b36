import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.svm import SVC

from hsskern import kernel_operator
from hsskern.factors import DenseCholeskyFactor
from hsskern.solvers.engines.admm import (DualADMM, DualADMMOptions, default_beta, kkt_violation,
                                  svm_dual_admm, svm_dual_admm_path)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # the matrices here are tiny: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield

# Decision values of the ADMM run to a tight optimality gap agree with LIBSVM (tol=1e-8) on
# the exact kernel within this absolute tolerance (decision values are O(1)).
DECISION_ATOL = 2e-3


def _problem(n=300, d=2, seed=0, h=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * np.sin(3 * X[:, 1]) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = kernel_operator(X, "gaussian", h=h).to_dense()
    return K, y


def _tight(F, K, y, C, **fields):
    return svm_dual_admm(F, K, y, C, options=DualADMMOptions(max_iter=20000, kkt_tol=1e-7,
                                                             relaxation=1.6, **fields))


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_matches_libsvm_precomputed(C):
    K, y = _problem()
    F = DenseCholeskyFactor(K, 1.0 / C)
    res = _tight(F, K, y, C)
    assert res.converged
    svc = SVC(kernel="precomputed", C=C, tol=1e-8).fit(K, y)
    f_ref = svc.decision_function(K)
    f = K @ res.dual_coef + res.bias
    np.testing.assert_allclose(f, f_ref, atol=DECISION_ATOL)
    # same optimum: dual objective within a hair of LIBSVM's
    a_ref = np.zeros(len(y))
    a_ref[svc.support_] = np.abs(svc.dual_coef_[0])
    ya = y * a_ref
    obj_ref = 0.5 * ya @ K @ ya - a_ref.sum()
    assert res.objective == pytest.approx(obj_ref, rel=1e-5, abs=1e-6)


@settings(max_examples=10)
@given(seed=st.integers(0, 2**16), logC=st.floats(-1, 1.5), logb=st.floats(-1, 2),
       iters=st.integers(1, 60), rel=st.sampled_from([1.0, 1.6]))
def test_dual_feasibility(seed, logC, logb, iters, rel):
    K, y = _problem(n=120, seed=seed)
    C = 10.0 ** logC
    res = svm_dual_admm(DenseCholeskyFactor(K, 10.0 ** logb), K, y, C,
                        options=DualADMMOptions(max_iter=iters, relaxation=rel))
    a = res.alpha
    assert np.all(a >= 0) and np.all(a <= C)
    np.testing.assert_array_equal(res.dual_coef, y * a)
    # y^T alpha = 0 holds for x exactly; for alpha = z it holds up to the primal residual
    resid = res.primal_residuals[-1] * max(np.linalg.norm(a), 1e-300)
    assert abs(y @ a) <= np.sqrt(len(y)) * resid * (1 + 1e-8) + 1e-9 * C * len(y)
    assert res.n_iter == iters and len(res.primal_residuals) == iters
    assert np.isfinite(res.bias)


def test_equality_constraint_exact_in_x_step():
    # the x-step solves the KKT system of (5): y^T x = 0 to rounding, whatever q is
    K, y = _problem(n=80)
    F = DenseCholeskyFactor(K, 3.0)
    xs = []
    DualADMM(F, K, y, 1.0, options=DualADMMOptions(max_iter=5, relaxation=1.0)).solve(
        callback=lambda k, z, rp, rd: xs.append(k))
    w = F.solve(np.ones(80))
    q = 1.0 + np.random.default_rng(0).normal(size=80)
    u = F.solve(y * q)
    x = y * (u - w * (w @ (y * q)) / w.sum())
    assert abs(y @ x) <= 1e-10 * np.abs(x).sum()
    # and x minimises 1/2 x'Y K_b Y x - q'x on y'x = 0: gradient is parallel to y
    g = y * ((K + 3.0 * np.eye(80)) @ (y * x)) - q
    lam = (g @ y) / (y @ y)
    assert np.linalg.norm(g - lam * y) <= 1e-8 * np.linalg.norm(q)


def test_bias_sign_and_single_unshifted_product():
    K, y = _problem(n=200)
    calls = []

    def K_apply(V):
        calls.append(V.shape)
        return K @ V
    res = _tight(DenseCholeskyFactor(K, 1.0), K_apply, y, 1.0, kkt_every=10 ** 9)
    assert calls == [(200, 1)]  # exactly one (block) product with the unshifted kernel
    margin = (res.alpha > 1e-5) & (res.alpha < 1 - 1e-5)
    f = K @ res.dual_coef + res.bias
    # margin support vectors sit on the margin: y f = 1 (wrong sign would give y f = 1 - 2 y b)
    np.testing.assert_allclose(y[margin] * f[margin], 1.0, atol=1e-3)


def test_warm_path_equals_cold_starts():
    K, y = _problem(n=250, seed=3)
    Cs = [0.1, 1.0, 10.0]
    F = DenseCholeskyFactor(K, 1.0)
    options = DualADMMOptions(max_iter=20000, kkt_tol=1e-6, relaxation=1.6)
    warm = svm_dual_admm_path(F, K, y, Cs, warm_start=True, options=options)
    cold = [svm_dual_admm(F, K, y, C, options=options) for C in Cs]
    for w, c in zip(warm, cold):
        assert w.C == c.C and w.converged and c.converged
        np.testing.assert_allclose(K @ w.dual_coef + w.bias, K @ c.dual_coef + c.bias,
                                   atol=5e-3)
    # warm starts pay off along the path
    assert sum(r.n_iter for r in warm[1:]) <= sum(r.n_iter for r in cold[1:])


def test_block_labels_equal_separate_runs():
    K, y = _problem(n=150)
    rng = np.random.default_rng(1)
    y2 = np.where(rng.random(150) < 0.4, 1.0, -1.0)
    Y = np.column_stack([y, y2])
    F = DenseCholeskyFactor(K, 2.0)
    both = svm_dual_admm(F, K, Y, 1.0, options=DualADMMOptions(max_iter=40))
    for j, yy in enumerate((y, y2)):
        one = svm_dual_admm(F, K, yy, 1.0, options=DualADMMOptions(max_iter=40))
        np.testing.assert_allclose(both.alpha[:, j], one.alpha, atol=1e-12)
        assert both.bias[j] == pytest.approx(one.bias, abs=1e-10)


def test_residual_balancing_moves_beta_and_reaches_gap():
    K, y = _problem(n=200)
    C = 10.0
    built = []

    def refactor(b):
        built.append(b)
        return DenseCholeskyFactor(K, b)
    res = svm_dual_admm(DenseCholeskyFactor(K, 100.0), K, y, C, refactor=refactor,
                        options=DualADMMOptions(max_iter=3000, kkt_tol=1e-3, relaxation=1.6))
    assert res.converged and built and res.beta < 100.0
    KYa = K @ res.dual_coef
    assert kkt_violation(KYa[:, None], y[:, None], res.alpha[:, None], C)[0] <= 1e-3


def test_overrelaxation_and_kkt_gap_decrease():
    K, y = _problem(n=200)
    F = DenseCholeskyFactor(K, 1.0)
    its = [svm_dual_admm(F, K, y, 1.0, options=DualADMMOptions(
        max_iter=5000, kkt_tol=1e-4, kkt_every=1, relaxation=r)).n_iter for r in (1.0, 1.6)]
    assert its[1] < its[0]


def test_default_beta_schedule():
    assert default_beta(5_000) == 10.0
    assert default_beta(10_000) == 1e2 and default_beta(99_999) == 1e2
    assert default_beta(100_000) == 1e3 and default_beta(10**6) == 1e4


def test_bad_input():
    K, y = _problem(n=20)
    F = DenseCholeskyFactor(K, 1.0)
    for C in (0.0, -1.0):
        with pytest.raises(ValueError, match="C"):
            svm_dual_admm(F, K, y, C)
    with pytest.raises(ValueError, match="-1, \\+1"):
        svm_dual_admm(F, K, (y > 0).astype(float), 1.0)
    with pytest.raises(ValueError, match="relaxation"):
        svm_dual_admm(F, K, y, 1.0, options=DualADMMOptions(relaxation=2.0))
    with pytest.raises(ValueError, match="entries"):
        svm_dual_admm(F, K, y[:-1], 1.0)


def test_no_margin_vectors_bias_from_bounds():
    # with a tiny C every alpha sits at a bound: the bias comes from the feasible interval
    K, y = _problem(n=100)
    res = svm_dual_admm(DenseCholeskyFactor(K, 1e3), K, y, 1e-4,
                        options=DualADMMOptions(max_iter=200))
    assert np.isfinite(res.bias)


def test_needs_only_the_factor_protocol():
    # a factor exposing just beta and solve (no shape) is enough, and the result is unchanged
    K, y = _problem(n=90)
    F = DenseCholeskyFactor(K, 2.0)

    class Minimal:
        beta = 2.0

        def solve(self, b):
            return F.solve(b)
    a = svm_dual_admm_path(Minimal(), K, y, [0.5, 5.0], options=DualADMMOptions(max_iter=30))
    b = svm_dual_admm_path(F, K, y, [0.5, 5.0], options=DualADMMOptions(max_iter=30))
    for ra, rb in zip(a, b):
        np.testing.assert_array_equal(ra.alpha, rb.alpha)


def test_divergence_on_indefinite_approximation_is_caught():
    # An HSS approximation can be indefinite; with beta barely above -lambda_min the dual is
    # not convex and the ADMM blew up (gap 238 -> 5,224 here, NaNs on gmm8). With a refactor
    # available the guard restores the best iterate, raises beta and the floor, and goes on.
    K, y = _problem(n=300, seed=1)
    lam, V = np.linalg.eigh(K)
    lam[:20] = -0.5
    Ki = (V * lam) @ V.T
    solver = DualADMM(DenseCholeskyFactor(Ki, 0.8), Ki, y, 100.0,
                      refactor=lambda b: DenseCholeskyFactor(Ki, b),
                      options=DualADMMOptions(max_iter=400, kkt_tol=1e-9, relaxation=1.6))
    res, factor = solver.solve(), solver.factor
    assert factor.beta == res.beta  # the factor in force at the end comes back
    gaps = [g for _, g in res.kkt_history]
    assert np.all(np.isfinite(gaps)) and np.isfinite(res.bias)
    assert gaps[-1] < 0.1 * gaps[0]
    assert res.beta >= 8.0 and res.state["beta_floor"] >= 8.0
    assert np.all((res.alpha >= 0) & (res.alpha <= 100.0))
    # a path hands the floor on: the next C never rebalances below it
    nxt = svm_dual_admm(factor, Ki, y, 1000.0, warm_start=res.state,
                        beta_floor=res.state["beta_floor"],
                        refactor=lambda b: DenseCholeskyFactor(Ki, b),
                        options=DualADMMOptions(max_iter=50, kkt_tol=1e-9))
    assert nxt.beta >= res.state["beta_floor"]


def test_warm_start_carries_its_beta_floor():
    # a floor learnt at one C (K + beta I indefinite or diverging below it) holds for the next
    # C started from that state: rebalancing never goes below it
    K, y = _problem(n=200)
    F = DenseCholeskyFactor(K, 50.0)
    refactor = lambda b: DenseCholeskyFactor(K, b)  # noqa: E731
    free = svm_dual_admm(F, K, y, 100.0, refactor=refactor, options=DualADMMOptions(max_iter=60))
    assert free.beta < 40.0  # without a floor, balancing at C = 100 goes below it
    first = svm_dual_admm(F, K, y, 0.1, options=DualADMMOptions(max_iter=20))
    state = {**first.state, "beta_floor": 40.0}
    res = svm_dual_admm(F, K, y, 100.0, warm_start=state, refactor=refactor,
                        options=DualADMMOptions(max_iter=60))
    assert res.state["beta_floor"] >= 40.0 and res.beta >= 40.0


def test_penalty_balancer_moves_beta_and_restarts_from_the_best_check():
    """The balancing both dual ADMMs share: beta moves by balance_factor toward the smaller
    residual, at most max_refactor times; an indefinite shift raises the floor instead; a
    diverging gap brings back the best check's iterates and puts beta above it for good."""
    from hsskern.exceptions import NotPositiveDefiniteError
    from hsskern.solvers.engines.admm import PenaltyBalancer

    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 30))
    K = A @ A.T / 30

    def refactor(b):
        if b < 0.05:
            raise NotPositiveDefiniteError("indefinite", None)
        return DenseCholeskyFactor(K, b)

    bal = PenaltyBalancer(DenseCholeskyFactor(K, 1.0), refactor, 30, max_refactor=3)
    bal.balance(1.0, 1e-3)  # primal residual large: beta up
    assert bal.beta == 10.0 and bal.n_refactor == 1
    np.testing.assert_allclose((K + 10.0 * np.eye(30)) @ bal.w, np.ones(30), atol=1e-10)
    bal.balance(1e-3, 1.0)  # dual residual large: beta down
    assert bal.beta == 1.0
    bal.balance(0.5, 0.4)  # balanced: nothing moves
    assert bal.beta == 1.0 and bal.n_refactor == 2
    bal.move(0.01)  # indefinite: the floor rises past it, the factor stays
    assert bal.beta == 1.0 and bal.floor >= 0.01 * 10 ** 0.5
    z, mu = np.arange(30.0), -np.arange(30.0)
    assert bal.check(0.5, z, mu) is None
    assert bal.check(0.2, 2 * z, 2 * mu) is None  # the best check so far
    z_best, mu_best = bal.check(50.0, 3 * z, 3 * mu)  # diverged
    np.testing.assert_array_equal(z_best, 2 * z)
    np.testing.assert_array_equal(mu_best, 2 * mu)
    assert bal.floor >= 10.0 * 1.0 and bal.beta >= 10.0
    assert bal.n_refactor == bal.max_refactor  # no more descent
    bal.balance(1e-3, 1.0)
    assert bal.beta >= 10.0


def _same_result(a, b):
    for name in ("alpha", "bias", "n_iter", "converged", "beta", "primal_residuals",
                 "dual_residuals", "objective"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_the_class_and_its_options_are_the_one_call_form():
    """DualADMM(...).solve() with DualADMMOptions is svm_dual_admm bit for bit, and its path
    form on one C after another the same runs; the one-call forms take the options only."""
    from hsskern.solvers.engines.admm import DualADMM, DualADMMOptions
    K, y = _problem(n=150)
    refactor = lambda b: DenseCholeskyFactor(K, b)  # noqa: E731
    opts = DualADMMOptions(max_iter=80, kkt_tol=1e-4, relaxation=1.6, kkt_every=5)
    ref = svm_dual_admm(DenseCholeskyFactor(K, 1.0), K, y, 3.0, refactor=refactor, options=opts)
    solver = DualADMM(DenseCholeskyFactor(K, 1.0), K, y, 3.0, refactor=refactor, options=opts)
    _same_result(solver.solve(), ref)
    assert solver.factor.beta == ref.beta
    short = svm_dual_admm(DenseCholeskyFactor(K, 1.0), K, y, 3.0, options=opts.replace(max_iter=7))
    assert short.n_iter == 7
    path = svm_dual_admm_path(DenseCholeskyFactor(K, 1.0), K, y, [1.0, 3.0], options=opts,
                              refactor=refactor)
    first = svm_dual_admm(DenseCholeskyFactor(K, 1.0), K, y, 1.0, refactor=refactor,
                          options=opts)
    _same_result(path[0], first)
    with pytest.raises(TypeError, match="unexpected"):  # the tunables are options' fields
        svm_dual_admm(DenseCholeskyFactor(K, 1.0), K, y, 1.0, max_iter=7)


@pytest.mark.parametrize("field, value", [("max_iter", -1), ("max_iter", 2.5),
                                          ("kkt_every", 0), ("relaxation", 2.0),
                                          ("tol", -1e-3), ("margin_eps", 0.5),
                                          ("balance_factor", 0.0), ("max_refactor", True)])
def test_options_are_validated_and_frozen(field, value):
    import dataclasses

    from hsskern.solvers.engines.admm import DualADMMOptions
    from hsskern.solvers.paths.svr_path import SVRADMMOptions
    with pytest.raises(ValueError):
        DualADMMOptions(**{field: value})
    if field in SVRADMMOptions.__dataclass_fields__:
        with pytest.raises(ValueError):
            SVRADMMOptions(**{field: value})
    with pytest.raises(dataclasses.FrozenInstanceError):
        DualADMMOptions().max_iter = 3
    with pytest.raises(TypeError, match="DualADMMOptions"):
        svm_dual_admm(DenseCholeskyFactor(np.eye(3), 1.0), np.eye(3), [1, -1, 1], 1.0,
                      options=SVRADMMOptions())
