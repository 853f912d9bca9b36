"""The version, from one source: pyproject.toml's, as the installed package's metadata holds it."""
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _metadata_version


def version():
    try:
        return _metadata_version("hsskern")
    except PackageNotFoundError:  # imported from a checkout that was never installed
        return "0+unknown"
