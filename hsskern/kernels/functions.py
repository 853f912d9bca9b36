"""Kernel functions: a frozen description (name + parameters) that the compiled evaluator reads.

=================  =====================================================  ==================
name               k(x, y)                                                parameters
=================  =====================================================  ==================
gaussian           exp(-|x - y|^2 / (2 h^2)) = exp(-gamma |x - y|^2)      h or gamma
laplacian          exp(-|x - y| / h)                                      h or gamma = 1/h
polynomial         (coef0 + gamma x . y)^degree                           degree, coef0, gamma
sigmoid            tanh(coef0 + gamma x . y)                              gamma, coef0
compact_gaussian   (1 - |x - y| / (3 s))_+^power exp(-|x - y|^2/(2s^2))   sigma, power
=================  =====================================================  ==================

SVC's spellings resolve here: ``"rbf"`` is the Gaussian, ``"poly"`` the polynomial with SVC's
defaults (degree 3, coef0 0; hsskern's own ``"polynomial"`` keeps degree 2, coef0 1 and gamma 1,
the form FPC uses) and ``"linear"`` the polynomial of degree 1 with coef0 0 and gamma 1.

The Gaussian width follows the HSS/ADMM paper (h); scikit-learn's ``gamma`` is accepted too,
with gamma = 1 / (2 h^2). The compactly supported Gaussian vanishes beyond ``3 sigma`` (its
``support_radius``) and is positive definite in R^d for power >= floor(d/2) + 1 (Askey's
truncated power function (1 - r)_+^power, times a Gaussian).
"""
import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..utils._cpu import load
from ..utils._deprecation import caller_stacklevel
from ..utils._scaling import log2
from ..utils.validation import check_positive

# the widest build of the exp-bound module this CPU runs (setup.py, utils/_cpu.py)
_eval = load("hsskern.kernels._eval")

KERNELS = ("gaussian", "laplacian", "polynomial", "compact_gaussian", "sigmoid")
#: scikit-learn's names for kernels of ``KERNELS`` (SVC's ``kernel`` strings)
SVC_SPELLINGS = ("rbf", "poly", "linear")
#: kernels of the dot product x . y (not of |x - y|): no width, no HSS compression
DOT_KERNELS = ("polynomial", "sigmoid")
#: kernels only the exact decomposition takes (no distances for a tree, or no factor)
EXACT_ONLY_KERNELS = DOT_KERNELS + ("callable",)
#: Polynomial kernel entries must stay below 2^_MAX_POLY_LOG2 (sums of many stay finite).
_MAX_POLY_LOG2 = 1000
#: kernels that depend only on |x - y| / width: rescaling points and width together is exact
SCALE_INVARIANT = ("gaussian", "laplacian", "compact_gaussian")


def _half_inv_square(w):
    """1 / (2 w^2), as inf or 0 where it leaves float range (Python's ``**`` would raise)."""
    try:
        return 1.0 / (2.0 * w ** 2)
    except (OverflowError, ZeroDivisionError):
        return 0.0 if w > 1.0 else math.inf


@dataclass(frozen=True)
class Kernel:
    """A kernel function with its parameters. Build it with :func:`make_kernel`.

    Attributes
    ----------
    name : str
        One of ``KERNELS``.
    h : float or None
        Width of the Gaussian / Laplacian kernels.
    degree : int or None
        Degree s of the polynomial kernel.
    coef0 : float or None
        Constant c of the polynomial and sigmoid kernels.
    sigma : float or None
        Width of the compactly supported Gaussian.
    power : float or None
        Exponent of the compact support factor (1 - r / (3 sigma))_+^power (Askey's
        truncated power).
    scale : float or None
        The dot product's factor in the polynomial and sigmoid kernels (SVC's ``gamma`` for
        them; 1 when None).
    function : callable or None
        For ``name="callable"``: k(A, B) -> array of shape (len(A), len(B)), as SVC's
        callable kernels (evaluated in blocks, see :mod:`hsskern.kernels.callable`).
    """

    name: str
    h: float = None
    degree: int = None
    coef0: float = None
    sigma: float = None
    power: float = None
    scale: float = None
    function: object = None

    @property
    def gamma(self):
        """scikit-learn's gamma: 1/(2h^2) (Gaussian), 1/h (Laplacian), the dot product's factor
        (polynomial, sigmoid); None for the compact Gaussian."""
        if self.name == "gaussian":
            return _half_inv_square(self.h)
        if self.name == "laplacian":
            return 1.0 / self.h
        if self.name in DOT_KERNELS:
            return self.dot_scale
        return None

    @property
    def dot_scale(self):
        """The factor of x . y in a dot-product kernel (1 when not given)."""
        return 1.0 if self.scale is None else float(self.scale)

    @property
    def positive_definite(self):
        """False for the sigmoid, which is not positive semidefinite in general (SVC accepts
        it; only the exact decomposition, which needs no factor, can take it)."""
        return self.name != "sigmoid"

    @property
    def support_radius(self):
        """Distance beyond which k(x, y) = 0 (``inf`` for globally supported kernels)."""
        return 3.0 * self.sigma if self.name == "compact_gaussian" else math.inf

    @property
    def scale_invariant(self):
        """True when k(x, y) depends only on |x - y| / width (see :meth:`rescaled`)."""
        return self.name in SCALE_INVARIANT

    @property
    def width(self):
        """The length scale (h or sigma) of a scale-invariant kernel, else None."""
        return self.sigma if self.name == "compact_gaussian" else self.h

    def rescaled(self, s):
        """The same kernel for points divided by s: k'(x / s, y / s) = k(x, y).

        Exact (bit for bit, in normal range) when s is a power of two. Only for
        scale-invariant kernels.
        """
        if not self.scale_invariant:
            raise ValueError(f"the {self.name} kernel is not scale invariant")
        if self.name == "compact_gaussian":
            return Kernel(self.name, sigma=self.sigma / s, power=self.power)
        return Kernel(self.name, h=self.h / s)

    @property
    def code(self):
        return _eval.KIND_CODES[self.name]

    @property
    def params(self):
        """Parameter vector in the layout the compiled evaluator expects."""
        if self.name == "gaussian":
            p = (_half_inv_square(self.h), 0.0, 0.0)
        elif self.name == "laplacian":
            p = (1.0 / self.h, 0.0, 0.0)
        elif self.name == "polynomial":
            p = (float(self.coef0), float(self.degree), self.dot_scale)
        elif self.name == "sigmoid":
            p = (float(self.coef0), 0.0, self.dot_scale)
        else:
            p = (_half_inv_square(self.sigma), 1.0 / (3.0 * self.sigma), float(self.power))
        return np.array(p, dtype=np.float64)

    def diag(self, X):
        """k(x_i, x_i) for the rows of X."""
        if self.name == "callable":
            from .callable import CallableKernelOperator
            return CallableKernelOperator(X, X, self, 8 * 2 ** 20).diag()
        if self.name in DOT_KERNELS:
            return self.of_dot(np.einsum("ij,ij->i", X, X))
        return np.ones(X.shape[0])

    def of_dot(self, t):
        """k as a function of the dot products ``t`` = x . y (dot-product kernels only)."""
        u = self.coef0 + self.dot_scale * np.asarray(t, dtype=np.float64)
        return np.tanh(u) if self.name == "sigmoid" else u ** self.degree

    def check_dot_range(self, log2_norms):
        """A clear ValueError when polynomial entries can overflow float64: ``log2_norms`` is
        log2 of the largest |x| |y| over the pairs (|coef0 + gamma x.y| <= |coef0| +
        gamma |x| |y|). The sigmoid is bounded by 1."""
        if self.name != "polynomial":
            return
        c = abs(self.coef0)
        lb = log2_norms + log2(self.dot_scale) if log2_norms > -math.inf else -math.inf
        if lb == -math.inf:
            top = log2(c) if c > 0 else -math.inf
        elif lb > 1000:
            top = lb
        else:
            top = log2(c + 2.0 ** lb)
        if self.degree * top > _MAX_POLY_LOG2:
            raise ValueError(
                f"polynomial kernel entries (coef0 + gamma x.y)^degree reach about 2^"
                f"{self.degree * top:.0f} (degree={self.degree}, coef0={self.coef0:g}, gamma="
                f"{self.dot_scale:g}, largest gamma |x| |y| = 2^{lb:.1f}), beyond float64 "
                f"(2^1024): scale X, e.g. to unit norm, or lower the degree or gamma")

    def __repr__(self):
        if self.name in ("gaussian", "laplacian"):
            return f"Kernel({self.name!r}, h={self.h:g})"
        if self.name == "polynomial":
            g = "" if self.scale is None else f", gamma={self.scale:g}"
            return f"Kernel('polynomial', degree={self.degree}, coef0={self.coef0:g}{g})"
        if self.name == "sigmoid":
            return f"Kernel('sigmoid', gamma={self.dot_scale:g}, coef0={self.coef0:g})"
        if self.name == "callable":
            return f"Kernel('callable', function={self.function!r})"
        return f"Kernel('compact_gaussian', sigma={self.sigma:g}, power={self.power:g})"


def make_kernel(kernel="gaussian", *, h=None, gamma=None, degree=None, coef0=None,
                sigma=None, power=None, n_features=None):
    """Validate parameters and return a :class:`Kernel`.

    Parameters
    ----------
    kernel : str, callable or Kernel
        Kernel name (see ``KERNELS``; SVC's ``"rbf"``, ``"poly"`` and ``"linear"`` too), a
        function k(A, B) -> (len(A), len(B)) array (SVC's callable kernel), or an existing
        Kernel, returned unchanged.
    h, gamma : float, optional
        Width of the Gaussian (``gamma = 1/(2 h^2)``) or Laplacian (``gamma = 1/h``) kernel;
        give one of them. Default h = 1. For the dot-product kernels ("poly", "polynomial",
        "sigmoid") ``gamma`` is the factor of x . y (default 1).
    degree : int, optional
        Polynomial degree s >= 1 (default 2 for "polynomial", 3 for SVC's "poly").
    coef0 : float, optional
        The constant c of the polynomial (default 1 for "polynomial", >= 0) and sigmoid
        kernels (default 0 for "poly" and "sigmoid", any real, as SVC's).
    sigma : float, optional
        Compact Gaussian width (default 1); support radius 3 sigma.
    power : float, optional
        Exponent of the compact support factor (1 - r / (3 sigma))_+^power; default
        floor(d/2) + 1 (Askey's bound), needs ``n_features``. Formerly ``l`` (still taken,
        with a FutureWarning).
    n_features : int, optional
        Dimension d of the data, used for the default ``power`` and the positive-definiteness
        check.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if callable(kernel):
        return Kernel("callable", function=kernel)
    names = KERNELS + SVC_SPELLINGS
    if not isinstance(kernel, str) or kernel not in names:
        raise ValueError(f"kernel must be one of {names}, got {kernel!r}")
    if kernel == "rbf":
        kernel = "gaussian"
    if kernel in ("gaussian", "laplacian"):
        return _width_kernel(kernel, h, gamma)
    if kernel in ("poly", "polynomial", "sigmoid", "linear"):
        return _dot_kernel(kernel, gamma, degree, coef0)
    sigma = 1.0 if sigma is None else check_positive(sigma, "sigma")
    askey = None if n_features is None else n_features // 2 + 1
    if power is None:
        if askey is None:
            raise ValueError("compact_gaussian needs power or n_features (default power = "
                             "floor(d/2)+1)")
        power = askey
    power = check_positive(power, "power")
    if askey is not None and power < askey:
        warnings.warn(f"compact_gaussian with power={power:g} < floor(d/2)+1 = {askey} is not "
                      "guaranteed positive definite in dimension "
                      f"{n_features} (Askey's bound)", stacklevel=caller_stacklevel())
    return Kernel("compact_gaussian", sigma=sigma, power=float(power))


def _width_kernel(kernel, h, gamma):
    if h is not None and gamma is not None:
        raise ValueError("give either h or gamma, not both")
    if gamma is not None:
        gamma = check_positive(gamma, "gamma")
        h = math.sqrt(1.0 / (2.0 * gamma)) if kernel == "gaussian" else 1.0 / gamma
        if h == math.inf and kernel == "gaussian":  # 1 / (2 gamma) overflowed, h did not
            h = 1.0 / math.sqrt(2.0 * gamma)
        if h == math.inf:
            raise ValueError(f"gamma={gamma!r} is too small: the width h = 1/gamma "
                             "exceeds the float range; use gamma >= 1e-308")
    h = 1.0 if h is None else check_positive(h, "h")
    return Kernel(kernel, h=h)


def _dot_kernel(kernel, gamma, degree, coef0):
    """The polynomial ("poly": SVC's defaults; "linear": x . y) or the sigmoid kernel."""
    if kernel == "linear":
        return Kernel("polynomial", degree=1, coef0=0.0)
    scale = None if gamma is None else check_positive(gamma, "gamma")
    if kernel == "polynomial":  # hsskern's own: coef0 >= 0 keeps it positive definite
        coef0 = check_positive(1.0 if coef0 is None else coef0, "coef0", minimum=0.0)
    else:
        coef0 = _finite(0.0 if coef0 is None else coef0, "coef0")
    if kernel == "sigmoid":
        return Kernel("sigmoid", coef0=coef0, scale=scale)
    default = 2 if kernel == "polynomial" else 3
    degree = default if degree is None else check_positive(degree, "degree", integer=True,
                                                           minimum=1)
    return Kernel("polynomial", degree=degree, coef0=coef0, scale=scale)


def _finite(v, name):
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number, got {v!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return v
