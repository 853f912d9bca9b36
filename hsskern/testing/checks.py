"""Contract checks for operators: any backend's operator must pass against a dense reference."""
import numpy as np


def _relerr(a, b):
    scale = max(np.linalg.norm(b), np.finfo(float).tiny)
    return np.linalg.norm(a - b) / scale


def check_kernel_operator(op, dense, rng=None, rtol=1e-12, n_rhs=3):
    """Assert that ``op`` behaves as the dense matrix ``dense`` (shape (m, n)).

    Checks matvec, matmat, the adjoint, ``submatrix`` on random index sets and, for square
    operators, ``diag``. Returns nothing; raises AssertionError naming the first failure.
    """
    rng = np.random.default_rng(rng)
    m, n = dense.shape
    assert op.shape == (m, n), f"shape {op.shape} != {(m, n)}"
    v = rng.standard_normal(n)
    V = rng.standard_normal((n, n_rhs))
    w = rng.standard_normal(m)
    checks = {
        "matvec": (op.matvec(v), dense @ v),
        "matmat": (op.matmat(V), dense @ V),
        "rmatvec": (op.rmatvec(w), dense.T @ w),
    }
    if m and n:
        I = rng.integers(0, m, size=min(m, 7))
        J = rng.integers(0, n, size=min(n, 11))
        checks["submatrix"] = (op.submatrix(I, J), dense[np.ix_(I, J)])
    if m == n and hasattr(op, "diag"):
        checks["diag"] = (op.diag(), np.diag(dense))
    for name, (got, want) in checks.items():
        err = _relerr(np.asarray(got), want)
        assert err <= rtol, f"{name}: relative error {err:.3e} > {rtol:.1e}"
