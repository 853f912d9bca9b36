"""Estimate before allocating: refuse a request that cannot fit, with the estimate in the message."""
import os

from ..exceptions import MemoryBudgetError


def available_memory():
    """Bytes this process can still take: the least of what the OS reports as available
    (MemAvailable), what an address-space limit (``ulimit -v``) leaves beside the process's
    current size, and what a cgroup v2 limit (a container) leaves; None if none is known."""
    limits = [v for v in (_os_available(), _address_space_left(), _cgroup_left())
              if v is not None]
    return max(0, min(limits)) if limits else None


def _os_available():
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


def _address_space_left():
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status") as f:
            size = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
        return soft - size
    except (ImportError, OSError, ValueError, StopIteration):
        return None


def _cgroup_left():
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            cap = f.read().strip()
        if cap == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as f:
            return int(cap) - int(f.read().strip())
    except (OSError, ValueError):
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
