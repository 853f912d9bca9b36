"""The route of an exact fit from zero, decided in one place: :func:`plan_fit` -> :class:`FitPlan`.

A ``start="decomposition"`` problem (the exact SVM from alpha = 0, no approximation) is
solved by one of two engines: the cached SMO (:func:`~hsskern.solvers.cached_smo.cached_refine`:
two variables a step, kernel rows from an LRU cache) or the block decomposition
(:func:`~hsskern.solvers.refine.refine_exact`: working sets of thousands, the decision values
kept current by n x |changed| products). Beside the engine the plan fixes whether the kernel
matrix is stored, how many threads the engine runs on, the working sets' cap under the
memory budget, and the support vectors' share it expects, which is what moves the engine.

Every threshold is a field of :class:`RouteOptions`; each one's measurement is cited once in
docs/design_notes.md ("The route"). The plan goes into the problem's ``stats["plan"]``
(:meth:`FitPlan.as_dict`), which the path reads rather than deciding again, and which the
fitted estimator exposes.

**The expected share at n.** The share of support vectors is measured on a subsample of m
points (:func:`~hsskern.solvers.cached_smo.probe_sv_share`) and falls as n grows: the free
support vectors (the margin's) thin out fast, the bounded ones (the points on the wrong
side, as many as the classes overlap) hardly. On nested subsamples of nine sets it falls as
(m / n)^b with b from 0.03 (half the points bounded) to 0.35 (a few percent support
vectors), b = 0.40 (1 - s / 0.70) for a share s measured on m points fitting all of them to
9 % root-mean-square (design notes): :func:`expected_share`.
"""
import os
import time
from dataclasses import asdict, dataclass
from numbers import Real

from ..options import OptionsBase
from ..utils._threads import usable_cores
from ..utils.validation import check_positive

__all__ = ["RouteOptions", "FitPlan", "plan_fit", "expected_share", "engine_for",
           "threads_for_plan", "other_runnable", "decomposition_memory", "ENGINES"]

#: what ``engine`` may be asked for
ENGINES = ("auto", "cached", "block")

#: float64 vectors of length n the decomposition route keeps per label column (alpha, decision
#: values, gradients, index sets, the solutions of the path), for its memory estimate
_DECOMPOSITION_VECTORS = 24


@dataclass(frozen=True, repr=False)
class RouteOptions(OptionsBase):
    """The thresholds of :func:`plan_fit` (their measurements: docs/design_notes.md, "The
    route").

    Parameters
    ----------
    small_n : int, default 100000
        ``start="auto"`` solves the first C by the exact decomposition from zero (no
        compression, factor or ADMM) up to this many points
        (:meth:`~hsskern.solvers.hss_path.HSSBackend.resolve_start`), and past it measures
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
        (:func:`~hsskern.solvers.cached_smo.probe_sv_share`); 0: never measured.
    cache_overcommit : float, default 5
        The cached engine while the expected support vectors' whole rows (n n_SV entries of
        the engine's row bytes, ``SMOOptions.row_bytes``: 4 for float32 rows, 8 for float64)
        take at most this many times its cache, where its rows' distances are expanded
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
    busy_load : float, default 0.5
        Every core only while the other processes' runnable threads (counted at the fit's
        start, :func:`other_runnable`) leave one core and ``busy_load`` of another idle beside this
        process's: a parallel region whose thread waits for a core another process holds is
        slower than one thread (:func:`threads_for_plan`). A negative value: every core.
    """

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
    busy_load: float = 0.5

    def _check(self):
        for name in ("sv_share", "share_decay", "share_noise"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        check_positive(self.probe_points, "probe_points", integer=True, minimum=0)
        check_positive(self.cache_overcommit, "cache_overcommit")
        check_positive(self.direct_overcommit, "direct_overcommit")
        check_positive(self.max_points_bytes, "max_points_bytes")
        check_positive(self.small_n, "small_n", integer=True, minimum=0)
        check_positive(self.store_min_features, "store_min_features", integer=True, minimum=1)
        check_positive(self.serial_n, "serial_n", integer=True, minimum=0)
        if isinstance(self.busy_load, bool) or not isinstance(self.busy_load, Real):
            raise TypeError(f"busy_load must be a real number, got {self.busy_load!r}")


@dataclass(frozen=True)
class FitPlan:
    """How an exact fit from zero runs (:func:`plan_fit`).

    Attributes
    ----------
    engine : {"cached", "block"}
    store : bool
        The block route stores K (a :class:`~hsskern.kernels.StoredKernelOperator`).
    threads : int
        The engines' threads (OpenMP and BLAS): 1, or 0 for OpenMP's count.
    max_chunk : int
        The working sets' cap (the memory budget's).
    sv_share : float or None
        The share of support vectors expected at n that decided the engine (None: it did
        not matter).
    measured_share : float or None
        The share measured on ``probe_points`` points, before :func:`expected_share`.
    probe_points : int or None
    reason : str
        Why this engine, in a few words (what ``verbose`` prints).
    """

    engine: str
    store: bool
    threads: int
    max_chunk: int
    sv_share: float = None
    measured_share: float = None
    probe_points: int = None
    reason: str = ""

    def as_dict(self):
        return asdict(self)


def decomposition_memory(n, d, q, n_rhs=1, points_bytes=None):
    """Bytes the ``start="decomposition"`` route takes on n points of d features with working
    sets of at most q points: the points (8 n d bytes dense, or ``points_bytes``: sparse
    rows' arrays), the decomposition's vectors per label column and the working set's kernel
    block (8 q^2, held across rounds and C), twice that while a Newton step factors a nearly
    all-free block."""
    points = 8 * n * d if points_bytes is None else points_bytes
    return points + 8 * _DECOMPOSITION_VECTORS * n * n_rhs + 16 * q * q


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


def engine_for(n, d, route, cache_bytes, share, expanded=True, row_bytes=8):
    """The engine on n dense points of d features whose cached engine has ``cache_bytes``
    (what the budget leaves it; None: the budget does not hold its points and two rows) at
    an expected support-vector ``share`` (None: ``route.sv_share``), with the reason.
    ``expanded``: the cached engine's rows expand the distances (``route.cache_overcommit``),
    else sum them directly (``route.direct_overcommit``). ``row_bytes``: bytes of a cached
    row entry (``SMOOptions.row_bytes``: float32 rows hold twice the rows in one cache)."""
    if cache_bytes is None:
        return "block", "the budget holds no cached engine"
    if 8.0 * n * d > route.max_points_bytes:
        return "block", f"points past max_points_bytes ({8.0 * n * d / 2 ** 20:.3g} MiB)"
    share = route.sv_share if share is None else share
    over = float(row_bytes) * n * share * n / cache_bytes
    if over <= (route.cache_overcommit if expanded else route.direct_overcommit):
        return "cached", f"support vectors' rows {over:.2g} x the cache"
    return "block", f"support vectors' rows {over:.2g} x the cache"


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


# more than 10 parameters: each is one fact the preparation knows of the problem (its
# shape, points, kernel, budget, share), named, so a reader sees which ones the rule reads
def plan_fit(n, d, *, route, cache_bytes, max_chunk, engine="auto", dense=True,
             cached_kernel=True, expanded=True, store_wanted=False, store_room=False,
             measured_share=None, probe=None, load=None, cores=None, row_bytes=8):
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
    row_bytes : int, default 8
        Bytes of one of the cached engine's row entries (``SMOOptions.row_bytes``).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine != "auto":
        chosen, reason = engine, "asked for"
    elif not (dense and cached_kernel):
        chosen, reason = "block", "sparse rows or a kernel the cached engine lacks"
    else:
        if (measured_share is None and probe is not None and route.probe_points > 0
                and engine_for(n, d, route, cache_bytes, 0.0, expanded,
                               row_bytes)[0] == "cached"
                and engine_for(n, d, route, cache_bytes, 1.0, expanded,
                               row_bytes)[0] == "block"):
            measured_share = probe(route.probe_points)
        share = expected_share(measured_share, route.probe_points, n, route)
        chosen, reason = engine_for(n, d, route, cache_bytes, share, expanded, row_bytes)
    share = expected_share(measured_share, route.probe_points, n, route)
    store = bool(store_wanted and store_room and chosen != "cached")
    return FitPlan(engine=chosen, store=store, threads=threads_for_plan(n, route, load, cores),
                   max_chunk=int(max_chunk), sv_share=share, measured_share=measured_share,
                   probe_points=route.probe_points if measured_share is not None else None,
                   reason=reason)
