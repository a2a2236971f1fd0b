"""Numba CUDA: kernel launches are asynchronous; ``numba.cuda.synchronize()`` waits for them.

Active once the user has imported ``numba.cuda`` and a GPU is there. Numba has no public
"context exists" check and its synchronize creates one, so the CUDA driver is asked first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import Backend
from .cuda_driver import CudaDriver
from .objects import Kind, Opaque, present


class NumbaBackend(Backend):
    name = "numba cuda"
    packages = ("numba",)

    def __init__(self, cuda: Any, driver: CudaDriver) -> None:
        self._cuda = cuda
        self._driver = driver

    @classmethod
    def kinds(cls, cuda: Any) -> tuple[Kind, ...]:
        """A Numba device array's memory is on the device."""
        return (Opaque("a Numba device array's values are on the device",
                       *present(cuda, "cudadrv.devicearray.DeviceNDArray")),)

    @classmethod
    def detect(cls, cuda: Any) -> NumbaBackend | None:
        try:
            return cls(cuda, CudaDriver()) if cuda.is_available() else None
        except Exception:  # a broken driver: nothing asynchronous to wait for
            return None

    @property
    def active(self) -> bool:
        return self._driver.context_is_current()

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        if self.active:
            self._cuda.synchronize()

    def describe(self) -> str:
        return f"numba cuda:{self._cuda.get_current_device().id}"
