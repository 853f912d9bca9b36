"""Fast polynomial kernel classification (FPC) as scikit-learn estimators.

``FPCClassifier`` fits f(x) = sum_j u_j (1 + eta_j . x')^s on n = min(C(s+d, s), m) centers by
the proximal ADMM of :func:`hsskern.solvers.engines.fpc_admm.fpc_admm` (Zeng, Wu, Lin, Zhou, Algorithm 1).
There is no C: the capacity is set by the degree s alone. ``FPCClassifierCV`` chooses s by
cross-validation over 1..s_max, s_max = min(ceil((m / log m)^(1/d)), 10) (the paper's range),
computing the features of every s once and reusing them for all folds and the refit.

Three departures from the paper (measured in bench/fpc.py; see the documentation's design
notes):

* ``alpha = beta = "auto"`` (1/m) by default instead of 1: the paper's parameters on the *mean*
  hinge loss stop after 2-3 iterations near the ridge least-squares start; 1/m (its unit
  parameters on the summed loss) runs to the hinge minimizer. The CV batches its folds into
  one ADMM so the extra iterations stay cheap.
* Repeated (x, y) rows are fitted once with their counts, which gives exactly the same ADMM
  iterates; "first n centers" means the first n distinct points.
* ``FPCClassifierCV`` starts each degree's ADMM from the (v, w) the previous degree ended at
  (``warm_degrees``) rather than the paper's (0, y, 0): fewer iterations on nearly separable
  data, the same stopping rule.
"""
import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..exceptions import MemoryBudgetError
from ..features.polynomial import (CENTER_SCHEMES, SCALINGS, check_feature_memory,
                                   check_features_representable)
from ..solvers.paths.fpc_path import FPCBackend, admm_scale, fpc_degree_search
from ..solvers.paths.path import FeatureModel
from .base import PathClassifier, encode_labels, labels_from_decision, point_weights
from .cv import PathClassifierCV, accuracy

__all__ = ["FPCClassifier", "FPCClassifierCV"]

_COMMON_CONSTRAINTS = {
    "centers": [StrOptions(set(CENTER_SCHEMES))],
    "scaling": [StrOptions(set(SCALINGS))],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    "beta": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    "memory_budget": [Interval(Real, 0, None, closed="neither"), None],
    "probability": ["boolean"],
    "random_state": ["random_state"],
    "class_weight": [StrOptions({"balanced"}), dict, None],
    "verbose": ["verbose"],
}

_BACKEND_FIELDS = ("centers", "scaling", "tol", "max_iter", "alpha", "beta", "memory_budget",
                   "random_state", "verbose")


class FPCClassifier(PathClassifier):
    """Fast polynomial kernel classifier: hinge loss on C(s+d, s) polynomial-kernel centers.

    Inputs are min-max scaled with the training box (see
    :mod:`hsskern.features.polynomial` for the scalings), n = min(C(s+d, s), m) centers are
    chosen, A_ij = (1 + x_i . eta_j)^s is computed by the polynomial ``KernelOperator``'s
    ``cross`` block, and the un-regularized hinge loss (1/m) sum_i (1 - y_i (A u)_i)_+ is
    minimized by the proximal ADMM (13)-(15) with one Cholesky factor of beta A^T A + alpha I.
    Multiclass problems are one-vs-rest, all classes sharing the features and the factor
    (one-vs-one would build them per pair of classes: a linear model on shared features
    gains nothing from it; SVC's one-vs-one model is :class:`HSSSVC`'s).

    Parameters
    ----------
    degree : int, default 3
        Polynomial degree s (the only capacity parameter; the paper's toy problem uses 9).
    centers : {"first", "random", "uniform"}, default "first"
        Centers: the first n training points (the paper's default), n random training points,
        or n points uniform in the training bounding box.
    scaling : {"auto", "cube", "ball", "simplex", "none"}, default "auto"
        Input scaling (fitted on the training set and kept in ``feature_map_``).
    tol : float, default 5e-4
        Stop when ||p^{k+1} - p^k||_H^2 < tol (the paper's rule and default).
    max_iter : int, default 100
        Iteration cap.
    alpha, beta : float or "auto", default "auto"
        Proximal and augmented-Lagrangian parameters of the ADMM. "auto" is 1/m for m
        training rows: the paper's alpha = beta = 1 applied to the summed hinge loss, which
        reaches the hinge minimizer (the paper's 1 and 1 on the mean loss stop near the ridge
        least-squares start). Pass 1.0 and 1.0 for the paper's setting.
    memory_budget : float, optional
        Bytes allowed for the m x n features, Gram matrix and factor (default: 80% of the
        available memory). Checked before allocating; the error suggests a degree that fits.
    probability : bool, default False
        Also fit Platt scaling for :meth:`predict_proba` (as :class:`~hsskern.HSSSVC`: 5
        stratified internal folds drawn with ``random_state``, each with its own features and
        ADMM; one sigmoid per decision column).
    random_state : int, RandomState or None
        Seeds the "random" and "uniform" center schemes (and the probability folds).
    class_weight : dict, "balanced" or None, default None
        As SVC: class c's points count ``class_weight[c]`` times in the hinge loss (times
        their ``sample_weight``); "balanced" uses ``n_samples / (n_classes *
        np.bincount(y))``. ``fit(X, y, sample_weight=...)`` weights the loss the same way:
        (1 / W) sum_i w_i (1 - y_i f(x_i))_+, W = sum w (FPC has no C: only relative weights
        matter). Integer weights give exactly the run on repeated rows; points of weight 0
        are dropped before the scaling and the centers are chosen.
    verbose : int, default 0

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_centers) or (n_classes, n_centers)
        Coefficients u on the centers (one row per one-vs-rest problem).
    centers_ : ndarray of shape (n_centers, n_features)
        Centers in scaled coordinates.
    feature_map_ : PolynomialFeatureMap
        Fitted scaler, centers and polynomial kernel operator.
    n_iter_ : ndarray of shape (n_problems,)
    history_ : list of ndarray
        ||p^{k+1} - p^k||_H^2 per iteration, per one-vs-rest problem.
    objective_ : ndarray of shape (n_problems,)
        Final hinge objective of problem (6).
    converged_ : ndarray of bool, shape (n_problems,)
    intercept_ : ndarray of zeros, shape (n_problems,)
        FPC has no separate intercept (the constant is one of the polynomial features).
    class_weight_ : ndarray of shape (n_classes,)
        Ones (no class weights yet), SVC's attribute.
    fit_status_ : int
        0 when every problem met ``tol``, else 1 (SVC's meaning).
    shape_fit_ : tuple
        Shape of the X given to ``fit``.
    probA_, probB_ : ndarray of shape (n_problems,)
        Platt's sigmoids (``probability=True`` only), as in :class:`~hsskern.HSSSVC`.
    n_features_in_, feature_names_in_

    The model is primal (coefficients on polynomial-kernel centres), so SVC's ``support_``,
    ``support_vectors_``, ``n_support_`` and ``dual_coef_`` do not exist.

    FPC has no C, so it has no ``fit_path``; its path is over the degree
    (:class:`FPCClassifierCV`).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern.estimators.fpc import FPCClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((500, 2)); y = (X[:, 1] > X[:, 0] ** 2).astype(int)
    >>> FPCClassifier(degree=4).fit(X, y).score(X, y) > 0.95
    True
    """

    _parameter_constraints = {"degree": [Interval(Integral, 1, None, closed="left")],
                              **_COMMON_CONSTRAINTS}
    _path_param = None

    def __init__(self, degree=3, *, centers="first", scaling="auto", tol=5e-4, max_iter=100,
                 alpha="auto", beta="auto", memory_budget=None, probability=False,
                 random_state=None, class_weight=None, verbose=0):
        self.degree = degree
        self.centers = centers
        self.scaling = scaling
        self.tol = tol
        self.max_iter = max_iter
        self.alpha = alpha
        self.beta = beta
        self.memory_budget = memory_budget
        self.probability = probability
        self.random_state = random_state
        self.class_weight = class_weight
        self.verbose = verbose

    def _make_backend(self, X, values, purpose):
        return FPCBackend(self.degree, **{f: getattr(self, f) for f in _BACKEND_FIELDS})

    def _set_backend_attributes(self, prepared, solution, model):
        self._set_solution(prepared.feature_map, solution)
        self._log(1, f"degree {self.degree}, {prepared.feature_map.n_centers} centers, "
                     f"iterations {self.n_iter_.tolist()}")

    def _set_solution(self, fmap, solution):
        self.feature_map_ = fmap
        self.centers_ = fmap.centers
        self.coef_ = np.array(solution.coef)
        self.n_iter_ = solution.n_iter.copy()
        self.history_ = list(solution.info["history"])
        self.objective_ = np.array(solution.info["objective"])
        self.converged_ = solution.converged.copy()



def _drop_weightless(X, y, splits, sample_weight, class_weight):
    """The FPC search's rows and per-fit weights: (X, y, splits, sample_weight, fit_weights).

    Each fold's training weights are computed over its own rows ("balanced" on its training
    labels, as :func:`~hsskern.estimators.cv.score_fold`), the refit's over all rows. Rows
    whose refit weight is 0 (sample weight 0, or a class weight of 0) weigh 0 in every fold
    and in every test score: they are removed, so the refit's scaling and centers are
    ``FPCClassifier.fit``'s, which drops them too. ``fit_weights`` lists one array (or None)
    per split, aligned with its new ``train``, then the refit's.
    """
    n = y.shape[0]
    sw = sample_weight
    fold_w = [point_weights(y[tr], np.unique(y[tr]), class_weight,
                            None if sw is None else sw[tr]) for tr, _ in splits]
    full = point_weights(y, np.unique(y), class_weight, sw)
    if full is None or np.all(full > 0):
        return X, y, splits, sw, fold_w + [full]
    keep = full > 0
    new = np.full(n, -1)
    new[keep] = np.arange(int(keep.sum()))
    out_splits, out_w = [], []
    for (tr, te), w in zip(splits, fold_w):
        k_tr = keep[tr]
        out_splits.append((new[tr[k_tr]], new[te[keep[te]]]))
        out_w.append(None if w is None else w[k_tr])
    return (X[keep], y[keep], out_splits, None if sw is None else sw[keep],
            out_w + [full[keep]])


class FPCClassifierCV(PathClassifierCV):
    """FPC with the degree s chosen by cross-validated accuracy over 1..s_max.

    s_max = min(ceil((m / log m)^(1/d)), 10) as in the paper (Sec. VI-A). For each s the
    m x n features are computed once; with k-fold splits every fold's Gram matrix A_f^T A_f is
    formed once and each training Gram is A^T A - A_f^T A_f, so the whole search costs one
    Gram pass per degree. All folds' problems and the full-data refit then run as masked
    columns of *one* ADMM on the full A (each column is exactly the run on its rows, see
    :func:`~hsskern.solvers.engines.fpc_admm.fpc_admm`): every iteration is two passes over A for all of
    them, there are no training-fold copies of A, the held-out decision values come out of the
    run, and the refit is free.

    Parameters
    ----------
    degrees : array-like of int, optional
        Candidate degrees (default 1..s_max). Candidates whose features exceed the memory
        budget are skipped with a warning.
    cv : int, float or CV splitter, default 5
        int k: ``StratifiedKFold(k)``, unshuffled, as ``GridSearchCV``'s; float in (0, 1):
        a single stratified hold-out of that fraction (the paper's validation split),
        shuffled with ``random_state``; or any scikit-learn splitter (with ``fit``'s
        ``groups``): the policy of every ``*CV`` estimator,
        :func:`hsskern.estimators.cv.make_splits`.
    centers, scaling, tol, max_iter, alpha, beta, memory_budget, probability,
    random_state, class_weight, verbose
        As in :class:`FPCClassifier`. ``random_state`` also shuffles a float ``cv``'s hold-out;
        ``probability`` fits the sigmoids of the refitted model only.
        ``class_weight`` applies in every fold ("balanced" over the fold's training labels)
        and the refit; ``fit``'s ``sample_weight`` follows its rows into the folds (the
        validation accuracy is weighted by the test rows' weights) and the refit. Rows whose
        weight in the refit is 0 are dropped before the search (they weigh 0 in every fold).
    refit : bool, default True
        Keep the full-data model of the best degree as ``best_estimator_`` (needed to predict).
    warm_degrees : bool, default True
        Start each degree's ADMM (every fold and the refit) from the split variable v and the
        multiplier w the previous degree ended at, with u = 0, instead of the paper's
        (0, y, 0). v and w are indexed by training rows, which all degrees share; u is not
        (other centers). The first u-step then fits the new features to the previous degree's
        decision values, which the larger polynomial space contains. Any start converges
        (Theorem 2); this one is near the answer when the data are nearly separable, where
        cold starts are slowest. The stopping rule is the same, so the fits differ from
        cold-started ones by about what ``tol`` allows.

    Attributes
    ----------
    degree_ : int
        Chosen degree.
    best_score_ : float
        Its mean validation accuracy.
    cv_results_ : dict of ndarray
        ``GridSearchCV``'s format, one entry per degree (increasing): ``params``,
        ``param_degree``, ``split{i}_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time``, ``std_fit_time``, ``mean_setup_time``
        (features and Gram matrices), ``mean_solve_time`` (factors + the batched ADMM,
        divided by the number of splits), ``mean_n_iter``; and ``n_centers``.
    best_index_, best_params_ : the first best degree (ties go to the smaller degree)
    best_estimator_ : FPCClassifier
        Fitted on all of X with ``degree_`` (if ``refit``); with ``warm_degrees`` its ADMM
        started from the previous degree's refit, so its coefficients agree with
        ``FPCClassifier(degree_).fit(X, y)`` to about what ``tol`` allows, not to rounding.
    n_iter_ : ndarray
        ADMM iterations of the refit (per one-vs-rest problem), or the rounded mean over the
        folds of the best degree when ``refit=False``.
    classes_, n_features_in_

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import FPCClassifierCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((500, 2)); y = (X[:, 1] > X[:, 0] ** 2).astype(int)
    >>> cv = FPCClassifierCV(degrees=[2, 4], max_iter=300, random_state=0).fit(X, y)
    >>> cv.degree_ in (2, 4), bool(cv.score(X, y) > 0.95)
    (True, True)
    """

    _parameter_constraints = {
        "degrees": ["array-like", None],
        "cv": [Interval(Integral, 2, None, closed="left"),
               Interval(Real, 0, 1, closed="neither"), "cv_object"],
        "refit": ["boolean"],
        "warm_degrees": ["boolean"],
        **_COMMON_CONSTRAINTS,
    }
    _estimator = FPCClassifier
    _path_param = None

    def __init__(self, degrees=None, *, cv=5, centers="first", scaling="auto", tol=5e-4,
                 max_iter=100, alpha="auto", beta="auto", memory_budget=None, refit=True,
                 warm_degrees=True, probability=False, random_state=None, class_weight=None,
                 verbose=0):
        self.degrees = degrees
        self.cv = cv
        self.centers = centers
        self.scaling = scaling
        self.tol = tol
        self.max_iter = max_iter
        self.alpha = alpha
        self.beta = beta
        self.memory_budget = memory_budget
        self.probability = probability
        self.refit = refit
        self.warm_degrees = warm_degrees
        self.random_state = random_state
        self.class_weight = class_weight
        self.verbose = verbose

    @staticmethod
    def max_degree(n_samples, n_features):
        """The paper's s_max = min(ceil((m / log m)^(1/d)), 10) (at least 1)."""
        m = max(int(n_samples), 3)
        return int(max(1, min(math.ceil((m / math.log(m)) ** (1.0 / n_features)), 10)))

    def _check_degrees(self):
        if self.degrees is None:
            return None
        arr = np.asarray(self.degrees).ravel()
        if arr.size == 0 or arr.dtype.kind not in "iu" or (arr < 1).any():
            raise ValueError(f"degrees must be positive integers, got {self.degrees!r}")
        return sorted(set(int(s) for s in arr))

    def _grid(self, X, Y):
        m, d = X.shape
        degrees = self._check_degrees() or list(range(1, self.max_degree(m, d) + 1))
        cv = 5 if self.cv is None else self.cv  # check_cv's default, as the splits'
        n_fits = (cv if isinstance(cv, Integral) else 2) + int(self.refit)
        for s in degrees:  # every degree's features must fit float64, before any work
            check_features_representable(X, s, self.scaling, admm_scale(self.alpha, m),
                                         admm_scale(self.beta, m))
        kept, first_error = [], None
        for s in degrees:
            try:
                check_feature_memory(m, d, s, self.memory_budget, copies=1.0 + 1.0 / n_fits,
                                     n_problems=Y.shape[1] * n_fits, n_square=n_fits + 3)
                kept.append(s)
            except MemoryBudgetError as exc:
                first_error = first_error or exc
                warnings.warn(f"FPCClassifierCV skips degree {s}: {exc}", stacklevel=4)
        if not kept:
            raise first_error
        return [{"degree": s} for s in kept]

    def _score_grid(self, X, y, splits, grid, values, sample_weight=None, class_weight=None):
        """Every degree's folds and the refit as masked columns of one ADMM per degree.

        Weights as :func:`~hsskern.estimators.cv.score_fold` takes them: each fold's
        training rows weigh their sample weight times the fold's class weight, the refit's
        rows theirs over all of y, and a fold's accuracy is weighted by its test rows'
        sample weights.
        """
        fit_weights, scorable = None, [True] * len(splits)
        if sample_weight is not None or class_weight is not None:
            X, y, splits, sample_weight, fit_weights = _drop_weightless(
                X, y, splits, sample_weight, class_weight)
            for s, ((tr, te), w) in enumerate(zip(splits, fit_weights)):
                live = tr if w is None else tr[w > 0]
                scorable[s] = np.unique(y[live]).size >= 2 and (
                    sample_weight is None or sample_weight[te].sum() > 0)
            if not all(scorable):  # such a fold cannot be fitted: it trains on nothing
                fit_weights = [w if ok else np.ones(len(tr))
                               for ok, w, (tr, _) in zip(scorable, fit_weights, splits)] + [
                    fit_weights[-1]]
        classes, Y = encode_labels(y)
        backend = FPCBackend(**{f: getattr(self, f) for f in _BACKEND_FIELDS})
        degrees = [p["degree"] for p in grid]
        found = fpc_degree_search(X, Y, splits, degrees, backend, refit=self.refit,
                                  warm_degrees=self.warm_degrees, log=self._log,
                                  fit_weights=fit_weights)
        cells, self._refits, self._n_centers = {}, {}, []
        for ig, entry in enumerate(found):
            self._n_centers.append(entry["n_centers"])
            self._refits[ig] = entry["refit"]
            for s, (_, te) in enumerate(splits):
                pred = labels_from_decision(classes, entry["decision"][s])
                score = (np.nan if not scorable[s] else accuracy(
                    y[te], [pred], None if sample_weight is None else sample_weight[te])[0])
                cells[ig, s] = {"scores": np.array([score]),
                                "solve_time": np.array([entry["solve_time"]]),
                                "n_iter": np.array([entry["n_iter"][s]]),
                                "setup_time": entry["setup_time"]}
        return cells

    def _set_best_attributes(self, params):
        self.cv_results_["n_centers"] = np.array(self._n_centers)
        self.degree_ = params["degree"]
        del self._n_centers

    def _refit(self, X, y, sample_weight=None):
        """The refit came out of the search (the batched ADMM's last columns, on the
        weights of all rows)."""
        est = self._base_estimator(self.best_params_)
        est.classes_ = self.classes_
        if hasattr(self, "class_weight_"):
            est.class_weight_ = self.class_weight_
        est.n_features_in_ = self.n_features_in_  # the feature names: carry_feature_names
        fmap, solution = self._refits[self.best_index_]
        del self._refits
        est._model = FeatureModel(fmap, [solution])
        est.intercept_ = solution.intercept.copy()
        est._set_solution(fmap, solution)
        classes, Y = encode_labels(y)
        est.shape_fit_ = X.shape
        est._set_svc_attributes(classes, est._model, solution, Y)
        if self.probability:  # the search's batched ADMM has no internal folds: fit them
            w = point_weights(y, classes, self.class_weight, sample_weight)
            if w is not None:  # the refit's rows: those of positive weight, as fit keeps
                keep = w > 0
                X, Y, w = X[keep], Y[keep], w[keep]
            values = est._fit_values()
            est._set_sigmoids(*est._fit_sigmoids(est._make_backend(X, values, purpose="fit"),
                                                 X, Y, w, values)[0])
        return est
