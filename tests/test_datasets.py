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
