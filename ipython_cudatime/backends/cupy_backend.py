"""CuPy: kernels launch asynchronously on the current stream; events time them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import Backend, DeviceTimer, EventTimer
from .objects import Kind, Opaque, present


class CupyBackend(Backend):
    packages = ("cupy", "cupyx")

    def __init__(self, cupy: Any) -> None:
        self._cupy = cupy
        self._timer: EventTimer | None = None

    @classmethod
    def kinds(cls, cupy: Any) -> tuple[Kind, ...]:
        """A CuPy array keeps no version counter, and its memory is on the device."""
        return (Opaque("a CuPy array's values are on the device (reading them would synchronize)",
                       *present(cupy, "ndarray")),)

    @classmethod
    def detect(cls, cupy: Any) -> CupyBackend | None:
        try:
            return cls(cupy) if cupy.cuda.runtime.getDeviceCount() > 0 else None
        except Exception:  # CUDA driver missing or broken: nothing asynchronous to wait for
            return None

    @property
    def active(self) -> bool:
        """A context in this thread: CuPy (or another) used the GPU; else nothing is queued, and none may be made."""
        return bool(self._cupy.cuda.driver.ctxGetCurrent() != 0)

    @property
    def name(self) -> str:
        return f"cupy cuda:{self._cupy.cuda.Device().id}"

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        if self.active:
            self._cupy.cuda.Device().synchronize()

    def timer(self) -> DeviceTimer | None:
        if self._timer is None and self.active:
            self._timer = EventTimer(self._cupy.cuda.Event, self._cupy.cuda.get_elapsed_time)
        return self._timer

    def describe(self) -> str:
        device = self._cupy.cuda.Device()
        name = self._cupy.cuda.runtime.getDeviceProperties(device.id)["name"]
        return f"cuda:{device.id} {name.decode() if isinstance(name, bytes) else name}"
