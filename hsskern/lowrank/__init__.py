"""Low-rank (Nystrom) approximations: feature maps from landmark points, and randomly
pivoted Cholesky factors."""
from .landmarks import select_landmarks
from .nystrom import NystromFeatures, NystromMap, nystrom_features, nystrom_map
from .rpcholesky import RPCholesky, nystrom_on_pivots, rp_cholesky

__all__ = ["select_landmarks", "NystromFeatures", "NystromMap", "nystrom_features", "nystrom_map",
           "rp_cholesky", "nystrom_on_pivots", "RPCholesky"]
