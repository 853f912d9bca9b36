"""BLAS thread limits are restored after fits, also when fits run in several threads at once."""
import ast
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from threadpoolctl import threadpool_info

from hsskern.utils._threads import blas_threads, one_blas_thread


def _blas_counts():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def _in_threads(fns):
    errors = []

    def run(fn):
        try:
            fn()
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    ts = [threading.Thread(target=run, args=(fn,)) for fn in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


class _FakeBLAS:
    """A library controller whose count is one process-wide value, as OpenBLAS's."""

    def __init__(self, n):
        self.n = n

    def get_num_threads(self):
        return self.n

    def set_num_threads(self, n):
        self.n = n


def test_interleaved_limits_restore_the_original_count(monkeypatch):
    """A enters, B enters, A leaves, B leaves (the order that strands save/restore contexts at
    one thread), and the reverse exit order, forced with events on controllers whose count is
    process-wide. (OpenBLAS ignores some calls from non-main threads, so real libraries
    cannot force this order reliably in-process; the fit test below runs in a fresh process.)"""
    from hsskern.utils import _threads
    libs = [_FakeBLAS(4), _FakeBLAS(2)]
    monkeypatch.setattr(_threads, "_libraries", lambda: libs)
    for first_out in ("A", "B"):
        a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
        seen = {}

        def a():
            with one_blas_thread():
                a_in.set()
                b_in.wait()
                seen["a"] = [lib.n for lib in libs]
                if first_out == "B":
                    a_out.wait()
            a_out.set()

        def b():
            a_in.wait()
            with blas_threads(2):
                b_in.set()
                if first_out == "A":
                    a_out.wait()
                seen["b"] = [lib.n for lib in libs]
            if first_out == "B":
                a_out.set()

        _in_threads([a, b])
        assert seen["a"] == [1, 1], (first_out, seen)
        # after A left, B's own limit (2) applies; while A is in, the smaller one (1)
        assert seen["b"] == ([2, 2] if first_out == "A" else [1, 1]), (first_out, seen)
        assert [lib.n for lib in libs] == [4, 2]


def test_nested_limits_take_the_smallest_and_unwind(monkeypatch):
    from hsskern.utils import _threads
    libs = [_FakeBLAS(3)]
    monkeypatch.setattr(_threads, "_libraries", lambda: libs)
    with blas_threads(4):
        assert libs[0].n == 3  # a limit never raises the count
        with blas_threads(2):
            assert libs[0].n == 2
            with one_blas_thread():
                assert libs[0].n == 1
                libs[0].set_num_threads(1)  # a third-party save/restore inside: harmless
            assert libs[0].n == 2
        assert libs[0].n == 3
    assert libs[0].n == 3
    with pytest.raises(ValueError, match=">= 1"):
        blas_threads(0)


def test_limits_reach_the_real_libraries_from_the_main_thread():
    before = _blas_counts()
    with one_blas_thread():
        assert set(_blas_counts()) == {1}
    assert _blas_counts() == before


def test_concurrent_fits_leave_the_blas_pools_as_they_found_them():
    """Issue 21: two NystromSVC(landmarks="kmeans") fits in two threads left both OpenBLAS
    pools at one thread for the rest of the process (5 of 5 trials). In a fresh process (as
    the report's), started at 2 BLAS threads whatever the machine."""
    code = textwrap.dedent("""
        import threading
        import numpy as np
        from threadpoolctl import threadpool_info
        from hsskern import HSSSVC, NystromSVC

        def counts():
            return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

        def in_threads(fns):
            ts = [threading.Thread(target=f) for f in fns]
            [t.start() for t in ts]
            [t.join() for t in ts]

        rng = np.random.default_rng(0)
        X = rng.normal(size=(3000, 8))
        y = (X[:, 0] * X[:, 1] > 0).astype(int)
        print(counts())
        for trial in range(3):
            in_threads([lambda s=s: NystromSVC(landmarks="kmeans", n_components=200,
                                                random_state=s).fit(X, y) for s in range(2)])
            print(counts())
        # the HSS path (compression and ULV limit BLAS too) next to a Nystrom fit
        in_threads([lambda: HSSSVC(random_state=0).fit(X[:1500], y[:1500]),
                    lambda: NystromSVC(landmarks="kmeans", n_components=100,
                                       random_state=0).fit(X, y)])
        print(counts())
    """)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = [ast.literal_eval(line) for line in res.stdout.split("\n") if line.startswith("[")]
    assert len(rows) == 5 and set(rows[0]) == {2}
    assert all(r == rows[0] for r in rows[1:]), rows


@pytest.mark.parametrize("make", [
    lambda: __import__("hsskern").SparseCholeskySVC(sigma=1.5, C=10.0, random_state=0),
    lambda: __import__("hsskern").NystromSVC(gamma=0.5, n_components=60, loss="hinge", C=10.0,
                                             max_iter=200, random_state=0)],
    ids=["SparseCholeskySVC", "NystromSVC-hinge"])
def test_concurrent_liblinear_fits_equal_their_serial_fits_bitwise(make):
    """Issue 43, part 7: LIBLINEAR draws its coordinate order from one process-wide generator
    that every fit seeds; two fits in two threads interleaved their draws and differed from
    their serial fits (2e-5, most runs). Each concurrent fit must equal its serial one."""
    import warnings

    import numpy as np
    from sklearn.datasets import make_classification
    data = [make_classification(300, 4, n_informative=3, n_redundant=0, flip_y=0.1,
                                random_state=seed) for seed in (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LIBLINEAR's convergence is not the point
        serial = [make().fit(X, y) for X, y in data]
        for _ in range(4):
            out = [None, None]

            def fit(i):
                out[i] = make().fit(*data[i])
            _in_threads([lambda: fit(0), lambda: fit(1)])
            for got, ref in zip(out, serial):
                coef = "dual_coef_" if hasattr(ref, "dual_coef_") else "coef_"
                np.testing.assert_array_equal(getattr(got, coef), getattr(ref, coef))
                np.testing.assert_array_equal(got.intercept_, ref.intercept_)


def test_thread_map_keeps_the_tasks_order_caps_threads_and_raises_a_failure():
    """thread_map returns fn's results in the tasks' order whatever the submission order,
    runs each task with one BLAS thread (restored after), and raises a task's error."""
    from hsskern.utils._threads import thread_map
    before = _blas_counts()
    seen = []

    def task(i):
        seen.append(_blas_counts())
        return i * i

    out = thread_map(task, [(i,) for i in range(6)], 2, order=[5, 3, 1, 0, 2, 4])
    assert out == [i * i for i in range(6)]
    assert all(all(c == 1 for c in counts) for counts in seen)
    assert _blas_counts() == before

    def fails(i):
        if i == 2:
            raise ValueError("task 2")
        return i

    with pytest.raises(ValueError, match="task 2"):
        thread_map(fails, [(i,) for i in range(4)], 2)
    assert _blas_counts() == before
    # one worker: the calling thread, its own BLAS threads
    assert thread_map(lambda: _blas_counts(), [(), ()], 1) == [before, before]


def test_a_map_inside_a_task_of_another_runs_on_that_task_s_thread():
    """A pool's task that maps again (a grid's cell fitting one-vs-one pairs) runs the inner
    tasks on its own thread: the outer pool already keeps every core busy."""
    from hsskern.utils._threads import thread_map

    def inner(k):
        return threading.get_ident()

    def outer(i):
        return threading.get_ident(), thread_map(inner, [(k,) for k in range(4)], 2)

    for me, theirs in thread_map(outer, [(i,) for i in range(3)], 2):
        assert theirs == [me] * 4
    # from a plain thread (not a pool's task) a map still runs on its own pool
    idents = thread_map(lambda k: (time.sleep(0.05), threading.get_ident())[1],
                        [(k,) for k in range(4)], 2)
    assert threading.get_ident() not in idents
