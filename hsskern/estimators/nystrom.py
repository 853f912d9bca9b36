"""Nystrom-linearized kernel SVM (LLSVM / LASN) as scikit-learn estimators.

Training: landmarks -> F = K(X, Z) U Lambda^{-1/2} (:class:`~hsskern.lowrank.NystromFeatures`)
-> a linear SVM on F: semismooth Newton for the squared hinge loss (LASN), LIBLINEAR's dual
coordinate descent for the hinge loss (LLSVM). Prediction: F(X_new) coef_ + intercept_.

The feature matrix does not depend on C or on the class, so :meth:`NystromSVC.fit_path` and
:class:`NystromSVCCV` build it once and sweep C with warm starts, and one-vs-rest multiclass
reuses it for every class.
"""
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..kernels import KERNELS
from ..lowrank.landmarks import LANDMARK_METHODS
from ..lowrank.nystrom import NystromFeatures
from ..solvers.liblinear import l1svm_liblinear
from ..solvers.ssn import NEWTON_SOLVERS, l2svm_newton, l2svm_newton_path

LOSSES = ("squared_hinge", "hinge")

_FEATURE_PARAMS = ("kernel", "h", "gamma", "degree", "coef0", "sigma", "l", "n_components",
                   "landmarks", "eig_cutoff", "max_kmeans_samples", "kmeans_iter",
                   "random_state")

_COMMON_CONSTRAINTS = {
    **NystromFeatures._parameter_constraints,
    "loss": [StrOptions(set(LOSSES))],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "intercept_scaling": [Interval(Real, 0, None, closed="left")],
    "newton_solver": [StrOptions(set(NEWTON_SOLVERS))],
    "verbose": ["verbose"],
}


def _ovr_targets(y, classes):
    """Columns of +-1 targets: one column for two classes (+1 = classes[1]), else one per class."""
    if len(classes) == 2:
        return [np.where(y == classes[1], 1.0, -1.0)]
    return [np.where(y == c, 1.0, -1.0) for c in classes]


class _NystromBase(ClassifierMixin, BaseEstimator):
    """Validation, feature construction and prediction shared by NystromSVC and NystromSVCCV."""

    def _validate_Xy(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"the training labels hold only one class ({classes[0]!r}); "
                             "a classifier needs at least two")
        return X, y, classes

    def _build_features(self, X):
        feats = NystromFeatures(**{p: getattr(self, p) for p in _FEATURE_PARAMS})
        t0 = time.perf_counter()
        feats._fit_validated(X)
        F = feats._transform_validated(X)
        if self.verbose:
            print(f"[nystrom] {feats.n_landmarks_} landmarks ({self.landmarks}), rank "
                  f"{feats.n_components_}, F {F.shape[0]} x {F.shape[1]} in "
                  f"{time.perf_counter() - t0:.2f} s")
        return feats, F

    def _solve(self, F, t, C):
        if self.loss == "squared_hinge":
            res = l2svm_newton(F, t, C, tol=self.tol, max_iter=self.max_iter,
                               intercept_scaling=self.intercept_scaling,
                               newton_solver=self.newton_solver,
                               verbose=max(0, self.verbose - 1))
        else:
            res = l1svm_liblinear(F, t, C, tol=self.tol, max_iter=self.max_iter,
                                  intercept_scaling=self.intercept_scaling,
                                  random_state=self.random_state)
        return res

    def _solve_path(self, F, t, Cs):
        if self.loss == "squared_hinge":
            path = l2svm_newton_path(F, t, Cs, tol=self.tol, max_iter=self.max_iter,
                                     intercept_scaling=self.intercept_scaling,
                                     newton_solver=self.newton_solver,
                                     verbose=max(0, self.verbose - 1))
            return path.results
        return [self._solve(F, t, C) for C in np.sort(Cs)]

    def _features_of(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        return self.features_._transform_validated(X)

    def decision_function(self, X):
        """Signed distance to the separating hyperplane in feature space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
            For two classes, positive values favour ``classes_[1]``.
        """
        scores = self._features_of(X) @ self.coef_.T + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class labels, shape (n_samples,)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]


class NystromSVC(_NystromBase):
    """Kernel SVM linearized on k Nystrom landmarks (LLSVM / LASN).

    Parameters
    ----------
    kernel : {"gaussian", "laplacian", "polynomial", "compact_gaussian"}, default "gaussian"
    h, gamma : float, optional
        Gaussian width: ``exp(-|x-y|^2 / (2 h^2)) = exp(-gamma |x-y|^2)``; give one (default h=1).
    degree, coef0, sigma, l
        Other kernels' parameters (see :func:`hsskern.make_kernel`).
    n_components : int, default 100
        Number k of landmarks (clipped to n_samples with a warning).
    landmarks : {"kmeans", "kmeans++", "uniform"}, default "kmeans"
    loss : {"squared_hinge", "hinge"}, default "squared_hinge"
        ``"squared_hinge"``: L2-loss SVM by semismooth Newton (LASN). ``"hinge"``: L1-loss SVM by
        LIBLINEAR's dual coordinate descent (LLSVM).
    C : float, default 1.0
        Loss weight (not divided by n).
    tol : float, default 1e-4
        Squared hinge: relative gradient norm |grad f| <= tol |grad f(0)|. Hinge: LIBLINEAR's tol.
    max_iter : int, default 1000
        Newton steps (squared hinge) or LIBLINEAR iterations (hinge).
    intercept_scaling : float, default 1.0
        The intercept is the weight of a constant feature of this value, so it is regularized by
        (b / intercept_scaling)^2 / 2, as in LIBLINEAR. 0 fits no intercept.
    newton_solver : {"cg", "cholesky", "auto"}, default "auto"
        Squared hinge only: matrix-free CG per Newton step (LASN) or a direct Cholesky solve
        of I + 2C X_I^T X_I (see :func:`hsskern.solvers.ssn.l2svm_newton`). ``"auto"`` takes
        the Cholesky solve up to 4095 features (the Nystrom rank after the eigenvalue cut):
        Nystrom features make V ill-conditioned at large C, where CG's inexact steps stall
        (on skin the CG path did not reach the tolerance in 100 Newton steps at C >= 77,
        the direct solve needs 4-5), and along a C path the Gram matrix of the active rows is
        updated rather than recomputed.
    eig_cutoff : float, default 1e-6
        Relative eigenvalue cutoff of K(Z, Z).
    max_kmeans_samples : int, default 20000
    kmeans_iter : int, default 5
    random_state : int, RandomState or None
        Landmark selection (and LIBLINEAR's sweep order).
    verbose : int, default 0

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    features_ : NystromFeatures
        The fitted feature map (landmarks in ``features_.components_``).
    coef_ : ndarray of shape (1, n_components_) or (n_classes, n_components_)
        Weights on the virtual samples (one row per class for one-vs-rest).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : ndarray of shape (1,) or (n_classes,)
        Newton steps (or LIBLINEAR iterations) per binary problem.
    n_features_in_ : int
    Cs_, coef_path_, intercept_path_ : set by :meth:`fit_path` only.

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern.estimators.nystrom import NystromSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> clf = NystromSVC(gamma=1.0, n_components=50, C=10, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    _parameter_constraints = {**_COMMON_CONSTRAINTS,
                              "C": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, kernel="gaussian", *, h=None, gamma=None, degree=None, coef0=1.0,
                 sigma=None, l=None, n_components=100, landmarks="kmeans",
                 loss="squared_hinge", C=1.0, tol=1e-4, max_iter=1000, intercept_scaling=1.0,
                 newton_solver="auto", eig_cutoff=1e-6, max_kmeans_samples=20000, kmeans_iter=5,
                 random_state=None, verbose=0):
        self.kernel = kernel
        self.h = h
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.sigma = sigma
        self.l = l
        self.n_components = n_components
        self.landmarks = landmarks
        self.loss = loss
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.intercept_scaling = intercept_scaling
        self.newton_solver = newton_solver
        self.eig_cutoff = eig_cutoff
        self.max_kmeans_samples = max_kmeans_samples
        self.kmeans_iter = kmeans_iter
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y):
        """Choose landmarks, build the features and train one linear SVM per class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._validate_params()
        X, y, self.classes_ = self._validate_Xy(X, y)
        self.features_, F = self._build_features(X)
        results = [self._solve(F, t, self.C) for t in _ovr_targets(y, self.classes_)]
        self._set_coefs(results)
        return self

    def fit_path(self, X, y, Cs):
        """Fit for every C in ``Cs`` on one feature matrix, warm starting along increasing C.

        After the call ``coef_path_[i]`` / ``intercept_path_[i]`` hold the model for
        ``Cs_[i]`` (``Cs_`` is ``Cs`` sorted increasingly) and ``coef_`` / ``intercept_`` (used by
        ``predict``) the model for the largest C. Score all of them at once with
        :meth:`decision_function_path`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        Cs : array-like of shape (n_Cs,)
            Positive values.

        Returns
        -------
        self
        """
        self._validate_params()
        Cs = np.sort(np.asarray(Cs, dtype=np.float64).ravel())
        if Cs.size == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
            raise ValueError(f"Cs must be a non-empty list of finite positive values, got {Cs}")
        X, y, self.classes_ = self._validate_Xy(X, y)
        self.features_, F = self._build_features(X)
        paths = [self._solve_path(F, t, Cs) for t in _ovr_targets(y, self.classes_)]
        self.Cs_ = Cs
        self.coef_path_ = np.array([[res.w for res in path] for path in paths]).transpose(1, 0, 2)
        self.intercept_path_ = np.array([[res.b for res in path] for path in paths]).T
        self.n_iter_path_ = np.array([[res.n_iter for res in path] for path in paths]).T
        self._set_coefs([path[-1] for path in paths])
        return self

    def decision_function_path(self, X):
        """Decision values of every model of the last :meth:`fit_path`, features built once.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_Cs, n_samples) or (n_Cs, n_samples, n_classes)
        """
        check_is_fitted(self, "coef_path_")
        F = self._features_of(X)
        scores = np.einsum("nr,ckr->cnk", F, self.coef_path_) + self.intercept_path_[:, None, :]
        return scores[:, :, 0] if scores.shape[2] == 1 else scores

    def _set_coefs(self, results):
        self.coef_ = np.array([r.w for r in results])
        self.intercept_ = np.array([r.b for r in results])
        self.n_iter_ = np.array([r.n_iter for r in results])


class NystromSVCCV(_NystromBase):
    """:class:`NystromSVC` with C chosen by cross-validated accuracy.

    Each fold builds its landmarks and feature matrix once (from its training part only) and
    sweeps the whole C grid on it with warm starts; the best C is then refit on all the data.

    Parameters
    ----------
    Cs : array-like of shape (n_Cs,), optional
        Candidate C values (default ``np.logspace(-2, 3, 6)``).
    cv : int, cross-validation generator or iterable, default 3
        As in scikit-learn (an int gives stratified folds).
    Other parameters
        As in :class:`NystromSVC`.

    Attributes
    ----------
    C_ : float
        The chosen C (the smallest C reaching the best mean accuracy).
    Cs_ : ndarray of shape (n_Cs,)
        The grid, increasing.
    cv_scores_ : ndarray of shape (n_folds, n_Cs)
        Validation accuracy of every fold and C.
    best_score_ : float
    best_estimator_ : NystromSVC
        Refit on all the data with ``C_``.
    classes_, features_, coef_, intercept_, n_iter_, n_features_in_
        Those of ``best_estimator_``.
    """

    _parameter_constraints = {**_COMMON_CONSTRAINTS, "Cs": ["array-like", None],
                              "cv": ["cv_object"]}

    def __init__(self, kernel="gaussian", *, h=None, gamma=None, degree=None, coef0=1.0,
                 sigma=None, l=None, n_components=100, landmarks="kmeans",
                 loss="squared_hinge", Cs=None, cv=3, tol=1e-4, max_iter=1000,
                 intercept_scaling=1.0, newton_solver="auto", eig_cutoff=1e-6,
                 max_kmeans_samples=20000, kmeans_iter=5, random_state=None, verbose=0):
        self.kernel = kernel
        self.h = h
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.sigma = sigma
        self.l = l
        self.n_components = n_components
        self.landmarks = landmarks
        self.loss = loss
        self.Cs = Cs
        self.cv = cv
        self.tol = tol
        self.max_iter = max_iter
        self.intercept_scaling = intercept_scaling
        self.newton_solver = newton_solver
        self.eig_cutoff = eig_cutoff
        self.max_kmeans_samples = max_kmeans_samples
        self.kmeans_iter = kmeans_iter
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y):
        """Cross-validate C over ``Cs`` and refit the best model on all of (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._validate_params()
        Cs = np.logspace(-2, 3, 6) if self.Cs is None else np.asarray(self.Cs, dtype=float)
        Cs = np.sort(Cs.ravel())
        if Cs.size == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
            raise ValueError(f"Cs must be a non-empty list of finite positive values, got {Cs}")
        X, y, classes = self._validate_Xy(X, y)
        params = {k: v for k, v in self.get_params().items() if k not in ("Cs", "cv")}
        folds = list(check_cv(self.cv, y, classifier=True).split(X, y))
        scores = np.zeros((len(folds), Cs.size))
        for f, (tr, va) in enumerate(folds):
            if np.unique(y[tr]).size < 2:
                raise ValueError(f"fold {f} has a single class in its training part; "
                                 "use fewer folds")
            est = NystromSVC(**params).fit_path(X[tr], y[tr], Cs)
            dec = est.decision_function_path(X[va])
            for i in range(Cs.size):
                d = dec[i]
                pred = (est.classes_[(d > 0).astype(int)] if d.ndim == 1
                        else est.classes_[np.argmax(d, axis=1)])
                scores[f, i] = accuracy_score(y[va], pred)
        mean = scores.mean(axis=0)
        best = int(np.flatnonzero(mean >= mean.max() - 1e-12)[0])
        self.Cs_, self.cv_scores_ = Cs, scores
        self.C_, self.best_score_ = float(Cs[best]), float(mean[best])
        if self.verbose:
            print(f"[nystrom-cv] mean accuracy per C: {np.round(mean, 4)}; C_ = {self.C_:g}")
        self.best_estimator_ = NystromSVC(**params, C=self.C_).fit(X, y)
        for name in ("classes_", "features_", "coef_", "intercept_", "n_iter_"):
            setattr(self, name, getattr(self.best_estimator_, name))
        return self
