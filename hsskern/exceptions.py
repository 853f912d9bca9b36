"""Exception hierarchy. Every error hsskern raises on purpose derives from ``HsskernError``."""


class HsskernError(Exception):
    """Base class of hsskern's own errors."""


class MemoryBudgetError(HsskernError, MemoryError):
    """A request would need more memory than allowed; the message carries the estimate."""


class TimeBudgetError(HsskernError, ValueError):
    """A time budget (``max_time``) cannot hold even the work a fit must do before it can
    return a model; raised before that work, with the estimate in the message."""


class NotPositiveDefiniteError(HsskernError, ValueError):
    """A matrix that must be symmetric positive definite is not (numerically)."""

    def __init__(self, message, suggested_beta=None):
        super().__init__(message)
        self.suggested_beta = suggested_beta
