"""Proximal ADMM for the un-regularized hinge loss of FPC (Zeng, Wu, Lin, Zhou, Algorithm 1).

Problem (6): min_u (1/m) sum_i (1 - y_i (A u)_i)_+, split as min f(v) s.t. A u = v with
f(v) = (1/m) sum_i (1 - y_i v_i)_+. With the augmented Lagrangian
L_b(u, v, w) = f(v) + <w, A u - v> + (b/2) ||A u - v||^2 and a proximal term (a/2)||u - u^k||^2,
Lemma 1 gives closed-form steps:

    u+ = (b A^T A + a I)^{-1} (a u + A^T (b v - w))          (13)
    v+ = Hinge_{m b}(y, A u+ + w / b)                        (14), (15)
    w+ = w + b (A u+ - v+)                                   (12)

b A^T A + a I does not depend on the labels or the iterate: it is Cholesky-factored once
(never inverted) and serves every iteration and every one-vs-rest column. Theorem 2: the step
||p^{k+1} - p^k||_H^2 with H = diag(a I_n, b I_m, I_m / b) is non-increasing and o(1/k); it is
the stopping rule (paper default tol = 5e-4) and is kept in the result's history.
"""
import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.blas import dsyrk

from ..exceptions import NotPositiveDefiniteError


@dataclass
class FPCADMMResult:
    """Output of :func:`fpc_admm`.

    Attributes
    ----------
    u : ndarray of shape (n,) or (n, k)
        Coefficients on the centers (one column per label vector).
    iterations : int or ndarray of shape (k,)
        Iterations run (per column).
    history : ndarray of shape (iterations,) or list of them
        ||p^{k+1} - p^k||_H^2 after every iteration (per column).
    objective : float or ndarray of shape (k,)
        Hinge objective (1/m) sum_i (1 - y_i (A u)_i)_+ of problem (6) at ``u``.
    converged : bool or ndarray of shape (k,)
        Whether the step fell below ``tol`` before ``max_iter``.
    time : float
        Wall-clock seconds of the iterations (the factorization excluded when passed in).
    """

    u: np.ndarray
    iterations: object
    history: object
    objective: object
    converged: object
    time: float


def hinge_prox(a, b, gamma):
    """The closed-form operator (15): argmin_z (1 - a z)_+ + (gamma/2)(z - b)^2, elementwise.

    Parameters
    ----------
    a, b : ndarray (broadcastable)
        Labels (any real, 0 allowed) and centers of the proximal term.
    gamma : float > 0

    Returns
    -------
    ndarray
        hinge_gamma(a, b) with the four cases of the paper's Lemma 1.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ab = a * b
    low = ab <= 1.0 - a * a / gamma
    mid = ~low & (ab < 1.0)
    out = np.where(low, b + a / gamma, b)
    with np.errstate(divide="ignore"):
        out = np.where(mid & (a != 0), 1.0 / np.where(a != 0, a, 1.0), out)
    # a = 0: the hinge term is constant, z = b (the case ordering of (15))
    return np.where(a == 0, b, out)


def _gram(A):
    """A^T A (shape (n, n), symmetric) through BLAS syrk: half the flops of a general product."""
    # A.T of a C-ordered A is Fortran-ordered: syrk reads it in place, no copy
    G = dsyrk(1.0, A.T, trans=0, lower=1)
    iu = np.triu_indices_from(G, 1)
    G[iu] = G.T[iu]
    return G


def _hinge_prox_labels(Y, B, gamma):
    """(15) for labels a = +-1 (a^2 = 1, 1/a = a): three branches instead of four."""
    YB = Y * B
    return np.where(YB <= 1.0 - 1.0 / gamma, B + Y / gamma, np.where(YB < 1.0, Y, B))


def fpc_factor(A=None, alpha=1.0, beta=1.0, gram=None):
    """Cholesky factor of beta A^T A + alpha I, for :func:`fpc_admm`'s ``factor=``.

    Parameters
    ----------
    A : ndarray of shape (m, n), optional
        Feature matrix; not needed when ``gram`` (= A^T A, shape (n, n)) is given.
    alpha, beta : float > 0

    Returns
    -------
    tuple
        ``scipy.linalg.cho_factor`` output (lower-triangular factor, flag).
    """
    M = beta * (_gram(A) if gram is None else gram)
    M[np.diag_indices_from(M)] += alpha
    try:
        return cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
    except LinAlgError as exc:
        raise NotPositiveDefiniteError(
            "beta A^T A + alpha I is not numerically positive definite (features too large: "
            "scale the inputs or lower the degree, or raise alpha)",
            suggested_beta=None) from exc


def hinge_objective(Au, Y):
    """(1/m) sum_i (1 - y_i (Au)_i)_+ per column."""
    return np.maximum(0.0, 1.0 - Y * Au).mean(axis=0)


def fpc_admm(A, y, *, alpha=1.0, beta=1.0, tol=5e-4, max_iter=100, factor=None, u0=None,
             v0=None, w0=None, verbose=0):
    """Solve FPC's problem (6) by the proximal ADMM (13)-(15) of Algorithm 1.

    Parameters
    ----------
    A : ndarray of shape (m, n)
        Feature matrix A_ij = (1 + x_i . eta_j)^s (trusted, finite).
    y : ndarray of shape (m,) or (m, k)
        Labels in {-1, +1}; k columns are k independent problems (one-vs-rest) sharing
        the factor. Each column stops on its own, so its iterates are those of a lone run.
    alpha, beta : float > 0, default 1
        Proximal and augmented-Lagrangian parameters (paper defaults).
    tol : float, default 5e-4
        Stop a column when ||p^{k+1} - p^k||_H^2 < tol (the paper's rule and default).
    max_iter : int, default 100
    factor : tuple, optional
        Output of :func:`fpc_factor` for the same A, alpha, beta (reused across calls).
    u0, v0, w0 : ndarray, optional
        Starting point; default (0, y, 0) as in the paper.
    verbose : int
        Print the step every iteration when > 1, a summary when 1.

    Returns
    -------
    FPCADMMResult
    """
    t0 = time.perf_counter()
    y = np.asarray(y, dtype=np.float64)
    single = y.ndim == 1
    Y = y.reshape(y.shape[0], -1)
    m, n = A.shape
    k = Y.shape[1]
    if factor is None:
        factor = fpc_factor(A, alpha, beta)
    U = np.zeros((n, k)) if u0 is None else np.array(u0, dtype=np.float64).reshape(n, k)
    V = Y.copy() if v0 is None else np.array(v0, dtype=np.float64).reshape(m, k)
    W = np.zeros((m, k)) if w0 is None else np.array(w0, dtype=np.float64).reshape(m, k)
    AU = np.empty((m, k))
    gamma = m * beta
    history = [[] for _ in range(k)]
    iterations = np.zeros(k, dtype=int)
    converged = np.zeros(k, dtype=bool)
    # compact copies of the still-running columns: no fancy indexing in the common path
    active = np.arange(k)
    Ua, Va, Wa, Ya = U.copy(), V.copy(), W.copy(), Y.copy()
    AUa = A @ Ua
    for it in range(1, max_iter + 1):
        U_new = cho_solve(factor, alpha * Ua + A.T @ (beta * Va - Wa), check_finite=False)
        AU_new = A @ U_new
        V_new = _hinge_prox_labels(Ya, AU_new + Wa / beta, gamma)
        W_new = Wa + beta * (AU_new - V_new)
        dU, dV, dW = U_new - Ua, V_new - Va, W_new - Wa
        step = (alpha * np.einsum("ij,ij->j", dU, dU) + beta * np.einsum("ij,ij->j", dV, dV)
                + np.einsum("ij,ij->j", dW, dW) / beta)
        Ua, Va, Wa, AUa = U_new, V_new, W_new, AU_new
        for c, st in zip(active, step):
            history[c].append(float(st))
        iterations[active] = it
        done = step < tol
        if verbose > 1:
            print(f"[fpc_admm] iter {it}: max step {step.max():.3e}, "
                  f"{int((~done).sum())}/{active.size} columns still running")
        if done.any() or it == max_iter:
            fin = done if it < max_iter else np.ones_like(done)
            cols = active[fin]
            converged[active[done]] = True
            U[:, cols], V[:, cols], W[:, cols], AU[:, cols] = (Ua[:, fin], Va[:, fin],
                                                               Wa[:, fin], AUa[:, fin])
            keep = ~fin
            active = active[keep]
            if active.size == 0:
                break
            Ua, Va, Wa, AUa, Ya = Ua[:, keep], Va[:, keep], Wa[:, keep], AUa[:, keep], Ya[:, keep]
    if max_iter == 0:
        AU = A @ U
    objective = hinge_objective(AU, Y)
    elapsed = time.perf_counter() - t0
    if verbose:
        print(f"[fpc_admm] m={m} n={n} k={k}: iterations {iterations.tolist()}, "
              f"hinge objective {np.round(objective, 6).tolist()}, {elapsed:.3f}s")
    history = [np.array(h) for h in history]
    if single:
        return FPCADMMResult(U[:, 0], int(iterations[0]), history[0], float(objective[0]),
                             bool(converged[0]), elapsed)
    return FPCADMMResult(U, iterations, history, objective, converged, elapsed)
