"""Numba CUDA: kernel launches are asynchronous; ``numba.cuda.synchronize()`` waits for them. Numba has no
public "context exists" check and its synchronize creates one, which belongs in the cold run, not in our
pre-run synchronize: so the CUDA driver itself is asked first."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any

from .base import Backend
from .objects import Kind, Opaque, present


class NumbaBackend(Backend):
    name = "numba cuda"
    packages = ("numba",)

    def __init__(self, cuda: Any) -> None:
        self._cuda = cuda
        self._driver: ctypes.CDLL | None  # the CUDA driver library, None where there is none
        try:
            self._driver = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
        except OSError:
            self._driver = None

    @classmethod
    def kinds(cls, cuda: Any) -> tuple[Kind, ...]:
        """A Numba device array's memory is on the device."""
        return (Opaque("a Numba device array's values are on the device",
                       *present(cuda, "cudadrv.devicearray.DeviceNDArray")),)

    @classmethod
    def detect(cls, cuda: Any) -> NumbaBackend | None:
        try:
            return cls(cuda) if cuda.is_available() else None
        except Exception:  # a broken driver: nothing asynchronous to wait for
            return None

    @property
    def active(self) -> bool:
        """The driver has a context current on this thread (False before cuInit)."""
        context = ctypes.c_void_p()
        return (self._driver is not None and self._driver.cuCtxGetCurrent(ctypes.byref(context)) == 0
                and bool(context.value))

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        if self.active:
            self._cuda.synchronize()

    def describe(self) -> str:
        return f"numba cuda:{self._cuda.get_current_device().id}"
