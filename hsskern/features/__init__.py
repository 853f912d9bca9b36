"""Explicit feature maps (polynomial features on centers for FPC)."""
from .polynomial import PolynomialFeatureMap, fit_polynomial_features, n_centers

__all__ = ["PolynomialFeatureMap", "fit_polynomial_features", "n_centers"]
