"""scipy sparse input (CSR, CSC) for every estimator: checked at the boundary, densified within
the memory budget, the same model as from the dense array; bad sparse input a clear error."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone, is_classifier
from sklearn.datasets import make_classification

from hsskern import (FPCClassifier, FPCClassifierCV, GPOptions, HSSSVC, HSSSVCCV, HSSSVCOptions,
                     NystromSVC, NystromSVCCV, RidgeOptions, SparseCholeskySVC)
from hsskern.estimators.gaussian_process import HSSGaussianProcessRegressor
from hsskern.estimators.kernel_ridge import HSSKernelRidge, HSSKernelRidgeCV
from hsskern.exceptions import MemoryBudgetError
from hsskern.lowrank.nystrom import NystromFeatures

ESTIMATORS = [
    HSSSVC(options=HSSSVCOptions(approximation="exact"), h=1.0),
    HSSSVC(h=1.0, options=HSSSVCOptions(leaf_size=32), random_state=0, class_weight="balanced"),
    HSSSVCCV(options=HSSSVCOptions(approximation="exact"), Cs=[0.1, 1.0], cv=3, random_state=0),
    NystromSVC(h=1.0, n_components=30, random_state=0),
    NystromSVCCV(h=1.0, n_components=30, Cs=[0.1, 1.0], cv=3, random_state=0),
    SparseCholeskySVC(sigma=1.5, random_state=0),  # LIBLINEAR's order seeded
    FPCClassifier(degree=2),
    FPCClassifierCV(degrees=[1, 2], cv=3, random_state=0),
    HSSKernelRidge(options=RidgeOptions(approximation="exact"), h=1.0),
    HSSKernelRidgeCV(options=RidgeOptions(approximation="exact"), h=1.0, alphas=[0.1, 1.0], cv=3),
    HSSGaussianProcessRegressor(options=GPOptions(approximation="exact"), h=1.0, optimizer=None),
    NystromFeatures(n_components=20, random_state=0),
]


def _ids(ests):
    return [type(e).__name__ for e in ests]


def _sparse_data(n=150, seed=0):
    # mostly zeros, as sparse input is: half the entries dropped
    X, y = make_classification(n, 6, n_informative=4, n_redundant=0, random_state=seed)
    rng = np.random.default_rng(seed)
    X[rng.random(X.shape) < 0.5] = 0.0
    return X, y


def _outputs(est, Z):
    if hasattr(est, "decision_function"):
        return est.decision_function(Z), est.predict(Z)
    if hasattr(est, "predict"):
        return (est.predict(Z),)
    return (est.transform(Z),)


def _fit(est, X, y):
    return est.fit(X, y if (is_classifier(est) or hasattr(est, "predict")) else None)


@pytest.mark.parametrize("est", ESTIMATORS, ids=_ids(ESTIMATORS))
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input_gives_the_dense_model(est, fmt):
    X, y = _sparse_data()
    if not is_classifier(est):
        y = y + X[:, 0]  # a real-valued target for the regressors
    Xs = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
    dense = _fit(clone(est), X, y)
    sparse = _fit(clone(est), Xs, y)
    Xt = X[:40]
    for a, b, c in zip(_outputs(dense, Xt), _outputs(sparse, Xt),
                       _outputs(sparse, sp.csc_matrix(Xt) if fmt == "csr" else sp.csr_matrix(Xt))):
        # densified input is the same array: the same model, to rounding
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-12)
    assert dense.n_features_in_ == sparse.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_sparse_values_are_a_clear_error(bad):
    X, y = _sparse_data()
    Xs = sp.csr_matrix(X)
    Xs.data[3] = bad
    for est in (HSSSVC(options=HSSSVCOptions(approximation="exact")),
                NystromSVC(h=1.0, n_components=10), FPCClassifier(),
                HSSKernelRidge(options=RidgeOptions(approximation="exact"))):
        with pytest.raises(ValueError, match="NaN|infinity"):
            est.fit(Xs, y)
    m = HSSSVC(options=HSSSVCOptions(approximation="exact")).fit(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        m.predict(Xs)


def test_sparse_input_of_the_wrong_width_is_a_clear_error():
    X, y = _sparse_data()
    m = NystromSVC(h=1.0, n_components=10, random_state=0).fit(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="6 features"):
        m.decision_function(sp.csr_matrix(np.ones((3, 5))))
    with pytest.raises(ValueError, match="inconsistent numbers of samples|samples"):
        HSSSVC(options=HSSSVCOptions(approximation="exact")).fit(sp.csr_matrix(X), y[:-1])


def test_densifying_beyond_the_budget_is_refused_with_the_estimate():
    X, y = _sparse_data()
    Xs = sp.csr_matrix(X)
    need = 8 * X.shape[0] * X.shape[1]  # 7,200 bytes: the dense copy
    # HSSSVC's ADMM route compresses dense coordinates (its default start at this n, the exact
    # decomposition, takes the sparse rows instead: tests/test_sparse_rows.py)
    for est in (HSSSVC(
        options=HSSSVCOptions(start="admm"),
        memory_budget=need - 1), NystromSVC(h=1.0, memory_budget=need - 1),
                FPCClassifier(memory_budget=need - 1),
                HSSKernelRidge(memory_budget=need - 1)):
        with pytest.raises(MemoryBudgetError, match=r"densifying the sparse input \(150 x 6.*"
                                                    r"about 7\.0 KB"):
            est.fit(Xs, y)
    # a dense array of the same size is not a densification: it is not refused for that
    with pytest.raises(MemoryBudgetError) as info:
        HSSSVC(memory_budget=need - 1).fit(X, y)
    assert "densifying" not in str(info.value)


def test_other_sparse_formats_are_converted():
    X, y = _sparse_data()
    a = HSSSVC(options=HSSSVCOptions(approximation="exact")).fit(X, y).decision_function(X)
    for Z in (sp.coo_matrix(X), sp.lil_matrix(X), sp.csr_array(X)):
        np.testing.assert_array_equal(HSSSVC(options=HSSSVCOptions(approximation="exact")).fit(Z, y)
                                      .decision_function(Z), a)
