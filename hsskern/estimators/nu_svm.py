"""NuSVC and NuSVR: LIBSVM's nu-machines on the single-fit engine (its Solver_NU mode).

nu-SVC, per pair of classes (one-vs-one, as LIBSVM): min 1/2 a^T Q a over 0 <= a_i <= w_i
(w the sample weights, 1 by default) with y^T a = 0 and e^T a = nu sum(w), the start
spreading nu sum(w) / 2 over each class in order; Solver_NU returns the two offsets rho and
r, and the model is y a / r with intercept -rho / r. nu-SVR: the 2 l variables of
epsilon-SVR (a point's + and - copies, one index map onto the points) with linear term
(-y, +y), bounds C w, and each half's sum fixed at nu C sum(w) / 2; epsilon = -r.
"""
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from scipy.special import expit
from sklearn.exceptions import NotFittedError
from sklearn.utils._available_if import available_if
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ..solvers.cached_smo import bounded_options, engine_memory, solve_dual
from ..solvers.pairwise import pairwise_coupling
from ..solvers.path import check_grid, check_weights
from ..utils._memory import check_memory, resolve_budget
from ._budget import budgeted_expansion
from ._convergence import warn_stopped_early
from ._splits import internal_folds
from ._svm_params import (LIBSVM_CONSTRAINTS, PROBABILITY_CONSTRAINT, check_break_ties,
                          deprecated_sigmoid, probability_on, smo_options, warn_probability)
from .base import _MIN_PROB, FitStateMixin, _check_probability, validate_input
from .calibration import N_FOLDS, sigmoid_fit, sigmoid_log_proba, sigmoid_proba
from .widths import GAMMA_STRINGS, kernel_of

__all__ = ["NuSVC", "NuSVR", "nu_start", "nu_regrow", "check_nu_feasible"]

#: Solver_NU's r of a label with no free variable and none at its lower bound: the midpoint
#: of (lb, the engine's infinity 1e300), i.e. no finite offset
_NO_FREE = 1e299


def nu_start(upper, total):
    """LIBSVM's start: ``total`` spread over the variables in order, each up to its bound
    (a_i = min(upper_i, what is left))."""
    before = np.cumsum(upper) - upper
    return np.minimum(upper, np.maximum(0.0, total - before))


def nu_regrow(alpha, G, upper, total):
    """A feasible start summing to ``total`` from a solution (a nu path): scaled, clipped at
    the bounds, the rest given to the variables of smallest gradient (those the objective
    wants larger), up to their bounds."""
    s = alpha.sum()
    a = np.minimum(upper, alpha * (total / s)) if s > 0 else np.zeros_like(alpha)
    need = total - a.sum()
    for i in np.argsort(G, kind="stable"):
        if need <= 1e-12 * max(total, 1.0):
            break
        take = min(upper[i] - a[i], need)
        a[i] += take
        need -= take
    return a


def check_nu_feasible(nu, w_pos, w_neg, what=""):
    """LIBSVM's test of a pair of classes with weight sums w_pos, w_neg: nu (w_pos + w_neg)
    / 2 must not exceed min(w_pos, w_neg), else a ValueError saying the largest nu."""
    if nu * (w_pos + w_neg) / 2 > min(w_pos, w_neg):
        top = 2 * min(w_pos, w_neg) / (w_pos + w_neg)
        raise ValueError(f"specified nu is infeasible{what}: nu={nu:g} needs nu * (n1 + n2) "
                         f"/ 2 <= min(n1, n2) (n1 = {w_pos:g}, n2 = {w_neg:g}, the classes' "
                         f"weights summed); use a nu below {top:g}")


def _label(c):
    """A class label as the user wrote it (numpy scalars as Python's)."""
    return c.item() if isinstance(c, np.generic) else c


def check_nus(nus):
    """A nu grid (fit_path) sorted increasing, each in (0, 1]."""
    nus = np.sort(check_grid(nus, "nus"))
    if nus[0] <= 0 or nus[-1] > 1:
        raise ValueError(f"every nu must lie in (0, 1], got {nus.tolist()}")
    return nus


class _NuBase(FitStateMixin, BaseEstimator):
    """Parameters, kernel, engine options and the nu path shared by NuSVC and NuSVR."""

    _parameter_constraints = {
        "nu": [Interval(Real, 0, 1, closed="right")],
        "kernel": [StrOptions({"rbf", "gaussian", "laplacian", "poly", "linear", "sigmoid"})],
        "h": [Interval(Real, 0, None, closed="neither"), None],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions(set(GAMMA_STRINGS))],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        **{k: LIBSVM_CONSTRAINTS[k] for k in ("shrinking", "cache_size", "max_iter")},
        "tol": [Interval(Real, 0, None, closed="neither")],
        "memory_budget": [Interval(Real, 0, None, closed="neither"), None],
        "verbose": ["verbose"],
    }

    def _kernel(self, X):
        # h, when given, is the width; else gamma (default SVC's "scale")
        spec = SimpleNamespace(kernel=self.kernel, degree=self.degree, coef0=self.coef0,
                               h=self.h, gamma=None if self.h is not None else self.gamma)
        return kernel_of(spec, None, X)

    def _options(self, n, d, l):
        need = 8 * n * d + engine_memory(n, d, l) + 16 * l  # points, vectors, two rows
        check_memory(need, f"{type(self).__name__} on {n} points x {d} features",
                     self.memory_budget, hint="raise memory_budget or subsample")
        opts = smo_options(self, self.tol)
        return bounded_options(opts, n, d, resolve_budget(self.memory_budget))

    def _nu_solve(self, X, kernel, y, upper, p, totals, groups, nus, opts, index=None,
                  label=""):
        """Solver_NU along ``nus``: each of the boolean ``groups`` sums to totals * nu; the
        first nu from LIBSVM's start, the next ones regrown from the last solution."""
        out, res = [], None
        for nu in nus:
            alpha = np.zeros(y.size)
            for g, tot in zip(groups, totals):
                alpha[g] = (nu_start(upper[g], tot * nu) if res is None else
                            nu_regrow(res.alpha[g], res.G[g], upper[g], tot * nu))
            res = solve_dual(X, kernel, y, upper, p, alpha, index=index, nu=True,
                             options=opts)
            self._log(1, f"{label}nu={nu:g}: {res.n_iter} steps, gap {res.gap:.3g}, "
                         f"r {res.r:.6g}, {res.time:.3g} s")
            out.append(res)
        return out

    def fit_path(self, X, y, nus, sample_weight=None):
        """One model per nu (sorted increasing) on one validation, each pair's (or the
        regression's) dual warm-started from the last nu's solution: scaled to the new
        sums, clipped at the bounds, the rest given to the variables of smallest gradient
        (always feasible, so no nu restarts from LIBSVM's start but the first). ``self`` is
        left as it was.

        Returns
        -------
        list of estimators, one per nu in increasing order
        """
        self._validate_params()
        nus = check_nus(nus)
        model = self.__class__(**self.get_params())
        fits = model._fit(X, y, sample_weight, nus.tolist())
        models = []
        for nu, fitted in zip(nus, fits):
            m = self.__class__(**{**self.get_params(), "nu": float(nu)})
            for name in ("n_features_in_", "feature_names_in_"):
                if hasattr(model, name):
                    setattr(m, name, getattr(model, name))
            m._set_model(*fitted)
            models.append(m)
        return models

    def fit(self, X, y, sample_weight=None):
        """Fit on X, y (``sample_weight`` multiplies each point's bound, as LIBSVM's).

        Returns
        -------
        self
        """
        self._validate_params()
        warn_probability(self)
        self._reset()
        [fitted] = self._fit(X, y, sample_weight, [float(self.nu)])
        self._set_model(*fitted)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # validate_input densifies it (the engine's points)
        return tags

    def _products(self, X, M):
        """K(X, support vectors) @ M in the kernel operator's blocks (no m x n_SV array)."""
        X = validate_input(self, X, reset=False)
        return budgeted_expansion(self, X, self.support_vectors_, self._kernel_, M)


class NuSVC(ClassifierMixin, _NuBase):
    """nu-support vector classification, as scikit-learn's :class:`~sklearn.svm.NuSVC`
    (LIBSVM's nu-SVC, one-vs-one for more than two classes), on hsskern's single-fit engine
    (LIBSVM's SMO in its Solver_NU mode, kernel rows on demand from a cache under
    ``memory_budget``, shrinking).

    Parameters
    ----------
    nu : float in (0, 1], default 0.5
        An upper bound on the fraction of margin errors and a lower bound on the fraction of
        support vectors; for each pair of classes it must satisfy LIBSVM's
        nu (n1 + n2) / 2 <= min(n1, n2) (a ValueError says the largest nu).
    kernel : {"rbf", "gaussian", "laplacian", "poly", "linear", "sigmoid"}, default "rbf"
    degree, gamma, coef0 : SVC's (3, "scale", 0.0)
    shrinking : bool, default True
    probability : bool, default False
        Deprecated, as scikit-learn 1.9's (removed in 1.11; scikit-learn's FutureWarning):
        use ``CalibratedClassifierCV(NuSVC(), ensemble=False)``. True fits Platt's
        sigmoids (:meth:`predict_proba`), as :class:`HSSSVC` does: decision values of 5
        stratified internal folds (drawn with ``random_state``) held out of nu-SVC fits at
        the same nu, one sigmoid per pair of classes, LIBSVM's pairwise coupling for more
        than two. The fit then solves each pair 6 times.
    tol : float, default 1e-3
        LIBSVM's stopping tolerance (the scaled dual's KKT gap).
    cache_size : float, default 200
        The engine's kernel-row cache in MB (bounded by ``memory_budget``).
    class_weight : dict, "balanced" or None, default None
        LIBSVM's weighted nu: a class's weight multiplies its points' sample weights, that
        is their bounds and their share of nu's sums ("balanced": n / (k n_class), which
        makes every pair's classes equally heavy with unit sample weights, so any nu in
        (0, 1] is feasible).
        scikit-learn's NuSVC takes this parameter but ignores it.
    verbose : bool, default False
        Records of the ``logging`` module, one line per nu and pair.
    max_iter : int, default -1
        Most pair steps of each binary problem; -1: LIBSVM's max(10^7, 100 l).
    decision_function_shape : {"ovr", "ovo"}, default "ovr"
        As scikit-learn's: "ovo" gives the pairs' values, "ovr" the votes plus a bounded
        confidence (multiclass only).
    break_ties : bool, default False
        As scikit-learn's: with "ovr" and more than two classes, :meth:`predict` takes the
        argmax of :meth:`decision_function`.
    random_state : int, RandomState or None, default None
        Seeds the probability folds (``probability=True``); nothing else is random.
    h : float or None, default None
        hsskern's: the Gaussian / Laplacian width (gamma = 1 / (2 h^2)); overrides gamma.
    memory_budget : float or None, default None
        hsskern's: bytes a fit may use (the engine's vectors and its row cache); default
        80% of the available memory.

    Attributes
    ----------
    classes_, class_weight_, support_, support_vectors_, n_support_, dual_coef_,
    intercept_, n_iter_, fit_status_, shape_fit_, n_features_in_, feature_names_in_
        As scikit-learn's NuSVC (the support vectors grouped by class; ``dual_coef_`` and
        ``intercept_`` in LIBSVM's one-vs-one layout, sign-flipped for two classes so that
        positive values mean ``classes_[1]``).
    probA_, probB_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Deprecated, as scikit-learn 1.9's (reading them warns; empty without
        ``probability=True``). Platt's sigmoid per pair (``probability=True``): P = 1 / (1 +
        exp(probA_ f + probB_)), f the pair's value, positive for its first class; two
        classes, as :class:`HSSSVC`'s: f is ``decision_function`` and P that of
        ``classes_[1]``.

    Notes
    -----
    ``class_weight`` acts (scikit-learn's is ignored). Sample weights multiply each point's
    bound and nu's sums, as LIBSVM's; points
    of weight 0 are dropped. With ``probability=True``, an internal fold whose classes do
    not admit nu (small classes), or where it leaves no margin, has no model: its points'
    held-out values are 0 (LIBSVM solves such a fold from an infeasible start anyway).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import NuSVC
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> clf = NuSVC(nu=0.3).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    probA_ = deprecated_sigmoid("probA_")
    probB_ = deprecated_sigmoid("probB_")

    _parameter_constraints = {**_NuBase._parameter_constraints,
                              "class_weight": [StrOptions({"balanced"}), dict, None],
                              "decision_function_shape": [StrOptions({"ovr", "ovo"})],
                              "probability": PROBABILITY_CONSTRAINT,
                              "break_ties": ["boolean"],
                              "random_state": ["random_state"]}

    def __init__(self, *, nu=0.5, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability="deprecated", tol=1e-3, cache_size=200,
                 class_weight=None, verbose=False, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, h=None, memory_budget=None):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.h = h
        self.memory_budget = memory_budget

    def _fit(self, X, y, sample_weight, nus):
        """The fitted state of each nu: (X, classes, class index of each point, per pair
        (i, j, its points, their coefficients y a / r, rho / r, steps, converged), the
        sigmoids (probA, probB) or None)."""
        X, y = validate_input(self, X, y)
        check_classification_targets(y)
        classes, yi = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"NuSVC needs samples of at least 2 classes, got {classes.size} "
                             "class")
        n, d = X.shape
        sw = check_weights(sample_weight, n, "sample_weight")
        w = np.ones(n) if sw is None else sw
        self.class_weight_ = compute_class_weight(self.class_weight, classes=classes, y=y)
        w = w * self.class_weight_[yi]
        keep = w > 0  # LIBSVM drops points of weight 0 (their bound)
        mass = np.bincount(yi[keep], w[keep], minlength=classes.size)
        pairs = [(i, j) for i in range(classes.size) for j in range(i + 1, classes.size)]
        for i, j in pairs:
            for nu in nus:
                what = f" for classes {_label(classes[i])!r} and {_label(classes[j])!r}"
                check_nu_feasible(nu, mass[i], mass[j], what)
        kernel = self._kernel(X)
        opts = self._options(n, d, n)
        per_pair = []
        for i, j in pairs:
            pts = np.concatenate([np.flatnonzero((yi == c) & keep) for c in (i, j)])
            s = np.where(yi[pts] == i, 1.0, -1.0)
            up = w[pts]
            groups = [s > 0, s < 0]
            tot = up.sum() / 2
            res = self._nu_solve(X[pts], kernel, s, up, np.zeros(pts.size), [tot, tot],
                                 groups, nus, opts, label=f"pair ({i}, {j}) ")
            for nu, r in zip(nus, res):
                self._check_margin(nu, r.r, classes[i], classes[j])
            per_pair.append([(i, j, pts, s * r.alpha / r.r, r.rho / r.r, r.n_iter,
                              r.converged) for r in res])
        sigmoids = [None] * len(nus)
        if probability_on(self):
            sigmoids = self._pair_sigmoids(X, kernel, classes, yi, w, sw, keep, nus, opts)
        return [(X, classes, yi, self.class_weight_, [pp[k] for pp in per_pair], sigmoids[k])
                for k in range(len(nus))]

    def _pair_sigmoids(self, X, kernel, classes, yi, w, sw, keep, nus, opts):
        """Platt's sigmoid of every pair at every nu, the C-machines' way: held-out values
        of N_FOLDS stratified folds over all the points (drawn with ``random_state``), each
        pair solved on its classes' points of a fold's training part along the whole nu
        path; the likelihood weighs a point by its sample weight only (class weights move
        the boundary, not the calibration). [(probA, probB)] per nu."""
        n = X.shape[0]
        fold = np.empty(n, dtype=np.intp)
        folds = internal_folds(min(N_FOLDS, n), X, yi, self.random_state)
        for f, (_, test) in enumerate(folds):
            fold[test] = f
        k = classes.size
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        A, B = np.empty((len(nus), len(pairs))), np.empty((len(nus), len(pairs)))
        for p, (i, j) in enumerate(pairs):
            pts = np.concatenate([np.flatnonzero((yi == c) & keep) for c in (i, j)])
            s = np.where(yi[pts] == i, 1.0, -1.0)
            D = self._held_out(X[pts], kernel, s, w[pts], fold[pts], nus, opts)
            pw = None if sw is None else sw[pts]
            for t in range(len(nus)):  # two classes: decision_function's sign (classes_[1])
                A[t, p], B[t, p] = (sigmoid_fit(-D[t], -s, pw) if k == 2 else
                                    sigmoid_fit(D[t], s, pw))
        self._log(1, f"probability: {fold.max() + 1} internal folds, sigmoid A "
                     f"{np.round(A[-1], 4).tolist()}, B {np.round(B[-1], 4).tolist()}")
        return [(A[t], B[t]) for t in range(len(nus))]

    def _held_out(self, X, kernel, s, up, fold, nus, opts):
        """One pair's value at each of its points from the models of the folds the point is
        not in, per nu: (len(nus), points). A fold whose training part holds one class
        gives that class's sign, as LIBSVM; a nu the fold's classes do not admit, or whose
        Solver_NU has no margin there (r <= 0, or none finite: the whole fit's errors),
        gives 0: that fold has no model at that nu (LIBSVM solves from its infeasible start
        and divides by r anyway)."""
        D = np.zeros((len(nus), s.size))
        for f in np.unique(fold):
            tr, te = fold != f, fold == f
            st, ut = s[tr], up[tr]
            groups = [st > 0, st < 0]
            if not (groups[0].any() and groups[1].any()):
                D[:, te] = 1.0 if groups[0].any() else -1.0
                continue
            pos, neg = ut[groups[0]].sum(), ut[groups[1]].sum()
            ok = [nu * (pos + neg) / 2 <= min(pos, neg) for nu in nus]  # a prefix: sorted
            if not all(ok):
                self._log(1, f"fold {f}: nu > {2 * min(pos, neg) / (pos + neg):g} is "
                             "infeasible there, held-out values 0")
            tot = ut.sum() / 2
            res = self._nu_solve(X[tr], kernel, st, ut, np.zeros(st.size), [tot, tot],
                                 groups, [nu for nu, fits in zip(nus, ok) if fits], opts,
                                 label=f"fold {f} ")
            M, rho = np.zeros((st.size, len(nus))), np.zeros(len(nus))
            for t, (nu, r) in enumerate(zip(nus, res)):
                if 0 < r.r < _NO_FREE:
                    M[:, t], rho[t] = st * r.alpha / r.r, r.rho / r.r
                else:  # no margin on this fold (see _check_margin): its model says nothing
                    self._log(1, f"fold {f} nu={nu:g}: r = {r.r:g}, held-out values 0")
            sv = np.any(M != 0, axis=1)
            D[:, te] = (budgeted_expansion(self, X[te], X[tr][sv], kernel, M[sv]) - rho).T
        return D

    @staticmethod
    def _check_margin(nu, r, first, second):
        """Solver_NU's r is the margin the model is divided by: a clear error where it has
        none (LIBSVM divides anyway; scikit-learn reports non-finite or arbitrary values).

        r <= 0, even by less than the solver's tolerance, is not rounding to be accepted:
        the primal's margin is 0 there, where its optimum is w = 0, so the classifier
        alpha / r is undefined. LIBSVM's model then divides by a number whose sign is
        noise: where scikit-learn's ``NuSVC(nu=0.01 or 0.05, kernel="linear")`` meets it on
        ``make_classification(200, 5)`` data, its models score 0.14 to 0.78 on their own
        training points, where a linear SVC scores about 0.9 (a negative r inverts the
        predictions)."""
        names = f"classes {_label(first)!r} and {_label(second)!r}"
        if r <= 0:
            raise ValueError(f"nu={nu:g} is below the range where {names} have a nonzero "
                             f"classifier: Solver_NU's margin r = {r:g} <= 0, so the "
                             "optimal w is 0 and the model alpha / r is undefined (LIBSVM "
                             "divides by r anyway, and its decision values are arbitrary, "
                             "their sign that of r's rounding); use a larger nu")
        if not r < _NO_FREE:
            raise ValueError(f"nu={nu:g} is the largest feasible value for {names}: every "
                             "point of the smaller class is at its bound, where Solver_NU's "
                             "offsets are undefined (scikit-learn reports non-finite "
                             "coefficients); use a smaller nu")

    def _set_model(self, X, classes, yi, class_weight, pairs, sigmoids=None):
        n, k = X.shape[0], classes.size
        self.class_weight_ = class_weight
        coef = np.zeros((len(pairs), n))
        for p, (i, j, pts, c, *_) in enumerate(pairs):
            coef[p, pts] = c
        nonzero = np.any(coef != 0, axis=0)
        sv = np.concatenate([np.flatnonzero(nonzero & (yi == c)) for c in range(k)])
        pos = np.full(n, -1)
        pos[sv] = np.arange(sv.size)
        dual = np.zeros((k - 1, sv.size))
        for i, j, pts, c, *_ in pairs:  # LIBSVM's layout: class i's row j - 1, class j's i
            at = pos[pts] >= 0
            rows = np.where(yi[pts] == i, j - 1, i)
            dual[rows[at], pos[pts][at]] = c[at]
        self.classes_ = classes
        self.support_ = sv.astype(np.int32)
        self.support_vectors_ = X[sv]
        self.n_support_ = np.bincount(yi[sv], minlength=k).astype(np.int32)
        self._intercept = np.array([-pr[4] for pr in pairs])  # LIBSVM's -rho per pair
        self._pair_coef = coef[:, sv].T  # (n_SV, n_pairs): each pair's coefficients
        sign = -1.0 if k == 2 else 1.0  # scikit-learn's binary sign: positive is classes_[1]
        self.dual_coef_ = sign * dual
        self.intercept_ = sign * self._intercept
        self.n_iter_ = np.array([max(int(pr[5]), 1) for pr in pairs], dtype=np.int32)
        self.fit_status_ = 0 if all(pr[6] for pr in pairs) else 1
        warn_stopped_early(self, sum(not pr[6] for pr in pairs), len(pairs), stacklevel=4)
        self.shape_fit_ = X.shape
        self._kernel_ = self._kernel(X)
        # scikit-learn 1.9's: empty without probability=True (read with its FutureWarning)
        self._probA, self._probB = ((np.empty(0), np.empty(0)) if sigmoids is None else
                                    (np.asarray(a, dtype=np.float64) for a in sigmoids))

    def _ovo(self, X):
        """LIBSVM's values of each pair (i, j), positive for class i: (m, n_pairs)."""
        check_is_fitted(self)
        return self._products(X, self._pair_coef) + self._intercept

    def decision_function(self, X):
        """Two classes: shape (m,), positive for ``classes_[1]``. More: the pairs' values
        ("ovo", positive for the pair's first class) or scikit-learn's "ovr" transform of
        them (the votes plus a confidence in (-1/3, 1/3))."""
        dec = self._ovo(X)
        k = self.classes_.size
        if k == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovo":
            return dec
        votes, conf = np.zeros((dec.shape[0], k)), np.zeros((dec.shape[0], k))
        for p, (i, j) in enumerate(self._pairs()):  # a value of 0 votes i, as sklearn's
            votes[:, i] += dec[:, p] >= 0
            votes[:, j] += dec[:, p] < 0
            conf[:, i] += dec[:, p]
            conf[:, j] -= dec[:, p]
        return votes + conf / (3 * (np.abs(conf) + 1))

    def _pairs(self):
        k = self.classes_.size
        return [(i, j) for i in range(k) for j in range(i + 1, k)]

    def predict(self, X):
        """LIBSVM's vote over the pairs (a pair's value > 0 votes its first class; ties to
        the first class in ``classes_``; with ``break_ties``, scikit-learn's argmax of the
        "ovr" decision function)."""
        check_is_fitted(self)
        if check_break_ties(self, self.classes_.size):
            return self.classes_[np.argmax(self.decision_function(X), axis=1)]
        dec = self._ovo(X)
        votes = np.zeros((dec.shape[0], self.classes_.size), dtype=np.intp)
        for p, (i, j) in enumerate(self._pairs()):
            votes[:, i] += dec[:, p] > 0
            votes[:, j] += dec[:, p] <= 0
        return self.classes_[np.argmax(votes, axis=1)]

    @available_if(_check_probability)
    def predict_proba(self, X):
        """Class probabilities by Platt scaling (``probability=True`` only), as
        :meth:`HSSSVC.predict_proba`: two classes, ``proba[:, 1] = 1 / (1 + exp(probA_ f +
        probB_))`` with f the decision value; more, each pair's value through its sigmoid
        gives P(i | i or j) and LIBSVM's pairwise coupling the class probabilities. As in
        scikit-learn, the argmax need not agree with :meth:`predict` near the boundary.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; rows summing to 1.
        """
        return self._platt(X, log=False)

    @available_if(_check_probability)
    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba` (two classes: computed in log space)."""
        return self._platt(X, log=True)

    def _platt(self, X, log):
        check_is_fitted(self)
        A, B = vars(self).get("_probA"), vars(self).get("_probB")
        if A is None or not A.size:
            raise NotFittedError("NuSVC was fitted with probability=False: refit with "
                                 "probability=True for predict_proba")
        dec = self._ovo(X)
        if self.classes_.size == 2:
            return (sigmoid_log_proba if log else sigmoid_proba)(-dec[:, 0], A, B)
        # P(i | i or j), kept off 0 and 1 as LIBSVM does before the coupling
        R = np.clip(expit(-(dec * A + B)), _MIN_PROB, 1.0 - _MIN_PROB)
        P = pairwise_coupling(R, self.classes_.size)
        return np.log(P) if log else P


class NuSVR(RegressorMixin, _NuBase):
    """nu-support vector regression, as scikit-learn's :class:`~sklearn.svm.NuSVR`
    (LIBSVM's nu-SVR: the tube's width epsilon is solved for, nu bounding the fraction of
    points outside it from above and of support vectors from below), on hsskern's
    single-fit engine in its Solver_NU mode.

    Parameters
    ----------
    nu : float in (0, 1], default 0.5
    C : float > 0, default 1.0
    kernel, degree, gamma, coef0, shrinking, tol, cache_size, verbose, max_iter, h,
    memory_budget
        As :class:`NuSVC`'s.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, n_iter_, fit_status_,
    shape_fit_, n_features_in_, feature_names_in_
        As scikit-learn's NuSVR: ``predict(X) = K(X, SV) @ dual_coef_[0] + intercept_``.
    epsilon_ : float
        The tube's half-width LIBSVM reports (-r of Solver_NU).

    Examples
    --------
    >>> import numpy as np
    >>> from hsskern import NuSVR
    >>> X = np.random.default_rng(0).uniform(-2, 2, size=(200, 1))
    >>> reg = NuSVR(nu=0.5, C=10.0).fit(X, np.sin(X[:, 0]))
    >>> bool(reg.score(X, np.sin(X[:, 0])) > 0.9)
    True
    """

    _parameter_constraints = {**_NuBase._parameter_constraints,
                              "C": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, *, nu=0.5, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, tol=1e-3, cache_size=200, verbose=False, max_iter=-1, h=None,
                 memory_budget=None):
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.h = h
        self.memory_budget = memory_budget

    def _fit(self, X, y, sample_weight, nus):
        """The fitted state of each nu: (X, point coefficients, rho, r, steps, converged)."""
        X, y = validate_input(self, X, y, y_numeric=True)
        n, d = X.shape
        w = check_weights(sample_weight, n, "sample_weight")
        pts = np.arange(n) if w is None else np.flatnonzero(w > 0)  # LIBSVM drops weight 0
        l = pts.size
        up = self.C * (np.ones(n) if w is None else w)[pts]
        upper = np.concatenate([up, up])
        sign = np.concatenate([np.ones(l), -np.ones(l)])
        p = np.concatenate([-y[pts], y[pts]])
        index = np.concatenate([pts, pts])
        half = np.arange(2 * l) < l
        tot = up.sum() / 2
        opts = self._options(n, d, 2 * l)
        out = []
        for r in self._nu_solve(X, self._kernel(X), sign, upper, p, [tot, tot],
                                [half, ~half], nus, opts, index=index):
            coef = np.zeros(n)
            coef[pts] = r.alpha[:l] - r.alpha[l:]
            out.append((X, coef, r.rho, r.r, r.n_iter, r.converged))
        return out

    def _set_model(self, X, coef, rho, r, n_iter, converged):
        sv = np.flatnonzero(coef != 0)
        self.support_ = sv.astype(np.int32)
        self.support_vectors_ = X[sv]
        self.n_support_ = np.array([0, sv.size], dtype=np.int32)
        self.dual_coef_ = coef[sv][None, :]
        self.intercept_ = np.array([-rho])
        self.epsilon_ = float(-r)
        self.n_iter_ = np.array([max(int(n_iter), 1)], dtype=np.int32)
        self.fit_status_ = 0 if converged else 1
        warn_stopped_early(self, int(not converged), 1, stacklevel=4)
        self.shape_fit_ = X.shape
        self._kernel_ = self._kernel(X)

    def predict(self, X):
        """``K(X, support_vectors_) @ dual_coef_[0] + intercept_``, shape (m,)."""
        check_is_fitted(self)
        return self._products(X, self.dual_coef_.T)[:, 0] + self.intercept_[0]
