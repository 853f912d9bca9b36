"""Row hashes (``hsskern.utils._rowhash``) and the distinct-rows count they pre-check
(``hsskern.kernels.distinct_rows``): equal rows hash equal, and the count is exact."""
import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from hsskern.kernels import distinct_rows
from hsskern.solvers.paths.warm import match_keys, row_keys
from hsskern.utils._rowhash import dense_row_hashes


def _reference(X, max_share):
    """distinct_rows by the rows' bytes, as it was before the hash pre-check."""
    keys = np.ascontiguousarray(X).view(np.dtype((np.void, X.shape[1] * 8))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return None if first.size > max_share * X.shape[0] else (first, inverse.ravel())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(2, 300), d=st.integers(1, 6),
       levels=st.integers(1, 6), share=st.sampled_from([0.1, 0.5, 0.9, 1.0]))
def test_distinct_rows_is_the_bytes_answer(seed, n, d, levels, share):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(n, d)) * 0.5  # few levels: many repeated rows
    got, want = distinct_rows(X, max_share=share), _reference(X, share)
    assert (got is None) == (want is None)
    if got is not None:
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 200), d=st.integers(1, 8))
def test_equal_rows_hash_equal_and_others_apart(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(n, d)).astype(float)
    h = dense_row_hashes(X)
    same = (X[:, None, :] == X[None, :, :]).all(axis=2)
    assert np.array_equal((h[:, None, :] == h[None, :, :]).all(axis=2), same)
    np.testing.assert_array_equal(row_keys(X), row_keys(sp.csr_matrix(X)))


def test_match_keys_lane_ties_fall_back_to_both_lanes():
    """Keys equal in their first lane but not their second are different keys."""
    old = np.array([[5, 1], [5, 2], [7, 1]], dtype=np.uint64)
    new = np.array([[5, 2], [7, 1], [5, 3], [5, 1]], dtype=np.uint64)
    i, j = match_keys(old, new)
    assert sorted(zip(i.tolist(), j.tolist())) == [(0, 3), (1, 0), (2, 1)]


def test_match_keys_prefix_pairs_copies_in_order():
    """Old rows first in the new array (the nightly retrain), an old row appended again:
    the k-th copy pairs with the k-th copy, as the sorting path pairs them."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(30, 2)).astype(float)  # many copies
    old, new = row_keys(X), row_keys(np.vstack([X, X[:7]]))
    i, j = match_keys(old, new)
    np.testing.assert_array_equal(i, np.arange(30))
    np.testing.assert_array_equal(j, np.arange(30))
    i2, j2 = match_keys(old, new[::-1].copy())  # the sorting path, on the reversed rows
    assert i2.size == 30 and np.all((X[i2] == np.vstack([X, X[:7]])[::-1][j2]).all(axis=1))
