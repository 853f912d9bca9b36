"""One figure per data set from bench/c_grid.py results: test accuracy and time per C for
hsskern, oneDAL and LIBSVM (any backend the JSONs hold).

    python bench/plot_c_grid.py bench/results/ijcnn1_issue22.json [more.json ...] \
        [--out docs/figures] [--h 1]

Several JSONs of the same data set (e.g. LIBSVM's grid measured in separate invocations) are
merged: a backend's fits are taken from the first file that has them, and fits at the same C
from later files fill C values the first one lacks. hsskern's time per C is its fit time for
that C; its one-off setup (compression + factorization) is drawn as a separate marker at the
left and added to its first C in the cumulative panel, so the panels answer both "what does
one C cost" and "what does the grid cost up to this C".
"""
import argparse
import json
from pathlib import Path

import numpy as np

STYLE = {"hss": ("hsskern", "C0", "o"), "onedal": ("oneDAL SVC", "C1", "s"),
         "libsvm": ("LIBSVM (sklearn SVC)", "C2", "^")}


def collect(paths, h=None):
    """{dataset: {"h": h, "n": (n_train, d), "backends": {name: {C: fit}}, "setup": {...},
    "load": {...}}} from c_grid JSONs."""
    out = {}
    for path in paths:
        d = json.loads(Path(path).read_text())
        key = str(float(h)) if h is not None else str(float(d["h"][0]))
        entry = out.setdefault(d["dataset"], {"h": key, "n": (d["n_train"], d["n_features"]),
                                              "backends": {}, "setup": {}, "load": {}})
        for b, runs in d["runs"].items():
            r = runs.get(key)
            if not r or "fits" not in r:
                continue
            fits = entry["backends"].setdefault(b, {})
            for f in r["fits"]:
                fits.setdefault(round(f["C"], 12), f)
            entry["setup"].setdefault(b, r["setup"].get("total", 0.0))
            if "loadavg_before" in r:
                entry["load"].setdefault(b, []).extend(
                    [r["loadavg_before"][0], r["loadavg_after"][0]])
    return out


def plot(name, entry, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_acc, ax_t, ax_cum) = plt.subplots(1, 3, figsize=(13.5, 3.8))
    for b, fits in entry["backends"].items():
        label, color, marker = STYLE.get(b, (b, None, "x"))
        Cs = np.array(sorted(fits))
        acc = np.array([100 * fits[c]["accuracy"] for c in Cs])
        t = np.array([fits[c]["time"] for c in Cs])
        ax_acc.semilogx(Cs, acc, marker=marker, color=color, label=label, alpha=0.85)
        ax_t.loglog(Cs, t, marker=marker, color=color, label=label)
        setup = entry["setup"].get(b, 0.0)
        if setup > 0:
            ax_t.scatter([Cs[0] / 3], [setup], marker="*", s=90, color=color,
                         label=f"{label}: setup (once)")
        ax_cum.semilogx(Cs, setup + np.cumsum(t), marker=marker, color=color,
                        label=f"{label}: {setup + t.sum():.0f} s")
    n, d = entry["n"]
    load = ", ".join(f"{STYLE.get(b, (b,))[0].split(' ')[0]} {min(v):.1f}-{max(v):.1f}"
                     for b, v in entry["load"].items())
    ax_acc.set(xlabel="C", ylabel="test accuracy [%]", title=f"{name} (n={n:,}, d={d}), "
               f"h={float(entry['h']):g}")
    ax_t.set(xlabel="C", ylabel="fit time per C [s]", title="time per C")
    ax_cum.set(xlabel="C", ylabel="cumulative [s]", title="grid time so far")
    for ax in (ax_acc, ax_t, ax_cum):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if load:  # the machine is shared: every figure says under what load it was measured
        fig.text(0.5, 0.01, f"load average during the runs: {load}", ha="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="+", help="bench/c_grid.py JSON files")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"),
                   help="directory of the PNGs (<dataset>_c_grid.png)")
    p.add_argument("--h", type=float, default=None, help="kernel width (default: the first)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, entry in collect(args.results, args.h).items():
        print(f"wrote {plot(name, entry, out / f'{name}_c_grid.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
