"""Thread caps for workers: Dask runs tasks in parallel, so the kernels inside must not too."""
import os
import resource
import time
from contextlib import contextmanager

from distributed.diagnostics.plugin import WorkerPlugin
from threadpoolctl import threadpool_limits

from ..utils._threads import blas_threads

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _load_native_libraries():
    # threadpoolctl only sees libraries already loaded: import the compiled kernels (libgomp)
    # and numpy/scipy (BLAS) before limiting
    import scipy.linalg  # noqa: F401
    from .. import kernels  # noqa: F401  (loads the compiled kernels, hence libgomp)


class ThreadCap(WorkerPlugin):
    """Worker plugin: limit BLAS and OpenMP to ``n_threads`` threads in the worker process.

    Registered on a client (:func:`limit_worker_threads`) it runs on every current worker
    and on every worker that joins later, including workers the nanny restarts after a
    crash. It sets ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/``MKL_NUM_THREADS`` (for
    libraries loaded afterwards) and a process-wide threadpoolctl limit.

    OpenMP's thread count is per calling thread, so the OpenMP part only reaches threads that
    start after the plugin; the tasks of :class:`DaskHSSSVCCV` and of
    :func:`decision_function` therefore also set the limit in the thread that runs them.

    Parameters
    ----------
    n_threads : int, default 1
        Threads for each worker's native libraries. With ``w`` workers of ``t`` task threads
        each on a machine of ``c`` cores, ``c // (w * t)`` keeps the machine exactly busy.
    """

    name = "hsskern-thread-cap"

    def __init__(self, n_threads=1):
        n_threads = int(n_threads)
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.n_threads = n_threads

    def setup(self, worker):
        for var in _ENV:
            os.environ[var] = str(self.n_threads)
        _load_native_libraries()
        # kept on the worker so the limit is never undone by garbage collection
        worker._hsskern_thread_limit = threadpool_limits(limits=self.n_threads)


def limit_worker_threads(client, n_threads=1):
    """Cap BLAS/OpenMP threads on every worker of ``client``'s cluster, now and later.

    Parameters
    ----------
    client : distributed.Client
    n_threads : int, default 1
        See :class:`ThreadCap`.

    Returns
    -------
    dict
        Per worker address, the threadpoolctl report after the cap (``user_api``,
        ``num_threads`` of every native library loaded there).
    """
    client.register_plugin(ThreadCap(n_threads))
    return client.run(_thread_report)


def _thread_report():
    from threadpoolctl import threadpool_info
    return [{"user_api": i["user_api"], "num_threads": i["num_threads"]}
            for i in threadpool_info()]


@contextmanager
def task_threads(n_threads):
    """Limit native threads in the calling (task) thread; None leaves them alone.

    OpenMP's count is the thread's own; BLAS's is process-wide, so it goes through the
    composing limit of :mod:`hsskern.utils._threads` (tasks running at once in one worker
    must not restore each other's temporary limit).
    """
    if n_threads is None:
        yield
        return
    _load_native_libraries()
    with threadpool_limits(limits=int(n_threads), user_api="openmp"), \
            blas_threads(int(n_threads)):
        yield


def _status(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak():
    # Linux: writing 5 to clear_refs resets VmHWM to the current resident size
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_capped(fn, args, n_threads):
    """Run ``fn(*args)`` under the thread cap; return (result, where and how long it ran)."""
    reset = _reset_peak()
    rss0 = _status("VmRSS")
    t0, c0 = time.perf_counter(), time.thread_time()
    with task_threads(n_threads):
        out = fn(*args)
    # CPU of this thread only: with single-threaded kernels it is the task's own work,
    # independent of how many other processes share the cores
    cpu = time.thread_time() - c0
    try:
        from distributed import get_worker
        where = get_worker().address
    except ValueError:  # run outside a worker (e.g. dask's synchronous scheduler)
        where = None
    info = {"worker": where, "seconds": time.perf_counter() - t0, "cpu_seconds": cpu,
            "pid": os.getpid(),
            # high-water mark of the whole worker process (ru_maxrss: KiB on Linux)
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            # what this task added on top of the resident size it started from (None where
            # the peak cannot be reset; with several task threads per worker, tasks running
            # at the same time are counted together)
            "task_peak_extra_bytes": None}
    hwm = _status("VmHWM")
    if reset and hwm is not None and rss0 is not None:
        info["task_peak_extra_bytes"] = max(0, hwm - rss0)
    return out, info
