"""Draw the figures of the benchmarks page (and the README's) into docs/_static/.

    python docs/_scripts/plot_benchmarks.py

The C-grid figure reads the result files named below; the other figures plot the figures of
the benchmarks page's tables, each with the result file it came from. Rerun after a suite's
new run, and update the page's table with it.
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "docs" / "_static"


def fits(path, backend):
    runs = json.loads((RESULTS / path).read_text())["runs"][backend]
    [(h, run)] = runs.items()
    C = np.array([f["C"] for f in run["fits"]])
    t = np.array([f["time"] for f in run["fits"]])
    acc = np.array([f["accuracy"] for f in run["fits"]]) * 100
    return C, t + np.r_[run["setup"]["total"], np.zeros(len(t) - 1)], acc


def c_grid():
    """ijcnn1, 10 C: hsskern and oneDAL back to back; LIBSVM from the day before."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for path, backend, label, style in [
            ("ijcnn1_ws_default_onedal.json", "hss", "hsskern HSSSVC.fit_path", "o-"),
            ("ijcnn1_ws_default_onedal.json", "onedal", "oneDAL SVC, a fit per C", "s-"),
            ("ijcnn1_symblock.json", "libsvm", "LIBSVM SVC, a fit per C (2026-11-27)", "x--")]:
        C, t, acc = fits(path, backend)
        ax1.semilogx(C, np.cumsum(t), style, label=f"{label}: {t.sum():.1f} s")
        ax2.semilogx(C, acc, style, label=label)
    ax1.set(xlabel="C", ylabel="cumulative time [s]",
            title="ijcnn1 (49,990 × 22), Gaussian h = 1: the C grid")
    ax1.legend(fontsize="small")
    ax2.set(xlabel="C", ylabel="test accuracy [%] (91,701 points)", ylim=(90, 99.2),
            title="the same accuracy at every C")
    ax2.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(OUT / "bench_c_grid_ijcnn1.png", dpi=110)


def regression():
    """Exact kernel ridge (CG, Nystrom preconditioner) against KernelRidge, 2026-11-29."""
    sets = ["protein\n(32,000 × 9)", "kin40k\n(32,000 × 8)", "california\n(16,512 × 8)",
            "pol\n(12,000 × 26)"]
    ours = [19.8, 79.5, 5.4, 3.8]
    sklearn = [262.6, 266.1, 42.1, 18.5]
    x = np.arange(len(sets))
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.bar(x - 0.2, sklearn, 0.4, label="scikit-learn KernelRidge")
    ax.bar(x + 0.2, ours, 0.4, label='HSSKernelRidge(solver="exact")')
    for i, (a, b) in enumerate(zip(sklearn, ours)):
        ax.text(i + 0.2, b, f"{a / b:.1f}×", ha="center", va="bottom")
    ax.set(xticks=x, xticklabels=sets, ylabel="fit [s]",
           title="kernel ridge, the same predictions (to 1e-10)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "bench_regression.png", dpi=110)


def hss():
    """HSS-ANN compression of gmm8(n) on two threads against STRUMPACK 8.0."""
    n = np.array([1e4, 5e4, 1e5, 5e5, 1e6])
    ours = np.array([0.38, 2.14, 5.11, 27.5, 57.9])
    ref_n, ref = np.array([1e4, 5e4, 1e5]), np.array([1.36, 17.1, 56.1])
    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.loglog(n, ours, "o-", label="hsskern compress (2 threads)")
    ax.loglog(ref_n, ref, "s--", label="STRUMPACK 8.0 HSS-ANN (2 threads)")
    ax.set(xlabel="n (gmm8, d = 8)", ylabel="compression [s]",
           title="HSS compression time against n")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "bench_hss.png", dpi=110)


def large_n():
    """gmm8(10^6), C = 1.67, h = 1: accuracy against wall time."""
    runs = [("ExactSVC(max_time=900)", 814, 95.07, "o"),
            ("ExactSVC on a random 5·10⁵", 654, 95.12, "s"),
            ("ExactSVC on a random 6·10⁵", 767, 95.27, "s"),
            ("ExactSVC, no budget (all 980,000)", 1874, 95.43, "D"),
            ("HSSSVC grid, solve_exact='auto' (ADMM)", 456, 90.29, "x")]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for label, t, acc, m in runs:
        ax.plot(t, acc, m, ms=8, label=f"{label}: {acc:.2f} %")
    ax.set(xlabel="wall time [s]", ylabel="test accuracy [%]", ylim=(89.5, 96),
           title="gmm8(10⁶): the exact SVM against time")
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    fig.savefig(OUT / "bench_large_n.png", dpi=110)


def dask():
    """Two single-threaded workers against serial, on a 2-core machine."""
    labels = ["DaskHSSSVCCV\nijcnn1, 4 h × 10 C", "DaskExactSVC\ngmm8(2·10⁵), C = 1"]
    serial, dask_ = [60.3, 52.7], [32.4, 60.9]
    x = np.arange(2)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.bar(x - 0.2, serial, 0.4, label="serial (2 threads)")
    ax.bar(x + 0.2, dask_, 0.4, label="Dask, 2 workers × 1 thread")
    ax.set(xticks=x, xticklabels=labels, ylabel="wall time [s]",
           title="Dask on one 2-core machine")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "bench_dask.png", dpi=110)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for draw in (c_grid, regression, hss, large_n, dask):
        draw()
        plt.close("all")
