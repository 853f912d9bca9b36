"""A refit's start from a previous solution of the same dual on other rows (``warm_start``).

Rows are told apart by content: :func:`row_keys` hashes each row's nonzero entries (and its
label) to 128 bits, the same for a dense row and its sparse copy, and :func:`match_keys`
pairs equal keys, the k-th copy of a repeated row with its k-th copy. Appended, removed and
reordered rows then need no index from the caller.

:func:`carry_start` turns the previous support vectors' coefficients, placed on the rows
they were found at, into a feasible start with exact decision values:

1. the coefficients scaled by C_new / C_old (the C path's continuation: bounded alphas stay
   at the new bound), every other row at 0 (appended rows: LIBSVM's start);
2. clipped to the new box (a new C or new weights) and sum_i c_i = 0 (sum y_i alpha_i = 0)
   restored by lowering the heavier side's free coefficients by a common factor (its
   bounded ones only if the free ones do not cover it): every coefficient stays in its box,
   and few change;
3. decision values f = K c: those the previous fit left on its rows, scaled, where the
   caller has them (the same kernel), else one product K(X, SV) for the rows without; then
   one product over the support vectors step 2 changed (removed ones included).
"""
import numpy as np
import scipy.sparse as sp

from ...kernels import kernel_operator
from ...utils._rowhash import SEEDS, dense_row_hashes, entry_hashes, float_bits, mix
from .plan import RouteOptions

__all__ = ["row_keys", "match_keys", "carry_start", "balance_coef", "near_options"]


def near_options(max_ws=None, route=None, start=None, C=None, weights=None):
    """The exact decomposition's options from a carried start (a refit's, near its answer):
    working sets of at most ``route.warm_max_ws`` points, or ``route.warm_free_factor``
    times the free points of ``start`` (one label column's alphas in the box [0, C w]) when
    that is more (and at most ``max_ws``), each solved to ``tol`` (``sub_tol=0``), with
    shrinking at any n (``route``: default RouteOptions())."""
    route = RouteOptions() if route is None else route
    cap = route.warm_max_ws
    if start is not None:
        a = np.asarray(start, dtype=np.float64)
        ub = C if weights is None else C * np.asarray(weights, dtype=np.float64)
        free = int(np.count_nonzero((a > 1e-12 * ub) & (a < ub * (1 - 1e-12))))
        cap = max(cap, int(route.warm_free_factor * free))
    return {"max_ws": cap if max_ws is None else min(max_ws, cap), "sub_tol": 0.0,
            "shrinking": True}


def row_keys(X, labels=None, chunk=None):
    """A 128-bit key per row, shape (n, 2) uint64: the sums of two hashes of each nonzero
    entry (column, value; :mod:`hsskern.utils._rowhash`), mixed with the row's label when
    given. Equal rows (dense or sparse) with equal labels get equal keys; two different ones
    collide with probability ~2^-128. Dense rows are hashed ``chunk`` rows at a time
    (:func:`~hsskern.utils._rowhash.dense_row_hashes`)."""
    n = X.shape[0]
    if sp.issparse(X):
        out = np.zeros((n, 2), dtype=np.uint64)
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        X.eliminate_zeros()
        nonempty = np.diff(X.indptr) > 0
        if X.nnz:
            for s, e in enumerate(entry_hashes(X.indices, float_bits(X.data))):
                out[nonempty, s] = np.add.reduceat(e, X.indptr[:-1][nonempty])
    else:
        out = dense_row_hashes(X, chunk=chunk)
    lab = np.zeros(n, np.uint64) if labels is None else np.asarray(labels).astype(np.uint64)
    for s, seed in enumerate(SEEDS):
        out[:, s] = mix(out[:, s] ^ mix(lab + seed))
    return out


def match_keys(old, new):
    """Pairs (i, j) with ``old[i] == new[j]`` (keys of :func:`row_keys`), each row in one pair
    at most: the k-th copy of a repeated key matches its k-th copy.

    The nightly retrain's rows (the old rows first, in their order, the new ones after)
    match as a prefix, checked in one comparison; otherwise one sort of both sets' keys.

    Returns
    -------
    (ndarray, ndarray) of int: the matched indices into ``old`` and into ``new``.
    """
    m = old.shape[0]
    if m <= new.shape[0] and np.array_equal(old, new[:m]):
        # each old row is its own new row; an appended copy of an old key is a later copy
        # among the new rows, so the k-th copy still pairs with the k-th copy
        return np.arange(m), np.arange(m)
    both = np.concatenate([old, new])
    order = _key_order(both)  # stable: the old rows first among equal keys
    s = both[order]
    first = np.r_[True, np.any(s[1:] != s[:-1], axis=1)]
    starts = np.flatnonzero(first)
    group = np.cumsum(first) - 1  # equal keys, one group
    is_new = order >= m
    n_old = np.bincount(group[~is_new], minlength=starts.size)  # old copies per group
    # a new entry's rank among its group's new copies; its partner is the old copy of the
    # same rank, which sits at the group's start plus that rank
    pos = np.flatnonzero(is_new)
    g = group[pos]
    rank = pos - starts[g] - n_old[g]
    hit = rank < n_old[g]
    return order[starts[g[hit]] + rank[hit]], order[pos[hit]] - m


def _key_order(keys):
    """A stable order of (n, 2) keys sorting equal keys together: by the first lane alone
    (one sort of 64-bit integers, not two), unless two different keys share it."""
    order = np.argsort(keys[:, 0], kind="stable")
    s = keys[order]
    tie = s[1:, 0] == s[:-1, 0]
    if np.any(s[1:, 1][tie] != s[:-1, 1][tie]):
        order = np.lexsort((keys[:, 1], keys[:, 0]))
    return order


def balance_coef(c, ub):
    """``c`` clipped to ``|c_i| <= ub_i`` with sum(c) = 0 restored by lowering the heavier
    sign's free coefficients (``|c_i| < ub_i``) by a common factor, and its bounded ones only
    when the free ones do not cover the excess: every coefficient stays in its box and keeps
    its sign, and few change."""
    c = np.sign(c) * np.minimum(np.abs(c), ub)
    excess = float(c.sum())
    if abs(excess) <= 1e-13 * float(np.abs(c).sum()):
        return c
    side = np.sign(c) == np.sign(excess)
    free = side & (np.abs(c) < ub * (1 - 1e-12))
    for group in (free, side & ~free):
        total = float(c[group].sum())  # same sign as excess
        if total == 0.0:
            continue
        if abs(total) >= abs(excess):
            c[group] *= 1.0 - excess / total
            break
        c[group] = 0.0
        excess -= total
    return c


def _product(X, kernel, rows, V):
    """K(X, rows) @ V, (n, r): one blocked kernel product (zeros without rows)."""
    if rows.shape[0] == 0:
        return np.zeros((X.shape[0], V.shape[1]))
    out = kernel_operator(rows, kernel).cross(X) @ V
    return np.asarray(out).reshape(X.shape[0], V.shape[1])


def carry_start(X, kernel, member, ub, sv_rows, sv_coef, sv_at, decision=None, ratio=1.0):
    """A feasible start and its exact decision values from a previous solution.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The new points.
    kernel : Kernel
        The new fit's kernel.
    member : ndarray of bool, shape (n, r)
        Whether row i is in column j's problem (one-vs-one: a pair's two classes).
    ub : ndarray of shape (n,)
        The new box of each row, |c_i| <= ub_i (C w_i).
    sv_rows : ndarray of shape (m, d)
        The previous support vectors.
    sv_coef : ndarray of shape (m, r)
        Their coefficients (y alpha, or the SVR's alpha - alpha*).
    sv_at : ndarray of int, shape (m,)
        The row of X each support vector was found at, -1 where it was not (removed).
    decision : ndarray of shape (n, r) or None
        K(X, sv_rows) @ (ratio sv_coef) where known (the previous fit's decision values on
        the rows it had, scaled, with the same kernel), NaN elsewhere; None: nowhere.
    ratio : float
        C_new / C_old.

    Returns
    -------
    coef : ndarray of shape (n, r)
        The start (y alpha; the SVR's b), feasible: in the box, summing to 0 per column.
    f : ndarray of shape (n, r) or None
        K c of the start, exact on every member row; None for one column without any
        ``decision`` (another kernel: ``gamma="scale"`` on new rows), where the
        decomposition's own product over all rows (its operator's centred dgemm route, a
        quarter faster per entry than a product from the support vectors' side) computes it.
    """
    n, r = member.shape
    carried = ratio * np.asarray(sv_coef, dtype=np.float64)
    kept = sv_at >= 0
    coef = np.zeros((n, r))
    coef[sv_at[kept]] = carried[kept]
    for j in range(r):
        coef[member[:, j], j] = balance_coef(coef[member[:, j], j], ub[member[:, j]])
    if decision is None and r == 1:  # several columns share one product here instead
        return coef, None
    f = np.full((n, r), np.nan) if decision is None else np.array(decision, dtype=np.float64)
    miss = np.flatnonzero(np.any(member & np.isnan(f), axis=1))
    if miss.size:  # rows the previous fit did not have: their products with its vectors
        nz = np.flatnonzero(np.any(carried != 0, axis=1))
        f[miss] = _product(X[miss], kernel, sv_rows[nz], carried[nz])
    now = np.zeros_like(carried)
    now[kept] = coef[sv_at[kept]]
    delta = now - carried  # the removed vectors, and the coefficients the box moved
    changed = np.flatnonzero(np.any(delta != 0, axis=1))
    if changed.size:
        f += _product(X, kernel, sv_rows[changed], delta[changed])
    return coef, f
