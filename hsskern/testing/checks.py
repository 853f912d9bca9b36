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


def check_factor(factor, A, rng=None, rtol=1e-8, n_rhs=3):
    """Assert that ``factor`` is a factorization of ``A + factor.beta I`` (``A``: the dense
    (n, n) matrix it was built from) as the factor protocol says (:mod:`hsskern.factors`).

    Checks ``beta`` (> 0, a float), ``shape``, ``solve`` of a vector and of a block of
    ``n_rhs`` columns against the dense system (backward error within ``rtol``; the block
    equal to the vectors solved one by one, ``b`` left unchanged), ``logdet`` against
    ``numpy.linalg.slogdet``, ``memory_bytes`` (an int > 0), ``as_linear_operator`` (the
    solve, as a scipy ``LinearOperator``, vector and block) and, where the factor has it,
    ``inverse_diagonal``. Returns nothing; raises AssertionError naming the first failure.
    """
    from scipy.sparse.linalg import LinearOperator

    from ..factors import Factor
    rng = np.random.default_rng(rng)
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[0]
    assert isinstance(factor, Factor), f"{type(factor).__name__} lacks the Factor protocol"
    beta = factor.beta
    assert np.isscalar(beta) and beta > 0, f"beta must be a float > 0, got {beta!r}"
    assert tuple(factor.shape) == (n, n), f"shape {factor.shape} != {(n, n)}"
    M = A + beta * np.eye(n)
    scale = np.linalg.norm(M, 2)
    b = rng.standard_normal(n)
    B = rng.standard_normal((n, n_rhs))
    b0, B0 = b.copy(), B.copy()
    x, X = factor.solve(b), factor.solve(B)
    assert np.array_equal(b, b0) and np.array_equal(B, B0), "solve changed its right-hand side"
    assert x.shape == b.shape and X.shape == B.shape, "solve must keep b's shape"
    for name, got, rhs in (("solve(vector)", x, b), ("solve(block)", X, B)):
        err = np.linalg.norm(M @ got - rhs) / (np.linalg.norm(rhs) + scale * np.linalg.norm(got))
        assert err <= rtol, f"{name}: backward error {err:.3e} > {rtol:.1e}"
    cols = np.column_stack([factor.solve(B[:, j]) for j in range(n_rhs)])
    err = _relerr(X, cols)
    assert err <= rtol, f"solve(block) differs from its columns solved alone by {err:.3e}"
    sign, ref = np.linalg.slogdet(M)
    got = factor.logdet()
    assert sign > 0 and abs(got - ref) <= rtol * max(1.0, abs(ref)) * n, (
        f"logdet {got!r} != {ref!r}")
    mem = factor.memory_bytes()
    assert isinstance(mem, (int, np.integer)) and mem > 0, f"memory_bytes {mem!r}"
    op = factor.as_linear_operator()
    assert isinstance(op, LinearOperator) and op.shape == (n, n), "as_linear_operator"
    for name, got, want in (("operator @ vector", op @ b, x), ("operator @ block", op @ B, X)):
        err = _relerr(np.asarray(got), want)
        assert err <= rtol, f"{name}: relative error {err:.3e} against solve"
    if hasattr(factor, "inverse_diagonal"):
        want = np.diag(np.linalg.inv(M))
        err = _relerr(np.asarray(factor.inverse_diagonal()), want)
        assert err <= rtol * np.linalg.cond(M), f"inverse_diagonal: relative error {err:.3e}"


def check_backend(backend, X, Y, Cs, *, kernel=None, weights=None, atol=1e-8):
    """Assert that ``backend`` keeps the path protocol (:mod:`hsskern.solvers.paths.path`) on the
    training points X, labels (or targets) Y and the ascending grid ``Cs``.

    ``prepare(X, Y)``: a problem whose ``stats`` and ``timings`` are read-only mappings
    (where it has them) and which pickles. ``path(prepared, Y, Cs)`` (with ``weights``
    where given): one :class:`~hsskern.solvers.paths.path.PathSolution` per C, in order, all with
    the same fields, frozen (no attribute can be set, no array written), each holding a
    solution with one intercept, iteration count, flag and gap per label column.
    ``model(prepared, solutions)``: picklable, with ``decision(X)`` of shape (len(Cs), n,
    r), finite and equal after pickling; for a dual solution on ``kernel`` (default the
    backend's ``kernel``, where it has one) the decision values are the kernel expansion
    ``K(X, X) dual_coef + intercept`` within ``atol``. Returns the solutions; raises
    AssertionError naming the first failure.
    """
    import dataclasses
    import pickle
    from types import MappingProxyType

    from ..solvers.paths.path import PathSolution
    prepared = backend.prepare(X, Y)
    for name in ("stats", "timings"):
        if hasattr(prepared, name):
            assert isinstance(getattr(prepared, name), MappingProxyType), (
                f"prepared.{name} must be read-only")
    pickle.loads(pickle.dumps(prepared))
    args = () if weights is None else (weights,)
    solutions = tuple(backend.path(prepared, Y, Cs, *args))
    assert len(solutions) == len(Cs), f"{len(solutions)} solutions for {len(Cs)} C values"
    for s, C in zip(solutions, Cs):
        assert type(s) is PathSolution, f"{type(s).__name__} is not a PathSolution"
        assert s.C is None or np.isclose(s.C, C), f"solution of C={s.C} where {C} was asked"
        for a in ("intercept", "n_iter", "converged", "gap"):
            assert getattr(s, a).shape == (s.n_targets,), f"{a} must have one entry a column"
        arrays = [getattr(s, f.name) for f in dataclasses.fields(s)]
        assert not any(isinstance(a, np.ndarray) and a.flags.writeable for a in arrays), (
            "a solution's arrays must be read-only")
        try:
            s.C = 0.0
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError("a PathSolution must be frozen")
    assert len({s.n_targets for s in solutions}) == 1, "every C must solve every column"
    model = backend.model(prepared, solutions)
    scores = np.asarray(model.decision(X))
    assert scores.shape == (len(Cs), X.shape[0], solutions[0].n_targets), (
        f"decision shape {scores.shape}")
    assert np.all(np.isfinite(scores)), "decision values must be finite"
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).decision(X), scores,
                                  err_msg="the model must pickle")
    kernel = getattr(backend, "kernel", None) if kernel is None else kernel
    if kernel is not None and all(s.dual_coef is not None for s in solutions):
        from ..kernels import kernel_operator
        K = kernel_operator(X, kernel).to_dense()
        for i, s in enumerate(solutions):
            want = K @ s.dual_coef + s.intercept
            err = np.max(np.abs(scores[i] - want)) if want.size else 0.0
            assert err <= atol * max(1.0, np.max(np.abs(want))), (
                f"decision at C={s.C} differs from the kernel expansion by {err:.3e}")
    return solutions
