"""Where the hss backend's C path spends its time, from a bench/c_grid.py JSON.

    python bench/c_grid_profile.py bench/results/ijcnn1_issue22.json [--markdown]

Per C: the ADMM (first C only, unless a C is not refined), the exact decomposition's phases
(``start``: the first exact decision values; ``select``: KKT scan and working-set choice;
``block``: the working sets' kernel blocks; ``smo``; ``newton``; ``update``: the decision
values at all n points after each round), its rounds, and the kernel entries it evaluated
against a lower bound: n x n_SV, what one exact decision-value pass at the solution costs.
The setup (compression, factorization) is printed once.
"""
import argparse
import json
from pathlib import Path

PHASES = ("start", "select", "block", "smo", "newton", "update")


def rows(run):
    out = []
    for f in run["fits"]:
        rf = f.get("refine") or {}
        t = rf.get("timings") or {}
        e = rf.get("kernel_entries") or {}
        evaluated = sum(v for k, v in e.items() if k != "block_reused")
        lb = rf.get("lower_bound_entries") or 0
        out.append({"C": f["C"], "time": f["time"], "admm": f.get("admm_time", 0.0),
                    "refine": f.get("refine_time", 0.0), "rounds": rf.get("rounds", 0),
                    **{p: t.get(p, 0.0) for p in PHASES},
                    "evaluated": evaluated, "reused": e.get("block_reused", 0),
                    "block_entries": e.get("block", 0), "update_entries": e.get("update", 0),
                    "lower_bound": lb, "ratio": evaluated / lb if lb else float("nan"),
                    "n_support": f.get("n_support", 0)})
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("result")
    p.add_argument("--h", default=None)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    d = json.loads(Path(args.result).read_text())
    key = str(float(args.h)) if args.h else str(float(d["h"][0]))
    run = d["runs"]["hss"][key]
    setup = run["setup"]
    print(f"{d['dataset']} h={float(key):g}: setup " + ", ".join(
        f"{k} {v:.2f} s" for k, v in setup.items()) + f"; grid {run['grid_time']:.2f} s; load "
        f"{run.get('loadavg_before', [float('nan')])[0]:.1f} -> "
        f"{run.get('loadavg_after', [float('nan')])[0]:.1f}")
    rs = rows(run)
    cols = ["C", "time", "admm", "rounds", *PHASES, "n_support", "evaluated", "reused",
            "lower_bound", "ratio"]
    fmt = {"C": "{:.3g}", "rounds": "{:d}", "n_support": "{:d}", "evaluated": "{:.3g}",
           "reused": "{:.3g}", "lower_bound": "{:.3g}", "ratio": "{:.1f}"}
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    else:
        print("".join(f"{c:>11}" for c in cols))
    tot = {c: 0.0 for c in cols}
    for r in rs:
        cells = [fmt.get(c, "{:.2f}").format(r[c]) for c in cols]
        for c in cols[1:]:
            tot[c] += r[c]
        print(("| " + " | ".join(cells) + " |") if args.markdown
              else "".join(f"{x:>11}" for x in cells))
    tot["ratio"] = tot["evaluated"] / tot["lower_bound"] if tot["lower_bound"] else float("nan")
    cells = ["all"] + [fmt.get(c, "{:.2f}").format(int(tot[c]) if fmt.get(c) == "{:d}" else tot[c])
                       for c in cols[1:]]
    print(("| " + " | ".join(cells) + " |") if args.markdown
          else "".join(f"{x:>11}" for x in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
