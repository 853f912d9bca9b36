"""Estimate before allocating: refuse a request that cannot fit, with the estimate in the message."""
import os

from ..exceptions import MemoryBudgetError


def available_memory():
    """Bytes of memory the OS reports as available (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n):
    n = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024


def check_memory(nbytes, what, budget=None, hint=""):
    """Raise MemoryBudgetError if ``nbytes`` exceeds ``budget`` (default: 80% of available)."""
    budget = resolve_budget(budget)
    if budget is None:
        return
    if nbytes > budget:
        msg = (f"{what} would need about {format_bytes(nbytes)}, more than the "
               f"{format_bytes(budget)} allowed")
        if hint:
            msg += f"; {hint}"
        raise MemoryBudgetError(msg)


def resolve_budget(budget=None):
    """The budget in bytes: ``budget`` itself, or 80% of the available memory (None when the
    OS does not say), the default of every ``memory_budget`` parameter."""
    if budget is not None:
        return float(budget)
    avail = available_memory()
    return None if avail is None else 0.8 * avail


def chunk_rows(n_rows, out_per_row, work_per_row, budget=None, what="prediction", hint=""):
    """Rows per chunk of a row-wise computation whose output (``out_per_row`` bytes a row) is
    held whole and whose working memory (``work_per_row`` bytes a row) is held one chunk at a
    time: as many as ``budget`` (default 80% of the available memory) holds beside the output.

    Raises MemoryBudgetError, with the estimate, when not even the output and a chunk of one
    row fit; returns ``n_rows`` (one chunk) when the budget is unknown or holds them all.
    """
    n_rows = int(n_rows)
    budget = resolve_budget(budget)
    if budget is None or n_rows == 0:
        return max(n_rows, 1)
    out = float(out_per_row) * n_rows
    per = max(float(work_per_row), 1.0)
    check_memory(out + per, f"{what} ({format_bytes(out)} of output for {n_rows} rows and "
                 f"{format_bytes(per)} of working memory per row, in chunks of one row at "
                 "least)", budget, hint=hint or "predict fewer rows at a time, or raise "
                 "memory_budget")
    return int(max(1, min(n_rows, (budget - out) // per)))
