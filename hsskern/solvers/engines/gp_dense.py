"""The GP's dense route: the exact likelihood on the dense kernel, with analytic gradients.

Below the size where a compression pays, the likelihood search of :mod:`hsskern.solvers.paths.gp`
runs on the dense n x n kernel instead: the distances are computed once, every evaluation is
one kernel from them (an exponential per entry), one Cholesky factor of K + beta I and its
inverse, which give the log marginal likelihood and its gradient in (log h, log beta) at once:

    d LML / d theta = sum_ij W_ij (dG / d theta)_ij,   W = A A^T / (2 s^2) - k/2 G^{-1},

with A = G^{-1} Y and s^2 the amplitude (its closed-form optimum for the profile, whose
gradient in the other parameters is this one by the envelope theorem). For log beta
dG = beta I; for log h dG = K o D / h^2 (Gaussian, D the squared distances) or K o R / h
(Laplacian, R the distances). scikit-learn's ``GaussianProcessRegressor`` maximises the same
likelihood with L-BFGS-B in three parameters; here the amplitude has its closed form, so the
search is two-dimensional, and no n x n x 3 gradient tensor is formed.
"""
import math
import time

import numpy as np
from scipy.linalg import lapack
from scipy.linalg.blas import dger
from scipy.optimize import minimize
from scipy.spatial.distance import cdist

__all__ = ["DenseLikelihood", "dense_memory", "dense_search"]

_LOG_2PI = math.log(2.0 * math.pi)


def dense_memory(n, d, k=1):
    """Bytes the dense route holds at once: the distances, the kernel, the factor (then the
    inverse) and the symmetric inverse (4 n x n arrays), the points and the targets."""
    return 8 * (4 * n * n + n * d + 4 * n * k)


class DenseLikelihood:
    """The exact log marginal likelihood and its gradient in (log h, log beta) on the dense
    kernel of X, the distances computed once.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, k)
    kernel : {"gaussian", "laplacian"}
    amplitude : float or None
        A fixed s^2; None: its closed-form optimum at every point (the profile).
    """

    def __init__(self, X, Y, kernel, amplitude=None):
        if kernel not in ("gaussian", "laplacian"):
            raise ValueError(f"the dense route takes the gaussian or laplacian kernel, got "
                             f"{kernel!r}")
        self.D = cdist(X, X, "sqeuclidean")
        if kernel == "laplacian":
            np.sqrt(self.D, out=self.D)
        self.Y = np.ascontiguousarray(Y, dtype=np.float64)
        self.kernel, self.amplitude = kernel, amplitude
        self.n_evals = 0
        self.history = []  # (h, beta, lml) per evaluation

    def kernel_matrix(self, h):
        if self.kernel == "gaussian":
            return np.exp(self.D * (-0.5 / (h * h)))
        return np.exp(self.D * (-1.0 / h))

    def __call__(self, h, beta, gradient=True):
        """(lml, amplitude, d lml / d (log h, log beta)); lml = -inf (gradient 0) where
        K + beta I is not numerically positive definite, as scikit-learn."""
        n, k = self.Y.shape
        self.n_evals += 1
        K = self.kernel_matrix(h)
        G = K.copy()
        G.flat[::n + 1] += beta
        L, info = lapack.dpotrf(G, lower=1, clean=1, overwrite_a=1)
        if info != 0:
            self.history.append((h, beta, -math.inf))
            return -math.inf, math.nan, np.zeros(2)
        A, _ = lapack.dpotrs(L, self.Y, lower=1)
        q = float(np.einsum("ij,ij->", self.Y, A))
        logdet = 2.0 * float(np.sum(np.log(np.diagonal(L))))
        if self.amplitude is None:
            s2 = max(q / (n * k), np.finfo(np.float64).tiny)
            lml = -0.5 * n * k * (1.0 + _LOG_2PI + math.log(s2)) - 0.5 * k * logdet
            if q / (n * k) < s2:  # all-zero targets: the quadratic term is 0
                lml += 0.5 * n * k
        else:
            s2 = float(self.amplitude)
            lml = -0.5 * q / s2 - 0.5 * k * (n * math.log(s2) + logdet) - 0.5 * n * k * _LOG_2PI
        self.history.append((h, beta, lml))
        if not gradient:
            return lml, s2, None
        Li, info = lapack.dpotri(L, lower=1, overwrite_c=1)  # the lower triangle of G^-1
        del L, G
        W = Li + Li.T  # the upper triangle of Li is zero (clean=1): G^-1 with twice its diagonal
        del Li
        W.flat[::n + 1] *= 0.5
        W *= -0.5 * k
        for j in range(k):
            W = dger(0.5 / s2, A[:, j], A[:, j], a=W, overwrite_a=1)
        g_beta = beta * float(np.trace(W))
        W *= K
        del K
        scale = 1.0 / (h * h) if self.kernel == "gaussian" else 1.0 / h
        g_h = scale * float(np.dot(W.ravel(), self.D.ravel()))
        return lml, s2, np.array([g_h, g_beta])


def dense_search(lik, starts, h_bounds, noise_bounds, *, xatol=1e-2, log=None):
    """Maximise the dense likelihood over (log h, log beta) by L-BFGS-B with its gradient,
    from each start (h, beta); a parameter whose bounds are equal is held there.

    Returns (h, beta, lml, at_bound_h, at_bound_beta, seconds).
    """
    lo = np.log([h_bounds[0], noise_bounds[0]])
    hi = np.log([h_bounds[1], noise_bounds[1]])
    free = hi > lo
    best = None
    t0 = time.perf_counter()
    for h0, b0 in starts:
        x0 = np.clip(np.log([h0, b0]), lo, hi)

        def objective(z, x0=x0):
            x = x0.copy()
            x[free] = z
            lml, s2, grad = lik(*np.exp(x))
            if log is not None:
                log(2, f"h={math.exp(x[0]):.4g}, beta={math.exp(x[1]):.4g}: log marginal "
                       f"likelihood {lml:.8g}, amplitude {s2:.4g}")
            if not np.isfinite(lml):
                return math.inf, np.zeros(int(free.sum()))
            return -lml, -grad[free]

        if free.any():
            res = minimize(objective, x0[free], jac=True, method="L-BFGS-B",
                           bounds=list(zip(lo[free], hi[free])))
            x = x0.copy()
            x[free] = res.x
            val = -float(res.fun)
        else:
            x = x0
            val = lik(*np.exp(x), gradient=False)[0]
        if best is None or val > best[1]:
            best = (x, val)
    x, val = best
    if not np.isfinite(val):
        return math.exp(x[0]), math.exp(x[1]), val, None, None, time.perf_counter() - t0
    at = [None, None]
    for i in range(2):
        if free[i]:
            at[i] = ("lower" if x[i] - lo[i] <= xatol else
                     "upper" if hi[i] - x[i] <= xatol else None)
    return math.exp(x[0]), math.exp(x[1]), val, at[0], at[1], time.perf_counter() - t0
