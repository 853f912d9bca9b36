"""Semismooth Newton method for the L2-loss (squared hinge) linear SVM (LASN Algorithm 1).

Problem, with x_i augmented by a constant feature s (``intercept_scaling``)::

    min_{w, w_b}  f(v) = 1/2 (|w|^2 + w_b^2) + C sum_i max(0, 1 - y_i (x_i . w + s w_b))^2

and intercept b = s w_b. The bias is therefore *regularized*, by 1/2 (b / s)^2: this is exactly
LIBLINEAR's convention (``LinearSVC(fit_intercept=True, intercept_scaling=s)``), so both
solvers minimise the same function and their objectives can be compared directly. A large s
makes the bias penalty negligible (at the price of a worse conditioned Hessian).

f is convex and C^1 with a piecewise-linear gradient; with the active set
I = {i : 1 - y_i x_i . v > 0}, an element of its generalized Hessian is
V = I + 2C sum_{i in I} x_i x_i^T. Each Newton step solves V d = -grad f inexactly by
(Jacobi-preconditioned) CG to the relative residual mu_j = min(eta0, eta1 |grad f|), then
backtracks (Armijo) along d. With the default ``newton_solver="cg"`` V is only ever applied:
products with the |I| active rows of F, never a p x p matrix. ``newton_solver="cholesky"``
(beyond the paper) instead forms V with one BLAS-3 product and factors it, which is cheaper for
dense features with p up to a few thousand. The stopping test is |grad f(v)| <= delta with delta = tol |grad f(0)|,
and the forcing term uses the same relative scale: mu_j = min(eta0, eta1 |grad f| / |grad f(0)|).

Weights (``sample_weight``, LIBLINEAR's per-instance C): point i's loss is multiplied by
w_i >= 0, i.e. C w_i max(0, 1 - y_i x_i . v)^2, so the gradient is v - 2C X^T (w y r+) and
V = I + 2C X_I^T W_I X_I. A point of weight 0 has no loss and never enters V; integer weights
give exactly the problem of repeated rows. ``sample_weight=None`` is the unweighted solver.

The feature matrix may be a dense ndarray or a scipy.sparse matrix (converted to CSR).
"""
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from sklearn.exceptions import ConvergenceWarning

from ...options import NEWTON_SOLVERS
from ...utils._memory import available_memory, check_memory
from ...utils.validation import check_positive
from ...utils.validation import check_weights

LINE_SEARCHES = ("armijo", "exact")


@dataclass(frozen=True)
class NewtonResult:
    """Outcome of :func:`l2svm_newton` for one C.

    Attributes
    ----------
    w : ndarray of shape (n_features,)
        Weights.
    b : float
        Intercept (``intercept_scaling * w_b``).
    C : float
    objective : float
        f at the returned point (bias penalty included).
    grad_norm : float
        |grad f| at the returned point.
    tol_abs : float
        The absolute threshold delta the gradient norm was tested against.
    n_iter : int
        Newton steps taken.
    n_cg : int
        Total CG iterations (each costs two products with the active rows).
    n_active : int
        Final number of margin violators |I| (the support vectors of the L2 SVM).
    converged : bool
    grad_norm_history : ndarray of shape (n_iter + 1,)
        |grad f| at the start and after every Newton step.
    cg_history : ndarray of shape (n_iter,)
        CG iterations per Newton step.
    step_history : ndarray of shape (n_iter,)
        Armijo step length per Newton step.
    time : float
        Wall-clock seconds.
    coef : ndarray of shape (n_features + 1,)
        The augmented vector v = [w, b / s] the solver iterates on (a warm start for ``w0``).
    """

    w: np.ndarray
    b: float
    C: float
    objective: float
    grad_norm: float
    tol_abs: float
    n_iter: int
    n_cg: int
    n_active: int
    converged: bool
    grad_norm_history: np.ndarray
    cg_history: np.ndarray
    step_history: np.ndarray
    time: float
    coef: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class NewtonPathResult:
    """Outcome of :func:`l2svm_newton_path`: one :class:`NewtonResult` per C, warm started.

    Attributes
    ----------
    Cs : ndarray of shape (n_Cs,)
        The C values in the order they were solved (increasing).
    results : list of NewtonResult
    coefs : ndarray of shape (n_Cs, n_features)
    intercepts : ndarray of shape (n_Cs,)
    time : float
        Wall-clock seconds for the whole path.
    """

    Cs: np.ndarray
    results: list = field(repr=False)
    coefs: np.ndarray = field(repr=False)
    intercepts: np.ndarray = field(repr=False)
    time: float = 0.0

    @property
    def n_iter(self):
        """Newton steps per C, shape (n_Cs,)."""
        return np.array([r.n_iter for r in self.results])

    @property
    def n_cg(self):
        """CG iterations per C, shape (n_Cs,)."""
        return np.array([r.n_cg for r in self.results])


class _Design:
    """X = [F, s 1]: products with the augmented design without copying F; ``w`` the
    per-point loss weights (None: all 1)."""

    def __init__(self, F, s, w=None):
        self.F = F
        self.s = s
        self.w = w
        self.sparse = sp.issparse(F)
        self.n, self.p = F.shape

    def weighted(self, u):
        """w * u (u itself without weights)."""
        return u if self.w is None else self.w * u

    def matvec(self, v):
        return self.F @ v[:-1] + self.s * v[-1]

    def rmatvec(self, u):
        out = np.empty(self.p + 1)
        out[:-1] = self.F.T @ u
        out[-1] = self.s * u.sum()
        return out

    def active(self, mask):
        """The active rows X_I, restricted products with them and their Gram matrix."""
        return _ActiveRows(self, mask)


class _ActiveRows:
    """X_I for one Newton step. F_I is copied once (CG reuses it tens of times) unless the copy
    would not fit in half the available memory; then products run over all rows, masked."""

    def __init__(self, X, mask):
        idx = np.flatnonzero(mask)
        self.count, self.s, self.sparse, self.p = idx.size, X.s, X.sparse, X.p
        # the active rows' weights, or every row's when the products run masked over all rows
        self.wI = None if X.w is None else X.w[idx]
        self.w = X.w
        avail = available_memory()
        copy = X.sparse or avail is None or 8 * idx.size * X.p <= 0.5 * avail
        if copy:
            self.FI = X.F[idx]
            self.F, self.mask = None, None
        else:
            self.FI, self.F, self.mask = None, X.F, mask

    def hv(self, d):
        """X_I^T (X_I d)."""
        s = self.s
        if self.FI is not None:
            t = self.FI @ d[:-1] + s * d[-1]
            FT = self.FI.T
            if self.wI is not None:
                t *= self.wI
        else:
            t = self.F @ d[:-1] + s * d[-1]
            t[~self.mask] = 0.0
            FT = self.F.T
            if self.w is not None:
                t *= self.w
        out = np.empty_like(d)
        out[:-1] = FT @ t
        out[-1] = s * t.sum()
        return out

    def diag(self):
        """diag(X_I^T W_I X_I), the Jacobi preconditioner."""
        out = np.empty(self.p + 1)
        if self.FI is not None:
            wI = np.ones(self.count) if self.wI is None else self.wI
            out[:-1] = (self.FI.multiply(self.FI).T @ wI if self.sparse
                        else np.einsum("ij,ij,i->j", self.FI, self.FI, wI))
            total = wI.sum()
        else:
            out[:-1] = 0.0
            total = 0.0
            for i0 in range(0, self.F.shape[0], 4096):  # one pass, no n x p temporary
                m = self.mask[i0:i0 + 4096]
                B = self.F[i0:i0 + 4096][m]
                wB = np.ones(B.shape[0]) if self.w is None else self.w[i0:i0 + 4096][m]
                out[:-1] += np.einsum("ij,ij,i->j", B, B, wB)
                total += wB.sum()
        out[-1] = self.s * self.s * total
        return out

    def gram(self):
        """X_I^T W_I X_I as a dense (p + 1, p + 1) array (for the direct Newton solve)."""
        if self.FI is not None:
            return _gram(self.FI, self.s, self.count, self.wI)
        return _gram(self.F[self.mask], self.s, self.count,
                     None if self.w is None else self.w[self.mask])


def _gram(FI, s, count, wI=None):
    """[F_I, s 1]^T diag(wI) [F_I, s 1] as a dense (p + 1, p + 1) array (wI None: ones)."""
    p = FI.shape[1]
    G = np.empty((p + 1, p + 1))
    if wI is not None:  # rows scaled by sqrt(w): one weighted product, same BLAS-3 call
        r = np.sqrt(wI)
        FI = FI.multiply(r[:, None]).tocsr() if sp.issparse(FI) else FI * r[:, None]
    if sp.issparse(FI):
        G[:-1, :-1] = (FI.T @ FI).toarray()
        colsum = np.asarray(FI.sum(axis=0)).ravel() if wI is None else FI.T @ r
    else:
        G[:-1, :-1] = FI.T @ FI
        colsum = FI.sum(axis=0) if wI is None else FI.T @ r
    G[:-1, -1] = G[-1, :-1] = s * colsum
    G[-1, -1] = s * s * (count if wI is None else wI.sum())
    return G


class _GramCache:
    """X_I^T X_I kept up to date as the active set I changes (``newton_solver="cholesky"``).

    The Gram matrix of the active rows does not depend on C, and between consecutive Newton
    steps -- and between neighbouring C on a warm-started path -- only a few rows enter or leave
    I. Updating G += X_in^T X_in - X_out^T X_out costs O(|changed| p^2) instead of the
    O(|I| p^2) of a fresh product, which dominates a Newton step once p^3 / 3 is small next to
    |I| p^2. A fresh product is taken when more rows changed than remain active (an update would
    then be dearer) and after ``refresh`` updates, so rounding from the subtractions (a
    relative eps per update) cannot accumulate.
    """

    def __init__(self, X, refresh=50):
        self.X = X
        self.refresh = int(refresh)
        self.mask = None
        self.G = None
        self.n_updates = 0
        self.n_fresh = 0
        self.rows_touched = 0

    def gram(self, mask):
        X = self.X
        if self.mask is not None and self.n_updates < self.refresh:
            enter = np.flatnonzero(mask & ~self.mask)
            leave = np.flatnonzero(self.mask & ~mask)
            if enter.size + leave.size < np.count_nonzero(mask):
                G = self.G
                if enter.size:
                    G += _gram(X.F[enter], X.s, enter.size, _rows(X.w, enter))
                if leave.size:
                    G -= _gram(X.F[leave], X.s, leave.size, _rows(X.w, leave))
                self.mask = mask.copy()
                self.n_updates += 1
                self.rows_touched += enter.size + leave.size
                return G
        idx = np.flatnonzero(mask)
        self.G = _gram(X.F[idx], X.s, idx.size, _rows(X.w, idx))
        self.mask = mask.copy()
        self.n_updates = 0
        self.n_fresh += 1
        self.rows_touched += idx.size
        return self.G


def _rows(w, idx):
    return None if w is None else w[idx]


def _objective(vv, r, C, w=None):
    pos = r > 0
    rp = r[pos]
    return 0.5 * vv + C * (rp.dot(rp) if w is None else (w[pos] * rp).dot(rp))


def _decrease(r, r_new, alpha, vd, dd, C, w=None):
    """f(v + alpha d) - f(v), summed term by term.

    Forming it as a difference of two objective values loses every digit once the decrease
    falls below eps * f, which stalls Armijo near the solution; the per-sample differences
    (a+^2 - b+^2) = (a+ - b+)(a+ + b+) keep their relative accuracy.
    """
    a = np.maximum(r_new, 0.0)
    b = np.maximum(r, 0.0)
    diff = a - b if w is None else w * (a - b)
    return alpha * vd + 0.5 * alpha * alpha * dd + C * np.dot(diff, a + b)


def _exact_step(r, c, vd, dd, gd, C, max_iter=60, w=None):
    """Minimiser of the convex piecewise quadratic phi(a) = f(v + a d), a > 0.

    phi'(a) = vd + a dd - 2C sum_i (r_i - a c_i)+ c_i is piecewise linear and increasing, with
    phi'(0) = g.d < 0. Newton steps on phi' (exact on each linear piece), safeguarded by
    bisection inside a bracket [lo, hi] with phi'(lo) < 0 < phi'(hi).
    """
    def dphi(a):
        rn = r - a * c
        act = rn > 0
        ca = c[act]
        wca = ca if w is None else w[act] * ca
        return vd + a * dd - 2.0 * C * rn[act].dot(wca), dd + 2.0 * C * ca.dot(wca)

    lo, hi = 0.0, 1.0
    d1, d2 = dphi(hi)
    while d1 < 0 and hi < 1e6:  # the Newton step usually lands near 1; widen if it did not
        lo, hi = hi, 2.0 * hi
        d1, d2 = dphi(hi)
    if d1 < 0:
        return hi
    a = hi
    for _ in range(max_iter):
        if d1 == 0:
            return a
        if d1 > 0:
            hi = a
        else:
            lo = a
        a_new = a - d1 / d2
        if not lo < a_new < hi:
            a_new = 0.5 * (lo + hi)
        if abs(a_new - a) <= 1e-12 * a_new:
            return a_new
        a = a_new
        d1, d2 = dphi(a)
    return a if d1 <= 0 else lo if lo > 0 else a


def _pcg(hv, g, diag_inv, rtol_abs, maxiter):
    """Solve H d = -g by Jacobi-preconditioned CG until |H d + g| <= rtol_abs."""
    d = np.zeros_like(g)
    r = -g
    z = diag_inv * r
    q = z.copy()
    rz = r.dot(z)
    it = 0
    while it < maxiter:
        Hq = hv(q)
        qHq = q.dot(Hq)
        if qHq <= 0:  # cannot happen for H >= I in exact arithmetic; guard against rounding
            break
        alpha = rz / qHq
        d += alpha * q
        r -= alpha * Hq
        it += 1
        if np.linalg.norm(r) <= rtol_abs:
            break
        z = diag_inv * r
        rz_new = r.dot(z)
        q *= rz_new / rz
        q += z
        rz = rz_new
    return d, it


# more than 10 parameters: the semismooth Newton method's constants (eta0, eta1, sigma, rho, the CG
# cap, the line search) by the paper's names, and the warm state of a C path
def _newton(X, y, C, v, g_ref, tol, *, max_iter, eta0, eta1, sigma, rho, cg_max_iter, line_search,
            newton_solver, verbose, gram_cache=None, start=None, warm=False):
    """Newton iterations from v. ``start`` = (r, q) with r = 1 - y (X v) and q = X^T (y r+),
    as returned by a previous call ending at the same v: a warm start along a C path then
    skips the two passes over X that would recompute them (grad f = v - 2C q for any C).
    ``warm=True`` (path): the stopping scale is min(|grad f(0)|, |grad f(v)|), so a warm start
    must still cut its own gradient by ``tol``.
    Returns (NewtonResult, (r, q) at the returned point)."""
    t0 = time.perf_counter()
    w = X.w
    if start is None:
        r = 1.0 - y * X.matvec(v)  # 1 - margins
        mask = _active(r, w)
        q = X.rmatvec(X.weighted(np.where(mask, y * r, 0.0)))
    else:
        r, q = start
        mask = _active(r, w)
    g = v - 2.0 * C * q
    vv = v.dot(v)
    fval = _objective(vv, r, C, w)
    gnorm = np.linalg.norm(g)
    gnorms, cgs, steps = [gnorm], [], []
    if warm:
        # Relative to |grad f(0)| alone, a warm start at large C already passes the test
        # (|grad f(0)| = 2C |X^T y| grows with C while the warm start's gradient does not), and
        # the path would hand back the previous C's model unchanged, far from the optimum at
        # large C. With the smaller of the two scales every point of the path meets a test at
        # least as strict as a cold solve's.
        g_ref = min(g_ref, gnorm)
    delta = tol * g_ref
    converged = gnorm <= delta
    it = 0
    if newton_solver == "cholesky" and gram_cache is None:
        gram_cache = _GramCache(X)
    while not converged and it < max_iter:
        mu = min(eta0, eta1 * gnorm / g_ref)
        if newton_solver == "cholesky":
            H = gram_cache.gram(mask) * (2.0 * C)  # a copy: the cache keeps X_I^T X_I
            H[np.diag_indices_from(H)] += 1.0
            d = -cho_solve(cho_factor(H, lower=True, overwrite_a=True, check_finite=False), g,
                           check_finite=False)
            n_cg = 0
        else:
            act = X.active(mask)

            def hv(d, hv_I=act.hv):
                return d + 2.0 * C * hv_I(d)
            diag_inv = 1.0 / (1.0 + 2.0 * C * act.diag())
            d, n_cg = _pcg(hv, g, diag_inv, mu * gnorm, cg_max_iter)
            del act, hv  # hv holds act too: the next step must not find two copies of F_I
        cgs.append(n_cg)

        # 1-D restriction phi(a) = f(v + a d): O(n) per trial once X d is known
        zd = X.matvec(d)
        yzd = y * zd
        gd = g.dot(d)
        vd, dd = v.dot(d), d.dot(d)
        alpha = 1.0
        if line_search == "exact":
            alpha = _exact_step(r, yzd, vd, dd, gd, C, w=w)
        while True:
            r_new = r - alpha * yzd
            df = _decrease(r, r_new, alpha, vd, dd, C, w)
            if df <= sigma * alpha * gd or alpha < 1e-12:
                break
            alpha *= rho
        r = r_new
        fval += df
        steps.append(alpha)
        v = v + alpha * d
        vv = v.dot(v)
        mask = _active(r, w)
        q = X.rmatvec(X.weighted(np.where(mask, y * r, 0.0)))
        g = v - 2.0 * C * q
        gnorm = np.linalg.norm(g)
        gnorms.append(gnorm)
        it += 1
        if verbose:
            print(f"[ssn] C={C:.4g} it={it:3d} f={fval:.10g} |g|={gnorm:.3e} "
                  f"|I|={int(mask.sum())} cg={n_cg} step={alpha:g}")
        converged = gnorm <= delta
        if alpha < 1e-12:
            break  # no progress possible at this precision
    if not converged:
        warnings.warn(f"semismooth Newton did not reach |grad f| <= {delta:.3e} in {it} "
                      f"steps (|grad f| = {gnorm:.3e}); increase max_iter or tol",
                      ConvergenceWarning, stacklevel=3)
    # r was updated incrementally (r - alpha y X d, exact up to a few ulps per step), so the
    # objective is evaluated from it rather than from another pass over X
    fval = _objective(v.dot(v), r, C, w)
    res = NewtonResult(w=v[:-1].copy(), b=float(X.s * v[-1]), C=float(C), objective=float(fval),
                       grad_norm=float(gnorm), tol_abs=float(delta), n_iter=it,
                       n_cg=int(sum(cgs)), n_active=int(mask.sum()), converged=bool(converged),
                       grad_norm_history=np.array(gnorms), cg_history=np.array(cgs, dtype=int),
                       step_history=np.array(steps), time=time.perf_counter() - t0,
                       coef=v)
    return res, (r, q)


def _active(r, w):
    """The margin violators that carry loss (a point of weight 0 never does)."""
    return r > 0 if w is None else (r > 0) & (w > 0)


def _check_problem(F, y, intercept_scaling, sample_weight=None):
    if sp.issparse(F):
        F = sp.csr_matrix(F, dtype=np.float64)
        if not np.isfinite(F.data).all():
            raise ValueError("F contains NaN or infinity")
    else:
        F = np.asarray(F, dtype=np.float64)
        if F.ndim != 2:
            raise ValueError(f"F must be 2-D, got shape {F.shape}")
        if not np.isfinite(F).all():
            raise ValueError("F contains NaN or infinity")
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.shape[0] != F.shape[0]:
        raise ValueError(f"y has {y.shape[0]} entries but F has {F.shape[0]} rows")
    if not np.all(np.abs(y) == 1):
        raise ValueError("y must hold labels in {-1, +1}")
    s = check_positive(intercept_scaling, "intercept_scaling", minimum=0.0)
    w = check_weights(sample_weight, y.shape[0], "sample_weight")
    if w is not None and np.all(w == 1.0):
        w = None  # the unweighted problem, solved as such
    return F, y, s, w


def _check_line_search(line_search):
    if line_search not in LINE_SEARCHES:
        raise ValueError(f"line_search must be one of {LINE_SEARCHES}, got {line_search!r}")
    return line_search


def auto_cholesky(p, max_features=4096):
    """Whether ``newton_solver="auto"`` factors I + 2C X_I^T X_I directly at p features (p may
    be an array): while the (p + 1)^2 matrix has at most ``max_features``^2 entries (128 MiB),
    else conjugate gradients."""
    return np.asarray(p) + 1 <= max_features


def _check_newton_solver(newton_solver, p):
    if newton_solver not in NEWTON_SOLVERS:
        raise ValueError(f"newton_solver must be one of {NEWTON_SOLVERS}, got {newton_solver!r}")
    if newton_solver == "auto":
        return "cholesky" if auto_cholesky(p) else "cg"
    if newton_solver == "cholesky":
        check_memory(8 * (p + 1) ** 2, f"the ({p + 1} x {p + 1}) Newton matrix",
                     hint='use newton_solver="cg"')
    return newton_solver


def _defaults(p, cg_max_iter):
    return max(100, p + 2) if cg_max_iter is None else int(cg_max_iter)


def l2svm_objective(F, y, C, w, b=0.0, intercept_scaling=1.0, sample_weight=None):
    """The primal objective minimised by :func:`l2svm_newton` (and LIBLINEAR's L2R_L2LOSS_SVC).

    ``1/2 (|w|^2 + (b / s)^2) + C sum_i sw_i max(0, 1 - y_i (F_i . w + b))^2``,
    s = intercept_scaling (s = 0: no intercept, b must be 0), sw = sample_weight (default 1).
    """
    z = F @ w + b
    r = np.maximum(1.0 - np.asarray(y, dtype=np.float64) * z, 0.0)
    bias = 0.0 if intercept_scaling == 0 else (b / intercept_scaling) ** 2
    loss = r.dot(r) if sample_weight is None else (np.asarray(sample_weight) * r).dot(r)
    return 0.5 * (w.dot(w) + bias) + C * loss


# more than 10 parameters: the paper's constants (eta0, eta1, sigma, rho) by their names beside
# LinearSVC's (tol, max_iter, intercept_scaling, sample_weight)
def l2svm_newton(F, y, C=1.0, *, tol=1e-6, max_iter=100, intercept_scaling=1.0, w0=None,
                 eta0=0.1, eta1=1.0, sigma=1e-4, rho=0.5, line_search="armijo", newton_solver="cg",
                 cg_max_iter=None, sample_weight=None, verbose=0):
    """Train the L2-loss linear SVM by the globalized semismooth Newton method.

    Parameters
    ----------
    F : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Features (e.g. Nystrom virtual samples or sparse Cholesky rows).
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    C : float, default 1.0
        Weight of the squared hinge loss.
    tol : float, default 1e-6
        Stop when |grad f(v)| <= tol * |grad f(0)| (the paper's delta, made scale free).
    max_iter : int, default 100
        Maximum Newton steps.
    intercept_scaling : float, default 1.0
        Value s of the constant feature; the intercept b = s w_b is penalised by (b/s)^2 / 2
        as in LIBLINEAR. 0 fits no intercept.
    w0 : ndarray of shape (n_features + 1,), optional
        Warm start for the augmented vector [w, b / s] (e.g. ``result.coef`` at a nearby C).
    eta0, eta1 : float
        CG forcing term mu_j = min(eta0, eta1 |grad f(v_j)| / |grad f(0)|): the paper's
        min(eta0, eta1 |grad f|) applied to f / |grad f(0)|, which has the same minimiser and
        Newton directions but does not depend on the scale of C and of the features (with the
        unscaled gradient, mu stays at eta0 for as long as |grad f| > eta0 / eta1, which can be
        the whole run when C |x|^2 is large).
    sigma, rho : float
        Armijo constant and backtracking factor.
    line_search : {"armijo", "exact"}, default "armijo"
        ``"armijo"``: backtrack from the unit step (LASN Algorithm 1, step 4). ``"exact"``: first
        minimise f along d (the restriction is a convex piecewise quadratic; a few O(n)
        safeguarded Newton steps on its derivative), then apply the Armijo test to that step.
        Both cost O(n) per trial after one product X d.
    newton_solver : {"cg", "cholesky", "auto"}, default "cg"
        How each Newton system V d = -grad f is solved. ``"cg"``: matrix-free Jacobi-
        preconditioned CG with the forcing term above (LASN). ``"cholesky"``: form
        I + 2C X_I^T X_I (one BLAS-3 product over the active rows, O(|I| p^2)) and factor it
        (O(p^3)); exact steps, no CG. For dense features with p up to a few thousand the
        BLAS-3 product is cheaper than the tens of memory-bound passes CG makes over X_I.
        ``"auto"``: ``"cholesky"`` when p + 1 <= 4096, else ``"cg"``.
    cg_max_iter : int, optional
        Cap on CG iterations per Newton step (default max(100, n_features + 2)).
    sample_weight : array-like of shape (n_samples,), optional
        Per-point loss weights, finite and >= 0 (point i's loss weight is C w_i; see the
        module notes). None: all 1.
    verbose : int

    Returns
    -------
    NewtonResult
    """
    F, y, s, sw = _check_problem(F, y, intercept_scaling, sample_weight)
    C = check_positive(C, "C")
    X = _Design(F, s, sw)
    g0 = 2.0 * C * np.linalg.norm(X.rmatvec(X.weighted(y)))
    v = np.zeros(X.p + 1) if w0 is None else np.array(w0, dtype=np.float64).ravel()
    if v.shape[0] != X.p + 1:
        raise ValueError(f"w0 must have n_features + 1 = {X.p + 1} entries, got {v.shape[0]}")
    if s == 0:
        v[-1] = 0.0
    res, _ = _newton(X, y, C, v, g0, tol, max_iter=max_iter, eta0=eta0, eta1=eta1, sigma=sigma,
                     rho=rho, cg_max_iter=_defaults(X.p, cg_max_iter),
                     line_search=_check_line_search(line_search),
                     newton_solver=_check_newton_solver(newton_solver, X.p), verbose=verbose)
    return res


# more than 10 parameters: as l2svm_newton's, over a grid of C
def l2svm_newton_path(F, y, Cs, *, tol=1e-6, max_iter=100, intercept_scaling=1.0, eta0=0.1,
                      eta1=1.0, sigma=1e-4, rho=0.5, line_search="armijo", newton_solver="cg",
                      cg_max_iter=None, sample_weight=None, verbose=0):
    """Semismooth Newton over a grid of C, increasing, each solve warm started from the last.

    Small C is the easy end (well-conditioned V); the solution moves smoothly with C, so each
    warm start needs only a few Newton steps. Every C after the first stops on
    |grad f| <= tol * min(|grad f(0)|, |grad f(v_start)|), a test at least as strict as a cold
    solve's (with |grad f(0)| = 2C |X^T y| alone, warm starts at large C passed untouched). The
    margins and X^T (y r+) are handed from one C to the next (a C-independent part of the
    gradient), and with ``newton_solver="cholesky"`` so is X_I^T X_I, updated over the rows
    entering or leaving the active set instead of recomputed.

    Parameters
    ----------
    F : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    Cs : array-like of shape (n_Cs,)
        Positive C values (solved in increasing order; results are returned in that order).
    tol, max_iter, intercept_scaling, eta0, eta1, sigma, rho, cg_max_iter, sample_weight,
    verbose
        As in :func:`l2svm_newton` (the same weights at every C).

    Returns
    -------
    NewtonPathResult
    """
    t0 = time.perf_counter()
    F, y, s, sw = _check_problem(F, y, intercept_scaling, sample_weight)
    Cs = np.sort(np.array([check_positive(c, "C") for c in np.atleast_1d(Cs)], dtype=float))
    if Cs.size == 0:
        raise ValueError("Cs must hold at least one value")
    line_search = _check_line_search(line_search)
    X = _Design(F, s, sw)
    newton_solver = _check_newton_solver(newton_solver, X.p)
    Xty = np.linalg.norm(X.rmatvec(X.weighted(y)))
    v = np.zeros(X.p + 1)
    results = []
    # X_I^T X_I does not depend on C: one cache serves the whole path (cholesky solver)
    cache = _GramCache(X) if newton_solver == "cholesky" else None
    state = None  # margins and X^T (y r+) at v, handed on so a warm start costs no pass over X
    for C in Cs:
        res, state = _newton(X, y, C, v, 2.0 * C * Xty, tol, max_iter=max_iter, eta0=eta0,
                             eta1=eta1, sigma=sigma, rho=rho,
                             cg_max_iter=_defaults(X.p, cg_max_iter), line_search=line_search,
                             newton_solver=newton_solver, verbose=verbose, gram_cache=cache,
                             start=state, warm=bool(results))
        v = res.coef
        results.append(res)
    return NewtonPathResult(Cs=Cs, results=results,
                            coefs=np.array([r.w for r in results]),
                            intercepts=np.array([r.b for r in results]),
                            time=time.perf_counter() - t0)
