"""Shared helpers for the benchmark scripts: timing medians, peak memory, result files."""
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def rss_bytes(field="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def measure(fn, repeat=3):
    """Run fn ``repeat`` times; return (median seconds, peak extra RSS bytes, last result).

    Peak RSS is reset through /proc/self/clear_refs before each run, so the figure is the
    high-water mark of this call above the resident size it started from.
    """
    times, peaks, out = [], [], None
    for _ in range(repeat):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
        base = rss_bytes()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        peaks.append(max(0, rss_bytes("VmHWM") - base))
    return statistics.median(times), max(peaks), out


def load_shared(name):
    path = SHARED / f"{name}.npz"
    if not path.exists():
        return None
    d = np.load(path)
    return d["X_train"], d["y_train"], d["X_test"], d["y_test"]


def machine():
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__}


def write_result(name, payload):
    RESULTS.mkdir(exist_ok=True)
    payload = {"benchmark": name, "date": time.strftime("%Y-%m-%d %H:%M"),
               "machine": machine(), **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path
