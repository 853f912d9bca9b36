"""Nystrom feature map: the "virtual samples" F = K(X, Z) U Lambda^{-1/2} of LLSVM / LASN.

With the eigendecomposition K(Z, Z) = U Lambda U^T (eigenvalues below ``eig_cutoff * lambda_max``
dropped), the rows of F satisfy F F^T = K(X, Z) K(Z, Z)^+ K(Z, X), the Nystrom approximation of
K. A linear SVM trained on F is therefore the kernel SVM with the Nystrom kernel (Zhang et al.,
Proposition 1; Jiang & Li, Theorem 1), and with Z = X and no cut it is the exact kernel SVM.

F is computed row block by row block through the kernel operator's ``cross(...).to_dense()``
(compiled, threaded tiles) and one BLAS product per block, so the only large allocation is F.
"""
import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from numbers import Integral, Real

from ..kernels import KERNELS, kernel_operator, make_kernel
from ..utils._memory import check_memory
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


class NystromFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Nystrom virtual samples F = K(X, Z) U Lambda^{-1/2} from k landmark points.

    A drop-in alternative to ``sklearn.kernel_approximation.Nystroem`` with k-means landmarks
    (LLSVM / LASN) and an explicit relative eigenvalue cutoff. Usable on its own in a Pipeline.

    Parameters
    ----------
    kernel : {"gaussian", "laplacian", "polynomial", "compact_gaussian"}, default "gaussian"
    h, gamma : float, optional
        Gaussian width, ``exp(-|x-y|^2 / (2 h^2)) = exp(-gamma |x-y|^2)``; give one (default h=1).
    degree, coef0 : polynomial kernel parameters.
    sigma, l : compact Gaussian parameters.
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
        "l": [Interval(Real, 0, None, closed="neither"), None],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "landmarks": [StrOptions(set(LANDMARK_METHODS))],
        "eig_cutoff": [Interval(Real, 0, 1, closed="left")],
        "max_kmeans_samples": [Interval(Integral, 1, None, closed="left")],
        "kmeans_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, kernel="gaussian", *, h=None, gamma=None, degree=None, coef0=1.0,
                 sigma=None, l=None, n_components=100, landmarks="kmeans", eig_cutoff=1e-6,
                 max_kmeans_samples=20000, kmeans_iter=5, random_state=None):
        self.kernel = kernel
        self.h = h
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.sigma = sigma
        self.l = l
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
        X = validate_data(self, X, dtype=np.float64, order="C")
        self._fit_validated(X)
        return self

    def _fit_validated(self, X):
        # shared with the SVC estimators, which validate X themselves
        self.kernel_ = make_kernel(self.kernel, h=self.h, gamma=self.gamma, degree=self.degree,
                                   coef0=self.coef0, sigma=self.sigma, l=self.l,
                                   n_features=X.shape[1])
        k = check_n_landmarks(self.n_components, X.shape[0])
        Z = select_landmarks(X, k, self.landmarks, max_samples=self.max_kmeans_samples,
                             n_iter=self.kmeans_iter, random_state=self.random_state)
        K_zz = kernel_operator(Z, self.kernel_).to_dense()
        self.normalization_, self.eigenvalues_ = nystrom_map(K_zz, self.eig_cutoff)
        self.components_ = Z
        self.n_landmarks_ = Z.shape[0]
        self.n_components_ = self.normalization_.shape[1]
        self._n_features_out = self.n_components_
        return self

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
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        return self._transform_validated(X)

    def _transform_validated(self, X):
        return nystrom_features(X, self.components_, self.kernel_, self.normalization_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
