"""The stacklevel that points a warning at the user's own call."""
import os
import sys

__all__ = ["caller_stacklevel"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller_stacklevel():
    """The stacklevel of the first frame outside hsskern (the user's call), for a warning
    issued from a frame that calls this."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
