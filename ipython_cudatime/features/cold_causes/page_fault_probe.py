"""Fresh memory from the operating system during the cold run, from the process's page faults
(``getrusage``): a first run's large buffers are fresh pages the kernel maps and zeroes on first
touch (minor faults, in system time); later runs reuse the memory the allocator kept."""

from __future__ import annotations

import time
from typing import Any

from ...units import format_bytes, format_seconds
from .probe import Cause, Probe

FRESH_MIN = 10 * 2**20  # first-touched memory worth naming: 10 MiB (a smaller cold run hides it in its noise)


class PageFaultProbe(Probe[dict[str, float]]):
    """Minor page faults and system time, with the time they were read at, at the three moments.
    The warm runs' rate of faults per second says how many the cold run would have paid as a warm
    run; a cause where it paid ``FRESH_MIN`` or more beyond that, and most of its faults were such."""

    label = "page faults"

    def __init__(self, resource: Any) -> None:
        self._resource = resource
        self._page = resource.getpagesize()

    @classmethod
    def detect(cls, os: Any) -> PageFaultProbe | None:
        try:
            import resource  # POSIX only
        except ImportError:
            return None
        return cls(resource)

    def state(self, moment: str) -> dict[str, float]:
        usage = self._resource.getrusage(self._resource.RUSAGE_SELF)
        return {"faults": usage.ru_minflt, "sys": usage.ru_stime, "clock": time.perf_counter()}

    def causes(self, before: dict[str, float], after_cold: dict[str, float], after_warm: dict[str, float] | None,
               source: str | None = None) -> list[Cause]:
        if after_warm is None or after_warm["clock"] <= after_cold["clock"]:
            return []  # no warm runs to tell a first run's cost from every run's
        share = (after_cold["clock"] - before["clock"]) / (after_warm["clock"] - after_cold["clock"])
        faults = after_cold["faults"] - before["faults"]
        extra = faults - share * (after_warm["faults"] - after_cold["faults"])  # beyond the warm runs' rate
        if extra * self._page < FRESH_MIN or extra < faults / 2:
            return []
        seconds = (after_cold["sys"] - before["sys"]) - share * (after_warm["sys"] - after_cold["sys"])
        spent = f", about {format_seconds(seconds)} more system time than at their rate" if seconds > 0 else ""
        # no seconds of its own: the faults fall inside the other causes' time too (a compiler's memory)
        return [Cause("fresh memory from the OS", None,
                      f"{faults:,.0f} page faults, {extra:,.0f} more than at the warm runs' rate: about "
                      f"{format_bytes(extra * self._page)} first touched, mapped and zeroed by the kernel{spent}; "
                      "later runs reuse the memory the allocator kept")]
