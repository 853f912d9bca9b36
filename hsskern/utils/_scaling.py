"""Exact power-of-two rescaling of point sets, so distance computations stay in float range.

Dividing every coordinate by s = 2^e changes no significand bit (unless a result leaves the
normal range), and every later +, -, *, /, sqrt commutes with it: distances, their order and
any quantity that depends only on distance / width are bitwise what they would be in exact
range. Callers rescale only when the data's extent is outside a generous window, so ordinary
inputs are untouched (no copy, same bits).
"""
import math

import numpy as np

__all__ = ["coordinate_extent", "log2", "power_of_two_below", "distance_scale",
           "SAFE_LOG2"]

#: |log2| of the extents left alone: squared distances of up to 2^(2 SAFE_LOG2) * d stay
#: finite and normal with a wide margin for d up to 2^100.
SAFE_LOG2 = 400


def log2(x):
    """log2 of a non-negative float, -inf at 0 (exact for powers of two, denormals included)."""
    return math.log2(x) if x > 0 else -math.inf


def power_of_two_below(x):
    """The largest power of two <= x, for x > 0 (denormals included)."""
    m, e = math.frexp(x)  # x = m 2^e, m in [0.5, 1)
    return math.ldexp(1.0, e - 1)


def coordinate_extent(*arrays):
    """(half extent, largest magnitude) over the rows of the given (n_i, d) arrays.

    The half extent is max_j (max_i x_ij / 2 - min_i x_ij / 2): half the widest side of the
    points' bounding box, computed without overflow (halving is exact for normal numbers).
    Every pairwise distance is at most 2 sqrt(d) times it.
    """
    his, los, mags = [], [], []
    for A in arrays:
        if A.shape[0] == 0:
            continue
        hi, lo = A.max(axis=0), A.min(axis=0)
        his.append(hi)
        los.append(lo)
        mags.append(max(float(np.abs(hi).max()), float(np.abs(lo).max())))
    if not his:
        return 0.0, 0.0
    hi = np.max(his, axis=0)
    lo = np.min(los, axis=0)
    return float((hi / 2 - lo / 2).max()), max(mags)


def distance_scale(X):
    """A power of two s with X / s safe for scale-invariant geometry (trees, neighbours).

    1.0 when the half extent a and the largest magnitude M of X lie in [2^-400, 2^400] (or are
    0): nothing to do. Otherwise the power of two that puts a in [1/2, 1), raised if needed
    so that M / s <= 2^1000 stays finite. Distances of X / s are then at most 2 sqrt(d) and
    exact multiples of those of X.
    """
    a, M = coordinate_extent(X)
    if M == 0.0:
        return 1.0
    la, lm = log2(a), log2(M)
    if (a == 0.0 or abs(la) <= SAFE_LOG2) and lm <= SAFE_LOG2:
        return 1.0
    e = math.frexp(a)[1] if a > 0 else math.frexp(M)[1]
    e = max(e, math.frexp(M)[1] - 1000)
    return math.ldexp(1.0, e)
