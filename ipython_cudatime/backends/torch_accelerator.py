"""PyTorch on other accelerators (MPS, XPU, ...) through ``torch.accelerator`` and ``torch.Event``.

``torch.accelerator`` exists since PyTorch 2.6; CUDA is left to the CUDA backend,
which knows how to avoid creating a context.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .base import Backend, DeviceTimer, EventTimer, event_elapsed_ms
from .objects import Kind
from .torch_objects import TorchPool, torch_kinds


class TorchAcceleratorBackend(Backend):
    """Synchronizes the current non-CUDA accelerator."""

    packages = ("torch",)
    pools = (TorchPool(),)

    def __init__(self, torch: Any, device: Any) -> None:
        self._torch = torch
        self._device = device
        self._timer: EventTimer | None = None
        self._timer_failed = False

    @property
    def name(self) -> str:
        return f"torch {self._device.type}"

    @classmethod
    def kinds(cls, torch: Any) -> tuple[Kind, ...]:
        return torch_kinds(torch)

    @classmethod
    def detect(cls, torch: Any) -> TorchAcceleratorBackend | None:
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is None or not accelerator.is_available():
            return None
        device = accelerator.current_accelerator()
        if device is None or device.type == "cuda":
            return None
        return cls(torch, device)

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        self._torch.accelerator.synchronize()

    def timer(self) -> DeviceTimer | None:
        if self._timer is None and not self._timer_failed and hasattr(self._torch, "Event"):
            try:
                make_event = functools.partial(self._torch.Event, device=self._device, enable_timing=True)
                self._timer = EventTimer(make_event, event_elapsed_ms)
            except (RuntimeError, TypeError, ValueError):
                self._timer_failed = True  # this backend has no timing events: wall clock only
        return self._timer

    def describe(self) -> str:
        index = self._torch.accelerator.current_device_index()
        return f"{self._device.type}:{index}"
