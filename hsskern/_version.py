"""The version, from one source: pyproject.toml's, as the installed package's metadata holds it."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hsskern")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"
