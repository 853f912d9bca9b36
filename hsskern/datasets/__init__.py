"""Bundled data sets, the benchmark sets (found in a cache or ``../shared/datasets``, else
downloaded from their public source, sha256-checked), and loaders."""
from ._fetch import (DATA_ENV, ChecksumError, DataUnavailableError, download_file,
                     fetch, find, get_data_home)
from ._load import BUNDLED, load
from ._sources import SOURCES, arrays_sha256

__all__ = ["BUNDLED", "SOURCES", "DATA_ENV", "load", "fetch", "find",
           "get_data_home",
           "download_file", "arrays_sha256", "DataUnavailableError", "ChecksumError"]
