"""Peak device memory per run, read from torch's CUDA allocator without ever resetting its peak counter.

Resetting ``torch.cuda.max_memory_allocated()`` would lose the user's own peak, so it is read before
and after each phase: where the phase raised it, that is the phase's exact peak; else the earlier
peak is an upper bound, and the report says "at most" and how to get the exact figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...results.schema import COUNT, FLAG, INTEGER, optional, record
from ...units import format_bytes

ALLOCATED, PEAK, RESERVED = "allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current"
NOT_MEASURED = ("peak device memory not measured: it is read from torch's CUDA allocator, "
                "which this cell did not use")


@dataclass
class DeviceMemory:
    """Bytes allocated at the peak of the cold run and of the warm runs (None: they did not all
    run, or the cell reset the counter), above what was allocated when each began; ``*_exact``
    False for an upper bound. ``reserved_growth``: the caching allocator's growth in the cold run."""

    cold_peak: int | None  # None: the cell reset the counter itself (see ``phase_peak``)
    cold_exact: bool
    warm_peak: int | None = None
    warm_exact: bool = False
    reserved_growth: int = 0
    total: int | None = None
    before: int = 0


MEMORY = record({
    "cold_peak": optional(INTEGER), "cold_exact": FLAG, "warm_peak": optional(INTEGER), "warm_exact": FLAG,
    "reserved_growth": INTEGER, "total": optional(COUNT), "before": INTEGER,
}, required=("cold_peak", "cold_exact"))


def phase_peak(start: Mapping[str, Any], end: Mapping[str, Any]) -> tuple[int | None, bool]:
    """(peak above the allocation at ``start``, exact?) from two allocator readings. The counter only
    rises: a higher value at ``end`` was reached in the phase, an equal one bounds it; a lower one means
    the cell reset the counter itself, which leaves the peak unknown (None, False)."""
    if end[PEAK] > start[PEAK]:
        return end[PEAK] - start[ALLOCATED], True
    if end[PEAK] == start[PEAK]:
        return start[PEAK] - start[ALLOCATED], False
    return None, False


def device_memory(cuda: Any, before: Mapping[str, Any], after_cold: Mapping[str, Any],
                  after_warm: Mapping[str, Any] | None) -> DeviceMemory | None:
    """The cell's peak device memory from three readings of ``cuda``'s allocator (each with a
    "cuda" flag: the current device had a context), or None when the cell never used CUDA."""
    if not after_cold["cuda"]:
        return None
    start = before if before["cuda"] else dict.fromkeys(after_cold, 0)
    cold_peak, cold_exact = phase_peak(start, after_cold)
    warm_peak, warm_exact = phase_peak(after_cold, after_warm) if after_warm and after_warm["cuda"] else (None, False)
    return DeviceMemory(cold_peak, cold_exact, warm_peak, warm_exact,
                        reserved_growth=after_cold[RESERVED] - start[RESERVED],
                        total=cuda.get_device_properties(cuda.current_device()).total_memory,
                        before=start[ALLOCATED])


def _amount(peak: int | None, exact: bool) -> str:
    if peak is None:
        return "unknown (the cell reset torch's peak counter itself)"
    return format_bytes(peak) if exact else f"at most {format_bytes(peak)}"


def memory_sentence(memory: DeviceMemory | None) -> str:
    """"peak 11.2 GiB of 139 GiB during the cold run; 8 GiB in warm runs", with what it is above."""
    if memory is None:
        return NOT_MEASURED
    total = f" of {format_bytes(memory.total)}" if memory.total else ""
    parts = [f"peak {_amount(memory.cold_peak, memory.cold_exact)}{total} during the cold run "
             f"(above the {format_bytes(memory.before)} allocated before it)"]
    if memory.warm_peak is not None:
        below = "" if memory.warm_exact else " (they stayed below an earlier peak)"
        parts.append(f"{_amount(memory.warm_peak, memory.warm_exact)} in warm runs{below}")
    if memory.reserved_growth > 0:
        parts.append(f"the caching allocator reserved {format_bytes(memory.reserved_growth)} more")
    text = "; ".join(parts)
    if memory.cold_peak is not None and not memory.cold_exact:
        text += (". The cold run stayed below an earlier peak of this process, and %cudatime never resets "
                 "torch's peak counter: call torch.cuda.reset_peak_memory_stats() before the cell for the "
                 "exact figure")
    return text
