"""The exact decomposition's kernel products on Dask workers that hold row blocks of X.

:func:`~hsskern.solvers.engines.exact.solve_block` sends every product of the exact kernel against
the n training points (the first decision values and each round's update, the bulk of its
kernel entries at large n) through one call ``products.add(f, cols, c, skip)``:
``f[~skip] += K[~skip, cols] @ c``. :class:`DaskProducts` runs that call on the workers:
each holds a contiguous row block of X, receives the changed points ``X[cols]`` and their
coefficients ``c`` (and its part of ``skip``), and returns its rows' update, a vector of at
most its block's length. The client adds the vectors into ``f``. The working set's block and
SMO stay in the calling process. Nothing of size n x |cols| ever travels.

A block placed with ``client.scatter`` lives only on its worker. When that worker dies the
block is placed again from the client's copy of X, and the round's tasks that died with it
are resubmitted: the result is the same as if nothing had happened.
"""
import pickle
import queue
import time
import uuid
from contextlib import contextmanager
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import Interval

from ..estimators.exact_svc import ExactSVC
from ..kernels.operator import KernelOperator
from ._threads import run_capped

__all__ = ["DaskProducts", "DaskExactSVC"]

_INFO_KEYS = ("worker", "seconds", "cpu_seconds")


def _live_workers(client):
    """The workers' addresses, sorted, asked of the scheduler now. (Not scheduler_info():
    the client's periodic refresh, which carries no per-worker entries, can overwrite its
    answer before it returns, and then it lists no workers.)"""
    return sorted(client.nthreads())


def _decode_skip(code, size):
    """The rows of a block to compute, from its share of ``skip`` (see ``_encode_skip``)."""
    if code is None:
        return None
    kind, data = code
    if kind == "idx":
        keep = np.ones(size, dtype=bool)
        keep[data] = False
    else:
        keep = ~np.unpackbits(data, count=size).astype(bool)
    return np.flatnonzero(keep)


def _encode_skip(sb):
    """A block's share of ``skip`` in fewer bytes: the skipped rows' int32 positions, or a
    bitmap when those would be larger (a working set is a few thousand rows among 10^5)."""
    k = int(np.count_nonzero(sb))
    if 4 * k <= (sb.size + 7) // 8:
        return ("idx", np.flatnonzero(sb).astype(np.int32))
    return ("bits", np.packbits(sb))


def _block_update(block, Xc, c, code, kernel):
    """On the worker: ``K[rows, cols] @ c`` for its block's rows not skipped."""
    rows = _decode_skip(code, block.shape[0])
    Y = block if rows is None else block[rows]
    if not Y.shape[0]:
        return np.zeros(0)
    return KernelOperator(Xc, kernel).cross(Y) @ c


def _block_task(block, Xc, c, code, kernel, n_threads):
    u, info = run_capped(_block_update, (block, Xc, c, code, kernel), n_threads)
    return u, {k: info[k] for k in _INFO_KEYS}


class DaskProducts:
    """``solve_block``'s product engine on a Dask cluster (the contract of
    :class:`~hsskern.solvers.engines.exact.LocalProducts`).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The training points (kept by the client as well: a lost block is placed again from it).
    kernel : Kernel
        The kernel, as given to :class:`~hsskern.kernels.KernelOperator`.
    client : distributed.Client or None
        None: ``distributed.default_client()``.
    n_blocks : int or None
        Row blocks of X, one task each per call; None: the number of workers now (each gets
        one). More blocks than workers balance unequal workers at the price of more tasks.
    threads_per_task : int or None, default 1
        BLAS/OpenMP threads of each task (None: the worker's own setting).
    max_retries : int, default 3
        Times one block's task of one call may be lost (worker died, block lost) before the
        call fails; a task that raises an error of its own is never retried.
    task_timeout : float, default 600
        Seconds :meth:`add` waits for the next task to finish. When none finishes in that
        time, the pending tasks are checked: a task that is not running on a live worker
        holding its block (worker or block gone, task lost) is resubmitted, counted as a loss
        (see ``max_retries``); a task running where it should but not finishing means the
        cluster does not answer, and the call raises TimeoutError naming the blocks and
        workers. Set it well above the longest task (a block's rows times the changed
        points).

    Attributes
    ----------
    calls : int
        Calls of :meth:`add` that computed something.
    bytes_sent, bytes_received : int
        Array payload bytes of those calls: sent ``X[cols]``, ``c`` and the skip codes to every
        block's task (the kernel's pickle once per task too); received the update vectors and
        the tasks' small timing records. Dask's message headers are not counted.
    bytes_placed : int
        Bytes of X sent to place the blocks (at the start and after a lost worker).
    entries : int
        Kernel entries evaluated.
    resubmitted, replaced : int
        Tasks resubmitted after a loss, and blocks placed again.
    log : list of dict
        Per call: ``cols``, ``entries``, ``bytes_sent``, ``bytes_received``, ``seconds``
        (wall time of the call on the client) and ``task_seconds`` (the longest task).
    worker_stats : dict
        Per worker address: ``entries``, ``seconds`` and ``cpu_seconds`` of its tasks, and
        ``tasks``: its throughput is entries / seconds.
    """

    def __init__(self, X, kernel, *, client=None, n_blocks=None, threads_per_task=1,
                 max_retries=3, task_timeout=600.0):
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 1:
            raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or infinity")
        if n_blocks is not None and (not isinstance(n_blocks, Integral) or n_blocks < 1):
            raise ValueError(f"n_blocks must be an int >= 1 or None, got {n_blocks!r}")
        if threads_per_task is not None and (not isinstance(threads_per_task, Integral)
                                             or threads_per_task < 1):
            raise ValueError(f"threads_per_task must be an int >= 1 or None, "
                             f"got {threads_per_task!r}")
        if not isinstance(max_retries, Integral) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if (not isinstance(task_timeout, Real) or isinstance(task_timeout, bool)
                or not task_timeout > 0 or not np.isfinite(task_timeout)):
            raise ValueError(f"task_timeout must be a finite number of seconds > 0, "
                             f"got {task_timeout!r}")
        if client is None:
            from distributed import default_client
            try:
                client = default_client()
            except ValueError:
                raise ValueError("DaskProducts needs a Dask client: create one "
                                 "(distributed.Client(...)) or pass client=") from None
        self.points, self.kernel, self.client = X, kernel, client
        self.threads_per_task, self.max_retries = threads_per_task, int(max_retries)
        self.task_timeout = float(task_timeout)
        workers = _live_workers(client)
        if not workers:
            raise ValueError("the Dask cluster has no workers")
        n = X.shape[0]
        P = min(n, len(workers) if n_blocks is None else int(n_blocks))
        self.bounds = np.linspace(0, n, P + 1).round().astype(np.intp)
        self._token = uuid.uuid4().hex[:12]
        self._kernel_bytes = len(pickle.dumps(kernel))
        self.calls = self.bytes_sent = self.bytes_received = self.bytes_placed = 0
        self.entries = self.resubmitted = self.replaced = 0
        self.log, self.worker_stats = [], {}
        self._blocks, self._where = [None] * P, [None] * P
        for b in range(P):  # round-robin over the workers, in address order
            self._place(b, workers[b % len(workers)])

    @property
    def n_points(self):
        return self.points.shape[0]

    @property
    def n_blocks(self):
        return len(self._blocks)

    def placement(self):
        """The worker address(es) holding each block now (empty for a block being lost)."""
        who = self.client.who_has(self._blocks)
        return [tuple(who.get(fut.key, ())) for fut in self._blocks]

    def _place(self, b, worker=None):
        """Send block b to ``worker`` (None: the live worker holding the fewest blocks),
        from the client's X."""
        if worker is None:
            live = _live_workers(self.client)
            if not live:
                raise RuntimeError("the Dask cluster has no workers left to hold the blocks")
            held = {w: 0 for w in live}
            for i, w in enumerate(self._where):
                if i != b and w in held:
                    held[w] += 1
            worker = min(live, key=held.__getitem__)
        lo, hi = self.bounds[b], self.bounds[b + 1]
        block = self.points[lo:hi]
        # hash=False: a fresh key, never one of a block that is being forgotten
        self._blocks[b] = self.client.scatter(block, workers=[worker], hash=False)
        self._where[b] = worker
        self.bytes_placed += block.nbytes

    def _submit(self, b, Xc, c, code, call, attempt):
        # run where the block is: the scheduler would otherwise, now and then, run a task on
        # an idle worker and copy the block there (1/P of X per move). Loose, so that a
        # dead holder does not leave the task waiting for it
        return self.client.submit(_block_task, self._blocks[b], Xc, c, code, self.kernel,
                                  self.threads_per_task, pure=False,
                                  workers=[self._where[b]], allow_other_workers=True,
                                  key=f"hsskern-exact-{self._token}-{call}-{b}-{attempt}")

    def add(self, f, cols, c, skip=None):
        """``f[~skip] += K[~skip, cols] @ c`` on the workers; returns the kernel entries
        evaluated."""
        cols = np.asarray(cols, dtype=np.intp)
        c = np.asarray(c, dtype=np.float64)
        self._check_add(f, cols, c, skip)
        if not cols.size:
            return 0
        t0 = time.perf_counter()
        Xc = self.points[cols]
        call = self.calls
        tasks, sent = self._plan(skip, Xc.nbytes + c.nbytes + self._kernel_bytes)
        if not tasks:  # every row skipped
            return 0
        attempts = dict.fromkeys(tasks, 0)
        for b in tasks:  # a block lost since the last call is placed before it is used
            if self._blocks[b].status != "finished":
                self._place(b)
                self.replaced += 1
        # each finished (erred, cancelled) task's future lands in `ready`. The callbacks run
        # in the engine's client's event loop: never wait through the current client's
        # (DaskExactSVC(scheduler=...) inside a `with Client(...)`): its waits then cross
        # threads and now and then never return
        ready = queue.SimpleQueue()
        futures = {}  # pending task -> block

        def submit(b):
            fut = self._submit(b, Xc, c, tasks[b][0], call, attempts[b])
            futures[fut] = b
            fut.add_done_callback(ready.put)

        def lose(b, cause):
            """Task b died with its worker or block: place the block again if needed and
            resubmit, within max_retries."""
            nonlocal sent
            attempts[b] += 1
            if attempts[b] > self.max_retries:
                raise RuntimeError(f"block {b} of the kernel products was lost "
                                   f"{attempts[b]} times in one call (workers dying?)"
                                   ) from cause
            if self._blocks[b].status != "finished":
                self._place(b)
                self.replaced += 1
            submit(b)
            self.resubmitted += 1
            sent += Xc.nbytes + c.nbytes + self._kernel_bytes

        received, entries, longest = 0, 0, 0.0
        try:
            for b in tasks:
                submit(b)
            while futures:
                try:
                    fut = ready.get(timeout=self.task_timeout)
                except queue.Empty:
                    for fut in self._stalled(futures):  # raises if the cluster does not answer
                        b = futures.pop(fut)
                        self.client.cancel([fut])
                        lose(b, None)
                    continue
                b = futures.pop(fut, None)
                if b is None:  # a task given up on after a timeout
                    continue
                out = self._outcome(fut)
                if isinstance(out, BaseException):
                    if not self._lost(b, fut, out):
                        raise out
                    lose(b, out)
                    continue
                u, info = out
                code, rows = tasks[b]
                f[rows] += u
                e = u.size * cols.size
                entries += e
                received += u.nbytes + len(pickle.dumps(info))
                longest = max(longest, info["seconds"])
                self._count(info, e)
        finally:  # a call that raises leaves no task of its own running
            if futures:
                self.client.cancel(list(futures))
        self.calls += 1
        self.bytes_sent += sent
        self.bytes_received += received
        self.entries += entries
        self.log.append({"cols": int(cols.size), "entries": int(entries), "bytes_sent": sent,
                         "bytes_received": received, "seconds": time.perf_counter() - t0,
                         "task_seconds": longest})
        return entries

    def _check_add(self, f, cols, c, skip):
        n = self.n_points
        if f.shape != (n,) or cols.shape != c.shape or cols.ndim != 1:
            raise ValueError(f"f must have shape ({n},) and cols, c one entry per column, got "
                             f"{f.shape}, {cols.shape}, {c.shape}")
        if skip is not None and np.shape(skip) != (n,):
            raise ValueError(f"skip must have shape ({n},), got {np.shape(skip)}")

    def _plan(self, skip, task_bytes):
        """The blocks with rows to update: ``({block: (skip code, rows of f)}, bytes sent)``,
        each task sending ``task_bytes`` and its skip code."""
        tasks, sent = {}, 0
        for b in range(self.n_blocks):
            lo, hi = self.bounds[b], self.bounds[b + 1]
            if skip is None:
                code, rows = None, slice(lo, hi)
            else:
                sb = np.asarray(skip[lo:hi], dtype=bool)
                rows = lo + np.flatnonzero(~sb)
                if not rows.size:
                    continue
                code = _encode_skip(sb)
            tasks[b] = (code, rows)
            sent += task_bytes + (0 if code is None else code[1].nbytes)
        return tasks, sent

    def _count(self, info, entries):
        """A finished task's share in its worker's statistics."""
        st = self.worker_stats.setdefault(info["worker"], {
            "entries": 0, "seconds": 0.0, "cpu_seconds": 0.0, "tasks": 0})
        st["entries"] += entries
        st["seconds"] += info["seconds"]
        st["cpu_seconds"] += info["cpu_seconds"]
        st["tasks"] += 1

    def _outcome(self, fut):
        """A finished task's result, or the exception it ended with (cancelled included)."""
        try:
            return fut.result(timeout=self.task_timeout)
        except Exception as exc:
            return exc

    def _lost(self, b, fut, exc):
        """Whether a task failed because a worker or its block was lost (then it is rerun),
        rather than by an error of its own (then the call raises it)."""
        from distributed import KilledWorker
        from distributed.utils import CancelledError, TimeoutError
        if fut.status == "cancelled" or self._blocks[b].status != "finished":
            return True
        # a finished task whose result could not be fetched in task_timeout: its worker
        # was lost while the result travelled
        return isinstance(exc, (KilledWorker, CancelledError, TimeoutError))

    def _stalled(self, pending):
        """No task of ``pending`` (future -> block) finished in task_timeout: the ones that
        are lost (not running on a live worker holding their block: resubmit them), or
        TimeoutError when some run where they should and do not finish."""
        live = set(_live_workers(self.client))
        running = {key: w for w, keys in self.client.processing().items() for key in keys}
        blocks = sorted(set(pending.values()))
        held = self.client.who_has([self._blocks[b] for b in blocks])
        lost, hung = [], []
        for fut, b in pending.items():
            w = running.get(fut.key)
            if w in live and w in held.get(self._blocks[b].key, ()):
                hung.append((b, w))
            else:
                lost.append(fut)
        if hung:
            which = ", ".join(f"block {b} on {w}" for b, w in sorted(hung))
            raise TimeoutError(f"the Dask cluster does not answer: no task of the kernel "
                               f"products finished in {self.task_timeout:g} s (task_timeout), "
                               f"and these run on live workers: {which}")
        return lost

    def close(self):
        """Release the blocks on the workers (the engine cannot compute afterwards)."""
        blocks, self._blocks = self._blocks, []
        if blocks:
            self.client.cancel([b for b in blocks if b is not None])

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown, client already closed: nothing to release
            pass


class DaskExactSVC(ExactSVC):
    """:class:`~hsskern.ExactSVC` whose decomposition runs its kernel products on Dask workers.

    The subsample's exact solution, the working sets' kernel blocks, SMO and the Newton steps
    run in the calling process, as in :class:`~hsskern.ExactSVC`; every product of the exact
    kernel against all training points (the first decision values and each round's update)
    runs on the workers, which hold row blocks of the training points
    (:class:`DaskProducts`). Each round sends the changed points and their coefficients and
    receives one decision-value update per block: O(n + |changed| d) bytes, never an
    n x |changed| block. The result is :class:`~hsskern.ExactSVC`'s (same rounds, same
    coefficients to rounding), also when a worker dies during the fit.

    Parameters
    ----------
    scheduler : str or None, default None
        Address of the Dask scheduler (``"tcp://host:8786"``), connected to for the duration
        of ``fit``. None: the current client (``distributed.default_client()``).
    n_blocks : int or None, default None
        Row blocks of the training points (None: one per worker at the start of the fit).
    threads_per_task : int or None, default 1
        BLAS/OpenMP threads of each block's task (None: the worker's own setting).
    task_timeout : float, default 600
        Seconds to wait for the next block's task before checking the cluster: lost tasks
        are resubmitted, tasks that run and do not finish raise TimeoutError (see
        :class:`DaskProducts`).
    **other parameters
        As in :class:`~hsskern.ExactSVC`.

    Attributes
    ----------
    products_stats_ : dict
        Of the last fit's product engines, summed: ``calls``, ``entries``, ``bytes_sent``,
        ``bytes_received``, ``bytes_placed``, ``resubmitted``, ``replaced`` (see
        :class:`DaskProducts`).
    **other attributes
        As in :class:`~hsskern.ExactSVC`.

    Examples
    --------
    >>> import numpy as np
    >>> from distributed import Client, LocalCluster
    >>> from hsskern import ExactSVCOptions
    >>> from hsskern.distributed import DaskExactSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
    ...                   dashboard_address=":0") as cluster, Client(cluster):
    ...     clf = DaskExactSVC(h=1.0, C=10.0, options=ExactSVCOptions(subsample=100),
    ...                        random_state=0).fit(X, y)
    >>> clf.selected_, bool(clf.converged_[0])
    (('exact',), True)
    """

    _parameter_constraints = {
        **ExactSVC._parameter_constraints,
        "scheduler": [str, None],
        "n_blocks": [Interval(Integral, 1, None, closed="left"), None],
        "threads_per_task": [Interval(Integral, 1, None, closed="left"), None],
        "task_timeout": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 probability=False, tol=1e-3, class_weight=None, verbose=0,
                 decision_function_shape="ovr", random_state=None, h=None, max_time=None,
                 memory_budget=None, options=None, scheduler=None, n_blocks=None,
                 threads_per_task=1, task_timeout=600.0):
        super().__init__(C=C, kernel=kernel, degree=degree, gamma=gamma, coef0=coef0,
                         probability=probability, tol=tol, class_weight=class_weight,
                         verbose=verbose, decision_function_shape=decision_function_shape,
                         random_state=random_state, h=h, max_time=max_time,
                         memory_budget=memory_budget, options=options)
        self.scheduler = scheduler
        self.n_blocks = n_blocks
        self.threads_per_task = threads_per_task
        self.task_timeout = task_timeout

    def fit(self, X, y, sample_weight=None):
        """As :meth:`ExactSVC.fit`, the decomposition's products on the Dask cluster."""
        with self._connected():
            return super().fit(X, y, sample_weight=sample_weight)

    def fit_path(self, X, y, Cs, sample_weight=None):
        """As :meth:`ExactSVC.fit_path`, the decomposition's products on the Dask cluster.

        ``self`` is left as it was; each model's ``products_stats_`` are the whole path's.
        """
        work = clone(self)  # connected for the path, as ExactSVC.fit_path fits a clone
        with work._connected():
            models = work._fit_path(X, y, Cs, sample_weight)
        for m in models:
            m.products_stats_ = dict(work.products_stats_)
        return models

    @contextmanager
    def _connected(self):
        from distributed import Client, default_client
        self._validate_params()
        own = self.scheduler is not None
        if own:  # a private connection: the caller's current client stays the default
            client = Client(self.scheduler, set_as_default=False)
        else:
            try:
                client = default_client()
            except ValueError:
                raise ValueError("DaskExactSVC needs a Dask client: create one "
                                 "(distributed.Client(...)) or pass scheduler='tcp://host:port'"
                                 ) from None
        self._dask, self._engines = client, []
        try:
            yield
            self.products_stats_ = {k: sum(getattr(e, k) for e in self._engines)
                                    for k in _STAT_KEYS}
        finally:
            del self._dask, self._engines
            if own:
                client.close()

    def _products(self):
        return partial(_engine, self._dask, self.n_blocks, self.threads_per_task,
                       self.task_timeout, self._engines)


_STAT_KEYS = ("calls", "entries", "bytes_sent", "bytes_received", "bytes_placed",
              "resubmitted", "replaced")


def _engine(client, n_blocks, threads_per_task, task_timeout, engines, X, kernel):
    """The products factory of :class:`DaskExactSVC` (engines kept for the fit's stats)."""
    engine = DaskProducts(X, kernel, client=client, n_blocks=n_blocks,
                          threads_per_task=threads_per_task, task_timeout=task_timeout)
    engines.append(engine)
    return engine
