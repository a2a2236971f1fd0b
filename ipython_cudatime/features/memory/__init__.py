"""Peak device memory, read from torch's CUDA allocator around the runs, never resetting its peak
(``record`` says how). Always on; it reads only where the cell used torch's CUDA allocator."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from ...backends.torch_cuda import TorchCudaBackend
from ...measure.runner import Outcome, Watch
from ...results.result import CudaTimeResult
from ..feature import Call, Feature
from .record import MEMORY, DeviceMemory, device_memory, memory_sentence


class MemoryWatch(Watch):
    """The allocator's counters before the cold run, after it and after the warm runs. torch is
    looked for at each reading in ``modules``, so a cell that imports it is read from then on."""

    def __init__(self, modules: Mapping[str, Any] = sys.modules) -> None:
        self._modules = modules
        self._states: dict[str, dict[str, Any]] = {}

    def _read(self) -> dict[str, Any]:
        torch = self._modules.get("torch")  # None, or a torch without CUDA, has no "cuda"
        backend = TorchCudaBackend(torch) if hasattr(torch, "cuda") else None
        if backend is None or not backend.current_device_ready():
            return {"cuda": False}  # no CUDA context on the current device (or no torch): nothing to read
        return {"cuda": True, **backend.memory_stats()}

    def before(self) -> None:
        self._states["before"] = self._read()

    def after_cold(self) -> None:
        self._states["after_cold"] = self._read()

    def after_warm(self) -> None:
        self._states["after_warm"] = self._read()

    def record(self, outcome: Outcome) -> DeviceMemory | None:
        before, after_cold = self._states.get("before"), self._states.get("after_cold")
        if before is None or after_cold is None or not after_cold["cuda"]:
            return None  # torch is looked up only where the cold run used CUDA: the cell may never import it
        return device_memory(self._modules["torch"].cuda, before, after_cold, self._states.get("after_warm"))


class Memory(Feature):
    name = "memory"
    schema = staticmethod(MEMORY)
    record_checks = ((DeviceMemory, MEMORY),)

    def watch(self, settings: bool, call: Call) -> Watch:
        return MemoryWatch()

    def text_lines(self, result: CudaTimeResult, record: DeviceMemory | None) -> list[str]:
        """A cell on the CPU has no device memory to speak of: no line unless it ran on a GPU."""
        if record is None and not result.on_gpu:
            return []
        return [f"memory   : {memory_sentence(record)}"]

    def detail_rows(self, result: CudaTimeResult, record: DeviceMemory | None) -> list[tuple[str, str]]:
        return [("device memory", memory_sentence(record))]
