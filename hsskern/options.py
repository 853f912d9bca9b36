"""Option groups as frozen dataclasses, validated when built.

The knobs users tune (tolerances, ranks, leaf size) are also flat estimator parameters so
``GridSearchCV`` reaches them; estimators build these groups from their parameters.
"""
from dataclasses import dataclass, fields

from .utils.validation import check_positive

_HSS_METHODS = ("ann", "sketch")
_SPLITS = ("2means", "pca", "kd")


@dataclass(frozen=True)
class HSSOptions:
    """How an HSS approximation of a kernel matrix is built.

    Names follow STRUMPACK's ``--hss_*`` options. The defaults are the HSS/ADMM paper's first
    option set (``hss_rel_tol=1, hss_abs_tol=0.1, hss_max_rank=200,
    hss_approximate_neighbors=64``) apart from the tolerances, which are tighter; the paper's
    second set is ``0.5 / 0.05 / 2000 / 512``.

    Parameters
    ----------
    rel_tol : float, default 1e-2
        Relative tolerance of each interpolative decomposition (truncate pivoted QR where
        |R_kk| <= rel_tol * |R_00|).
    abs_tol : float, default 1e-3
        Absolute tolerance (truncate where |R_kk| <= abs_tol).
    max_rank : int, default 200
        Cap on the rank of every node; a node that cannot reach the tolerance keeps this many
        skeleton points and its achieved error is recorded.
    leaf_size : int, default 128
        Largest number of points in a leaf of the cluster tree.
    n_neighbors : int, default 64
        Nearest neighbours per point used to choose sample columns (HSS-ANN).
    ann_iterations : int, default 5
        Iterations (trees) of the approximate neighbour search.
    n_random : int, default 16
        Random columns added to each node's sample, beyond the neighbours.
    method : {"ann", "sketch"}, default "ann"
        "ann": neighbour-guided column sampling (HSS-ANN, only entries of K are evaluated);
        "sketch": randomized sampling K @ Omega through blocked products (accuracy reference,
        and operators without useful geometry).
    split : {"2means", "pca", "kd"}, default "2means"
        How clusters are bisected.
    random_state : int, numpy Generator or None
    verbose : int, default 0
    """

    rel_tol: float = 1e-2
    abs_tol: float = 1e-3
    max_rank: int = 200
    leaf_size: int = 128
    n_neighbors: int = 64
    ann_iterations: int = 5
    n_random: int = 16
    method: str = "ann"
    split: str = "2means"
    random_state: object = None
    verbose: int = 0

    def __post_init__(self):
        check_positive(self.rel_tol, "rel_tol", minimum=0.0)
        check_positive(self.abs_tol, "abs_tol", minimum=0.0)
        if self.rel_tol == 0 and self.abs_tol == 0:
            raise ValueError("rel_tol and abs_tol cannot both be 0")
        check_positive(self.max_rank, "max_rank", integer=True, minimum=1)
        check_positive(self.leaf_size, "leaf_size", integer=True, minimum=2)
        check_positive(self.n_neighbors, "n_neighbors", integer=True, minimum=0)
        check_positive(self.ann_iterations, "ann_iterations", integer=True, minimum=1)
        check_positive(self.n_random, "n_random", integer=True, minimum=0)
        if self.method not in _HSS_METHODS:
            raise ValueError(f"method must be one of {_HSS_METHODS}, got {self.method!r}")
        if self.split not in _SPLITS:
            raise ValueError(f"split must be one of {_SPLITS}, got {self.split!r}")
        check_positive(self.verbose, "verbose", integer=True, minimum=0)

    @classmethod
    def field_names(cls):
        return tuple(f.name for f in fields(cls))
