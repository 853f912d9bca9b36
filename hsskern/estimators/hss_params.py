"""Deprecated: the width spellings moved to :mod:`hsskern.estimators.widths`.

Importing this module warns (FutureWarning) and re-exports every name of the new one; it
goes in the next release.
"""
import warnings

from . import widths as _widths
from .widths import *  # noqa: F401,F403

__all__ = list(_widths.__all__)

warnings.warn("hsskern.estimators.hss_params is deprecated and will be removed in the next "
              "release: import from hsskern.estimators.widths", FutureWarning, stacklevel=2)


def __getattr__(name):  # the private helpers too (``_dot_kernel_of``, ...)
    return getattr(_widths, name)
