"""The (kernel width, fold) grid of HSSSVCCV as Dask tasks."""
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ..estimators.cv import score_fold
from ..estimators.hss_svc import HSSSVCCV
from ._threads import run_capped

__all__ = ["DaskHSSSVCCV"]


def _fit_task(model, X, y, sample_weight=None):
    return model.fit(X, y, sample_weight=sample_weight)


class DaskHSSSVCCV(HSSSVCCV):
    """:class:`~hsskern.HSSSVCCV` whose (width, fold) grid runs as Dask tasks.

    One task per (kernel width, fold): it compresses K of the fold's training points,
    factors K + beta I and runs the ADMM along the whole C path on the worker, then scores
    every C on the held-out points and returns only those scores and timings (a few numbers
    per C). The refit on all data with the chosen (width, C) is one more task that returns
    the fitted :class:`~hsskern.HSSSVC` (support vectors and coefficients; no factor).

    The splits are drawn on the client with the serial estimator's code and each task runs
    the serial estimator's per-(width, fold) function, so with an int ``random_state`` the
    ``cv_results_`` scores and iteration counts, the chosen (width, C) and the refitted
    model equal those of :class:`~hsskern.HSSSVCCV` bitwise when the serial fit runs with
    the tasks' BLAS thread count (``threads_per_task``; for the default 1:
    ``with threadpoolctl.threadpool_limits(1): HSSSVCCV(...).fit(X, y)``). The OpenMP
    thread count does not matter. Without that limit, equality still holds for folds of at
    most ``RouteOptions.serial_n`` (5,000) training points on the exact
    decomposition route (the default up to 100,000 points), which runs on one thread
    anyway; above it OpenBLAS splits its sums (dot products, matrix-vector products) by
    its thread count, so the decomposition rounds differently, and where that changes a
    working-set choice it stops at another point within its tolerance. Each solution then
    differs from the last bits up to the solver's tolerance (``min(tol, 1e-3)`` in LIBSVM's
    gap; decision values by up to about 1e-3), and a fold's accuracy by the held-out points
    whose decision value lies that close to 0: k such points move it by k / n_test (one in
    4,000 moves the mean over 5 folds by 5e-5).

    A ``param_grid`` or ``scoring`` search runs in this process (joblib's ``n_jobs``), as
    :class:`~hsskern.HSSSVCCV`'s; only the ``Cs`` / width grid scored by accuracy runs as
    Dask tasks.

    What does not scale yet: one compression (one width, one fold) always runs on one
    worker, so the largest n is bounded by one worker's memory, and a grid with fewer cells
    than workers leaves workers idle.

    Parameters
    ----------
    scheduler : str or None, default None
        Address of the Dask scheduler (``"tcp://host:8786"``), connected to for the duration
        of ``fit``. None: the current client (``distributed.default_client()``, i.e. the last
        ``Client`` created or entered).
    threads_per_task : int or None, default 1
        BLAS/OpenMP threads each task may use (set in the task's thread with threadpoolctl).
        1 suits one single-threaded worker per core; None leaves the worker's settings.
    random_state : int or None, default None
        Seeds the splits and every compression. A ``RandomState`` instance is not accepted:
        its stream cannot be shared by tasks on different machines.
    **other parameters
        As in :class:`~hsskern.HSSSVCCV`.

    Attributes
    ----------
    cv_results_, C_, h_, gamma_, best_score_, best_index_, best_estimator_, classes_, n_iter_
        As in :class:`~hsskern.HSSSVCCV`.
    task_info_ : list of dict
        Per task: ``width``, ``fold`` (None for the refit), ``worker`` address, ``seconds``
        (wall time on the worker), ``cpu_seconds`` (CPU time of the task's thread; native
        threads it started are not counted), ``pid``, ``peak_rss_bytes`` (the worker process's high-water
        resident memory when the task ended) and ``task_peak_extra_bytes`` (the task's peak
        above the resident size it started from; Linux only, else None).
    fit_time_ : dict
        ``search`` (wall seconds of the whole grid, as seen by the client) and ``refit``.

    Examples
    --------
    >>> import numpy as np
    >>> from distributed import Client, LocalCluster
    >>> from hsskern.distributed import DaskHSSSVCCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = (np.hypot(*X.T) < 1).astype(int)
    >>> with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
    ...                   dashboard_address=":0") as cluster, Client(cluster):
    ...     cv = DaskHSSSVCCV(h=[0.5, 1.0], Cs=[0.1, 1, 10], random_state=0).fit(X, y)
    >>> cv.best_params_
    {'h': 0.5, 'C': 10.0}
    """

    _parameter_constraints = {
        **HSSSVCCV._parameter_constraints,
        "random_state": [Interval(Integral, 0, 2**32 - 1, closed="both"), None],
        "scheduler": [str, None],
        "threads_per_task": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, Cs=10, kernel="rbf", gamma="scale", h=None, shrinking=True,
                 probability=False, tol=1e-3, cache_size=200, class_weight=None, verbose=0,
                 max_iter=-1, decision_function_shape="ovr", break_ties=False,
                 random_state=None, memory_budget=None, options=None, param_grid=None,
                 scoring=None, cv=5, refit=True, n_jobs=None, scheduler=None,
                 threads_per_task=1):
        super().__init__(Cs=Cs, kernel=kernel, gamma=gamma, h=h, shrinking=shrinking,
                         probability=probability, tol=tol, cache_size=cache_size,
                         class_weight=class_weight, verbose=verbose, max_iter=max_iter,
                         decision_function_shape=decision_function_shape,
                         break_ties=break_ties, random_state=random_state,
                         memory_budget=memory_budget, options=options, param_grid=param_grid,
                         scoring=scoring, cv=cv, refit=refit, n_jobs=n_jobs)
        self.scheduler = scheduler
        self.threads_per_task = threads_per_task

    def _client(self):
        from distributed import Client, default_client
        if self.scheduler is not None:
            return Client(self.scheduler), True
        try:
            return default_client(), False
        except ValueError:
            raise ValueError("DaskHSSSVCCV needs a Dask client: create one "
                             "(distributed.Client(...)) or pass scheduler='tcp://host:port'"
                             ) from None

    def fit(self, X, y, sample_weight=None, groups=None):
        """Search the (width, C) grid on the Dask cluster, then refit there on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default None
            As in :meth:`HSSSVCCV.fit` (sent to the cluster with X and y).
        groups : array-like of shape (n_samples,), default None
            As in :meth:`HSSSVCCV.fit` (the splits are drawn on the client).

        Returns
        -------
        self
        """
        client, own = self._client()
        self._dask = client
        try:
            return super().fit(X, y, sample_weight=sample_weight, groups=groups)
        finally:
            del self._dask
            if own:
                client.close()

    def _score_grid(self, X, y, splits, grid, values, sample_weight=None, class_weight=None):
        """The serial fold scorer, one task per (width, fold)."""
        from distributed import as_completed
        client = self._dask
        # the data go to the cluster once; every task refers to the same copies.
        # broadcast: every worker needs X anyway, and scattered data cannot be recomputed,
        # so a single copy would make the worker holding it a single point of failure.
        # hash=False: a content key would collide with the data of a previous fit that is
        # still being released (its tasks then fail with "lost dependencies").
        self._data = client.scatter([X, y] + ([] if sample_weight is None else [sample_weight]),
                                    broadcast=True, hash=False)
        Xf, yf = self._data[:2]
        swf = self._data[2] if sample_weight is not None else None
        widths = [next(iter(p.values())) for p in grid]
        # narrow kernels first: they need the highest HSS ranks, so they are the longest
        # cells, and starting the longest first keeps a few workers evenly busy (only the
        # order changes, never a result)
        narrow = np.argsort(widths if "h" in grid[0] else np.negative(widths), kind="stable")
        priority = np.empty(len(widths), dtype=int)
        priority[narrow] = np.arange(len(widths), 0, -1)
        futures, metric = {}, self._fold_metric()
        for ig, params in enumerate(grid):
            backend = self._base_estimator(params)._make_backend(X, values, purpose="search")
            for s, (tr, te) in enumerate(splits):
                fut = client.submit(run_capped, score_fold,
                                    (backend, Xf, yf, tr, te, values, metric, True, swf,
                                     class_weight),
                                    self.threads_per_task, pure=False,
                                    priority=int(priority[ig]),
                                    key=f"hsskern-cv-{ig}-{s}-{_token()}")
                futures[fut] = (ig, s)
        results, self.task_info_ = {}, []
        # the fit's own client's loop: as_completed defaults to the current client's, and a
        # scheduler= connection inside 'with Client()' would be waited on across threads
        for fut in as_completed(futures, loop=client.loop):
            ig, s = futures[fut]
            results[ig, s], info = fut.result()
            self.task_info_.append({"width": widths[ig], "fold": s, **info})
            self._log(1, f"{grid[ig]} fold {s}: {info['seconds']:.3g} s on {info['worker']}")
        return results

    def _refit(self, X, y, sample_weight=None):
        Xf, yf = self._data[:2]
        swf = self._data[2] if sample_weight is not None else None
        del self._data
        model, info = self._dask.submit(run_capped, _fit_task,
                                        (self._base_estimator(self.best_params_), Xf, yf,
                                         swf),
                                        self.threads_per_task, pure=False,
                                        key=f"hsskern-refit-{_token()}").result()
        width = self.best_params_.get("h", self.best_params_.get("gamma"))
        self.task_info_.append({"width": width, "fold": None, **info})
        return model


def _token():
    import uuid
    return uuid.uuid4().hex[:12]
