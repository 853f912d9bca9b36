"""One source of defaults: the estimators' expert knobs in one frozen options object, reached
by nested names (``options__max_rank``) through get_params / set_params / GridSearchCV."""
import dataclasses
import inspect
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

import hsskern
from hsskern import HSSOptions, HSSSVC, HSSSVCCV, HSSSVCOptions
from hsskern.options import ADMMOptions, CompressionOptions, ExactSolveOptions, OptionsBase

SVC_PARAMS = set(inspect.signature(SVC).parameters)
# hsskern's extras beyond SVC's 15 (issue 60: memory_budget, options, warm_start; HSSSVC's
# width h)
EXTRA = {"h", "memory_budget", "options", "warm_start"}


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (np.hypot(*X.T) < 1.1).astype(int)


def _params(cls):
    return list(inspect.signature(cls).parameters)


#: GridSearchCV's own parameters, which a search adds to its estimator's (the grid as Cs)
SEARCH = {"Cs", "param_grid", "scoring", "cv", "refit", "n_jobs"}


@pytest.mark.parametrize("cls", [HSSSVC, HSSSVCCV])
def test_at_most_svc_parameters_plus_three(cls):
    names = _params(cls)
    search = SEARCH if cls is HSSSVCCV else set()
    assert set(names) <= SVC_PARAMS | EXTRA | search, set(names) - SVC_PARAMS - EXTRA
    assert len(names) <= len(SVC_PARAMS) + len(EXTRA) + len(search), names
    assert len(SVC_PARAMS) == 15
    assert not any(p.kind is p.VAR_KEYWORD for p in inspect.signature(cls).parameters.values())


def test_hssvc_is_svc_names_in_svc_order_then_the_three():
    names = _params(HSSSVC)
    shared = [n for n in inspect.signature(SVC).parameters if n in names]
    assert names[:len(shared)] == shared  # SVC's, in SVC's order, first
    assert set(names) - SVC_PARAMS == EXTRA
    # keyword-only, as SVC's
    assert all(p.kind is p.KEYWORD_ONLY for p in inspect.signature(HSSSVC).parameters.values())


@pytest.mark.parametrize("options", [None, HSSSVCOptions(max_rank=77, start="admm")])
def test_deep_params_expose_every_option_field(options):
    est = HSSSVC(options=options)
    deep = est.get_params(deep=True)
    effective = options or HSSSVCOptions()
    for f in HSSSVCOptions.field_names():
        assert deep[f"options__{f}"] == getattr(effective, f)
    assert est.get_params(deep=False)["options"] is options
    assert not any("__" in k for k in est.get_params(deep=False))


def test_set_params_nested_replaces_and_never_mutates():
    first = HSSSVCOptions(max_rank=300)
    est = HSSSVC(options=first)
    assert est.set_params(options__max_rank=100, C=3.0) is est
    assert est.options.max_rank == 100 and est.C == 3.0
    assert first.max_rank == 300  # the old object is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.max_rank = 5
    # from the defaults, and a new object with its fields in one call
    est = HSSSVC().set_params(options__solve_exact=False)
    assert est.options == HSSSVCOptions(solve_exact=False)
    est.set_params(options=HSSSVCOptions(leaf_size=64), options__rel_tol=1e-4)
    assert est.options == HSSSVCOptions(leaf_size=64, rel_tol=1e-4)
    with pytest.raises(ValueError, match="options__no_such"):
        HSSSVC().set_params(options__no_such=1)
    with pytest.raises(ValueError, match="relaxation"):
        HSSSVC().set_params(options__relaxation=2.5)


def test_clone_and_pickle_keep_the_options():
    est = HSSSVC(C=2.0, options=HSSSVCOptions(max_rank=123, solve_exact=False))
    for copy in (clone(est), pickle.loads(pickle.dumps(est))):
        assert copy.options == est.options
        assert copy.get_params() == est.get_params()
    assert clone(est).options is est.options  # immutable: shared, as scikit-learn allows


def test_gridsearch_over_a_nested_name():
    X, y = _data()
    base = HSSSVC(h=1.0, random_state=0,
                  options=HSSSVCOptions(start="admm", leaf_size=32, solve_exact=False))
    search = GridSearchCV(base, {"options__max_rank": [2, 40]}, cv=2).fit(X, y)
    assert [p["options__max_rank"] for p in search.cv_results_["params"]] == [2, 40]
    best = search.best_estimator_
    assert best.options.max_rank == search.best_params_["options__max_rank"]
    assert best.options.leaf_size == 32 and best.options.start == "admm"
    assert best.hss_["max_rank"] <= best.options.max_rank


def test_hsssvccv_param_grid_takes_a_nested_name():
    X, y = _data()
    cv = HSSSVCCV(h=1.0, random_state=0, cv=2,
                  options=HSSSVCOptions(start="admm", leaf_size=32, solve_exact=False),
                  param_grid={"options__max_rank": [2, 40], "C": [1.0]}).fit(X, y)
    assert [p["options__max_rank"] for p in cv.cv_results_["params"]] == [2, 40]
    assert cv.best_estimator_.options.max_rank == cv.best_params_["options__max_rank"]


def test_one_set_of_defaults():
    comp = CompressionOptions()
    # HSSOptions is the compression group plus seed and verbosity: the same defaults
    assert HSSOptions().hss_options() == HSSOptions()
    for f in CompressionOptions.field_names():
        assert getattr(HSSOptions(), f) == getattr(comp, f) == getattr(HSSSVCOptions(), f)
    for group in (ADMMOptions, ExactSolveOptions):
        for f in group.field_names():
            assert getattr(HSSSVCOptions(), f) == getattr(group(), f)
    # the estimators' behaviour before the options object: 1e-3 / 1e-5 / 500 / 128 / 64
    assert (comp.rel_tol, comp.abs_tol, comp.max_rank, comp.leaf_size, comp.n_neighbors) == (
        1e-3, 1e-5, 500, 128, 64)
    o = HSSSVCOptions()
    assert (o.approximation, o.start, o.beta, o.relaxation, o.adaptive_beta, o.solve_exact,
            o.max_chunk, o.multiclass) == ("hss", "auto", None, 1.6, True, "auto", 16000,
                                           "ovo")


def test_options_are_validated_when_built():
    for bad, match in [(dict(rel_tol=-1.0), "rel_tol"), (dict(rel_tol=0.0, abs_tol=0.0), "both"),
                       (dict(max_rank=0), "max_rank"), (dict(start="zero"), "start"),
                       (dict(approximation="dense"), "approximation"),
                       (dict(relaxation=2.0), "relaxation"), (dict(beta=0.0), "beta"),
                       (dict(solve_exact="sometimes"), "solve_exact"), (dict(multiclass="all"), "multiclass"),
                       (dict(max_chunk=1), "max_chunk")]:
        with pytest.raises((ValueError, TypeError), match=match):
            HSSSVCOptions(**bad)
    with pytest.raises(ValueError, match="no field 'nope'"):
        HSSSVCOptions().replace(nope=1)
    X, y = _data()
    with pytest.raises((ValueError, TypeError), match="options"):
        HSSSVC(options=HSSOptions()).fit(X, y)  # the wrong options type


def test_options_classes_are_public():
    assert "HSSSVCOptions" in hsskern.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repr(HSSSVC(options=HSSSVCOptions(max_rank=5)))
    assert repr(HSSSVCOptions(max_rank=5)) == "HSSSVCOptions(max_rank=5)"


def _regression_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.sin(X).sum(axis=1)


# one case per estimator with an options object: its flat parameters, knobs of its options
# class, and data it fits in a second
CASES = {
    "HSSSVR": (hsskern.HSSSVR, dict(h=1.0, C=3.0),
               dict(approximation="exact", max_chunk=50, beta=5.0), _regression_data),
    "HSSSVRCV": (hsskern.HSSSVRCV, dict(h=1.0, Cs=[1.0, 3.0], random_state=0),
                 dict(approximation="exact", solve_exact="auto"), _regression_data),
    "ExactSVC": (hsskern.ExactSVC, dict(h=1.0, C=3.0, random_state=0),
                 dict(subsample=60, validation_fraction=0.1, max_chunk=40, leaf_size=32),
                 _data),
    "HSSKernelRidge": (hsskern.HSSKernelRidge, dict(alpha=0.1, h=1.0, random_state=0),
                       dict(rel_tol=1e-4, leaf_size=32, max_rank=50), _regression_data),
    "HSSKernelRidgeCV": (hsskern.HSSKernelRidgeCV, dict(h=[0.5, 1.0], random_state=0),
                         dict(approximation="nystrom", n_components=30), _regression_data),
    "HSSGaussianProcessRegressor": (hsskern.HSSGaussianProcessRegressor,
                                    dict(h_bounds=(0.1, 10.0), tol=0.1, random_state=0),
                                    dict(approximation="exact"), _regression_data),
    "NystromSVC": (hsskern.NystromSVC, dict(gamma=1.0, n_components=30, random_state=0),
                   dict(landmarks="uniform", eig_cutoff=1e-8, intercept_scaling=2.0,
                        newton_solver="cg"), _data),
    "NystromSVCCV": (hsskern.NystromSVCCV, dict(gamma=1.0, n_components=30, Cs=[1.0, 10.0],
                                                random_state=0),
                     dict(landmarks="kmeans++", kmeans_iter=3), _data),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_estimators_deep_params_reach_its_options(name):
    cls = CASES[name][0]
    est = cls()
    deep = est.get_params(deep=True)
    defaults = cls._options_class()
    groups = {g: type(getattr(defaults, g)) for g in defaults.field_names()
              if isinstance(getattr(defaults, g), OptionsBase)}  # nested: decomposition, smo
    assert {k for k in deep if k.startswith("options__")} == {
        f"options__{f}" for f in cls._options_class.field_names()} | {
        f"options__{g}__{f}" for g, group in groups.items() for f in group.field_names()}
    field = cls._options_class.field_names()[-1]
    value = getattr(cls._options_class(), field)
    est.set_params(**{f"options__{field}": value})
    assert est.options == cls._options_class()
    assert clone(est).get_params() == est.get_params()




def test_the_engines_groups_reach_the_engine_through_set_params_and_gridsearchcv():
    """options__decomposition__<field> and options__engine, set by set_params or searched by
    GridSearchCV, are what the exact engine runs with: the working sets stay within the
    nested max_ws, the route is the engine asked for, and the SVM is SVC's either way."""
    X, y = _data()
    ref = SVC(C=1.0, gamma=0.5).fit(X, y)
    base = HSSSVC(h=1.0, options=HSSSVCOptions(start="decomposition", engine="block"))
    small = clone(base).set_params(options__decomposition__max_ws=8, options__max_chunk=8,
                                   options__decomposition__ws_per_change=0).fit(X, y)
    rr = small.admm_["exact"][0]
    assert small.route_ == "block decomposition" and max(rr.ws_sizes) <= 8 and rr.converged
    cached = clone(base).set_params(options__engine="cached").fit(X, y)
    assert cached.route_ == "cached SMO"
    for m in (small, cached):
        np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X),
                                   atol=5e-3)
    search = GridSearchCV(base, {"options__decomposition__max_ws": [8, 64],
                                 "options__max_chunk": [64]}, cv=2).fit(X, y)
    assert sorted(search.cv_results_["param_options__decomposition__max_ws"]) == [8, 64]
    assert search.best_estimator_.options.decomposition.max_ws in (8, 64)
    assert search.best_estimator_.options.engine == "block"
