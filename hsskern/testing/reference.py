"""Naive numpy kernels: the reference the compiled evaluator is tested against (small n only)."""
import numpy as np


def reference_kernel(kernel, X, Y=None):
    """Dense k(X_i, Y_j) by broadcasting, straight from the formulas in ``kernels.functions``."""
    Y = X if Y is None else Y
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if kernel.name == "polynomial":
        return (kernel.coef0 + kernel.dot_scale * (X @ Y.T)) ** kernel.degree
    if kernel.name == "sigmoid":
        return np.tanh(kernel.coef0 + kernel.dot_scale * (X @ Y.T))
    d2 = np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1)
    if kernel.name == "gaussian":
        return np.exp(-d2 / (2.0 * kernel.h ** 2))
    if kernel.name == "laplacian":
        return np.exp(-np.sqrt(d2) / kernel.h)
    r = np.sqrt(d2)
    return np.maximum(1.0 - r / (3.0 * kernel.sigma), 0.0) ** kernel.power * \
        np.exp(-d2 / (2.0 * kernel.sigma ** 2))
