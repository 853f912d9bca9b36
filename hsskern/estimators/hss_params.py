"""The flat HSS parameters every HSS estimator shares (classifier and regressors): the kernel
width in either spelling, the compression options, and the width grid of a ``*CV``."""
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..kernels import make_kernel
from ..options import HSSOptions

__all__ = ["HSS_FIELDS", "HSS_CONSTRAINTS", "width_name", "kernel_of", "hss_options",
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


def width_name(est):
    """"h" or "gamma": the spelling of the kernel width the estimator was given."""
    if est.h is not None and est.gamma is not None:
        raise ValueError("give either h or gamma (gamma = 1 / (2 h^2)), not both")
    return "gamma" if est.gamma is not None else "h"


def kernel_of(est, width=None):
    """The Kernel of an estimator with ``kernel``, ``h``, ``gamma`` (h = 1 when neither)."""
    name = width_name(est)
    width = getattr(est, name) if width is None else width
    return make_kernel(est.kernel, **{name: 1.0 if width is None else width})


def hss_options(est, verbose_offset=1):
    """The HSSOptions of an estimator with the flat HSS parameters (the compression's own
    verbosity ``verbose_offset`` below the estimator's)."""
    return HSSOptions(**{f: getattr(est, f) for f in HSS_FIELDS},
                      random_state=est.random_state,
                      verbose=max(0, int(est.verbose) - verbose_offset))


def width_grid(est):
    """The widths a ``*CV`` searches, as a list of {"h" or "gamma": value}, checked."""
    name = width_name(est)
    widths = getattr(est, name)
    widths = [1.0] if widths is None else np.atleast_1d(
        np.asarray(widths, dtype=np.float64)).tolist()
    if not widths or not all(np.isfinite(v) and v > 0 for v in widths):
        raise ValueError(f"{name} must be positive and finite, got {widths!r}")
    return [{name: float(w)} for w in widths]
