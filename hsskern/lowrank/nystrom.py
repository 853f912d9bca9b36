"""Nystrom feature map: the "virtual samples" F = K(X, Z) U Lambda^{-1/2} of LLSVM / LASN.

With the eigendecomposition K(Z, Z) = U Lambda U^T (eigenvalues below ``eig_cutoff * lambda_max``
dropped), the rows of F satisfy F F^T = K(X, Z) K(Z, Z)^+ K(Z, X), the Nystrom approximation of
K. A linear SVM trained on F is therefore the kernel SVM with the Nystrom kernel (Zhang et al.,
Proposition 1; Jiang & Li, Theorem 1), and with Z = X and no cut it is the exact kernel SVM.

F is computed row block by row block through the kernel operator's ``cross(...).to_dense()``
(compiled, threaded tiles) and one BLAS product per block, so the only large allocation is F.
A fitted map is an immutable :class:`NystromMap`; :class:`NystromFeatures` is the
scikit-learn transformer over it.
"""
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from numbers import Integral, Real

from ..kernels import KERNELS, kernel_operator, make_kernel
from ..utils._memory import check_memory
from ..utils.validation import validate_input
from .landmarks import LANDMARK_METHODS, check_n_landmarks, select_landmarks

#: Scratch for one block of K(X_block, Z) while F is assembled.
DEFAULT_BLOCK_MEMORY = 64 * 2**20


def nystrom_map(K_zz, eig_cutoff=1e-6):
    """Mapping matrix M = U Lambda^{-1/2} of a landmark Gram matrix.

    Parameters
    ----------
    K_zz : ndarray of shape (k, k)
        Symmetric positive semidefinite Gram matrix of the landmarks.
    eig_cutoff : float, default 1e-6
        Eigenvalues ``<= eig_cutoff * lambda_max`` (and all non-positive ones) are dropped, so
        duplicate or nearly dependent landmarks reduce the rank instead of blowing up M.
        0 keeps every positive eigenvalue.

    Returns
    -------
    M : ndarray of shape (k, r)
        r <= k columns, ordered by decreasing eigenvalue.
    eigenvalues : ndarray of shape (r,)
        The kept eigenvalues, decreasing.
    """
    lam, U = np.linalg.eigh(K_zz)
    lam, U = lam[::-1], U[:, ::-1]
    lam_max = lam[0] if lam.size else 0.0
    if not lam_max > 0:
        raise ValueError("the landmark Gram matrix K(Z, Z) has no positive eigenvalue; "
                         "check the kernel parameters")
    keep = lam > max(eig_cutoff, 0.0) * lam_max
    keep &= lam > 0
    lam, U = lam[keep], U[:, keep]
    return np.ascontiguousarray(U / np.sqrt(lam)), lam.copy()


def map_memory(n_landmarks):
    """Peak bytes of :meth:`NystromMap.from_landmarks` for k landmarks (an array for an
    array of k): K(Z, Z), and while it is eigendecomposed numpy's copy of it, the
    eigenvectors and LAPACK's (syevd) workspace of 2 k^2 (measured peak 5.1-5.2 x 8 k^2 at
    k = 2000 and 4000)."""
    return 5 * 8 * np.square(np.asarray(n_landmarks, dtype=np.float64))


def nystrom_features(X, Z, kernel, M, *, block_memory=DEFAULT_BLOCK_MEMORY, out=None):
    """F = K(X, Z) M, assembled block of rows by block of rows.

    Inner helper: X, Z finite C-contiguous float64 with the same number of columns.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (k, d)
        Landmarks.
    kernel : Kernel
    M : ndarray of shape (k, r)
    block_memory : int
        Bytes of scratch for one K(X_block, Z) block.
    out : ndarray of shape (n, r), optional

    Returns
    -------
    F : ndarray of shape (n, r)
    """
    n, k, r = X.shape[0], Z.shape[0], M.shape[1]
    if out is None:
        check_memory(8 * n * r, f"the {n} x {r} Nystrom feature matrix",
                     hint="use fewer landmarks (n_components) or transform in chunks")
        out = np.empty((n, r))
    op = kernel_operator(Z, kernel)
    rows = max(1, min(n, int(block_memory) // (8 * max(k, 1))))
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        np.matmul(op.cross(X[i0:i1]).to_dense(), M, out=out[i0:i1])
    return out


@dataclass(frozen=True, eq=False)
class NystromMap:
    """A fitted Nystrom feature map phi(x) = K(x, Z) M, immutable.

    Built by :meth:`from_landmarks`; the fitted state :class:`NystromFeatures` and the Nystrom
    SVM share. Small: the landmarks and M, never a feature matrix.

    Attributes
    ----------
    landmarks : ndarray of shape (k, d)
        Z.
    kernel : Kernel
    normalization : ndarray of shape (k, r)
        M = U Lambda^{-1/2} (:func:`nystrom_map`).
    eigenvalues : ndarray of shape (r,)
        Kept eigenvalues of K(Z, Z), decreasing.
    """

    landmarks: np.ndarray
    kernel: object
    normalization: np.ndarray
    eigenvalues: np.ndarray

    def __post_init__(self):
        for name in ("landmarks", "normalization", "eigenvalues"):
            view = np.asarray(getattr(self, name), dtype=np.float64).view()
            view.flags.writeable = False  # the caller's array stays writeable
            object.__setattr__(self, name, view)

    @classmethod
    def from_landmarks(cls, Z, kernel, eig_cutoff=1e-6, memory_budget=None):
        """The map of the landmarks Z (finite C-contiguous float64, validated by the caller).

        K(Z, Z) is formed densely and eigendecomposed: :func:`map_memory` bytes, checked
        against ``memory_budget`` (default 80% of the available memory) first."""
        k = Z.shape[0]
        check_memory(map_memory(k), f"K(Z, Z) of {k} landmarks and its eigendecomposition",
                     memory_budget, hint="use fewer landmarks (n_components)")
        K_zz = kernel_operator(Z, kernel).to_dense(max_bytes=max(8 * k * k, 1))
        M, lam = nystrom_map(K_zz, eig_cutoff)
        return cls(Z, kernel, M, lam)

    @property
    def n_landmarks(self):
        return self.landmarks.shape[0]

    @property
    def n_components(self):
        """Output dimension r (the rank kept)."""
        return self.normalization.shape[1]

    def transform(self, X, out=None):
        """F = phi(X), shape (n, r) (X validated by the caller, same d as the landmarks)."""
        return nystrom_features(X, self.landmarks, self.kernel, self.normalization, out=out)

    def apply(self, X, W):
        """phi(X) @ W for W of shape (r, s), without forming phi(X): K(X, Z) (M W) by the
        kernel operator's blocked product, so memory is O(m s) beyond X."""
        MW = np.ascontiguousarray(self.normalization @ W)
        return kernel_operator(self.landmarks, self.kernel).cross(X) @ MW


class NystromFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                      BaseEstimator):
    """Nystrom virtual samples F = K(X, Z) U Lambda^{-1/2} from k landmark points.

    A drop-in alternative to ``sklearn.kernel_approximation.Nystroem`` with k-means landmarks
    (LLSVM / LASN) and an explicit relative eigenvalue cutoff. Usable on its own in a Pipeline.

    Parameters
    ----------
    kernel : {"gaussian", "laplacian", "polynomial", "compact_gaussian"}, default "gaussian"
    h, gamma : float, optional
        Gaussian width, ``exp(-|x-y|^2 / (2 h^2)) = exp(-gamma |x-y|^2)``; give one (default h=1).
    degree, coef0 : polynomial kernel parameters.
    sigma, power : compact Gaussian parameters (``power`` was ``l``).
    n_components : int, default 100
        Number k of landmarks. Clipped to n_samples with a warning.
    landmarks : {"kmeans", "kmeans++", "uniform"}, default "kmeans"
        See :mod:`hsskern.lowrank.landmarks`.
    eig_cutoff : float, default 1e-6
        Relative eigenvalue cutoff of K(Z, Z) (LASN uses 1e-6); the output has
        ``n_components_ <= k`` columns.
    max_kmeans_samples : int, default 20000
        k-means runs on at most this many randomly chosen points.
    kmeans_iter : int, default 5
        Lloyd iterations.
    random_state : int, RandomState or None

    Attributes
    ----------
    components_ : ndarray of shape (n_landmarks_, n_features_in_)
        The landmarks Z.
    kernel_ : Kernel
    eigenvalues_ : ndarray of shape (n_components_,)
        Kept eigenvalues of K(Z, Z), decreasing.
    normalization_ : ndarray of shape (n_landmarks_, n_components_)
        M = U Lambda^{-1/2}.
    n_landmarks_ : int
    n_components_ : int
        Output dimension r (rank kept).
    feature_map_ : NystromMap
        The fitted map itself (the attributes above are its fields).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern.lowrank.nystrom import NystromFeatures
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> F = NystromFeatures(gamma=0.5, n_components=50, random_state=0).fit_transform(X)
    >>> F.shape
    (500, 50)
    """

    _parameter_constraints = {
        "kernel": [StrOptions(set(KERNELS))],
        "h": [Interval(Real, 0, None, closed="neither"), None],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "degree": [Interval(Integral, 1, None, closed="left"), None],
        "coef0": [Interval(Real, 0, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="neither"), None],
        "power": [Interval(Real, 0, None, closed="neither"), None],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "landmarks": [StrOptions(set(LANDMARK_METHODS))],
        "eig_cutoff": [Interval(Real, 0, 1, closed="left")],
        "max_kmeans_samples": [Interval(Integral, 1, None, closed="left")],
        "kmeans_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, kernel="gaussian", *, h=None, gamma=None, degree=None, coef0=1.0,
                 sigma=None, power=None, n_components=100, landmarks="kmeans", eig_cutoff=1e-6,
                 max_kmeans_samples=20000, kmeans_iter=5, random_state=None):
        self.kernel = kernel
        self.h = h
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.sigma = sigma
        self.power = power
        self.n_components = n_components
        self.landmarks = landmarks
        self.eig_cutoff = eig_cutoff
        self.max_kmeans_samples = max_kmeans_samples
        self.kmeans_iter = kmeans_iter
        self.random_state = random_state

    def fit(self, X, y=None):
        """Choose landmarks and build the mapping matrix.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        self._validate_params()
        X = validate_input(self, X)
        kernel = make_kernel(self.kernel, h=self.h, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, sigma=self.sigma, power=self.power,
                             n_features=X.shape[1])
        k = check_n_landmarks(self.n_components, X.shape[0])
        Z = select_landmarks(X, k, self.landmarks, max_samples=self.max_kmeans_samples,
                             n_iter=self.kmeans_iter, random_state=self.random_state)
        self._set_map(NystromMap.from_landmarks(Z, kernel, self.eig_cutoff))
        return self

    @classmethod
    def from_map(cls, feature_map, **params):
        """A fitted NystromFeatures holding ``feature_map`` (fitted elsewhere, e.g. by the
        Nystrom SVM), with ``params`` its constructor parameters (those that built the map)."""
        est = cls(**params)
        est.n_features_in_ = feature_map.landmarks.shape[1]
        est._set_map(feature_map)
        return est

    def _set_map(self, feature_map):
        self.feature_map_ = feature_map
        self.kernel_ = feature_map.kernel
        self.components_ = feature_map.landmarks
        self.normalization_ = feature_map.normalization
        self.eigenvalues_ = feature_map.eigenvalues
        self.n_landmarks_ = feature_map.n_landmarks
        self.n_components_ = feature_map.n_components
        self._n_features_out = self.n_components_

    def transform(self, X):
        """Virtual samples of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        F : ndarray of shape (n_samples, n_components_)
        """
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        return self.feature_map_.transform(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.input_tags.sparse = True  # CSR/CSC, densified within the memory budget
        return tags
