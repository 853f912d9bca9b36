"""BLAS thread limits that compose across threads: the pools are restored when the last
limit ends, also when fits run concurrently.

OpenBLAS's thread count is one process-wide setting. A save/restore context (threadpoolctl's
``threadpool_limits``, used inside scikit-learn's KMeans too) restores what it saw on entry,
so two overlapping ones in two Python threads interleave as A saves 2, B saves A's 1, A
restores 2, B restores 1: the process is left at one thread for good. Here every limit is a
request registered under one lock: the first request saves the libraries' counts, the
effective count is the smallest active request, and the last request to end restores the
saved counts.
Third-party save/restore contexts run *inside* one of these requests (see
:func:`hsskern.lowrank.landmarks.select_landmarks`) then see and restore the limited count,
which is harmless.

OpenMP's thread count is per calling thread (an ICV of the thread), so limiting it in a thread
never leaks into another; only BLAS needs this.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads", "one_blas_thread", "one_openmp_thread", "LIBLINEAR_LOCK",
           "usable_cores", "thread_map"]

#: Held around every LIBLINEAR fit (scikit-learn's LinearSVC). Its coordinate-descent order
#: comes from one process-wide generator that each fit seeds and then draws from without the
#: GIL, so two concurrent fits would interleave their draws: one fit at a time keeps each as
#: its serial run.
LIBLINEAR_LOCK = threading.Lock()

_BLAS_LIBS = []
_LOCK = threading.Lock()
_ACTIVE = []     # the limits of the requests now active, any order
_SAVED = []      # (library controller, count) as found by the first active request


def _libraries():
    # threadpoolctl's limit() costs 60-170 us (it rebuilds its view of every library); the
    # handles are kept from the first call and flipped by one ctypes call each (~3 us). Like
    # threadpoolctl, this sees the libraries loaded when it first runs; ours (scipy's
    # OpenBLAS, behind cython_blas) is loaded by then.
    if not _BLAS_LIBS:
        _BLAS_LIBS.append(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _BLAS_LIBS[0]


def _apply(limit):
    # with the lock held: every library at min(saved count, limit)
    for lib, k in _SAVED:
        target = min(k, limit)
        if lib.get_num_threads() != target:
            lib.set_num_threads(target)


class blas_threads:
    """Limit the loaded BLAS libraries to ``n`` threads for the duration of a ``with`` block.

    Safe to nest and to use from several threads at once: the libraries run at the smallest
    limit currently requested, and the counts found by the first request are restored when
    the last one ends.

    Parameters
    ----------
    n : int >= 1
    """

    __slots__ = ("n",)

    def __init__(self, n):
        n = int(n)
        if n < 1:
            raise ValueError(f"the BLAS thread limit must be >= 1, got {n}")
        self.n = n

    def __enter__(self):
        with _LOCK:
            if not _ACTIVE:
                _SAVED[:] = [(lib, k) for lib in _libraries()
                             if (k := lib.get_num_threads()) is not None]
            _ACTIVE.append(self.n)
            _apply(min(_ACTIVE))
        return self

    def __exit__(self, *exc):
        with _LOCK:
            _ACTIVE.remove(self.n)
            if _ACTIVE:
                _apply(min(_ACTIVE))
            else:
                for lib, k in _SAVED:
                    if lib.get_num_threads() != k:
                        lib.set_num_threads(k)
                _SAVED.clear()
        return False


class one_blas_thread(blas_threads):
    """``blas_threads(1)``: one BLAS thread for a block of small BLAS calls."""

    __slots__ = ()

    def __init__(self):
        self.n = 1


_OPENMP_LIBS = []


class one_openmp_thread:
    """This thread's OpenMP regions on one thread for a ``with`` block.

    OpenMP's count is an ICV of the calling thread, so this touches no other thread and
    composes with concurrent uses; the thread's own count is restored on exit.
    """

    __slots__ = ("_saved",)

    def __enter__(self):
        if not _OPENMP_LIBS:  # the handles once (threadpoolctl rebuilds its view per call)
            _OPENMP_LIBS.append(ThreadpoolController().select(user_api="openmp")
                                .lib_controllers)
        self._saved = [(lib, lib.get_num_threads()) for lib in _OPENMP_LIBS[0]]
        for lib, _ in self._saved:
            lib.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        for lib, k in self._saved:
            lib.set_num_threads(k)
        return False


def usable_cores():
    """The cores this process may run on (its affinity where the OS tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_POOL = threading.local()  # .worker: this thread runs a thread_map task


def _capped(fn, *args):
    """fn(*args) with this thread's OpenMP and BLAS regions on one thread."""
    with ExitStack() as stack:
        stack.enter_context(one_openmp_thread())
        stack.enter_context(one_blas_thread())
        _POOL.worker = True
        try:
            return fn(*args)
        finally:
            _POOL.worker = False


def thread_map(fn, tasks, workers, order=None):
    """``[fn(*t) for t in tasks]`` on a pool of ``workers`` threads, for tasks whose work
    releases the GIL: tasks side by side on the cores rather than threads within a task, so
    each task's OpenMP and BLAS regions run on one thread. ``order``: the submission order
    (the largest tasks first leave a small one last). With one worker or one task, the
    tasks run on the calling thread with its own threading; so do the tasks of a map
    called from a task of another (a grid's cells each fitting one-vs-one pairs): the outer
    pool already has every core busy. A task's error cancels the tasks not yet started and
    is raised."""
    if workers <= 1 or len(tasks) <= 1 or getattr(_POOL, "worker", False):
        return [fn(*t) for t in tasks]
    order = range(len(tasks)) if order is None else order
    out = [None] * len(tasks)
    # the calling thread limits BLAS for the whole pool, so the count is set and restored
    # from it: OpenBLAS can miss a count set from a worker thread, which left the process
    # at one thread for good, or a worker unlimited
    with one_blas_thread(), ThreadPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
        futures = {int(p): pool.submit(_capped, fn, *tasks[p]) for p in order}
        try:
            for p, fut in futures.items():
                out[p] = fut.result()
        except BaseException:
            for fut in futures.values():
                fut.cancel()
            raise
    return out
