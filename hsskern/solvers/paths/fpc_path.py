"""The FPC backend of the path protocol: polynomial features and their factor, then the ADMM.

FPC has no C: its capacity is the degree, a preparation parameter, so its path has the single
point ``Cs = [None]``. :func:`fpc_degree_search` is its cross-validation unit: every fold of a
degree, and the refit on all rows, as masked columns of one ADMM on the full feature matrix.

Repeated (x, y) rows are fitted once with their counts, which gives exactly the same ADMM
iterates (see :func:`~hsskern.solvers.engines.fpc_admm.fpc_admm`); "first n centers" means the first
n distinct points.

Weights: a point of weight w_i counts w_i times in the hinge loss, (1 / W) sum_i w_i
(1 - y_i (A u)_i)_+ with W = sum_i w_i; they enter the ADMM exactly as the counts of repeated
rows do (a distinct row carries the sum of its copies' weights), so integer weights give the
run on repeated rows, and "auto" alpha and beta take W for the number of rows. The
factor of beta A^T diag(w) A + alpha I depends on the weights: ``prepare`` forms the
features, ``path`` the factor for its weights and the ADMM.
"""
import math
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state

from ...features.polynomial import check_feature_memory, fit_polynomial_features
from ..engines.fpc_admm import fpc_admm, fpc_factor, gram_matrix, proximal_alpha
from ...utils.validation import check_weights
from .path import FeatureModel, PathSolution, PreparedProblem, check_labels

__all__ = ["FPCProblem", "FPCBackend", "fpc_degree_search", "distinct_rows", "admm_scale",
           "derive_seed"]


def distinct_rows(X, y_idx):
    """Distinct (x, label) rows in order of first occurrence: (first index, inverse, counts).

    Order of first occurrence keeps the "first n centers" scheme on the first n distinct
    points (duplicated centers would only repeat a column of A).
    """
    Z = np.column_stack([X, y_idx.astype(np.float64)])
    # a stable lexsort and a neighbour comparison: np.unique(axis=0) sorts structured rows,
    # several times slower
    order = np.lexsort(Z.T[::-1])
    Zs = Z[order]
    new = np.empty(Z.shape[0], dtype=bool)
    new[0] = True
    np.any(Zs[1:] != Zs[:-1], axis=1, out=new[1:])
    starts = np.flatnonzero(new)
    group = np.empty(Z.shape[0], dtype=np.intp)
    group[order] = np.cumsum(new) - 1
    first = order[starts]  # stable: the first occurrence of each group
    counts = np.diff(np.append(starts, Z.shape[0]))
    by_first = np.argsort(first, kind="stable")
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.size)
    return first[by_first], rank[group], counts[by_first]


def weighted_gram(A, counts):
    """A^T diag(counts) A over the rows with a positive count."""
    if counts.min() == 1 and counts.max() == 1:
        return gram_matrix(A)  # no copy of A
    rows = np.flatnonzero(counts)
    B = A[rows]
    c = counts[rows]
    if np.any(c != 1):
        B *= np.sqrt(c.astype(np.float64))[:, None]
    return gram_matrix(B)


def admm_scale(value, n_rows):
    """beta (and the scaling's alpha): "auto" is 1 / (training rows), the unit parameter of
    the summed hinge loss (see :mod:`hsskern.solvers.engines.fpc_admm`)."""
    return 1.0 / n_rows if isinstance(value, str) else float(value)


def proximal_weight(value, G, beta):
    """The ADMM's alpha: "auto" is relative to the spectrum of beta G
    (:func:`~hsskern.solvers.engines.fpc_admm.proximal_alpha`), so the u-step's damping does not
    depend on the scale of the features."""
    return proximal_alpha(G, beta) if isinstance(value, str) else float(value)


def derive_seed(random_state):
    """An int seed drawn from ``random_state`` (so one RandomState can seed several steps)."""
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def _labels_of(Y):
    """Integer labels of the one-vs-rest columns (what duplicate detection compares)."""
    return (Y[:, 0] > 0).astype(np.intp) if Y.shape[1] == 1 else np.argmax(Y, axis=1)


@dataclass(frozen=True, eq=False)
class FPCProblem(PreparedProblem):
    """Features of the distinct training rows (the factor depends on the weights: ``path``).

    Attributes
    ----------
    feature_map : PolynomialFeatureMap
    A : ndarray of shape (m_distinct, n_centers)
    first, inverse, counts : ndarray
        The distinct rows (see :func:`distinct_rows`); ``counts`` the summed weights of each
        distinct row's copies (its number of copies without weights).
    timings, stats : mapping
    """

    feature_map: object
    A: np.ndarray
    first: np.ndarray
    inverse: np.ndarray
    counts: np.ndarray
    timings: object = field(default_factory=dict)
    stats: object = field(default_factory=dict)

    @property
    def n_samples(self):
        return self.inverse.shape[0]


@dataclass(frozen=True)
class FPCBackend:
    """The path protocol for FPC (Zeng, Wu, Lin, Zhou, Algorithm 1) at one degree.

    ``prepare`` uses the labels: repeated (x, y) rows are merged before the features are
    formed. ``path`` accepts only ``Cs = [None]``; it factors beta A^T diag(w) A + alpha I for
    its weights (the counts of the merged rows, times the points' weights) and runs the ADMM.
    """

    degree: int = 3
    centers: str = "first"
    scaling: str = "auto"
    tol: float = 5e-4
    max_iter: int = 100
    alpha: object = "auto"
    beta: object = "auto"
    memory_budget: float = None
    random_state: object = None
    verbose: int = 0

    def prepare(self, X, Y):
        """Features of the distinct rows of (X, Y) (the "auto" scaling guards the Gram
        matrix's rounding for the m rows given)."""
        m, d = X.shape
        Y = check_labels(Y, m)
        check_feature_memory(m, d, self.degree, self.memory_budget, n_problems=Y.shape[1])
        t0 = time.perf_counter()
        first, inverse, counts = distinct_rows(X, _labels_of(Y))
        dup = first.size < m
        fmap, Xs = fit_polynomial_features(X[first] if dup else X, self.degree, self.centers,
                                           self.scaling, derive_seed(self.random_state),
                                           admm_scale(self.alpha, m), admm_scale(self.beta, m),
                                           n_rows=m)
        A = fmap.features(Xs, budget=math.inf)
        timings = {"features": time.perf_counter() - t0}
        return FPCProblem(fmap, A, first, inverse, counts, timings,
                          {"n_centers": fmap.n_centers, "n_distinct": int(first.size)})

    def path(self, prepared, Y, Cs=(None,), weights=None):
        if list(Cs) != [None]:
            raise ValueError(f"FPC has no C (its capacity is the degree): Cs must be [None], "
                             f"got {list(Cs)!r}")
        p = prepared
        Y = check_labels(Y, p.n_samples)
        weights = check_weights(weights, p.n_samples)
        t0 = time.perf_counter()
        counts = p.counts if weights is None else np.bincount(
            p.inverse, weights=weights, minlength=p.first.size)
        rows = float(counts.sum())
        beta = admm_scale(self.beta, rows)
        plain = weights is None and p.first.size == p.n_samples
        G = gram_matrix(p.A) if plain else weighted_gram(p.A, counts)
        alpha = proximal_weight(self.alpha, G, beta)
        factor = fpc_factor(alpha=alpha, beta=beta, gram=G)
        del G  # fpc_factor factored its own copy
        t_factor = time.perf_counter() - t0
        res = fpc_admm(p.A, Y[p.first], alpha=alpha, beta=beta, tol=self.tol,
                       max_iter=self.max_iter, factor=factor,
                       mask=None if plain else counts[:, None],
                       verbose=max(self.verbose - 1, 0))
        return (solution_of(res, slice(None), {"factor": t_factor}),)

    def model(self, prepared, solutions):
        return FeatureModel(prepared.feature_map, solutions)


def solution_of(res, cols, timings=None):
    """The PathSolution of the columns ``cols`` of a (batched) :func:`fpc_admm` run
    (``timings``: phases before the ADMM's)."""
    u = np.asarray(res.u).reshape(res.u.shape[0], -1)[:, cols]
    r = u.shape[1]
    idx = range(np.asarray(res.u).reshape(res.u.shape[0], -1).shape[1])[cols]
    history = [np.atleast_1d(res.history)] if np.ndim(res.iterations) == 0 else [
        res.history[c] for c in idx]
    gap = np.array([h[-1] if len(h) else np.nan for h in history])
    return PathSolution(C=None, intercept=np.zeros(r),
                        n_iter=np.atleast_1d(res.iterations)[cols],
                        converged=np.atleast_1d(res.converged)[cols], gap=gap, coef=u.T,
                        timings={**(timings or {}), "admm": res.time},
                        info={"history": history,
                              "objective": np.atleast_1d(res.objective)[cols]})


def fpc_degree_search(X, Y, splits, degrees, backend, refit=True, warm_degrees=True,
                      log=None, fit_weights=None):
    """Every degree's folds (and the refit) as masked columns of ONE ADMM per degree.

    With k-fold splits every fold's Gram matrix A_f^T A_f is formed once and each training
    Gram is A^T A - A_f^T A_f, so the search costs one Gram pass per degree; there are no
    training-fold copies of A and the held-out decision values come out of the run. With
    ``warm_degrees`` each degree starts from the split variable and multiplier the previous
    one ended at (v, w live on the training rows every degree shares; u does not carry over).

    Parameters
    ----------
    X : ndarray of shape (m, d)
    Y : ndarray of shape (m, r) of +-1 label columns
    splits : list of (train, test) index arrays
    degrees : list of int, ascending
    backend : FPCBackend
        Its options (its own degree is ignored).
    refit, warm_degrees : bool
    log : callable or None
    fit_weights : list or None
        Per-point weights of each fit's training rows: one array (aligned with ``train``,
        finite, >= 0, a positive sum) or None per split, then one over all m rows for the
        refit. None: unweighted. Weighted folds form their own weighted Gram matrices (the
        k-fold subtraction needs one weight per row in every fold).

    Returns
    -------
    list, one entry per degree, of dict with ``decision`` (per split: the held-out decision
    values, shape (len(test), r)), ``n_iter`` (per split), ``setup_time`` (features and Gram),
    ``solve_time`` (the batched ADMM, per split), ``refit`` ((feature map, PathSolution) or
    None) and ``n_centers``.
    """
    m = X.shape[0]
    n_prob = Y.shape[1]
    k = len(splits)
    tests = np.concatenate([te for _, te in splits])
    weighted = fit_weights is not None and any(w is not None for w in fit_weights)
    partition = (not weighted and tests.size == m
                 and np.array_equal(np.sort(tests), np.arange(m)))
    rs = check_random_state(backend.random_state)
    center_seed = derive_seed(rs)
    fits = list(splits) + ([(np.arange(m), None)] if refit else [])
    first, inv, counts = distinct_rows(X, _labels_of(Y))
    mu = first.size
    Xu = X[first]
    fw = [None] * len(fits) if not weighted else [
        fit_weights[f] if f < k else fit_weights[-1] for f in range(len(fits))]
    # a distinct row's count in a fit: its copies among the fit's rows (their summed weights)
    mask = np.zeros((mu, len(fits) * n_prob), dtype=np.float64 if weighted else np.int64)
    for f, (tr, _) in enumerate(fits):
        mask[:, f * n_prob:(f + 1) * n_prob] = np.bincount(inv[tr], weights=fw[f],
                                                           minlength=mu)[:, None]
    if refit and weighted:
        counts = mask[:, k * n_prob]
    test_counts = [np.bincount(inv[te], minlength=mu) for _, te in splits]
    Y_all = np.tile(Y[first], (1, len(fits)))
    rows = mask[:, ::n_prob].sum(axis=0).astype(float)
    al = np.repeat([admm_scale(backend.alpha, r) for r in rows], n_prob)
    be = np.repeat([admm_scale(backend.beta, r) for r in rows], n_prob)
    out, res = [], None
    for a, s in enumerate(degrees):
        t0 = time.perf_counter()
        fmap, Xs = fit_polynomial_features(Xu, s, backend.centers, backend.scaling, center_seed,
                                           admm_scale(backend.alpha, m),
                                           admm_scale(backend.beta, m), n_rows=m)
        A = fmap.features(Xs, budget=math.inf)
        fold_grams = [weighted_gram(A, c) for c in test_counts] if partition else None
        G = sum(fold_grams) if partition else None
        setup = time.perf_counter() - t0
        t1 = time.perf_counter()
        factors, alphas = [], al.copy()
        for f, (tr, _) in enumerate(fits):
            if f == k:  # the refit
                gram_f = G if partition else weighted_gram(A, counts)
            elif partition:
                gram_f = G - fold_grams[f]
                fold_grams[f] = None  # n x n each: hold at most k + 3 of them
            else:
                gram_f = weighted_gram(A, mask[:, f * n_prob])
            a_f = proximal_weight(backend.alpha, gram_f, be[f * n_prob])
            alphas[f * n_prob:(f + 1) * n_prob] = a_f
            factors.append(fpc_factor(alpha=a_f, beta=be[f * n_prob], gram=gram_f))
            factors += [factors[-1]] * (n_prob - 1)
        # u does not carry over (other centers, and the "auto" scaling may differ per
        # degree): it starts at 0, so the first u-step fits the new features to the previous
        # degree's decision values, which the larger polynomial space contains
        warm = {"v0": res.v, "w0": res.w} if warm_degrees and res is not None else {}
        res = fpc_admm(A, Y_all, alpha=alphas, beta=be, tol=backend.tol,
                       max_iter=backend.max_iter,
                       factor=factors, mask=mask, verbose=max(backend.verbose - 2, 0), **warm)
        solve = (time.perf_counter() - t1) / k
        entry = {"decision": [], "n_iter": [], "setup_time": setup, "solve_time": solve,
                 "n_centers": fmap.n_centers, "refit": None}
        for f, (_, te) in enumerate(splits):
            cols = slice(f * n_prob, (f + 1) * n_prob)
            entry["decision"].append(res.Au[inv[te], cols])
            entry["n_iter"].append(int(np.max(res.iterations[cols])))
        if refit:
            entry["refit"] = (fmap, solution_of(res, slice(k * n_prob, (k + 1) * n_prob)))
        out.append(entry)
        if log is not None:
            log(1, f"degree {s}: {fmap.n_centers} centers, {time.perf_counter() - t0:.2f} s")
        del A
    return out
