"""Dense references and contract checks, shipped so every backend is tested the same way."""
from .reference import reference_kernel
from .checks import check_backend, check_factor, check_kernel_operator
from .inputs import hard_clustered_points

__all__ = ["reference_kernel", "check_kernel_operator", "check_backend", "check_factor",
           "hard_clustered_points"]
