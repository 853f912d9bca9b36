"""HSSSVC: exact-hinge-loss kernel SVM trained by dual ADMM on one factor of K + beta I.

The kernel matrix is compressed once (HSS, or kept dense for ``approximation="exact"``),
K + beta I is factored once, and the closed-form ADMM of :mod:`hsskern.solvers.admm` runs for
every one-vs-rest class at once (a block solve per iteration: K + beta I does not depend on the
labels) and, in :meth:`HSSSVC.fit_path` / :class:`HSSSVCCV`, for every C of a grid.
"""
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit, ShuffleSplit, KFold
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..exceptions import NotPositiveDefiniteError
from ..factors import DenseCholeskyFactor
from ..kernels import kernel_operator
from ..options import HSSOptions
from ..solvers.admm import ADMMResult, default_beta, svm_dual_admm, svm_dual_admm_path
from ..solvers.refine import RefineResult, refine_exact
from ..utils._memory import check_memory

__all__ = ["HSSSVC", "HSSSVCCV"]

_HSS_FIELDS = ("rel_tol", "abs_tol", "max_rank", "leaf_size", "n_neighbors")

_COMMON_CONSTRAINTS = {
    "kernel": [StrOptions({"gaussian", "laplacian"})],
    "beta": [Interval(Real, 0, None, closed="neither"), None],
    "rel_tol": [Interval(Real, 0, None, closed="left")],
    "abs_tol": [Interval(Real, 0, None, closed="left")],
    "max_rank": [Interval(Integral, 1, None, closed="left")],
    "leaf_size": [Interval(Integral, 2, None, closed="left")],
    "n_neighbors": [Interval(Integral, 0, None, closed="left")],
    "approximation": [StrOptions({"hss", "exact"})],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="neither"), None],
    "relaxation": [Interval(Real, 0, 2, closed="neither")],
    "adaptive_beta": ["boolean"],
    "refine": ["boolean", StrOptions({"auto"})],
    "max_chunk": [Interval(Integral, 2, None, closed="left")],
    "verbose": ["verbose"],
    "random_state": ["random_state"],
}


class _FactoredKernel:
    """K (approximation), its factor of K + beta I, and what building them cost (one per width)."""

    def __init__(self, X, est, width):
        n = X.shape[0]
        self.timings = {}
        t0 = time.perf_counter()
        kw = {"h": width} if est._width_name() == "h" else {"gamma": width}
        K = kernel_operator(X, est.kernel, **kw)
        self.K = K
        self.beta = float(est.beta) if est.beta is not None else default_beta(n)
        # > 0 once K + beta I was found indefinite below this beta: the ADMM's floor from the
        # start, so rebalancing never pays for a factorization already known to fail
        self.beta_floor = 0.0
        if est.approximation == "exact":
            # K dense (kept for the bias products) + the factor's own n x n array
            check_memory(2 * 8 * n * n, f'approximation="exact" on {n} points',
                         hint='use approximation="hss" for large n')
            Kd = K.to_dense(max_bytes=max(8 * n * n, 1))
            self.timings["kernel"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            self.factor = DenseCholeskyFactor(Kd, self.beta)
            self.timings["factor"] = time.perf_counter() - t0
            self.K_apply = Kd
            self.refactor = lambda b: DenseCholeskyFactor(Kd, b)
            self.stats = {"approximation": "exact", "n": n,
                          "memory_bytes": int(Kd.nbytes),
                          "factor_memory_bytes": self.factor.memory_bytes()}
        else:
            from ..hss import compress  # the HSS backend
            opts = HSSOptions(**{f: getattr(est, f) for f in _HSS_FIELDS},
                              random_state=est.random_state,
                              verbose=max(0, int(est.verbose) - 1))
            self.timings["kernel"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            H = compress(K, opts)
            self.timings["compress"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            try:
                self.factor = H.factor(self.beta)
            except NotPositiveDefiniteError as exc:
                # a loose approximation can be indefinite: the shift has to cover its most
                # negative eigenvalue. Once, with the factor's own suggestion, and say so.
                warnings.warn(f"{exc}; continuing with beta={exc.suggested_beta:.3g}",
                              stacklevel=4)
                self.beta = self.beta_floor = float(exc.suggested_beta)
                self.factor = H.factor(self.beta)
            self.timings["factor"] = time.perf_counter() - t0
            self.K_apply = H
            self.refactor = H.factor
            self.stats = dict(H.stats())
            self.stats["approximation"] = "hss"
            self.stats["factor_memory_bytes"] = int(self.factor.memory_bytes())

    def path(self, Y, Cs, est):
        """One result per C. With ``refine``, a C whose predecessor was solved exactly starts
        the decomposition from that solution scaled to the new C and skips the ADMM;
        otherwise the ADMM runs (warm-started from the latest state) and seeds it."""
        kw = dict(max_iter=est.max_iter, kkt_tol=est.tol, relaxation=est.relaxation,
                  beta_floor=self.beta_floor,
                  refactor=self.refactor if est.adaptive_beta else None)
        if not est.refine:
            return svm_dual_admm_path(self.factor, self.K_apply, Y, Cs, warm_start=True, **kw)
        t0 = time.perf_counter()
        w = self.factor.solve(np.ones(Y.shape[0]))
        setup = time.perf_counter() - t0
        results, state, prev = [], None, None
        workspace = {}  # the decomposition's block buffer, shared by every C
        for C in Cs:
            if prev is not None:
                res = _exact_from_previous(self.K, Y, C, prev, est, self.factor.beta,
                                           workspace)
            else:  # a warm start carries the floor its C reached
                res = svm_dual_admm(self.factor, self.K_apply, Y, C, w=w, warm_start=state,
                                    **kw)
                if res.state["factor"] is not self.factor:  # a rebalanced beta carries over
                    self.factor, w = res.state["factor"], res.state["w"]
                if state is not None:
                    state.pop("factor", None)  # see svm_dual_admm_path
                state = res.state
                _refine(self.K, Y, res, est, workspace)
            if not results:
                res.timings["setup"] = setup
            if not any(rr.skipped for rr in res.refinement):
                prev = (C, res.refinement)
            results.append(res)
        return results


def _solved(res):
    if res.refinement:
        return all(rr.converged or (rr.skipped and res.converged) for rr in res.refinement)
    return res.converged


def _warn_unsolved(results, est):
    """One ConvergenceWarning for the C values whose solution did not reach ``tol`` (neither
    the ADMM nor, with ``refine``, the exact decomposition), saying why when the approximation
    is indefinite: its dual is then not convex, and at large C the ADMM's answer can be worse
    than chance (gmm8, n = 1e5, rank 500: 37-45% test accuracy for C >= 1.67)."""
    if est.tol is None:  # a fixed iteration count was asked for (the paper's mode)
        return
    bad = [res.C for res in results if not _solved(res)]
    if not bad:
        return
    # floors only rise along a path, and results of the exact decomposition carry no ADMM state
    floor = max(res.state.get("beta_floor", 0.0) for res in results)
    msg = (f"the ADMM did not reach tol={est.tol:g} within max_iter={est.max_iter} for "
           f"{len(bad)} of {len(results)} C value(s) (C = "
           + ", ".join(f"{c:.3g}" for c in bad[:5]) + (", ..." if len(bad) > 5 else "") + ").")
    if floor > 0:
        msg += (f" beta had to stay >= {floor:.3g} (below it K + beta I was indefinite or the "
                "iterates diverged), which slows the ADMM at large C. With an HSS "
                "approximation this means it is indefinite: its dual is not convex and the "
                "solution at large C can be poor; tighten rel_tol or raise max_rank.")
    else:
        msg += " Raise max_iter or loosen tol."
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)


# refine="auto" skips the exact decomposition when computing the exact decision values of the
# ADMM's start (an n x n_SV kernel product, repeated in part every round) would cost more than
# this many kernel entries: gmm8 at n = 1e5 (supports of 20-50k) refines, at 1e6 it does not
_AUTO_REFINE_MAX_PRODUCT = 1e10


def _refine_log(est, C, j):
    if est.verbose < 2:
        return None
    return lambda line: est._log(2, f"refine C={C:g} column {j}:{line}")


def _refine(K, Y, res, est, workspace=None):
    """Replace each column of an ADMM result by the exact SVM decomposition started from it."""
    n, r = Y.shape
    coef = np.array(res.dual_coef, dtype=np.float64).reshape(n, r)
    bias = np.atleast_1d(np.array(res.bias, dtype=np.float64))
    out = []
    for j in range(r):
        alpha = Y[:, j] * coef[:, j]
        n_sv = np.count_nonzero(alpha)
        if est.refine == "auto" and n * n_sv > _AUTO_REFINE_MAX_PRODUCT:
            out.append(RefineResult(alpha=alpha, dual_coef=coef[:, j].copy(),
                                    bias=float(bias[j]), decision=None, converged=False,
                                    skipped=f"n x n_SV = {n} x {n_sv} kernel entries exceed "
                                            f"{_AUTO_REFINE_MAX_PRODUCT:.0e} (refine='auto')"))
            continue
        rr = refine_exact(K, Y[:, j], res.C, alpha, max_chunk=est.max_chunk,
                          log=_refine_log(est, res.C, j), workspace=workspace)
        coef[:, j] = rr.dual_coef
        bias[j] = rr.bias
        out.append(rr)
    res.dual_coef = coef[:, 0] if np.ndim(res.dual_coef) == 1 else coef
    res.bias = float(bias[0]) if np.ndim(res.bias) == 0 else bias
    res.alpha = np.abs(res.dual_coef)
    res.refinement = out
    res.timings["refine"] = sum(rr.time for rr in out)
    return out


def _exact_from_previous(K, Y, C, prev, est, beta, workspace=None):
    """The exact SVM at C by decomposition from the previous C's exact solution scaled by
    C / C_prev (feasible, and its decision values scale with it: no kernel product to start),
    as an ADMMResult with no ADMM iterations."""
    n, r = Y.shape
    C_prev, prev_results = prev
    s = C / C_prev
    out = [refine_exact(K, Y[:, j], C, s * pr.alpha, f=s * (pr.decision - pr.bias),
                        max_chunk=est.max_chunk, log=_refine_log(est, C, j),
                        workspace=workspace)
           for j, pr in enumerate(prev_results)]
    coef = np.column_stack([rr.dual_coef for rr in out])
    bias = np.array([rr.bias for rr in out])
    alpha = Y * coef
    empty = np.zeros((0, r))
    return ADMMResult(C=C, beta=beta, alpha=alpha, dual_coef=coef, bias=bias, n_iter=0,
                      converged=all(rr.converged for rr in out), primal_residuals=empty,
                      dual_residuals=empty, equality_residual=np.abs((Y * alpha).sum(0)),
                      objective=np.full(r, np.nan), n_margin=np.full(r, -1),
                      timings={"setup": 0.0, "iterations": 0.0, "bias": 0.0, "refactor": 0.0,
                               "kkt": 0.0, "refine": sum(rr.time for rr in out)},
                      refinement=out)


def _encode(y, classes):
    """One-vs-rest label columns in {-1, +1}: one column for 2 classes, one per class otherwise."""
    idx = np.searchsorted(classes, y)
    if len(classes) == 2:
        return np.where(idx == 1, 1.0, -1.0)[:, None]
    Y = -np.ones((len(y), len(classes)))
    Y[np.arange(len(y)), idx] = 1.0
    return Y


def _score_width_fold(base, X, y, train, test, Cs):
    """Compress and factor K(X[train]) once, sweep the C path, score every C on X[test].

    The unit of work of :class:`HSSSVCCV` (one kernel width, one fold), kept a plain function
    of picklable arguments so a scheduler can run it anywhere (``hsskern.distributed``); the
    factor lives and dies inside the call, only per-C scores and timings come back.

    Parameters
    ----------
    base : HSSSVC
        Carries the kernel, the width and every solver/compression option (its C is unused).
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    train, test : ndarray of int
        Row indices of the fold.
    Cs : ndarray of shape (n_Cs,)
        Ascending C grid (the path is warm-started in this order).

    Returns
    -------
    dict
        ``scores``, ``admm_time`` (float arrays of shape (n_Cs,)), ``n_iter`` (int array),
        ``setup_time`` (compression + factor seconds). A fold whose training part holds one
        class cannot be trained: its scores are NaN.
    """
    out = {"scores": np.full(len(Cs), np.nan), "admm_time": np.zeros(len(Cs)),
           "n_iter": np.zeros(len(Cs), dtype=int), "setup_time": 0.0}
    tr, va = train, test
    tr_classes = np.unique(y[tr])
    if len(tr_classes) < 2:
        return out
    name = base._width_name()
    width = base._width()
    FK = _FactoredKernel(X[tr], base, width)
    out["setup_time"] = sum(FK.timings.values())
    results = FK.path(_encode(y[tr], tr_classes), Cs, base)
    _warn_unsolved(results, base)
    # all C and classes scored with ONE blocked product K(X_va, X_tr) @ coef
    coefs = np.concatenate([np.asarray(r.dual_coef).reshape(len(tr), -1)
                            for r in results], axis=1)
    sv = np.flatnonzero(np.any(coefs != 0, axis=1))  # union of support vectors
    if len(sv):
        Ksv = kernel_operator(X[tr][sv], base.kernel, **{name: width})
        dec = Ksv.cross(X[va]) @ coefs[sv]
    else:
        dec = np.zeros((len(va), coefs.shape[1]))
    r_cls = coefs.shape[1] // len(Cs)
    for ic, r in enumerate(results):
        d = dec[:, ic * r_cls:(ic + 1) * r_cls] + np.atleast_1d(r.bias)
        pred = (tr_classes[(d[:, 0] > 0).astype(np.intp)] if r_cls == 1
                else tr_classes[np.argmax(d, axis=1)])
        out["scores"][ic] = np.mean(pred == y[va])
        out["admm_time"][ic] = (r.timings["iterations"] + r.timings["bias"]
                                + r.timings.get("refine", 0.0))
        out["n_iter"][ic] = r.n_iter
        base._log(2, f"{name}={width:g} C={r.C:g}: accuracy {out['scores'][ic]:.4f}, "
                     f"{r.n_iter} iterations")
    return out


class _SVCBase(ClassifierMixin, BaseEstimator):

    def _width_name(self):
        if self.h is not None and self.gamma is not None:
            raise ValueError("give either h or gamma (gamma = 1 / (2 h^2)), not both")
        return "gamma" if self.gamma is not None else "h"

    def _validate_xy(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; "
                             f"got 1 class ({classes[0]!r})")
        return X, y, classes

    def _log(self, level, msg):
        if self.verbose >= level:
            print(f"[{type(self).__name__}] {msg}", flush=True)


class HSSSVC(_SVCBase):
    """Kernel SVM (exact hinge loss) trained by dual ADMM on an HSS approximation of K.

    ``fit`` compresses K once, factors K + beta I once (ULV) and runs the closed-form ADMM of
    Cipolla & Gondzio (Algorithm 2) for all one-vs-rest classes with that one factor.

    Parameters
    ----------
    kernel : {"gaussian", "laplacian"}, default "gaussian"
        gaussian: exp(-|x - y|^2 / (2 h^2)); laplacian: exp(-|x - y| / h).
    h : float or None, default None
        Kernel width (the paper's h). When both ``h`` and ``gamma`` are None, h = 1.
    gamma : float or None, default None
        scikit-learn's spelling: gamma = 1 / (2 h^2) (gaussian), 1 / h (laplacian).
    C : float, default 1.0
        Box constraint of the dual, > 0.
    beta : float or None, default None
        ADMM penalty (the shift in K + beta I). None: :func:`~hsskern.solvers.default_beta`
        by n (the paper's schedule).
    rel_tol, abs_tol, max_rank, leaf_size, n_neighbors
        HSS compression options, see :class:`~hsskern.options.HSSOptions`. Defaults 1e-3 /
        1e-5 / 500 / 128 / 64: on ijcnn1 (n = 20,000) the looser 1e-2 / 1e-3 keeps rank ~13
        and loses 15-25 accuracy points at C >= 1 against LIBSVM; the SVM needs more of the
        kernel's fine structure than the paper's loose settings suggest.
    approximation : {"hss", "exact"}, default "hss"
        "exact": the dense kernel matrix and a dense Cholesky factor (small n only, memory is
        checked first) — the reference the HSS path is tested against.
    max_iter : int, default 100
        Most ADMM iterations per C (one factor solve each). The paper runs exactly 10 with no
        stopping test (``max_iter=10, tol=None, relaxation=1.0, adaptive_beta=False``).
    tol : float or None, default 1e-2
        Stop when LIBSVM's optimality gap (m(a) - M(a), the measure LIBSVM's ``tol`` bounds)
        is below ``tol``; checked every 10 iterations with one kernel (approximation) product.
        None: always run ``max_iter`` iterations. A C whose solution misses ``tol`` (and is
        not recovered by ``refine``) raises a ``ConvergenceWarning``, which says so when the
        approximation turned out indefinite (its dual is then not convex).
    relaxation : float in (0, 2), default 1.6
        ADMM over-relaxation (1.0: the paper's plain ADMM; 1.6 needed ~30% fewer iterations
        to a given gap in our measurements).
    adaptive_beta : bool, default True
        Residual balancing: when the primal and dual residuals differ by more than 10x, beta
        is moved by 10x and K + beta I refactored (never recompressed); at most twice per C,
        and the new beta carries over to the next C of a path.
    refine : bool or "auto", default "auto"
        Beyond the paper: after the ADMM, recover the exact-kernel SVM by decomposition
        (:func:`~hsskern.solvers.refine.refine_exact`): every point keeps the ADMM's alpha,
        working sets of the free support vectors and the worst exact-KKT violators are solved
        by SMO on their dense kernel block, and the exact decision values at all n points are
        kept current by n x |changed| products, until LIBSVM's stopping test (gap < 1e-3)
        holds on all points. Along a C path each exact solution, scaled, starts the next C
        without the ADMM. The ADMM's approximation error and slow convergence at large C go
        away (ijcnn1: 96.98% -> 98.8% best; gmm8 at 1e5: 91.7% -> LIBSVM's accuracy), at a
        cost that grows with n x n_SV. "auto": skip it (keep the ADMM's solution) when that
        product exceeds 1e10 kernel entries (gmm8 at n = 1e6).
    max_chunk : int, default 16000
        Largest working set of the refinement (its kernel block takes 8 max_chunk^2 bytes:
        2 GB, twice that while a Newton step factors a nearly all-free block). Working sets
        are 8,000 points, more only to hold a larger free set.
    verbose : int, default 0
    random_state : int, RandomState or None
        Seeds the randomized compression.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_ : ndarray of shape (n_SV,)
        Indices of the training points with a nonzero coefficient for some class.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    dual_coef_ : ndarray of shape (n_models, n_SV)
        ``y_i alpha_i`` per one-vs-rest model (n_models = 1 for binary problems, else
        n_classes).
    intercept_ : ndarray of shape (n_models,)
    n_iter_ : ndarray of shape (n_models,)
        ADMM iterations (the classes run together, so the entries are equal); with
        ``refine``, summed over the continuation C / 1000, C / 100, C / 10, C of ``fit``.
    hss_ : dict
        Statistics of the approximation (ranks, memory; see ``HSSMatrix.stats()``).
    fit_time_ : dict
        Seconds per phase: kernel, compress (hss), factor, admm, bias, refine (for ``fit``,
        summed over its continuation C values).
    beta_ : float
        The ADMM penalty used.
    admm_ : dict
        Residual histories and objectives of the final ADMM run.
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "h": [Interval(Real, 0, None, closed="neither"), None],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "C": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, kernel="gaussian", *, h=None, gamma=None, C=1.0, beta=None,
                 rel_tol=1e-3, abs_tol=1e-5, max_rank=500, leaf_size=128, n_neighbors=64,
                 approximation="hss", max_iter=100, tol=1e-2, relaxation=1.6,
                 adaptive_beta=True, refine="auto", max_chunk=16000, verbose=0,
                 random_state=None):
        self.kernel = kernel
        self.h = h
        self.gamma = gamma
        self.C = C
        self.beta = beta
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol
        self.max_rank = max_rank
        self.leaf_size = leaf_size
        self.n_neighbors = n_neighbors
        self.approximation = approximation
        self.max_iter = max_iter
        self.tol = tol
        self.relaxation = relaxation
        self.adaptive_beta = adaptive_beta
        self.refine = refine
        self.max_chunk = max_chunk
        self.verbose = verbose
        self.random_state = random_state

    def _width(self):
        return self.gamma if self._width_name() == "gamma" else (
            1.0 if self.h is None else self.h)

    def fit(self, X, y):
        """Fit the SVM for ``self.C``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two or more classes (any labels, strings included).

        Returns
        -------
        self
        """
        self._validate_params()
        X, y, classes = self._validate_xy(X, y)
        FK = _FactoredKernel(X, self, self._width())
        # with the refinement, C is reached by continuation from C / 1000: a cold ADMM at a
        # large C is a poor start for the decomposition (ijcnn1, C = 6: 53% accuracy after 100
        # iterations, its support 22k points), while along a path each exact solution seeds
        # the next C within a few rounds
        Cs = [self.C * 10.0 ** -k for k in (3, 2, 1)] + [self.C] if self.refine else [self.C]
        results = FK.path(_encode(y, classes), Cs, self)
        _warn_unsolved(results[-1:], self)  # the continuation's smaller C are a means
        self._set_model(X, classes, FK, results[-1])
        self.n_iter_ = np.full_like(self.n_iter_, max(1, sum(r.n_iter for r in results)))
        # the continuation's C are part of this fit's cost
        t = self.fit_time_
        t["admm"] += sum(r.timings["iterations"] for r in results[:-1])
        for phase in ("refactor", "bias", "refine"):
            t[phase] += sum(r.timings.get(phase, 0.0) for r in results[:-1])
        return self

    def fit_path(self, X, y, Cs):
        """Fit one model per C on one compression and one factor, warm-starting along ``Cs``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        Cs : sequence of float
            Visited in the given order (ascending warm-starts best).

        Returns
        -------
        list of HSSSVC
            Fitted copies of this estimator with ``C`` set to each value; ``self`` is left
            fitted for the last C. Their ``fit_time_`` counts the shared compression and
            factorization once (in the first model).
        """
        self._validate_params()
        X, y, classes = self._validate_xy(X, y)
        FK = _FactoredKernel(X, self, self._width())
        models = []
        results = FK.path(_encode(y, classes), list(Cs), self)
        _warn_unsolved(results, self)
        for i, res in enumerate(results):
            m = clone(self).set_params(C=res.C)
            m._validate_params()
            m.n_features_in_ = self.n_features_in_
            if hasattr(self, "feature_names_in_"):
                m.feature_names_in_ = self.feature_names_in_
            m._set_model(X, classes, FK, res, shared=(i == 0))
            models.append(m)
        self._set_model(X, classes, FK, res, shared=len(models) == 1)
        return models

    def _set_model(self, X, classes, FK, res, shared=True):
        coef = np.asarray(res.dual_coef).reshape(X.shape[0], -1)
        support = np.flatnonzero(np.any(coef != 0, axis=1))
        self.classes_ = classes
        self.support_ = support
        self.support_vectors_ = X[support].copy()
        self.dual_coef_ = np.ascontiguousarray(coef[support].T)
        self.intercept_ = np.atleast_1d(np.asarray(res.bias, dtype=np.float64)).copy()
        self.n_iter_ = np.full(coef.shape[1], res.n_iter)
        self.beta_ = res.beta
        self.hss_ = dict(FK.stats)
        times = dict(FK.timings) if shared else {k: 0.0 for k in FK.timings}
        times["admm"] = res.timings["iterations"] + res.timings["setup"] * shared
        times["refactor"] = res.timings["refactor"]
        times["bias"] = res.timings["bias"]
        times["refine"] = res.timings.get("refine", 0.0)
        self.fit_time_ = times
        self.admm_ = {"primal_residuals": res.primal_residuals,
                      "dual_residuals": res.dual_residuals, "objective": res.objective,
                      "converged": res.converged, "n_margin": res.n_margin,
                      "equality_residual": res.equality_residual,
                      "refinement": getattr(res, "refinement", None)}
        self._log(1, f"C={res.C:g}: {res.n_iter} ADMM iterations, {len(support)} support "
                     f"vectors, {times['admm']:.3g} s")

    def decision_function(self, X):
        """Signed distance to the separating surface(s).

        Evaluated as K(X, support_vectors_) @ dual_coef_.T in blocks (never an m x n_SV array).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive: ``classes_[1]``), else
        (n_samples, n_classes) one-vs-rest scores.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        if self.support_vectors_.shape[0] == 0:
            out = np.zeros((X.shape[0], self.dual_coef_.shape[0]))
        else:
            kw = {"h": self._width()} if self._width_name() == "h" else {
                "gamma": self._width()}
            Ks = kernel_operator(self.support_vectors_, self.kernel, **kw)
            out = Ks.cross(X) @ self.dual_coef_.T
        out += self.intercept_
        return out[:, 0] if len(self.classes_) == 2 else out

    def predict(self, X):
        """Class labels, shape (n_samples,)."""
        d = self.decision_function(X)
        if len(self.classes_) == 2:
            return self.classes_[(d > 0).astype(np.intp)]
        return self.classes_[np.argmax(d, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


class HSSSVCCV(_SVCBase):
    """HSSSVC with C (and optionally the kernel width) chosen by validation accuracy.

    Per kernel width and per fold, K is compressed and K + beta I factored once; the ADMM then
    runs along the whole C grid (warm-started, all classes together), and every C is scored on
    the held-out points with one blocked kernel product for the whole grid. The best pair is
    refitted on all data.

    Parameters
    ----------
    Cs : int or sequence of float, default 10
        Grid of C; an int gives ``np.logspace(-2, 3, Cs)``.
    h : float, sequence of float or None, default None
        Kernel width(s) to try (None with ``gamma`` None: h = 1).
    gamma : float, sequence of float or None
        scikit-learn spelling of the width (gamma = 1 / (2 h^2)).
    cv : float in (0, 1) or int >= 2, default 0.2
        A float holds out that fraction once (stratified); an int runs (stratified) K-fold.
    refit : bool, default True
        Refit ``best_estimator_`` on all data with the chosen (h, C).
    kernel, beta, rel_tol, abs_tol, max_rank, leaf_size, n_neighbors, approximation, max_iter,
    tol, relaxation, adaptive_beta, refine, max_chunk, verbose, random_state
        As in :class:`HSSSVC`.

    Attributes
    ----------
    C_ : float
    h_ : float or None, gamma_ : float or None
        The chosen width (in the spelling given).
    cv_results_ : dict of arrays
        One entry per (width, C): ``param_width``, ``param_C``, ``split<k>_test_score``,
        ``mean_test_score``, ``std_test_score``, ``rank_test_score``, ``admm_time``,
        ``n_iter``; and ``setup_time`` per width (compression + factor, summed over folds).
    best_score_ : float
    best_estimator_ : HSSSVC
    n_iter_ : ndarray
        ADMM iterations of the refitted model (of the best grid point without refit).
    classes_, fit_time_ : as in HSSSVC (``fit_time_`` has ``search`` and ``refit``).
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "Cs": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "h": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "gamma": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "cv": [Interval(Real, 0, 1, closed="neither"), Interval(Integral, 2, None,
                                                               closed="left")],
        "refit": ["boolean"],
    }

    def __init__(self, kernel="gaussian", *, Cs=10, h=None, gamma=None, cv=0.2, refit=True,
                 beta=None, rel_tol=1e-3, abs_tol=1e-5, max_rank=500, leaf_size=128,
                 n_neighbors=64, approximation="hss", max_iter=100, tol=1e-2, relaxation=1.6,
                 adaptive_beta=True, refine="auto", max_chunk=16000,
                 verbose=0, random_state=None):
        self.kernel = kernel
        self.Cs = Cs
        self.h = h
        self.gamma = gamma
        self.cv = cv
        self.refit = refit
        self.beta = beta
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol
        self.max_rank = max_rank
        self.leaf_size = leaf_size
        self.n_neighbors = n_neighbors
        self.approximation = approximation
        self.max_iter = max_iter
        self.tol = tol
        self.relaxation = relaxation
        self.adaptive_beta = adaptive_beta
        self.refine = refine
        self.max_chunk = max_chunk
        self.verbose = verbose
        self.random_state = random_state

    def _grid(self):
        Cs = (np.logspace(-2, 3, self.Cs) if isinstance(self.Cs, Integral)
              else np.asarray(self.Cs, dtype=np.float64).ravel())
        if Cs.size == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
            raise ValueError(f"Cs must be positive and finite, got {self.Cs!r}")
        name = self._width_name()
        widths = getattr(self, name)
        widths = [1.0] if widths is None else np.atleast_1d(
            np.asarray(widths, dtype=np.float64)).tolist()
        if not widths or not all(np.isfinite(v) and v > 0 for v in widths):
            raise ValueError(f"{name} must be positive and finite, got {widths!r}")
        return np.sort(Cs), name, widths

    def _splits(self, X, y):
        counts = np.unique(y, return_counts=True)[1]
        if isinstance(self.cv, Integral):
            k = int(self.cv)
            cv = (StratifiedKFold(k, shuffle=True, random_state=self.random_state)
                  if counts.min() >= k else KFold(k, shuffle=True,
                                                  random_state=self.random_state))
        else:
            stratify = counts.min() >= 2 and round(self.cv * len(y)) >= len(counts)
            cls = StratifiedShuffleSplit if stratify else ShuffleSplit
            cv = cls(n_splits=1, test_size=self.cv, random_state=self.random_state)
        return list(cv.split(X, y))

    def _base(self, name, width):
        params = {k: v for k, v in self.get_params().items()
                  if k in HSSSVC().get_params() and k not in ("h", "gamma")}
        return HSSSVC(**params, **{name: width})

    def fit(self, X, y):
        """Search the (width, C) grid, then refit on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._validate_params()
        X, y, classes = self._validate_xy(X, y)
        Cs, name, widths = self._grid()
        splits = self._splits(X, y)
        t_search = time.perf_counter()
        results = {(iw, s): _score_width_fold(self._base(name, width), X, y, tr, va, Cs)
                   for iw, width in enumerate(widths) for s, (tr, va) in enumerate(splits)}
        self._collect(classes, Cs, name, widths, len(splits), results,
                      time.perf_counter() - t_search)
        if self.refit:
            t0 = time.perf_counter()
            self.best_estimator_ = self._best_base().fit(X, y)
            self._set_refit(self.best_estimator_, time.perf_counter() - t0)
        return self

    def _best_base(self):
        """The unfitted HSSSVC of the chosen (width, C)."""
        name = self.cv_results_["width_name"]
        return self._base(name, getattr(self, name + "_")).set_params(C=self.C_)

    def _set_refit(self, model, seconds):
        self.best_estimator_ = model
        self.fit_time_["refit"] = seconds
        self.n_iter_ = model.n_iter_

    def _collect(self, classes, Cs, name, widths, n_splits, results, t_search):
        """Fill cv_results_ and the chosen (width, C) from the per-(width, fold) results.

        ``results`` maps (width index, fold index) to what :func:`_score_width_fold` returned;
        the order the pairs were computed in does not matter (so they can come from anywhere).
        """
        scores = np.full((len(widths), len(Cs), n_splits), np.nan)
        admm_time = np.zeros((len(widths), len(Cs)))
        n_iter = np.zeros((len(widths), len(Cs)), dtype=int)
        setup = np.zeros(len(widths))
        for iw in range(len(widths)):
            for s in range(n_splits):
                r = results[iw, s]
                scores[iw, :, s] = r["scores"]
                admm_time[iw] += r["admm_time"]
                n_iter[iw] = np.maximum(n_iter[iw], r["n_iter"])
                setup[iw] += r["setup_time"]
        mean = np.nanmean(np.where(np.isnan(scores), -np.inf, scores), axis=2) \
            if np.isnan(scores).all() else np.nanmean(scores, axis=2)
        flat = mean.ravel()
        order = np.argsort(-flat, kind="stable")
        rank = np.empty(len(flat), dtype=int)
        rank[order] = np.arange(1, len(flat) + 1)
        W, CC = np.meshgrid(widths, Cs, indexing="ij")
        self.cv_results_ = {"param_width": W.ravel(), "param_C": CC.ravel(),
                            "mean_test_score": flat,
                            "std_test_score": np.nanstd(scores, axis=2).ravel()
                            if not np.isnan(scores).all() else np.full(len(flat), np.nan),
                            "rank_test_score": rank, "admm_time": admm_time.ravel(),
                            "n_iter": n_iter.ravel(), "width_name": name,
                            "setup_time": setup}
        for s in range(n_splits):
            self.cv_results_[f"split{s}_test_score"] = scores[:, :, s].ravel()
        best = int(order[0])
        iw, ic = divmod(best, len(Cs))
        self.C_ = float(Cs[ic])
        self.h_ = widths[iw] if name == "h" else None
        self.gamma_ = widths[iw] if name == "gamma" else None
        self.best_score_ = float(flat[best])
        self.best_index_ = best
        self.classes_ = classes
        self.fit_time_ = {"search": t_search}
        self._log(1, f"best {name}={widths[iw]:g}, C={self.C_:g}: "
                     f"validation accuracy {self.best_score_:.4f}")
        if not self.refit:
            self.n_iter_ = np.array([max(1, n_iter.ravel()[best])])

    def _check_refit(self):
        check_is_fitted(self)
        if not self.refit:
            raise AttributeError("HSSSVCCV was fitted with refit=False: no model to predict")
        return self.best_estimator_

    def decision_function(self, X):
        """Decision values of ``best_estimator_``; see :meth:`HSSSVC.decision_function`."""
        return self._check_refit().decision_function(X)

    def predict(self, X):
        """Class labels from ``best_estimator_``, shape (n_samples,)."""
        return self._check_refit().predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
