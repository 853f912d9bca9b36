"""Memory of an HSS fit, estimated from the sizes alone before any work.

Every term follows a data structure of the pipeline; where a size depends on the data (the
ranks the compression reaches, the free set of the exact decomposition) the bound it is held
to by the options is taken, so the estimate is an upper bound of what the structures can
grow to:

* the cluster tree (:mod:`hsskern.cluster.tree`) is taken balanced, with leaves of the mean
  size a = 3/4 leaf_size of its 2-means splits (leaves hold leaf_size/2..leaf_size points):
  at height j there are n / (a 2^j) nodes of a 2^j points, up to the root. Counts are kept
  fractional, so every term grows with n (a tree of integer depth would halve its leaves
  each time n doubles);
* node ranks are capped by ``max_rank`` and by the node size, and grow by 2^(1 - 1/d) per
  level: r_0 = min(max_rank, a) (leaves full rank), r_j = min(max_rank, 2^(1-1/d) r_(j-1),
  a 2^j). A node interacts with the rest through its boundary, whose size grows as
  size^((d-1)/d) (constant rank in 1-d, the classical HSS case). Leaves are taken at full
  rank, as with tight tolerances; a loose tolerance or a dense sample (small leaves next to
  the kernel width) gives lower ranks and the estimate is then high;
* generators (:mod:`hsskern.hss.matrix`): D_t (a x a) at leaves, U_t (rows x r_t) at every
  non-root node, B_t (r_a x r_b) at internal nodes, skeleton indices J_t;
* the ULV factor (:mod:`hsskern.hss.ulv`): one m_t x m_t block per node, m = a at leaves and
  m = k_a + k_b above (k = min(m, r): the rows passed up), plus one level's reduced blocks
  while it is built;
* neighbours: :func:`hsskern.cluster.neighbors.knn_memory_bytes` while searching, then the
  compression's column sampler (32-bit neighbour lists and scratch arrays of size n, after the
  n x k intp list is dropped);
* compression: the sampler, the generators built so far (at most all of them) and the largest
  sampled block row (2 r rows by its sample columns, held twice while it grows);
* the exact decomposition (:func:`hsskern.solvers.engines.exact.solve_block`): its working-set
  kernel block, 8 q^2 bytes for q = min(n, max_chunk) points, and the Newton step's copy of
  the block's free part, up to as much again. That step is taken only when SMO crawls on a
  nearly all-free working set (large C), and ``solve_block`` lowers max_chunk so that the
  block stays below half the available memory, which leaves room for the copy: ``peak``
  counts the block once, ``peak_newton`` twice.
"""
import math

from ..cluster.neighbors import knn_memory_bytes

__all__ = ["estimate_memory"]

_F8 = 8
#: n-vectors the dual ADMM keeps per right-hand side (iterates, residuals, the bias solve,
#: temporaries of one iteration); counted generously, they are a small term
_ADMM_VECTORS = 24
#: n-vectors of the exact decomposition (alpha, f, v, the KKT sets, the caller's copies)
_REFINE_VECTORS = 12


def _heights(n, L, R, d):
    """The tree by height j (0: leaves): lists of node counts c_j, sizes s_j, ranks r_j, ULV
    rows m_j and rows passed up k_j, the last entry the root."""
    g = 2.0 ** (1.0 - 1.0 / d)  # rank growth per level: a node's boundary, size^((d-1)/d)
    a = 0.75 * L  # 2-means leaves hold L/2..L points
    if n <= L:  # one leaf, which is the root
        return [1.0], [float(n)], [0.0], [float(n)], [float(n)], a
    c, sz, r, m, k = [n / a], [a], [min(R, a)], [a], [min(R, a)]
    top = max(1, math.ceil(math.log2(n / a)))
    for j in range(1, top + 1):
        s_j = a * 2 ** j
        c.append(n / s_j if j < top else 1.0)
        sz.append(min(s_j, n))
        r.append(min(R, g * r[-1], s_j) if j < top else 0.0)
        m.append(2 * k[-1])
        k.append(min(m[-1], r[-1]) if j < top else m[-1])
    return c, sz, r, m, k, a


def estimate_memory(n, d, *, leaf_size=128, max_rank=200, n_neighbors=64, ann_iterations=5,
                    n_random=16, n_rhs=1, adaptive_beta=True, solve_exact=True, max_chunk=16000,
                    n_threads=None):
    """Bytes an HSS fit (compression, ULV factor, dual ADMM, exact decomposition) needs, by
    phase, before starting it.

    Parameters
    ----------
    n, d : int
        Points and features.
    leaf_size, max_rank, n_neighbors, ann_iterations, n_random : int
        The :class:`~hsskern.options.HSSOptions` of the compression.
    n_rhs : int, default 1
        Right-hand sides the ADMM carries (one-vs-rest problems).
    adaptive_beta : bool, default True
        Whether the ADMM may refactor K + beta I for another beta: the new factor is built
        while the old one is still held.
    solve_exact : bool, default True
        Whether the exact decomposition runs after the ADMM.
    max_chunk : int, default 16000
        Largest working set of the exact decomposition.
    n_threads : int, optional
        Threads of the neighbour search (default: the CPU count).

    Returns
    -------
    dict of int
        ``points`` (the operator's copy of X), ``tree``, ``neighbors`` (peak of the search and
        the sampler built from it), ``compression_peak``, ``hss`` (the generators),
        ``factor`` (the ULV factor), ``factor_peak`` (with its construction's transients),
        ``solver`` (the ADMM's vectors), ``exact_block`` (8 q^2), ``exact_newton`` (the
        Newton step's copy), ``peak``: the largest sum of what is alive at once, over the
        phases (tree, search, compression, factorization, ADMM, exact decomposition with its
        block), ``peak_phase`` (its name, a str) and ``peak_newton`` (the peak if a Newton
        step copies a full block), and ``phases``: a dict of what is alive in each phase
        (``tree``, ``search``, ``compression``, ``factorization``, ``admm``, ``exact``). The
        input X and the interpreter are not counted.
    """
    n, d = int(n), int(d)
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be >= 1, got n={n}, d={d}")
    for name, v in (("leaf_size", leaf_size), ("max_rank", max_rank), ("n_rhs", n_rhs),
                    ("max_chunk", max_chunk)):
        if int(v) < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    L, R = int(leaf_size), int(max_rank)
    k = max(min(int(n_neighbors), n - 1), 0)
    if n_threads is None:
        from os import cpu_count
        n_threads = cpu_count() or 1

    c, sz, r, m, kk, a = _heights(n, L, R, d)
    top = len(c) - 1
    n_nodes = sum(c)

    hss = n * min(n, a)  # leaf blocks D
    if top > 0:
        hss += n * r[0] + c[0] * r[0]  # leaf bases U and skeletons J
    for j in range(1, top + 1):  # internal nodes: B, and U and J below the root
        hss += c[j] * r[j - 1] ** 2
        if j < top:
            hss += c[j] * (2 * r[j - 1] * r[j] + r[j])
    tree = _F8 * (n + 7 * n_nodes)
    hss = _F8 * hss + tree

    factor = _F8 * (n * min(n, a) + sum(c[j] * m[j] ** 2 for j in range(1, top + 1)))
    # reduced blocks (k x k) and bases (k x r) of one level, alive until its parents are built
    factor_transient = _F8 * max(c[j] * (kk[j] ** 2 + kk[j] * r[j]) for j in range(top + 1))

    points = _F8 * n * d
    # the tree's splits copy a node's points and form its masks (the root's is the largest)
    tree_peak = tree + _F8 * n * (d + 2)
    search = knn_memory_bytes(n, d, k, n_iter=ann_iterations, n_threads=n_threads) if k else 0
    # the n x k intp list (its distances dropped) next to the sampler's 32-bit copy, then the
    # sampler alone: 9 scratch arrays of n 32/64-bit entries
    sampler = 4 * n * k + 4 * 9 * n + 8 * n
    neighbors = max(search, 8 * n * k + sampler)
    # the largest sampled block row: 2 r candidate rows against the neighbour columns of the
    # node (at most r + 2 n_random), six near skeletons, the strata draws and check columns
    # (a few n_random each per level); held twice while the sample grows (hstack)
    rows = min(2 * R, n)
    cols = min(n, R + 2 * n_random + 6 * R + 8 * n_random * (top + 1))
    block = 2 * _F8 * rows * cols
    compression_peak = sampler + hss + block + _F8 * 4 * n_nodes * d  # + node boxes

    solver = _F8 * _ADMM_VECTORS * n * int(n_rhs)
    q = min(n, int(max_chunk)) if solve_exact else 0
    exact_block = _F8 * q * q
    exact_newton = exact_block
    exact_vectors = _F8 * _REFINE_VECTORS * n if solve_exact else 0

    phases = {
        "search": points + tree + neighbors,
        "tree": points + tree_peak,
        "compression": points + compression_peak,
        "factorization": points + hss + factor + factor_transient,
        # a refactorization builds the new factor (with its transients) beside the old one
        "admm": points + hss + (2 * factor + factor_transient if adaptive_beta else factor)
        + solver,
        "exact": (points + hss + factor + solver + exact_vectors + exact_block
                  if solve_exact else 0),
    }
    out = {"points": points, "tree": tree_peak, "neighbors": neighbors,
           "compression_peak": compression_peak, "hss": hss, "factor": factor,
           "factor_peak": factor + factor_transient, "solver": solver,
           "exact_block": exact_block, "exact_newton": exact_newton,
           "peak": max(phases.values()),
           "peak_newton": max(phases.values()) + (exact_newton if solve_exact else 0)}
    out = {key: int(v) for key, v in out.items()}
    out["peak_phase"] = max(phases, key=phases.get)
    out["phases"] = {key: int(v) for key, v in phases.items()}
    return out
