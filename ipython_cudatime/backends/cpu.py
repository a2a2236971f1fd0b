"""The fallback when no device framework is active: host clocks only."""

import platform

from .base import Backend

NOTE = "no GPU clock was used: CPU timing with time.perf_counter"


class CpuBackend(Backend):
    """Nothing runs asynchronously here, so there is nothing to wait for."""

    name = "cpu"
    note = NOTE

    @classmethod
    def detect(cls, module=None):
        return cls()

    def synchronize(self, outputs=None):
        pass

    def describe(self):
        return f"cpu {platform.machine()}".strip()
