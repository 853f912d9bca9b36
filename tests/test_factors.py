import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.sparse.linalg import LinearOperator, cg

from hsskern import kernel_operator
from hsskern.exceptions import MemoryBudgetError, NotPositiveDefiniteError
from hsskern.factors import DenseCholeskyFactor, Factor


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # the matrices here are tiny: threaded BLAS only adds spin-wait on a shared machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield


def _spd_kernel(n, d=3, h=1.0, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return kernel_operator(X, "gaussian", h=h)


@settings(max_examples=15)
@given(n=st.integers(2, 120), log_beta=st.floats(-6, 3), r=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_solve_residual_and_logdet(n, log_beta, r, seed):
    K = _spd_kernel(n, seed=seed)
    A = K.to_dense()
    beta = 10.0 ** log_beta * max(1.0, np.linalg.norm(A, 2) if log_beta < 0 else 1.0)
    F = DenseCholeskyFactor(K, beta)
    assert isinstance(F, Factor)
    rng = np.random.default_rng(seed)
    for b in (rng.normal(size=n), rng.normal(size=(n, r))):
        x = F.solve(b)
        assert x.shape == b.shape
        res = np.linalg.norm((A + beta * np.eye(n)) @ x - b) / np.linalg.norm(b)
        # backward-stable Cholesky: residual ~ eps * cond, and cond <= (||A|| + beta) / beta
        cond = (np.linalg.norm(A, 2) + beta) / beta
        assert res <= max(1e-10, 1e-14 * cond)
    sign, ref = np.linalg.slogdet(A + beta * np.eye(n))
    assert sign == 1
    assert F.logdet() == pytest.approx(ref, rel=1e-8, abs=1e-8)
    assert F.beta == beta
    assert F.memory_bytes() >= 8 * n * n
    inv = np.linalg.inv(A + beta * np.eye(n))
    np.testing.assert_allclose(F.inverse_diagonal(), np.diag(inv), rtol=1e-12 * cond)


def test_accepts_array_operator_and_linear_operator():
    K = _spd_kernel(50)
    A = K.to_dense()
    b = np.arange(50.0)
    x = DenseCholeskyFactor(A, 0.5).solve(b)
    generic = LinearOperator(A.shape, matvec=lambda v: A @ v, matmat=lambda V: A @ V)
    for src in (K, generic):
        np.testing.assert_allclose(DenseCholeskyFactor(src, 0.5).solve(b), x, rtol=1e-12)


def test_preconditions_cg_on_exact_operator():
    K = _spd_kernel(400, h=2.0)
    beta = 1e-2
    Kb = K.shifted(beta)
    b = np.random.default_rng(1).normal(size=400)
    it = {"plain": 0, "pre": 0}

    def counter(key):
        def cb(xk):
            it[key] += 1
        return cb
    M = DenseCholeskyFactor(K, beta).as_linear_operator()
    x, info = cg(Kb, b, M=M, rtol=1e-10, callback=counter("pre"))
    assert info == 0 and it["pre"] <= 3
    assert np.linalg.norm(Kb @ x - b) <= 1e-9 * np.linalg.norm(b)
    cg(Kb, b, rtol=1e-10, maxiter=50, callback=counter("plain"))
    assert it["plain"] > it["pre"]


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_nonpositive_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        DenseCholeskyFactor(np.eye(3), beta)


def test_not_positive_definite_suggests_beta():
    A = np.diag([1.0, 2.0, -3.0])
    with pytest.raises(NotPositiveDefiniteError) as info:
        DenseCholeskyFactor(A, 1.0)
    s = info.value.suggested_beta
    assert s is not None and s > 3.0 and "beta >=" in str(info.value)
    F = DenseCholeskyFactor(A, s)  # the suggestion works
    assert np.isfinite(F.solve(np.ones(3))).all()


def test_memory_guard_before_allocation():
    class Huge:
        shape = (10**6, 10**6)
    with pytest.raises(MemoryBudgetError, match="Cholesky"):
        DenseCholeskyFactor(Huge(), 1.0)


def test_non_square():
    with pytest.raises(ValueError, match="square"):
        DenseCholeskyFactor(np.ones((3, 4)), 1.0)
