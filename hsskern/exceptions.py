"""Exception hierarchy. Every error hsskern raises on purpose derives from ``HsskernError``."""


class HsskernError(Exception):
    """Base class of hsskern's own errors."""


class MemoryBudgetError(HsskernError, MemoryError):
    """A request would need more memory than allowed; the message carries the estimate."""


class NotPositiveDefiniteError(HsskernError, ValueError):
    """A matrix that must be symmetric positive definite is not (numerically)."""

    def __init__(self, message, suggested_beta=None):
        super().__init__(message)
        self.suggested_beta = suggested_beta
