"""The nu backends (solvers/paths/nu_path.py) and the nu estimators on the shared base (issue 61).

The estimators' answers are tested against scikit-learn in test_nu.py, test_nu_proba.py and
test_one_class.py; here: the backends' own contract (the constraints every nu's solution
satisfies, the zero model of a nu a problem does not admit) and the estimators' place on the
spine.
"""
import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsskern import NuSVC, NuSVR, OneClassSVM
from hsskern.estimators.base import PathClassifier, PathEstimator
from hsskern.kernels import make_kernel
from hsskern.solvers.engines.cached_smo import SMOOptions
from hsskern.solvers.paths.nu_path import NuSVCBackend, NuSVRBackend, OneClassBackend
from hsskern.solvers.paths.pairwise import PairwiseBackend
from strategies import class_clusters

ESTIMATORS = Path(__file__).resolve().parents[1] / "hsskern" / "estimators"
TOL = 1e-9
OPTIONS = SMOOptions(tol=TOL)
SETTINGS = dict(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_nu_estimators_are_path_estimators():
    assert issubclass(NuSVC, PathClassifier)
    assert issubclass(NuSVR, PathEstimator) and issubclass(OneClassSVM, PathEstimator)


def test_no_estimator_module_calls_an_engine():
    """The engines are reached through a backend in solvers/ (issue 61's layering)."""
    for path in ESTIMATORS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cached_smo"):
                names = {a.name for a in node.names}
                assert "solve_dual" not in names, path.name


@settings(**SETTINGS)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(10, 40), share=st.floats(0.1, 0.9),
       weighted=st.booleans())
def test_nusvc_backend_meets_nus_constraints_along_the_path(seed, n, share, weighted):
    X, y = class_clusters(seed, n, 2, 2, 1.5)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    w = np.random.default_rng(seed).uniform(0.5, 2.0, n) if weighted else np.ones(n)
    top = 2 * min(w[y == 0].sum(), w[y == 1].sum()) / w.sum()
    nus = np.sort([share * top, min(1.0, 1.2 * share * top)])
    backend = NuSVCBackend(make_kernel("gaussian", h=1.0), OPTIONS)
    sols = backend.path(backend.prepare(X, Y), Y, nus, weights=w if weighted else None)
    assert [s.C for s in sols] == nus.tolist()
    for nu, sol in zip(nus, sols):
        (r,) = sol.info["r"]
        if not nu * w.sum() / 2 <= min(w[y == 0].sum(), w[y == 1].sum()):
            assert np.isnan(r) and not sol.dual_coef.any()  # not admitted: the zero model
            continue
        if not 0 < r < 1e299:  # no margin: the zero model, r saying why
            assert not sol.dual_coef.any()
            continue
        a = Y[:, 0] * sol.dual_coef[:, 0] * r  # the scaled dual, back from y a / r
        assert np.all(a >= -1e-12) and np.all(a <= w * (1 + 1e-9))
        assert abs(Y[:, 0] @ a) <= 1e-8 * w.sum()  # y^T a = 0
        np.testing.assert_allclose(a.sum(), nu * w.sum(), rtol=1e-9)  # e^T a = nu sum(w)


def test_pairwise_around_the_nu_backend_is_nusvc():
    X, y = class_clusters(3, 60, 2, 3, 2.0)
    Y = -np.ones((60, 3))
    Y[np.arange(60), y] = 1.0
    est = NuSVC(nu=0.3, gamma=0.5, tol=TOL).fit(X, y)
    backend = PairwiseBackend(NuSVCBackend(make_kernel("gaussian", gamma=0.5), OPTIONS))
    prepared = backend.prepare(X, Y)
    model = backend.model(prepared, backend.path(prepared, Y, [0.3]))
    est.decision_function_shape = "ovo"
    np.testing.assert_allclose(model.decision(X)[0], est.decision_function(X), atol=1e-12)


def test_nusvr_and_one_class_backends_keep_nus_sums():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    kernel = make_kernel("gaussian", h=1.0)
    reg = NuSVRBackend(kernel, OPTIONS, C=2.0)
    for nu, sol in zip([0.2, 0.6], reg.path(reg.prepare(X), np.sin(X[:, :1]), [0.2, 0.6])):
        c = sol.dual_coef[:, 0]  # a+ - a-: each half sums to nu C n / 2
        assert np.all(np.abs(c) <= 2.0 + 1e-9) and abs(c.sum()) <= 1e-8
        assert np.abs(c).sum() <= nu * 2.0 * 40 * (1 + 1e-9)
        assert sol.info["epsilon"] >= -1e-9
    one = OneClassBackend(kernel, OPTIONS)
    for nu, sol in zip([0.1, 0.5], one.path(one.prepare(X), None, [0.1, 0.5])):
        a = sol.dual_coef[:, 0]
        assert np.all((a >= 0) & (a <= 1 + 1e-12))
        np.testing.assert_allclose(a.sum(), nu * 40, rtol=1e-9)


def test_a_nu_path_starts_each_nu_from_the_last():
    """Later nus start from the last solution, not LIBSVM's start: fewer steps than alone."""
    X, y = class_clusters(1, 200, 2, 2, 1.0)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    backend = NuSVCBackend(make_kernel("gaussian", h=1.0), OPTIONS)
    prepared = backend.prepare(X, Y)
    path = backend.path(prepared, Y, [0.3, 0.31])
    alone = backend.path(prepared, Y, [0.31])
    assert path[1].n_iter[0] < alone[0].n_iter[0]
    np.testing.assert_allclose(path[1].dual_coef, alone[0].dual_coef, atol=1e-5)


@pytest.mark.parametrize("Est", [NuSVC, NuSVR, OneClassSVM])
def test_convergence_warning_names_the_callers_line(Est):
    X, y = class_clusters(0, 60, 2, 2, 0.5)
    args = (X,) if Est is OneClassSVM else (X, y)
    with pytest.warns(Warning) as record:
        Est(max_iter=1).fit(*args)
    assert [w.filename for w in record] == [__file__]
