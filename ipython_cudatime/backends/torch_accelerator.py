"""PyTorch on other accelerators (MPS, XPU, ...) through ``torch.accelerator`` and ``torch.Event``.

``torch.accelerator`` exists since PyTorch 2.6; CUDA is left to the CUDA backend,
which knows how to avoid creating a context.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .base import DeviceTimer, EventTimer, event_elapsed_ms
from .torch_objects import TorchBackend


class TorchAcceleratorBackend(TorchBackend):
    """Synchronizes the current non-CUDA accelerator."""

    def __init__(self, torch: Any, device: Any) -> None:
        self._torch = torch
        self._device = device
        self._timer: EventTimer | None = None

    @property
    def name(self) -> str:
        return f"torch {self._device.type}"

    @classmethod
    def detect(cls, torch: Any) -> TorchAcceleratorBackend | None:
        accelerator = getattr(torch, "accelerator", None)
        device = accelerator.current_accelerator() if accelerator is not None and accelerator.is_available() else None
        return None if device is None or device.type == "cuda" else cls(torch, device)

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        self._torch.accelerator.synchronize()

    def timer(self) -> DeviceTimer | None:
        if self._timer is None and hasattr(self._torch, "Event"):
            make_event = functools.partial(self._torch.Event, device=self._device, enable_timing=True)
            self._timer = EventTimer(make_event, event_elapsed_ms)
        return self._timer

    def describe(self) -> str:
        index = self._torch.accelerator.current_device_index()
        return f"{self._device.type}:{index}"
