"""``SparseCholeskySVC``: kernel SVM through the sparse Cholesky factor of a compact kernel.

Abdellatif (2019), Algorithm 1: assemble the sparse Gram matrix of the compactly supported
Gaussian, factor K + beta I = P^T L L^T P with a fill-reducing ordering, train a linear SVM
(LIBLINEAR) on the rows of L, recover the kernel expansion by one sparse triangular solve and
predict with the sparse kernel between test and training points (neighbour queries). The
backend is :mod:`hsskern.solvers.paths.sparse_path`: the factor does not depend on C or on the
class, so :meth:`SparseCholeskySVC.fit_path` builds it once. This module holds the parameters
and builds that backend; the shared machinery is in :mod:`.base`.
"""
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions

from ..solvers.paths.sparse_path import SparseCholeskyBackend
from ..sparse.cholesky import BACKENDS, DEFAULT_BETA
from ..sparse.gram import compact_kernel
from .base import PathClassifier
from .widths import compact_sigma, resolve_gamma

__all__ = ["SparseCholeskySVC", "default_power"]


def default_power(n_features):
    """The thesis' exponent: the smallest odd integer >= floor(d/2) + 1 (Askey's bound)."""
    power = n_features // 2 + 1
    return power + 1 if power % 2 == 0 else power


class SparseCholeskySVC(PathClassifier):
    """Kernel SVM with a compactly supported Gaussian kernel, trained on its Cholesky features.

    k(x, y) = (1 - |x - y| / (3 sigma))_+^power exp(-|x - y|^2 / (2 sigma^2)) has a sparse Gram
    matrix; the rows of its sparse Cholesky factor (of K + beta I) are an exact feature map,
    so a linear SVM trains the kernel SVM. Prediction uses the kernel expansion
    f(z) = sum_i a_i k(x_i, z) + b over the support vectors, evaluated sparsely.

    Several classes are one-vs-rest (LIBLINEAR's rule), not SVC's one-vs-one: the sparse
    factor of all points is the feature map every class trains on, built once; one-vs-one
    would factor one Gram matrix per pair of classes. For SVC's multiclass model use
    :class:`HSSSVC` or :class:`ExactSVC`.

    Parameters
    ----------
    sigma : float or None, default None
        Kernel width; the support radius is 3 sigma. The cost grows about like sigma^d.
        None derives it from the data as SVC's ``gamma="scale"`` does (gamma = 1 /
        (n_features * X.var()) on the training X): the sigma whose kernel equals SVC's
        Gaussian at the typical distance of two points (see
        :func:`~hsskern.estimators.widths.compact_sigma`; about 1.8 / sqrt(2 gamma) in 2
        dimensions, 11 / sqrt(2 gamma) in 64), so that unscaled data need no tuning. That
        width is wide: the Gram matrix is then dense on most data, and its memory is
        checked against ``memory_budget`` before any work; give a smaller sigma for a
        sparse K (e.g. on standardized low-dimensional data).
    power : float, optional
        Exponent of the compact factor (formerly ``l``: still taken for one release, with a
        FutureWarning). Default: smallest odd integer >= floor(d/2) + 1 (the
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
    memory_budget : float or None, default None
        Bytes the Gram assembly may use (checked on a sampled estimate before anything else,
        in bounded work: sampled rows against sampled columns) and, with CHOLMOD, the factor
        (checked on its exact symbolic size before the numeric factorization); default 80%
        of the available memory. Prediction holds its output and works in chunks of test rows that fit the budget
        (a MemoryBudgetError when not even one row's does).
    probability : bool, default False
        Also fit Platt scaling for :meth:`predict_proba` (as :class:`~hsskern.HSSSVC`: 5
        stratified internal folds drawn with ``random_state``, each factored and solved at
        this C; one sigmoid per decision column).
    random_state : int, RandomState or None, default None
        Seeds LIBLINEAR's coordinate order, the memory estimate's row sample and the
        probability folds.
    class_weight : dict, "balanced" or None, default None
        As SVC: class c's points get the bound ``C * class_weight[c]`` (times their
        ``sample_weight``; LIBLINEAR's per-instance C on the factor's rows); "balanced" uses
        ``n_samples / (n_classes * np.bincount(y))``. ``fit(X, y, sample_weight=...)``
        weights the points the same way; points of weight 0 are dropped before the Gram
        matrix is assembled. A weighted fit factors K + beta W^-1 (shift beta / w_i), so that
        integer weights equal repeated rows (each copy is a row of K + beta I); the factor
        attributes (``beta_``, ``nnz_L_``, ...) describe that of K + beta I.
    verbose : int, default 0
        1: a line per stage (sizes, seconds) and per C.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    kernel_ : Kernel
        The compact Gaussian used (sigma, power).
    sigma_ : float
        The width used (``sigma``, or the one derived from the data when it is None).
    power_ : float
        Its exponent.
    beta_ : float
        Shift actually used (larger than ``beta`` if it had to grow).
    support_ : ndarray of shape (n_SV,)
        Indices of the training points with a nonzero coefficient, grouped by class in the
        order of ``classes_`` (by index within a class), as SVC's.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    n_support_ : ndarray of int32, shape (n_classes,)
        Support vectors per class.
    dual_coef_ : ndarray of shape (n_models, n_SV)
        y_i * lambda_i per one-vs-rest model (one model for binary problems, y_i = +1 for
        ``classes_[1]``; several classes: one row per class against the rest, where SVC's
        one-vs-one has n_classes - 1 rows). With the squared hinge these are the dual
        coefficients of that loss, not bounded by C.
    intercept_ : ndarray of shape (n_models,)
    nnz_K_, nnz_L_ : int
        Stored entries of the Gram matrix (both triangles) and of the factor.
    fill_in_ : float
        nnz(L) / nnz(K).
    backend_ : str
        Factorization backend used.
    n_iter_ : ndarray of shape (n_models,)
        LIBLINEAR iterations per one-vs-rest model.
    class_weight_ : ndarray of shape (n_classes,)
        Ones (no class weights yet), SVC's attribute.
    fit_status_ : int
        0 when LIBLINEAR converged for every model, else 1.
    shape_fit_ : tuple
        Shape of the X given to ``fit``.
    probA_, probB_ : ndarray of shape (n_models,)
        Platt's sigmoids (``probability=True`` only), as in :class:`~hsskern.HSSSVC`.
    fit_time_ : dict
        Seconds per stage: gram, factor, features, svm_and_recover. In :meth:`fit_path` the
        shared gram, factor and features count in the first model only.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import SparseCholeskySVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> clf = SparseCholeskySVC(sigma=0.5, C=10.0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        "sigma": [Interval(Real, 0, None, closed="neither"), None],
        "power": [None, Interval(Real, 0, None, closed="neither")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "loss": [StrOptions({"hinge", "squared_hinge"})],
        "dual": ["boolean", StrOptions({"auto"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "backend": [StrOptions(set(BACKENDS))],
        "ordering": [str],
        "memory_budget": [None, Interval(Real, 0, None, closed="neither")],
        "probability": ["boolean"],
        "random_state": ["random_state"],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "verbose": ["verbose"],
    }

    def __init__(self, sigma=None, *, power=None, C=1.0, beta=DEFAULT_BETA, loss="squared_hinge",
                 dual="auto", tol=1e-4, max_iter=1000, intercept_scaling=1.0, backend="auto",
                 ordering="amd", memory_budget=None, probability=False, random_state=None,
                 class_weight=None,
                 verbose=0):
        self.sigma = sigma
        self.power = power
        self.C = C
        self.beta = beta
        self.loss = loss
        self.dual = dual
        self.tol = tol
        self.max_iter = max_iter
        self.intercept_scaling = intercept_scaling
        self.backend = backend
        self.ordering = ordering
        self.memory_budget = memory_budget
        self.probability = probability
        self.random_state = random_state
        self.class_weight = class_weight
        self.verbose = verbose

    def _make_backend(self, X, values, purpose):
        d = X.shape[1]
        power = default_power(d) if self.power is None else self.power
        sigma = self.sigma
        if sigma is None:  # SVC's gamma="scale", turned into the compact kernel's width
            sigma = compact_sigma(resolve_gamma("scale", X), power)
        kernel = compact_kernel(float(sigma), power, d)
        return SparseCholeskyBackend(
            kernel, beta=self.beta, backend=self.backend, ordering=self.ordering,
            loss=self.loss, dual=self.dual, tol=self.tol, max_iter=self.max_iter,
            intercept_scaling=self.intercept_scaling, random_state=self.random_state,
            memory_budget=self.memory_budget, log=self._log if self.verbose >= 1 else None)

    def _set_backend_attributes(self, prepared, solution, model):
        factor = prepared.factor
        self.kernel_ = prepared.kernel
        self.power_ = self.kernel_.power
        self.sigma_ = self.kernel_.sigma
        self.beta_ = factor.beta
        self.backend_ = factor.backend
        self.nnz_K_ = factor.nnz_K
        self.nnz_L_ = factor.nnz_L
        self.fill_in_ = factor.fill_in
