"""One BLAS thread for a block of small BLAS calls, switched in microseconds."""
from threadpoolctl import ThreadpoolController

__all__ = ["one_blas_thread"]

_BLAS_LIBS = []


class one_blas_thread:
    """Limit the loaded BLAS libraries to one thread for the duration of a ``with`` block.

    threadpoolctl's ``limit`` rebuilds its view of every library on each call, which is
    noticeable next to a ULV solve of a few milliseconds; this keeps the library handles from
    the first call and only flips the ones not already at one thread (one ctypes call
    each). Like threadpoolctl, it sees the libraries loaded when it first runs; ours (scipy's
    OpenBLAS, behind ``cython_blas``) is loaded by then.
    """

    __slots__ = ("_saved",)

    def __enter__(self):
        if not _BLAS_LIBS:
            _BLAS_LIBS.append(ThreadpoolController().select(user_api="blas").lib_controllers)
        self._saved = [(lib, k) for lib in _BLAS_LIBS[0]
                       if (k := lib.get_num_threads()) is not None and k != 1]
        for lib, _ in self._saved:
            lib.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        for lib, k in self._saved:
            lib.set_num_threads(k)
        return False
