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

Scale of a and b
----------------
The loss in (6) is a *mean*, so its prox (15) has parameter m b: with the paper's a = b = 1 the
augmented term (b/2)||Au - v||^2 outweighs the loss m-fold, the multiplier w moves by O(1/m) a
step, the H-norm step drops below 5e-4 after 2-3 iterations, and the result is little more than
the ridge least-squares fit u = (A^T A + I)^{-1} A^T y of the start. a = b = 1/m is the same
algorithm with a = b = 1 applied to the *summed* hinge loss (w rescaled by m), which balances the
two terms; the H-norm is then the per-sample mean step, so tol keeps its meaning for any m. It
takes more iterations (tens at tol 5e-4) but reaches the hinge minimizer's accuracy, where
a = b = 1 stops at the ridge fit. The estimators' default ``alpha = beta = "auto"`` is this 1/m
(m = training rows of each problem).

"Reaches" is relative to the paper's rule: tol 5e-4 still stops well short of the minimizer on
nearly separable data, where the ADMM has a slow tail on a degenerate LP (the model is not at
fault; a smaller tol buys accuracy at a steep price in iterations).

A fixed a is still not invariant to the scale of the features: a I damps the u-step in the
eigendirections of b A^T A below a, and where the features are small (few inputs, low degree)
that is most of them. ``alpha="auto"`` (:func:`proximal_alpha`) sets a relative to the spectrum
instead, just above the factor's rounding, and reaches the minimizer in the iterations the
default max_iter allows where a fixed a creeps (tests/test_fpc.py, the circle problems).

The iteration in place
----------------------
For labels y = +-1 the three cases of (15) are v+ = B + y clip(1 - y B, 0, 1/gamma) at
B = A u+ + w / b, and (12) then gives w+ / b = B - v+ = -y clip(1 - y B, 0, 1/gamma). The loop
therefore carries Q = -w / b: the prox and the multiplier step are one array, A^T (b v - w) is
b A^T (v + Q), and the H-norm term b ||dv||^2 + ||dw||^2 / b is b (||dv||^2 + ||dQ||^2). That is
about 15 in-place passes over the m x k iterates per iteration instead of about 25 with
temporaries, which is most of an iteration's cost when n is small.

Batched problems
----------------
Cross-validation solves the same A with different training rows. ``mask`` marks the rows each
column uses: a column with mask M is *exactly* the run on A[M] (masked entries of v and w are held
at 0, so A^T (b v - w) only sums training rows), and every column shares the two passes over A per
iteration (A^T R and A U are matrix-matrix products), which are the whole cost for k ~ 6 columns.
Each column then needs its own factor of b A_M^T A_M + a I (``factor`` as a list) and may have its
own a, b. ``Au`` in the result holds A u for *all* rows, so the held-out rows' decision values come
for free.

``mask`` may also hold *multiplicities*: a row with count c stands for c identical rows (same
point, same label). Identical rows have identical iterates from the start (0, y, 0) on, so the
run on the distinct rows with c_i folded into A^T C A, A^T C (b v - w), the step norm and the
objective (the prox parameter stays m b, m = sum c_i) is *exactly* the run on all rows, at the
cost of the distinct ones (data sets of few, repeated feature values have many duplicates).
"""
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.blas import dsyrk
from sklearn.exceptions import ConvergenceWarning

from ...exceptions import NotPositiveDefiniteError
from ...options import FPCADMMOptions, options_with



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
    Au : ndarray of shape (m,) or (m, k)
        A @ u at the returned u for every row of A (masked rows included).
    v, w : ndarray of shape (m,) or (m, k)
        The split variable and the multiplier at the last iterate (0 off the mask): with ``Au``
        a warm start for ``v0`` and ``w0`` of a related problem.
    """

    u: np.ndarray
    iterations: object
    history: object
    objective: object
    converged: object
    time: float
    Au: np.ndarray = None
    v: np.ndarray = None
    w: np.ndarray = None


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
    # 1/a is evaluated for every element and kept only in the middle case; a subnormal a
    # overflows there but is always in the low case (|a b| << 1 - a^2 / gamma)
    with np.errstate(divide="ignore", over="ignore"):
        out = np.where(mid & (a != 0), 1.0 / np.where(a != 0, a, 1.0), out)
    # a = 0: the hinge term is constant, z = b (the case ordering of (15))
    return np.where(a == 0, b, out)


def gram_matrix(A):
    """The Gram matrix A^T A of the features, through BLAS syrk (half a general product's flops).

    Parameters
    ----------
    A : ndarray of shape (m, n)
        C-contiguous float64 feature matrix.

    Returns
    -------
    G : ndarray of shape (n, n)
        A^T A, exactly symmetric (the lower triangle is computed and mirrored).
    """
    # A.T of a C-ordered A is Fortran-ordered: syrk reads it in place, no copy
    G = dsyrk(1.0, A.T, trans=0, lower=1)
    iu = np.triu_indices_from(G, 1)
    G[iu] = G.T[iu]
    return G



def proximal_alpha(G, beta, rho=None):
    """The proximal weight ``alpha="auto"``: alpha = beta max(rho tr(G) / n, 10 n eps max G_jj).

    alpha I damps the u-step (13) like a ridge term: in an eigendirection of beta G with
    eigenvalue lambda the step moves lambda / (lambda + alpha) of the way, so directions with
    lambda << alpha creep, and the H-norm stopping rule, which sees small steps, then stops
    far from the hinge minimizer (the fixed point does not depend on alpha). A fixed alpha
    (the paper's 1, or 1/m) is not invariant to the scale of the features, and few inputs
    at a low degree give small features whose whole spectrum lies below it. Relative to
    the spectrum the damping is the same at every feature scale; the second term keeps it
    above the rounding of the Cholesky factor of beta G + alpha I (backward error about
    n eps max_j G_jj), so the factor stays accurate for ill-conditioned high-degree features.

    Parameters
    ----------
    G : ndarray of shape (n, n)
        The Gram matrix A^T A (see :func:`gram_matrix`).
    beta : float > 0
    rho : float >= 0 or None
        None: :class:`FPCADMMOptions`' ``proximal_rho`` (1e-9).

    Returns
    -------
    float
    """
    if rho is None:
        rho = FPCADMMOptions().proximal_rho
    n = G.shape[0]
    d = np.diagonal(G)
    if n == 0 or not np.all(np.isfinite(d)):
        raise ValueError("proximal_alpha: the Gram matrix is empty or not finite")
    scale = max(rho * float(d.sum()) / n, 10.0 * n * np.finfo(np.float64).eps * float(d.max()))
    return float(beta) * (scale if scale > 0 else 1.0)


def _hinge_shift(Y, B, gamma_inv):
    """How far (15) moves B for labels a = +-1: hinge_gamma(y, B) = B + y clip(1 - y B, 0, 1/gamma).

    The three cases z y = t + 1/gamma (t = y B <= 1 - 1/gamma), 1 (in between) and t (t >= 1)
    in one clip; with (12) the same array is -w+ / b (see the module notes). Four in-place
    passes over an m x k array, ``gamma_inv`` one value per column (or a scalar).
    """
    S = np.multiply(Y, B)
    np.subtract(1.0, S, out=S)
    np.clip(S, 0.0, gamma_inv, out=S)
    S *= Y
    return S


def fpc_factor(A=None, alpha=1.0, beta=1.0, gram=None):
    """Cholesky factor of beta A^T A + alpha I, for :func:`fpc_admm`'s ``factor=``.

    Parameters
    ----------
    A : ndarray of shape (m, n), optional
        Feature matrix; not needed when ``gram`` (= A^T A, shape (n, n)) is given.
    alpha : float > 0 or "auto"
        "auto": :func:`proximal_alpha` of the Gram matrix (pass the same value to
        :func:`fpc_admm`: ``proximal_alpha(G, beta)``).
    beta : float > 0

    Returns
    -------
    tuple
        ``scipy.linalg.cho_factor`` output (lower-triangular factor, flag).
    """
    G = gram_matrix(A) if gram is None else gram
    if isinstance(alpha, str):
        alpha = proximal_alpha(G, beta)
    M = beta * G
    M[np.diag_indices_from(M)] += alpha
    try:
        return cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
    except LinAlgError as exc:
        raise NotPositiveDefiniteError(
            "beta A^T A + alpha I is not numerically positive definite (features too large: "
            "scale the inputs or lower the degree, or raise alpha)",
            suggested_beta=None) from exc


def hinge_objective(Au, Y, mask=None):
    """(1/m) sum_i (1 - y_i (Au)_i)_+ per column (over the rows of ``mask`` when given, each
    counted ``mask[i]`` times)."""
    H = np.maximum(0.0, 1.0 - Y * Au)
    if mask is None:
        return H.mean(axis=0)
    return (H * mask).sum(axis=0) / np.maximum(mask.sum(axis=0), 1)


def _per_column(value, k, name):
    arr = np.asarray(value, dtype=np.float64).ravel()
    if arr.size not in (1, k) or not np.all(arr > 0):
        raise ValueError(f"{name} must be a positive scalar or one value per column, got {value!r}")
    return np.broadcast_to(arr, (k,)).copy()


# more than 10 parameters: the one-call form of FPCADMM(...).solve(u0, v0, w0) keeps Algorithm 1's
# names (alpha, beta, the factor, the mask, the starts); options= holds the tunables
def fpc_admm(A, y, *, alpha=1.0, beta=1.0, tol=5e-4, max_iter=100, factor=None, mask=None,
             u0=None, v0=None, w0=None, verbose=0, options=None):
    """Solve FPC's problem (6) by the proximal ADMM (13)-(15) of Algorithm 1:
    ``FPCADMM(A, y, ...).solve(u0, v0, w0)`` in one call.

    Parameters
    ----------
    A : ndarray of shape (m, n)
        Feature matrix A_ij = (1 + x_i . eta_j)^s (trusted, finite).
    y : ndarray of shape (m,) or (m, k)
        Labels in {-1, +1}; k columns are k independent problems (one-vs-rest, or the folds of a
        cross-validation with ``mask``). Each column stops on its own, so its iterates are those
        of a lone run.
    alpha, beta : float > 0 or ndarray of shape (k,), default 1
        Proximal and augmented-Lagrangian parameters (paper defaults; see the module notes on
        their scale), one value for all columns or one per column. ``alpha="auto"``:
        :func:`proximal_alpha` of A^T A for each column's beta (the Gram matrix is formed
        here; with ``factor=`` pass the alpha the factor was built with instead).
    tol : float, default 5e-4
        Stop a column when ||p^{k+1} - p^k||_H^2 < tol (the paper's rule and default).
    max_iter : int, default 100
    factor : tuple or list of tuples, optional
        :func:`fpc_factor` of beta A^T A + alpha I, shared by all columns (tuple), or one per
        column (list of length k, of beta A_M^T A_M + alpha I for the column's rows M and
        parameters; columns may share an entry). Computed here when omitted.
    mask : ndarray of bool or of non-negative integers, shape (m,) or (m, k), optional
        Training rows of each column (default: all). Column c is solved on A[mask[:, c]];
        an integer mask counts each row that many times (see the module notes).
    u0, v0, w0 : ndarray, optional
        Starting point; default (0, y, 0) as in the paper (v0 and w0 are zeroed off the mask).
    verbose : int
        Print the step every iteration when > 1, a summary when 1.
    options : FPCADMMOptions or None
        ``tol`` and ``max_iter`` are its fields (with ``proximal_rho``, the weight of
        ``alpha="auto"``); an argument given with a value other than its default sets that
        field, one left at its default leaves the field of ``options`` alone.

    Returns
    -------
    FPCADMMResult

    Warns
    -----
    ConvergenceWarning
        When a column stops at ``max_iter`` with its step still above ``tol``.

    Raises
    ------
    FloatingPointError
        When the iterates stop being finite (alpha below the Gram matrix's rounding, or
        features that overflow); never returns NaN coefficients.
    """
    options = options_with(FPCADMMOptions, options, dict(tol=tol, max_iter=max_iter))
    solver = FPCADMM(A, y, alpha=alpha, beta=beta, factor=factor, mask=mask, options=options)
    return solver.solve(u0, v0, w0, verbose=verbose)


@dataclass
class RunningColumns:
    """The iterates of the columns still running, compact (no fancy indexing in the common
    path): their indices ``cols``, u, v, Q = -w / b (see "The iteration in place"), A u,
    the labels, and the per-column alpha, beta, 1 / gamma, factor index and row weights."""

    cols: np.ndarray
    U: np.ndarray
    V: np.ndarray
    Q: np.ndarray
    AU: np.ndarray
    Y: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    gamma_inv: np.ndarray
    fid: np.ndarray
    weights: np.ndarray = None

    def keep(self, keep):
        """Drop the columns where ``keep`` is False."""
        for name in ("U", "V", "Q", "AU", "Y"):
            setattr(self, name, getattr(self, name)[:, keep])
        for name in ("cols", "alpha", "beta", "gamma_inv", "fid"):
            setattr(self, name, getattr(self, name)[keep])
        if self.weights is not None:
            self.weights = self.weights[:, keep]


class FPCADMM:
    """FPC's problem (6) by the proximal ADMM (the module's algorithm) for k label columns;
    :func:`fpc_admm` is its one-call form.

    The constructor holds the problem: A, the labels, each column's alpha, beta, rows
    (``mask``) and factor of beta A_M^T A_M + alpha I. :meth:`solve` runs the iterations
    from a start; the running columns' iterates are a :class:`RunningColumns`, and each step
    is a method: ``_step`` (the u-step (13) by the factors, the prox (15) and the multiplier
    (12) as one array, the H-norm step), ``_check_finite``, ``_retire`` (a stopped column's
    iterates written out) and ``_result``.

    Parameters
    ----------
    A, y, alpha, beta, factor, mask
        As in :func:`fpc_admm`.
    options : FPCADMMOptions or None
        The tunables; None: the defaults.
    """

    def __init__(self, A, y, *, alpha=1.0, beta=1.0, factor=None, mask=None, options=None):
        t0 = time.perf_counter()
        self.options = options_with(FPCADMMOptions, options, {})
        self.A = A
        y = np.asarray(y, dtype=np.float64)
        self.single = y.ndim == 1
        self.Y = Y = y.reshape(y.shape[0], -1)
        m, n = A.shape
        self.k = k = Y.shape[1]
        be = _per_column(beta, k, "beta")
        if isinstance(alpha, str):
            alpha, factor = _auto_alpha(A, alpha, be, factor, mask, self.options.proximal_rho)
        al = _per_column(alpha, k, "alpha")
        M, self.Mf, self.Cf = _mask_counts(mask, m, k)
        Mf, Cf = self.Mf, self.Cf
        rows = np.full(k, float(m)) if Mf is None else (Mf if Cf is None else Cf).sum(axis=0)
        self.uniq, self.fid = _unique_factors(A, factor, al, be, M, Cf, k)
        self.alpha, self.beta, self.gamma = al, be, rows * be
        self.Cw = None if Mf is None else (Mf if Cf is None else Cf)  # row weights of the sums
        self.setup_time = time.perf_counter() - t0

    def solve(self, u0=None, v0=None, w0=None, *, verbose=0):
        """Iterate from (u0, v0, w0) (default (0, y, 0)) until every column stops; an
        :class:`FPCADMMResult`."""
        t0 = time.perf_counter() - self.setup_time
        (m, n), k, Y = self.A.shape, self.k, self.Y
        self.U = np.zeros((n, k)) if u0 is None else np.array(u0, dtype=np.float64).reshape(n, k)
        self.V = Y.copy() if v0 is None else np.array(v0, dtype=np.float64).reshape(m, k)
        self.W = np.zeros((m, k)) if w0 is None else np.array(w0, dtype=np.float64).reshape(m, k)
        self.AU = np.empty((m, k))
        self.history = [[] for _ in range(k)]
        self.iterations = np.zeros(k, dtype=int)
        self.converged = np.zeros(k, dtype=bool)
        run = self._running(u0 is not None)
        self._iterate(run, verbose)
        if self.options.max_iter == 0:
            self.AU = run.AU
        return self._result(t0, verbose)

    def _running(self, warm):
        """Every column running, from the start's u, v and w (Q = -w / b)."""
        U = self.U.copy()
        AU = self.A @ U if warm else np.zeros(self.AU.shape)  # no pass over A for u = 0
        return RunningColumns(np.arange(self.k), U, self.V.copy(), self.W / -self.beta, AU,
                              self.Y.copy(), self.alpha, self.beta, 1.0 / self.gamma,
                              self.fid, self.Cw)

    def _iterate(self, run, verbose):
        """The iterations (13)-(15) of every column until it stops."""
        tol, max_iter = self.options.tol, self.options.max_iter
        for it in range(1, max_iter + 1):
            step = self._step(run)
            self._check_finite(run, step, it)
            for c, st in zip(run.cols, step):
                self.history[c].append(float(st))
            self.iterations[run.cols] = it
            done = step < tol
            if verbose > 1:
                print(f"[fpc_admm] iter {it}: max step {step.max():.3e}, "
                      f"{int((~done).sum())}/{run.cols.size} columns still running")
            if done.any() or it == max_iter:
                self._retire(run, done if it < max_iter else np.ones_like(done), done)
                if run.cols.size == 0:
                    break

    def _check_finite(self, run, step, it):
        """NaN never stops the loop by itself: refuse it."""
        if np.all(np.isfinite(step)):
            return
        bad = run.cols[~np.isfinite(step)]
        raise FloatingPointError(
            f"fpc_admm: the iterates of column(s) {bad.tolist()} became non-finite at "
            f"iteration {it} (alpha={run.alpha[~np.isfinite(step)][0]:.3g}); the factor of "
            "beta A^T A + alpha I is not accurate enough: raise alpha (alpha='auto'), "
            "or scale the inputs / lower the degree")

    def _retire(self, run, fin, done):
        """The columns ``fin`` stop (``done``: by the tolerance): their u, v, w and A u
        are written out and they leave ``run``."""
        cols = run.cols[fin]
        self.converged[run.cols[done]] = True
        self.U[:, cols], self.V[:, cols], self.W[:, cols], self.AU[:, cols] = (
            run.U[:, fin], run.V[:, fin], run.Q[:, fin] * -run.beta[fin], run.AU[:, fin])
        run.keep(~fin)

    def _step(self, run):
        """One iteration of the running columns, in place where it can: ``run`` holds
        u+, v+, Q+ and A u+ after it; returns the step ||p+ - p||_H^2 per column."""
        A, Ca, aa, ba = self.A, run.weights, run.alpha, run.beta
        D = np.add(run.V, run.Q)  # v - w / b
        if Ca is not None:
            D *= Ca  # off-mask rows drop out of A^T (b v - w) here, and only here
        rhs = A.T @ D
        rhs *= ba
        rhs += aa * run.U
        U_new = self._solve(rhs, run.fid)
        AU_new = A @ U_new
        B = np.subtract(AU_new, run.Q)  # A u+ + w / b, the point (15) is taken at
        # (15) for labels +-1: v+ = B + y clip(1 - y B, 0, 1/gamma), and (12) is then
        # w+ / b = w / b + A u+ - v+ = -y clip(...): one array serves both
        Q_new = _hinge_shift(run.Y, B, run.gamma_inv)
        V_new = np.add(B, Q_new, out=B)
        dU = U_new - run.U
        dV = np.subtract(V_new, run.V, out=run.V)  # the old iterates are not needed any more
        dQ = np.subtract(Q_new, run.Q, out=run.Q)
        dV *= dV
        dQ *= dQ
        dV += dQ  # b ||dv||^2 + ||dw||^2 / b = b (||dv||^2 + ||dQ||^2)
        vw = dV.sum(axis=0) if Ca is None else np.einsum("ij,ij->j", dV, Ca)
        step = aa * np.einsum("ij,ij->j", dU, dU) + ba * vw
        run.U, run.V, run.Q, run.AU = U_new, V_new, Q_new, AU_new
        return step

    def _solve(self, rhs, fid):
        """The u-step's solve (13): each column by its factor, columns sharing one at once."""
        uniq = self.uniq
        if len(uniq) == 1:
            return cho_solve(uniq[0], rhs, check_finite=False)
        U_new = np.empty_like(rhs)
        for g in np.unique(fid):
            cols = fid == g
            U_new[:, cols] = cho_solve(uniq[g], rhs[:, cols], check_finite=False)
        return U_new

    def _result(self, t0, verbose):
        """The FPCADMMResult, with a ConvergenceWarning for the columns stopped short."""
        (m, n), k, it = self.A.shape, self.k, self.iterations
        max_iter, tol = self.options.max_iter, self.options.tol
        short = np.flatnonzero(~self.converged & (it >= max_iter) & (max_iter > 0))
        if short.size:
            last = [float(self.history[c][-1]) for c in short]
            warnings.warn(
                f"fpc_admm: {short.size} of {k} problem(s) stopped at max_iter={max_iter} "
                f"with the step ||p^(k+1) - p^k||_H^2 at {max(last):.3g}, above tol={tol:g} "
                f"(columns {short.tolist()[:10]}); raise max_iter, or use alpha='auto' if "
                "alpha is large next to beta A^T A (a strong proximal term makes the steps "
                "slow)", ConvergenceWarning, stacklevel=4)
        U, V, W, AU, Mf, Cf = self.U, self.V, self.W, self.AU, self.Mf, self.Cf
        if Mf is not None:  # off-mask rows of v and w never entered a sum; report them as 0
            V *= Mf
            W *= Mf
        objective = hinge_objective(AU, self.Y, Mf if Cf is None else Cf)
        elapsed = time.perf_counter() - t0
        if verbose:
            print(f"[fpc_admm] m={m} n={n} k={k}: iterations {it.tolist()}, "
                  f"hinge objective {np.round(objective, 6).tolist()}, {elapsed:.3f}s")
        history = [np.array(h) for h in self.history]
        if self.single:
            return FPCADMMResult(U[:, 0], int(it[0]), history[0], float(objective[0]),
                                 bool(self.converged[0]), elapsed, AU[:, 0], V[:, 0], W[:, 0])
        return FPCADMMResult(U, it, history, objective, self.converged, elapsed, AU, V, W)


def _auto_alpha(A, alpha, be, factor, mask, rho):
    """``alpha="auto"``: (alpha per column, or one shared, and its factor when shared)."""
    if alpha != "auto":
        raise ValueError(f"alpha must be a positive number or 'auto', got {alpha!r}")
    if factor is not None:
        raise ValueError("alpha='auto' needs the Gram matrix: with factor= pass the "
                         "alpha the factor was built with (proximal_alpha(G, beta))")
    if mask is not None:
        raise ValueError("alpha='auto' is for unmasked problems: with mask= pass "
                         "proximal_alpha of each column's Gram matrix")
    G = gram_matrix(A)
    alpha = np.array([proximal_alpha(G, b, rho) for b in be])
    if np.all(alpha == alpha[0]):
        alpha = alpha[0]
        factor = fpc_factor(alpha=alpha, beta=be[0], gram=G)
    return alpha, factor


def _mask_counts(mask, m, k):
    """``(M, Mf, Cf)``: the used rows per column (bool), as 0/1, and their counts when not
    all 1 (None each without a mask; Cf None when the counts are the indicator)."""
    if mask is None:
        return None, None, None
    Cf = np.broadcast_to(np.asarray(mask, dtype=np.float64).reshape(m, -1), (m, k))
    if np.any(Cf < 0):
        raise ValueError("mask: counts must be non-negative")
    M = Cf > 0
    Mf = M.astype(np.float64)
    Cf = None if np.array_equal(Cf, Mf) else np.ascontiguousarray(Cf)
    return M, Mf, Cf


def _unique_factors(A, factor, al, be, M, Cf, k):
    """``(factors, index)``: the distinct factors and each column's index into them (columns
    sharing one solve together); the factors are computed here when ``factor`` is None."""
    if factor is None:
        if M is None and np.all(al == al[0]) and np.all(be == be[0]):
            factor = fpc_factor(A, al[0], be[0])
        else:
            factor = [fpc_factor(A if M is None else
                                 A[M[:, c]] * (1.0 if Cf is None else
                                               np.sqrt(Cf[M[:, c], c])[:, None]), al[c], be[c])
                      for c in range(k)]
    if not isinstance(factor, list):
        return [factor], np.zeros(k, dtype=int)
    if len(factor) != k:
        raise ValueError(f"factor: expected {k} factors (one per column), got {len(factor)}")
    uniq, fid = [], np.empty(k, dtype=int)
    for c, f in enumerate(factor):
        for g, h in enumerate(uniq):
            if h is f:
                fid[c] = g
                break
        else:
            fid[c] = len(uniq)
            uniq.append(f)
    return uniq, fid
