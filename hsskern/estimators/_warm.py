"""``warm_start=True``: a refit starts from the previous fit's dual solution.

Every fit keeps what a refit starts from (:class:`WarmState`): the support vectors (the
model's own rows; every other point had alpha = 0, so they are the whole solution), their
coefficients per label column, their classes, the C, the kernel and what else the dual
depends on (features, classes, the multiclass rule, the kernel's parameters as given). A fit
with ``warm_start=True`` also keeps the decision values of its training rows and a 128-bit
key per row (O(n) more memory): a refit with the same kernel then reads the decision values
of the rows it shares instead of recomputing them (the n x n_SV product that would otherwise
cost about half a cold fit).

A refit (:func:`warm_start`) finds each previous support vector among the new rows by its
values and its label (:func:`~hsskern.solvers.paths.warm.row_keys`: rows appended, removed or
reordered need no index from the user), and
:func:`~hsskern.solvers.paths.warm.carry_start` makes the start: the coefficients scaled by
C_new / C_old, every other row at 0, clipped to the new box (a new C, new weights),
sum y_i alpha_i = 0 restored by lowering the heavier side's free alphas, with exact
decision values. The exact decomposition solves from it; any feasible start reaches the
cold fit's optimum, to ``tol``.

A refit whose previous solution does not map (no previous fit, other features, classes,
multiclass rule or kernel parameters, a precomputed kernel, none of the support vectors
among the new rows, a fit that solves no C exactly) is a cold fit, and says why
(``verbose`` and ``warm_start_info_``).
"""
from typing import NamedTuple

import numpy as np

from ..solvers.paths.pairwise import class_pairs
from ..solvers.engines.exact import ExactResult
from ..solvers.paths.warm import carry_start, match_keys, row_keys

__all__ = ["WarmState", "warm_state", "warm_start"]

#: the parameters of the kernel as given (gamma="scale" stays "scale": the width it resolves
#: to on the new rows moves a little, and any feasible start reaches the new optimum)
_KERNEL_PARAMS = ("kernel", "gamma", "h", "degree", "coef0")


class WarmState(NamedTuple):
    """What a refit with ``warm_start=True`` starts from."""

    rows: object
    """The support vectors, (n_SV, d): dense or sparse rows, as the model keeps them."""
    coef: np.ndarray
    """(n_SV, r): per label column y alpha (classifier) or alpha - alpha* (SVR)."""
    labels: object
    """(n_SV,) class index of each support vector, or None (a regressor)."""
    C: float
    key: tuple
    """What else the dual depends on (:func:`_fingerprint`)."""
    kernel: object
    """The fit's kernel (its width resolved)."""
    pairwise: bool
    """One-vs-one: column p is pair p's problem, on its two classes' rows."""
    row_keys: object = None
    """(n, 2) keys of the training rows (:func:`~hsskern.solvers.paths.warm.row_keys`), or None."""
    support: object = None
    """(n_SV,) the support vectors' indices among those rows (with ``row_keys``)."""
    row_labels: object = None
    """(n,) their class indices (None for a regressor)."""
    decision: object = None
    """Per label column, K c on the column's rows (:func:`_members`), or None."""


def _fingerprint(est, data):
    """Features, classes, multiclass rule and kernel parameters (as given) of a fit: a refit
    with a different one does not map."""
    params = est.get_params(deep=False)
    kernel = tuple((k, params[k]) for k in _KERNEL_PARAMS if k in params)
    classes = None if data.classes is None else tuple(np.asarray(data.classes).tolist())
    rule = est._multiclass_rule() if hasattr(est, "_multiclass_rule") else None
    return (type(est).__name__, data.X.shape[1], classes, rule, kernel)


def _labels(data):
    """The class index of each row of a classifier's fit data; None for a regressor."""
    if data.classes is None:
        return None
    Y = data.Y
    return (Y[:, 0] > 0).astype(np.intp) if Y.shape[1] == 1 else np.argmax(Y, axis=1)


def _members(labels, n, r, pairwise):
    """(n, r) bool: the rows of each label column's problem (one-vs-one: a pair's two
    classes; otherwise every row)."""
    if not pairwise:
        return np.ones((n, r), dtype=bool)
    k = int(round((1 + np.sqrt(1 + 8 * r)) / 2))  # r = k (k - 1) / 2 pairs
    pairs = class_pairs(k)
    return np.column_stack([(labels == i) | (labels == j) for i, j in pairs])


def _decisions(solution, members):
    """Each column's decision values K c on its rows from an exact solution's decomposition
    results, or None when there are none (the ADMM's answer) or they do not fit."""
    refs = solution.info.get("exact")
    refs = (refs,) if isinstance(refs, ExactResult) else refs
    if not isinstance(refs, tuple) or len(refs) != members.shape[1]:
        return None
    out = []
    for j, rr in enumerate(refs):
        if (not isinstance(rr, ExactResult) or rr.skipped or rr.decision is None
                or np.shape(rr.decision) != (int(members[:, j].sum()),)):
            return None
        out.append(np.asarray(rr.decision, dtype=np.float64) - rr.bias)
    return tuple(out)


def warm_state(est, data, model, solution):
    """The :class:`WarmState` of a fitted model; None for a model no refit maps (no
    support vectors, no C, a precomputed kernel). With ``est.warm_start`` it also holds
    the training rows' keys and decision values."""
    if not all(hasattr(model, a) for a in ("support", "support_vectors", "dual_coef")):
        return None
    C = getattr(est, "C", None)
    if C is None or getattr(est, "kernel", None) == "precomputed":
        return None
    coef = np.ascontiguousarray(np.asarray(model.dual_coef).T)  # (n_SV, r)
    labels = _labels(data)
    pairwise = bool(getattr(est, "_pairwise", False))
    state = WarmState(model.support_vectors, coef,
                      None if labels is None else labels[model.support], float(C),
                      _fingerprint(est, data), model.kernel, pairwise)
    if not getattr(est, "warm_start", False):
        return state
    members = _members(labels, data.X.shape[0], coef.shape[1], pairwise)
    decision = _decisions(solution, members)
    if decision is None:
        return state
    # the keys a warm refit computed for these rows already (:func:`warm_start`)
    keys = est.__dict__.pop("_warm_keys", None)
    if keys is None or keys.shape[0] != data.X.shape[0]:
        keys = row_keys(data.X, labels)
    return state._replace(row_keys=keys, support=model.support, row_labels=labels,
                          decision=decision)


def _why_not(previous, est, data, backend):
    """Why the previous solution does not map to this fit (None: it does)."""
    if getattr(est, "kernel", None) == "precomputed":
        return "a precomputed kernel's rows are Gram rows, not points to find again"
    if previous is None:
        return "no previous fit to start from"
    what = ("estimator", "number of features", "classes", "multiclass rule",
            "kernel parameters")
    for name, old, new in zip(what, previous.key, _fingerprint(est, data)):
        if old != new:
            return f"the {name} changed"
    if getattr(backend, "warm_backend", None) is None:
        return "this solver takes no start"
    return None


def _map_rows(previous, keys):
    """Where the previous support vectors are among the new rows (keys ``keys``): (sv_at,
    match), sv_at the row of each (-1: removed), match the (old, new) pairs of all the
    previous rows that are still there (None when their keys were not kept)."""
    sv_at = np.full(previous.coef.shape[0], -1)
    if previous.row_keys is None:
        i, j = match_keys(row_keys(previous.rows, previous.labels), keys)
        sv_at[i] = j
        return sv_at, None
    o, i = match_keys(previous.row_keys, keys)
    at = np.full(previous.row_keys.shape[0], -1)
    at[o] = i
    return at[previous.support], (o, i)


def _known_decisions(previous, match, members, kernel, ratio):
    """(n, r): the previous fit's decision values, scaled, on the new rows it had (NaN on
    the others; None when it kept none or its kernel differs)."""
    if match is None or previous.decision is None or previous.kernel != kernel:
        return None
    o, i = match
    old_members = _members(previous.row_labels, previous.row_keys.shape[0],
                           len(previous.decision), previous.pairwise)
    out = np.full(members.shape, np.nan)
    for j, f in enumerate(previous.decision):
        pos = np.cumsum(old_members[:, j]) - 1  # a row's position among the column's rows
        sel = old_members[o, j]
        out[i[sel], j] = ratio * f[pos[o[sel]]]
    return out


def warm_start(est, previous, data, backend):
    """The backend and start of a refit from ``previous`` (a :class:`WarmState` or None),
    and the record for ``warm_start_info_``: ``(backend, start, info)`` with ``start`` a
    ``(dual_start, start_decision)`` pair, or None (and the backend as given) for a cold
    fit."""
    n = data.X.shape[0]
    reason = _why_not(previous, est, data, backend)
    kept, warm, searched = 0, None, reason is None
    if reason is None:
        labels = _labels(data)
        keys = row_keys(data.X, labels)
        est._warm_keys = keys  # for the fitted state's (warm_state), not computed twice
        sv_at, match = _map_rows(previous, keys)
        kept = int(np.count_nonzero(sv_at >= 0))
        if kept:
            warm = backend.warm_backend(entries=float(n) * kept)
        reason = ("none of the previous support vectors is among the new rows" if not kept
                  else None if warm is not None else
                  "this fit solves no C exactly (solve_exact), so there is no exact "
                  "solution to start from")
    info = {"warm": reason is None, "reason": reason, "kept": kept,
            "dropped": previous.coef.shape[0] - kept if searched else 0,
            "n_samples": n}
    if reason is not None:
        est._log(1, f"warm_start: cold fit ({reason})")
        return backend, None, info
    ratio = float(est.C) / previous.C
    members = _members(labels, n, previous.coef.shape[1], previous.pairwise)
    w = 1.0 if data.weights is None else data.weights
    known = _known_decisions(previous, match, members, warm.kernel, ratio)
    coef, f = carry_start(data.X, warm.kernel, members, float(est.C) * np.ones(n) * w,
                          previous.rows, previous.coef, sv_at, known, ratio)
    est._log(1, f"warm_start: {kept} of the previous {previous.coef.shape[0]} support "
                f"vectors kept, {n - kept} points start at 0, C {previous.C:g} -> "
                f"{float(est.C):g}; decision values "
                + ("carried" if known is not None else "computed"))
    alpha = np.abs(coef) if labels is not None else coef  # the classifier's alpha >= 0
    return warm, (alpha, f), info
