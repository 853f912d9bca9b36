"""Old keyword names taken for one release, with a FutureWarning naming the new one."""
import functools
import os
import sys
import warnings

__all__ = ["caller_stacklevel", "renamed_keywords", "RenamedParamsMixin"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller_stacklevel():
    """The stacklevel of the first frame outside hsskern (the user's call), for a warning
    issued from a frame that calls this."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def translate_renamed(name, renamed, kwargs):
    """``kwargs`` with each old name of ``renamed`` (old -> new) spelled new, a FutureWarning
    for each; both spellings of one argument is a TypeError."""
    for old in sorted(set(kwargs) & set(renamed)):
        new = renamed[old]
        if new in kwargs:
            raise TypeError(f"{name}: {old!r} and {new!r} are one argument; give {new!r} only")
        warnings.warn(f"{name}({old}=...) is renamed {new}= (the old name is taken until the "
                      "next release)", FutureWarning, stacklevel=caller_stacklevel())
        kwargs[new] = kwargs.pop(old)
    return kwargs


def renamed_keywords(**renamed):
    """A decorator of a function, or of a class's ``__init__`` (a dataclass's, an
    estimator's), that takes each old keyword ``old=new`` as ``new`` with a FutureWarning;
    both at once is a TypeError. ``inspect.signature`` (so scikit-learn's ``get_params``)
    shows the new names only."""
    def decorate(target):
        func = target.__init__ if isinstance(target, type) else target
        name = target.__qualname__

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **translate_renamed(name, renamed, kwargs))

        if isinstance(target, type):
            target.__init__ = wrapper
            return target
        return wrapper
    return decorate


class RenamedParamsMixin:
    """An estimator's ``set_params`` that also takes the old names of its renamed
    parameters (``_renamed_params``, old -> new), with a FutureWarning, for one release (its
    ``__init__`` takes them by :func:`renamed_keywords`)."""

    _renamed_params = {}

    def set_params(self, **params):
        params = translate_renamed(f"{type(self).__name__}.set_params", self._renamed_params,
                                   params)
        return super().set_params(**params)
