"""
Accuracy and time along the C grid, against scikit-learn's SVC
==============================================================

``HSSSVC.fit_path`` solves a whole grid of C values on one preparation: each C starts from
the previous C's exact solution, scaled, so the later C values are cheap. scikit-learn's
:class:`~sklearn.svm.SVC` (LIBSVM) fits every C from scratch. Both reach LIBSVM's tolerance,
so their test accuracies agree at every C; the difference is the time.

This runs on a random subsample of the bundled ijcnn1 set, small enough for the
documentation build. The full-size comparison (with oneDAL, too) is on
:doc:`/benchmarks`.
"""
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import SVC

from hsskern import HSSSVC
from hsskern.datasets import load

X, y, X_test, y_test = load("ijcnn1")
rng = np.random.default_rng(0)
train = rng.choice(len(X), 4000, replace=False)
test = rng.choice(len(X_test), 4000, replace=False)
X, y, X_test, y_test = X[train], y[train], X_test[test], y_test[test]

Cs = np.logspace(-1, 3, 7)
h = 1.0  # hsskern's width; SVC's gamma = 1 / (2 h^2)

# %%
# The path: one call, one model per C. ``fit_time_`` of each model says what its C cost;
# the first model also carries the preparation.
start = time.perf_counter()
models = HSSSVC(h=h, random_state=0).fit_path(X, y, Cs)
hss_total = time.perf_counter() - start
hss_acc = [m.score(X_test, y_test) for m in models]
hss_time = np.array([sum(m.fit_time_.values()) for m in models])  # seconds per C

# %%
# SVC, one fit per C.
svc_acc, svc_time = [], []
for C in Cs:
    start = time.perf_counter()
    svc = SVC(C=C, gamma=1 / (2 * h**2)).fit(X, y)
    svc_time.append(time.perf_counter() - start)
    svc_acc.append(svc.score(X_test, y_test))
print(f"grid: HSSSVC {hss_total:.2f} s, SVC {sum(svc_time):.2f} s")
print("largest accuracy difference:", np.max(np.abs(np.subtract(hss_acc, svc_acc))))

# %%
# Accuracy per C (the two curves lie on each other) and the cumulative time of the grid.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.semilogx(Cs, hss_acc, "o-", label="HSSSVC.fit_path")
ax1.semilogx(Cs, svc_acc, "x--", label="SVC, one fit per C")
ax1.set(xlabel="C", ylabel="test accuracy", title="accuracy along the grid")
ax1.legend()
ax2.semilogx(Cs, np.cumsum(hss_time), "o-", label="HSSSVC.fit_path")
ax2.semilogx(Cs, np.cumsum(svc_time), "x--", label="SVC")
ax2.set(xlabel="C", ylabel="cumulative time [s]", title="time of the grid so far")
ax2.legend()
fig.tight_layout()
plt.show()
