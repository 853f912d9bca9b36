"""Run-time dispatch: which build of the vector-bound extension modules this CPU runs.

The default build is portable (x86-64 baseline: SSE2, so the vectorized exp() of the kernel
tiles and the block SMO's passes run 2 wide). setup.py also compiles those modules for
x86-64-v3 (AVX2+FMA) and x86-64-v4 (AVX-512) as ``<module>_v3`` and ``<module>_v4``. The level
is decided once, here, at import, and every importing site asks :func:`load` for its module,
so one process never mixes levels. ``HSSKERN_CPU=baseline|v3|v4`` lowers the level (for tests
and benchmarks); it cannot raise it above what the CPU runs, since a wider build dies with
SIGILL there.
"""
import importlib
import os
import warnings

ENV = "HSSKERN_CPU"
LEVELS = ("baseline", "v3", "v4")  # ascending; the suffixes setup.py builds

# x86-64 psABI levels as /proc/cpuinfo spells their flags ("abm" is how Linux reports LZCNT)
_V3 = frozenset({"avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm"})
_V4 = _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


def cpuinfo_flags(text):
    """The flags every processor listed in a /proc/cpuinfo text has (empty if none listed)."""
    sets = [set(line.split(":", 1)[1].split()) for line in text.splitlines()
            if line.split(":", 1)[0].strip() == "flags" and ":" in line]
    return set.intersection(*sets) if sets else set()


def level_of(flags):
    """The highest level whose instructions are all in ``flags``."""
    flags = set(flags)
    if _V4 <= flags:
        return "v4"
    if _V3 <= flags:
        return "v3"
    return "baseline"


def detected_level(path="/proc/cpuinfo"):
    """This CPU's level; baseline whenever it cannot be read (not Linux, no procfs, ...)."""
    try:
        with open(path) as f:
            return level_of(cpuinfo_flags(f.read()))
    except (OSError, UnicodeDecodeError):
        return "baseline"


def chosen_level(environ=os.environ, detected=None):
    """The level to run: the detected one, lowered by ``HSSKERN_CPU`` when that is set."""
    detected = detected_level() if detected is None else detected
    requested = environ.get(ENV, "").strip().lower()
    if not requested:
        return detected
    if requested not in LEVELS:
        raise ValueError(f"{ENV}={requested!r}: set it to one of {', '.join(LEVELS)}, "
                         f"or unset it to use the best level this CPU runs")
    if LEVELS.index(requested) > LEVELS.index(detected):
        warnings.warn(f"{ENV}={requested}: this CPU runs only {detected}; using {detected}",
                      RuntimeWarning, stacklevel=2)
        return detected
    return requested


LEVEL = chosen_level()


def load(name, level=None):
    """Module ``name`` (e.g. ``"hsskern.kernels._eval"``) in the widest build this CPU runs.

    Falls back level by level to the base module: a native build, a non-x86 platform or a
    compiler that refused ``-march=x86-64-v4`` leaves some or all variants unbuilt.
    """
    level = LEVEL if level is None else level
    for lvl in reversed(LEVELS[1:LEVELS.index(level) + 1]):
        try:
            return importlib.import_module(f"{name}_{lvl}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{name}_{lvl}":  # a variant that is there but broken must show
                raise
    return importlib.import_module(name)
