"""Whether this thread has a current CUDA context, asked of the CUDA driver itself.

For frameworks with no public check (Numba): waiting through them would create a
context, which belongs in the cold run, not in our pre-run synchronize.
"""

import ctypes
import sys

_DRIVER = []  # the loaded driver library, or None where there is none


def _driver():
    if not _DRIVER:
        name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
        try:
            _DRIVER.append(ctypes.CDLL(name))
        except OSError:
            _DRIVER.append(None)
    return _DRIVER[0]


def context_is_current():
    """True when the CUDA driver has a context current on this thread (False before cuInit)."""
    driver = _driver()
    if driver is None:
        return False
    context = ctypes.c_void_p()
    return driver.cuCtxGetCurrent(ctypes.byref(context)) == 0 and bool(context.value)
