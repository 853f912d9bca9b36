"""Old keyword names taken for one release, with a FutureWarning naming the new one."""
import functools
import os
import sys
import warnings

__all__ = ["caller_stacklevel", "renamed_keywords"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller_stacklevel():
    """The stacklevel of the first frame outside hsskern (the user's call), for a warning
    issued from a frame that calls this."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def renamed_keywords(**renamed):
    """A decorator of a function, or of a class's ``__init__`` (a dataclass's), that takes
    each old keyword ``old=new`` as ``new`` with a FutureWarning; both at once is a
    TypeError. ``inspect.signature`` shows the new names only."""
    def decorate(target):
        func = target.__init__ if isinstance(target, type) else target
        name = target.__qualname__

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old in set(kwargs) & set(renamed):
                new = renamed[old]
                if new in kwargs:
                    raise TypeError(f"{name}: {old!r} and {new!r} are one argument; give "
                                    f"{new!r} only")
                warnings.warn(f"{name}({old}=...) is renamed {new}= (the old name is taken "
                              "until the next release)", FutureWarning,
                              stacklevel=caller_stacklevel())
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        if isinstance(target, type):
            target.__init__ = wrapper
            return target
        return wrapper
    return decorate
