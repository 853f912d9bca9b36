"""The kernel width spellings every estimator takes, and the flat HSS parameters every HSS
estimator shares (classifier and regressors): the width in either spelling, the compression
options, and the width grid of a ``*CV``. (Formerly ``estimators/hss_params.py``.)

The kernel spellings of scikit-learn's SVC resolve here, once: ``kernel="rbf"`` is the
Gaussian, and ``gamma`` may be a float, ``"scale"`` (``1 / (n_features * X.var())``, 1 when
X is constant) or ``"auto"`` (``1 / n_features``), computed on the training X. hsskern's
Gaussian is ``exp(-|x - y|^2 / (2 h^2))`` and SVC's rbf ``exp(-gamma |x - y|^2)``, so
``gamma = 1 / (2 h^2)``. Precedence: ``gamma=None`` uses ``h`` (1 when that is None too);
both given is a ValueError.
"""
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from ..kernels import make_kernel
from ..kernels.callable import lookup_gram, precomputed_points
from ..options import CompressionOptions, HSSOptions
from ..solvers.paths.plan import RouteOptions, plan_start

__all__ = ["HSS_FIELDS", "HSS_CONSTRAINTS", "WIDTH_CONSTRAINTS",
           "WIDTH_GRID_CONSTRAINTS", "SVC_KERNEL_CONSTRAINTS", "DOT_SPELLINGS",
           "SVCKernelsMixin", "exact_only", "GAMMA_STRINGS", "kernel_name", "resolve_gamma", "compact_sigma",
           "width_name", "kernel_of", "starts_from_zero", "hss_options", "options_of",
           "width_grid"]

HSS_FIELDS = ("rel_tol", "abs_tol", "max_rank", "leaf_size", "n_neighbors")

#: The parameter constraints every HSS estimator shares (kernel, compression, memory, logs).
HSS_CONSTRAINTS = {
    "kernel": [StrOptions({"gaussian", "laplacian"})],
    "rel_tol": [Interval(Real, 0, None, closed="left")],
    "abs_tol": [Interval(Real, 0, None, closed="left")],
    "max_rank": [Interval(Integral, 1, None, closed="left")],
    "leaf_size": [Interval(Integral, 2, None, closed="left")],
    "n_neighbors": [Interval(Integral, 0, None, closed="left")],
    "approximation": [StrOptions({"hss", "exact"})],
    "memory_budget": [Interval(Real, 0, None, closed="neither"), None],
    "verbose": ["verbose"],
    "random_state": ["random_state"],
}

#: SVC's data-dependent gamma spellings
GAMMA_STRINGS = ("scale", "auto")

_POSITIVE = Interval(Real, 0, None, closed="neither")

#: kernel and width of a single-model estimator (SVC's "rbf" and gamma strings included)
WIDTH_CONSTRAINTS = {
    "kernel": [StrOptions({"gaussian", "rbf", "laplacian"})],
    "h": [_POSITIVE, None],
    "gamma": [_POSITIVE, StrOptions(set(GAMMA_STRINGS)), None],
}

#: the kernels of an SVC-like classifier: the width kernels, and SVC's dot-product kernels on
#: the exact decomposition (with SVC's ``degree`` and ``coef0``)
SVC_KERNEL_CONSTRAINTS = {
    **WIDTH_CONSTRAINTS,
    "kernel": [StrOptions({"gaussian", "rbf", "laplacian", "poly", "linear", "sigmoid",
                           "precomputed"}), callable],
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Interval(Real, None, None, closed="neither")],
}

#: SVC's kernels of x . y: no width, solved by the exact decomposition
DOT_SPELLINGS = ("poly", "linear", "sigmoid")

#: the same for a ``*CV``, whose h or gamma may be a grid
WIDTH_GRID_CONSTRAINTS = {
    "kernel": WIDTH_CONSTRAINTS["kernel"],
    "h": [_POSITIVE, "array-like", None],
    "gamma": [_POSITIVE, StrOptions(set(GAMMA_STRINGS)), "array-like", None],
}


def kernel_name(kernel):
    """hsskern's name of a kernel spelling: "rbf" (scikit-learn's) is the Gaussian."""
    return "gaussian" if kernel == "rbf" else kernel


def resolve_gamma(gamma, X, kernel="gaussian"):
    """gamma as a number: SVC's ``"scale"`` and ``"auto"`` computed on the training X.

    ``"scale"`` is ``1 / (n_features * X.var())`` (1 when X.var() is 0, as SVC) and ``"auto"``
    ``1 / n_features``. They are defined for the Gaussian (SVC's rbf) only: a clear
    ValueError for another kernel. Numbers and None pass through.
    """
    if not isinstance(gamma, str):
        return gamma
    if gamma not in GAMMA_STRINGS:
        raise ValueError(f"gamma must be a positive float, 'scale' or 'auto', got {gamma!r}")
    if kernel_name(kernel) != "gaussian" and kernel not in DOT_SPELLINGS:
        raise ValueError(f"gamma={gamma!r} is SVC's rule for its kernels (rbf, poly, sigmoid); "
                         f"give the {kernel!r} kernel a numeric h or gamma")
    if X is None:
        raise ValueError(f"gamma={gamma!r} is computed from the training data, which was "
                         "not given")
    d = X.shape[1]
    if gamma == "auto":
        return 1.0 / d
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(X):  # SVC's formula for sparse X: every entry, zeros included
            var = float(X.multiply(X).mean() - X.mean() ** 2)
        else:
            var = _variance(X)
    if not np.isfinite(var):  # SVC would divide by inf: a kernel of ones, silently
        raise ValueError("gamma='scale' is 1 / (n_features * X.var()), and X.var() overflows "
                         "float64 on these points: scale X (e.g. StandardScaler) or give a "
                         "numeric gamma")
    return 1.0 / (d * var) if var != 0 else 1.0


def compact_sigma(gamma, power):
    """The compact Gaussian's ``sigma`` for a Gaussian of ``gamma`` (None: None, the
    kernel's own default): the sigma at which k(r) = (1 - r / (3 sigma))_+^power
    exp(-r^2 / (2 sigma^2)) equals the Gaussian exp(-gamma r^2) = e^-2 at r0 = sqrt(2 /
    gamma), the typical distance of two points under ``gamma="scale"`` (E|x - y|^2 =
    2 n_features X.var() = 2 / gamma). Not 1 / sqrt(2 gamma) itself: the compact factor
    decays like exp(-power r / (3 sigma)) and power grows with the dimension, so that sigma
    would leave k(r0) ~ 3^-power, near zero between most points (chance level on raw
    digits). Scale-free, as gamma is; the Gram matrix is then dense on most data (pass a
    smaller sigma for a sparse one)."""
    if gamma is None:
        return None
    # t = r0 / sigma solves g(t) = power log(1 - t/3) - t^2/2 + 2 = 0; g falls from 2 at
    # t = 0 to -inf at t = 3, so bisection on (0, 3) finds the one root
    lo, hi = 0.0, 3.0
    for _ in range(100):
        t = 0.5 * (lo + hi)
        if power * np.log1p(-t / 3.0) - 0.5 * t * t + 2.0 > 0:
            lo = t
        else:
            hi = t
    return float(np.sqrt(2.0 / gamma) / (0.5 * (lo + hi)))


def _variance(X, rows=1 << 14):
    """``np.var(X)`` over every entry, by blocks of rows: numpy's would hold a temporary copy
    of X (a fit past memory must be refused before it allocates one)."""
    n = X.shape[0]
    if n <= rows:
        return float(np.var(X))
    mean = float(np.mean(X))
    total = sum(float(np.square(X[i:i + rows] - mean).sum()) for i in range(0, n, rows))
    return total / X.size


def width_name(est):
    """"h" or "gamma": the spelling of the kernel width the estimator was given. ``h``, when
    given, is the width over SVC's default ``gamma="scale"`` (an estimator without ``h``,
    as :class:`~hsskern.SVC`, has gamma only); ``h`` with another gamma is a ValueError."""
    h = getattr(est, "h", None)
    if h is not None and est.gamma is not None and not (
            isinstance(est.gamma, str) and est.gamma == "scale"):
        raise ValueError("give either h or gamma (gamma = 1 / (2 h^2)), not both")
    return "h" if h is not None or est.gamma is None else "gamma"


def kernel_of(est, width=None, X=None):
    """The Kernel of an estimator with ``kernel``, ``h``, ``gamma`` (h = 1 when neither);
    X, the training points, resolves ``gamma="scale"`` / ``"auto"``."""
    if callable(est.kernel):
        return make_kernel(est.kernel)
    if est.kernel == "precomputed":  # the points are the Gram's rows (SVCKernelsMixin)
        return make_kernel(lookup_gram)
    if est.kernel in DOT_SPELLINGS:
        return _dot_kernel_of(est, width, X)
    name = width_name(est)
    width = getattr(est, name) if width is None else width
    if name == "gamma":
        width = resolve_gamma(width, X, est.kernel)
    return make_kernel(kernel_name(est.kernel), **{name: 1.0 if width is None else width})


def exact_only(est):
    """Whether the estimator's kernel is one only the exact decomposition takes: SVC's
    dot-product kernels, a callable, a precomputed Gram matrix."""
    return callable(est.kernel) or est.kernel in DOT_SPELLINGS + ("precomputed",)


class SVCKernelsMixin:
    """SVC's ``kernel="precomputed"``: the Gram matrix K(X_train, X_train) at fit and
    K(X_test, X_train) at predict. Its rows become the points of an index-lookup kernel
    (:func:`~hsskern.kernels.callable.precomputed_points`), so subsets of the training
    points (weights of 0, one-vs-one pairs, probability folds) keep their columns."""

    def _kernel_points(self, X, fitting):
        if self.kernel != "precomputed":
            return X
        if sp.issparse(X):
            raise ValueError('kernel="precomputed" takes a dense Gram matrix; pass '
                             "X.toarray()")
        return precomputed_points(X, training=fitting)


def _dot_kernel_of(est, gamma, X):
    """SVC's poly, linear or sigmoid kernel of an estimator: gamma None is SVC's default
    "scale" (these kernels have no width h)."""
    if getattr(est, "h", None) is not None:
        raise ValueError(f"h is the width of the Gaussian and Laplacian kernels; "
                         f"kernel={est.kernel!r} takes gamma (SVC's), not h")
    if est.kernel == "linear":
        return make_kernel("linear")
    gamma = est.gamma if gamma is None else gamma
    gamma = resolve_gamma("scale" if gamma is None else gamma, X, est.kernel)
    return make_kernel(est.kernel, gamma=gamma, degree=getattr(est, "degree", None),
                       coef0=getattr(est, "coef0", None))


def starts_from_zero(est, shape, solve_exact=None):
    """Whether an estimator with ``start`` (HSSSVC, HSSSVR) solves data of this shape by the
    exact decomposition from zero (``start="decomposition"``, or "auto" resolving to it):
    then it needs kernel entries only, and takes sparse rows. ``solve_exact`` as its backend
    passes it (default the estimator's ``options.solve_exact``)."""
    o = options_of(est)
    solve_exact = o.solve_exact if solve_exact is None else solve_exact
    if exact_only(est):
        return True
    start, _ = plan_start(shape[0], route=RouteOptions(), start=o.start, exact=solve_exact,
                          approximation=o.approximation)
    return start == "decomposition"


def options_of(est):
    """The options in effect of an estimator: its ``options`` object (the defaults when
    None), or, for an estimator whose knobs are still flat, the estimator itself."""
    return est._options() if hasattr(est, "_options") else est


def hss_options(est, verbose_offset=1):
    """The HSSOptions of an estimator: its compression options (an options object's, or
    the flat HSS parameters), its seed, and the compression's own verbosity
    ``verbose_offset`` below the estimator's."""
    o = options_of(est)
    verbose = max(0, int(est.verbose) - verbose_offset)
    if isinstance(o, CompressionOptions):
        return o.hss_options(random_state=est.random_state, verbose=verbose)
    return HSSOptions(**{f: getattr(est, f) for f in HSS_FIELDS},
                      random_state=est.random_state, verbose=verbose)


def width_grid(est, X=None):
    """The widths a ``*CV`` searches, as a list of {"h" or "gamma": value}, checked; a gamma
    string is resolved on X (all of ``fit``'s rows: every fold and the refit share it)."""
    name = width_name(est)
    widths = getattr(est, name)
    if isinstance(widths, str):
        widths = resolve_gamma(widths, X, est.kernel)
    try:
        widths = [1.0] if widths is None else np.atleast_1d(
            np.asarray(widths, dtype=np.float64)).tolist()
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number or a sequence of them (a gamma "
                         f"string only on its own), got {widths!r}") from None
    if not widths or not all(np.isfinite(v) and v > 0 for v in widths):
        raise ValueError(f"{name} must be positive and finite, got {widths!r}")
    return [{name: float(w)} for w in widths]
