"""Class and sample weights: LIBSVM's weighted C (point i's bound C w_i) through the HSS stack.

The reference is scikit-learn's SVC (LIBSVM) on the same weights. Both solvers stop at a KKT
gap eps = m(a) - M(a) <= 1e-10 (LIBSVM's own measure and ``tol``). A feasible dual point with
gap eps and any b in [M, m] has a primal point (w, b) whose duality gap is at most
2 eps sum_i C w_i (each point contributes at most 2 C w_i eps), and the primal is 1-strongly
convex in w, so |<w - w*, phi(x)>| <= 2 sqrt(eps sum_i C w_i) for the Gaussian kernel
(|phi(x)| = 1). That bound for each of the two solutions, doubled, is the tolerance ``_tol``
asserted on the kernel part of the decision values (f(x) - b): about 1e-4 here, against O(1)
decision values and O(0.1) changes when a weight is mishandled (measured: the two agree to
1e-5 at worst).

The intercept is not unique when no point is free (every alpha at 0 or at C w_i, which
class_weight="balanced" makes common at small C): every b in an interval [lb, ub] is then
optimal. Both solvers take its midpoint by the same rule, but LIBSVM counts an alpha one
rounding error below its bound as free and then takes that point's margin instead (seen:
1.7e-16 below, b = lb). So the intercepts are asserted to lie in the interval of optimal
intercepts (a single point, within ``_tol``, when some point is free).
"""
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.svm import SVC

from hsskern.estimators.cv import score_fold
from hsskern.estimators.fpc import FPCClassifier, FPCClassifierCV
from hsskern.estimators.hss_svc import HSSSVC, HSSSVCCV
from hsskern.estimators.nystrom import NystromSVC, NystromSVCCV
from hsskern.estimators.sparse_cholesky import SparseCholeskySVC
from hsskern.kernels import make_kernel
from hsskern.solvers.paths.fpc_path import FPCBackend
from hsskern.solvers.engines.liblinear import l1svm_objective
from hsskern.solvers.paths.nystrom_path import NystromBackend, NystromProblem
from hsskern.solvers.paths.sparse_path import SparseCholeskyBackend
from hsskern.solvers.engines.ssn import l2svm_newton, l2svm_objective
from hsskern.sparse.gram import compact_kernel
from hsskern.solvers.engines.admm import kkt_violation
from hsskern.solvers.paths.hss_path import HSSBackend, hss_svm_path, prepare_hss
from svm_reference import assert_same_svm, binary_problem, gap_tol, svc
from hsskern import HSSSVCOptions
from hsskern.options import PathSettings


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # tiny matrices: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


EPS = 1e-10
# a fixed width (h=1): gamma="scale" follows X's variance, which repeated rows change
EXACT = dict(h=1.0, options=HSSSVCOptions(approximation="exact", solve_exact=True), tol=EPS)


def _tol(C, w):
    return gap_tol(EPS, C, w)


def _svc(C, h, **kw):
    return svc(C, h, EPS, **kw)


def _binary(seed, n, d=3):
    # imbalanced and overlapping: weights move the boundary and leave free SVs on both sides
    return binary_problem(seed, n, d, threshold=0.6)


def _weights(rng, n, kind):
    if kind == "positive":
        return rng.uniform(0.2, 3.0, n)
    if kind == "integer":
        return rng.integers(0, 4, n).astype(float)
    w = rng.uniform(0.2, 3.0, n)  # with zeros
    w[rng.choice(n, n // 5, replace=False)] = 0.0
    return w


def _kkt(K, y, alpha, bound, b, tol):
    """The weighted dual's optimality conditions at (alpha, b) on the dense kernel."""
    assert np.all(alpha >= 0) and np.all(alpha <= bound * (1 + 1e-12))
    assert abs(y @ alpha) <= 1e-9 * max(1.0, bound.max())
    yf = y * (K @ (y * alpha) + b)
    eps = 1e-9 * np.maximum(bound, 1e-300)
    free = (alpha > eps) & (alpha < bound - eps)
    lower = (alpha <= eps) & (bound > 0)
    upper = alpha >= bound - eps
    assert np.all(np.abs(yf[free] - 1) <= tol)  # free points on their margin
    assert np.all(yf[lower] >= 1 - tol)  # at 0: outside the margin
    assert np.all(yf[upper & (bound > 0)] <= 1 + tol)  # at C w_i: inside it
    return free


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(30, 90), logC=st.floats(-1.0, 2.0),
       h=st.sampled_from([0.7, 1.5]),
       kind=st.sampled_from(["sample", "class_dict", "balanced", "both"]))
def test_weighted_binary_equals_svc(seed, n, logC, h, kind):
    X, y, rng = _binary(seed, n)
    Xt = rng.normal(size=(50, X.shape[1]))
    C = 10.0 ** logC
    sw = _weights(rng, n, "zeros") if kind in ("sample", "both") else None
    cw = {"class_dict": {0: 0.5, 1: 3.0}, "balanced": "balanced",
          "both": "balanced"}.get(kind)
    if sw is not None and np.unique(y[sw > 0]).size < 2:
        sw[np.flatnonzero(y == 0)[0]] = sw[np.flatnonzero(y == 1)[0]] = 1.0
    m = HSSSVC(C=C, class_weight=cw, **{**EXACT, "h": h}).fit(X, y, sample_weight=sw)
    ref = _svc(C, h, class_weight=cw).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(m.class_weight_, ref.class_weight_, rtol=1e-15)
    w = (np.ones(n) if sw is None else sw) * m.class_weight_[y]
    coef = assert_same_svm(m, ref, X, (X, Xt), np.where(y == 1, 1.0, -1.0), C * w,
                            _tol(C, w))
    # points of weight 0 are never support vectors (support_ indexes the rows given to fit)
    assert not np.any(w[m.support_] == 0)
    assert np.all(np.abs(coef) <= C * w * (1 + 1e-12))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-0.5, 1.5),
       kind=st.sampled_from(["sample", "class_dict", "balanced"]))
def test_weighted_multiclass_columns_equal_svc_on_each_one_vs_rest_problem(seed, logC, kind):
    # HSSSVC(multiclass="ovr"): column k is compared with SVC on "k vs rest"
    # with every point's own weight (its sample weight times its class's weight)
    X, y = make_blobs(90, centers=3, n_features=2, cluster_std=2.0, random_state=seed)
    labels = np.array(["x", "y", "z"])[y]
    rng = np.random.default_rng(seed)
    C, h = 10.0 ** logC, 1.0
    sw = _weights(rng, 90, "zeros") if kind == "sample" else None
    cw = {"class_dict": {"x": 2.0, "z": 0.25}, "balanced": "balanced"}.get(kind)
    if sw is not None:
        for c in range(3):  # every class keeps a point of positive weight
            sw[np.flatnonzero(y == c)[0]] = 1.0
    m = HSSSVC(h=h, C=C, class_weight=cw,
               options=HSSSVCOptions(approximation="exact", solve_exact=True, multiclass="ovr"),
               tol=EPS).fit(
        X, labels, sample_weight=sw)
    ref_cw = SVC(class_weight=cw).fit(X, labels).class_weight_
    np.testing.assert_allclose(m.class_weight_, ref_cw, rtol=1e-15)
    w = (np.ones(90) if sw is None else sw) * m.class_weight_[y]
    for k, c in enumerate(m.classes_):
        ref = _svc(C, h).fit(X, labels == c, sample_weight=w)  # classes [False, True]
        assert_same_svm(m, ref, X, (X,), np.where(labels == c, 1.0, -1.0), C * w,
                         _tol(C, w), k=k)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.0))
def test_integer_sample_weight_equals_repeated_rows(seed, logC):
    X, y, rng = _binary(seed, 40)
    sw = _weights(rng, 40, "integer")
    sw[:2] = 1.0
    C = 10.0 ** logC
    m = HSSSVC(C=C, **EXACT).fit(X, y, sample_weight=sw)
    rep = HSSSVC(C=C, **EXACT).fit(np.repeat(X, sw.astype(int), axis=0),
                                   np.repeat(y, sw.astype(int)))
    Xt = rng.normal(size=(30, 3))
    np.testing.assert_allclose(m.decision_function(Xt), rep.decision_function(Xt),
                               atol=_tol(C, sw))
    np.testing.assert_array_equal(m.predict(X), rep.predict(X))


@pytest.mark.parametrize("approximation", ["hss", "exact"])
def test_zero_weight_equals_dropping_the_row(approximation):
    # the rows of weight 0 are dropped before the compression: the same fit, bit for bit
    X, y, rng = _binary(3, 300)
    sw = _weights(rng, 300, "zeros")
    keep = sw > 0
    kw = dict(options=HSSSVCOptions(approximation=approximation, leaf_size=32), random_state=0,
              C=5.0, h=1.0)  # a fixed width: gamma="scale" would follow the kept rows' variance
    m = HSSSVC(**kw).fit(X, y, sample_weight=sw)
    d = HSSSVC(**kw).fit(X[keep], y[keep], sample_weight=sw[keep])
    Xt = rng.normal(size=(40, 3))
    np.testing.assert_array_equal(m.decision_function(Xt), d.decision_function(Xt))
    # support_ indexes the rows given to fit, and never a row of weight 0
    np.testing.assert_array_equal(m.support_, np.flatnonzero(keep)[d.support_])
    np.testing.assert_array_equal(m.support_vectors_, X[m.support_])
    assert np.all(sw[m.support_] > 0)


def test_weights_of_one_are_the_unweighted_fit_bit_for_bit():
    # all-one weights (sample_weight=1, or "balanced" on balanced classes) take the
    # unweighted path itself
    X, y, rng = _binary(5, 200)
    y = np.arange(200) % 2
    kw = dict(options=HSSSVCOptions(leaf_size=32), random_state=0, C=3.0)
    plain = HSSSVC(**kw).fit(X, y)
    for m in (HSSSVC(**kw).fit(X, y, sample_weight=np.ones(200)),
              HSSSVC(class_weight="balanced", **kw).fit(X, y)):
        np.testing.assert_array_equal(m.dual_coef_, plain.dual_coef_)
        np.testing.assert_array_equal(m.intercept_, plain.intercept_)


def test_uniform_weight_is_a_larger_C():
    X, y, rng = _binary(8, 80)
    a = HSSSVC(C=0.5, **EXACT).fit(X, y, sample_weight=np.full(80, 6.0))
    b = HSSSVC(C=3.0, **EXACT).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                               atol=_tol(3.0, np.ones(80)))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), solve_exact=st.booleans(), logC=st.floats(-1.0, 2.0))
def test_path_solutions_satisfy_the_weighted_kkt_conditions(seed, solve_exact, logC):
    # hss_svm_path on the weights themselves, zeros included (the solver's bound 0): every C
    # is feasible in its own box [0, C w_i]; refined, the exact weighted SVM
    X, y, rng = _binary(seed, 60)
    w = _weights(rng, 60, "zeros")
    w[:2] = 1.0
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    problem = prepare_hss(X, make_kernel("gaussian", h=1.0), approximation="exact")
    Cs = 10.0 ** logC * np.array([0.1, 1.0, 10.0])
    options = HSSSVCOptions(solve_exact=bool(solve_exact), admm_max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ADMM only: a gap above tol at large C warns
        sols = hss_svm_path(problem, Y, Cs, w, options=options,
                            settings=PathSettings(tol=1e-9 if solve_exact else 1e-3))
    K = problem.approximation
    for C, sol in zip(Cs, sols):
        alpha = np.abs(sol.dual_coef[:, 0])
        assert np.all(alpha <= C * w * (1 + 1e-12)) and np.all(alpha[w == 0] == 0)
        if solve_exact:
            assert sol.converged[0] and sol.gap[0] < 1e-9
            free = _kkt(K, Y[:, 0], alpha, C * w, sol.intercept[0], tol=1e-8)
            assert free.any()
            gap = kkt_violation(K @ (Y * alpha[:, None]), Y, alpha[:, None],
                                (C * w)[:, None])[0]
            assert gap < 1e-8


def test_fit_path_with_weights_equals_fits_at_each_C():
    X, y, rng = _binary(11, 70)
    sw = _weights(rng, 70, "zeros")
    sw[:2] = 1.0
    Cs = [0.1, 1.0, 10.0, 100.0]
    est = HSSSVC(class_weight={1: 2.0}, **EXACT)
    models = est.fit_path(X, y, Cs, sample_weight=sw)
    w = sw * np.where(y == 1, 2.0, 1.0)
    for m in models:
        single = HSSSVC(C=m.C, class_weight={1: 2.0}, **EXACT).fit(X, y, sample_weight=sw)
        np.testing.assert_allclose(m.decision_function(X), single.decision_function(X),
                                   atol=_tol(m.C, w))
        np.testing.assert_array_equal(m.class_weight_, [1.0, 2.0])
        assert np.all(sw[m.support_] > 0)
    assert not hasattr(est, "support_")  # fit_path leaves est unfitted (issue 43)


def test_cv_weights_follow_their_rows_into_the_folds():
    # every fold: trained on its rows' weights (class weights "balanced" over its own training
    # labels), scored by its test rows' weighted accuracy; the refit on all rows' weights
    X, y, rng = _binary(13, 120)
    sw = _weights(rng, 120, "zeros")
    sw[:2] = 1.0
    splits = [(np.arange(0, 80), np.arange(80, 120)), (np.arange(40, 120), np.arange(0, 40))]
    Cs = [0.3, 3.0]
    kw = dict(class_weight="balanced", **EXACT)
    cv = HSSSVCCV(Cs=Cs, cv=splits, **kw).fit(X, y, sample_weight=sw)
    for s, (tr, te) in enumerate(splits):
        for i, C in enumerate(Cs):
            m = HSSSVC(C=C, **kw).fit(X[tr], y[tr], sample_weight=sw[tr])
            acc = np.average(m.predict(X[te]) == y[te], weights=sw[te])
            assert cv.cv_results_[f"split{s}_test_score"][i] == acc
    best = HSSSVC(C=cv.C_, **kw).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(cv.decision_function(X), best.decision_function(X),
                               atol=1e-12)
    np.testing.assert_array_equal(cv.class_weight_, best.class_weight_)


def test_score_fold_drops_zero_weight_training_rows_and_weights_the_test_rows():
    X, y, rng = _binary(17, 100)
    sw = _weights(rng, 100, "zeros")
    sw[:2] = 1.0
    tr, te = np.arange(70), np.arange(70, 100)
    backend = HSSBackend(make_kernel("gaussian", h=1.0),
                         HSSSVCOptions(start="admm", approximation="exact"))
    out = score_fold(backend, X, y, tr, te, np.array([1.0]), sample_weight=sw)
    keep = tr[sw[tr] > 0]
    ref = score_fold(backend, X, y, keep, te, np.array([1.0]), sample_weight=sw)
    assert out["scores"][0] == ref["scores"][0]
    m = HSSSVC(C=1.0,
               options=HSSSVCOptions(approximation="exact")).fit(X[keep], y[keep],
                                     sample_weight=sw[keep])
    assert out["scores"][0] == np.average(m.predict(X[te]) == y[te], weights=sw[te])
    # all test rows weigh 0: nothing to score
    sw0 = sw.copy()
    sw0[te] = 0.0
    assert np.isnan(score_fold(backend, X, y, tr, te, np.array([1.0]),
                               sample_weight=sw0)["scores"][0])


@pytest.mark.parametrize("bad, match", [
    (-1.0, "must be >= 0.*index 3"),
    (np.nan, "must be finite.*index 3"),
    (np.inf, "must be finite.*index 3"),
])
def test_bad_sample_weight_is_a_clear_error(bad, match):
    X, y, _ = _binary(0, 20)
    sw = np.ones(20)
    sw[3] = bad
    for est in (HSSSVC(**EXACT), HSSSVCCV(Cs=2, cv=2, **EXACT)):
        with pytest.raises(ValueError, match=match):
            est.fit(X, y, sample_weight=sw)
    with pytest.raises(ValueError, match=match):
        HSSSVC(**EXACT).fit_path(X, y, [1.0, 2.0], sample_weight=sw)
    problem = prepare_hss(X, make_kernel("gaussian", h=1.0), approximation="exact")
    with pytest.raises(ValueError, match=match):
        hss_svm_path(problem, np.where(y == 1, 1.0, -1.0), [1.0], sw)
    # every other estimator, before any work, and the solvers themselves
    for est in (NystromSVC(h=1.0, n_components=5),
                NystromSVCCV(h=1.0, n_components=5, Cs=[1.0], cv=2), SparseCholeskySVC(sigma=1.0),
                FPCClassifier(), FPCClassifierCV(degrees=[1], cv=2)):
        with pytest.raises(ValueError, match=match):
            est.fit(X, y, sample_weight=sw)
    Y = np.where(y == 1, 1.0, -1.0)
    with pytest.raises(ValueError, match=match):
        l2svm_newton(X, Y, 1.0, sample_weight=sw)
    for be in (NystromBackend(make_kernel("gaussian", h=1.0), n_components=5),
               SparseCholeskyBackend(compact_kernel(1.5, 3, 3))):
        with pytest.raises(ValueError, match=match):
            be.path(be.prepare(X), Y, [1.0], weights=sw)
    fpc = FPCBackend(degree=2)
    with pytest.raises(ValueError, match=match):
        fpc.path(fpc.prepare(X, Y[:, None]), Y, [None], weights=sw)


def test_weight_shapes_zeros_and_classes_are_checked():
    X, y, _ = _binary(0, 20)
    with pytest.raises(ValueError, match="shape"):
        HSSSVC(**EXACT).fit(X, y, sample_weight=np.ones(21))
    with pytest.raises(ValueError, match="all zero"):
        HSSSVC(**EXACT).fit(X, y, sample_weight=np.zeros(20))
    with pytest.raises(ValueError, match="single class"):
        HSSSVC(**EXACT).fit(X, y, sample_weight=(y == 1).astype(float))
    with pytest.raises(ValueError, match="single class"):
        HSSSVC(class_weight={0: 0.0}, **EXACT).fit(X, y)
    with pytest.raises(ValueError, match="finite weight >= 0"):
        HSSSVC(class_weight={0: -1.0}, **EXACT).fit(X, y)
    X3, y3 = make_blobs(30, centers=3, random_state=0)
    with pytest.raises(ValueError, match=r"class\(es\) \[2\] have no sample of positive"):
        HSSSVC(**EXACT).fit(X3, y3, sample_weight=(y3 != 2).astype(float))
    with pytest.raises(ValueError, match="not in class_weight"):  # SVC's own error
        HSSSVC(class_weight={7: 2.0}, **EXACT).fit(X, y)


def test_unknown_fit_keywords_are_refused():
    X, y, _ = _binary(0, 30)
    with pytest.raises(TypeError, match="unexpected keyword"):
        FPCClassifier().fit(X, y, weights=np.ones(30))


# ------------------------------------------------ the other backends: Nystrom, sparse, FPC
# Every classifier takes class_weight and sample_weight through the same base; what a weight
# means in each solver is tested on the solver's own problem (a fixed feature map, factor or
# feature matrix), where its solution is exact.

def _other_estimators():
    return [
        NystromSVC(h=1.0, n_components=30, C=3.0, tol=1e-10, random_state=0),
        NystromSVC(h=1.0, n_components=30, C=3.0, loss="hinge", tol=1e-6, random_state=0),
        SparseCholeskySVC(sigma=1.5, C=3.0, tol=1e-8, random_state=0),
        FPCClassifier(degree=3, tol=1e-9, max_iter=3000),
    ]


@pytest.mark.parametrize("est", _other_estimators(), ids=lambda e: repr(e)[:40])
def test_zero_weight_equals_dropping_the_row_for_every_backend(est):
    # rows of weight 0 are dropped before prepare: the same fit, bit for bit
    X, y, rng = _binary(21, 120)
    sw = _weights(rng, 120, "zeros")
    keep = sw > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = clone(est).fit(X, y, sample_weight=sw)
        d = clone(est).fit(X[keep], y[keep], sample_weight=sw[keep])
    Xt = rng.normal(size=(40, 3))
    np.testing.assert_array_equal(m.decision_function(Xt), d.decision_function(Xt))
    if hasattr(m, "support_"):
        np.testing.assert_array_equal(m.support_, np.flatnonzero(keep)[d.support_])
        assert np.all(sw[m.support_] > 0)


@pytest.mark.parametrize("est", _other_estimators(), ids=lambda e: repr(e)[:40])
def test_class_weight_equals_the_equivalent_sample_weight_for_every_backend(est):
    X, y, rng = _binary(22, 150)
    cw = est.set_params(class_weight="balanced")
    balanced = len(y) / (2 * np.bincount(y))
    sw = rng.uniform(0.5, 2.0, 150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = clone(cw).fit(X, y, sample_weight=sw)
        b = clone(cw).set_params(class_weight=None).fit(X, y, sample_weight=sw * balanced[y])
        c = clone(cw).set_params(class_weight={0: 1.0, 1: 7.0}).fit(X, y)
        e = clone(cw).set_params(class_weight=None).fit(X, y, sample_weight=np.where(y, 7., 1.))
        plain = clone(cw).set_params(class_weight=None).fit(X, y)
    np.testing.assert_allclose(a.class_weight_, balanced, rtol=1e-15)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(c.decision_function(X), e.decision_function(X))
    # and the weights do something: a 7x heavier positive class moves the surface
    assert np.max(np.abs(c.decision_function(X) - plain.decision_function(X))) > 1e-2


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, 2.0))
@example(seed=2184, logC=1.875)
def test_nystrom_integer_weights_equal_repeated_rows_on_one_feature_map(seed, logC):
    # the linear SVM on fixed features F (squared hinge by Newton, exact to rounding at
    # this tol; hinge by LIBLINEAR, equal objectives to its tolerance)
    X, y, rng = _binary(seed, 60)
    sw = _weights(rng, 60, "integer")
    sw[:2] = 1.0
    r = np.repeat(np.arange(60), sw.astype(int))
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    Cs = 10.0 ** logC * np.array([0.1, 1.0, 10.0])
    for loss, tol in (("squared_hinge", 1e-12), ("hinge", 1e-10)):
        be = NystromBackend(make_kernel("gaussian", h=1.0), n_components=20, loss=loss,
                            tol=tol, max_iter=100_000, random_state=0)
        prob = be.prepare(X)
        rep = NystromProblem(prob.feature_map, prob.features[r], prob.stats, prob.timings)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = be.path(prob, Y, Cs, weights=sw)
            b = be.path(rep, Y[r], Cs)
        for sa, sb, C in zip(a, b, Cs):
            if loss == "squared_hinge":
                np.testing.assert_allclose(sa.coef, sb.coef, rtol=1e-7, atol=1e-9)
                np.testing.assert_allclose(sa.intercept, sb.intercept, rtol=1e-7, atol=1e-9)
            if loss == "hinge" and C > 100:
                # LIBLINEAR's dual coordinate descent stops short of its tolerance at large C
                # (seed 2184, C = 750: objectives 0.2% apart): no equality to claim there
                continue
            wa, ba = sa.coef[0], sa.intercept[0]
            fa = l1svm_objective(prob.features, Y[:, 0], C, wa, ba, 1.0, sw) if (
                loss == "hinge") else l2svm_objective(prob.features, Y[:, 0], C, wa, ba, 1.0, sw)
            fb = sb.info["objective"][0]
            np.testing.assert_allclose(fa, fb, rtol=1e-6)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.5, 0.0))
def test_sparse_cholesky_weights_bound_each_point_by_C_w(seed, logC):
    # hinge loss: LIBLINEAR's weighted dual has 0 <= lambda_i <= C w_i, and the recovered
    # kernel expansion is a = y lambda (thesis eq. (42)), so |a_i| <= C w_i, a_i = 0 at
    # weight 0, and points at their own bound exist (margin violators; at small C, where
    # the overlapping classes leave some inside the margin)
    X, y, rng = _binary(seed, 80)
    w = _weights(rng, 80, "zeros")
    w[:2] = 1.0
    C = 10.0 ** logC
    be = SparseCholeskyBackend(compact_kernel(1.5, 3, 3), loss="hinge", tol=1e-10,
                               max_iter=100_000, random_state=0)
    prob = be.prepare(X)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol, = be.path(prob, Y, [C], weights=w)
    a = sol.dual_coef[:, 0]
    assert np.all(np.abs(a) <= C * w * (1 + 1e-6) + 1e-9)
    assert np.all(a[w == 0] == 0) or np.max(np.abs(a[w == 0])) < 1e-9 * C
    assert np.all(np.sign(a[np.abs(a) > 1e-9 * C]) == Y[np.abs(a) > 1e-9 * C, 0])
    at_bound = np.abs(np.abs(a) - C * w) <= 1e-6 * C * w
    assert np.any(at_bound & (w > 0) & (w != 1.0))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.0, -0.5))
def test_sparse_cholesky_integer_weights_equal_repeated_rows(seed, logC):
    # the factor of K + beta W^-1 with bounds C w_i is the problem of the repeated rows.
    # Squared hinge at C <= 0.3: LIBLINEAR's dual coordinate descent reaches both to
    # rounding (measured 1e-13 on 75 cases); from C ~ 1 on these nearly singular factors it
    # stalls short of its tol in 1e5 epochs and the two runs differ by up to 2e-2
    X, y, rng = _binary(seed, 60)
    sw = _weights(rng, 60, "integer")
    sw[:2] = 1.0
    r = np.repeat(np.arange(60), sw.astype(int))
    kw = dict(sigma=1.5, C=10.0 ** logC, tol=1e-12, max_iter=100_000, random_state=0)
    a = SparseCholeskySVC(**kw).fit(X, y, sample_weight=sw)
    b = SparseCholeskySVC(**kw).fit(X[r], y[r])
    Xt = rng.normal(size=(30, 3))
    np.testing.assert_allclose(a.decision_function(Xt), b.decision_function(Xt),
                               rtol=1e-7, atol=1e-9)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_fpc_integer_weights_equal_repeated_rows(seed):
    # weights enter FPC's ADMM as the counts of repeated rows do: the same iterates
    X, y, rng = _binary(seed, 80)
    sw = _weights(rng, 80, "integer")
    sw[:2] = 1.0
    r = np.repeat(np.arange(80), sw.astype(int))
    kw = dict(degree=3, tol=1e-7, max_iter=400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = FPCClassifier(**kw).fit(X, y, sample_weight=sw)
        b = FPCClassifier(**kw).fit(X[r], y[r])
    Xt = rng.normal(size=(30, 3))
    np.testing.assert_allclose(a.decision_function(Xt), b.decision_function(Xt),
                               rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(a.n_iter_, b.n_iter_)


@pytest.mark.parametrize("make", [
    lambda: NystromSVCCV(h=1.0, n_components=20, Cs=[0.3, 3.0], tol=1e-8, random_state=0,
                         class_weight="balanced"),
    lambda: FPCClassifierCV(degrees=[1, 2], tol=1e-6, max_iter=500, warm_degrees=False,
                            class_weight="balanced"),
], ids=["nystrom", "fpc"])
def test_cv_weights_follow_their_rows_into_the_folds_for_every_backend(make):
    X, y, rng = _binary(23, 120)
    sw = _weights(rng, 120, "zeros")
    sw[:2] = 1.0
    splits = [(np.arange(0, 80), np.arange(80, 120)), (np.arange(40, 120), np.arange(0, 40))]
    cv = make().set_params(cv=splits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv.fit(X, y, sample_weight=sw)
        single = cv._estimator(**{k: v for k, v in cv.get_params(deep=False).items()
                                  if k in cv._estimator().get_params(deep=False)})
        for s, (tr, te) in enumerate(splits):
            for i, params in enumerate(cv.cv_results_["params"]):
                m = clone(single).set_params(**params).fit(X[tr], y[tr], sample_weight=sw[tr])
                acc = np.average(m.predict(X[te]) == y[te], weights=sw[te])
                got = cv.cv_results_[f"split{s}_test_score"][i]
                if isinstance(cv, FPCClassifierCV):  # one batched ADMM: equal to its tol
                    assert abs(got - acc) <= 1.0 / 40 + 1e-12
                else:
                    assert got == acc
        best = clone(single).set_params(**cv.best_params_).fit(X, y, sample_weight=sw)
    np.testing.assert_array_equal(cv.class_weight_, best.class_weight_)
    np.testing.assert_allclose(cv.decision_function(X), best.decision_function(X),
                               atol=1e-12 if isinstance(cv, NystromSVCCV) else 1e-3)


@pytest.mark.parametrize("solver", ["cg", "cholesky"])
def test_newton_weights_in_the_masked_products(monkeypatch, solver):
    # when the active rows do not fit half the available memory, CG's products and its
    # preconditioner run masked over all rows: weighted there too (the direct solve's Gram
    # cache, weighted as well, is the other branch)
    import hsskern.solvers.engines.ssn as ssn
    monkeypatch.setattr(ssn, "available_memory", lambda: 1)
    X, y, rng = _binary(31, 70)
    sw = _weights(rng, 70, "integer")
    sw[:2] = 1.0
    r = np.repeat(np.arange(70), sw.astype(int))
    Y = np.where(y == 1, 1.0, -1.0)
    a = l2svm_newton(X, Y, 2.0, sample_weight=sw, tol=1e-12, newton_solver=solver)
    b = l2svm_newton(X[r], Y[r], 2.0, tol=1e-12, newton_solver=solver)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.b, b.b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-12)
