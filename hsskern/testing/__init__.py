"""Dense references and contract checks, shipped so every backend is tested the same way."""
from .reference import reference_kernel
from .checks import check_kernel_operator

__all__ = ["reference_kernel", "check_kernel_operator"]
