"""Option groups as frozen dataclasses, validated when built, with one set of defaults.

Each group (compression, ADMM, exact decomposition) is written once here; an estimator's
options object is the groups it uses, combined by inheritance (as FALKON's ``FalkonOptions``),
so a default lives in one place. Estimators take one ``options=`` parameter and keep their
modelling parameters (C, kernel, gamma / h, tol, ...) flat: ``get_params(deep=True)`` shows
the fields as ``options__<field>`` and ``set_params(options__max_rank=100)`` (so
``GridSearchCV``) builds a new object with :func:`dataclasses.replace`; an options object
is never changed in place.
"""
import inspect
from dataclasses import MISSING, dataclass, field, fields, replace

import numpy as np
from sklearn.utils._param_validation import InvalidParameterError

from .lowrank.landmarks import LANDMARK_METHODS
from .lowrank.nystrom import NystromFeatures
from .utils.validation import check_positive

__all__ = ["OptionsBase", "DecompositionOptions", "SMOOptions", "CompressionOptions", "HSSOptions", "ADMMOptions",
           "FPCADMMOptions",
           "ExactSolveOptions", "MulticlassOptions", "HSSSVCOptions", "HSSSVROptions",
           "ExactSVCOptions", "RidgeOptions", "GPOptions", "OneClassSVMOptions",
           "NystromSVCOptions", "PathSettings", "compression_of", "check_group", "check_number", "check_fraction", "check_bool", "options_with"]

_HSS_METHODS = ("ann", "sketch")
_SPLITS = ("2means", "pca", "kd")
_APPROXIMATIONS = ("hss", "exact")
_STARTS = ("auto", "admm", "decomposition")
#: the semismooth Newton's linear solvers (:func:`hsskern.solvers.engines.ssn.l2svm_newton`)
NEWTON_SOLVERS = ("cg", "cholesky", "auto")
#: the exact engines of a problem solved from zero (``HSSSVCOptions.engine``)
ENGINES = ("auto", "cached", "block")

#: how :class:`SMOOptions` may store the cached rows (``row_dtype``)
ROW_DTYPES = ("auto", "float32", "float64")

#: how :class:`SMOOptions` and :class:`DecompositionOptions` may compute the Gaussian's inner
#: products (``cross_dtype``)
CROSS_DTYPES = ("auto", "float32", "float64")


class OptionsBase:
    """What every options dataclass shares: scikit-learn's ``get_params`` (so an estimator's
    ``get_params(deep=True)`` lists the fields, and a nested group's as
    ``<group>__<field>``), an immutable ``replace``, a repr of the fields that differ from
    their defaults, and validation by every group in the MRO (each group's ``_check``, run
    once, when the object is built).
    """

    def __post_init__(self):
        for cls in reversed(type(self).__mro__):
            check = cls.__dict__.get("_check")
            if check is None:
                continue
            try:
                check(self)
            except (TypeError, ValueError) as exc:
                # scikit-learn's error for a bad parameter (a ValueError and a TypeError)
                raise InvalidParameterError(f"{type(self).__name__}: {exc}") from None

    @classmethod
    def field_names(cls):
        return tuple(f.name for f in fields(cls))

    def get_params(self, deep=True):
        """The fields as a dict; with ``deep``, a nested group's fields too, as
        ``<group>__<field>`` (scikit-learn's convention)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value
            if deep and isinstance(value, OptionsBase):
                out.update((f"{f.name}__{k}", v) for k, v in value.get_params().items())
        return out

    def replace(self, **changes):
        """A copy with ``changes`` (a nested group's field as ``<group>__<field>``); an
        unknown name is a ValueError listing the valid ones."""
        names = self.field_names()
        flat = {k: v for k, v in changes.items() if "__" not in k}
        nested = {}
        for key in set(changes) - set(flat):
            head, rest = key.split("__", 1)
            nested.setdefault(head, {})[rest] = changes[key]
        unknown = sorted((set(flat) | set(nested)) - set(names))
        unknown += sorted(h for h in nested if h in names
                          and not isinstance(flat.get(h, getattr(self, h)), OptionsBase))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no field {unknown[0]!r}; its fields "
                             f"are {list(names)}")
        for head, sub in nested.items():
            flat[head] = flat.get(head, getattr(self, head)).replace(**sub)
        return replace(self, **flat)

    def set_params(self, **params):
        raise TypeError(f"{type(self).__name__} is immutable: use .replace(**changes), or the "
                        "estimator's set_params(options__<field>=...)")

    def __sklearn_clone__(self):
        return self  # immutable: a clone may share it

    def __repr__(self):
        changed = []
        for f in fields(self):
            default = f.default if f.default is not MISSING else (
                f.default_factory() if f.default_factory is not MISSING else MISSING)
            value = getattr(self, f.name)
            if default is MISSING or not _same(value, default):
                changed.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"


def _same(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return a is b

def check_number(name, value, *, low=0.0, integer=False, allow_none=False, open_low=False):
    """One numeric field checked (the solvers' groups' ``_check``): a finite number >= low
    (> low with ``open_low``), an integer with ``integer``, None with ``allow_none``."""
    if value is None and allow_none:
        return
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    ok = isinstance(value, kinds) and not isinstance(value, (bool, np.bool_)) \
        and np.isfinite(value) and (value > low if open_low else value >= low)
    if not ok:
        what = "an integer" if integer else "a finite number"
        raise ValueError(f"{name} must be {what} {'>' if open_low else '>='} {low:g}"
                         f"{' or None' if allow_none else ''}, got {value!r}")


def check_group(value, cls, name):
    """A nested group's field holds an instance of its group."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {value!r}")


def check_fraction(name, value):
    """A field that is a share: a number in [0, 1]."""
    if not (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            and 0 <= value <= 1):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


def options_with(cls, options, given):
    """``options`` (``cls()`` when None) with a one-call function's arguments that differ
    from their defaults: an argument left at its default leaves the field alone."""
    if options is None:
        return cls(**given)
    if not isinstance(options, cls):
        raise TypeError(f"options must be a {cls.__name__}, got {type(options).__name__}")
    defaults = cls()
    changed = {k: v for k, v in given.items() if not _same(v, getattr(defaults, k))}
    return replace(options, **changed) if changed else options



@dataclass(frozen=True, repr=False)
class DecompositionOptions(OptionsBase):
    """The tunables of :class:`Decomposition`, one set of defaults: the working sets', the
    Newton step's on the free face, and shrinking's.

    Parameters
    ----------
    max_ws : int or None, default None
        Working-set size while the free set is smaller than it. None: ``small_max_ws`` below
        ``shrink_min_points`` points when the rounds' products evaluate their kernel entries,
        else ``large_max_ws``.
    max_chunk : int, default 16000
        Largest working set (K[W, W] takes 8 |W|^2 bytes: 2 GB at 16,000); it grows past
        ``max_ws`` only to keep the whole free set in. Lowered to what half the available
        memory holds.
    small_max_ws : int, default 4000
        ``max_ws=None``'s size below ``shrink_min_points`` points with an evaluated kernel:
        there the blocks and SMO steps a smaller set saves cost more than the rounds it adds.
    large_max_ws : int, default 8000
        ``max_ws=None``'s size otherwise.
    stored_max_chunk : int, default 6000
        The working-set cap with a stored kernel (rows read, not evaluated: a round's update
        is cheap, and smaller sets save more in their blocks and SMO steps than the extra
        rounds cost), for its first ``stored_cap_rounds`` rounds.
    stored_cap_rounds : int, default 100
        Rounds after which the stored kernel's cap is lifted (a problem with many more free
        points than the cap may need many rounds in small sets).
    max_rounds : int or None, default None
        A cap on the rounds; None: none, as LIBSVM's solver has none: the rounds end at
        ``tol``, or at a round that changes nothing (a fixed cap stops large problems short
        of SVC's solution; see the design notes).
    sub_tol : float, default 0.1
        Each working set is solved to a gap of ``max(tol, sub_tol * gap)``, ``gap`` the
        current one over all points (0: every working set to ``tol``): while violators
        outside W remain, a tight solve of W is undone by the next round.
    max_smo_iter : int or None, default None
        Pair updates per round; None: ``max(10**7, 100 |W|)`` as LIBSVM.
    block_reuse : bool, default True
        Take the entries of the new working set's block that the last round's block already
        holds, and evaluate only the new points' rows. False evaluates every block afresh
        (the same solution up to SMO's tie-breaking).
    reuse_new_fraction : float, default 1/3
        Above this share of new points the block is computed afresh; it also bounds the
        new x new temporary to |W|^2 / 9 entries.
    band_bytes : int, default 64 MiB
        Temporaries of the new points' kernel rows, per band.
    block_headroom : float, default 1.25
        The block's buffer has rows of this many times |W| entries, so later rounds' larger
        working sets keep it; a W past it takes a fresh buffer. Not room for ``max_chunk``
        at once: NumPy asks the kernel for huge pages, and rows of a wide stride page in
        every 2 MB of the span between them (4,000-point blocks at a 16,000 stride: 0.7-1 s
        of a 2-4 s fit).
    newton : bool, default True
        When SMO on a working set that is (nearly) all free has not finished in the time a
        Newton step on its free face (one Cholesky of ``K_FF``) is estimated to take, take
        that step and let SMO finish from there.
    newton_free_fraction : float, default 0.9
        Newton only once this share of the working set is free.
    newton_min_free : int, default 500
        Below this many free points SMO's steps are too cheap to replace.
    newton_rate : float, default 1e-11
        Seconds per |F|^3 of a Newton step (~30 GFlop/s for |F|^3 / 3), in the cost model
        that says when SMO gives way to it. A model, not a measurement: measured times would
        make the steps, so the answer within ``tol``, depend on the machine's load, and the
        same fit would not reproduce.
    smo_step_rate : float, default 4e-9
        Seconds per |W| of an SMO step, in the same model.
    smo_shrink_share : float, default 0.5
        SMO's first shrink inside a working set is made only if it leaves at most this share
        of the set active (``smo_block``'s ``shrink_share``): the passes over a subset read
        every vector through an index list and cost more per variable than the contiguous
        passes over the whole block.
    smo_before_newton : float, default 1.0
        SMO's pair steps before a Newton step, in units of the step's modelled cost.
    newton_ridge : float, default 1e-5
        Times K_FF's mean diagonal, added before its factorization. Duplicate and nearly
        duplicate free points make K_FF singular to working precision; along those
        directions a step barely changes the gradient, and a smaller ridge (1e-8) let them
        take steps of any length that left the box, so the step was rejected or cut to a
        short projected one (design notes). The step then solves K_FF + ridge I, whose
        gradient is off by ``ridge`` times the step's length; SMO finishes to ``tol``.
        1e-5 is within the block's own precision (float32 inner products, LIBSVM's
        ``Qfloat``: about 6e-8 per entry, ~1e-4 over a thousand free points).
    newton_per_round : int, default 4
        Newton steps a round may take, each after SMO's budget.
    newton_max_fixed : int, default 1000
        Points the face step's active-set loop may fix at their bounds before it gives up.
    shrinking : bool or "auto", default "auto"
        LIBSVM's shrinking at the level of the rounds ("auto": from ``shrink_min_points``
        points on, where the rounds' updates dominate). Not with ``index``, nor with a stored
        kernel's products (which read whole rows either way).
    shrink_margin : float, default 0.25
        A bounded point this far (in -yG) past the bias on its own side leaves the rounds
        until the next sync.
    sync_rounds : int, default 10
        Rounds between syncs of the shrunk points' decision values.
    shrink_min_points : int, default 100000
        Where ``shrinking="auto"`` starts, and where ``max_ws=None`` turns to
        ``large_max_ws``.
    timed_first_ws : int, default 2000
        Under ``max_time``, the first round's working-set cap: a round cannot be stopped once
        started, so its size waits for a measured one.
    timed_round_share : float, default 0.5
        Under ``max_time``, each later round is sized (by the last round's measured cost per
        block entry and per update entry) to take at most this share of the time left.
    timed_min_ws : int, default 64
        Under ``max_time``, the rounds stop once the time left holds no working set this large.
    timed_growth : float, default 2
        Under ``max_time``, a round's working set is at most this many times the last one's:
        a larger block costs more per entry than the last one measured (its first touch of
        memory, its cache misses), so the estimate is trusted one step at a time.
    ws_per_change : float, default 16
        A round's working set is at most this many times the points the last round changed
        (the free set is always in it), at least ``ws_floor``: where a block of thousands
        moves a few hundred points, a smaller block moves as many for a fraction of its
        |W|^2 entries (see the design notes). 0: every round at ``max_ws``. A round that
        changes nothing on a smaller set is followed by one at ``max_ws`` before the rounds
        stop.
    ws_floor : int, default 1000
        The smallest working set ``ws_per_change`` shrinks to.
    cross_dtype : {"auto", "float32", "float64"}, default "auto"
        How the Gaussian's inner products a.b of the blocks and the decision values'
        updates are computed (its dgemm route, from 12 features): "float32" by sgemm on
        float32 coordinates where :meth:`~hsskern.kernels.KernelOperator.single_cross`'s
        bound admits it (norms, sums, exponentials and the decision values in double:
        LIBSVM's ``Qfloat`` precision within ``float32_max_rel_error``), else in double;
        "auto": "float32" at ``tol`` from ``float32_min_tol`` up. On wide data the inner
        products are most of a fit, and sgemm takes half of dgemm's time.
    float32_min_tol : float, default 1e-3
        ``cross_dtype="auto"`` computes in float32 from this ``tol`` up (LIBSVM's default).
    float32_max_rel_error : float, default 1e-3
        The largest accepted bound on a float32 entry's relative error (as
        :class:`SMOOptions`'s, which cites the measured errors).
    """

    max_ws: object = None
    max_chunk: int = 16000
    small_max_ws: int = 4000
    large_max_ws: int = 8000
    stored_max_chunk: int = 6000
    stored_cap_rounds: int = 100
    max_rounds: object = None
    sub_tol: float = 0.1
    max_smo_iter: object = None
    block_reuse: bool = True
    reuse_new_fraction: float = 1 / 3
    band_bytes: int = 64 * 2 ** 20
    block_headroom: float = 1.25
    newton: bool = True
    newton_free_fraction: float = 0.9
    newton_min_free: int = 500
    newton_rate: float = 1e-11
    smo_step_rate: float = 4e-9
    smo_shrink_share: float = 0.5
    smo_before_newton: float = 1.0
    newton_ridge: float = 1e-5
    newton_per_round: int = 4
    newton_max_fixed: int = 1000
    shrinking: object = "auto"
    shrink_margin: float = 0.25
    sync_rounds: int = 10
    shrink_min_points: int = 100_000
    timed_first_ws: int = 2000
    timed_round_share: float = 0.5
    timed_min_ws: int = 64
    timed_growth: float = 2.0
    ws_per_change: float = 16.0
    ws_floor: int = 1000
    cross_dtype: str = "auto"
    float32_min_tol: float = 1e-3
    float32_max_rel_error: float = 1e-3

    def _check(self):
        at_least = {"timed_first_ws": 2, "timed_min_ws": 2,
                    "max_chunk": 1, "small_max_ws": 1, "large_max_ws": 1,
                    "stored_max_chunk": 1, "stored_cap_rounds": 0,
                    "band_bytes": 1, "newton_min_free": 0, "newton_per_round": 0,
                    "newton_max_fixed": 0, "sync_rounds": 1, "shrink_min_points": 0,
                    "ws_floor": 2}
        for name, low in at_least.items():
            check_number(name, getattr(self, name), low=low, integer=True)
        for name in ("timed_growth", "block_headroom"):
            check_number(name, getattr(self, name), low=1)
        for name, low in (("max_ws", 1), ("max_smo_iter", 1), ("max_rounds", 0)):
            check_number(name, getattr(self, name), low=low, integer=True, allow_none=True)
        # smo_step_rate divides the Newton budget: > 0; the others >= 0
        for name in ("sub_tol", "newton_rate", "smo_step_rate", "smo_before_newton",
                     "newton_ridge", "shrink_margin", "ws_per_change"):
            check_number(name, getattr(self, name), open_low=name == "smo_step_rate")
        for name in ("reuse_new_fraction", "newton_free_fraction", "timed_round_share",
                     "smo_shrink_share"):
            check_fraction(name, getattr(self, name))
        check_bool(self.block_reuse, "block_reuse")
        check_bool(self.newton, "newton")
        if self.shrinking != "auto":
            check_bool(self.shrinking, "shrinking", also='"auto"')
        if self.cross_dtype not in CROSS_DTYPES:
            raise ValueError(f"cross_dtype must be one of {CROSS_DTYPES}, "
                             f"got {self.cross_dtype!r}")
        check_number("float32_min_tol", self.float32_min_tol)
        check_number("float32_max_rel_error", self.float32_max_rel_error, open_low=True)

    def single_cross(self, tol):
        """Whether a solve to ``tol`` asks for float32 inner products (``cross_dtype``
        resolved; the kernel operator still checks the bound)."""
        if self.cross_dtype == "auto":
            return tol >= self.float32_min_tol
        return self.cross_dtype == "float32"


@dataclass(frozen=True, repr=False)
class SMOOptions(OptionsBase):
    """How :func:`solve_dual` runs.

    Parameters
    ----------
    cache_bytes : float, default 200 MiB
        The row cache (scikit-learn SVC's ``cache_size`` default); at least two whole rows
        are always kept.
    shrinking : bool, default True
        LIBSVM's shrinking.
    shrink_interval : int, default 1000
        Steps between shrinkings (LIBSVM: min(l, 1000)).
    max_iter : int or None
        Most pair steps; None: max(10^7, 100 l), LIBSVM's.
    tol : float, default 1e-3
        Stop when m(a) - M(a) over all variables is below it (LIBSVM's ``eps``).
    threads : int, default 0
        Threads a long row is split between; 0: OpenMP's count, at most 2.
    parallel_work : float, default 2e5
        A row is split between threads from this many entries x (d + 8): below it the
        fork/join costs more than half the row.
    expand_min_features : int, default 12
        From this many features a Gaussian's squared distances are |a|^2 + |b|^2 - 2 a.b
        on centered points (one multiply-add an entry and feature, not two operations),
        by the kernel operator's rule (:func:`~hsskern.kernels.gaussian_expansion`: its
        rounding bound checked point by point, far points' mutual distances summed
        directly).
    warm_max_ratio : float, default 4
        Along a C path, the next C starts from the last one's solution scaled when it is at
        most this many times larger, else from zero (on the rows the path's engine keeps):
        a scaled start costs one product over its support vectors, which pays when the C
        are close.
    row_dtype : {"auto", "float32", "float64"}, default "auto"
        How the cached kernel rows are stored; "auto": float32 from ``tol`` =
        ``float32_min_tol`` up, float64 below it, where the rows'
        rounding (up to 2^-24 sum(alpha) max|k| in each gradient entry) would rival the
        tolerance. "float32" is LIBSVM's ``Qfloat``: each
        entry rounded to float when cached (computed in double, or from float32 inner
        products: ``cross_dtype``), the gradient and every sum over the rows kept in double; the cache holds twice as many rows in the same
        bytes. The returned solution is the float32 SMO's (equal to the float64 one to the
        solver's tolerance, as LIBSVM's is); ``double_certificate`` checks it in double.
    cross_dtype : {"auto", "float32", "float64"}, default "auto"
        How a Gaussian row's expanded distances |a|^2 + |b|^2 - 2 a.b get their inner
        products a.b: "float32" by sgemv on float32 coordinates (half the bytes a row
        streams, twice the SIMD width; the norms, the sum and the exp stay in double), where
        :func:`single_cross_terms`'s error bound admits it, else in double; "auto":
        "float32" with float32 rows (``row_dtype``), "float64" with float64 rows. The
        coordinates' float32 copy costs 4 l d bytes.
    double_certificate : bool, default False
        With float32 rows or inner products, the final gradient is recomputed in double (one product over
        the support vectors, :func:`solve_dual`'s warm-start product) and the SMO resumed
        from it until the gap in double is below ``tol``: ``gap`` and ``rho`` are then
        double-precision figures. Costs one n x n_SV kernel product in double. Without
        it the gap in double may pass ``tol`` by the rows' rounding (fashion_mnist's
        hardest pair, 12,000 points: 0.00100095 at tol = 1e-3, LIBSVM's own behaviour);
        the model's decision values are double sums either way.
    float32_min_tol : float, default 1e-3
        The ``tol`` from which ``row_dtype="auto"`` caches float32 rows (SVC's default);
        below it the rows' rounding would rival the tolerance.
    float32_max_rel_error : float, default 1e-3
        The largest accepted bound on an entry's relative error from float32 inner
        products (:func:`single_cross_terms`); a point whose norm alone passes it is far.
    float32_max_far_share : float, default 0.25
        Past this share of far points the rows' inner products stay in double.
    """

    cache_bytes: float = 200 * 2 ** 20
    shrinking: bool = True
    shrink_interval: int = 1000
    max_iter: int = None
    tol: float = 1e-3
    threads: int = 0
    parallel_work: float = 2e5
    expand_min_features: int = 12
    warm_max_ratio: float = 4.0
    row_dtype: str = "auto"
    double_certificate: bool = False
    float32_min_tol: float = 1e-3
    cross_dtype: str = "auto"
    float32_max_rel_error: float = 1e-3
    float32_max_far_share: float = 0.25

    def _check(self):
        check_number("cache_bytes", self.cache_bytes)
        check_bool(self.shrinking, "shrinking")
        check_number("shrink_interval", self.shrink_interval, low=1, integer=True)
        check_number("max_iter", self.max_iter, integer=True, allow_none=True)
        check_number("tol", self.tol)
        check_number("threads", self.threads, integer=True)
        check_number("parallel_work", self.parallel_work)
        check_number("expand_min_features", self.expand_min_features, integer=True)
        if self.warm_max_ratio is not False:  # False: every C of a path from zero
            check_number("warm_max_ratio", self.warm_max_ratio, low=1)
        for name, kinds in (("row_dtype", ROW_DTYPES), ("cross_dtype", CROSS_DTYPES)):
            if getattr(self, name) not in kinds:
                raise ValueError(f"{name} must be one of {kinds}, got {getattr(self, name)!r}")
        check_bool(self.double_certificate, "double_certificate")
        check_number("float32_min_tol", self.float32_min_tol)
        check_number("float32_max_rel_error", self.float32_max_rel_error, open_low=True)
        check_fraction("float32_max_far_share", self.float32_max_far_share)

    @property
    def single_cross(self):
        """Whether the rows' inner products are asked in float32 (``cross_dtype`` resolved;
        :func:`single_cross_terms` still checks the error bound)."""
        if self.cross_dtype == "auto":
            return self.single_rows
        return self.cross_dtype == "float32"

    @property
    def single_rows(self):
        """Whether the cached rows are float32 (``row_dtype`` resolved)."""
        if self.row_dtype == "auto":
            return self.tol >= self.float32_min_tol
        return self.row_dtype == "float32"

    @property
    def row_bytes(self):
        """Bytes of one cached kernel row entry."""
        return 4 if self.single_rows else 8


@dataclass(frozen=True, repr=False)
class CompressionOptions(OptionsBase):
    """How the HSS approximation of a kernel matrix is built.

    Names follow STRUMPACK's ``--hss_*`` options. The tolerances and the rank cap are
    tighter than the HSS/ADMM paper's first option set (``hss_rel_tol=1, hss_abs_tol=0.1,
    hss_max_rank=200, hss_approximate_neighbors=64``; its second is ``0.5 / 0.05 / 2000 /
    512``): an SVM at large C needs more of the kernel's fine structure than the loose
    settings keep.

    Parameters
    ----------
    rel_tol : float, default 1e-3
        Relative tolerance of each interpolative decomposition (truncate pivoted QR where
        |R_kk| <= rel_tol * |R_00|).
    abs_tol : float, default 1e-5
        Absolute tolerance (truncate where |R_kk| <= abs_tol).
    max_rank : int, default 500
        Cap on the rank of every node; a node that cannot reach the tolerance keeps this many
        skeleton points and its achieved error is recorded.
    leaf_size : int, default 128
        Largest number of points in a leaf of the cluster tree.
    n_neighbors : int, default 64
        Nearest neighbours per point used to choose sample columns (HSS-ANN).
    ann_iterations : int, default 5
        Iterations (trees) of the approximate neighbour search.
    n_random : int, default 16
        Random columns added to each node's sample, beyond the neighbours.
    method : {"ann", "sketch"}, default "ann"
        "ann": neighbour-guided column sampling (HSS-ANN, only entries of K are evaluated);
        "sketch": randomized sampling K @ Omega through blocked products (accuracy reference,
        and operators without useful geometry).
    split : {"2means", "pca", "kd"}, default "2means"
        How clusters are bisected.
    """

    rel_tol: float = 1e-3
    abs_tol: float = 1e-5
    max_rank: int = 500
    leaf_size: int = 128
    n_neighbors: int = 64
    ann_iterations: int = 5
    n_random: int = 16
    method: str = "ann"
    split: str = "2means"

    def _check(self):
        check_positive(self.rel_tol, "rel_tol", minimum=0.0)
        check_positive(self.abs_tol, "abs_tol", minimum=0.0)
        if self.rel_tol == 0 and self.abs_tol == 0:
            raise ValueError("rel_tol and abs_tol cannot both be 0")
        check_positive(self.max_rank, "max_rank", integer=True, minimum=1)
        check_positive(self.leaf_size, "leaf_size", integer=True, minimum=2)
        check_positive(self.n_neighbors, "n_neighbors", integer=True, minimum=0)
        check_positive(self.ann_iterations, "ann_iterations", integer=True, minimum=1)
        check_positive(self.n_random, "n_random", integer=True, minimum=0)
        if self.method not in _HSS_METHODS:
            raise ValueError(f"method must be one of {_HSS_METHODS}, got {self.method!r}")
        if self.split not in _SPLITS:
            raise ValueError(f"split must be one of {_SPLITS}, got {self.split!r}")

    def hss_options(self, random_state=None, verbose=0):
        """The :class:`HSSOptions` of these compression fields, with the estimator's seed
        and verbosity."""
        names = CompressionOptions.field_names()
        return HSSOptions(**{f: getattr(self, f) for f in names},
                          random_state=random_state, verbose=verbose)


@dataclass(frozen=True, repr=False)
class HSSOptions(CompressionOptions):
    """:class:`CompressionOptions` with the seed and verbosity of one compression, as
    :func:`hsskern.hss.compress` takes them (estimators set these two from their own
    ``random_state`` and ``verbose``).

    Parameters
    ----------
    rel_tol, abs_tol, max_rank, leaf_size, n_neighbors, ann_iterations, n_random, method, split
        As in :class:`CompressionOptions` (defaults 1e-3 / 1e-5 / 500 / 128 / 64 / 5 / 16 /
        "ann" / "2means").
    random_state : int, numpy Generator or None
    verbose : int, default 0
    """

    random_state: object = None
    verbose: int = 0

    def _check(self):
        check_positive(self.verbose, "verbose", integer=True, minimum=0)


@dataclass(frozen=True, repr=False)
class ADMMOptions(OptionsBase):
    """The dual ADMM of Cipolla & Gondzio on one factor of K + beta I, and how the first C
    is reached.

    Parameters
    ----------
    approximation : {"hss", "exact"}, default "hss"
        The kernel the ADMM factors: its HSS approximation, or the dense K and a dense
        Cholesky factor (small n only, memory is checked first; the reference the HSS route
        is tested against).
    start : {"auto", "admm", "decomposition"}, default "auto"
        How the first C is reached. "admm": the approximation, one factor of it and the
        ADMM, then the exact decomposition from the ADMM's point. "decomposition": the exact
        decomposition from alpha = 0, with no compression, factor or ADMM (every C is then
        solved exactly, so it needs ``solve_exact``). "auto": "decomposition" when
        ``solve_exact`` is on, ``approximation="hss"`` and n <= 100,000 (measured: there the
        setup costs more than it saves), or, for one ``fit`` past it, while the support
        vectors a subsample measures at its C keep n x n_SV within 10^10; past that one
        ``fit`` grows the exact SVM in stages from a 50,000-point subsample's exact solution
        (``hss_["start"] == "staged"``, as :class:`~hsskern.ExactSVC` without a time budget,
        up to 10^12 entries), and so is one ``fit`` from zero whose n x n_SV reaches 2*10^9
        (many support vectors); "admm" otherwise (a C path, or past 10^12 entries).
    beta : float or None, default None
        ADMM penalty (the shift in K + beta I). None: :func:`~hsskern.solvers.default_beta`
        by n (the paper's schedule).
    relaxation : float in (0, 2), default 1.6
        ADMM over-relaxation (1.0: the paper's plain ADMM; 1.6 needs fewer iterations to a
        given gap).
    adaptive_beta : bool, default True
        Residual balancing: when the primal and dual residuals differ by more than 10x, beta
        is moved by 10x and K + beta I refactored (never recompressed); at most twice per C,
        and the new beta carries over to the next C of a path.
    admm_max_iter : int, default 100
        Most ADMM iterations per C (one factor solve each). The estimators' ``max_iter`` is
        scikit-learn's (the exact solver's steps, -1 for no limit); this caps the ADMM that
        only starts it. The paper runs exactly 10 with no stopping test.
    """

    approximation: str = "hss"
    start: str = "auto"
    beta: float = None
    relaxation: float = 1.6
    adaptive_beta: bool = True
    admm_max_iter: int = 100

    def _check(self):
        if self.approximation not in _APPROXIMATIONS:
            raise ValueError(f"approximation must be one of {_APPROXIMATIONS}, got "
                             f"{self.approximation!r}")
        if self.start not in _STARTS:
            raise ValueError(f"start must be one of {_STARTS}, got {self.start!r}")
        check_positive(self.beta, "beta", allow_none=True)
        check_positive(self.relaxation, "relaxation")
        if not self.relaxation < 2:
            raise ValueError(f"relaxation must be in (0, 2), got {self.relaxation!r}")
        check_bool(self.adaptive_beta, "adaptive_beta")
        check_positive(self.admm_max_iter, "admm_max_iter", integer=True)


@dataclass(frozen=True, repr=False)
class FPCADMMOptions(OptionsBase):
    """The tunables of :class:`~hsskern.solvers.engines.fpc_admm.FPCADMM`, one set of
    defaults (the paper's rule).

    Parameters
    ----------
    tol : float, default 5e-4
        Stop a column when ||p^{k+1} - p^k||_H^2 < tol.
    max_iter : int, default 100
    proximal_rho : float, default 1e-9
        ``alpha="auto"``: the proximal weight relative to the mean eigenvalue of
        beta A^T A (:func:`~hsskern.solvers.engines.fpc_admm.proximal_alpha`).
    """

    tol: float = 5e-4
    max_iter: int = 100
    proximal_rho: float = 1e-9

    def _check(self):
        check_number("tol", self.tol)
        check_number("max_iter", self.max_iter, integer=True)
        check_number("proximal_rho", self.proximal_rho)


@dataclass(frozen=True, repr=False)
class ExactSolveOptions(OptionsBase):
    """Whether and how the exact-kernel SVM is solved after the ADMM (the decomposition of
    :class:`~hsskern.solvers.engines.decomposition.Decomposition`).

    Parameters
    ----------
    solve_exact : bool or "auto", default "auto"
        After the ADMM, solve the exact-kernel SVM by decomposition: every point keeps the
        ADMM's alpha, working sets of the free support vectors and the worst exact-KKT
        violators are solved on their dense kernel block, until LIBSVM's stopping test holds
        on all points. Along a C path each exact solution, scaled, starts the next C without
        the ADMM. "auto": skip it (keep the ADMM's solution) for a class whose n x n_SV
        product exceeds 1e10 kernel entries; one ``fit`` with ``start="auto"`` is solved
        exactly in stages there instead (see ``start``), up to 1e12.
    max_chunk : int, default 16000
        Largest working set (its kernel block takes 8 max_chunk^2 bytes: 2 GB, twice that
        while a Newton step factors a nearly all-free block). Working sets are 4,000 points
        below 10^5 points with the kernel evaluated, else 8,000 (a stored kernel: 6,000 for
        its first 100 rounds), more only to hold a larger free set. It is the
        ``decomposition``'s ``max_chunk`` (this field wins over that one).
    decomposition : DecompositionOptions
        The block decomposition's tunables (working sets, Newton steps, shrinking), as
        ``options__decomposition__<field>`` in ``set_params`` and searches.
    smo : SMOOptions
        The cached SMO's tunables (threads, row precision, warm starts along a path). Its
        ``cache_bytes``, ``shrinking``, ``max_iter`` and ``tol`` are the estimator's
        ``cache_size``, ``shrinking``, ``max_iter`` and ``tol`` (scikit-learn's), which
        replace these four fields when the estimator fits.
    """

    solve_exact: object = "auto"
    max_chunk: int = 16000
    decomposition: DecompositionOptions = field(default_factory=DecompositionOptions)
    smo: SMOOptions = field(default_factory=SMOOptions)

    def _check(self):
        if self.solve_exact != "auto":
            check_bool(self.solve_exact, "solve_exact", also='"auto"')
        check_positive(self.max_chunk, "max_chunk", integer=True, minimum=2)
        check_group(self.decomposition, DecompositionOptions, "decomposition")
        check_group(self.smo, SMOOptions, "smo")

    def decomposition_options(self, max_chunk=None):
        """``decomposition`` with this group's ``max_chunk`` (or ``max_chunk``, a path's
        cap within the memory budget)."""
        chunk = self.max_chunk if max_chunk is None else max_chunk
        d = self.decomposition
        return d if d.max_chunk == chunk else replace(d, max_chunk=chunk)


@dataclass(frozen=True, repr=False)
class MulticlassOptions(OptionsBase):
    """How a classifier trains several classes.

    Parameters
    ----------
    multiclass : {"ovo", "ovr"}, default "ovo"
        "ovo": SVC's one-vs-one, a binary problem for each pair of classes (i, j), i < j in
        the order of ``classes_``, on those two classes' points (+1 for class i), prepared
        and solved independently on a pool of threads (one per core, each pair on one
        thread); predictions by LIBSVM's vote, equal to SVC's. "ovr": one-vs-rest, one
        binary model per class on one preparation (one compression and factor serve every
        class and every C of a path), usually less accurate than one-vs-one and slower on
        many classes, since each model trains on all points.
    """

    multiclass: str = "ovo"

    def _check(self):
        if self.multiclass not in ("ovo", "ovr"):
            raise ValueError(f'multiclass must be "ovo" or "ovr", got {self.multiclass!r}')


def check_bool(value, name, also=None):
    if not isinstance(value, (bool, np.bool_)):
        alt = f" or {also}" if also else ""
        raise TypeError(f"{name} must be a bool{alt}, got {value!r}")


@dataclass(frozen=True, repr=False)
class HSSSVCOptions(CompressionOptions, ADMMOptions, ExactSolveOptions, MulticlassOptions):
    """The expert knobs of :class:`~hsskern.HSSSVC` and :class:`~hsskern.HSSSVCCV`: the
    compression (:class:`CompressionOptions`), the ADMM and its start
    (:class:`ADMMOptions`), the exact solve (:class:`ExactSolveOptions`) and the
    multiclass training (:class:`MulticlassOptions`), with those groups' defaults.

    Parameters
    ----------
    multiclass
        See :class:`MulticlassOptions` (default "ovo", SVC's one-vs-one).
    solve_exact, max_chunk, decomposition, smo
        See :class:`ExactSolveOptions` (defaults "auto", 16000 and the groups' defaults).
    engine : {"auto", "cached", "block"}, default "auto"
        The exact engine of a fit solved from zero (``start="decomposition"``, or "auto"
        resolving to it): the row-cached SMO (``smo``), the block decomposition
        (``decomposition``), or "auto", the plan's choice by the support vectors' expected
        share.
    approximation, start, beta, relaxation, adaptive_beta
        See :class:`ADMMOptions` (defaults "hss", "auto", None, 1.6, True).
    rel_tol, abs_tol, max_rank, leaf_size, n_neighbors, ann_iterations, n_random, method, split
        See :class:`CompressionOptions` (defaults 1e-3, 1e-5, 500, 128, 64, 5, 16, "ann",
        "2means").

    Examples
    --------
    >>> from hsskern import HSSSVC, HSSSVCOptions
    >>> clf = HSSSVC(C=10.0, options=HSSSVCOptions(max_rank=200, start="admm"))
    >>> clf.get_params()["options__max_rank"]
    200
    >>> clf.set_params(options__max_rank=100).options.max_rank
    100
    >>> clf.set_params(options__decomposition__max_ws=2000).options.decomposition.max_ws
    2000
    """

    engine: str = "auto"

    def _check(self):
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")


@dataclass(frozen=True, repr=False)
class HSSSVROptions(CompressionOptions, ADMMOptions, ExactSolveOptions):
    """The expert knobs of :class:`~hsskern.HSSSVR` and :class:`~hsskern.HSSSVRCV`:
    :class:`HSSSVCOptions`' fields but ``multiclass``, with ``solve_exact=True`` by default (the
    SVR's ADMM alone does not reach LIBSVM's solution to the SVR's ``tol``).

    Parameters
    ----------
    solve_exact : bool or "auto", default True
        See :class:`ExactSolveOptions`.
    max_chunk
        See :class:`ExactSolveOptions` (default 16000).
    approximation, start, beta, relaxation, adaptive_beta
        See :class:`ADMMOptions` (defaults "hss", "auto", None, 1.6, True).
    decomposition : DecompositionOptions, default ``DecompositionOptions(max_ws=8000)``
        The block decomposition's tunables; the SVR's 2n variables take working sets of
        8,000 whatever n.
    smo : SMOOptions
        See :class:`ExactSolveOptions`.
    rel_tol, abs_tol, max_rank, leaf_size, n_neighbors, ann_iterations, n_random, method, split
        See :class:`CompressionOptions`.
    """

    solve_exact: object = True
    decomposition: DecompositionOptions = field(
        default_factory=lambda: DecompositionOptions(max_ws=8000))


@dataclass(frozen=True, repr=False)
class ExactSVCOptions(CompressionOptions, MulticlassOptions):
    """The expert knobs of :class:`~hsskern.ExactSVC`: the compression of its subsample's
    start (:class:`CompressionOptions`), the stages' working sets and the multiclass
    training (:class:`MulticlassOptions`).

    Parameters
    ----------
    multiclass
        See :class:`MulticlassOptions` (default "ovo", SVC's one-vs-one).
    subsample : int or float, default 50000
        Points of the exactly solved start (a float: that fraction of the training points);
        all of them when it is at least their number.
    validation_fraction : float in [0, 0.5), default 0.02
        Points held out to choose among the subsample's model and the rounds' points when
        the time budget stops the decomposition; never trained on. 0: none held out.
    max_chunk : int, default 24000
        The stages' working set (its kernel block takes 8 |W|^2 bytes: 4.6 GB at 24,000,
        lowered to what half the available memory holds). At 10^6 points the free support
        vectors can pass 16,000, and the rounds need them and ~8,000 violators in the
        working set.
    growth : float, default 2
        Each stage has this many times the last one's points, up to all training points.
    subsample_time_share : float in (0, 1], default 0.4
        Under ``max_time``: the share of the time the subsample's solve (and its model's
        certifying product over the other points) is sized to.
    time_slack : float, default 0.25
        Seconds added to that share (the subsample's solve is never given less).
    stage_sub_tol : float, default 0.01
        The stages' working sets are solved to this share of the gap: a stage starts with
        tens of thousands of new violators and label-noise points keep the gap large;
        solved to a tenth of it a round moved a few dozen points and a stage could stall
        for hundreds of rounds, to a hundredth a round moves thousands.
    stage_time_share : float in (0, 1], default 0.8
        Under ``max_time``, the stage after a finished one is sized to end within this
        share of the time left (a stage from n0 to n points costs ~kappa (n - n0) n
        seconds, kappa from the stage just finished: stable within 1.5x stage to stage)...
    min_stage_growth : float, default 1.05
        ... and to grow by at least this factor; else the stages stop there.
    min_subsample : int, default 100
        The smallest subsample ``max_time`` may shrink the start to (smaller is refused
        with the time it would need); a subsample this small is solved to the end.
    decomposition : DecompositionOptions
        The block decomposition's tunables, as ``options__decomposition__<field>`` (the
        stages take ``max_chunk`` as their working sets' size and cap).
    rel_tol, abs_tol, max_rank, leaf_size, n_neighbors, ann_iterations, n_random, method, split
        The subsample's compression, see :class:`CompressionOptions`.
    """

    subsample: object = 50000
    validation_fraction: float = 0.02
    max_chunk: int = 24000
    growth: float = 2.0
    subsample_time_share: float = 0.4
    time_slack: float = 0.25
    stage_sub_tol: float = 0.01
    stage_time_share: float = 0.8
    min_stage_growth: float = 1.05
    min_subsample: int = 100
    decomposition: DecompositionOptions = field(default_factory=DecompositionOptions)

    def _check(self):
        import numbers
        if isinstance(self.subsample, numbers.Integral) and not isinstance(self.subsample, bool):
            check_positive(self.subsample, "subsample", integer=True, minimum=2)
        elif isinstance(self.subsample, numbers.Real) and not isinstance(self.subsample, bool):
            if not 0 < self.subsample <= 1:
                raise ValueError(f"subsample must be an int >= 2 or a fraction in (0, 1], "
                                 f"got {self.subsample!r}")
        else:
            raise TypeError(f"subsample must be an int >= 2 or a fraction in (0, 1], got "
                            f"{self.subsample!r}")
        check_positive(self.validation_fraction, "validation_fraction", minimum=0.0)
        if not self.validation_fraction < 0.5:
            raise ValueError(f"validation_fraction must be in [0, 0.5), got "
                             f"{self.validation_fraction!r}")
        check_positive(self.max_chunk, "max_chunk", integer=True, minimum=2)
        check_number("growth", self.growth, low=1, open_low=True)
        check_number("subsample_time_share", self.subsample_time_share, open_low=True)
        if not self.subsample_time_share <= 1:
            raise ValueError(f"subsample_time_share must be in (0, 1], got "
                             f"{self.subsample_time_share!r}")
        check_number("time_slack", self.time_slack)
        for name in ("stage_sub_tol", "stage_time_share"):
            check_number(name, getattr(self, name), open_low=True)
            if not getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)!r}")
        check_number("min_stage_growth", self.min_stage_growth, low=1, open_low=True)
        check_positive(self.min_subsample, "min_subsample", integer=True, minimum=2)
        check_group(self.decomposition, DecompositionOptions, "decomposition")


@dataclass(frozen=True, repr=False)
class RidgeOptions(CompressionOptions):
    """The expert knobs of :class:`~hsskern.HSSKernelRidge` and
    :class:`~hsskern.HSSKernelRidgeCV`: the compression (:class:`CompressionOptions`) and
    the approximation of K.

    Parameters
    ----------
    approximation : {"hss", "exact", "nystrom"}, default "hss"
        The kernel matrix factored: its HSS approximation, the dense K (small n), or a
        Nystrom approximation of rank ``n_components``.
    n_components : int, default 2000
        Landmarks of ``approximation="nystrom"``.
    dense_max_n : int, default 4000
        The largest n the dense route takes (a Cholesky factor of K + alpha I, within the
        memory budget: 32 n^2 bytes): ``sample_weight``, ``solver="exact"`` at alpha = 0
        and wherever its conjugate gradients stop short of ``tol``. Above it such a fit
        raises an error naming the residual and the conditioning. 0: never.
    residual_warning : float, default 0.05
        The direct solver measures the relative residual of the exact system
        (K + alpha I) c = y on 256 sampled rows (which bounds the in-sample prediction
        error against ``KernelRidge``) and warns, naming it, above this value.
    accept_residual : float, default 1e-6
        Where the dense route is closed (past ``dense_max_n``), the exact solver's
        conjugate gradients that stop short of ``tol`` but within this relative residual
        return their answer with a ConvergenceWarning; beyond it, a refusal naming it.
    rel_tol, abs_tol, max_rank, leaf_size, n_neighbors, ann_iterations, n_random, method, split
        See :class:`CompressionOptions`.
    """

    approximation: str = "hss"
    n_components: int = 2000
    dense_max_n: int = 4000
    residual_warning: float = 0.05
    accept_residual: float = 1e-6

    def _check(self):
        if self.approximation not in ("hss", "exact", "nystrom"):
            raise ValueError(f'approximation must be "hss", "exact" or "nystrom", got '
                             f"{self.approximation!r}")
        check_positive(self.n_components, "n_components", integer=True, minimum=1)
        check_positive(self.dense_max_n, "dense_max_n", integer=True, minimum=0)
        check_positive(self.residual_warning, "residual_warning", minimum=0.0)
        check_positive(self.accept_residual, "accept_residual", minimum=0.0)


@dataclass(frozen=True, repr=False)
class GPOptions(CompressionOptions):
    """The expert knobs of :class:`~hsskern.HSSGaussianProcessRegressor`.

    The compression's defaults are tighter than :class:`CompressionOptions`' (1e-6 / 1e-8 /
    1000): the log marginal likelihood and its optimizer need the log-determinant, which
    a loose compression biases.

    Parameters
    ----------
    approximation : {"auto", "hss", "exact", "nystrom"}, default "auto"
        "auto": the dense factor up to ``dense_max_n`` points where it fits the memory
        budget, else the HSS one.
    n_components : int, default 2000
        Landmarks of ``approximation="nystrom"``.
    dense_max_n : int, default 10000
        "auto"'s crossover: above it the HSS likelihood is expected to be faster than the
        dense one's n^3 factorizations (measured at d = 3 from 2,000 to 8,000 points,
        docs/design_notes.md; ``bench/gp_small.py --preset crossover``).
    rel_tol : float, default 1e-6
    abs_tol : float, default 1e-8
    max_rank : int, default 1000
    leaf_size, n_neighbors, ann_iterations, n_random, method, split
        See :class:`CompressionOptions`.
    """

    rel_tol: float = 1e-6
    abs_tol: float = 1e-8
    max_rank: int = 1000
    approximation: str = "auto"
    n_components: int = 2000
    dense_max_n: int = 10000

    def _check(self):
        if self.approximation not in ("auto", "hss", "exact", "nystrom"):
            raise ValueError(f'approximation must be "auto", "hss", "exact" or "nystrom", '
                             f"got {self.approximation!r}")
        check_positive(self.n_components, "n_components", integer=True, minimum=1)
        check_positive(self.dense_max_n, "dense_max_n", integer=True, minimum=0)


@dataclass(frozen=True, repr=False)
class OneClassSVMOptions(CompressionOptions, ADMMOptions):
    """The expert knobs of :class:`~hsskern.OneClassSVM`: how the exact engine's start is
    found. The answer is the exact engine's either way (LIBSVM's solution to ``tol``).

    Parameters
    ----------
    start : {"auto", "admm", "decomposition"}, default "auto"
        "decomposition": the exact engine from LIBSVM's own start (the first nu n variables
        at 1), no compression, factor or ADMM. "admm": the classifier's preparation (HSS
        compression of K, one factor of K + beta I), ``admm_max_iter`` iterations of the
        one-class ADMM on it (:class:`~hsskern.solvers.paths.one_class_admm.OneClassADMM`), then
        the exact engine from its feasible point (a path: the first nu; the others start
        from the previous nu's exact solution either way). "auto": "admm" when nu n (the
        least number of support vectors LIBSVM's solution has; a path: its smallest nu's)
        reaches ``admm_min_sv``, with the Gaussian or Laplacian kernel, else
        "decomposition".
    admm_min_sv : int or None, default 50000
        Where "auto" takes the ADMM start; None: never. Measured (docs, benchmarks page):
        the ADMM start saves the exact engine's pair steps, whose cost grows with the
        support vectors times n, and costs the compression, the factor and the ADMM, which
        grow with n; both routes pay the start's n x nu n kernel product. At nu n = 50,000
        and more (gmm8 at 10^5 points, skin_nonskin at 135,938) it was 1.4-1.8x faster; at
        nu n = 10,000-37,500 it lost 1.1-1.9x on gmm8 (10^5 points at nu = 0.1, 2, 5 and
        7.5 x 10^4 at nu = 0.5) and won 1.6x on ijcnn1 (45,137 points, nu = 0.5).
    admm_max_iter : int, default 50
        ADMM iterations (one factor solve each).
    admm_every_nu : bool, default False
        Along a nu path on the ADMM route, start every nu from the ADMM (warm-started from
        the last nu's iterates, on the same factor) instead of from the previous nu's exact
        solution.
    approximation, beta, relaxation, adaptive_beta
        See :class:`ADMMOptions` (defaults "hss", None, 1.6, True).
    rel_tol, abs_tol, max_rank, leaf_size, n_neighbors, ann_iterations, n_random, method, split
        See :class:`CompressionOptions`.
    """

    admm_min_sv: int = 50000
    admm_max_iter: int = 50
    admm_every_nu: bool = False

    def _check(self):
        if self.admm_min_sv is not None:
            check_positive(self.admm_min_sv, "admm_min_sv", integer=True, minimum=1)
        check_positive(self.admm_max_iter, "admm_max_iter", integer=True, minimum=1)
        check_bool(self.admm_every_nu, "admm_every_nu")


#: the feature map's knobs: their defaults are the transformer's (one source)
_MAP_DEFAULTS = {name: p.default for name, p in
                 inspect.signature(NystromFeatures).parameters.items()}


@dataclass(frozen=True, repr=False)
class NystromSVCOptions(OptionsBase):
    """The expert knobs of :class:`~hsskern.NystromSVC` and :class:`~hsskern.NystromSVCCV`:
    the landmarks and the feature map (defaults :class:`~hsskern.NystromFeatures`'), and the
    linear solver's.

    Parameters
    ----------
    eig_cutoff : float in [0, 1), default 1e-6
        Relative eigenvalue cutoff of K(Z, Z).
    max_kmeans_samples : int, default 20000
    kmeans_iter : int, default 5
    intercept_scaling : float, default 1.0
        The intercept is the weight of a constant feature of this value, so it is
        regularized by (b / intercept_scaling)^2 / 2, as in LIBLINEAR. 0 fits no intercept.
    newton_solver : {"cg", "cholesky", "auto"}, default "auto"
        Squared hinge only: matrix-free CG per Newton step (LASN) or a direct Cholesky solve
        of I + 2C X_I^T X_I (see :func:`hsskern.solvers.engines.ssn.l2svm_newton`). ``"auto"`` takes
        the Cholesky solve up to 4095 features (the Nystrom rank after the eigenvalue cut):
        Nystrom features make V ill-conditioned at large C, where CG's inexact steps stall,
        and along a C path the Gram matrix of the active rows is updated rather than
        recomputed.
    """

    landmarks: str = _MAP_DEFAULTS["landmarks"]
    eig_cutoff: float = _MAP_DEFAULTS["eig_cutoff"]
    max_kmeans_samples: int = _MAP_DEFAULTS["max_kmeans_samples"]
    kmeans_iter: int = _MAP_DEFAULTS["kmeans_iter"]
    intercept_scaling: float = 1.0
    newton_solver: str = "auto"

    def _check(self):
        if self.landmarks not in LANDMARK_METHODS:
            raise ValueError(f"landmarks must be one of {tuple(LANDMARK_METHODS)}, got "
                             f"{self.landmarks!r}")
        check_positive(self.eig_cutoff, "eig_cutoff", minimum=0.0)
        if not self.eig_cutoff < 1:
            raise ValueError(f"eig_cutoff must be in [0, 1), got {self.eig_cutoff!r}")
        check_positive(self.max_kmeans_samples, "max_kmeans_samples", integer=True, minimum=1)
        check_positive(self.kmeans_iter, "kmeans_iter", integer=True, minimum=1)
        check_positive(self.intercept_scaling, "intercept_scaling", minimum=0.0)
        if self.newton_solver not in NEWTON_SOLVERS:
            raise ValueError(f"newton_solver must be one of {NEWTON_SOLVERS}, got "
                             f"{self.newton_solver!r}")


@dataclass(frozen=True, repr=False)
class PathSettings(OptionsBase):
    """What an estimator resolves for one fit or path from its own parameters and hands a
    backend beside its options object (not an expert knob: the estimator sets every field).

    Parameters
    ----------
    tol : float, default 1e-3
        The exact solve's stopping gap (LIBSVM's ``tol``).
    admm_tol : float or None, default 1e-2
        The ADMM's stopping gap (LIBSVM's measure); None: ``admm_max_iter`` iterations.
    n_decades : int, default 0
        Reach the first C from C / 10^n_decades, one C per decade (the ADMM route).
    probe_C : float or None, default None
        One fit's C, at which ``start="auto"`` may measure the support vectors' share on a
        subsample (None: a path).
    store_kernel : bool or None, default True
        Whether the exact route from zero may store K (False: only as one-byte codes; None:
        never).
    engine : {"auto", "cached", "block"}, default "auto"
        The exact engine of a problem solved from zero ("auto": the plan's).
    exact_limit : float or None, default None
        ``solve_exact="auto"`` skips the exact solve of a column whose n x n_SV product
        exceeds it; None: the route's (``RouteOptions.exact_limit``).
    random_state : int, Generator or None
        The compression's seed.
    verbose : int, default 0
        The compression's verbosity.
    max_time : float or None
        Seconds the staged exact solve may take (None: no limit).
    products : object or None
        The decision-value products of the exact decomposition (the Dask engine's); None:
        computed here.
    started : float or None
        ``time.perf_counter()`` when the fit started (the time budget counts from it).
    """

    tol: float = 1e-3
    admm_tol: float = 1e-2
    n_decades: int = 0
    probe_C: float = None
    store_kernel: object = True
    engine: str = "auto"
    exact_limit: float = None
    random_state: object = None
    verbose: int = 0
    max_time: float = None
    products: object = None
    started: float = None

    def _check(self):
        check_number("tol", self.tol)
        check_number("admm_tol", self.admm_tol, allow_none=True)
        check_number("n_decades", self.n_decades, integer=True)
        check_number("probe_C", self.probe_C, open_low=True, allow_none=True)
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        check_number("exact_limit", self.exact_limit, allow_none=True)
        check_number("max_time", self.max_time, allow_none=True)


def compression_of(options):
    """The :class:`CompressionOptions` fields of ``options`` (any group that has them, such
    as an :class:`HSSOptions`), as keywords."""
    return {name: getattr(options, name) for name in CompressionOptions.field_names()}
