"""
HSS ranks per tree level, and the compression error against the tolerance
===========================================================================

:func:`hsskern.hss.compress` approximates the kernel matrix K by a hierarchically
semi-separable matrix H: every node of a cluster tree keeps a few skeleton points, as many as
its interpolative decomposition needs to reach the tolerance. Ranks grow towards the root,
where a node's block row couples more points, and a tighter tolerance keeps more of them.

The error ‖K − H‖_F / ‖K‖_F is estimated here with random probes (K and H are only ever
applied to vectors: K matrix-free, H through its generators).
"""
import matplotlib.pyplot as plt
import numpy as np

from hsskern import kernel_operator
from hsskern.datasets import load
from hsskern.hss import HSSOptions, compress

X, _, _, _ = load("ijcnn1")
X = X[np.random.default_rng(0).choice(len(X), 4000, replace=False)]
K = kernel_operator(X, "gaussian", h=1.0)

probes = np.random.default_rng(1).standard_normal((len(X), 8))
K_probes = K @ probes


def relative_error(H):
    """Frobenius-norm error estimated from Gaussian probes: E|A w|^2 = |A|_F^2."""
    return np.linalg.norm(K_probes - H @ probes) / np.linalg.norm(K_probes)


tolerances = [1e-1, 3e-2, 1e-2, 3e-3, 1e-3]
ranks, errors = [], []
for tol in tolerances:
    H = compress(K, HSSOptions(rel_tol=tol, abs_tol=tol / 10, max_rank=1000,
                               random_state=0))
    ranks.append(H.ranks_per_level())
    errors.append(relative_error(H))
    print(f"rel_tol {tol:g}: max rank {H.max_rank}, error {errors[-1]:.2e}, "
          f"{H.memory_bytes() / 2**20:.1f} MiB")

# %%
# Left: the largest rank on each level (level 1 is just below the root). Right: the
# achieved error against the per-node tolerance; the dashed line is error = tolerance.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
for tol, r in zip(tolerances, ranks):
    ax1.plot(range(1, len(r) + 1), r, "o-", label=f"rel_tol {tol:g}")
ax1.set(xlabel="tree level (1 = below the root)", ylabel="largest rank on the level",
        title="HSS ranks per level")
ax1.legend()
ax2.loglog(tolerances, errors, "o-", label="estimated ‖K − H‖_F / ‖K‖_F")
ax2.loglog(tolerances, tolerances, "k--", label="error = tolerance")
ax2.set(xlabel="rel_tol", ylabel="relative error", title="error against the tolerance")
ax2.legend()
fig.tight_layout()
plt.show()
