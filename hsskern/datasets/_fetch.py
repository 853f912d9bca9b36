"""Finding a named benchmark data set: the cache, then ``../shared/datasets``, then its source.

The cache is ``$HSSKERN_DATA``, else ``<scikit-learn's data home>/hsskern`` (scikit-learn's
``get_data_home``: ``$SCIKIT_LEARN_DATA`` or ``~/scikit_learn_data``). A download keeps the
raw files under ``<cache>/raw/<name>/``, each checked against the sha256 in
:data:`~hsskern.datasets._sources.SOURCES` before it is used, and writes the converted arrays
to ``<cache>/<name>.npz``; a file is moved into place only whole and checked, so an interrupted
or corrupted download never leaves a file the next call would trust.
"""
import gzip
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from ..exceptions import HsskernError
from ._sources import SOURCES, arrays_sha256

DATA_ENV = "HSSKERN_DATA"

#: ``shared/datasets`` beside a source checkout (absent in an installed package or a bare clone).
SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"


class DataUnavailableError(HsskernError, FileNotFoundError):
    """A named data set is neither cached nor beside the checkout, and cannot be fetched."""


class ChecksumError(HsskernError, ValueError):
    """A downloaded file's sha256 is not the one recorded for it."""


def get_data_home(data_home=None):
    """The cache folder: ``data_home``, else ``$HSSKERN_DATA``, else
    ``sklearn.datasets.get_data_home() / "hsskern"``."""
    if data_home is not None:
        return Path(data_home).expanduser()
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    from sklearn.datasets import get_data_home
    return Path(get_data_home()) / "hsskern"


def find(name, data_home=None):
    """The ``.npz`` of a named set already on this machine (cache, then shared), or None."""
    for path in (get_data_home(data_home) / f"{name}.npz", SHARED / f"{name}.npz",
                 SHARED / "regression" / f"{name}.npz"):
        if path.exists():
            return path
    return None


def fetch(name, data_home=None, download=True):
    """The path of a named set's ``.npz``, downloading and converting it if needed.

    Parameters
    ----------
    name : str
        A key of ``SOURCES`` (``"a9a"``, ``"usps"``, ``"kin40k"``, ...).
    data_home : path or None
        The cache; default :func:`get_data_home`.
    download : bool
        When the set is on this machine neither in the cache nor in ``../shared/datasets``
        (:func:`find`): download its raw files (each sha256-checked), convert them (the
        arrays checked against the recorded sha256) and cache the result; else raise.

    Returns
    -------
    path : Path
        ``X_train, y_train, X_test, y_test`` in an ``.npz``; read it with :func:`load`.

    Raises
    ------
    DataUnavailableError
        Neither found nor fetched; the message names the set's public source.
    ChecksumError
        A downloaded file, or the converted arrays, differ from the recorded sha256.
    """
    if name not in SOURCES:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(sorted(SOURCES))}")
    path = find(name, data_home)
    if path is not None:
        return path
    home = get_data_home(data_home)
    src = SOURCES[name]
    if not download:
        raise DataUnavailableError(_missing(name, home, "download=False"))
    raw = home / "raw" / name
    try:
        paths = [download_file(f.url, raw / f.name, f.sha256, gunzipped=f.gunzipped)
                 for f in src.files]
    except (urllib.error.URLError, OSError) as e:
        raise DataUnavailableError(_missing(name, home, f"downloading failed: {e}")) from e
    arrays = src.convert(paths)
    got = arrays_sha256(arrays)
    if src.arrays_sha256 is not None and got != src.arrays_sha256:
        raise ChecksumError(f"data set {name!r}: the converted arrays' sha256 is {got}, not the "
                            f"recorded {src.arrays_sha256}; nothing was cached (the raw files "
                            f"in {raw} passed their checks: the conversion differs here)")
    return _save_npz(home / f"{name}.npz", arrays)


def _missing(name, home, why):
    src = SOURCES[name]
    return (f"data set {name!r} is not in {home} (set ${DATA_ENV} to move it) nor {SHARED}, "
            f"and {why}. It comes from {src.describe()}: python -c \"from hsskern.datasets "
            f"import fetch; fetch({name!r})\" downloads and converts it (sha256-checked)")


def download_file(url, dest, sha256, timeout=60, gunzipped=False):
    """``dest``, downloaded from ``url`` unless already there with this sha256.

    The bytes go to a temporary file beside ``dest``, renamed to ``dest`` only once their
    sha256 matches: raises :class:`ChecksumError` (keeping nothing) when it does not.
    ``gunzipped``: the sha256 is of the file's gzip-decompressed bytes.
    """
    dest = Path(dest)
    if dest.exists() and _sha256(dest, gunzipped) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as r:
            for chunk in iter(lambda: r.read(1 << 20), b""):
                out.write(chunk)
        try:
            got = _sha256(tmp, gunzipped)
        except (OSError, EOFError) as e:  # not gzip data, or cut short
            got = f"unreadable ({e})"
        if got != sha256:
            raise ChecksumError(f"{url}: sha256 {got}, expected {sha256}; "
                                f"the file was not kept")
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return dest


def _sha256(path, gunzipped=False):
    digest = hashlib.sha256()
    with (gzip.open if gunzipped else open)(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _save_npz(path, arrays):
    X_train, y_train, X_test, y_test = arrays
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, X_train=X_train, y_train=y_train, X_test=X_test,
                                y_test=y_test)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path
