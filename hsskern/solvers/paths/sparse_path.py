"""The sparse-Cholesky backend of the path protocol (Abdellatif 2019, Algorithm 1).

``prepare_sparse_cholesky`` estimates the sparse Gram matrix of the compactly supported
Gaussian and checks it against the budget, assembles it, factors K + beta I = P^T L L^T P with
a fill-reducing ordering and keeps the rows of L: an exact feature map of K + beta I.
``sparse_cholesky_svm_path`` trains LIBLINEAR on those rows for every C and label column and
recovers the kernel expansion by one sparse triangular solve
(:func:`~hsskern.sparse.svm.linear_svm_on_factor`). The model,
:class:`CompactKernelExpansion`, evaluates f(z) = sum_i a_i k(x_i, z) + b over the support
vectors with the sparse cross kernel (neighbour queries), never a dense block.

Weights: point i's loss is weighted by C w_i (LIBLINEAR's per-instance C) and its diagonal
shift is beta / w_i: the factor is of K + beta W^-1. A point of integer weight c is then
exactly c copies of it (each copy a row of K + beta I: splitting its coefficient a_i evenly
over the copies, their beta terms sum to beta a_i^2 / c), so weights mean repeated rows, as
for the other backends. The shift depends on the weights, so a weighted ``path`` assembles
and factors K + beta W^-1 itself (``prepare``'s factor is of K + beta I).
"""
import time
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from ...sparse.cholesky import DEFAULT_BETA, sparse_cholesky
from ...sparse.gram import (assemble_compact_gram, check_gram_budget, compact_cross_gram_apply,
                           estimate_gram)
from ...sparse.svm import factor_features, linear_svm_on_factor
from ...utils._scaling import distance_scale
from ...utils.validation import check_weights
from .path import PathSolution, PreparedProblem, check_Cs, check_labels

__all__ = ["SparseCholeskyProblem", "SparseCholeskyBackend", "CompactKernelExpansion",
           "prepare_sparse_cholesky", "sparse_cholesky_svm_path"]

#: Recovered coefficients below this fraction of the largest are rounding noise (LIBLINEAR
#: accumulates w by updates; the triangular solve amplifies by at most cond(L) <= beta^-1/2),
#: not support vectors; dropping them changes a decision value by < 1e-9 * max|a| per neighbour.
_PRUNE_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class SparseCholeskyProblem(PreparedProblem):
    """The C-independent part: the points, the compact kernel, the factor and its rows.

    Attributes
    ----------
    points : ndarray of shape (n, d)
    kernel : Kernel
        compact_gaussian.
    factor : SparseCholeskyFactor
        Of K + beta I (beta possibly grown until positive definite).
    features : csr_matrix of shape (n, n)
        The rows of L (permuted order, :func:`~hsskern.sparse.svm.factor_features`).
    stats : mapping
        ``nnz_K``, ``nnz_L``, ``fill_in``, ``backend``, ``beta``, ``estimated_nnz_K``.
    timings : mapping
        Seconds: ``gram``, ``factor``, ``features``.
    scale : float
        The power of two the geometry (k-d trees, distances) divides points and width by so
        that it stays in float range (1.0 for ordinary data; exact, see
        :func:`~hsskern.utils._scaling.distance_scale`).
    """

    points: np.ndarray
    kernel: object
    factor: object
    features: object
    stats: object = field(default_factory=dict)
    timings: object = field(default_factory=dict)
    scale: float = 1.0

    @property
    def n_samples(self):
        return self.points.shape[0]


def prepare_sparse_cholesky(X, kernel, *, beta=DEFAULT_BETA, backend="auto", ordering="amd",
                            memory_budget=None, random_state=0, log=None):
    """Sparse Gram, factor of K + beta I and its rows for the points X, memory checked first.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Validated training points.
    kernel : Kernel
        compact_gaussian (:func:`~hsskern.sparse.gram.compact_kernel`).
    beta : float
        Diagonal shift; grown (x10, with a warning) while K + beta I is not positive definite.
    backend, ordering
        See :class:`~hsskern.sparse.cholesky.SparseCholeskyFactor`.
    memory_budget : float or None
        Bytes the Gram assembly may use (checked on a sampled estimate before allocating)
        and, with CHOLMOD, the factor (checked on its exact symbolic size before the numeric
        factorization); default 80% of the available memory.
    random_state : int, RandomState or None
        Seeds the estimate's row sample (an int is used as the seed, anything else gives 0).
    log : callable or None
        ``log(level, line)``: level 1, a line per phase.

    Returns
    -------
    SparseCholeskyProblem
    """
    seed = int(random_state) if isinstance(random_state, Integral) else 0
    log = log or (lambda level, msg: None)
    timings = {}
    t0 = time.perf_counter()
    # the estimate (bounded work, on samples) first: a refused fit touches nothing else
    est = estimate_gram(X, kernel, random_state=seed)
    check_gram_budget(est, memory_budget)
    scale = distance_scale(X)  # the kernel sees |x - y| / sigma only: exact rescaling
    Xs, ks = (X, kernel) if scale == 1.0 else (X / scale, kernel.rescaled(scale))
    tree = cKDTree(Xs)
    K = assemble_compact_gram(Xs, ks, tree)
    del tree, Xs
    timings["gram"] = time.perf_counter() - t0
    log(1, f"Gram {K.shape[0]} x {K.shape[0]}: nnz={K.nnz} (estimated {est.nnz}), "
           f"{timings['gram']:.2f} s")
    t0 = time.perf_counter()
    factor = sparse_cholesky(K, beta, backend=backend, ordering=ordering,
                             on_not_pd="increase", max_memory=memory_budget)
    del K
    timings["factor"] = time.perf_counter() - t0
    log(1, f"{factor!r}, {timings['factor']:.2f} s")
    t0 = time.perf_counter()
    features = factor_features(factor)
    timings["features"] = time.perf_counter() - t0
    stats = {"nnz_K": factor.nnz_K, "nnz_L": factor.nnz_L, "fill_in": factor.fill_in,
             "backend": factor.backend, "beta": factor.beta, "estimated_nnz_K": est.nnz}
    return SparseCholeskyProblem(X, kernel, factor, features, stats, timings, scale)


# more than 10 parameters: LinearSVC's own (loss, dual, tol, max_iter, intercept_scaling,
# random_state) beside the path's problem, labels, grid and weights
def sparse_cholesky_svm_path(problem, Y, Cs, *, loss="squared_hinge", dual="auto", tol=1e-4,
                             max_iter=1000, intercept_scaling=1.0, random_state=None,
                             log=None, weights=None, factor=None, features=None):
    """LIBLINEAR on the factor's rows for every C and every label column, and the recovered
    kernel expansion a = y * lambda.

    Parameters
    ----------
    problem : SparseCholeskyProblem
    Y : ndarray of shape (n, r)
        Label columns in {-1, +1}.
    Cs : sequence of float
        Solved in increasing order (:func:`~hsskern.solvers.paths.path.check_Cs`), each from
        scratch (LIBLINEAR has no warm start here); the factor is shared.
    loss, dual, tol, max_iter, intercept_scaling, random_state
        See :func:`~hsskern.sparse.svm.linear_svm_on_factor`.
    log : callable or None
        ``log(level, line)``: level 1, a line per C.
    weights : ndarray of shape (n,) or None
        Per-point weights, finite and >= 0, shared by every label column: LIBLINEAR's
        per-instance C (point i's loss weighted by C w_i; 0: no influence, a = 0 there).
        For weights to mean repeated rows, pass the factor of K + beta W^-1
        (:func:`weighted_factor`; :meth:`SparseCholeskyBackend.path` does).
    factor, features : optional
        A factor (and its rows) to train on instead of the problem's (the weighted one).

    Returns
    -------
    tuple of PathSolution with ``dual_coef`` of shape (n, r) (original point order), one per
    C ascending. ``converged`` is False where LIBLINEAR hit ``max_iter``; ``gap`` is not
    measured (NaN).
    """
    n = problem.n_samples
    Y = check_labels(Y, n)
    Cs = check_Cs(Cs)
    weights = check_weights(weights, n)
    if factor is None:
        factor, features = problem.factor, problem.features
    elif features is None:
        features = factor_features(factor)
    r = Y.shape[1]
    solutions = []
    for C in Cs:
        t0 = time.perf_counter()
        coef, intercept, n_iter = np.empty((n, r)), np.empty(r), np.empty(r, dtype=np.int64)
        for j in range(r):
            res = linear_svm_on_factor(factor, (Y[:, j] > 0).astype(np.intp), C,
                                       features=features, loss=loss, dual=dual,
                                       tol=tol, max_iter=max_iter,
                                       intercept_scaling=intercept_scaling,
                                       random_state=random_state, sample_weight=weights)
            coef[:, j], intercept[j], n_iter[j] = res.dual_coef[0], res.intercept[0], res.n_iter
        t = time.perf_counter() - t0
        if log is not None:
            log(1, f"C={C:g}: LIBLINEAR {int(n_iter.max())} iterations + recovery, {t:.2f} s")
        solutions.append(PathSolution(C=float(C), intercept=intercept, n_iter=n_iter,
                                      converged=n_iter < max_iter, gap=np.nan,
                                      dual_coef=coef, timings={"svm_and_recover": t}))
    return tuple(solutions)


def weighted_factor(problem, weights, *, backend="auto", ordering="amd", memory_budget=None):
    """The factor of K + beta W^-1 for the problem's points (see the module notes).

    K is assembled again (``prepare`` freed it; its size was checked there) and shifted by
    beta / w_i on its diagonal, beta the problem's (after any growth); a point of weight 0
    keeps beta (it has no loss, so its shift does not touch the other points' entries).
    Returns (factor, features, seconds).
    """
    t0 = time.perf_counter()
    beta = float(problem.factor.beta)
    s = problem.scale
    Xs, ks = ((problem.points, problem.kernel) if s == 1.0
              else (problem.points / s, problem.kernel.rescaled(s)))
    K = assemble_compact_gram(Xs, ks, cKDTree(Xs)).tocsc()
    extra = np.zeros(problem.n_samples)
    live = weights > 0
    extra[live] = beta / weights[live] - beta
    K = K + sp.diags(extra, format="csc")
    factor = sparse_cholesky(K, beta, backend=backend, ordering=ordering,
                             on_not_pd="increase", max_memory=memory_budget)
    return factor, factor_features(factor), time.perf_counter() - t0


class CompactKernelExpansion:
    """f(z) = sum_i a_i k(x_i, z) + b with a compact kernel, for one or several solutions.

    Keeps the union of the solutions' support vectors: the points with a coefficient above
    ``prune_rtol`` times the largest of their solution (smaller ones are the recovery's
    rounding noise). Decision values come from the sparse cross kernel over a k-d tree of the
    support vectors, a chunk of rows at a time (:func:`~hsskern.sparse.gram.compact_cross_gram_apply`).

    Parameters
    ----------
    points : ndarray of shape (n, d)
    kernel : Kernel
    solutions : sequence of PathSolution with ``dual_coef``
    prune_rtol : float, default 1e-9
    scale : float, default 1.0
        Points and width are divided by it before any distance is formed (a power of two:
        exact; the problem's ``scale``).
    """

    def __init__(self, points, kernel, solutions, prune_rtol=_PRUNE_RTOL, scale=1.0):
        keep = np.zeros(points.shape[0], dtype=bool)
        for s in solutions:
            A = s.dual_coef
            largest = np.max(np.abs(A)) if A.size else 0.0
            keep |= np.any(np.abs(A) > prune_rtol * largest, axis=1)
        support = np.flatnonzero(keep)
        coef = np.concatenate([s.dual_coef for s in solutions], axis=1)  # (n, S r)
        self.kernel = kernel
        self.support = support
        self.support_vectors = np.ascontiguousarray(points[support])
        self.dual_coef = np.ascontiguousarray(coef[support].T)  # (S r, n_SV)
        self.intercept = np.concatenate([s.intercept for s in solutions])
        self.shape = (len(solutions), solutions[0].n_targets)
        self.scale = float(scale)
        self._sv = (self.support_vectors / self.scale if self.scale != 1.0
                    else self.support_vectors)
        self._kernel = kernel.rescaled(self.scale) if self.scale != 1.0 else kernel
        self.tree = cKDTree(self._sv) if support.size else None
        if support.size:  # the box of the support vectors, widened by the support radius
            R = self._kernel.support_radius
            self._lo, self._hi = self._sv.min(axis=0) - R, self._sv.max(axis=0) + R

    def decision(self, X):
        """Decision values, shape (n_solutions, m, r); X validated by the caller."""
        out = np.zeros((X.shape[0], self.dual_coef.shape[0]))
        if self.tree is not None:
            with np.errstate(over="ignore"):  # a point far out of range: no neighbour
                Xs = X / self.scale if self.scale != 1.0 else X
            # rows outside the box have no support vector within the radius: entries 0
            near = np.all((Xs >= self._lo) & (Xs <= self._hi), axis=1)
            if near.any():
                out[near] = compact_cross_gram_apply(Xs[near], self._sv, self._kernel,
                                                     self.dual_coef.T, tree=self.tree)
        out += self.intercept
        S, r = self.shape
        return out.reshape(X.shape[0], S, r).transpose(1, 0, 2)


@dataclass(frozen=True)
class SparseCholeskyBackend:
    """The path protocol for the sparse-Cholesky SVM of a compactly supported kernel.

    ``prepare`` is :func:`prepare_sparse_cholesky`, ``path`` is
    :func:`sparse_cholesky_svm_path` with these options, ``model`` a
    :class:`CompactKernelExpansion` over the support vectors.
    """

    kernel: object
    beta: float = DEFAULT_BETA
    backend: str = "auto"
    ordering: str = "amd"
    loss: str = "squared_hinge"
    dual: object = "auto"
    tol: float = 1e-4
    max_iter: int = 1000
    intercept_scaling: float = 1.0
    random_state: object = None
    memory_budget: float = None
    log: object = None

    def prepare(self, X, Y=None):
        """The problem of the points X (Y unused: the preparation serves every class)."""
        return prepare_sparse_cholesky(X, self.kernel, beta=self.beta, backend=self.backend,
                                       ordering=self.ordering,
                                       memory_budget=self.memory_budget,
                                       random_state=self.random_state, log=self.log)

    def path(self, prepared, Y, Cs, weights=None):
        """Every C on the prepared factor; with weights on that of K + beta W^-1
        (:func:`weighted_factor`, its time in the first C's ``weighted_factor``)."""
        weights = check_weights(weights, prepared.n_samples)
        factor = features = None
        t = 0.0
        if weights is not None and not np.all(weights == 1.0):
            factor, features, t = weighted_factor(prepared, weights, backend=self.backend,
                                                  ordering=self.ordering,
                                                  memory_budget=self.memory_budget)
        sols = sparse_cholesky_svm_path(prepared, Y, Cs, loss=self.loss, dual=self.dual,
                                        tol=self.tol, max_iter=self.max_iter,
                                        intercept_scaling=self.intercept_scaling,
                                        random_state=self.random_state, log=self.log,
                                        weights=weights, factor=factor, features=features)
        if factor is None:
            return sols
        first = sols[0]
        return (PathSolution(C=first.C, intercept=first.intercept, n_iter=first.n_iter,
                             converged=first.converged, gap=first.gap,
                             dual_coef=first.dual_coef,
                             timings={"weighted_factor": t, **first.timings},
                             info=first.info),) + sols[1:]

    def model(self, prepared, solutions):
        return CompactKernelExpansion(prepared.points, self.kernel, solutions,
                                      scale=prepared.scale)
