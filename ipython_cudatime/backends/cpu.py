"""The fallback when no device framework is active: host clocks only."""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

from .base import Backend

NOTE = "no GPU clock was used: CPU timing with time.perf_counter"


class CpuBackend(Backend):
    """Nothing runs asynchronously here, so there is nothing to wait for."""

    name = "cpu"
    note = NOTE

    @classmethod
    def detect(cls, module: Any = None) -> CpuBackend:
        return cls()

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        pass

    def describe(self) -> str:
        return f"cpu {platform.machine()}".strip()
