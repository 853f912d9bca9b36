"""
``ExactSVC``: the certified gap over time
=========================================

:class:`~hsskern.ExactSVC` solves a random subsample exactly, then grows the problem in
stages (doubling the points) up to all training points; each stage is LIBSVM's
decomposition started from the last stage's solution padded with zeros. Every point it
passes through is feasible and its KKT gap (LIBSVM's stopping measure) is known, so the fit
can stop at any time. ``history_`` records, for each point whose gap is known exactly, the
seconds since the start, the stage's size, the gap over the stage's points and the
validation accuracy. The validation points are held out only under a time budget (which
needs them to choose among its anytime models), so the first fit takes a generous one.

A second fit with ``max_time`` set to half of the first one's time stops early: it returns
the best point on the held-out points, and ``gap_`` certifies it over all training points.
"""
import matplotlib.pyplot as plt
import numpy as np

from hsskern import ExactSVC, ExactSVCOptions
from hsskern.datasets import load

X, y, _, _ = load("ijcnn1")
X, y = X[:12000], y[:12000]

full = ExactSVC(h=1.0, C=10.0, options=ExactSVCOptions(subsample=1000), max_time=3600.0,
                random_state=0).fit(X, y)
seconds, size, gap, accuracy = np.array(full.history_[0]).T
print("stages:", full.stages_, "selected:", full.selected_, f"gap {full.gap_[0]:.2e}")

budget = 0.5 * seconds[-1]
early = ExactSVC(h=1.0, C=10.0,
                 options=ExactSVCOptions(subsample=1000), max_time=budget, random_state=0).fit(X, y)
print(f"max_time={budget:.1f} s: selected {early.selected_[0]!r}, certified gap "
      f"{early.gap_[0]:.3g}, converged {bool(early.converged_[0])}")

# %%
# Each stage starts with a large gap (its new points enter at zero) and brings it under
# ``tol`` (dashed); validation accuracy rises from stage to stage.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
for m in np.unique(size):
    on = size == m
    ax1.semilogy(seconds[on], gap[on], "o-", label=f"stage of {int(m)} points")
    ax2.plot(seconds[on], accuracy[on], "o-", label=f"stage of {int(m)} points")
ax1.axhline(full.tol, color="k", ls="--", label=f"tol = {full.tol:g}")
ax1.axvline(budget, color="C7", ls=":", label=f"max_time = {budget:.1f} s")
ax1.set(xlabel="seconds since the start of the fit", ylabel="KKT gap over the stage",
        title="the exact decomposition, stage by stage")
ax1.legend(fontsize="small")
ax2.axvline(budget, color="C7", ls=":")
ax2.set(xlabel="seconds since the start of the fit", ylabel="validation accuracy",
        title="accuracy of every certified point")
ax2.legend(fontsize="small")
fig.tight_layout()
plt.show()
