"""The one-class ADMM start (solvers/paths/one_class_admm.py) and OneClassSVM's choice of start:
the projection onto the one-class dual's feasible set against a brute-force reference, the
ADMM's iterates feasible and approaching the exact dual's optimum, and the ADMM route's
answers equal to scikit-learn's (the start changes no answer)."""
import itertools

import numpy as np
import pytest
from hypothesis import assume, example, given, strategies as st
from sklearn import svm
from sklearn.utils._param_validation import InvalidParameterError

from hsskern import OneClassSVM, OneClassSVMOptions
from hsskern.factors import DenseCholeskyFactor
from hsskern.kernels import kernel_operator, make_kernel
from hsskern.solvers.engines.cached_smo import SMOOptions, solve_dual
from hsskern.solvers.paths.one_class_admm import (OneClassADMM, OneClassADMMOptions, one_class_gap,
                                            project_capped_simplex)


def _points(seed, n, d):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)


def _brute_projection(v, total, upper):
    """The nearest point of {0 <= z <= upper, sum z = total} by trying every split of the
    coordinates into (at 0, at upper, free): on a split the free ones are v - tau with the
    one tau that makes the sum; the nearest feasible candidate is the projection."""
    best, best_d = None, np.inf
    for split in itertools.product(range(3), repeat=v.size):
        s = np.array(split)
        z = np.where(s == 1, upper, 0.0)
        free = s == 2
        if free.any():
            tau = (v[free].sum() - (total - z.sum())) / free.sum()
            z[free] = v[free] - tau
        elif abs(z.sum() - total) > 1e-9:
            continue
        if z.min() < -1e-12 or z.max() > upper + 1e-12 or abs(z.sum() - total) > 1e-9:
            continue
        d = np.sum((z - v) ** 2)
        if d < best_d:
            best, best_d = z, d
    return best


@given(v=st.lists(st.floats(-5, 5), min_size=1, max_size=6), frac=st.floats(0, 1),
       upper=st.sampled_from([0.5, 1.0, 2.0]))
@example(v=[-4.0], frac=2.5632515389044336e-10, upper=0.5)  # found by a CI run
def test_projection_is_feasible_and_the_brute_force_nearest_point(v, frac, upper):
    v = np.array(v)
    total = frac * v.size * upper
    z = project_capped_simplex(v, total, upper)
    assert z.min() >= 0 and z.max() <= upper
    assert abs(z.sum() - total) <= 1e-9 * max(1.0, total)
    ref = _brute_projection(v, total, upper)
    # the brute force's own rounding: relative to the distance (v = [-4], total 1.3e-10:
    # the projection's z = total is exact, the brute force's 0 is off by 1e-9 in the square)
    assert np.sum((z - v) ** 2) <= np.sum((ref - v) ** 2) * (1 + 1e-9) + 1e-9
    np.testing.assert_allclose(z, ref, atol=1e-7)


@given(seed=st.integers(0, 10**6), n=st.integers(2, 3000), frac=st.floats(0.001, 0.999))
def test_projection_satisfies_the_variational_inequality(seed, n, frac):
    # z = P(v) iff (v - z) . (y - z) <= 0 for every feasible y: checked on feasible points
    rng = np.random.default_rng(seed)
    v = rng.normal(size=n) * rng.choice([0.01, 1.0, 100.0])
    total = frac * n
    z = project_capped_simplex(v, total)
    assert z.min() >= 0 and z.max() <= 1 and abs(z.sum() - total) <= 1e-9 * n
    for _ in range(5):
        y = project_capped_simplex(rng.normal(size=n) * 3, total)
        assert (v - z) @ (y - z) <= 1e-8 * (1 + np.abs(v).max()) * n


def test_projection_refuses_an_empty_set():
    with pytest.raises(ValueError, match="empty"):
        project_capped_simplex(np.zeros(3), 3.5)
    with pytest.raises(ValueError, match="empty"):
        project_capped_simplex(np.zeros(3), -0.1)


def _dense_problem(seed, n, d, beta):
    X = _points(seed, n, d)
    kernel = make_kernel("gaussian", gamma=1.0 / (d * X.var()))
    K = kernel_operator(X, kernel).to_dense()
    return X, kernel, K, DenseCholeskyFactor(K, beta)


@given(seed=st.integers(0, 10**6), n=st.integers(5, 120), nu=st.floats(0.05, 0.95))
def test_admm_iterates_are_feasible_and_approach_the_exact_optimum(seed, n, nu):
    X, kernel, K, factor = _dense_problem(seed, n, 2, beta=1.0)
    feasible = []
    admm = OneClassADMM(factor, K, OneClassADMMOptions(max_iter=400))
    res = admm.solve(nu, callback=lambda k, z, rp, rd: feasible.append(
        z.min() >= 0 and z.max() <= 1 and abs(z.sum() - nu * n) <= 1e-8 * n))
    assert all(feasible) and len(feasible) == res.n_iter
    exact = solve_dual(X, kernel, np.ones(n), 1.0, np.zeros(n),
                       np.full(n, nu), options=SMOOptions(tol=1e-10))
    a, e = res.alpha, exact.alpha
    f_admm, f_exact = 0.5 * a @ K @ a, 0.5 * e @ K @ e
    # a feasible point: never below the optimum, and close to it after the iterations
    assert f_admm >= f_exact - 1e-6 * max(1.0, f_exact)
    assert f_admm - f_exact <= 1e-3 * max(1.0, f_exact)


def test_admm_gap_stop_and_warm_start_along_nu():
    X, kernel, K, factor = _dense_problem(0, 200, 3, beta=1.0)
    admm = OneClassADMM(factor, K, OneClassADMMOptions(max_iter=500, tol=1e-4, kkt_every=5))
    first = admm.solve(0.2)
    assert first.converged and one_class_gap(K @ first.alpha, first.alpha) <= 1e-4 * 40
    warm = admm.solve(0.3, warm=first.state)
    cold = OneClassADMM(factor, K, admm.options).solve(0.3)
    assert warm.converged and cold.converged
    assert abs(warm.alpha.sum() - 60) <= 1e-8 * 200


@pytest.mark.parametrize("bad", [dict(max_iter=0), dict(relaxation=2.0), dict(tol=-1.0)])
def test_admm_options_refuse_bad_values(bad):
    with pytest.raises((ValueError, TypeError)):
        OneClassADMMOptions(**bad)


# a loose, many-leaf compression: the ADMM works on a poor approximation, the answer stays
_LOOSE = dict(start="admm", leaf_size=16, rel_tol=1e-1, abs_tol=1e-2, max_rank=8)


@given(seed=st.integers(0, 10**6), n=st.integers(5, 150), d=st.integers(1, 4),
       nu=st.floats(0.02, 0.95), kernel=st.sampled_from(["rbf", "laplacian"]),
       approximation=st.sampled_from(["hss", "exact"]))
def test_admm_start_gives_scikit_learns_decision_values(seed, n, d, nu, kernel, approximation):
    # as test_one_class's test: both sides to a gap of 1e-9, nu n not an integer
    assume(abs(nu * n - round(nu * n)) > 1e-6)
    X, Xt = _points(seed, n, d), _points(seed + 1, 20, d)
    ref = svm.OneClassSVM(nu=nu, tol=1e-9)
    if kernel == "laplacian":
        from sklearn.metrics.pairwise import euclidean_distances
        ref.set_params(kernel=lambda A, B: np.exp(-0.7 * euclidean_distances(A, B)))
    ref.fit(X)
    opts = OneClassSVMOptions(**_LOOSE, approximation=approximation)
    est = OneClassSVM(kernel=kernel, nu=nu, tol=1e-9, options=opts,
                      **({"gamma": 0.7} if kernel == "laplacian" else {})).fit(X)
    assert est.start_ == "admm" and est.fit_time_["admm"] > 0
    scale = max(1.0, np.abs(ref.dual_coef_).sum())
    np.testing.assert_allclose(est.decision_function(Xt), ref.decision_function(Xt),
                               rtol=0, atol=1e-5 * scale)
    assert np.isclose(est.dual_coef_.sum(), nu * n)


@given(seed=st.integers(0, 10**6), n=st.integers(10, 120), d=st.integers(1, 4),
       every=st.booleans())
def test_admm_start_nu_path_gives_scikit_learns_decision_values(seed, n, d, every):
    # the ADMM starts the first nu, or every nu (admm_every_nu) on the same factor
    X = _points(seed, n, d)
    nus = [0.0731, 0.2317, 0.5123, 0.8677]  # nu n never an integer here
    opts = OneClassSVMOptions(**_LOOSE, admm_every_nu=every)
    models = OneClassSVM(tol=1e-9, options=opts).fit_path(X, nus=nus)
    for m, nu in zip(models, nus):
        ref = svm.OneClassSVM(nu=nu, tol=1e-9).fit(X)
        assert m.start_ == "admm"
        np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X),
                                   rtol=0, atol=1e-5 * max(1.0, nu * n))


def test_route_rule_and_that_the_route_changes_no_answer():
    # "auto" takes the ADMM when nu n reaches admm_min_sv (here nu n = 90)
    X = _points(7, 300, 3)
    fits = {}
    for start, min_sv in [("auto", None), ("auto", 90), ("auto", 91), ("admm", None),
                          ("decomposition", 1)]:
        opts = OneClassSVMOptions(start=start, admm_min_sv=min_sv)
        est = OneClassSVM(nu=0.3, tol=1e-9, options=opts).fit(X)
        expected = "admm" if start == "admm" or (start == "auto" and min_sv == 90) \
            else "decomposition"
        assert est.start_ == expected == est.resolve_start(300)
        fits[(start, min_sv)] = est.decision_function(X)
    base = fits[("auto", None)]
    for value in fits.values():
        np.testing.assert_allclose(value, base, rtol=0, atol=1e-5 * 90)
    # a path decides on its smallest nu: 0.2 * 300 = 60 < 90
    opts = OneClassSVMOptions(admm_min_sv=90)
    assert {m.start_ for m in OneClassSVM(options=opts).fit_path(X, nus=[0.2, 0.5])} == \
        {"decomposition"}
    assert OneClassSVM(options=opts).resolve_start(300, 0.2) == "decomposition"
    # the defaults: LIBSVM's start for the small problems of the suite
    assert OneClassSVM().fit(X).start_ == "decomposition"
    # kernels the compression does not take: "auto" stays on LIBSVM's start, "admm" refuses
    poly = OneClassSVM(kernel="poly", options=OneClassSVMOptions(admm_min_sv=1)).fit(X)
    assert poly.start_ == "decomposition"
    with pytest.raises(ValueError, match="ADMM start"):
        OneClassSVM(kernel="poly", options=OneClassSVMOptions(start="admm")).fit(X)


def test_options_are_validated_and_reachable_by_nested_names():
    with pytest.raises(InvalidParameterError, match="admm_min_sv"):
        OneClassSVMOptions(admm_min_sv=0)
    with pytest.raises(InvalidParameterError, match="start"):
        OneClassSVMOptions(start="zero")
    est = OneClassSVM().set_params(options__start="admm", options__max_rank=50)
    assert est.options.start == "admm" and est.options.max_rank == 50
    assert est.get_params()["options__start"] == "admm"
    assert OneClassSVM().get_params()["options__start"] == "auto"
