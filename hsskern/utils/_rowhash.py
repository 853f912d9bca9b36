"""Vectorized 64-bit hashes of rows by their values: the entries' hashes summed modulo 2^64.

A row's hash is a sum over its nonzero entries of a hash of (column, value bits), so a dense
row and its sparse copy hash alike and the order of a sparse row's entries does not matter.
Each entry costs one multiply and splitmix64's finalizer, as whole-array NumPy passes (no
per-row Python, no byte-string keys: sorting rows as void bytes costs several times more).
Used where rows must be found again (``solvers.warm``) or counted (``kernels.distinct_rows``).
"""
import numpy as np

__all__ = ["mix", "entry_hashes", "dense_row_hashes", "float_bits"]

SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_ONE = np.uint64(1)


def mix(h, out=None):
    """splitmix64's finalizer on a uint64 array (wrapping arithmetic): a bijection that maps
    0 to 0. In ``out`` when given (``h`` itself: in place), else a new array."""
    out = np.array(h, dtype=np.uint64) if out is None else out
    out ^= out >> _S30
    out *= _M1
    out ^= out >> _S27
    out *= _M2
    out ^= out >> _S31
    return out


def _column_keys(cols, seed):
    """An odd 64-bit multiplier per column index: distinct columns, unrelated multipliers."""
    return mix(np.asarray(cols, dtype=np.uint64) ^ seed) | _ONE


def entry_hashes(cols, bits, lanes=2):
    """``lanes`` (1 or 2) hashes of each entry from its column index and its value's bits:
    e = mix(bits * k1[col]), 0 for a zero entry and a bijection of the bits per column, and
    e * k2[col] for the second lane (one finalizer per entry for both lanes)."""
    e = bits * _column_keys(cols, SEEDS[0])
    mix(e, out=e)
    return (e,) if lanes == 1 else (e, e * _column_keys(cols, SEEDS[1]))


def float_bits(v):
    """The float64 values' bits as uint64, -0.0 read as 0.0 (a contiguous copy)."""
    return (np.asarray(v, dtype=np.float64) + 0.0).view(np.uint64)


def dense_row_hashes(X, lanes=2, chunk=None):
    """(n, lanes) uint64: per row of the dense X, the sums of its entries' hashes
    (:func:`entry_hashes`) modulo 2^64. Equal rows (-0.0 and 0.0 alike) hash equal; ``chunk``
    rows at a time (None: temporaries of about 2^17 entries, which stay in cache)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    chunk = max(64, 2 ** 17 // max(1, X.shape[1])) if chunk is None else chunk
    out = np.zeros((n, lanes), dtype=np.uint64)
    cols = np.arange(X.shape[1], dtype=np.uint64)
    for lo in range(0, n, chunk):
        for s, e in enumerate(entry_hashes(cols, float_bits(X[lo:lo + chunk]), lanes)):
            out[lo:lo + chunk, s] = e.sum(axis=1, dtype=np.uint64)  # modulo 2^64
    return out
