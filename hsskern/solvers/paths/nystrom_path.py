"""The Nystrom backend of the path protocol: landmarks and features once, a linear SVM per C.

``prepare_nystrom`` checks the memory of what follows against the budget, picks k landmarks
Z, builds the map phi(x) = K(x, Z) U Lambda^{-1/2} (:class:`~hsskern.lowrank.NystromMap`)
and the feature matrix F = phi(X). ``nystrom_svm_path`` trains, for every label column, the
squared-hinge SVM on F along the whole C grid by the warm-started semismooth Newton path
(LASN, :func:`~hsskern.solvers.engines.ssn.l2svm_newton_path`) or the hinge SVM by LIBLINEAR at every
C (LLSVM, :func:`~hsskern.solvers.engines.liblinear.l1svm_liblinear`). The model is a
:class:`~hsskern.solvers.paths.path.FeatureModel` on the map: the landmarks, M and the weights.
"""
import time
from dataclasses import dataclass, field

import numpy as np

from ...lowrank import NystromMap, select_landmarks
from ...lowrank.landmarks import check_n_landmarks
from ...lowrank.nystrom import map_memory
from ...utils._memory import check_memory, format_bytes, resolve_budget
from ..engines.liblinear import l1svm_liblinear
from ...utils.validation import check_weights
from .path import FeatureModel, PathSolution, PreparedProblem, check_Cs, check_labels
from ..engines.ssn import auto_cholesky, l2svm_newton_path

__all__ = ["NystromProblem", "NystromBackend", "prepare_nystrom", "nystrom_svm_path",
           "nystrom_memory"]

LOSSES = ("squared_hinge", "hinge")


def nystrom_memory(n, n_components, *, loss="squared_hinge", newton_solver="auto"):
    """Estimated peak bytes of a Nystrom SVM fit on n points with k = ``n_components``.

    Two phases: the map (K(Z, Z) and its eigendecomposition,
    :func:`~hsskern.lowrank.nystrom.map_memory`), then F (8 n k bytes), M and the solver's
    own arrays: LIBLINEAR (hinge) copies F into its (index, value) rows, 16 (k + 2) bytes per
    point; the Newton solver copies the active rows of F (at most all of them; CG only when
    half the available memory holds them, which is counted as if it always did), and the
    direct solve (``"cholesky"``, or ``"auto"`` up to 4095 features) also keeps X_I^T X_I, a
    shifted copy and a product temporary. The rank r <= k is not known before the map is
    built: k stands for it.

    ``n_components`` may be an array (the estimate per k). Returns a dict of ``map``,
    ``features``, ``solver`` and ``peak``.
    """
    k = np.asarray(n_components, dtype=np.float64)
    n = float(n)
    if loss == "hinge":
        solver = 16.0 * n * (k + 2)
    else:
        direct = auto_cholesky(k) if newton_solver == "auto" else (
            np.full(k.shape, newton_solver == "cholesky"))
        solver = 8.0 * n * k + np.where(direct, 3 * 8.0 * (k + 1) ** 2, 0.0)
    features = 8.0 * n * k
    mp = map_memory(k)
    peak = np.maximum(mp, features + 8.0 * k * k + solver)
    return {"map": mp, "features": features, "solver": solver, "peak": peak}


def check_nystrom_memory(n, n_components, *, loss="squared_hinge", newton_solver="auto",
                         memory_budget=None):
    """Refuse (MemoryBudgetError) a fit whose :func:`nystrom_memory` peak exceeds the budget,
    naming the estimate per phase and the ``n_components`` below which every value fits."""
    budget = resolve_budget(memory_budget)
    k = int(n_components)
    est = nystrom_memory(n, k, loss=loss, newton_solver=newton_solver)
    if budget is None or est["peak"] <= budget:
        return est
    # the largest k below which every k fits (the solver's choice makes the need jump)
    ks = np.arange(1, k + 1)
    over = np.flatnonzero(nystrom_memory(n, ks, loss=loss,
                                         newton_solver=newton_solver)["peak"] > budget)
    k_fit = int(ks[over[0]]) - 1
    fits = (f"n_components <= {k_fit} would fit" if k_fit >= 1
            else "even n_components=1 would not fit: use fewer points")
    parts = (f"K(Z, Z) and its eigendecomposition: {format_bytes(est['map'])}, then "
             f"features F {n} x {k}: {format_bytes(est['features'])} and the {loss} solver: "
             f"{format_bytes(est['solver'])}")
    check_memory(float(est["peak"]), f"n_components={k} on {n} points ({parts})", budget,
                 hint=fits + " (or raise memory_budget)")
    return est


@dataclass(frozen=True, eq=False)
class NystromProblem(PreparedProblem):
    """The C-independent part of a Nystrom SVM: the feature map and F = phi(X).

    Attributes
    ----------
    feature_map : NystromMap
    features : ndarray of shape (n, r)
    stats : mapping
        ``n_landmarks``, ``n_components`` (the rank r), ``memory_estimate`` (bytes).
    timings : mapping
        Seconds: ``landmarks``, ``features`` (the map and F).
    """

    feature_map: NystromMap
    features: np.ndarray
    stats: object = field(default_factory=dict)
    timings: object = field(default_factory=dict)

    @property
    def n_samples(self):
        return self.features.shape[0]


# more than 10 parameters: Nystroem's (landmarks, random_state) and the k-means landmark search's
# knobs by name, as NystromSVCOptions holds them; the estimator passes them from there
def prepare_nystrom(X, kernel, n_components, *, landmarks="kmeans", eig_cutoff=1e-6,
                    max_kmeans_samples=20000, kmeans_iter=5, random_state=None,
                    loss="squared_hinge", newton_solver="auto", memory_budget=None, log=None):
    """Landmarks, feature map and feature matrix for the points X, memory checked first.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Validated training points.
    kernel : Kernel
    n_components : int
        Number k of landmarks (clipped to n with a warning).
    landmarks, max_kmeans_samples, kmeans_iter, random_state
        See :func:`~hsskern.lowrank.select_landmarks`.
    eig_cutoff : float
        Relative eigenvalue cutoff of K(Z, Z) (:func:`~hsskern.lowrank.nystrom_map`).
    loss, newton_solver
        The solver that will run on F (its memory is part of the estimate).
    memory_budget : float or None
        Bytes the fit may use (default 80% of the available memory), checked by
        :func:`check_nystrom_memory` before any work.
    log : callable or None
        ``log(level, line)``: level 1, one line when F is built.

    Returns
    -------
    NystromProblem
    """
    n = X.shape[0]
    k = check_n_landmarks(n_components, n)
    est = check_nystrom_memory(n, k, loss=loss, newton_solver=newton_solver,
                               memory_budget=memory_budget)
    timings = {}
    t0 = time.perf_counter()
    Z = select_landmarks(X, k, landmarks, max_samples=max_kmeans_samples, n_iter=kmeans_iter,
                         random_state=random_state)
    timings["landmarks"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fmap = NystromMap.from_landmarks(Z, kernel, eig_cutoff, memory_budget=memory_budget)
    F = fmap.transform(X, out=np.empty((n, fmap.n_components)))  # checked above
    timings["features"] = time.perf_counter() - t0
    if log is not None:
        log(1, f"{k} landmarks ({landmarks}), rank {fmap.n_components}, F {n} x "
            f"{fmap.n_components} in {timings['landmarks'] + timings['features']:.2f} s")
    stats = {"n_landmarks": k, "n_components": fmap.n_components,
             "memory_estimate": int(est["peak"])}
    return NystromProblem(fmap, F, stats, timings)


def _relative_gap(res, tol):
    """|grad f| relative to the scale the solver tested it against (tol_abs = tol * scale)."""
    return res.grad_norm * tol / res.tol_abs if res.tol_abs > 0 else 0.0


# more than 10 parameters: LIBLINEAR's / LinearSVC's own (loss, tol, max_iter, intercept_scaling,
# random_state, verbose) beside the path's problem, labels, grid and weights
def nystrom_svm_path(problem, Y, Cs, *, loss="squared_hinge", tol=1e-4, max_iter=1000,
                     intercept_scaling=1.0, newton_solver="auto", random_state=None, verbose=0,
                     weights=None):
    """The linear SVM on the Nystrom features for every C and every label column.

    Parameters
    ----------
    problem : NystromProblem
    Y : ndarray of shape (n, r)
        Label columns in {-1, +1}.
    Cs : sequence of float
        Solved in increasing order (:func:`~hsskern.solvers.paths.path.check_Cs`).
    loss : {"squared_hinge", "hinge"}
        Squared hinge: the semismooth Newton path, warm-started along C (one C gives exactly
        :func:`~hsskern.solvers.engines.ssn.l2svm_newton`'s cold solve). Hinge: LIBLINEAR's dual
        coordinate descent, cold at every C.
    tol, max_iter, intercept_scaling, newton_solver
        As in :func:`~hsskern.solvers.engines.ssn.l2svm_newton` (``tol`` is LIBLINEAR's for hinge).
    random_state : int, RandomState or None
        LIBLINEAR's sweep order (hinge).
    verbose : int
        The Newton solver's per-step lines.
    weights : ndarray of shape (n,) or None
        Per-point loss weights, finite and >= 0, shared by every label column (point i's
        loss is C w_i times its (squared) hinge; 0: no influence). None: unweighted.

    Returns
    -------
    tuple of PathSolution with ``coef`` of shape (r, n_components), one per C ascending.
    ``gap`` is the relative gradient norm the Newton solver stopped on (NaN for hinge).
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    F = problem.features
    Y = check_labels(Y, problem.n_samples)
    Cs = check_Cs(Cs)
    weights = check_weights(weights, problem.n_samples)
    columns = []  # per label column, one result per C
    for j in range(Y.shape[1]):
        if loss == "squared_hinge":
            columns.append(l2svm_newton_path(F, Y[:, j], Cs, tol=tol, max_iter=max_iter,
                                             intercept_scaling=intercept_scaling,
                                             newton_solver=newton_solver,
                                             sample_weight=weights, verbose=verbose).results)
        else:
            columns.append([l1svm_liblinear(F, Y[:, j], C, tol=tol, max_iter=max_iter,
                                            intercept_scaling=intercept_scaling,
                                            random_state=random_state,
                                            sample_weight=weights) for C in Cs])
    solutions = []
    for i, C in enumerate(Cs):
        res = [col[i] for col in columns]
        gap = ([_relative_gap(r, tol) for r in res] if loss == "squared_hinge"
               else np.nan)
        info = {"objective": np.array([r.objective for r in res])}
        if loss == "squared_hinge":
            info["n_active"] = np.array([r.n_active for r in res])
        solutions.append(PathSolution(
            C=float(C), intercept=[r.b for r in res], n_iter=[r.n_iter for r in res],
            converged=[r.converged for r in res], gap=gap,
            coef=np.array([r.w for r in res]), timings={"solve": sum(r.time for r in res)},
            info=info))
    return tuple(solutions)


@dataclass(frozen=True)
class NystromBackend:
    """The path protocol for the Nystrom-linearized SVM (LLSVM / LASN).

    ``prepare`` is :func:`prepare_nystrom`, ``path`` is :func:`nystrom_svm_path` with these
    options, ``model`` a :class:`~hsskern.solvers.paths.path.FeatureModel` on the feature map.
    """

    kernel: object
    n_components: int = 100
    landmarks: str = "kmeans"
    eig_cutoff: float = 1e-6
    max_kmeans_samples: int = 20000
    kmeans_iter: int = 5
    loss: str = "squared_hinge"
    tol: float = 1e-4
    max_iter: int = 1000
    intercept_scaling: float = 1.0
    newton_solver: str = "auto"
    random_state: object = None
    memory_budget: float = None
    verbose: int = 0
    log: object = None

    def check_memory(self, n):
        """Refuse before any work when a fit on n points cannot fit the budget."""
        return check_nystrom_memory(n, min(int(self.n_components), n), loss=self.loss,
                                    newton_solver=self.newton_solver,
                                    memory_budget=self.memory_budget)

    def prepare(self, X, Y=None):
        """The problem of the points X (Y unused: the preparation serves every class)."""
        return prepare_nystrom(X, self.kernel, self.n_components, landmarks=self.landmarks,
                               eig_cutoff=self.eig_cutoff,
                               max_kmeans_samples=self.max_kmeans_samples,
                               kmeans_iter=self.kmeans_iter, random_state=self.random_state,
                               loss=self.loss, newton_solver=self.newton_solver,
                               memory_budget=self.memory_budget, log=self.log)

    def path(self, prepared, Y, Cs, weights=None):
        return nystrom_svm_path(prepared, Y, Cs, loss=self.loss, tol=self.tol,
                                max_iter=self.max_iter, intercept_scaling=self.intercept_scaling,
                                newton_solver=self.newton_solver,
                                random_state=self.random_state, verbose=self.verbose,
                                weights=weights)

    def model(self, prepared, solutions):
        return FeatureModel(prepared.feature_map, solutions)
