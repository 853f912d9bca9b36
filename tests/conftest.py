import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# CI runs derandomized so a red run is reproducible; locally examples vary run to run.
settings.register_profile("ci", derandomize=True, max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE",
                                                                          "dev"))

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def pytest_collection_modifyitems(items):
    # every user of the fixture reads ../shared: CI runs them once more without it (-m shared_data)
    for item in items:
        if "shared_dataset" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)


@pytest.fixture
def shared_dataset():
    """Load a benchmark set already on this machine (the data cache, then
    ``../shared/datasets``: :func:`hsskern.datasets.find`), or skip: a test never downloads."""
    from hsskern.datasets import find

    def load(name):
        path = find(name)
        if path is None:
            pytest.skip(f"{name} is neither in the data cache nor in {SHARED_DATASETS}")
        d = np.load(path)
        return d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    return load
