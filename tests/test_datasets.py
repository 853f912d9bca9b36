import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from hsskern.datasets import load


def test_bundled_ijcnn1():
    Xtr, ytr, Xte, yte = load("ijcnn1")
    assert Xtr.shape == (49990, 22) and Xte.shape == (91701, 22)
    assert set(np.unique(ytr)) == {-1.0, 1.0} and len(yte) == 91701
    assert np.abs(Xtr).max() <= 1.0  # LIBSVM's scaling, as the paper uses it


def test_npz_and_svmlight(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 4)), np.where(rng.random(30) < 0.5, -1.0, 1.0)
    np.savez(tmp_path / "a.npz", X_train=X[:20], y_train=y[:20], X_test=X[20:], y_test=y[20:])
    out = load(tmp_path / "a.npz")
    np.testing.assert_array_equal(out[0], X[:20])
    np.testing.assert_array_equal(out[3], y[20:])
    dump_svmlight_file(X[:20], y[:20], str(tmp_path / "b"))
    dump_svmlight_file(X[20:], y[20:], str(tmp_path / "b.t"))
    Xtr, ytr, Xte, yte = load(str(tmp_path / "b"))
    np.testing.assert_allclose(Xtr, X[:20], rtol=1e-12)
    np.testing.assert_array_equal(yte, y[20:])
    dump_svmlight_file(X[:20], y[:20], str(tmp_path / "c"))
    with pytest.raises(ValueError, match="test="):
        load(tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="bundled"):
        load("no_such_set")


# -- named sets: cache, ../shared, download (against a server on the loopback interface) ------

import hashlib  # noqa: E402
import http.server  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402

from hsskern.datasets import (SOURCES, ChecksumError, DataUnavailableError,  # noqa: E402
                              _fetch, _sources, arrays_sha256, download_file, fetch, find)


@pytest.fixture
def server(tmp_path, monkeypatch):
    """An HTTP server on 127.0.0.1 serving ``tmp_path/www``: (that folder, its base URL, the
    paths it was asked for)."""
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)  # loopback only, never through a proxy
    root = tmp_path / "www"
    root.mkdir()
    asked = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(root), **k)

        def log_request(self, code="-", size="-"):
            asked.append(self.path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}", asked
    httpd.shutdown()
    httpd.server_close()


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def test_download_fetches_once_then_hits_the_cache(server, tmp_path):
    root, url, asked = server
    data = b"1.0,2.0,1\n" * 50
    (root / "f.csv").write_bytes(data)
    dest = tmp_path / "cache" / "f.csv"
    assert download_file(f"{url}/f.csv", dest, _sha(data)) == dest
    assert dest.read_bytes() == data and asked == ["/f.csv"]
    download_file(f"{url}/f.csv", dest, _sha(data))
    assert asked == ["/f.csv"]  # the checked copy is used: no second request


def test_download_refuses_a_wrong_checksum_and_keeps_nothing(server, tmp_path):
    root, url, asked = server
    (root / "f.csv").write_bytes(b"tampered\n")
    dest = tmp_path / "cache" / "f.csv"
    with pytest.raises(ChecksumError, match="sha256"):
        download_file(f"{url}/f.csv", dest, _sha(b"the real bytes\n"))
    assert asked == ["/f.csv"] and list(dest.parent.iterdir()) == []  # no partial file


def test_a_cached_file_that_no_longer_matches_is_downloaded_again(server, tmp_path):
    root, url, asked = server
    data = b"good\n"
    (root / "f.csv").write_bytes(data)
    dest = tmp_path / "f.csv"
    dest.write_bytes(b"corrupted\n")
    download_file(f"{url}/f.csv", dest, _sha(data))
    assert dest.read_bytes() == data and asked == ["/f.csv"]


def _banknote_like(root):
    """A small table in banknote's layout (header, 4 features, class 0/1) on the server."""
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(40, 4)), 4)
    y = np.arange(40) % 2
    text = "variance,skew,curtosis,entropy,class\n" + "".join(
        ",".join(f"{v:g}" for v in row) + f",{c}\n" for row, c in zip(X, y))
    (root / "bank.txt").write_text(text)
    return X, y, _sha(text.encode())


def _tiny_source(root, tmp_path, monkeypatch, url, arrays_sha=None):
    """A named set "tiny" in banknote's layout, served from ``root``; nothing cached or shared."""
    X, y, sha = _banknote_like(root)
    convert = SOURCES["banknote"].convert
    if arrays_sha is None:
        arrays_sha = arrays_sha256(convert([root / "bank.txt"]))
    monkeypatch.setitem(SOURCES, "tiny", _sources.Source("binary", (
        _sources.RawFile("o/r", "0" * 40, "bank.txt", sha),), convert, "", arrays_sha))
    monkeypatch.setattr(_sources, "_RAW", url + "/{path}")
    monkeypatch.setattr(_fetch, "SHARED", tmp_path / "no_shared")
    monkeypatch.setenv("HSSKERN_DATA", str(tmp_path / "cache"))
    return X, y


def test_fetch_downloads_converts_and_caches_a_named_set(server, tmp_path, monkeypatch):
    root, url, asked = server
    X, y = _tiny_source(root, tmp_path, monkeypatch, url)
    assert find("tiny") is None
    path = fetch("tiny")
    assert path == tmp_path / "cache" / "tiny.npz" and find("tiny") == path
    Xtr, ytr, Xte, yte = load("tiny")
    # banknote's conversion: +1 = class 1, stratified 70/30 split, every row kept once
    assert (len(ytr), len(yte)) == (28, 12) and set(ytr) == {-1.0, 1.0}
    rows = {tuple(r): c for r, c in zip(X, np.where(y == 1, 1.0, -1.0))}
    assert sorted(map(tuple, np.vstack([Xtr, Xte]))) == sorted(rows)
    assert all(rows[tuple(r)] == c for r, c in zip(Xtr, ytr))
    load("tiny")
    assert asked == ["/bank.txt"]  # the converted set is cached


def test_a_conversion_that_does_not_give_the_recorded_arrays_is_not_cached(server, tmp_path,
                                                                          monkeypatch):
    root, url, asked = server
    _tiny_source(root, tmp_path, monkeypatch, url, arrays_sha="0" * 64)
    with pytest.raises(ChecksumError, match="converted arrays"):
        fetch("tiny")
    assert find("tiny") is None and not list((tmp_path / "cache").glob("*.npz"))


@pytest.mark.shared_data
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_recorded_arrays_are_those_of_shared_datasets(name):
    # where ../shared is present: the checksum a download's conversion must meet is that of
    # the shared set the benchmarks were measured on
    path = next((p for p in (_fetch.SHARED / f"{name}.npz",
                             _fetch.SHARED / "regression" / f"{name}.npz") if p.exists()), None)
    if path is None:
        pytest.skip(f"{name}.npz is not in {_fetch.SHARED}")
    with np.load(path) as d:
        arrays = [d[k] for k in ("X_train", "y_train", "X_test", "y_test")]
    assert arrays_sha256(arrays) == SOURCES[name].arrays_sha256


def test_a_set_that_cannot_be_fetched_names_its_source(tmp_path, monkeypatch):
    monkeypatch.setenv("HSSKERN_DATA", str(tmp_path))
    monkeypatch.setattr(_fetch, "SHARED", tmp_path / "no_shared")
    monkeypatch.setattr(_sources, "_RAW", "http://127.0.0.1:9/{path}")  # refused
    with pytest.raises(DataUnavailableError,
                       match=r"'banknote'.*aman3599/banknotes-authentication-ML"):
        fetch("banknote", data_home=tmp_path)
    with pytest.raises(DataUnavailableError, match="download=False"):
        load("banknote", download=False)
    with pytest.raises(DataUnavailableError, match="zalandoresearch/fashion-mnist"):
        fetch("fashion_mnist", data_home=tmp_path)
    with pytest.raises(ValueError, match="unknown data set 'nope'.*usps"):
        fetch("nope")


def test_the_cache_is_HSSKERN_DATA_else_scikit_learns_data_home(tmp_path, monkeypatch):
    from hsskern.datasets import get_data_home
    monkeypatch.setenv("HSSKERN_DATA", str(tmp_path / "mine"))
    assert get_data_home() == tmp_path / "mine"
    monkeypatch.delenv("HSSKERN_DATA")
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "sk"))
    assert get_data_home() == tmp_path / "sk" / "hsskern"


def test_every_source_is_pinned_to_a_commit_and_a_checksum():
    for name, src in SOURCES.items():
        assert src.kind in ("binary", "multiclass", "regression"), name
        for f in src.files:
            assert re.fullmatch(r"[0-9a-f]{40}", f.commit), (name, f)
            assert re.fullmatch(r"[0-9a-f]{64}", f.sha256), (name, f)
            assert f.url.startswith("https://raw.githubusercontent.com/" + f.repo + "/")



def _gz(data, mtime):
    import gzip
    import io
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=mtime) as f:
        f.write(data)
    return buf.getvalue()


def test_a_gunzipped_checksum_ignores_the_gzip_header_and_refuses_other_content(server,
                                                                                tmp_path):
    # Fashion-MNIST's files: the same content behind different gzip headers (mtime) in
    # different copies, so the recorded sha256 is of the decompressed bytes
    root, url, asked = server
    content = bytes(range(256)) * 40
    (root / "a.gz").write_bytes(_gz(content, mtime=1))
    (root / "b.gz").write_bytes(_gz(content[::-1], mtime=1))
    (root / "c.gz").write_bytes(b"not gzip at all")
    dest = tmp_path / "cache" / "a.gz"
    assert download_file(f"{url}/a.gz", dest, _sha(content), gunzipped=True) == dest
    assert dest.read_bytes() != _gz(content, mtime=2)  # another header, the same check
    assert _fetch._sha256(dest, gunzipped=True) == _sha(content)
    for bad in ("b.gz", "c.gz"):
        with pytest.raises(ChecksumError, match="sha256"):
            download_file(f"{url}/{bad}", tmp_path / "cache" / bad, _sha(content),
                          gunzipped=True)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["a.gz"]


def _idx_gz(path, a):
    """``a`` (uint8) written as a gzip-compressed IDX file."""
    import gzip
    header = bytes([0, 0, 8, a.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in a.shape)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + np.ascontiguousarray(a, dtype=np.uint8).tobytes())


def test_the_idx_conversion_reads_what_it_writes(tmp_path):
    rng = np.random.default_rng(0)
    Xtr, Xte = (rng.integers(0, 256, size=(m, 28, 28), dtype=np.uint8) for m in (7, 3))
    ytr, yte = rng.integers(0, 10, size=7, dtype=np.uint8), rng.integers(0, 10, size=3,
                                                                          dtype=np.uint8)
    paths = [tmp_path / f"{i}.gz" for i in range(4)]
    for p, a in zip(paths, (Xtr, ytr, Xte, yte)):
        _idx_gz(p, a)
    got = _sources._fashion(paths)
    for g, want in zip(got, (Xtr.reshape(7, -1), ytr, Xte.reshape(3, -1), yte)):
        assert g.dtype == np.float64
        np.testing.assert_array_equal(g, want)
