"""The contracts a new backend or factor is held to (:func:`hsskern.testing.check_backend`,
:func:`hsskern.testing.check_factor`), run over every backend and factor the package has,
and shown to fail on a backend or factor that breaks them."""
import dataclasses

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification

from hsskern import (ExactSVC, FPCClassifier, HSSKernelRidge, HSSSVC, HSSSVCOptions, HSSSVR,
                     NuSVC, NuSVR, NystromSVC, OneClassSVM, SparseCholeskySVC)
from hsskern.factors import DenseCholeskyFactor, LowRankShiftFactor
from hsskern.kernels import kernel_operator, make_kernel
from hsskern.options import HSSOptions
from hsskern.solvers.paths.hss_path import prepare_hss
from hsskern.sparse.cholesky import SparseCholeskyFactor
from hsskern.sparse.gram import compact_gram
from hsskern.testing import check_backend, check_factor


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # tiny matrices: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


def _points(n=120, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _factors():
    X = _points()
    K = kernel_operator(X, "gaussian", h=1.0)
    A = K.to_dense()
    yield "dense-cholesky", DenseCholeskyFactor(K, 0.1), A
    F = _points(120, 7, seed=1)
    yield "low-rank-shift", LowRankShiftFactor(F, 0.5), F @ F.T
    C = compact_gram(X, 1.5)
    yield "sparse-cholesky", SparseCholeskyFactor(C, 1e-2, backend="scipy"), C.toarray()
    prob = prepare_hss(X, make_kernel("gaussian", h=1.0), beta=0.1,
                       hss_options=HSSOptions(leaf_size=16, rel_tol=1e-6))
    yield "hss-ulv", prob.factor, prob.approximation.to_dense()


FACTORS = list(_factors())


@pytest.mark.parametrize("name, factor, A", FACTORS, ids=[f[0] for f in FACTORS])
def test_every_factor_keeps_the_factor_contract(name, factor, A):
    check_factor(factor, A, rng=0)


def test_check_factor_fails_on_a_factor_of_another_matrix():
    X = _points(60)
    K = kernel_operator(X, "gaussian", h=1.0).to_dense()
    factor = DenseCholeskyFactor(K, 0.1)
    with pytest.raises(AssertionError, match="backward error"):
        check_factor(factor, 2.0 * K)


def _binary(n=150, seed=0):
    X, y = make_classification(n, 4, n_informative=3, n_redundant=0, random_state=seed)
    return X, y


def _multiclass(n=150, seed=0):
    return make_blobs(n, n_features=3, centers=3, cluster_std=2.0, random_state=seed)


def _unlabeled(n=150, seed=0):
    return _points(n, 3, seed), None


def _regression(n=150, seed=0):
    X = _points(n, 3, seed)
    return X, np.sin(X[:, 0]) + 0.1 * X[:, 1]


# (id, estimator, data, purpose): each estimator's backend for a fit or a path; a classifier's
# is the one-vs-one PairwiseBackend around its own (HSSBackend, OneFitBackend, ExactBackend)
BACKENDS = [
    ("hss-exact-path", HSSSVC(h=1.0, options=HSSSVCOptions(approximation="exact")), _binary,
     "path"),
    ("hss-admm-path", HSSSVC(h=1.0, options=HSSSVCOptions(leaf_size=32, start="admm"),
                             random_state=0), _binary, "path"),
    ("hss-one-fit", HSSSVC(h=1.0), _binary, "fit"),
    ("hss-pairwise", HSSSVC(h=1.0), _multiclass, "fit"),
    ("exact-svc", ExactSVC(h=1.0, random_state=0), _binary, "fit"),
    ("nystrom", NystromSVC(h=1.0, n_components=30, random_state=0), _binary, "path"),
    ("sparse-cholesky", SparseCholeskySVC(sigma=1.5), _binary, "path"),
    ("fpc", FPCClassifier(degree=2), _binary, "fit"),
    ("svr-hss", HSSSVR(h=1.0), _regression, "path"),
    ("svr-cached", HSSSVR(kernel="poly", degree=2, gamma=0.5), _regression, "path"),
    ("kernel-ridge", HSSKernelRidge(0.1, h=1.0), _regression, "path"),
    ("nu-svc", NuSVC(gamma=0.5), _binary, "path"),
    ("nu-svc-pairwise", NuSVC(gamma=0.5), _multiclass, "fit"),
    ("nu-svr", NuSVR(gamma=0.5), _regression, "path"),
    ("one-class", OneClassSVM(gamma=0.5), _unlabeled, "path"),
]


EXPECTED_BACKEND = {"hss-exact-path": "PairwiseBackend", "hss-admm-path": "PairwiseBackend",
                    "hss-one-fit": "PairwiseBackend", "hss-pairwise": "PairwiseBackend",
                    "exact-svc": "PairwiseBackend", "nystrom": "NystromBackend",
                    "sparse-cholesky": "SparseCholeskyBackend", "fpc": "FPCBackend",
                    "svr-hss": "SVRBackend", "svr-cached": "CachedSVRBackend",
                    "kernel-ridge": "RidgeBackend", "nu-svc": "PairwiseBackend",
                    "nu-svc-pairwise": "PairwiseBackend", "nu-svr": "NuSVRBackend",
                    "one-class": "OneClassBackend"}


def _backend_of(est, data, purpose):
    """What the estimator's fit or path hands the protocol: the backend, X, Y and the grid."""
    X, y = data()
    est._validate_params()
    fitted = est._validate_fit(X, y, None)
    nu = getattr(est, "_path_param", "C") == "nu"
    grid = [0.2, 0.4, 0.6] if nu else [0.1, 1.0, 10.0]
    values = est._fit_values() if purpose == "fit" else grid
    return est._make_backend(fitted.X, values, purpose=purpose), fitted, values


@pytest.mark.parametrize("name, est, data, purpose", BACKENDS, ids=[b[0] for b in BACKENDS])
def test_every_backend_keeps_the_path_protocol(name, est, data, purpose):
    backend, fitted, values = _backend_of(est, data, purpose)
    Cs = [None] if values == [None] else values
    solutions = check_backend(backend, fitted.X, fitted.Y, Cs, atol=1e-8)
    assert len(solutions) == len(Cs)
    assert type(backend).__name__ == EXPECTED_BACKEND[name]


@dataclasses.dataclass(frozen=True)
class _OffByOne:
    """A backend whose model adds 1 to every decision value: it breaks the expansion."""
    inner: object

    @property
    def kernel(self):
        return self.inner.kernel

    def prepare(self, X, Y=None):
        return self.inner.prepare(X, Y)

    def path(self, prepared, Y, Cs, weights=None):
        return self.inner.path(prepared, Y, Cs)

    def model(self, prepared, solutions):
        model = self.inner.model(prepared, solutions)
        model.intercept = model.intercept + 1.0
        return model


def test_check_backend_fails_on_a_model_that_is_not_its_solutions():
    backend, fitted, values = _backend_of(BACKENDS[0][1], _binary, "path")
    check_backend(backend, fitted.X, fitted.Y, values)
    with pytest.raises(AssertionError, match="kernel expansion"):
        check_backend(_OffByOne(backend), fitted.X, fitted.Y, values)
