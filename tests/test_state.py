"""Fitted state: what the ``*CV`` refit carries (feature names), and ``fit_path`` leaving the
estimator as it was (issue 43, parts 2 and 3)."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_regressor
from sklearn.datasets import make_classification

from hsskern import (ExactSVC, ExactSVCOptions, FPCClassifierCV, HSSKernelRidge, HSSKernelRidgeCV,
                     HSSSVC, HSSSVCCV, HSSSVCOptions, HSSSVR, HSSSVRCV, HSSSVROptions, NystromSVC,
                     NystromSVCCV, SparseCholeskySVC)

pd = pytest.importorskip("pandas")

COLUMNS = ["a", "b", "c"]


def _frame(n=160, seed=0, regression=False):
    X, y = make_classification(n, 3, n_informative=3, n_redundant=0, random_state=seed)
    if regression:
        y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    return pd.DataFrame(X, columns=COLUMNS), y


SEARCHES = [
    HSSSVCCV(h=[1.0, 2.0], Cs=[0.1, 1.0], cv=2, random_state=0, probability=True),
    NystromSVCCV(gamma=1.0, Cs=[0.1, 1.0], n_components=30, cv=2, random_state=0),
    FPCClassifierCV(degrees=[1, 2], cv=2, random_state=0),
    HSSKernelRidgeCV(h=[1.0, 2.0], alphas=[0.01, 0.1], cv=2, random_state=0),
    HSSKernelRidgeCV(h=[1.0, 2.0], alphas=[0.01, 0.1], cv=None, random_state=0),
    HSSSVRCV(h=1.0, Cs=[0.1, 1.0], cv=2, random_state=0),
]
SEARCH_IDS = [type(e).__name__ + ("-loo" if getattr(e, "cv", 1) is None else "")
              for e in SEARCHES]


def _methods(est):
    names = ["predict", "score"]
    names += [m for m in ("decision_function", "predict_proba", "predict_log_proba")
              if hasattr(est, m)]
    return names


def _call(est, name, X, y):
    return getattr(est, name)(X, y) if name == "score" else getattr(est, name)(X)


@pytest.mark.parametrize("est", SEARCHES, ids=SEARCH_IDS)
def test_search_fitted_on_a_frame_checks_its_column_names(est):
    """Issue 43, part 2: a ``*CV`` fitted on a DataFrame refitted on the validated array, so
    its best estimator had no feature names and scored reordered columns silently. It must
    raise as scikit-learn does, on every prediction method, and on the same frame predict as
    the search fitted on the bare array does."""
    df, y = _frame(regression=is_regressor(est))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence on a tiny grid is not the point
        on_frame = clone(est).fit(df, y)
        on_array = clone(est).fit(df.to_numpy(), y)
    np.testing.assert_array_equal(on_frame.feature_names_in_, COLUMNS)
    np.testing.assert_array_equal(on_frame.best_estimator_.feature_names_in_, COLUMNS)
    assert not hasattr(on_array.best_estimator_, "feature_names_in_")
    reordered = df[["b", "a", "c"]]
    renamed = df.rename(columns={"c": "z"})
    for name in _methods(on_frame):
        for bad in (reordered, renamed):
            with pytest.raises(ValueError, match="feature names should match"):
                _call(on_frame, name, bad, y)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "fitted without feature names" warning
            got = _call(on_frame, name, df, y)
        np.testing.assert_array_equal(got, _call(on_array, name, df.to_numpy(), y),
                                      err_msg=name)


# ---------------------------------------------------------------- fit_path leaves self alone
def _with_path():
    """Every public estimator that has ``fit_path`` (a few variants of the routes), fast."""
    import hsskern
    found = []
    for name in hsskern.__all__:
        cls = getattr(hsskern, name)
        if isinstance(cls, type) and hasattr(cls, "get_params") and hasattr(cls(), "fit_path"):
            found.append(cls)
    assert {c.__name__ for c in found} >= {"HSSSVC", "ExactSVC", "NystromSVC",
                                           "SparseCholeskySVC", "HSSKernelRidge", "HSSSVR"}
    fast = {HSSSVC: dict(h=1.0, options=HSSSVCOptions(leaf_size=32), random_state=0),
            ExactSVC: dict(h=1.0, options=ExactSVCOptions(subsample=60), random_state=0),
            NystromSVC: dict(gamma=1.0, n_components=30, random_state=0),
            SparseCholeskySVC: dict(sigma=1.5, random_state=0),
            HSSKernelRidge: dict(h=1.0, random_state=0),
            HSSSVR: dict(h=1.0, options=HSSSVROptions(leaf_size=32), random_state=0)}
    ests = [cls(**fast.get(cls, {})) for cls in found]
    ests += [HSSSVC(h=1.0, options=HSSSVCOptions(approximation="exact"), random_state=0),
             HSSSVC(h=1.0, probability=True, class_weight="balanced", random_state=0),
             HSSKernelRidge(h=1.0, solver="exact", random_state=0)]
    return ests


WITH_PATH = _with_path()
PATH_IDS = [type(e).__name__ + ("-exact" if getattr(getattr(e, "options", None) or e,
                                                   "approximation", "") == "exact"
                                 or getattr(e, "solver", "") == "exact" else "")
            + ("-probability" if getattr(e, "probability", False) else "") for e in WITH_PATH]


def _param(est):
    """The parameter a path varies: nu for the nu-machines, alpha for kernel ridge, else C."""
    params = est.get_params()
    return "nu" if "nu" in params else "alpha" if "alpha" in params else "C"


#: a two-value path of each parameter (nu lives in (0, 1])
PATH_GRID = {"C": [10.0, 0.1], "alpha": [10.0, 0.1], "nu": [0.6, 0.2]}


def _path_data(est, seed, n_features):
    X, y = make_classification(120, n_features, n_informative=n_features, n_redundant=0,
                               n_classes=2 if seed else 3, n_clusters_per_class=1,
                               random_state=seed)
    if is_regressor(est):
        y = np.sin(X[:, 0]) + 0.3 * X[:, -1]
    return X, y


def _snapshot(est):
    import pickle
    return dict(vars(est)), pickle.dumps(est), est.get_params()


def _assert_unchanged(est, snap):
    import pickle
    attrs, blob, params = snap
    assert vars(est).keys() == attrs.keys()
    changed = [k for k in attrs if vars(est)[k] is not attrs[k]]
    assert not changed, f"fit_path replaced {changed}"
    assert pickle.dumps(est) == blob, "fit_path changed the fitted state in place"
    assert est.get_params() == params


@pytest.mark.parametrize("est", WITH_PATH, ids=PATH_IDS)
@pytest.mark.parametrize("fitted", [False, True], ids=["unfitted", "fitted"])
def test_fit_path_leaves_the_estimator_as_it_was(est, fitted):
    """Issue 43, part 3: ``fit_path`` left ``self`` fitted as the last C (alpha) while
    ``get_params()`` kept the old one. It returns its models and leaves ``self`` exactly as it
    was, here after a path on other data (other labels, another feature count): unfitted
    stays unfitted, fitted keeps the same attribute objects, bytes and predictions."""
    est = clone(est)
    X, y = _path_data(est, seed=0, n_features=3)
    XB, yB = _path_data(est, seed=1, n_features=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence on these small sets is not the point
        if fitted:
            est.fit(X, y)
            before = est.predict(X)
        snap = _snapshot(est)
        models = est.fit_path(XB, yB, PATH_GRID[_param(est)])
    _assert_unchanged(est, snap)
    if fitted:
        np.testing.assert_array_equal(est.predict(X), before)
    else:
        assert not [k for k in vars(est) if k.endswith("_") or k == "_model"]
    name = _param(est)
    assert [getattr(m, name) for m in models] == sorted(PATH_GRID[name])
    for m in models:
        assert m.get_params() == {**est.get_params(), name: getattr(m, name)}
        assert m.n_features_in_ == 4 and m.predict(XB).shape == yB.shape


# ---------------------------------------------------------------- grids: one checker
BAD_GRIDS = {"string": "abc", "digit string": "1", "strings": ["1", "2"],
             "string array": np.array(["1.0"]), "None": [None], "bool": [True, 2.0],
             "dict": {"a": 1.0}, "generator of strings": lambda: (s for s in "ab"),
             "complex": [1j], "nested": [[1.0, 2.0]], "empty": []}


@pytest.mark.parametrize("what", list(BAD_GRIDS))
@pytest.mark.parametrize("est", WITH_PATH, ids=PATH_IDS)
def test_fit_path_refuses_a_non_numeric_grid_saying_what_to_pass(est, what):
    """Issue 43, part 7: a string (or other non-numeric) grid must be refused by the one
    grid checker, naming the parameter and saying what to pass, never numpy's own message
    and never read as numbers ("1" as 1.0, None as NaN)."""
    est = clone(est)
    X, y = _path_data(est, seed=1, n_features=3)
    name = {"alpha": "alphas", "nu": "nus", "C": "Cs"}[_param(est)]
    bad = BAD_GRIDS[what]() if callable(BAD_GRIDS[what]) else BAD_GRIDS[what]
    with pytest.raises(ValueError, match=name) as err:
        est.fit_path(X, y, bad)
    msg = str(err.value)
    assert "such as [0.1, 1.0, 10.0]" in msg, msg
    assert "could not convert" not in msg and "float()" not in msg, msg
    assert not hasattr(est, "n_features_in_")


@pytest.mark.parametrize("search,name", [
    (HSSSVCCV(h=1.0), "Cs"), (NystromSVCCV(gamma=1.0), "Cs"), (HSSSVRCV(h=1.0), "Cs"),
    (HSSKernelRidgeCV(h=1.0), "alphas")], ids=["HSSSVCCV", "NystromSVCCV", "HSSSVRCV",
                                               "HSSKernelRidgeCV"])
def test_search_grids_use_the_same_checker(search, name):
    X, y = _path_data(search, seed=1, n_features=3)
    for bad in (["1", "2"], [None], [True, 2.0], [0.1, -1.0]):
        with pytest.raises(ValueError, match=name) as err:
            clone(search).set_params(**{name: bad}).fit(X, y)
        assert "could not convert" not in str(err.value)


def test_grid_count_is_a_logspace():
    from hsskern.solvers.paths.path import check_Cs
    np.testing.assert_array_equal(check_Cs(4, count=(-2, 3)), np.logspace(-2, 3, 4))
    np.testing.assert_array_equal(check_Cs((c for c in (3.0, 1.0))), [1.0, 3.0])
    with pytest.raises(ValueError, match="Cs must be an int >= 1"):
        check_Cs(0, count=(-2, 3))
    with pytest.raises(ValueError, match="use np.logspace"):
        check_Cs(4)
