"""What ``verbose`` prints, through the ``logging`` module: one whole line per record.

An estimator with ``verbose >= level`` emits its record at INFO on the logger
``hsskern.<EstimatorName>``. Records pass through the handler installed here on the
``hsskern`` logger (installed once, at the first record), which writes to the ``sys.stdout``
of the moment under the handler's lock, so lines from concurrent fits (the one-vs-one pairs
run on threads) never interleave. The ``hsskern`` logger does not propagate to the root
logger (no line twice when an application configures logging); an application that wants
the records elsewhere adds its own handler to ``logging.getLogger("hsskern")`` (and may
remove this one).
"""
import logging
import sys

__all__ = ["verbose_log"]

_ROOT = "hsskern"


class _StdoutHandler(logging.StreamHandler):
    """A StreamHandler on the current ``sys.stdout`` (notebooks and test runners replace it
    after import)."""

    def __init__(self):
        super().__init__(sys.stdout)

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value):  # StreamHandler's __init__ sets it; the property reads it live
        pass


def _install():
    logger = logging.getLogger(_ROOT)
    if not any(isinstance(h, _StdoutHandler) for h in logger.handlers):
        handler = _StdoutHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def verbose_log(name, msg):
    """One INFO record ``msg`` from the estimator class ``name``."""
    _install()
    logging.getLogger(f"{_ROOT}.{name}").info(f"[{name}] {msg}")
