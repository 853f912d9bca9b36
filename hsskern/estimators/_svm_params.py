"""scikit-learn's LIBSVM parameters, as every SVM estimator here takes them.

``shrinking``, ``cache_size`` (MB), ``max_iter`` (-1: no limit), ``break_ties`` and the
``probability`` that scikit-learn 1.9 deprecated: their constraints, their meaning for the
row-cached SMO engine (:class:`~hsskern.solvers.engines.cached_smo.SMOOptions`), and the one
deprecation warning, worded and scheduled as scikit-learn's.
"""
import warnings
from numbers import Integral, Real

from sklearn.utils._param_validation import Hidden, Interval, Options, StrOptions

from ..solvers.engines.cached_smo import SMOOptions, bounded_options, engine_memory
from ..utils._memory import check_memory, resolve_budget

__all__ = ["LIBSVM_CONSTRAINTS", "PROBABILITY_CONSTRAINT", "smo_options", "engine_options",
           "smo_max_iter",
           "probability_on", "warn_probability", "check_break_ties", "deprecated_sigmoid"]

#: scikit-learn's ``probability``: a bool, or the hidden default "deprecated" (off)
PROBABILITY_CONSTRAINT = ["boolean", Hidden(StrOptions({"deprecated"}))]

#: the LIBSVM knobs of scikit-learn's SVC, with its validation
LIBSVM_CONSTRAINTS = {
    "shrinking": ["boolean"],
    "cache_size": [Interval(Real, 0, None, closed="neither")],
    # -1: no limit (LIBSVM's); a cap of 0 steps would leave alpha = 0 unexamined
    "max_iter": [Options(Integral, {-1}), Interval(Integral, 1, None, closed="left")],
    "break_ties": ["boolean"],
}


def route_seed(random_state):
    """The seed of a fit's own draws (the HSS compression, a staged fit's subsample):
    ``random_state``, or a fixed one for None. scikit-learn's SVC fits the same model every
    time (its ``random_state`` seeds only the probability folds); these draws choose the
    route to the answer, not the answer (LIBSVM's to ``tol`` on every route), so a fit at
    the defaults reproduces too. The probability folds keep ``random_state`` as given."""
    return 0 if random_state is None else random_state


def smo_max_iter(max_iter):
    """scikit-learn's ``max_iter`` as the engine's: None (its own cap, LIBSVM's
    max(10^7, 100 l)) for -1."""
    return None if max_iter is None or max_iter == -1 else int(max_iter)


def smo_options(est, tol):
    """The SMO engine's options of an estimator with scikit-learn's LIBSVM parameters:
    ``cache_size`` MB of kernel rows, ``shrinking``, ``max_iter`` pair steps and ``tol``
    (the engine bounds the cache further by the memory budget), over the other fields of its
    options' ``smo`` group where it has one."""
    # an estimator with an options object (OptionsParamsMixin) may carry an smo group
    options = est._options() if getattr(est, "_options_class", None) is not None else None
    base = getattr(options, "smo", None) or SMOOptions()  # the options' other SMO knobs
    return base.replace(cache_bytes=float(est.cache_size) * 2 ** 20,
                        shrinking=bool(est.shrinking), max_iter=smo_max_iter(est.max_iter),
                        tol=float(tol))


def engine_options(est, n, d, l=None):
    """The single-fit engine's options for ``est`` on n points of d features and l variables
    (default n), its row cache within ``memory_budget``; a MemoryBudgetError first where the
    points, the engine's vectors and two rows do not fit (before any work)."""
    l = n if l is None else l
    need = 8 * n * d + engine_memory(n, d, l) + 16 * l  # points, vectors, two rows
    check_memory(need, f"{type(est).__name__} on {n} points x {d} features",
                 est.memory_budget, hint="raise memory_budget or subsample")
    return bounded_options(smo_options(est, est.tol), n, d, resolve_budget(est.memory_budget))


def probability_on(est):
    """Whether ``est`` fits Platt's sigmoids: ``probability=True`` (its default
    "deprecated", scikit-learn 1.9's, is off)."""
    p = getattr(est, "probability", False)
    return not isinstance(p, str) and bool(p)


def warn_probability(est, name=None):
    """scikit-learn 1.9's FutureWarning for a ``probability`` given at all (its text and
    its schedule: removed in 1.11), with the estimator's own name."""
    if getattr(est, "probability", "deprecated") == "deprecated":
        return
    name = type(est).__name__ if name is None else name
    warnings.warn(f"The `probability` parameter was deprecated in 1.9 and will be removed in "
                  f"version 1.11. Use `CalibratedClassifierCV({name}(), ensemble=False)` "
                  f"instead of `{name}(probability=True)`", FutureWarning, stacklevel=3)


def check_break_ties(est, n_classes):
    """Whether ``predict`` breaks ties by the decision function (scikit-learn's rule:
    ``break_ties`` with more than two classes and the "ovr" shape); a ValueError with "ovo",
    as scikit-learn's."""
    if not getattr(est, "break_ties", False):
        return False
    if est.decision_function_shape == "ovo":
        raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
    return n_classes > 2


def deprecated_sigmoid(name):
    """scikit-learn 1.9's deprecated ``probA_`` / ``probB_``: the Platt parameters (an empty
    array without ``probability=True``), read with its FutureWarning; set without one."""
    key = "_" + name[:-1]

    def get(self):
        if key not in vars(self):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(f"Attribute `{name}` was deprecated in version 1.9 and will be removed "
                      "in 1.11 as the `probability=True` option for SVC and NuSVC was "
                      "deprecated and will be removed in 1.11.", FutureWarning, stacklevel=2)
        return vars(self)[key]

    def set(self, value):
        vars(self)[key] = value

    return property(get, set, doc=f"Platt's {name[-2]} per binary model (deprecated, as "
                                  "scikit-learn 1.9's).")
