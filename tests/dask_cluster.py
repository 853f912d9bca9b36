"""The LocalCluster the Dask test modules run on (each module starts its own: one kills
workers, and the other must not see the replacements)."""
from contextlib import contextmanager


@contextmanager
def two_worker_client():
    """A client of two single-threaded worker processes (processes: a killed worker takes
    only itself down; OMP/BLAS set to one thread before the workers load them)."""
    import distributed
    from hsskern.distributed import limit_worker_threads
    env = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, env=env) as cluster, \
            distributed.Client(cluster) as c:
        limit_worker_threads(c, 1)
        # both workers import the solvers before any test: a worker still importing them
        # when the first tasks arrive left every task to the other (a loaded machine)
        c.run(lambda: __import__("hsskern.solvers.paths.hss_path"))
        yield c
