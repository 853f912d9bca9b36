"""Scale-out on a Dask cluster (the optional extra ``pip install hsskern[dask]``).

* :class:`DaskHSSSVCCV` — :class:`~hsskern.HSSSVCCV` with one Dask task per (kernel width,
  fold): each task compresses K, factors K + beta I and sweeps the whole C path on its worker,
  and returns only scores and timings; the refit returns the fitted model. Factors never
  travel. Same splits, same scores, same chosen (width, C) as the serial estimator.
* :class:`DaskExactSVC` — :class:`~hsskern.ExactSVC` on one large problem: the exact
  decomposition's kernel products run on workers that hold row blocks of the training points
  (:class:`DaskProducts`); each round sends the changed points and coefficients and gets back
  one decision-value update per block. Same answer as the serial estimator, also when a
  worker dies.
* :func:`decision_function` / :func:`predict` — a fitted model applied to a dask array of
  test points block by block (``map_blocks``), the model scattered to the workers once.
* :func:`limit_worker_threads` / :class:`ThreadCap` — cap BLAS and OpenMP threads on every
  worker so that several single-threaded workers on one machine do not oversubscribe it.

The same code runs on a laptop ``LocalCluster`` and on a multi-machine cluster: connect a
``distributed.Client("tcp://scheduler:8786")`` (or pass ``scheduler="tcp://..."``).
"""
try:
    import distributed  # noqa: F401
    import dask.array  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("hsskern.distributed needs dask[distributed] and dask[array]: "
                      "pip install 'hsskern[dask]'") from exc

from ._exact import DaskExactSVC, DaskProducts
from ._grid import DaskHSSSVCCV
from ._predict import decision_function, predict
from ._threads import ThreadCap, limit_worker_threads

__all__ = ["DaskHSSSVCCV", "DaskExactSVC", "DaskProducts", "decision_function", "predict", "ThreadCap",
           "limit_worker_threads"]
