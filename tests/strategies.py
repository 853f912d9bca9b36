"""Hypothesis strategies shared by the numerical tests."""
import numpy as np
from hypothesis import strategies as st


@st.composite
def point_sets(draw, n_min=1, n_max=300, d_min=1, d_max=20, clustered=None):
    """Random point clouds: uniform or clustered, at varied scales, sometimes with duplicates."""
    n = draw(st.integers(n_min, n_max))
    d = draw(st.integers(d_min, d_max))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([1e-3, 0.1, 1.0, 10.0, 300.0]))
    rng = np.random.default_rng(seed)
    if clustered is None:
        clustered = draw(st.booleans())
    if clustered:
        k = draw(st.integers(1, 6))
        centers = rng.normal(size=(k, d)) * 5
        X = centers[rng.integers(0, k, n)] + rng.normal(size=(n, d)) * 0.3
    else:
        X = rng.uniform(-1, 1, size=(n, d))
    if draw(st.booleans()) and n > 2:  # duplicate points
        X[rng.integers(0, n, n // 4)] = X[0]
    return X * scale
