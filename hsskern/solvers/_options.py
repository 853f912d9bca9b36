"""What the solvers' frozen options objects share: a field's check and the merge of a
one-call function's arguments into an options object (:func:`options_with`)."""
from dataclasses import replace

import numpy as np


def check_option_number(cls, name, value, *, low=0.0, integer=False, allow_none=False,
                        open_low=False):
    """One field of a solver's options object checked: a finite number >= low (> low with
    ``open_low``), an integer with ``integer``, None with ``allow_none``."""
    if value is None and allow_none:
        return
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    ok = isinstance(value, kinds) and not isinstance(value, (bool, np.bool_)) \
        and np.isfinite(value) and (value > low if open_low else value >= low)
    if not ok:
        what = "an integer" if integer else "a finite number"
        raise ValueError(f"{cls}.{name} must be {what} {'>' if open_low else '>='} {low:g}"
                         f"{' or None' if allow_none else ''}, got {value!r}")


def options_with(cls, options, given):
    """``options`` (``cls()`` when None) with the one-call form's arguments that differ
    from their defaults: an argument left at its default leaves the field alone."""
    if options is None:
        return cls(**given)
    if not isinstance(options, cls):
        raise TypeError(f"options must be a {cls.__name__}, got {type(options).__name__}")
    defaults = cls()
    changed = {k: v for k, v in given.items() if not _same(v, getattr(defaults, k))}
    return replace(options, **changed) if changed else options


def _same(value, default):
    return value is default or (type(value) is type(default) and value == default)
