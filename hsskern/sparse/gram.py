"""Sparse Gram matrices of the compactly supported Gaussian kernel, assembled without dense blocks.

k(x, y) = (1 - |x - y| / (3 sigma))_+^power exp(-|x - y|^2 / (2 sigma^2)) vanishes beyond the
support radius 3 sigma, so K(X, X) has one entry per pair of points closer than that. The pairs
come from a k-d tree (``scipy.spatial.cKDTree.query_pairs``: the upper triangle only, half the
work of listing both); the kernel values and the counting-sort CSC assembly are compiled
(``_assemble.pyx``): the numpy route (fancy-indexed distances, an argsort or scipy's
COO -> CSC) sorts and allocates several nnz-sized temporaries.

How many pairs there are depends steeply on sigma (about sigma^d for small sigma), and a
careless sigma asks for terabytes. :func:`estimate_gram` counts neighbours of a random sample
of rows against a random sample of the columns for a whole grid of radii in one pass (bounded
work: a dual-tree count in low dimension, dense blocks of distances above) and scales up; the assembly
functions call it first and raise :class:`~hsskern.exceptions.MemoryBudgetError` *before*
allocating anything, naming the largest sigma of the grid that would fit.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from ..kernels.functions import Kernel, make_kernel
from ..utils._memory import check_memory, resolve_budget
from ..utils._scaling import distance_scale
from ..utils.validation import check_points
from . import _assemble

#: Peak bytes per stored entry while assembling a symmetric Gram. Each upper-triangle pair
#: stands for two stored entries: its int64 index pair (16 B, briefly twice while the tree
#: copies its C++ vector into the array) and its value (8 B) are 8 + 4 B per entry, the CSC
#: arrays 8 B value + 4 B index; the rest is margin for the factor's lower-triangle copy.
BYTES_PER_ENTRY_ASSEMBLY = 36
#: Bytes per entry of the finished matrix (value + int32/int64 index, indptr ignored).
BYTES_PER_ENTRY_STORED = 16
#: Rows of the test set handled per neighbour query in :func:`compact_cross_gram_apply`.
CROSS_CHUNK = 16384


def compact_kernel(sigma, power=None, n_features=None):
    """The compact Gaussian :class:`~hsskern.kernels.Kernel` (validated).

    Parameters
    ----------
    sigma : float or Kernel
        Width sigma > 0 (support radius 3 sigma), or an existing compact_gaussian Kernel.
    power : float, optional
        Exponent of (1 - r / (3 sigma))_+^power (formerly ``l``); default
        ``floor(d/2) + 1`` (Askey), which needs ``n_features``.
    n_features : int, optional
        Dimension d of the data.
    """
    if isinstance(sigma, Kernel):
        if sigma.name != "compact_gaussian":
            raise ValueError(f"the sparse backend needs a compact_gaussian kernel, got {sigma!r}")
        return sigma
    return make_kernel("compact_gaussian", sigma=sigma, power=power, n_features=n_features)


@dataclass(frozen=True)
class GramEstimate:
    """Sampled estimate of the size of a sparse compact-kernel Gram matrix.

    Attributes
    ----------
    n_rows, n_cols : int
        Shape of the matrix.
    nnz : int
        Estimated stored entries (both triangles and the diagonal, for a square Gram).
    assembly_bytes : int
        Estimated peak memory while assembling.
    stored_bytes : int
        Estimated memory of the finished matrix.
    sigmas, nnz_per_sigma : ndarray
        The sigma grid the estimate was extrapolated on and the nnz for each.
    """

    n_rows: int
    n_cols: int
    nnz: int
    assembly_bytes: int
    stored_bytes: int
    sigmas: np.ndarray
    nnz_per_sigma: np.ndarray

    @property
    def density(self):
        return self.nnz / max(1, self.n_rows * self.n_cols)

    def largest_sigma_within(self, budget, per_entry=BYTES_PER_ENTRY_ASSEMBLY):
        """Largest sigma of the grid whose estimated assembly fits ``budget`` bytes (or None)."""
        ok = self.nnz_per_sigma * per_entry <= budget
        return float(self.sigmas[ok].max()) if ok.any() else None


def estimate_gram(X, kernel, *, Y=None, tree=None, n_samples=2000, max_pairs=4_000_000,
                  tree_max_features=8, random_state=0):
    """Estimate nnz of K(Y, X) (or K(X, X)) from the neighbour counts of sampled rows against
    sampled columns, in work bounded whatever n and d.

    One pass counts, for a random sample of rows against a random sample of the columns, the
    pairs within every radius of a geometric grid below 3 sigma, so the same call tells what
    any smaller sigma would cost. The counts are scaled by the sampled fraction of the pairs
    (for a square Gram, of the off-diagonal pairs; the unit diagonal is added exactly), an
    unbiased estimate, exact when every row and column is sampled. The work is at most
    ``max_pairs`` distances (``n_samples`` rows by ``max_pairs / n_samples`` columns), by
    dense blocks; at up to ``tree_max_features`` features, where k-d trees prune, a tree over
    50 times as many columns (and over all of them when they are that few, ``tree`` reused).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Column points (validated).
    kernel : Kernel
        compact_gaussian kernel.
    Y : ndarray of shape (m, d), optional
        Row points; default X.
    tree : cKDTree, optional
        Tree over X, if already built (used when every column is counted).
    n_samples : int, default 2000
        Rows sampled (all rows when fewer).
    max_pairs : int, default 4,000,000
        Distances the dense count may form (50 times as many with a tree).
    tree_max_features : int, default 8
        Up to this many features the count runs on k-d trees.
    random_state : int, default 0

    Returns
    -------
    GramEstimate
    """
    rows = X if Y is None else Y
    m, n = rows.shape[0], X.shape[0]
    rng = np.random.default_rng(random_state)
    take = np.sort(rng.choice(m, size=n_samples, replace=False)) if m > n_samples \
        else np.arange(m)
    use_tree = X.shape[1] <= tree_max_features
    c = max(1, int(max_pairs * (50 if use_tree else 1)) // take.size)
    cols = np.sort(rng.choice(n, size=c, replace=False)) if n > c else None
    sigmas = kernel.sigma * np.geomspace(1.0 / 64.0, 1.0, 13)
    Xc, Xr = (X if cols is None else X[cols]), rows[take]
    # the samples' own exact rescaling (a power of two) keeps their distances in range
    scale = 1.0 if tree is not None else distance_scale(np.vstack([Xr[:1], Xc]))
    if scale != 1.0:
        Xc, Xr = Xc / scale, Xr / scale
    radii = 3.0 * sigmas / scale
    if use_tree:
        ct = tree if (tree is not None and cols is None) else cKDTree(Xc)
        counts = np.asarray(cKDTree(Xr).count_neighbors(ct, radii), dtype=np.float64)
    else:
        counts = _dense_counts(Xr, Xc, radii, max_pairs)
    n_cols = n if cols is None else cols.size
    pairs = float(take.size) * n_cols
    if Y is None:  # the sampled rows that are also sampled columns count themselves
        self_pairs = float(take.size if cols is None else np.intersect1d(take, cols).size)
        off = float(m) * (n - 1)
        frac = (pairs - self_pairs) / off if off > 0 else 1.0
        nnz_grid = m + (counts - self_pairs) / max(frac, 1e-300) if off > 0 else counts
    else:
        nnz_grid = counts * (float(m) * n / pairs)
    nnz_grid = np.minimum(np.maximum(nnz_grid, 0.0), float(m) * n)
    nnz = int(round(nnz_grid[-1]))
    return GramEstimate(n_rows=m, n_cols=n, nnz=nnz,
                        assembly_bytes=int(nnz * BYTES_PER_ENTRY_ASSEMBLY),
                        stored_bytes=int(nnz * BYTES_PER_ENTRY_STORED),
                        sigmas=sigmas, nnz_per_sigma=nnz_grid)


def _dense_counts(A, B, radii, max_pairs):
    """Pairs (a, b) with |a - b| <= r for each radius r (ascending), by dense blocks of
    distances (at most ``max_pairs`` at once): the count where trees do not prune."""
    r2 = np.asarray(radii, dtype=np.float64) ** 2
    counts = np.zeros(r2.size)
    mu = B.mean(axis=0)  # centred: |a|^2 + |b|^2 - 2 a.b loses less to rounding
    Ac, Bc = A - mu, B - mu
    an = np.einsum("ij,ij->i", Ac, Ac)
    step = max(1, int(max_pairs) // max(1, Ac.shape[0]))
    for s in range(0, Bc.shape[0], step):
        Bs = Bc[s:s + step]
        D = an[:, None] + np.einsum("ij,ij->i", Bs, Bs)[None, :] - 2.0 * (Ac @ Bs.T)
        hist = np.bincount(np.searchsorted(r2, D.ravel(), side="left"),
                           minlength=r2.size + 1)
        counts += np.cumsum(hist[:r2.size])
    return counts


def check_gram_budget(estimate, max_memory=None, what="sparse compact-kernel Gram"):
    """Raise MemoryBudgetError when ``estimate`` exceeds the budget, naming a sigma that fits."""
    budget = resolve_budget(max_memory)
    if budget is None or estimate.assembly_bytes <= budget:
        return
    fit = estimate.largest_sigma_within(budget)
    hint = (f"about {estimate.nnz:.3g} nonzeros ({estimate.density:.2%} dense) at "
            f"sigma={estimate.sigmas[-1]:g}; ")
    hint += (f"sigma <= {fit:.3g} would fit" if fit is not None else
             f"even sigma={estimate.sigmas[0]:.3g} would not fit")
    hint += " (or raise the memory budget)"
    check_memory(estimate.assembly_bytes, f"{what} of shape "
                 f"{estimate.n_rows} x {estimate.n_cols}", budget=budget, hint=hint)


def _index_dtype(nnz, n):
    return np.int32 if max(nnz, n) < 2**31 - 1 else np.int64


def _compress(pairs, values, n_outer, symmetric, unit_diagonal):
    """CSC arrays (data, indices, indptr) with sorted indices from pairs (row, column).

    ``symmetric`` also stores the mirrored entry; ``unit_diagonal`` adds k(x, x) = 1.
    Entries whose value is exactly 0 (pairs at exactly the support radius) are dropped.
    """
    counts = np.zeros(n_outer, dtype=np.intp)
    _assemble.column_counts(pairs, values, n_outer, symmetric, counts)
    if unit_diagonal:
        counts += 1
    nnz = int(counts.sum())
    idx_t = _index_dtype(nnz, n_outer)
    indptr = np.zeros(n_outer + 1, dtype=idx_t)
    np.cumsum(counts, out=indptr[1:])
    del counts
    indices = np.empty(nnz, dtype=idx_t)
    data = np.empty(nnz)
    _assemble.fill_columns(pairs, values, symmetric, unit_diagonal, indptr, indices, data)
    return data, indices, indptr


def compact_gram(X, sigma, power=None, *, max_memory=None, tree=None, random_state=0):
    """Sparse Gram matrix K(X, X) of the compact Gaussian kernel, in CSC format.

    Both triangles and the unit diagonal are stored (K is symmetric, so the CSC arrays are
    also those of the CSR matrix). Memory is checked *before* assembly from a sampled
    estimate (:func:`estimate_gram`).

    Parameters
    ----------
    X : array-like of shape (n, d)
    sigma : float or Kernel
        Kernel width (support radius 3 sigma) or a compact_gaussian Kernel.
    power : float, optional
        Exponent of the truncated power (formerly ``l``); default floor(d/2) + 1.
    max_memory : int, optional
        Bytes the assembly may use; default 80% of available memory.
    tree : cKDTree, optional
        k-d tree over X, reused when given.
    random_state : int, default 0
        Seed of the row sample used by the memory estimate.

    Returns
    -------
    K : scipy.sparse.csc_matrix of shape (n, n)

    Raises
    ------
    MemoryBudgetError
        The estimated assembly memory exceeds ``max_memory``; the message names a sigma that fits.
    """
    X = check_points(X)
    kernel = compact_kernel(sigma, power, X.shape[1])
    tree = cKDTree(X) if tree is None else tree
    check_gram_budget(estimate_gram(X, kernel, tree=tree, random_state=random_state),
                      max_memory)
    return assemble_compact_gram(X, kernel, tree)


def assemble_compact_gram(X, kernel, tree=None):
    """K(X, X) of a compact kernel as :func:`compact_gram` returns it, with no memory check.

    For callers that ran :func:`estimate_gram` and :func:`check_gram_budget` themselves (and
    built the tree for them): X is trusted (finite C-contiguous float64), ``kernel`` a
    compact_gaussian Kernel (:func:`compact_kernel`).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    kernel : Kernel
    tree : cKDTree, optional
        k-d tree over X.

    Returns
    -------
    K : scipy.sparse.csc_matrix of shape (n, n)
        Both triangles and the unit diagonal, sorted indices, no stored zeros.
    """
    n = X.shape[0]
    tree = cKDTree(X) if tree is None else tree
    # upper-triangle pairs (i < j) only: half the tree work and memory of the full listing
    pairs = tree.query_pairs(kernel.support_radius, output_type="ndarray")
    pairs = np.ascontiguousarray(pairs, dtype=np.intp)
    values = np.empty(pairs.shape[0])
    _assemble.pair_values(X, X, pairs, kernel.params, values)
    data, indices, indptr = _compress(pairs, values, n, True, True)
    K = sp.csc_matrix((data, indices, indptr), shape=(n, n), copy=False)
    K.has_sorted_indices = True
    return K


def compact_cross_gram(Y, X, sigma, power=None, *, tree=None, max_memory=None,
                       random_state=0):
    """Sparse rectangular K(Y, X) (rows: Y, columns: X) of the compact Gaussian, CSR.

    Parameters
    ----------
    Y : array-like of shape (m, d)
    X : array-like of shape (n, d)
    sigma : float or Kernel
    power : float, optional
        Formerly ``l``.
    tree : cKDTree, optional
        k-d tree over X.
    max_memory : int, optional
        Checked against a sampled estimate before assembling.
    random_state : int, default 0

    Returns
    -------
    scipy.sparse.csr_matrix of shape (m, n)
    """
    X = check_points(X)
    Y = check_points(Y, "Y")
    if Y.shape[1] != X.shape[1]:
        raise ValueError(f"Y has {Y.shape[1]} features, X has {X.shape[1]}")
    kernel = compact_kernel(sigma, power, X.shape[1])
    tree = cKDTree(X) if tree is None else tree
    check_gram_budget(estimate_gram(X, kernel, Y=Y, tree=tree, random_state=random_state),
                      max_memory, what="sparse cross kernel")
    return _assemble_cross(Y, X, kernel, tree)


def _assemble_cross(Y, X, kernel, tree):
    rec = cKDTree(Y).sparse_distance_matrix(tree, kernel.support_radius, output_type="ndarray")
    # (column point, row point) pairs: compressing "columns" over Y gives the CSR of K(Y, X)
    pairs = np.empty((rec.shape[0], 2), dtype=np.intp)
    pairs[:, 0] = rec["j"]
    pairs[:, 1] = rec["i"]
    del rec
    values = np.empty(pairs.shape[0])
    _assemble.pair_values(X, Y, pairs, kernel.params, values)
    data, indices, indptr = _compress(pairs, values, Y.shape[0], False, False)
    K = sp.csr_matrix((data, indices, indptr), shape=(Y.shape[0], X.shape[0]), copy=False)
    K.has_sorted_indices = True
    return K


def compact_cross_gram_apply(Y, X, kernel, V, *, tree=None, chunk=CROSS_CHUNK):
    """K(Y, X) @ V through the sparse cross kernel, ``chunk`` rows of Y at a time.

    Memory is bounded by the neighbours of one chunk; the m x n matrix is never held.
    Inputs are trusted (validated float64 arrays, compatible shapes).

    Parameters
    ----------
    Y : ndarray of shape (m, d)
    X : ndarray of shape (n, d)
    kernel : Kernel
    V : ndarray of shape (n,) or (n, r)
    tree : cKDTree, optional
        Tree over X.
    chunk : int
        Rows of Y per neighbour query.

    Returns
    -------
    ndarray of shape (m,) or (m, r)
    """
    tree = cKDTree(X) if tree is None else tree
    out = np.empty((Y.shape[0],) + V.shape[1:])
    for s in range(0, Y.shape[0], chunk):
        Kc = _assemble_cross(Y[s:s + chunk], X, kernel, tree)
        out[s:s + chunk] = Kc @ V
    return out
