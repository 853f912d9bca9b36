"""Low-rank (Nystrom) feature maps from landmark points."""
