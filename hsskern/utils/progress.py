"""A progress line on stderr for long loops (compression, C grids); silent unless verbose."""
import sys
import time


class Progress:
    """Minimal progress bar: ``update()`` per step, redrawn at most every 0.5 s.

    Shown only when ``verbose >= 1`` and ``total >= min_total`` (short loops stay quiet).
    """

    def __init__(self, total, label, verbose=0, min_total=1, stream=None):
        self.total = max(int(total), 1)
        self.label = label
        self.count = 0
        self.enabled = verbose >= 1 and total >= min_total
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()
        self._last = 0.0

    def update(self, k=1, info=""):
        self.count += k
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.5 and self.count < self.total:
            return
        self._last = now
        frac = self.count / self.total
        bar = "#" * int(30 * frac)
        self.stream.write(f"\r{self.label}: [{bar:<30}] {100 * frac:5.1f}% "
                          f"{now - self.t0:7.1f} s {info}")
        self.stream.flush()

    def close(self):
        if self.enabled:
            self.update(0)
            self.stream.write("\n")
            self.stream.flush()
