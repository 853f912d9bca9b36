"""Bundled data sets and loaders."""
from ._load import BUNDLED, load

__all__ = ["BUNDLED", "load"]
