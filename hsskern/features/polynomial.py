"""Polynomial-kernel features on centers, the feature map of FPC (Zeng, Wu, Lin, Zhou).

FPC classifies with f(x) = sum_j u_j (1 + eta_j . x)^s over n = C(s + d, s) centers eta_j:
almost every set of n points makes these functions a basis of all polynomials of degree <= s
(the paper's Proposition 1), so the hypothesis space does not depend on *which* centers are
taken, only on s. The m x n feature matrix A_ij = (1 + x_i . eta_j)^s is the polynomial
``KernelOperator``'s cross block K(X, centers), evaluated by the compiled tiles.

Input scaling
-------------
The theory assumes inputs in the simplex and the features overflow or lose all conditioning for
raw inputs ((1 + x . eta)^s with |x| ~ 1e3 and s = 10 is 1e60). Every scaling here first maps
each feature to [0, 1] with the *training* minimum and range (a constant feature maps to 0, as in
the authors' MATLAB demo), then shrinks by a constant:

==========  ==========================  =====================================================
scaling     x' = (x - min) / range / c  feature range A_ij for training-range inputs
==========  ==========================  =====================================================
"auto"      c = max(1, c_safe)          "cube" unless that is numerically unsafe (default)
"cube"      c = 1                       the authors' MATLAB demo; A_ij in [1, (1+d)^s]
"ball"      c = sqrt(d)                 ||x'|| <= 1, so |x' . eta| <= 1 and A_ij in [1, 2^s]
"simplex"   c = d                       x' in the simplex of the theory; A_ij in [1, (1+1/d)^s]
"none"      no scaling                  caller guarantees bounded inputs
==========  ==========================  =====================================================

An affine map of the inputs maps polynomials of degree <= s onto themselves, so the scaling does
not change the hypothesis space, only the conditioning of A^T A and hence what the ADMM reaches
in a few iterations. Larger features are better: the proximal term alpha I acts like a ridge
penalty on u, weaker when A is larger. But the Gram matrix A^T A carries rounding errors of
about m n eps max(A)^2, and once that exceeds alpha the Cholesky factor of
beta A^T A + alpha I is garbage (the ADMM then never converges). "auto" therefore takes the
cube unless beta m n eps max(A)^2 > alpha, and otherwise the smallest shrink c with
(1 + d / c^2)^s <= sqrt(alpha / (beta m n eps)). New points are clipped to the training
bounding box before scaling so a degree-10 polynomial is never extrapolated far outside the
data it was fitted on.
"""
import math

import numpy as np

from ..kernels import kernel_operator
from ..utils._memory import available_memory, check_memory, format_bytes

SCALINGS = ("auto", "cube", "ball", "simplex", "none")
CENTER_SCHEMES = ("first", "random", "uniform")
#: Features of training-range inputs are kept below 2^FEATURE_LOG2_MAX: the Gram matrix sums
#: m products of two of them, which stays finite for any m < 2^63.
FEATURE_LOG2_MAX = 480


def _shrink(scaling, n_features, shrink):
    return {"ball": math.sqrt(n_features), "simplex": float(n_features), "cube": 1.0,
            "auto": float(shrink)}[scaling]


def max_degree(n_features, scaling="cube", shrink=1.0, sq_norm=None):
    """Largest degree s whose features float64 can carry for training-range inputs.

    After scaling, inputs x' lie in [0, 1/c]^d (c the shrink of ``scaling``), so a feature
    (1 + x' . eta)^s of training-range points lies in [1, (1 + d / c^2)^s]; s is bounded by
    s log2(1 + d / c^2) <= ``FEATURE_LOG2_MAX`` (480), which keeps the Gram matrix's sums of
    products finite. Far below that the features are numerically useless anyway (their
    dynamic range swamps the rounding), but beyond it they are inf/NaN.

    Parameters
    ----------
    n_features : int
        Dimension d.
    scaling : {"auto", "cube", "ball", "simplex", "none"}
    shrink : float, default 1
        The shrink c of "auto" (:func:`safe_shrink`; 1 gives the cube's bound, the smallest).
    sq_norm : float, optional
        For ``scaling="none"``: the largest squared norm |x|^2 of the inputs (then features
        lie in [.., (1 + |x|^2)^s]). Required for "none".

    Returns
    -------
    int
        (a huge number when the features cannot grow, e.g. all inputs 0)
    """
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    if scaling == "none":
        if sq_norm is None:
            raise ValueError("max_degree(scaling='none') needs sq_norm, the inputs' largest "
                             "squared norm")
        top = float(sq_norm)
    else:
        top = n_features / _shrink(scaling, n_features, shrink) ** 2
    per_degree = math.log2(1.0 + top) if math.isfinite(top) else math.inf
    if per_degree == 0.0:
        return 2**62
    return int(FEATURE_LOG2_MAX // per_degree)


def check_degree(degree, n_features, scaling="cube", shrink=1.0, sq_norm=None):
    """Raise ValueError (with the largest degree that works) when :func:`max_degree` is
    exceeded."""
    top = max_degree(n_features, scaling, shrink, sq_norm)
    if degree > top:
        where = (f"inputs with |x|^2 up to {sq_norm:.3g} (scaling='none')" if scaling == "none"
                 else f"{n_features} feature(s) scaled by {scaling!r}"
                 + (f" (shrink {shrink:.3g})" if scaling == "auto" else ""))
        raise ValueError(
            f"degree={degree} is beyond what float64 can represent for {where}: features "
            f"(1 + x . eta)^degree would exceed 2^{FEATURE_LOG2_MAX}; the largest degree "
            f"that works is {top}")


def n_centers(degree, n_features, n_samples=None):
    """Number of centers n = C(s + d, s), the dimension of degree-<= s polynomials in d variables,
    capped at ``n_samples`` (the paper's n = min(C(s+d, s), m))."""
    n = math.comb(int(degree) + int(n_features), int(degree))
    return n if n_samples is None else min(n, int(n_samples))


def feature_nbytes(n_samples, n_features, degree, copies=1.0, n_problems=1, n_square=2):
    """Bytes FPC needs for one degree: ``copies`` m x n feature matrices (cross-validation holds
    a held-out fold's rows too), ``n_square`` n x n matrices (the Gram matrix and its factor;
    cross-validation holds fold Grams and one factor per fold), and about eight m-vectors of
    ADMM iterates and temporaries per ADMM column (one-vs-rest problem, times folds in CV)."""
    n = n_centers(degree, n_features, n_samples)
    return int(8 * (copies * n_samples * n + n_square * n * n + 8 * n_samples * n_problems))


def suggest_degree(n_samples, n_features, budget, copies=1.0, n_problems=1, n_square=2):
    """Largest degree s <= 10 whose FPC memory fits in ``budget`` bytes (0 if even s = 1 does
    not)."""
    best = 0
    for s in range(1, 11):
        if feature_nbytes(n_samples, n_features, s, copies, n_problems, n_square) <= budget:
            best = s
    return best


def check_feature_memory(n_samples, n_features, degree, budget=None, copies=1.0, n_problems=1,
                         n_square=2):
    """Raise :class:`~hsskern.MemoryBudgetError` (with the estimate and a degree that fits) when the
    features of ``degree`` would not fit in ``budget`` bytes (default: 80% of available memory)."""
    nbytes = feature_nbytes(n_samples, n_features, degree, copies, n_problems, n_square)
    if budget is None:
        avail = available_memory()
        if avail is None:
            return
        budget = 0.8 * avail
    fit = suggest_degree(n_samples, n_features, budget, copies, n_problems, n_square)
    n = n_centers(degree, n_features, n_samples)
    fit_bytes = feature_nbytes(n_samples, n_features, fit, copies, n_problems, n_square)
    hint = (f"degree={fit} fits ({format_bytes(fit_bytes)})"
            if fit else "even degree=1 does not fit: subsample the rows")
    check_memory(nbytes, f"FPC features of degree {degree} ({n_samples} x {n} matrix, "
                 f"n = C({degree}+{n_features}, {degree}) centers)", budget=budget, hint=hint)


def safe_shrink(n_features, degree, n_samples, n_centers, alpha=1.0, beta=1.0):
    """Smallest shrink c >= 1 of the unit cube keeping beta m n eps max(A)^2 <= alpha."""
    f_max = math.sqrt(alpha / (beta * n_samples * max(n_centers, 1) * np.finfo(float).eps))
    room = f_max ** (1.0 / degree) - 1.0  # allowed max of x'.eta
    if room >= n_features:
        return 1.0
    return math.sqrt(n_features / max(room, 1e-3))


class BoxScaler:
    """Min-max scaling to [0, 1]^d followed by a constant shrink (see the module notes).

    Parameters
    ----------
    scaling : {"auto", "cube", "ball", "simplex", "none"}
    auto_shrink : float, default 1
        The shrink c used by "auto" (see :func:`safe_shrink`).

    Attributes
    ----------
    data_min_, data_max_ : ndarray of shape (d,)
        Training bounding box; new points are clipped to it.
    scale_ : ndarray of shape (d,)
        Multiplier applied after subtracting ``data_min_`` (0 for constant features).
    """

    def __init__(self, scaling="auto", auto_shrink=1.0):
        if scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
        self.scaling = scaling
        self.auto_shrink = float(auto_shrink)

    def fit(self, X):
        d = X.shape[1]
        self.data_min_ = X.min(axis=0)
        self.data_max_ = X.max(axis=0)
        if self.scaling == "none":
            self.scale_ = np.ones(d)
            self.data_min_ = np.zeros(d)
            return self
        rng = self.data_max_ - self.data_min_
        shrink = _shrink(self.scaling, d, self.auto_shrink)
        with np.errstate(divide="ignore"):
            self.scale_ = np.where(rng > 0, 1.0 / (np.where(rng > 0, rng, 1.0) * shrink), 0.0)
        return self

    def transform(self, X, clip=True):
        """Scaled copy of X, shape (m, d). ``clip`` clips to the training box first."""
        if self.scaling == "none":
            return np.array(X, dtype=np.float64, order="C")
        if clip:
            X = np.clip(X, self.data_min_, self.data_max_)
        out = (X - self.data_min_) * self.scale_
        return np.ascontiguousarray(out)


def select_centers(Xs, n, method="first", rng=None):
    """The n centers eta_j from the scaled training points ``Xs`` (shape (m, d)).

    ``"first"``: the first n rows (the paper's default, Scheme 2); ``"random"``: n distinct rows
    drawn uniformly (Scheme 3); ``"uniform"``: n points uniform in the bounding box of ``Xs``
    (Scheme 1). Returns a C-contiguous (n, d) array.
    """
    m = Xs.shape[0]
    if method == "first":
        C = Xs[:n]
    elif method == "random":
        C = Xs[np.sort(rng.choice(m, size=n, replace=False))]
    elif method == "uniform":
        lo, hi = Xs.min(axis=0), Xs.max(axis=0)
        C = lo + (hi - lo) * rng.random((n, Xs.shape[1]))
    else:
        raise ValueError(f"centers must be one of {CENTER_SCHEMES}, got {method!r}")
    return np.ascontiguousarray(C, dtype=np.float64)


class PolynomialFeatureMap:
    """x -> ((1 + eta_j . x')^s)_j for scaled x', built by :func:`fit_polynomial_features`.

    Attributes
    ----------
    scaler : BoxScaler
    centers : ndarray of shape (n, d)
        Centers in scaled coordinates.
    degree : int
    operator : KernelOperator
        The polynomial kernel (coef0 = 1) on the centers; ``operator.cross(X')`` is K(X', centers).
    """

    def __init__(self, scaler, centers, degree):
        self.scaler = scaler
        self.centers = centers
        self.degree = int(degree)
        if scaler.scaling != "none":  # "none": checked on the data by the kernel operator
            check_degree(self.degree, centers.shape[1], scaler.scaling, scaler.auto_shrink)
        self.operator = kernel_operator(centers, "polynomial", degree=self.degree, coef0=1.0)

    @property
    def n_centers(self):
        return self.centers.shape[0]

    def features(self, Xs, budget=None):
        """Dense features A of already-scaled points, shape (m, n) (memory checked first)."""
        check_memory(8 * Xs.shape[0] * self.n_centers,
                     f"a {Xs.shape[0]} x {self.n_centers} FPC feature matrix", budget=budget,
                     hint="lower the degree")
        return self.operator.cross(Xs).to_dense(max_bytes=math.inf)

    def transform(self, X, budget=None):
        """Dense features of raw points X (scaled and clipped here), shape (m, n)."""
        return self.features(self.scaler.transform(X), budget=budget)

    def apply(self, X, U):
        """A(X) @ U for raw points X without forming A: blocked kernel matmat, shape (m, k)."""
        return self.operator.cross(self.scaler.transform(X)) @ U


def check_features_representable(X, degree, scaling="auto", alpha=1.0, beta=1.0, n_rows=None):
    """The "auto" scaling's shrink for X at this degree, after checking that the features fit
    float64 (:func:`check_degree`); cheap, so a degree grid is checked before any work.

    Parameters as in :func:`fit_polynomial_features`.

    Returns
    -------
    float
        The shrink (1.0 unless ``scaling="auto"``).
    """
    m, d = X.shape
    if isinstance(alpha, str):
        alpha = beta
    shrink = (safe_shrink(d, degree, m if n_rows is None else int(n_rows),
                          n_centers(degree, d, m), alpha, beta)
              if scaling == "auto" else 1.0)
    if scaling == "none":
        with np.errstate(over="ignore"):
            sq = float(np.einsum("ij,ij->i", X, X).max()) if m else 0.0
        check_degree(degree, d, scaling, sq_norm=sq)
    else:
        check_degree(degree, d, scaling, shrink)
    return shrink


def fit_polynomial_features(X, degree, centers="first", scaling="auto", random_state=None,
                            alpha=1.0, beta=1.0, n_rows=None):
    """Fit the scaler on X and choose n = min(C(s+d, s), m) centers.

    Parameters
    ----------
    X : ndarray of shape (m, d)
        Finite training points (trusted: validated by the caller).
    degree : int
        Polynomial degree s >= 1, at most :func:`max_degree` for the scaling.
    centers : {"first", "random", "uniform"}
    scaling : {"auto", "cube", "ball", "simplex", "none"}
    random_state : numpy Generator, int or None
        Used by the "random" and "uniform" center schemes.
    alpha, beta : float (alpha also "auto")
        The ADMM parameters, which set the "auto" scaling's safety bound. ``alpha="auto"``
        (:func:`~hsskern.solvers.engines.fpc_admm.proximal_alpha`, which stays above the factor's
        rounding by itself) keeps the bound of alpha = beta.
    n_rows : int, optional
        Rows summed into the Gram matrix when X holds distinct rows standing for more (the
        estimators pass the count of the original rows); default ``X.shape[0]``.

    Returns
    -------
    fmap : PolynomialFeatureMap
    Xs : ndarray of shape (m, d)
        The scaled training points (so callers do not scale twice).

    Raises
    ------
    ValueError
        ``degree`` beyond :func:`max_degree` for this scaling (checked before any work).
    """
    m, d = X.shape
    n = n_centers(degree, d, m)
    shrink = check_features_representable(X, degree, scaling, alpha, beta, n_rows)
    scaler = BoxScaler(scaling, shrink).fit(X)
    Xs = scaler.transform(X, clip=False)
    rng = np.random.default_rng(random_state)
    return PolynomialFeatureMap(scaler, select_centers(Xs, n, centers, rng), degree), Xs
