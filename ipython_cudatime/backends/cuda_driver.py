"""Whether this thread has a current CUDA context, asked of the CUDA driver itself.

For frameworks with no public check (Numba): waiting through them would create a
context, which belongs in the cold run, not in our pre-run synchronize.
"""

import ctypes
import sys


class CudaDriver:
    """The CUDA driver library, loaded once per owner (None where there is none)."""

    def __init__(self) -> None:
        name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
        self._library: ctypes.CDLL | None
        try:
            self._library = ctypes.CDLL(name)
        except OSError:
            self._library = None

    def context_is_current(self) -> bool:
        """True when the driver has a context current on this thread (False before cuInit)."""
        if self._library is None:
            return False
        context = ctypes.c_void_p()
        return self._library.cuCtxGetCurrent(ctypes.byref(context)) == 0 and bool(context.value)
