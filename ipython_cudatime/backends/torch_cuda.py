"""PyTorch on CUDA (and ROCm, which PyTorch exposes through ``torch.cuda``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .base import DeviceTimer, EventTimer
from .torch_objects import TorchBackend

MEMORY_KEYS = ("num_device_alloc", "segment.all.current", "reserved_bytes.all.current", "allocation.all.allocated",
               "allocated_bytes.all.current", "allocated_bytes.all.peak")


def _read(nested: dict[str, Any], key: str) -> int:
    """``"segment.all.current"`` from ``memory_stats_as_nested_dict()``; 0 where the allocator has none yet."""
    value: Any = nested
    for part in key.split("."):
        value = value.get(part, 0) if isinstance(value, dict) else 0
    return int(value)


class TorchCudaBackend(TorchBackend):
    """Synchronizes every initialized CUDA device; times with events on the current stream."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._timer: EventTimer | None = None
        self._kind = "torch rocm" if getattr(torch.version, "hip", None) else "torch cuda"

    @property
    def name(self) -> str:
        """``torch cuda:0`` (``torch rocm:0`` on AMD GPUs)."""
        return f"{self._kind}:{self._torch.cuda.current_device()}"

    @classmethod
    def detect(cls, torch: Any) -> TorchCudaBackend | None:
        cuda = getattr(torch, "cuda", None)
        return cls(torch) if cuda is not None and cuda.is_available() else None

    def _has_context(self, index: int) -> bool:
        """Whether device ``index`` has a CUDA context (synchronizing or recording on it would create one).
        ``is_initialized()`` is not enough: ``get_device_name()`` initializes torch.cuda without one."""
        check = getattr(self._torch._C, "_cuda_hasPrimaryContext", None)
        return bool(check(index) if check is not None else index == self._torch.cuda.current_device())

    def _active_devices(self) -> list[int]:
        """The devices with a CUDA context, the only ones that can hold work. Never create a context
        ourselves: the cold run must pay for it, and an idle GPU must stay idle."""
        cuda = self._torch.cuda
        return [i for i in range(cuda.device_count()) if self._has_context(i)] if cuda.is_initialized() else []

    @property
    def active(self) -> bool:
        """Any device has a context: work on ``cuda:1`` counts while ``cuda:0`` has none."""
        return bool(self._active_devices())

    def current_device_ready(self) -> bool:
        """The current device has a context: events can be recorded and allocator counters read without creating one."""
        cuda = self._torch.cuda
        return cuda.is_initialized() and self._has_context(cuda.current_device())

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        for index in self._active_devices():
            self._torch.cuda.synchronize(index)

    def timer(self) -> DeviceTimer | None:
        if self._timer is None and self.current_device_ready():
            cuda = self._torch.cuda  # the current device, and its current stream: events on it see its work
            self._timer = EventTimer(functools.partial(cuda.Event, enable_timing=True),
                                     device=lambda: int(cuda.current_device()), stream=cuda.current_stream)
        return self._timer

    def describe(self) -> str:
        index = self._torch.cuda.current_device()
        return f"cuda:{index} {self._torch.cuda.get_device_name(index)}"

    def memory_stats(self) -> dict[str, int]:
        """MEMORY_KEYS, resetting nothing, from the nested dict (``memory_stats()`` would flatten and sort it)."""
        if not self.current_device_ready():
            return {}
        nested = self._torch.cuda.memory_stats_as_nested_dict()
        return {key: _read(nested, key) for key in MEMORY_KEYS}
