"""Low-rank (Nystrom) feature maps from landmark points."""
from .landmarks import select_landmarks
from .nystrom import NystromFeatures, NystromMap, nystrom_features, nystrom_map

__all__ = ["select_landmarks", "NystromFeatures", "NystromMap", "nystrom_features", "nystrom_map"]
