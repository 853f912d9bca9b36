"""Loaders: bundled and named (fetched) data sets, ``.npz`` files in the shared benchmark
format, svmlight files."""
from pathlib import Path

import numpy as np

from ._fetch import fetch
from ._sources import SOURCES

_HERE = Path(__file__).resolve().parent

#: Data sets shipped inside the package (``hsskern/datasets/<name>.npz``).
BUNDLED = ("ijcnn1",)


def load(name, test=None, download=True):
    """Load a train/test split.

    Parameters
    ----------
    name : str or path
        A bundled name (``"ijcnn1"``: the official LIBSVM split, 49,990 x 22 train and
        91,701 x 22 test, features already scaled to [-1, 1] by LIBSVM), a ``.npz`` file holding
        ``X_train, y_train, X_test, y_test`` (the ``shared/datasets`` format), or an svmlight /
        LIBSVM text file (read with scikit-learn's loader).
    test : path or None
        svmlight only: the test file. Default: ``<name>.t`` when it exists.
    download : bool
        A named set not on this machine: download it (else raise ``DataUnavailableError``).

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features)
    y_train : ndarray of shape (n_train,)
    X_test : ndarray of shape (n_test, n_features)
    y_test : ndarray of shape (n_test,)
    """
    if str(name) in BUNDLED:
        return _load_npz(_HERE / f"{name}.npz")
    if str(name) in SOURCES:
        return _load_npz(fetch(str(name), download=download))
    path = Path(name)
    if not path.exists():
        raise FileNotFoundError(f"{name!r} is neither a bundled data set {BUNDLED}, a named "
                                f"one ({', '.join(sorted(SOURCES))}) nor an existing file")
    if path.suffix == ".npz":
        return _load_npz(path)
    return _load_svmlight(path, test)


def _load_npz(path):
    with np.load(path) as d:
        missing = {"X_train", "y_train", "X_test", "y_test"} - set(d.files)
        if missing:
            raise ValueError(f"{path} lacks the arrays {sorted(missing)}")
        return (np.ascontiguousarray(d["X_train"], dtype=np.float64), np.asarray(d["y_train"]),
                np.ascontiguousarray(d["X_test"], dtype=np.float64), np.asarray(d["y_test"]))


def _load_svmlight(path, test):
    from sklearn.datasets import load_svmlight_files
    if test is None:
        cand = Path(str(path) + ".t")
        if not cand.exists():
            raise ValueError(f"no test file for {path}: pass test=, or provide {cand}")
        test = cand
    Xtr, ytr, Xte, yte = load_svmlight_files([str(path), str(test)])
    return Xtr.toarray(), ytr, Xte.toarray(), yte
