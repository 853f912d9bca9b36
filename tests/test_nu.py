"""NuSVC and NuSVR against scikit-learn's (LIBSVM) and against their own optimality.

scikit-learn's LIBSVM keeps kernel rows in float (Qfloat), so its answer solves a problem
perturbed by ~6e-8 per entry: its gradient is off by up to eps32 * sum(a) and, for nu-SVC,
the decision values by that over r (the scaled dual's offset, 1/r being the effective C,
1e3-1e4 on well separated classes). The comparisons allow that plus both tolerances; the
sharp test is the KKT gap of our answer in double precision.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import NuSVC as SkNuSVC
from sklearn.svm import NuSVR as SkNuSVR
from sklearn.utils.estimator_checks import parametrize_with_checks

from hsskern import NuSVC, NuSVR
from strategies import class_clusters

EPS32 = np.finfo(np.float32).eps
TOL = 1e-8
MAX_ITER = 10 ** 6  # steps of one pair (both sides): near nu's degenerate limit SMO
# creeps for 10^7 steps, LIBSVM's default cap
SETTINGS = dict(max_examples=20, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])




def _max_nu(y, w=None):
    mass = np.bincount(y, w)
    return min(2 * min(a, b) / (a + b) for i, a in enumerate(mass) for b in mass[i + 1:])


def _pairs(k):
    return [(i, j) for i in range(k) for j in range(i + 1, k)]


def _pair_coefs(model, i, j):
    """Pair (i, j)'s coefficients on the support vectors in LIBSVM's layout (class i's in
    row j - 1, class j's in row i), zero elsewhere; sign of scikit-learn's multiclass."""
    cls = np.repeat(np.arange(model.classes_.size), model.n_support_)
    c = np.zeros(cls.size)
    c[cls == i] = model.dual_coef_[j - 1, cls == i]
    c[cls == j] = model.dual_coef_[i, cls == j]
    return c if model.classes_.size > 2 else -c


def _mass(model, i, j, y, w):
    w = np.ones(y.size) if w is None else w
    return w[(y == model.classes_[i]) | (y == model.classes_[j])].sum()


def _r(model, nu, i, j, y, w=None):
    """The pair's r from its coefficients: sum |y a / r| = nu sum(w) / r."""
    return nu * _mass(model, i, j, y, w) / np.abs(_pair_coefs(model, i, j)).sum()


def _nu_gap(K, s, a, upper):
    """Solver_NU's KKT gap of a scaled dual a (signs s): per label, max -G over the variables
    that can grow plus max G over those that can shrink; the larger of the two labels."""
    G = s * (K @ (s * a))
    gaps = []
    for lab in (1.0, -1.0):
        m = s == lab
        # the bounds to rounding: a comes back as |y a / r| * r
        up, lo = m & (a < upper * (1 - 1e-9)), m & (a > 1e-9 * upper)
        if up.any() and lo.any():
            gaps.append(np.max(-G[up]) + np.max(G[lo]))
    return max(gaps)


def _scaled_alpha(model, nu, i, j, y, w):
    """The pair's scaled dual a in [0, w] on the training points, and its signs (+1 for
    class i)."""
    r = _r(model, nu, i, j, y, w)
    a = np.zeros(y.size)
    a[model.support_] = np.abs(_pair_coefs(model, i, j)) * r
    return a, np.where(y == model.classes_[i], 1.0, -1.0)


def _offsets_determined(a, s, pair, upper):
    """Whether Solver_NU's r1 and r2 are averages over free variables (unique to the
    gap), not midpoints of intervals chosen by exact bound tests: each label has a variable
    clearly inside its box."""
    free = (a > 1e-6 * upper) & (a < (1 - 1e-6) * upper)
    return all(np.any(free & pair & (s == lab)) for lab in (1.0, -1.0))


def _check_against_sklearn(ours, ref, X, y, nu, K, w=None):
    """Pair by pair (one-vs-one values), with K the training Gram matrix.

    The kernel part r (f - b) = (K y a)(x) = <w, phi(x)> is unique at the optimum; an a
    whose Solver_NU gap is delta is within delta * 2 nu sum(w) of the optimal objective,
    so its w is within sqrt(4 delta nu sum(w)) of the optimal w (strong convexity in w),
    and |<w, phi(x)>| moves by at most that times sqrt(k(x, x)). Both gaps are measured
    in double precision (scikit-learn's is larger: its rows are float). Where both labels
    have free variables the offsets are averages of G over them (unique to the same
    bounds): then the decision values, r and the signs are compared too. Returns each pair's bound on the decision values (inf where
    the offsets are not determined) and the reference's values.
    """
    k = ours.classes_.size
    np.testing.assert_array_equal(ours.classes_, ref.classes_)
    shape = ours.decision_function_shape, ref.decision_function_shape
    ours.decision_function_shape = ref.decision_function_shape = "ovo"
    dec = ours.decision_function(X).reshape(len(X), -1)
    ref_dec = ref.decision_function(X).reshape(len(X), -1)
    ours.decision_function_shape, ref.decision_function_shape = shape
    upper = np.ones(y.size) if w is None else w
    bounds = []
    for p, (i, j) in enumerate(_pairs(k)):
        pair = (y == ours.classes_[i]) | (y == ours.classes_[j])
        mass = _mass(ours, i, j, y, w)
        r, r_ref = _r(ours, nu, i, j, y, w), _r(ref, nu, i, j, y, w)
        a, s = _scaled_alpha(ours, nu, i, j, y, w)
        a_ref, _ = _scaled_alpha(ref, nu, i, j, y, w)
        Kp = K[np.ix_(pair, pair)]
        gaps = [_nu_gap(Kp, s[pair], x[pair], upper[pair]) for x in (a, a_ref)]
        assert gaps[0] <= TOL * (1 + 1e-6) + 1e-13  # our answer meets the tolerance
        unscaled = sum(np.sqrt(4 * max(g, 0.0) * nu * mass) for g in gaps) * np.sqrt(
            np.diag(K).max()) + 1e-12
        b, b_ref = ours.intercept_.ravel()[p], ref.intercept_.ravel()[p]
        np.testing.assert_allclose(r * (dec[:, p] - b), r_ref * (ref_dec[:, p] - b_ref),
                                   rtol=0, atol=unscaled)
        if not (_offsets_determined(a, s, pair, upper) and
                _offsets_determined(a_ref, s, pair, upper)):
            bounds.append(np.inf)
            continue
        # of K y a - rho and of r before the division; the reference's offsets come from
        # its float rows' G
        err = 2 * unscaled + sum(gaps) + 8 * EPS32 * nu * mass
        atol = err / r * (1 + np.abs(ref_dec[:, p]))
        assert np.all(np.abs(dec[:, p] - ref_dec[:, p]) <= atol), np.abs(
            dec[:, p] - ref_dec[:, p]).max()
        np.testing.assert_allclose(r, r_ref, rtol=0, atol=err)
        sure = np.abs(ref_dec[:, p]) > 2 * atol
        assert np.array_equal(np.sign(dec[sure, p]), np.sign(ref_dec[sure, p]))
        bounds.append(atol.max())
    return np.array(bounds), ref_dec


def _degenerate(models, nu, y, w=None):
    """Below the smallest nu of a nonzero w (r -> 0, the effective C 1/r unbounded) SMO
    creeps and may stop at max_iter, LIBSVM's too: then some pair's r is near 0."""
    if all(m.fit_status_ == 0 for m in models):
        return False
    assert min(_r(m, nu, i, j, y, w) for m in models
               for i, j in _pairs(m.classes_.size)) < 1e-3
    return True


def _gram(X, gamma):
    if gamma == "scale":
        gamma = 1 / (X.shape[1] * X.var()) if X.var() > 0 else 1.0
    return rbf_kernel(X, X, gamma=gamma)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@settings(**SETTINGS)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(12, 50), d=st.integers(1, 4),
       k=st.sampled_from([2, 2, 3]), spread=st.floats(0.0, 3.0),
       share=st.floats(0.05, 0.95), gamma=st.sampled_from(["scale", 0.3, 2.0]))
def test_nusvc_equals_sklearn(seed, n, d, k, spread, share, gamma):
    X, y = class_clusters(seed, n, d, k, spread)
    nu = share * _max_nu(y)
    ref = SkNuSVC(nu=nu, gamma=gamma, tol=TOL, max_iter=MAX_ITER).fit(X, y)
    try:
        ours = NuSVC(nu=nu, gamma=gamma, tol=TOL, max_iter=MAX_ITER).fit(X, y)
    except ValueError as e:  # w = 0 at this nu: scikit-learn's r is 0 to its rounding
        assert "is below the range" in str(e)
        assert any(abs(_r(ref, nu, i, j, y)) < 1e-6 for i, j in _pairs(k))
        return
    if _degenerate([ours, ref], nu, y):
        return
    _check_against_sklearn(ours, ref, X, y, nu, _gram(X, gamma))
    for i, j in _pairs(k):  # the scaled dual's constraints (its sum is r's definition)
        a, s = _scaled_alpha(ours, nu, i, j, y, None)
        assert abs(s @ a) <= 1e-9 * n and a.max() <= 1 + 1e-9


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@settings(**SETTINGS)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(12, 50), d=st.integers(1, 4),
       k=st.sampled_from([2, 3]))
def test_nusvc_ovr_predict_and_weights_equal_sklearn(seed, n, d, k):
    X, y = class_clusters(seed, n, d, k, 3.0)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, n)
    nu = 0.5 * _max_nu(y, w)
    ref = SkNuSVC(nu=nu, tol=TOL, max_iter=MAX_ITER).fit(X, y, sample_weight=w)
    try:
        ours = NuSVC(nu=nu, tol=TOL, max_iter=MAX_ITER).fit(X, y, sample_weight=w)
    except ValueError as e:  # w = 0 at this nu (seed=48, n=48, d=1, k=3): as above
        assert "is below the range" in str(e)
        assert any(abs(_r(ref, nu, i, j, y, w)) < 1e-6 for i, j in _pairs(k))
        return
    if _degenerate([ours, ref], nu, y, w):
        return
    bounds, ref_ovo = _check_against_sklearn(ours, ref, X, y, nu, _gram(X, "scale"), w)
    sure = np.all(np.abs(ref_ovo) > 2 * bounds, axis=1)  # no vote in doubt (none if a
    # pair's offsets are not determined: then its values may differ by a constant)
    np.testing.assert_array_equal(ours.predict(X)[sure], ref.predict(X)[sure])
    dec, ref_dec = ours.decision_function(X), ref.decision_function(X)
    assert dec.shape == ref_dec.shape
    # "ovr": the votes plus each class's summed values through a 1/3-Lipschitz map
    if sure.any():
        np.testing.assert_allclose(dec[sure], ref_dec[sure], rtol=0,
                                   atol=max(1, k - 1) * bounds.max())


@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_nusvc_dot_kernels_equal_sklearn(kernel):
    from sklearn.metrics.pairwise import pairwise_kernels
    X, y = class_clusters(4, 40, 3, 3, 3.0)  # separated: r far from 0 for the linear kernel
    nu = 0.4 * _max_nu(y)
    params = dict(nu=nu, kernel=kernel, degree=2, coef0=1.0, gamma="scale", tol=TOL)
    ours, ref = NuSVC(**params).fit(X, y), SkNuSVC(**params).fit(X, y)
    extra = {} if kernel == "linear" else dict(degree=2, coef0=1.0,
                                               gamma=1 / (X.shape[1] * X.var()))
    K = pairwise_kernels(X, metric=kernel, **extra)
    bounds, _ = _check_against_sklearn(ours, ref, X, y, nu, K)
    assert np.isfinite(bounds).any()  # some pair's offsets determined, values compared


def test_nusvc_attributes_as_sklearns():
    X, y = class_clusters(3, 60, 2, 3, 2.0)
    ours = NuSVC(nu=0.3, tol=TOL).fit(X, y)
    ref = SkNuSVC(nu=0.3, tol=TOL).fit(X, y)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_array_equal(ours.n_support_, ref.n_support_)
    np.testing.assert_array_equal(ours.support_vectors_, ref.support_vectors_)
    assert ours.dual_coef_.shape == ref.dual_coef_.shape == (2, ref.support_.size)
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=1e-4 * np.abs(
        ref.dual_coef_).max())
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=1e-3, atol=1e-6)
    assert ours.n_iter_.shape == (3,) and ours.fit_status_ == 0


@settings(**SETTINGS)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(8, 50), d=st.integers(1, 4),
       nu=st.floats(0.05, 1.0), C=st.sampled_from([0.5, 1.0, 10.0]),
       weighted=st.booleans())
def test_nusvr_equals_sklearn(seed, n, d, nu, C, weighted):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X @ rng.normal(size=d)) + 0.1 * rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, n) if weighted else None
    ours = NuSVR(nu=nu, C=C, tol=TOL).fit(X, y, sample_weight=w)
    ref = SkNuSVR(nu=nu, C=C, tol=TOL).fit(X, y, sample_weight=w)
    total = C * (n if w is None else w.sum())
    atol = 4 * TOL + 8 * EPS32 * nu * total
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=0, atol=atol)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=0, atol=atol)
    # nu's meaning: at most nu n points strictly outside the tube
    resid = np.abs(y - ours.predict(X))
    if w is None:
        assert np.count_nonzero(resid > ours.epsilon_ + 10 * atol) <= nu * n + 1e-9


@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_nusvr_dot_kernels_equal_sklearn(kernel):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    y = X @ rng.normal(size=3) + 0.3 * X[:, 0] ** 2 + 0.1 * rng.normal(size=40)
    params = dict(nu=0.3, C=2.0, kernel=kernel, degree=2, coef0=1.0, tol=TOL)
    ours, ref = NuSVR(**params).fit(X, y), SkNuSVR(**params).fit(X, y)
    from sklearn.metrics.pairwise import pairwise_kernels
    extra = {} if kernel == "linear" else dict(degree=2, coef0=1.0,
                                               gamma=1 / (X.shape[1] * X.var()))
    kmax = np.abs(pairwise_kernels(X, metric=kernel, **extra)).max()
    atol = 4 * TOL + 8 * EPS32 * kmax * 0.3 * 2.0 * 40  # the float rows' error on G
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=0, atol=atol)


@pytest.mark.parametrize("Est,Ref", [(NuSVC, SkNuSVC), (NuSVR, SkNuSVR)])
def test_nu_path_equals_fits_and_sklearn(Est, Ref):
    X, y = class_clusters(5, 70, 3, 3 if Est is NuSVC else 2, 1.0)
    if Est is NuSVR:
        y = X[:, 0] + np.sin(X[:, 1])
    nus = [0.7, 0.1, 0.4, 0.9]
    est = Est(tol=TOL)
    models = est.fit_path(X, y, nus)
    assert [m.nu for m in models] == sorted(nus)
    assert not hasattr(est, "support_")  # self left as it was
    for m in models:
        fresh = Est(nu=m.nu, tol=TOL).fit(X, y)
        ref = Ref(nu=m.nu, tol=TOL).fit(X, y)
        if Est is NuSVC:
            _check_against_sklearn(m, ref, X, y, m.nu, _gram(X, "scale"))
            _check_against_sklearn(m, fresh, X, y, m.nu, _gram(X, "scale"))
        else:
            atol = 4 * TOL + 8 * EPS32 * m.nu * len(X)
            np.testing.assert_allclose(m.predict(X), ref.predict(X), atol=atol)
            np.testing.assert_allclose(m.predict(X), fresh.predict(X), atol=atol)


def test_fit_path_keeps_a_fitted_self():
    X, y = class_clusters(6, 40, 2, 2, 1.0)
    est = NuSVC(nu=0.3).fit(X, y)
    before = est.decision_function(X).copy(), est.support_.copy()
    est.fit_path(X, y, [0.2, 0.6])
    np.testing.assert_array_equal(est.decision_function(X), before[0])
    np.testing.assert_array_equal(est.support_, before[1])
    assert est.nu == 0.3


@pytest.mark.parametrize("Est", [NuSVC, NuSVR])
@pytest.mark.parametrize("nu", [0.0, -0.1, 1.5])
def test_nu_out_of_range_is_refused(Est, nu):
    X, y = class_clusters(0, 20, 2, 2, 1.0)
    with pytest.raises(ValueError, match="nu"):
        Est(nu=nu).fit(X, y)
    with pytest.raises(ValueError, match=r"nus.*> 0|\(0, 1\]"):
        Est().fit_path(X, y, [0.5, nu])


def test_infeasible_nu_is_refused_with_the_largest_feasible():
    X, y = class_clusters(0, 40, 2, 2, 1.0)
    y = (np.arange(40) < 10).astype(int)  # 10 against 30: nu <= 2 * 10 / 40 = 0.5
    with pytest.raises(ValueError, match=r"specified nu is infeasible.*a nu below 0\.5\b"):
        NuSVC(nu=0.6).fit(X, y)
    NuSVC(nu=0.49).fit(X, y)
    with pytest.raises(ValueError, match="largest feasible value.*smaller class is at its "
                                         "bound.*use a smaller nu"):
        NuSVC(nu=0.5).fit(X, y)  # feasible, but the small class has no free point
    with pytest.raises(ValueError, match="not finite"):
        SkNuSVC(nu=0.5).fit(X, y)
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        NuSVC().fit_path(X, y, [0.2, 0.55])
    w = np.where(y == 1, 3.0, 1.0)  # weighted sizes 30 against 30: any nu
    NuSVC(nu=0.9).fit(X, y, sample_weight=w)
    y3 = np.repeat([0, 1, 2], [20, 14, 6])  # nu <= 12 / 26 for classes 0 and 2 only
    with pytest.raises(ValueError, match=r"infeasible for classes 0 and 2: .*a nu below "
                                         r"0\.4615"):
        NuSVC(nu=0.5).fit(X, y3)
    with pytest.raises(ValueError, match="infeasible"):  # as scikit-learn's
        SkNuSVC(nu=0.5).fit(X, y3)


@pytest.mark.parametrize("Est", [NuSVC, NuSVR])
def test_weights_zero_drop_and_integer_repeat(Est):
    X, y = class_clusters(8, 30, 2, 2, 1.0)
    if Est is NuSVR:
        y = X[:, 0] - X[:, 1] ** 2
    w = np.ones(30)
    w[:4], w[4:8] = 0.0, 2.0
    est = Est(nu=0.4, gamma=0.5, tol=1e-10)  # gamma="scale" would see other points
    weighted = clone(est).fit(X, y, sample_weight=w)
    keep = np.concatenate([np.arange(4, 30), np.arange(4, 8)])
    repeated = clone(est).fit(X[keep], y[keep])
    out = "decision_function" if Est is NuSVC else "predict"
    np.testing.assert_allclose(getattr(weighted, out)(X), getattr(repeated, out)(X),
                               atol=1e-6)
    assert not np.isin(np.arange(4), weighted.support_).any()


@parametrize_with_checks([NuSVC(), NuSVR()], expected_failed_checks=lambda est: {
    "check_sample_weight_equivalence_on_dense_data":
        "xfailed for scikit-learn's NuSVC / NuSVR too: gamma='scale' reads X.var() of the "
        "rows as given, so repeating rows changes the kernel (NuSVC: the check's weights "
        "also make nu=0.5 infeasible); test_weights_zero_drop_and_integer_repeat checks "
        "the equivalence at a fixed gamma",
    "check_sample_weight_equivalence_on_sparse_data": "as on dense data",
    **({"check_class_weight_classifiers":
        "its class weights 1000 against 1e-4 make nu=0.5 infeasible for LIBSVM's weighted "
        "nu (a clear ValueError); scikit-learn's NuSVC ignores class_weight and is xfailed "
        "there; test_class_weight_is_libsvms_weighted_nu tests ours"}
       if isinstance(est, NuSVC) else {})})
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_nu_at_the_feasible_limit_with_no_margin_is_refused():
    """nu = 2 min(n1, n2) / (n1 + n2) with equal classes puts every point at its bound: no
    finite offset (scikit-learn returns non-finite coefficients), a clear error here."""
    X, y = class_clusters(0, 12, 1, 2, 0.0)
    with pytest.raises(ValueError, match="largest feasible value for classes 0 and 1.*use a "
                                         "smaller nu"):
        NuSVC(nu=1.0).fit(X, y)


def test_a_margin_below_zero_by_less_than_tol_is_still_undefined():
    """NuSVC(nu=0.05, kernel="linear") on inseparable data: Solver_NU's r is -4e-06, inside
    the tolerance, but the primal's margin is 0 there and its optimum w = 0, so the model
    alpha / r is undefined (LIBSVM's is inverted by the sign of r): a clear error saying so."""
    from sklearn.datasets import make_classification
    X, y = make_classification(200, 5, random_state=0)
    with pytest.raises(ValueError, match=r"r = -[0-9.e-]+ <= 0, so the optimal w is 0 and "
                                         r"the model alpha / r is undefined"):
        NuSVC(nu=0.05, kernel="linear").fit(X, y)
    assert NuSVC(nu=0.3, kernel="linear").fit(X, y).score(X, y) > 0.85


def test_class_weight_is_libsvms_weighted_nu():
    """A class weight multiplies its points' sample weights (bounds and nu's sums);
    "balanced" equalizes the classes, so a nu infeasible for the raw counts fits."""
    X, y = class_clusters(2, 40, 2, 3, 2.0)
    y[:8] = 2  # class sizes 11, 9, 20
    sw = np.random.default_rng(0).uniform(0.5, 1.5, 40)
    cw = {0: 2.0, 1: 0.5, 2: 1.0}
    by_class = NuSVC(nu=0.3, class_weight=cw, tol=TOL).fit(X, y, sample_weight=sw)
    by_sample = NuSVC(nu=0.3, tol=TOL).fit(X, y, sample_weight=sw * np.array([2.0, 0.5,
                                                                               1.0])[y])
    np.testing.assert_array_equal(by_class.decision_function(X),
                                  by_sample.decision_function(X))
    np.testing.assert_array_equal(by_class.class_weight_, [2.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="infeasible for classes"):
        NuSVC(nu=0.8).fit(X, y)
    balanced = NuSVC(nu=0.8, class_weight="balanced", tol=TOL).fit(X, y)
    counts = np.bincount(y)
    same = NuSVC(nu=0.8, tol=TOL).fit(X, y, sample_weight=(40 / (3 * counts))[y])
    np.testing.assert_array_equal(balanced.decision_function(X), same.decision_function(X))
