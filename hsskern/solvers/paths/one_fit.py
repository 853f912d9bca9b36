"""One fit of the SVM classifier: the HSS backend's start, or, past the reach of its exact
step, the exact SVM grown in stages from a subsample's.

:class:`~hsskern.solvers.paths.hss_path.HSSBackend`'s "auto" start solves one fit by the exact
decomposition from zero while n x n_SV (the support vectors a subsample measures at its C)
stays within ``exact_limit`` (``RouteOptions.exact_limit``). Past it the ADMM route skips
the exact step, and the ADMM's approximate solution stands in for SVC's. There the
decomposition from zero is slow too: on all points at once its working sets hold the worst
violators of a point far from the answer, and its rounds move a hundred points each. A subsample's exact solution, padded with zeros,
starts the decomposition on twice as many points, and so on to all of them
(:class:`~hsskern.solvers.paths.exact_path.ExactBackend` with no validation points and no time
budget): every stage starts near its answer, and the last is the exact SVM of all points.
Short of that bound the same holds once n x n_SV is large (``stage_min``): many support
vectors, a from-zero start far from them. Both bounds are the route's
(:class:`~hsskern.solvers.paths.plan.RouteOptions` ``stage_limit`` and ``stage_min``, read from
``hss.route``), the rule :func:`~hsskern.solvers.paths.plan.plan_start`'s.
"""
from dataclasses import dataclass, replace

import numpy as np

from .exact_path import ExactBackend
from .hss_path import HSSBackend, HSSProblem, exact_info, warn_unsolved
from .path import check_labels
from .plan import FitPlan

__all__ = ["OneFitBackend"]


@dataclass(frozen=True)
class OneFitBackend:
    """The path protocol for one fit: ``hss`` (an HSSBackend with ``probe_C``) prepares and
    solves, except where the exact SVM is better reached in stages (:meth:`resolve_start`):
    there ``staged`` (an ExactBackend with no validation points and no ``max_time``) solves
    it, from a subsample of at most ``stage_fraction`` of the points. Its problems'
    ``stats["start"]`` is "staged", its solutions' ``info`` has the HSS path's keys (no
    ADMM: NaN beta, empty residuals) and the stages' own ("selected", "history", ...).
    """

    hss: HSSBackend
    staged: ExactBackend
    stage_fraction: float = 0.25

    @property
    def kernel(self):
        return self.hss.kernel

    def resolve_start(self, n, d, sv_share):
        """``hss``'s start on n points of d features at the measured share ``sv_share``, or
        "staged" (:func:`~hsskern.solvers.paths.plan.plan_start` with ``staged``): where that
        start is the ADMM route although "auto" and the exact step asked for (with
        ``solve_exact=True`` always, with "auto" while n x n_SV, n^2 ``sv_share``, is within
        ``route.stage_limit``), and where it is the decomposition from zero of a distance
        kernel with n x n_SV from ``route.stage_min`` on. An unmeasured share (None: sparse
        rows, a kernel the probe does not solve) keeps the HSS start."""
        return self.hss.plan_start(n, sv_share, staged=True)[0]

    def prepare(self, X, Y=None):
        n, d = X.shape
        route = self.hss.route
        # one probe: past route.small_n the HSS start's own, short of it from n^2 >= stage_min
        # (that share is not passed on: the from-zero route's engine rule stays its own)
        least = 0 if float(n) * n >= route.stage_min else None
        measured = self.hss.probe_share(X, Y, min_points=least)
        start, reason = self.hss.plan_start(n, measured, staged=True)
        if start != "staged":
            return self.hss.prepare(X, Y, sv_share=measured if n > route.small_n else None)
        m = int(np.ceil(self.stage_fraction * n))
        staged = self.staged
        if m < staged.options.subsample:
            staged = replace(staged, options=staged.options.replace(subsample=m))
        problem = staged.prepare(X, Y)
        if self.hss.log is not None:
            self.hss.log(1, f"start: the exact SVM in stages {problem.stages} from a "
                            f"subsample's ({reason})")
        plan = FitPlan.of_route("staged", reason, problem.stats["max_chunk"], measured,
                                route.probe_points)
        return replace(problem, stats={**problem.stats, "start": "staged",
                                       "sv_share": measured, "plan": plan.as_dict()})

    def warm_backend(self, entries=None):
        """The backend of a path from a given start: ``hss``'s
        (:meth:`HSSBackend.warm_backend`), which solves it exactly where this one would
        (with ``solve_exact="auto"`` up to ``route.stage_limit`` entries n x n_SV)."""
        return self.hss.warm_backend(entries, limit=self.hss.route.stage_limit)

    def path(self, prepared, Y, Cs, weights=None):
        if isinstance(prepared, HSSProblem):
            return self.hss.path(prepared, Y, Cs, weights)
        Y = check_labels(Y, prepared.points.shape[0])
        out = tuple(replace(s, info={**exact_info(Y, s.dual_coef, s.info["exact"]),
                                     **s.info, "route": "staged growth"})
                    for s in self.staged.path(prepared, Y, Cs, weights))
        warn_unsolved(out, self.staged.settings.tol, self.hss.options.admm_max_iter)
        return out

    def model(self, prepared, solutions):
        backend = self.hss if isinstance(prepared, HSSProblem) else self.staged
        return backend.model(prepared, solutions)
