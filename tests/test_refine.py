"""Exact-kernel chunking (hsskern.solvers.refine) and its use in HSSSVC."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from hsskern import HSSSVC, kernel_operator
from hsskern.solvers.admm import kkt_violation
from hsskern.solvers.refine import refine_exact


def _problem(seed, n=240, d=4, sep=0.8):
    X, y = make_classification(n, d, n_informative=min(d, 3), n_redundant=0,
                               random_state=seed, class_sep=sep, flip_y=0.05)
    return X, np.where(y == 1, 1.0, -1.0)


@settings(max_examples=15)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1.5, 2.5), h=st.sampled_from([0.5, 1.0, 3.0]),
       start=st.sampled_from(["zeros", "random", "svc"]))
def test_refined_solution_is_the_exact_svm(seed, logC, h, start):
    # whatever the starting decision values, the chunking ends at the exact dual optimum:
    # LIBSVM's optimality gap of the full problem <= a small multiple of its tolerance
    X, y = _problem(seed)
    C = 10.0 ** logC
    K = kernel_operator(X, "gaussian", h=h)
    rng = np.random.default_rng(seed)
    dec = {"zeros": np.zeros(len(y)), "random": rng.normal(size=len(y)),
           "svc": SVC(C=C, gamma=1 / (2 * h * h)).fit(X, y).decision_function(X)}[start]
    r = refine_exact(K, y, C, dec, tol=1e-3)
    assert r.converged and r.skipped is None
    alpha = y * r.dual_coef
    assert np.all(alpha >= -1e-12) and np.all(alpha <= C * (1 + 1e-12))
    assert abs(y @ alpha) <= 1e-8 * C * len(y)
    KYa = K.to_dense() @ r.dual_coef
    gap = kkt_violation(KYa[:, None], y[:, None], alpha[:, None], C)[0]
    assert gap <= 3e-3
    ref = SVC(C=C, gamma=1 / (2 * h * h), tol=1e-6).fit(X, y)
    f = KYa + r.bias
    # decision values at the stated tolerance (a gap of 1e-3 moves O(1) values by ~1e-2)
    np.testing.assert_allclose(f, ref.decision_function(X), atol=5e-2 * max(1.0, C ** 0.5))


def test_chunk_larger_than_max_chunk_is_skipped():
    X, y = _problem(0)
    K = kernel_operator(X, "gaussian", h=1.0)
    r = refine_exact(K, y, 1.0, chunk=np.arange(len(y)), max_chunk=10)
    assert r.skipped is not None and "max_chunk=10" in r.skipped
    assert r.rounds == 0 and not r.converged and not np.any(r.dual_coef)


def test_support_that_cannot_fit_stops_after_one_round():
    # many support vectors (label noise, small C): the first chunk's support plus its
    # violators already exceed max_chunk, so no second, larger SMO is solved to be discarded
    X, y = _problem(2, n=600, sep=0.3)
    K = kernel_operator(X, "gaussian", h=1.0)
    n_sv = np.count_nonzero(refine_exact(K, y, 0.1, np.zeros(len(y))).dual_coef)
    cap = n_sv // 2
    r = refine_exact(K, y, 0.1, np.zeros(len(y)), max_chunk=cap)
    assert r.rounds == 1 and not r.converged
    assert r.skipped is not None and "violators" in r.skipped


def test_oversized_start_is_cut_to_half_a_chunk_and_still_converges():
    X, y = _problem(1, n=400, sep=1.5)
    K = kernel_operator(X, "gaussian", h=1.0)
    ref = refine_exact(K, y, 1.0, np.zeros(len(y)))
    n_sv = np.count_nonzero(ref.dual_coef)
    cap = max(2 * n_sv, 60)
    r = refine_exact(K, y, 1.0, np.zeros(len(y)), max_chunk=cap)
    assert r.chunk_sizes[0] == cap // 2 and r.converged
    np.testing.assert_allclose(K.to_dense() @ r.dual_coef + r.bias,
                               K.to_dense() @ ref.dual_coef + ref.bias, atol=5e-2)


def test_one_class_chunk_is_completed():
    # a decision function that puts only positives in the band: the chunk gets negatives too
    X, y = _problem(3)
    K = kernel_operator(X, "gaussian", h=1.0)
    dec = np.where(y > 0, 0.0, -5.0)
    r = refine_exact(K, y, 1.0, dec)
    assert r.converged
    assert np.any(r.dual_coef > 0) and np.any(r.dual_coef < 0)


@pytest.mark.filterwarnings("ignore:HSS compression")
def test_hssvc_refine_recovers_svc_from_a_loose_approximation():
    # a deliberately poor HSS (rel_tol 0.3) and a 5-iteration ADMM: refinement still gives the
    # exact SVM, and without it the model is visibly worse
    X, y = make_classification(1600, 6, n_informative=5, n_redundant=0, random_state=4,
                               flip_y=0.02)
    Xtr, ytr, Xt = X[:1200], y[:1200], X[1200:]
    loose = dict(h=1.0, C=30.0, rel_tol=0.3, abs_tol=1e-2, max_rank=8, leaf_size=64,
                 max_iter=5, random_state=0)
    ref = SVC(C=30.0, gamma=0.5).fit(Xtr, ytr)
    m = HSSSVC(**loose).fit(Xtr, ytr)
    agree = np.mean(m.predict(Xt) == ref.predict(Xt))
    assert agree >= 0.99
    info = m.admm_["refinement"][0]
    assert info.converged and info.rounds >= 1
    assert m.fit_time_["refine"] > 0
    raw = HSSSVC(refine=False, **loose).fit(Xtr, ytr)
    assert raw.admm_["refinement"] is None
    assert np.mean(raw.predict(Xt) == ref.predict(Xt)) < agree


def test_hssvc_refine_respects_max_chunk():
    X, y = make_classification(400, 4, random_state=0)
    m = HSSSVC(approximation="exact", C=1.0, max_chunk=5).fit(X, y)
    assert not m.admm_["refinement"][0].converged
    # the chunking never converged: the model is the ADMM's, at the end of fit's continuation
    raw = HSSSVC(approximation="exact", refine=False).fit_path(X, y, [1e-3, 1e-2, 0.1, 1.0])
    np.testing.assert_array_equal(m.decision_function(X), raw[-1].decision_function(X))


def test_hssvc_wide_unconverged_support_skips_the_chunking():
    # an unconverged ADMM whose support is over twice max_chunk: no SMO is attempted (the
    # exact support could not fit either), and the ADMM solution stands
    X, y = make_classification(400, 4, random_state=0, flip_y=0.3)
    kw = dict(approximation="exact", C=1.0, max_iter=3, tol=1e-12, adaptive_beta=False)
    m = HSSSVC(max_chunk=20, **kw).fit_path(X, y, [1.0])[0]
    info = m.admm_["refinement"][0]
    assert len(m.support_) > 40
    assert info.rounds == 0 and not info.converged and "2 max_chunk" in info.skipped
    raw = HSSSVC(refine=False, **kw).fit_path(X, y, [1.0])[0]
    np.testing.assert_array_equal(m.decision_function(X), raw.decision_function(X))


def test_multiclass_refine_equals_per_class_binary():
    from sklearn.datasets import make_blobs
    X, y = make_blobs(300, centers=3, n_features=3, random_state=1, cluster_std=2.0)
    fixed = dict(C=5.0, approximation="exact", max_iter=20, tol=None, adaptive_beta=False)
    m = HSSSVC(**fixed).fit(X, y)
    dec = m.decision_function(X)
    for k, c in enumerate(m.classes_):
        b = HSSSVC(**fixed).fit(X, np.where(y == c, 1, 0))
        np.testing.assert_allclose(dec[:, k], b.decision_function(X), atol=1e-9)
