"""Low-rank (Nystrom) feature maps from landmark points."""
from .landmarks import select_landmarks
from .nystrom import NystromFeatures

__all__ = ["select_landmarks", "NystromFeatures"]
