"""
Dask: speed-up against the number of workers
============================================

:class:`~hsskern.distributed.DaskHSSSVCCV` runs :class:`~hsskern.HSSSVCCV`'s grid as one
Dask task per (kernel width, fold): each task prepares its fold once and solves the whole C
path there; only scores come back. More workers run more cells at once, up to the number of
cells. The search's wall time is measured here on a local cluster of 1 and 2
single-threaded workers (this documentation is built on a 2-core machine, so 2 is the most
that can help), against the serial estimator on one thread; ``cv_results_`` is the same in
every run. The workers are threads of this process (``processes=False``), which keeps the
example short: the compiled kernels, compression and solvers release the GIL, the Python
between them does not, so worker processes (the default of ``LocalCluster``, and what a
real cluster has) scale better. The figure's title gives the machine's load average: with
other jobs on the cores, the speed-up measures them, not Dask.
"""
import os
import time

import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster
from threadpoolctl import threadpool_limits

from hsskern import HSSSVCCV
from hsskern.datasets import load
from hsskern.distributed import DaskHSSSVCCV

X, y, _, _ = load("ijcnn1")
X, y = X[:6000], y[:6000]
params = dict(h=[0.5, 1.0, 2.0, 4.0], Cs=[0.1, 1.0, 10.0], cv=2, refit=False,
              random_state=0)

with threadpool_limits(1):
    start = time.perf_counter()
    serial = HSSSVCCV(**params).fit(X, y)
    serial_seconds = time.perf_counter() - start
print(f"serial: {serial_seconds:.1f} s, best (h, C) = {serial.best_params_}")

seconds = {}
for n_workers in (1, 2):
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster):
        start = time.perf_counter()
        search = DaskHSSSVCCV(**params).fit(X, y)
        seconds[n_workers] = time.perf_counter() - start
        same = np.array_equal(search.cv_results_["mean_test_score"],
                              serial.cv_results_["mean_test_score"])
        print(f"{n_workers} worker(s): search {seconds[n_workers]:.1f} s, "
              f"cv_results_ equal to serial: {same}")

# %%
# Speed-up of the search (no refit: ``refit=False``) over the serial grid on one thread.
workers = np.array(sorted(seconds))
speedup = serial_seconds / np.array([seconds[w] for w in workers])
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.plot(workers, speedup, "o-", label="DaskHSSSVCCV")
ax.plot(workers, workers, "k--", label="linear")
ax.set(xlabel="workers (one thread each)", ylabel="speed-up over serial", xticks=workers,
       ylim=(0, 2.2),
       title=f"(width, fold) grid; load average {os.getloadavg()[0]:.1f} on "
             f"{os.cpu_count()} cores")
ax.legend()
fig.tight_layout()
plt.show()
