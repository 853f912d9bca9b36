"""Every public estimator with ``max_iter``: a fit that stops there raises scikit-learn's
``ConvergenceWarning`` (and says so in ``fit_status_`` where it has one), as scikit-learn's
SVC, NuSVC, NuSVR and OneClassSVM do."""
import inspect
import warnings

import numpy as np
from sklearn.kernel_ridge import KernelRidge
import pytest
from sklearn.base import is_classifier, is_regressor
from sklearn.exceptions import ConvergenceWarning

import hsskern
from hsskern import RidgeOptions

# the keywords that leave each solver short of its tolerance at max_iter=1: kernel ridge's
# direct solve has no
# iterations (conjugate gradients do, preconditioned by a loose compression: a tight one
# solves the system at once)
STOPS_SHORT = {
    # max_iter is scikit-learn's: the SMO engine's pair steps (the ADMM's cap is
    # options.admm_max_iter), which these small fits take
    "SVC": {}, "SVR": {}, "HSSSVC": {}, "HSSSVR": {},
    "NystromSVC": {}, "SparseCholeskySVC": {}, "FPCClassifier": {},
    "NuSVC": {}, "NuSVR": {}, "OneClassSVM": {},
}
# a search warns from its folds' fits: one candidate, two folds
SEARCHES = {"SVCCV": {"Cs": [1.0]}, "HSSSVCCV": {"Cs": [1.0]}, "HSSSVRCV": {"Cs": [1.0]},
            "NystromSVCCV": {"Cs": [1.0]}, "FPCClassifierCV": {"degrees": [2]}}


def _with_max_iter():
    names = []
    for name in hsskern.__all__:
        obj = getattr(hsskern, name)
        if (inspect.isclass(obj) and hasattr(obj, "fit")
                and "max_iter" in inspect.signature(obj).parameters):
            names.append(name)
    return names


#: kernel ridge's exact solver never returns a fit stopped at max_iter (issue 59): CG stopped
#: short hands over to the dense solve where that is open, and is refused where it is not
FALLS_BACK = {"HSSKernelRidge": {"solver": "exact", "alpha": 1e-3, "gamma": 0.5},
              "HSSKernelRidgeCV": {"solver": "exact", "alphas": [1e-3], "cv": 2}}


def test_every_estimator_with_max_iter_has_a_case():
    # a new estimator with max_iter must say here how it stops short
    assert set(_with_max_iter()) == set(STOPS_SHORT) | set(SEARCHES) | set(FALLS_BACK)


@pytest.mark.parametrize("name", sorted(FALLS_BACK))
def test_kernel_ridge_at_max_iter_is_solved_densely_or_refused(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.sin(X).sum(axis=1)
    loose = dict(leaf_size=16, rel_tol=0.1)
    est = getattr(hsskern, name)(max_iter=1, options=RidgeOptions(**loose), **FALLS_BACK[name])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        fitted = est.fit(X, y)
    if name == "HSSKernelRidge":  # the dense answer is KernelRidge's
        ref = KernelRidge(alpha=1e-3, kernel="rbf", gamma=0.5).fit(X, y)
        np.testing.assert_allclose(fitted.predict(X), ref.predict(X), atol=1e-6)
    closed = getattr(hsskern, name)(max_iter=1, options=RidgeOptions(**loose, dense_max_n=0),
                                    **FALLS_BACK[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match="max_iter"):
            closed.fit(X, y)


def _kwargs(name):
    if name in SEARCHES:
        base = name[:-2]
        kw = {k: v for k, v in STOPS_SHORT[base].items() if k not in ("alpha", "C")}
        kw.update(SEARCHES[name])
        kw.setdefault("cv", 2)
        return kw
    return STOPS_SHORT[name]


@pytest.mark.parametrize("name", sorted(STOPS_SHORT) + sorted(SEARCHES))
def test_reaching_max_iter_raises_a_convergence_warning(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    est = getattr(hsskern, name)(max_iter=1, **_kwargs(name))
    if is_classifier(est):
        y = (X[:, 0] + 0.5 * rng.normal(size=120) > 0).astype(int)
    elif is_regressor(est):
        y = np.sin(X).sum(axis=1)
    else:
        y = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e.g. a search's unscored folds
        with pytest.warns(ConvergenceWarning):
            fitted = est.fit(X, y)
    if hasattr(fitted, "fit_status_"):
        assert fitted.fit_status_ == 1


@pytest.mark.parametrize("name", ["NuSVC", "NuSVR", "OneClassSVM"])
def test_a_converged_fit_does_not_warn(name):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 2))
    y = (X[:, 0] > 0).astype(int) if name == "NuSVC" else X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = getattr(hsskern, name)().fit(X, y)
    assert est.fit_status_ == 0
