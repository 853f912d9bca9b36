"""``SparseCholeskySVC``: kernel SVM through the sparse Cholesky factor of a compact kernel.

Abdellatif (2019), Algorithm 1: assemble the sparse Gram matrix of the compactly supported
Gaussian, factor K + beta I = P^T L L^T P with a fill-reducing ordering, train a linear SVM
(LIBLINEAR) on the rows of L, recover the kernel expansion by one sparse triangular solve and
predict with the sparse kernel between test and training points (neighbour queries).
"""
import time
from numbers import Integral, Real

import numpy as np
from scipy.spatial import cKDTree
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..sparse.cholesky import BACKENDS, DEFAULT_BETA, sparse_cholesky
from ..sparse.gram import (_assemble_self, check_gram_budget, compact_cross_gram_apply,
                           compact_kernel, estimate_gram)
from ..sparse.svm import factor_features, linear_svm_on_factor

#: Recovered coefficients below this fraction of the largest are rounding noise (LIBLINEAR
#: accumulates w by updates; the triangular solve amplifies by at most cond(L) <= beta^-1/2),
#: not support vectors; dropping them changes a decision value by < 1e-9 * max|a| per neighbour.
_PRUNE_RTOL = 1e-9


def default_l(n_features):
    """The thesis' exponent: the smallest odd integer >= floor(d/2) + 1 (Askey's bound)."""
    l = n_features // 2 + 1
    return l + 1 if l % 2 == 0 else l


class SparseCholeskySVC(ClassifierMixin, BaseEstimator):
    """Kernel SVM with a compactly supported Gaussian kernel, trained on its Cholesky features.

    k(x, y) = (1 - |x - y| / (3 sigma))_+^l exp(-|x - y|^2 / (2 sigma^2)) has a sparse Gram
    matrix; the rows of its sparse Cholesky factor (of K + beta I) are an exact feature map,
    so a linear SVM trains the kernel SVM. Prediction uses the kernel expansion
    f(z) = sum_i a_i k(x_i, z) + b over the support vectors, evaluated sparsely.

    Parameters
    ----------
    sigma : float, default 1.0
        Kernel width; the support radius is 3 sigma. The cost grows about like sigma^d.
    l : float, optional
        Exponent of the compact factor. Default: smallest odd integer >= floor(d/2) + 1 (the
        thesis' choice); smaller values may make K indefinite (then beta grows, with a warning).
    C : float, default 1.0
        Regularization (the thesis uses 1).
    beta : float, default 1e-4
        Diagonal shift of K before the factorization (the thesis' value).
    loss : {"squared_hinge", "hinge"}, default "squared_hinge"
        Loss of the linear SVM (LIBLINEAR); "hinge" is solved in the dual.
    dual : bool or "auto", default "auto"
        LIBLINEAR formulation for the squared hinge (ignored for "hinge"). "auto" picks the
        dual coordinate descent, much faster than the primal Newton on the sparse rows of L.
    tol : float, default 1e-4
        LIBLINEAR stopping tolerance.
    max_iter : int, default 1000
        LIBLINEAR iteration limit.
    intercept_scaling : float, default 1.0
        Value of LIBLINEAR's bias feature (the bias is regularized like the weights).
    backend : {"auto", "cholmod", "scipy"}, default "auto"
        Sparse Cholesky backend; "auto" prefers CHOLMOD (scikit-sparse) when importable.
    ordering : str, default "amd"
        Fill-reducing ordering for CHOLMOD ("amd", "metis", "best", ...).
    max_memory : int, optional
        Bytes the Gram assembly may use (checked on a sampled estimate before allocating) and,
        with CHOLMOD, the factor (checked on its exact symbolic size before the numeric
        factorization); default 80% of the available memory.
    random_state : int, RandomState or None, default None
        Seeds LIBLINEAR's coordinate order and the memory estimate's row sample.
    verbose : int, default 0
        Print stage timings and sizes when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    kernel_ : Kernel
        The compact Gaussian used (sigma, l).
    l_ : float
    beta_ : float
        Shift actually used (larger than ``beta`` if it had to grow).
    support_ : ndarray of shape (n_SV,)
        Indices of the training points with a nonzero coefficient.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    dual_coef_ : ndarray of shape (n_models, n_SV)
        y_i * lambda_i per one-vs-rest model (one model for binary problems).
    intercept_ : ndarray of shape (n_models,)
    nnz_K_, nnz_L_ : int
        Stored entries of the Gram matrix (both triangles) and of the factor.
    fill_in_ : float
        nnz(L) / nnz(K).
    backend_ : str
        Factorization backend used.
    n_iter_ : int
        LIBLINEAR iterations.
    timings_ : dict
        Seconds spent in the stages: gram, factor, features, svm, recover.
    """

    _parameter_constraints = {
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "l": [None, Interval(Real, 0, None, closed="neither")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "loss": [StrOptions({"hinge", "squared_hinge"})],
        "dual": ["boolean", StrOptions({"auto"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "backend": [StrOptions(set(BACKENDS))],
        "ordering": [str],
        "max_memory": [None, Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, sigma=1.0, *, l=None, C=1.0, beta=DEFAULT_BETA, loss="squared_hinge",
                 dual="auto", tol=1e-4, max_iter=1000, intercept_scaling=1.0, backend="auto",
                 ordering="amd", max_memory=None, random_state=None, verbose=0):
        self.sigma = sigma
        self.l = l
        self.C = C
        self.beta = beta
        self.loss = loss
        self.dual = dual
        self.tol = tol
        self.max_iter = max_iter
        self.intercept_scaling = intercept_scaling
        self.backend = backend
        self.ordering = ordering
        self.max_memory = max_memory
        self.random_state = random_state
        self.verbose = verbose

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit on X (n_samples, n_features) and labels y (n_samples,)."""
        state = self._prepare(X, y)
        res = self._train(state, self.C)
        self._set_fitted(state, res)
        return self

    def fit_path(self, X, y, Cs):
        """Fit one model per C, assembling and factoring K + beta I only once.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        Cs : sequence of float
            Regularization values, each > 0.

        Returns
        -------
        list of SparseCholeskySVC
            Fitted copies of this estimator, ``C`` set to each value (``self`` is not fitted).
        """
        Cs = np.atleast_1d(np.asarray(Cs, dtype=np.float64))
        if Cs.ndim != 1 or Cs.size == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
            raise ValueError("Cs must be a non-empty 1-D sequence of finite values > 0")
        proto = clone(self)  # validate_data records n_features_in_ on it, not on self
        state = proto._prepare(X, y)
        models = []
        for C in Cs:
            est = clone(self).set_params(C=float(C))
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(proto, attr):
                    setattr(est, attr, getattr(proto, attr))
            est._set_fitted(state, est._train(state, float(C)))
            models.append(est)
        return models

    def _log(self, msg):
        if self.verbose:
            print(f"[SparseCholeskySVC] {msg}", flush=True)

    def _prepare(self, X, y):
        """Validate, assemble K, factor it: the C-independent part of fit."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=False)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError("SparseCholeskySVC needs samples of at least 2 classes in the data, "
                             f"but the data contains only one class: {classes[0]!r}")
        d = X.shape[1]
        l = default_l(d) if self.l is None else self.l
        kernel = compact_kernel(float(self.sigma), l, d)
        seed = self.random_state if isinstance(self.random_state, Integral) else 0
        timings = {}
        t0 = time.perf_counter()
        tree = cKDTree(X)
        est = estimate_gram(X, kernel, tree=tree, random_state=seed)
        check_gram_budget(est, self.max_memory)
        K = _assemble_self(X, kernel, tree)
        timings["gram"] = time.perf_counter() - t0
        self._log(f"Gram {K.shape[0]} x {K.shape[0]}: nnz={K.nnz} "
                  f"(estimated {est.nnz}), {timings['gram']:.2f} s")
        t0 = time.perf_counter()
        factor = sparse_cholesky(K, self.beta, backend=self.backend, ordering=self.ordering,
                                 on_not_pd="increase", max_memory=self.max_memory)
        del K
        timings["factor"] = time.perf_counter() - t0
        self._log(f"{factor!r}, {timings['factor']:.2f} s")
        t0 = time.perf_counter()
        features = factor_features(factor)
        timings["features"] = time.perf_counter() - t0
        return dict(X=X, classes=classes, codes=codes.astype(np.intp), kernel=kernel,
                    factor=factor, features=features, timings=timings)

    def _train(self, state, C):
        t0 = time.perf_counter()
        res = linear_svm_on_factor(state["factor"], state["codes"], C,
                                   features=state["features"], loss=self.loss, dual=self.dual,
                                   tol=self.tol, max_iter=self.max_iter,
                                   intercept_scaling=self.intercept_scaling,
                                   random_state=self.random_state)
        res.timings = {"svm_and_recover": time.perf_counter() - t0}
        self._log(f"C={C:g}: LIBLINEAR {res.n_iter} iterations + recovery, "
                  f"{res.timings['svm_and_recover']:.2f} s")
        return res

    def _set_fitted(self, state, res):
        factor = state["factor"]
        A = res.dual_coef
        scale = np.max(np.abs(A)) if A.size else 0.0
        support = np.flatnonzero(np.any(np.abs(A) > _PRUNE_RTOL * scale, axis=0))
        self.classes_ = state["classes"]
        self.kernel_ = state["kernel"]
        self.l_ = self.kernel_.l
        self.beta_ = factor.beta
        self.backend_ = factor.backend
        self.nnz_K_ = factor.nnz_K
        self.nnz_L_ = factor.nnz_L
        self.fill_in_ = factor.fill_in
        self.support_ = support
        self.support_vectors_ = state["X"][support]
        self.dual_coef_ = np.ascontiguousarray(A[:, support])
        self.intercept_ = res.intercept
        self.n_iter_ = res.n_iter
        self.timings_ = {**state["timings"], **res.timings}
        self._sv_tree = cKDTree(self.support_vectors_)

    # -- prediction ------------------------------------------------------------------------
    def decision_function(self, X):
        """Decision values, shape (n_samples,) for binary problems, else (n_samples, n_classes)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        dec = compact_cross_gram_apply(X, self.support_vectors_, self.kernel_,
                                       self.dual_coef_.T, tree=self._sv_tree)
        dec += self.intercept_
        return dec.ravel() if dec.shape[1] == 1 else dec

    def predict(self, X):
        """Class labels, shape (n_samples,)."""
        dec = self.decision_function(X)
        idx = (dec > 0).astype(np.intp) if dec.ndim == 1 else np.argmax(dec, axis=1)
        return self.classes_[idx]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
