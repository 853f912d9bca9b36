"""nu paths: LIBSVM's nu-machines and its one-class SVM through the path protocol.

The path runs over nu as the HSS path runs over C: one preparation, then every nu of an
ascending grid, each started from the last nu's solution (:func:`nu_regrow`, always feasible),
the first from LIBSVM's start (:func:`nu_start`) or, for the one-class SVM with many support
vectors, from a one-class ADMM on the HSS factor. The engine is the cached SMO
(:class:`~hsskern.solvers.engines.interface.CachedEngine`) in its Solver_NU mode.

nu-SVC (one pair of classes; one-vs-one is :class:`~hsskern.solvers.paths.pairwise.PairwiseBackend`
around it): min 1/2 a^T Q a over 0 <= a_i <= w_i with y^T a = 0 and e^T a = nu sum(w);
Solver_NU returns the two offsets rho and r, the model is y a / r with intercept -rho / r.
nu-SVR: the 2 l variables of epsilon-SVR (a point's + and - copies) with linear term (-y, +y),
bounds C w, each half's sum nu C sum(w) / 2; epsilon = -r. One-class: every sign +1, bounds
w, sum a = nu sum(w), no linear term; the decision sum a_i k(x_i, x) - rho.

These backends never refuse a nu: one a problem does not admit (a calibration fold's classes,
say) gets the zero model, its ``info`` saying why (``r``: NaN for an infeasible nu, else
Solver_NU's r, whose value outside (0, :data:`NO_FREE`) means no margin). The estimators check
nu before any work and the margin after, with the classes' names.
"""
import warnings
from dataclasses import dataclass, field

import numpy as np

from ...kernels import kernel_operator
from ..engines.interface import CachedEngine, DualProblem, DualStart
from .one_class_admm import prepare_one_class_admm
from .pairwise import class_pairs
from .path import KernelExpansion, PathSolution, PreparedProblem, check_labels

__all__ = ["NuSVCBackend", "NuSVRBackend", "OneClassBackend", "NuProblem", "NO_FREE",
           "nu_start", "nu_regrow", "nu_feasible", "has_margin", "check_nu_pairs",
           "check_margins"]

#: Solver_NU's r of a label with no free variable and none at its lower bound: the midpoint
#: of (lb, the engine's infinity 1e300), i.e. no finite offset
NO_FREE = 1e299


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


def nu_feasible(nu, w_pos, w_neg):
    """LIBSVM's test of a pair of classes with weight sums w_pos, w_neg: nu (w_pos + w_neg)
    / 2 <= min(w_pos, w_neg)."""
    return nu * (w_pos + w_neg) / 2 <= min(w_pos, w_neg)


def has_margin(r):
    """Whether Solver_NU's r is a margin a model can be divided by (see NuSVC's errors)."""
    return r is not None and 0 < r < NO_FREE


def _label(c):
    """A class label as the user wrote it (numpy scalars as Python's)."""
    return c.item() if isinstance(c, np.generic) else c


def _names(classes, i, j):
    return f"classes {_label(classes[i])!r} and {_label(classes[j])!r}"


def check_nu_pairs(nus, classes, mass):
    """LIBSVM's refusal, before any work, of a nu some pair of classes does not admit
    (``mass``: each class's weight sum): a ValueError naming the pair and its largest nu."""
    for i, j in class_pairs(len(classes)):
        for nu in nus:
            if not nu_feasible(nu, mass[i], mass[j]):
                a, b = mass[i], mass[j]
                raise ValueError(
                    f"specified nu is infeasible for {_names(classes, i, j)}: nu={nu:g} "
                    f"needs nu * (n1 + n2) / 2 <= min(n1, n2) (n1 = {a:g}, n2 = {b:g}, the "
                    f"classes' weights summed); use a nu below {2 * min(a, b) / (a + b):g}")


def check_margins(nu, rs, classes):
    """Solver_NU's r of each pair (``rs``, in :func:`class_pairs` order) is the margin the
    model is divided by: a clear error where it has none (LIBSVM divides anyway;
    scikit-learn reports non-finite or arbitrary values).

    r <= 0, even by less than the solver's tolerance, is not rounding to be accepted: the
    primal's margin is 0 there, where its optimum is w = 0, so the classifier alpha / r is
    undefined. LIBSVM's model then divides by a number whose sign is noise: where
    scikit-learn's ``NuSVC(nu=0.01 or 0.05, kernel="linear")`` meets it on
    ``make_classification(200, 5)`` data, its models score 0.14 to 0.78 on their own
    training points, where a linear SVC scores about 0.9 (a negative r inverts the
    predictions)."""
    for (i, j), r in zip(class_pairs(len(classes)), rs):
        if r is None or has_margin(r):
            continue
        if r <= 0:
            raise ValueError(f"nu={nu:g} is below the range where {_names(classes, i, j)} "
                             f"have a nonzero classifier: Solver_NU's margin r = {r:g} <= 0, "
                             "so the optimal w is 0 and the model alpha / r is undefined "
                             "(LIBSVM divides by r anyway, and its decision values are "
                             "arbitrary, their sign that of r's rounding); use a larger nu")
        raise ValueError(f"nu={nu:g} is the largest feasible value for "
                         f"{_names(classes, i, j)}: every point of the smaller class is at "
                         "its bound, where Solver_NU's offsets are undefined (scikit-learn "
                         "reports non-finite coefficients); use a smaller nu")


@dataclass(frozen=True, eq=False)
class NuProblem(PreparedProblem):
    """The points (the engine computes their kernel rows on demand) and, for the one-class
    ADMM start, the ADMM on the HSS factor of K (None otherwise)."""

    points: object
    admm: object = None
    stats: object = field(default_factory=dict)
    timings: object = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class _NuPath:
    """What the nu backends share: the kernel, the engine's options
    (:class:`~hsskern.solvers.engines.cached_smo.SMOOptions`, cache already within the budget) and
    a ``log(level, line)`` or None."""

    kernel: object
    options: object
    log: object = None

    def prepare(self, X, Y=None):
        return NuProblem(points=X)

    def model(self, prepared, solutions):
        return KernelExpansion(prepared.points, self.kernel, solutions)

    def _say(self, line):
        if self.log is not None:
            self.log(1, line)

    def _walk(self, X, y, upper, p, totals, groups, nus, index=None):
        """Solver_NU along ``nus``: each of the boolean ``groups`` sums to totals * nu; the
        first nu from LIBSVM's start, the next ones regrown from the last solution, on one
        engine and its cached kernel rows (only the start changes along the path)."""
        engine, out, res = CachedEngine(self.options), [], None
        problem = DualProblem(kernel_operator(X, self.kernel), y, p, index=index,
                              weights=upper, nu=True)  # the box [0, upper]: C = 1
        for nu in nus:
            alpha = np.zeros(y.size)
            for g, tot in zip(groups, totals):
                alpha[g] = (nu_start(upper[g], tot * nu) if res is None else
                            nu_regrow(res.alpha[g], res.G[g], upper[g], tot * nu))
            res = engine.solve(problem, 1.0, DualStart(alpha=alpha))
            self._say(f"nu={nu:g}: {res.n_iter} steps, gap {res.gap:.3g}, "
                      f"r {res.r:.6g}, {res.time:.3g} s")
            out.append(res)
        return out


def _zero_solution(nu, n, r):
    """The zero model of a nu that has none (``info["r"]`` says why)."""
    return PathSolution(C=float(nu), intercept=0.0, n_iter=0, converged=True, gap=0.0,
                        dual_coef=np.zeros((n, 1)), info={"r": (r,)})


@dataclass(frozen=True, eq=False)
class NuSVCBackend(_NuPath):
    """nu-SVC of one label column (two classes) along nu: solutions with ``dual_coef`` y a / r
    and intercept -rho / r (positive decision: label +1); ``info["r"]`` Solver_NU's r.

    ``negative_first``: the label -1 is LIBSVM's first class (an estimator's two classes,
    where +1 is ``classes_[1]``; a one-vs-one pair's first class is +1). LIBSVM orders a
    problem's points by class and solves for its first class's sign; SMO's ties follow that
    order, and where the margin r is 0 to rounding, so does the sign of r.
    """

    negative_first: bool = False

    def path(self, prepared, Y, nus, weights=None):
        X = prepared.points
        y = check_labels(Y, X.shape[0])[:, 0]
        n = y.size
        w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        s = -y if self.negative_first else y  # +1: LIBSVM's first class
        order = np.concatenate([np.flatnonzero(s > 0), np.flatnonzero(s < 0)])
        s, w = s[order], w[order]
        groups = [s > 0, s < 0]
        pos, neg = w[groups[0]].sum(), w[groups[1]].sum()
        ok = [nu_feasible(nu, pos, neg) for nu in nus]  # a prefix: nus ascend
        if not all(ok):
            self._say(f"nu > {2 * min(pos, neg) / (pos + neg):g} is infeasible there, held-out "
                      f"values 0 (a calibration fold's classes weigh {pos:g} and {neg:g})")
        tot = (pos + neg) / 2
        res = self._walk(X[order], s, w, np.zeros(n), [tot, tot], groups,
                         [nu for nu, fits in zip(nus, ok) if fits])
        sign = -1.0 if self.negative_first else 1.0
        out = []
        for nu, r in zip(nus, res):
            if not has_margin(r.r):
                self._say(f"nu={nu:g}: r = {r.r:g}, no margin: the zero model")
                out.append(_zero_solution(nu, n, r.r))
                continue
            coef = np.empty(n)
            coef[order] = sign * s * r.alpha / r.r
            out.append(PathSolution(C=float(nu), intercept=-sign * r.rho / r.r,
                                    n_iter=r.n_iter, converged=r.converged, gap=r.gap,
                                    dual_coef=coef[:, None], timings={"exact": r.time},
                                    info={"r": (r.r,)}))
        return out + [_zero_solution(nu, n, np.nan) for nu in nus[len(res):]]


@dataclass(frozen=True, eq=False)
class NuSVRBackend(_NuPath):
    """nu-SVR at a fixed ``C`` along nu: ``dual_coef`` a+ - a-, intercept -rho;
    ``info["epsilon"]`` the tube's half-width -r."""

    C: float = 1.0

    def path(self, prepared, Y, nus, weights=None):
        X = prepared.points
        y = np.asarray(Y, dtype=np.float64).reshape(X.shape[0], -1)[:, 0]
        n = y.size
        up = self.C * (np.ones(n) if weights is None else np.asarray(weights, np.float64))
        upper = np.concatenate([up, up])
        sign = np.concatenate([np.ones(n), -np.ones(n)])
        half = np.arange(2 * n) < n
        tot = up.sum() / 2
        res = self._walk(X, sign, upper, np.concatenate([-y, y]), [tot, tot],
                         [half, ~half], nus, index=np.concatenate([np.arange(n)] * 2))
        return [PathSolution(C=float(nu), intercept=-r.rho, n_iter=r.n_iter,
                             converged=r.converged, gap=r.gap,
                             dual_coef=(r.alpha[:n] - r.alpha[n:])[:, None],
                             timings={"exact": r.time}, info={"epsilon": -r.r})
                for nu, r in zip(nus, res)]


@dataclass(frozen=True, eq=False)
class OneClassBackend(_NuPath):
    """The one-class SVM along nu: ``dual_coef`` a, intercept -rho.

    ``admm``: None (LIBSVM's start), or the keywords of
    :func:`~hsskern.solvers.paths.one_class_admm.prepare_one_class_admm` (the HSS factor and the
    ADMM, made by ``prepare``), whose feasible point starts the first nu (every nu with
    ``admm_every_nu``). Weighted problems take LIBSVM's start.
    """

    admm: dict = None
    admm_every_nu: bool = False

    def prepare(self, X, Y=None):
        if self.admm is None:
            return NuProblem(points=X, timings={"compress": 0.0, "factor": 0.0})
        with warnings.catch_warnings():
            # a start needs no accuracy: a node that misses rel_tol only slows the exact
            # engine, whose answer is the same
            warnings.filterwarnings("ignore", message="HSS compression", category=UserWarning)
            problem, admm = prepare_one_class_admm(X, self.kernel, log=self.log, **self.admm)
        return NuProblem(points=X, admm=admm,
                         timings={k: problem.timings.get(k, 0.0)
                                  for k in ("compress", "factor")})

    def path(self, prepared, Y, nus, weights=None):
        X, admm = prepared.points, prepared.admm
        n = X.shape[0]
        upper = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        admm = None if weights is not None else admm
        engine = CachedEngine(self.options)  # one engine, its cached rows, for the path
        problem = DualProblem(kernel_operator(X, self.kernel), np.ones(n), np.zeros(n),
                              weights=upper)  # the box [0, w]: C = 1
        out, alpha, G, warm = [], None, None, None
        for nu in nus:
            seconds = 0.0
            if admm is not None and (alpha is None or self.admm_every_nu):
                alpha, warm, seconds = self._admm_start(admm, nu, warm)
            elif alpha is None:
                alpha = nu_start(upper, nu * upper.sum())
            else:
                alpha = nu_regrow(alpha, G, upper, nu * upper.sum())
            res = engine.solve(problem, 1.0, DualStart(alpha=alpha))
            self._say(f"nu={nu:g}: {res.n_iter} steps, gap {res.gap:.3g}, {res.time:.3g} s")
            alpha, G = res.alpha, res.G
            out.append(PathSolution(C=float(nu), intercept=-res.rho, n_iter=res.n_iter,
                                    converged=res.converged, gap=res.gap,
                                    dual_coef=res.alpha[:, None],
                                    timings={"admm": seconds, "exact": res.time}))
        return out

    def _admm_start(self, admm, nu, warm):
        """The ADMM's feasible point for nu (from ``warm``, the last nu's state)."""
        res = admm.solve(nu, warm)
        seconds = res.timings["iterations"] + res.timings["refactor"]
        self._say(f"ADMM start at nu={nu:g}: {res.n_iter} iterations, beta {res.beta:g}, "
                  f"{seconds:.3g} s")
        return res.alpha, res.state, seconds
