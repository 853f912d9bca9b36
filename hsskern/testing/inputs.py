"""Seeded inputs that tests and benchmarks must draw identically (regression seeds refer to them)."""
import numpy as np

__all__ = ["hard_clustered_points"]


def hard_clustered_points(seed):
    """The hard regime of the HSS-ANN accuracy property, one input per seed.

    Clustered points in d = 1..3 (1..6 clusters), half the time a quarter of them duplicates of
    one point, n in 200..699. Returns ``(X, h)`` with h = 0.1 x the cloud's spread: a node's
    nearest outside points then often sit in a far stratum of the cluster tree.
    """
    rng = np.random.default_rng(seed)
    n, d, k = rng.integers(200, 700), rng.integers(1, 4), rng.integers(1, 7)
    centers = rng.normal(size=(k, d)) * 5
    X = centers[rng.integers(0, k, n)] + rng.normal(size=(n, d)) * 0.3
    if rng.random() < .5:
        X[rng.integers(0, n, n // 4)] = X[0]
    spread = float(np.sqrt(np.mean(np.var(X, axis=0)) * X.shape[1])) or 1.0
    return X, 0.1 * spread
