"""The warning of an exact (LIBSVM-style) solver stopped at ``max_iter``: scikit-learn's
SVC, NuSVC, NuSVR and OneClassSVM raise a ``ConvergenceWarning`` then, besides
``fit_status_ = 1``, and so do their hsskern counterparts."""
import warnings

from sklearn.exceptions import ConvergenceWarning

__all__ = ["warn_stopped_early"]


def warn_stopped_early(estimator, n_stopped, n_problems, stacklevel=3):
    """One ``ConvergenceWarning`` for ``n_stopped`` of ``n_problems`` dual problems that
    stopped at ``estimator.max_iter`` (None: LIBSVM's max(10^7, 100 l)) before their KKT
    gap reached ``estimator.tol``; nothing when none did."""
    if not n_stopped:
        return
    limit = ("LIBSVM's default max(10^7, 100 n)" if estimator.max_iter is None
             else f"max_iter={estimator.max_iter}")
    warnings.warn(f"{type(estimator).__name__}: the solver terminated early ({limit}) on "
                  f"{n_stopped} of {n_problems} problem(s), before the KKT gap reached "
                  f"tol={estimator.tol:g} (fit_status_=1): raise max_iter, or scale the "
                  f"features (StandardScaler or MinMaxScaler), as scikit-learn advises",
                  ConvergenceWarning, stacklevel=stacklevel)
