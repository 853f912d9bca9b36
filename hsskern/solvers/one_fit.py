"""One fit of the SVM classifier: the HSS backend's start, or, past the reach of its exact
step, the exact SVM grown in stages from a subsample's.

:class:`~hsskern.solvers.hss_path.HSSBackend`'s "auto" start solves one fit by the exact
decomposition from zero while n x n_SV (the support vectors a subsample measures at its C)
stays within ``refine_limit``. Past it the ADMM route skips the exact step, and the ADMM's
approximate solution stands in for SVC's. There the decomposition from zero is slow too: on
all points at once its working sets hold the worst violators of a point far from the answer,
and its rounds move a hundred points each. A subsample's exact solution, padded with zeros,
starts the decomposition on twice as many points, and so on to all of them
(:class:`~hsskern.solvers.exact_path.ExactBackend` with no validation points and no time
budget): every stage starts near its answer, and the last is the exact SVM of all points.
"""
from dataclasses import dataclass, replace

from .exact_path import ExactBackend
from .hss_path import HSSBackend, HSSProblem, exact_info, warn_unsolved
from .path import check_labels

__all__ = ["OneFitBackend", "DEFAULT_STAGE_LIMIT"]

#: ``solve_exact="auto"`` grows one fit in stages up to this many kernel entries n x n_SV (by
#: the measured share, which overstates the true one): of the order of an hour on two cores
#: (docs/benchmarks.md); past it the ADMM's solution, whose warning names ExactSVC (which takes
#: a time budget)
DEFAULT_STAGE_LIMIT = 1e12


@dataclass(frozen=True)
class OneFitBackend:
    """The path protocol for one fit: ``hss`` (an HSSBackend with ``probe_C``) prepares and
    solves, except where its "auto" start would leave the exact SVM unsolved
    (:meth:`resolve_start`); there ``staged`` (an ExactBackend with no validation points and
    no ``max_time``) solves it in stages. Its problems' ``stats["start"]`` is "staged", its
    solutions' ``info`` has the HSS path's keys (no ADMM: NaN beta, empty residuals) and the
    stages' own ("selected", "history", ...).
    """

    hss: HSSBackend
    staged: ExactBackend
    stage_limit: float = DEFAULT_STAGE_LIMIT

    @property
    def kernel(self):
        return self.hss.kernel

    def resolve_start(self, n, d, sv_share):
        """``hss``'s start on n points of d features at the measured share ``sv_share``, or
        "staged" where that start is the ADMM route although "auto" and the exact step asked
        for: with ``solve_exact=True`` always, with "auto" while n x n_SV (n^2 ``sv_share``)
        is within ``stage_limit``. An unmeasured share (None: sparse rows, a kernel the
        probe does not solve) keeps the HSS start."""
        hss = self.hss
        start = hss.resolve_start(n, d, sv_share)
        if (start != "admm" or hss.start != "auto" or sv_share is None
                or hss.approximation != "hss" or not hss.refine):
            return start
        if hss.refine == "auto" and float(n) * n * sv_share > self.stage_limit:
            return start
        return "staged"

    def prepare(self, X, Y=None):
        share = self.hss.probe_share(X, Y)
        n, d = X.shape
        if self.resolve_start(n, d, share) != "staged":
            return self.hss.prepare(X, Y, sv_share=share)
        problem = self.staged.prepare(X, Y)
        if self.hss.log is not None:
            self.hss.log(1, f"start: the exact SVM in stages {problem.stages} from a "
                            f"subsample's (n x n_SV ~ {float(n) * n * share:.2g} entries "
                            f"past refine_limit={self.hss.refine_limit:.0e})")
        return replace(problem, stats={**problem.stats, "start": "staged", "sv_share": share})

    def path(self, prepared, Y, Cs, weights=None):
        if isinstance(prepared, HSSProblem):
            return self.hss.path(prepared, Y, Cs, weights)
        Y = check_labels(Y, prepared.points.shape[0])
        out = tuple(replace(s, info={**exact_info(Y, s.dual_coef, s.info["refinement"]),
                                     **s.info})
                    for s in self.staged.path(prepared, Y, Cs, weights))
        warn_unsolved(out, self.staged.tol, self.hss.max_iter)
        return out

    def model(self, prepared, solutions):
        backend = self.hss if isinstance(prepared, HSSProblem) else self.staged
        return backend.model(prepared, solutions)
