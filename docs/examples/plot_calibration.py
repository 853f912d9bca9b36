"""
Calibration of ``predict_proba``
================================

With ``probability=True`` every hsskern classifier fits Platt's sigmoid
P(y = 1 | f) = 1 / (1 + exp(A f + B)) on decision values of five internal cross-validation
folds, as LIBSVM does. A calibration curve bins the test points by their predicted
probability and compares each bin's mean prediction with the fraction of positives in it: a
calibrated model lies on the diagonal. LIBSVM's curve (the same sigmoid on five folds, through
:class:`~sklearn.calibration.CalibratedClassifierCV`) is drawn for comparison.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import CalibratedClassifierCV, calibration_curve
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.svm import SVC

from hsskern import HSSSVC
from hsskern.datasets import load

X, y, X_test, y_test = load("ijcnn1")
rng = np.random.default_rng(0)
train = rng.choice(len(X), 3000, replace=False)
test = rng.choice(len(X_test), 5000, replace=False)
X, y, X_test, y_test = X[train], y[train], X_test[test], y_test[test]

clf = HSSSVC(h=1.0, C=10.0, probability=True, random_state=0).fit(X, y)
# scikit-learn's spelling of LIBSVM's Platt scaling (SVC(probability=True) is deprecated)
svc = CalibratedClassifierCV(SVC(C=10.0, gamma=0.5), method="sigmoid", cv=5,
                             ensemble=False).fit(X, y)

fig, ax = plt.subplots(figsize=(5.5, 5))
ax.plot([0, 1], [0, 1], "k--", label="perfectly calibrated")
for name, model in [("HSSSVC", clf), ("SVC (LIBSVM)", svc)]:
    proba = model.predict_proba(X_test)[:, 1]
    positive = y_test == model.classes_[1]
    frac, mean = calibration_curve(positive, proba, n_bins=10, strategy="quantile")
    ax.plot(mean, frac, "o-", label=f"{name}: Brier {brier_score_loss(positive, proba):.4f}, "
                                    f"log-loss {log_loss(positive, proba):.4f}")
ax.set(xlabel="mean predicted probability", ylabel="fraction of positives",
       title="calibration on held-out points")
ax.legend(loc="upper left", fontsize="small")
fig.tight_layout()
plt.show()
