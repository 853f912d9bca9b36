"""``python -m bench SUITE [options]`` (or ``python bench/run.py SUITE ...``): one harness.

``python -m bench list`` names the suites; ``python -m bench SUITE --help`` their options.

A suite is a module in :data:`SUITES` with

* ``DESCRIPTION`` (one line),
* ``add_arguments(parser)``: its options (the shared ones are added here),
* ``run(args, bench)``: measures through ``bench`` (:class:`bench.harness.Bench`:
  ``bench.measure(task, system, data_spec, params, repeat)`` runs one system in a fresh
  process, ``bench.add_case(...)`` records a case) and returns the result's name, or None
  when there was nothing to run (a data set that cannot be found nor fetched raises
  :class:`bench.harness.DataUnavailable`: an error naming its source, exit 1),
* optionally ``plot(result, path)`` (default: :func:`bench.harness.plot_cases`).

A plain script with only ``main(argv)`` can be registered too: it then runs as it is, with
its own arguments and output (no shared schema), until it is given ``run``.

A run writes its JSON and PNG to a new run directory, ``./bench-runs/<UTC time>_<suite>/`` in
the current directory (``--out DIR`` to choose another); only ``--record`` writes to
``bench/results/``, the tracked records the documentation cites.
"""
import argparse
import importlib
import sys
from datetime import datetime, timezone
from pathlib import Path

if __package__ in (None, ""):  # python bench/run.py: import the package from the checkout
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.harness import RESULTS, Bench, DataUnavailable  # noqa: E402

# name -> module. To add a suite: write the module (the interface above) and add a line.
SUITES = {
    "c_grid": "bench.suites.c_grid",
    "regression": "bench.suites.regression",
    "hss": "bench.suites.hss",
    "large_n": "bench.suites.large_n",
    "dask": "bench.suites.dask",
    "one_class": "bench.suites.one_class",
    "warm_start": "bench.suites.warm_start",
    "calibration": "bench.suites.calibration",
    "compete": "bench.suites.compete",
}


def _description(mod):
    return getattr(mod, "DESCRIPTION", None) or (mod.__doc__ or "").strip().split("\n")[0]


def _parser(name, mod):
    p = argparse.ArgumentParser(prog=f"python -m bench {name}", description=_description(mod))
    g = p.add_argument_group("shared")
    g.add_argument("--repeat", type=int, default=1, help="repeats per system (median kept)")
    g.add_argument("--timeout", type=float, default=None,
                   help="seconds a system's process may take (then: status 'timeout')")
    g.add_argument("--tag", default="", help="suffix of the result file names")
    out = g.add_mutually_exclusive_group()
    out.add_argument("--out", type=Path, default=None,
                     help="result directory (default: a new ./bench-runs/<UTC time>_<suite>)")
    out.add_argument("--record", action="store_true",
                     help=f"write to the tracked records the docs cite ({RESULTS})")
    mod.add_arguments(p)
    return p


def _out_dir(name, args):
    if args.record:
        return RESULTS
    if args.out is not None:
        return args.out
    # a run never overwrites another: one new directory each, named by its start
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return Path.cwd() / "bench-runs" / f"{stamp}_{name}"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(__doc__.split("\n")[0] + "\n\nsuites:")
        for name, path in SUITES.items():
            print(f"  {name:<12} {_description(importlib.import_module(path))}")
        return 0
    name = argv[0]
    if name not in SUITES:
        print(f"unknown suite {name!r}; known: {', '.join(SUITES)}", file=sys.stderr)
        return 2
    mod = importlib.import_module(SUITES[name])
    if not hasattr(mod, "run"):  # a plain script registered as it is
        return mod.main(argv[1:]) or 0
    args = _parser(name, mod).parse_args(argv[1:])
    bench = Bench(name, argv, {k: (str(v) if isinstance(v, Path) else v)
                               for k, v in vars(args).items()},
                  out_dir=_out_dir(name, args), tag=args.tag, timeout=args.timeout)
    try:
        result_name = mod.run(args, bench)
    except DataUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if result_name is None:
        return 0
    bench.summary()
    bench.write(result_name, getattr(mod, "plot", None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
