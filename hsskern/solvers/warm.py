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

from ..kernels import kernel_operator
from .plan import RouteOptions

__all__ = ["row_keys", "match_keys", "carry_start", "balance_coef", "near_options"]


_SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def near_options(max_ws=None, route=None):
    """The exact decomposition's options from a carried start (a refit's, near its answer):
    working sets of at most ``route.warm_max_ws`` points (and ``max_ws``), each solved to
    ``tol`` (``sub_tol=0``), with shrinking at any n (``route``: default RouteOptions())."""
    cap = (RouteOptions() if route is None else route).warm_max_ws
    return {"max_ws": cap if max_ws is None else min(max_ws, cap), "sub_tol": 0.0,
            "shrinking": True}


def _mix(h):
    """splitmix64's finalizer on a uint64 array (wrapping arithmetic)."""
    h = (h ^ (h >> _S30)) * _M1
    h = (h ^ (h >> _S27)) * _M2
    return h ^ (h >> _S31)


def _bits(v):
    """The float64 values' bits as uint64 (-0.0 read as 0.0)."""
    return (np.asarray(v, dtype=np.float64) + 0.0).view(np.uint64)  # a contiguous copy


def row_keys(X, labels=None, chunk=65536):
    """A 128-bit key per row, shape (n, 2) uint64: the sum of a hash of each nonzero entry
    (column, value), mixed with the row's label when given. Equal rows (dense or sparse)
    with equal labels get equal keys; two different ones collide with probability ~2^-128.
    Dense rows are hashed ``chunk`` rows at a time (temporaries of chunk x d entries)."""
    n = X.shape[0]
    out = np.zeros((n, 2), dtype=np.uint64)
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        X.eliminate_zeros()
        nonempty = np.diff(X.indptr) > 0
        for s, seed in enumerate(_SEEDS):
            e = _mix(_mix(X.indices.astype(np.uint64) ^ seed) ^ _bits(X.data))
            if e.size:
                out[nonempty, s] = np.add.reduceat(e, X.indptr[:-1][nonempty])
    else:
        X = np.asarray(X, dtype=np.float64)
        cols = np.arange(X.shape[1], dtype=np.uint64)
        for lo in range(0, n, chunk):
            B = X[lo:lo + chunk]
            bits, zero = _bits(B), B == 0
            for s, seed in enumerate(_SEEDS):
                e = _mix(_mix(cols ^ seed) ^ bits)
                e[zero] = 0
                out[lo:lo + chunk, s] = e.sum(axis=1, dtype=np.uint64)  # modulo 2^64
    lab = np.zeros(n, np.uint64) if labels is None else np.asarray(labels).astype(np.uint64)
    for s, seed in enumerate(_SEEDS):
        out[:, s] = _mix(out[:, s] ^ _mix(lab + seed))
    return out


def match_keys(old, new):
    """Pairs (i, j) with ``old[i] == new[j]`` (keys of :func:`row_keys`), each row in one pair
    at most: the k-th copy of a repeated key matches its k-th copy.

    Returns
    -------
    (ndarray, ndarray) of int: the matched indices into ``old`` and into ``new``.
    """
    both = np.concatenate([old, new])
    order = np.lexsort((both[:, 1], both[:, 0]))  # stable: old rows first among equal keys
    s = both[order]
    first = np.r_[True, np.any(s[1:] != s[:-1], axis=1)]
    group = np.cumsum(first) - 1  # equal keys, one group
    is_new = order >= old.shape[0]
    # each entry's rank among the old (new) entries of its group
    rank = np.empty(order.size, dtype=np.int64)
    for side in (False, True):
        at = np.flatnonzero(is_new == side)
        g = group[at]
        starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
        rank[at] = np.arange(at.size) - np.repeat(starts, np.diff(np.r_[starts, at.size]))
    big = order.size + 1
    key = group * big + rank
    _, a, b = np.intersect1d(key[~is_new], key[is_new], assume_unique=True,
                             return_indices=True)
    return order[~is_new][a], order[is_new][b] - old.shape[0]


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
    f : ndarray of shape (n, r)
        K c of the start, exact on every member row.
    """
    n, r = member.shape
    carried = ratio * np.asarray(sv_coef, dtype=np.float64)
    kept = sv_at >= 0
    coef = np.zeros((n, r))
    coef[sv_at[kept]] = carried[kept]
    for j in range(r):
        coef[member[:, j], j] = balance_coef(coef[member[:, j], j], ub[member[:, j]])
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
