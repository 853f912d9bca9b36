"""The route of a fit, decided in one place: :func:`plan_start` (how the first C is reached)
and :func:`plan_fit` -> :class:`FitPlan` (what runs an exact fit from zero).

**The start.** The first C is reached by the ADMM on a compressed kernel ("admm", then the
exact decomposition from the ADMM's point), by the exact decomposition from alpha = 0
("decomposition"), or, for one fit with many support vectors, by the exact SVM grown in
stages from a subsample's ("staged", :class:`~hsskern.solvers.paths.one_fit.OneFitBackend`).
:func:`plan_start` is the one rule, by n, the support vectors' share measured on a
subsample and the kernel entries n x n_SV that share implies.

**The exact fit from zero.** A ``start="decomposition"`` problem (the exact SVM from
alpha = 0, no approximation) is solved by one of two engines: the cached SMO
(:func:`~hsskern.solvers.engines.cached_smo.solve_cached`: two variables a step, kernel rows from
an LRU cache) or the block decomposition
(:func:`~hsskern.solvers.engines.exact.solve_block`: working sets of thousands, the decision values
kept current by n x |changed| products). Beside the engine the plan fixes whether the kernel
matrix is stored, how many threads the engine runs on, the working sets' cap under the
memory budget, and the support vectors' share it expects, which is what moves the engine.

Every threshold is a field of :class:`RouteOptions`; each one's measurement is cited once in
docs/design_notes.md ("The route"). The plan goes into the problem's ``stats["plan"]``
(:meth:`FitPlan.as_dict`), which the path reads rather than deciding again, and which the
fitted estimator exposes.

**The expected share at n.** The share of support vectors is measured on a subsample of m
points (:func:`~hsskern.solvers.engines.cached_smo.probe_sv_share`) and falls as n grows: the free
support vectors (the margin's) thin out fast, the bounded ones (the points on the wrong
side, as many as the classes overlap) hardly. On nested subsamples of nine sets it falls as
(m / n)^b with b from 0.03 (half the points bounded) to 0.35 (a few percent support
vectors), b = 0.40 (1 - s / 0.70) for a share s measured on m points fitting all of them to
9 % root-mean-square (design notes): :func:`expected_share`.
"""
import math
import os
import time
from dataclasses import asdict, dataclass
from numbers import Real

from ...kernels.functions import EXACT_ONLY_KERNELS
from ...options import ENGINES, OptionsBase
from ...utils._threads import usable_cores
from ...utils.validation import check_positive

__all__ = ["RouteOptions", "FitPlan", "plan_fit", "plan_start", "plan_one_class_start",
           "expected_share", "engine_for", "threads_for_plan", "other_runnable",
           "decomposition_memory", "shares_pair_blocks", "pair_workers", "STARTS"]

#: what ``start`` may be asked for ("staged" is the plan's own, never asked for)
STARTS = ("auto", "admm", "decomposition")

# float64 vectors of length n the decomposition route keeps per label column (alpha, decision
# values, gradients, index sets, the solutions of the path), for its memory estimate: a count
# of the arrays the code allocates, not a threshold
_decomposition_vectors = 24


@dataclass(frozen=True, repr=False)
class RouteOptions(OptionsBase):
    """The thresholds of :func:`plan_fit` (their measurements: docs/design_notes.md, "The
    route").

    Parameters
    ----------
    exact_limit : float, default 1e10
        The kernel entries n x n_SV (the first C's product) up to which the exact
        decomposition runs on its own: ``start="auto"`` starts from zero while n^2 (or, with a
        measured share, n^2 x share) is within it, and ``solve_exact="auto"`` skips the exact
        step of an ADMM-route column past it (the backends' ``exact_limit`` default).
    stage_limit : float, default 1e12
        One fit grows the exact SVM in stages (:class:`~hsskern.solvers.paths.one_fit.OneFitBackend`)
        up to this many entries n^2 x share, past ``exact_limit`` (``solve_exact="auto"``;
        ``True`` at any size): about an hour on two cores.
    stage_min : float, default 2e9
        One fit the rule starts from zero is grown in stages from this many entries n^2 x
        share (many support vectors, a from-zero start far from them).
    small_n : int, default 100000
        ``start="auto"`` solves the first C by the exact decomposition from zero (no
        compression, factor or ADMM) up to this many points
        (:meth:`~hsskern.solvers.paths.hss_path.HSSBackend.resolve_start`), and past it measures
        one fit's support vectors first.
    sv_share : float, default 0.25
        The share of support vectors assumed at n when none is measured.
    share_decay : float, default 0.40
        A share s measured on m points is taken as ``s * (m / n) ** b`` at n points, with
        ``b = share_decay * max(0, 1 - s / share_noise)`` (:func:`expected_share`).
    share_noise : float, default 0.70
        The measured share from which the share no longer falls with n (every support
        vector a bounded one of overlapping classes).
    probe_points : int, default 2000
        The subsample the share is measured on where it moves the engine
        (:func:`~hsskern.solvers.engines.cached_smo.probe_sv_share`); 0: never measured.
    cache_overcommit : float, default 5
        The cached engine while the expected support vectors' whole rows (8 n n_SV bytes:
        counted as float64 rows whatever ``SMOOptions.row_dtype``; float32 rows hold twice
        as many, yet counted at 4 bytes the rule took the cached engine on ijcnn1 and
        credit_default, 1.5-1.6x slower than the block one there, quiet) take at most this
        many times its cache, where its rows' distances are expanded
        (a Gaussian from ``SMOOptions.expand_min_features`` features: |a|^2 + |b|^2 - 2 a.b,
        which the block decomposition computes by matrix products); past it the block
        decomposition (which pays a few n x n_SV products in all) is faster, since rows are
        recomputed over and over.
    direct_overcommit : float, default 24
        ``cache_overcommit`` where the rows' distances are summed directly (few features, or
        a kernel other than the Gaussian): there an entry costs the block decomposition
        about what it costs a row.
    max_points_bytes : float, default 24 MiB
        The cached engine only while the points (8 n d bytes) take at most this: each row
        streams all of them, memory-bound once they outgrow the last-level cache.
    store_min_features : int, default 64
        The block route stores K (within the budget, on a path) from this many features.
    serial_n : int, default 5000
        Up to this many points the engines run on one thread.
    min_chunk : int, default 256
        The smallest working set the decomposition from zero runs with when the memory
        budget caps it (a MemoryBudgetError below): smaller, every round is a kernel
        product over all n points for a handful of pair steps.
    warm_max_ws : int, default 1000
        The working sets' cap of the exact decomposition from a carried start (a refit's,
        :func:`~hsskern.solvers.paths.warm.near_options`): such a start moves a few hundred
        points, and a set of thousands pays its block's entries for nothing.
    warm_free_factor : float, default 2.0
        The working sets from a carried start hold at least this many times its free points
        (raising ``warm_max_ws``): the free set is always in a working set, and one barely
        larger leaves no room for the violators (credit_default, 1,468 of 9,700 support
        vectors free: 80 rounds and 3.0e8 kernel entries at 1,000 points, 4 rounds and
        8.2e7 at 3,000).
    busy_load : float, default 0.5
        Every core only while the other processes' runnable threads (counted at the fit's
        start, :func:`other_runnable`) leave one core and ``busy_load`` of another idle beside this
        process's: a parallel region whose thread waits for a core another process holds is
        slower than one thread (:func:`threads_for_plan`). A negative value: every core.
    pair_blocks_min_features : int, default 1024
        One-vs-one pairs on the cached SMO share their classes' kernel blocks (each class's
        own block computed once by a BLAS product for its k - 1 pairs, every pair's matrix
        cached whole) from this many features, where they fit the cache
        (:func:`shares_pair_blocks`). The pairs compute 11-16 % of their rows on demand
        (usps, satimage, optdigits at C = 1), about a quarter of the blocks' entries: the
        blocks lost at 36 features (satimage, 0.16 s -> 0.9 s) and 256 (usps, 1.4 s ->
        2.4 s) and tied at 784 (fashion_mnist on 8,000 points, C = 1 and 10), so the default
        is past every measured shape (docs/design_notes.md).
    parallel_pairs_min_work : float, default 7e8
        One-vs-one pairs on the cached SMO run on every core from this much work, the
        pairs' sum of n_p^2 d (their kernel entries' flops, up to a constant), and one after
        another on the calling thread below it (:func:`pair_workers`): starting and joining
        the pool costs a fixed few milliseconds, which a second core repays only on enough
        work. Measured (SVC's defaults, standardized, median of 7): digits (3.7e8) 35 ms on
        one worker against 47 ms on two; satimage (1.3e9) 45 against 29 ms, optdigits
        (1.7e9) 75 against 52 ms, usps (2.5e10) 0.52 against 0.28 s.
    """

    exact_limit: float = 1e10
    stage_limit: float = 1e12
    stage_min: float = 2e9
    small_n: int = 100_000
    sv_share: float = 0.25
    share_decay: float = 0.40
    share_noise: float = 0.70
    probe_points: int = 2000
    cache_overcommit: float = 5.0
    direct_overcommit: float = 24.0
    max_points_bytes: float = 24 * 2 ** 20
    store_min_features: int = 64
    serial_n: int = 5000
    min_chunk: int = 256
    warm_max_ws: int = 1000
    warm_free_factor: float = 2.0
    busy_load: float = 0.5
    pair_blocks_min_features: int = 1024
    parallel_pairs_min_work: float = 7e8

    def _check(self):
        for name in ("sv_share", "share_decay", "share_noise"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        check_positive(self.probe_points, "probe_points", integer=True, minimum=0)
        check_positive(self.cache_overcommit, "cache_overcommit")
        check_positive(self.direct_overcommit, "direct_overcommit")
        check_positive(self.max_points_bytes, "max_points_bytes")
        for name in ("exact_limit", "stage_limit", "stage_min"):
            check_positive(getattr(self, name), name)
        check_positive(self.small_n, "small_n", integer=True, minimum=0)
        check_positive(self.store_min_features, "store_min_features", integer=True, minimum=1)
        check_positive(self.serial_n, "serial_n", integer=True, minimum=0)
        check_positive(self.min_chunk, "min_chunk", integer=True, minimum=2)
        check_positive(self.warm_max_ws, "warm_max_ws", integer=True, minimum=2)
        check_positive(self.warm_free_factor, "warm_free_factor")
        check_positive(self.pair_blocks_min_features, "pair_blocks_min_features",
                       integer=True, minimum=1)
        check_positive(self.parallel_pairs_min_work, "parallel_pairs_min_work", minimum=0)
        if isinstance(self.busy_load, bool) or not isinstance(self.busy_load, Real):
            raise TypeError(f"busy_load must be a real number, got {self.busy_load!r}")


@dataclass(frozen=True)
class FitPlan:
    """How a fit runs: its start (:func:`plan_start`) and, from zero, its engine, store,
    threads and working sets (:func:`plan_fit`).

    Attributes
    ----------
    engine : {"cached", "block"}
        What solves the exact duals ("block" on the ADMM and staged routes, whose exact
        steps are the block decomposition's).
    store : bool
        The block route stores K (a :class:`~hsskern.kernels.StoredKernelOperator`).
    threads : int
        The engines' threads (OpenMP and BLAS): 1, or 0 for OpenMP's count (the ADMM route:
        0; the staged route: 0 here, each stage's own plan deciding its engine's).
    max_chunk : int
        The working sets' cap (the memory budget's; the ADMM and staged routes: their
        options').
    sv_share : float or None
        The share of support vectors expected at n that decided the engine (None: it did
        not matter).
    measured_share : float or None
        The share measured on ``probe_points`` points, before :func:`expected_share`.
    probe_points : int or None
    reason : str
        Why this engine, in a few words (what ``verbose`` prints).
    start : {"decomposition", "admm", "staged"}
        How the first C is reached (:func:`plan_start`).
    start_reason : str
        Why this start, in a few words.
    """

    engine: str
    store: bool
    threads: int
    max_chunk: int
    sv_share: float = None
    measured_share: float = None
    probe_points: int = None
    reason: str = ""
    start: str = "decomposition"
    start_reason: str = ""

    def as_dict(self):
        return asdict(self)

    @classmethod
    def of_route(cls, start, reason, max_chunk, sv_share=None, probe_points=None):
        """The plan of a fit whose start is not from zero ("admm", "staged", by
        :func:`plan_start` for ``reason``): the block decomposition's exact steps on every
        thread, the working sets' cap as given, the share measured (on ``probe_points``)."""
        return cls(engine="block", store=False, threads=0, max_chunk=int(max_chunk),
                   measured_share=sv_share,
                   probe_points=None if sv_share is None else probe_points,
                   reason="the exact steps of the " + start + " route", start=start,
                   start_reason=reason)


def block_memory(q):
    """Bytes of a q-point working set's kernel block: 8 q^2, held across rounds and C, twice
    that while a Newton step factors a nearly all-free block."""
    return 16 * q * q


def largest_block(room):
    """The largest q whose :func:`block_memory` fits ``room`` bytes (0 when none does)."""
    return int(math.sqrt(max(room, 0.0) / 16))


def decomposition_memory(n, d, q, n_rhs=1, points_bytes=None):
    """Bytes the ``start="decomposition"`` route takes on n points of d features with working
    sets of at most q points: the points (8 n d bytes dense, or ``points_bytes``: sparse
    rows' arrays), the decomposition's vectors per label column and the working set's kernel
    block (:func:`block_memory`)."""
    points = 8 * n * d if points_bytes is None else points_bytes
    return points + 8 * _decomposition_vectors * n * n_rhs + block_memory(q)


def expected_share(measured, m, n, route):
    """The support vectors' share at n points, from ``measured`` on a subsample of m:
    ``measured * (m / n) ** b``, ``b = route.share_decay * max(0, 1 - measured /
    route.share_noise)``, at least one point's (None: None)."""
    if measured is None:
        return None
    s = float(measured)
    if m is None or m >= n:
        return max(s, 1.0 / n)
    b = route.share_decay * max(0.0, 1.0 - s / route.share_noise) if route.share_noise else 0.0
    return max(s * (float(m) / n) ** b, 1.0 / n)


def engine_for(n, d, route, cache_bytes, share, expanded=True):
    """The engine on n dense points of d features whose cached engine has ``cache_bytes``
    (what the budget leaves it; None: the budget does not hold its points and two rows) at
    an expected support-vector ``share`` (None: ``route.sv_share``), with the reason.
    ``expanded``: the cached engine's rows expand the distances (``route.cache_overcommit``),
    else sum them directly (``route.direct_overcommit``)."""
    if cache_bytes is None:
        return "block", "the budget holds no cached engine"
    if 8.0 * n * d > route.max_points_bytes:
        return "block", f"points past max_points_bytes ({8.0 * n * d / 2 ** 20:.3g} MiB)"
    share = route.sv_share if share is None else share
    over = 8.0 * n * share * n / cache_bytes
    if over <= (route.cache_overcommit if expanded else route.direct_overcommit):
        return "cached", f"support vectors' rows {over:.2g} x the cache"
    return "block", f"support vectors' rows {over:.2g} x the cache"


def pair_workers(sizes, d, cores, route):
    """The workers that run one-vs-one pairs of ``sizes`` points on d features on the
    cached SMO: ``cores``, or 1 where the pairs' work (sum of n_p^2 d) is below
    ``route.parallel_pairs_min_work``."""
    work = sum(float(s) ** 2 for s in sizes) * d
    return 1 if work < route.parallel_pairs_min_work else cores


# more than 10 parameters: each is one fact of the problem or one option the rule reads, named
def plan_start(n, *, route, start="auto", exact="auto", approximation="hss", kernel=None,
               sv_share=None, exact_limit=None, staged=False, probe_points=None):
    """How the first C of a fit on n points is reached, with the reason: "decomposition"
    (the exact decomposition from zero), "admm" (compression, factor and ADMM, then the
    exact step from the ADMM's point) or, with ``staged`` (one fit,
    :class:`~hsskern.solvers.paths.one_fit.OneFitBackend`), "staged" (the exact SVM grown from a
    subsample's).

    Parameters
    ----------
    route : RouteOptions
    start : {"auto", "admm", "decomposition"}
        What was asked for: "admm" and "decomposition" are taken as they are (a kernel that
        has no compression, below, excepted).
    exact : {"auto", True, False}
        The estimator's ``solve_exact`` (the backends' ``solve_exact``): False keeps the ADMM's
        answer, so the ADMM start.
    approximation : {"hss", "exact"}
        "exact" asks for the dense ADMM by name.
    kernel : str or None
        The kernel's name: a dot-product kernel (``EXACT_ONLY_KERNELS``) has no
        compression and takes the exact decomposition from zero (a ValueError where the
        ADMM is asked for).
    sv_share : float or None
        The support vectors' share measured on a subsample at the fit's C (None: not
        measured: sparse rows, a path, a kernel the probe does not solve).
    exact_limit : float or None
        The n x n_SV kernel entries the exact step runs to (default ``route.exact_limit``;
        a backend's ``exact_limit``).
    staged : bool
        One fit, which may be grown in stages.
    probe_points : int or None
        The subsample ``sv_share`` was measured on, for the reason only.

    The rule. "auto" takes "decomposition" when the exact step runs (``exact`` true), the
    approximation would be HSS, n <= ``route.small_n`` and (``exact="auto"``) n^2 is within
    ``exact_limit``: both routes pay about n x n_SV entries for the first C (from zero,
    over more rounds: 0.8x to 1.2x the ADMM route's, measured), and this one skips the
    compression, the factor and the ADMM (faster on every set measured from
    3*10^3 to 10^5 points). A measured share takes "decomposition" past ``small_n`` too
    while n^2 x share is within ``exact_limit``. d does not move it (kernel entries and
    the compression's samples both cost ~d each), nor does the budget (the route takes
    less memory than the ADMM's, its working sets capped to the budget). With ``staged``
    and a measured share: "staged" where the rule starts from zero with n^2 x share from
    ``route.stage_min`` on, and where it takes the ADMM route with n^2 x share within
    ``route.stage_limit`` (any size with ``exact=True``). docs/design_notes.md ("The
    route") cites the measurements.
    """
    if start not in STARTS:
        raise ValueError(f"start must be one of {STARTS}, got {start!r}")
    if kernel in EXACT_ONLY_KERNELS:
        if start == "admm" or not exact:
            raise ValueError(
                f"the {kernel} kernel is solved by the exact decomposition only "
                f"(start='auto' or 'decomposition', solve_exact=True or 'auto'); HSS "
                f"compression and the ADMM serve the Gaussian and Laplacian kernels")
        return "decomposition", f"the {kernel} kernel has no compression"
    if start != "auto":
        return start, "asked for"
    if not (exact and approximation == "hss"):
        return "admm", ("solve_exact=False keeps the ADMM's answer" if not exact
                        else "the dense ADMM asked for")
    limit = route.exact_limit if exact_limit is None else exact_limit
    n2 = float(n) * n
    if sv_share is not None and n2 * sv_share <= limit:
        chosen = "decomposition"
    elif n <= route.small_n and (exact != "auto" or n2 <= limit):
        chosen = "decomposition"
    else:
        chosen = "admm"
    if not staged or sv_share is None:
        return chosen, _start_reason(chosen, n, sv_share, probe_points)
    entries = n2 * sv_share
    if chosen == "decomposition":
        if entries >= route.stage_min:
            return "staged", f"n x n_SV ~ {entries:.2g} entries from zero, past stage_min"
        return chosen, _start_reason(chosen, n, sv_share, probe_points)
    if exact == "auto" and entries > route.stage_limit:
        return chosen, f"n x n_SV ~ {entries:.2g} entries, past stage_limit"
    return "staged", f"n x n_SV ~ {entries:.2g} entries, past the exact step's limit"


#: the kernels the HSS compression (so an ADMM start) takes
ADMM_KERNELS = ("gaussian", "laplacian")


def plan_one_class_start(n, nu, *, start, kernel, admm_min_sv, weighted=False):
    """The one-class SVM's start on n points at ``nu`` (a path: its smallest), with the
    reason: "admm" (LIBSVM's problem from the one-class ADMM on the HSS factor) or
    "decomposition" (LIBSVM's start). "auto" takes the ADMM once nu n, the support vectors
    at least, reaches ``admm_min_sv`` (measured: :class:`~hsskern.OneClassSVMOptions`),
    never with sample weights (the ADMM's problem is unweighted) or a kernel the
    compression does not take; "admm" asked for with such a kernel is a ValueError. With
    ``weighted`` always "decomposition", whatever was asked."""
    if weighted:
        return "decomposition", "sample weights: the ADMM's problem is unweighted"
    if start == "admm":
        if kernel not in ADMM_KERNELS:
            raise ValueError(f"the ADMM start needs the HSS compression, which takes the "
                             f"{ADMM_KERNELS} kernels, not {kernel!r}: use "
                             f"start=\"auto\" or \"decomposition\"")
        return "admm", "asked for"
    if (start == "auto" and kernel in ADMM_KERNELS and admm_min_sv is not None
            and nu * n >= admm_min_sv):
        return "admm", f"nu n = {nu * n:.0f} support vectors at least, from admm_min_sv"
    return "decomposition", "asked for" if start != "auto" else "few support vectors"


def _start_reason(start, n, share, m):
    measured = "" if share is None else (
        f", {100 * share:.2g} % support vectors" + ("" if m is None else f" on {m} points"))
    if start == "decomposition":
        return f"{n} points{measured}: the exact solve from zero"
    return f"{n} points{measured}: past the from-zero route's reach"


def other_runnable(samples=3, pause=1e-3):
    """How many threads of other processes are runnable now: the kernel's count of runnable
    threads (/proc/loadavg's fourth field) less this process's own running threads, the
    least of a few samples ``pause`` seconds apart (a thread of ours that just finished
    spinning is not another process's work); None where /proc does not say. An instant
    count, unlike the 1-minute load average, which still carries a process that ended a
    minute ago."""
    least = None
    for i in range(samples):
        try:
            with open("/proc/loadavg") as f:
                running = int(f.read().split()[3].split("/")[0])
            own = 0
            for task in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{task}/stat") as f:
                    own += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, ValueError, IndexError):
            return None
        others = max(running - max(own, 1), 0)
        least = others if least is None else min(least, others)
        if least == 0:
            break
        if i + 1 < samples:
            time.sleep(pause)
    return least


def threads_for_plan(n, route, load=None, cores=None):
    """The engines' threads on n points: 1 up to ``route.serial_n`` points, or where the
    other processes leave no core idle beside this one (their runnable threads,
    :func:`other_runnable`, at most ``cores - 1 - route.busy_load``), else 0 (OpenMP's
    count). ``load`` and ``cores`` default to the machine's (the other processes' runnable
    threads now, the cores this process may run on)."""
    if n <= route.serial_n:
        return 1
    cores = usable_cores() if cores is None else cores
    if cores < 2:
        return 1
    if route.busy_load < 0:
        return 0
    if load is None:
        load = other_runnable()
        if load is None:  # no /proc here: every core
            return 0
    return 0 if cores - float(load) >= 1.0 + route.busy_load else 1


def shares_pair_blocks(d, kernel_name, block_bytes, cache_bytes, route):
    """Whether one-vs-one pairs on the cached SMO, on d features, share their classes'
    kernel blocks (:class:`~hsskern.solvers.paths.pairwise.ClassBlocks`): a Gaussian kernel (the
    blocks are BLAS products of the expanded distances), from
    ``route.pair_blocks_min_features`` features, the blocks' ``block_bytes`` within the
    engine's cache (``cache_bytes``, what the budget leaves it)."""
    return (kernel_name == "gaussian" and d >= route.pair_blocks_min_features
            and cache_bytes is not None and block_bytes <= cache_bytes)


# more than 10 parameters: each is one fact the preparation knows of the problem (its
# shape, points, kernel, budget, share), named, so a reader sees which ones the rule reads
def plan_fit(n, d, *, route, cache_bytes, max_chunk, engine="auto", dense=True,
             cached_kernel=True, expanded=True, store_wanted=False, store_room=False,
             measured_share=None, probe=None, load=None, cores=None, start_reason=""):
    """The plan of an exact fit from zero on n points of d features (the one rule); the
    parameters past n and d are keyword only.

    Parameters
    ----------
    route : RouteOptions
    cache_bytes : float or None
        The cached engine's row cache within the budget (None: the budget does not hold it).
    max_chunk : int
        The working sets' cap under the budget.
    engine : {"auto", "cached", "block"}
        "auto": :func:`engine_for` at the share expected at n; the others as asked.
    dense, cached_kernel : bool
        The points are dense and the kernel one the cached engine computes rows of; else the
        block route.
    expanded : bool
        The cached engine's rows expand the Gaussian's distances (see :func:`engine_for`).
    store_wanted : bool
        The caller would store K (features past ``route.store_min_features`` on a path, or
        one-byte codes): done only on the block route and with ``store_room``.
    store_room : bool
        The stored K fits the budget beside the working sets.
    measured_share : float or None
        A share measured already on ``route.probe_points`` points.
    probe : callable or None
        ``probe(m)``: the share measured on m points (or None). Called only where the share
        moves the engine (no support vectors would take the cached engine, all of them the
        block one) and none was measured.
    load, cores : float, int or None
        The machine's load and this process's cores for :func:`threads_for_plan` (None: read
        them).
    start_reason : str
        Why the start is from zero (:func:`plan_start`), recorded.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine != "auto":
        chosen, reason = engine, "asked for"
    elif not (dense and cached_kernel):
        chosen, reason = "block", "sparse rows or a kernel the cached engine lacks"
    else:
        if (measured_share is None and probe is not None and route.probe_points > 0
                and engine_for(n, d, route, cache_bytes, 0.0, expanded)[0] == "cached"
                and engine_for(n, d, route, cache_bytes, 1.0, expanded)[0] == "block"):
            measured_share = probe(route.probe_points)
        share = expected_share(measured_share, route.probe_points, n, route)
        chosen, reason = engine_for(n, d, route, cache_bytes, share, expanded)
    share = expected_share(measured_share, route.probe_points, n, route)
    store = bool(store_wanted and store_room and chosen != "cached")
    return FitPlan(engine=chosen, store=store, threads=threads_for_plan(n, route, load, cores),
                   max_chunk=int(max_chunk), sv_share=share, measured_share=measured_share,
                   probe_points=route.probe_points if measured_share is not None else None,
                   reason=reason, start_reason=start_reason)
