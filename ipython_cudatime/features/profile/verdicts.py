"""The ``--profile`` verdict: one sentence naming what limited the run, with its numbers. Every
threshold is here, with the reason for its value; ``kind`` is a stable key ("GPU-bound", ...)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...units import count_text
from ...units import format_seconds as fmt
from ...units import percent_text as _percent

if TYPE_CHECKING:
    from .record import Profile

Verdict = tuple[str, str]  # (kind, sentence)

# The GPU works at least this much of the window: making the host faster can win at most
# 1/0.8 = 1.25x, so the kernels themselves set the pace.
GPU_BOUND_BUSY = 0.8
# Below this the GPU idles more than it works: the host, not the device, sets the pace.
IDLE_BUSY = 0.5
# Launch-bound needs many kernels (a loop, not a handful of calls)...
LAUNCH_BOUND_COUNT = 100
# ... with little idle time per kernel: a launch costs 5-10 us of host time, a few times that under
# the profiler; longer gaps are other host work (Python, data loading): host-bound.
LAUNCH_GAP = 100e-6
# Collectives (NCCL/RCCL) taking more device time than everything else together.
COMMUNICATION_SHARE = 0.5
# The host blocked in synchronize calls this share of the window: each drains the queue, so the GPU
# idles while the host prepares the next launch; above it, removing them is the first thing to try.
SYNC_SHARE = 0.3
# CPU only: this many operator calls, each this short, and dispatch overhead dominates.
DISPATCH_BOUND_COUNT = 200
DISPATCH_BOUND_MEAN = 50e-6
# CPU only: one operator taking this share of the run is where the time goes ("operator-bound": whether
# it is compute- or memory-bound is the roofline's question, so the profile never uses those words).
OPERATOR_SHARE = 0.5
# A share this close to a threshold is said to be near it: the same ``a @ a`` on a CPU measured 62% in
# aten::matmul once and 44% another time, so a verdict within 15 points of its line may flip.
NEAR = 0.15


def _near(value: float, line: float, between: str) -> str:
    """``, near the 50% line between host-bound and mixed`` when ``value`` is within NEAR of ``line``."""
    return f", near the {_percent(line)} line between {between}" if abs(value - line) <= NEAR else ""


def short_name(name: str) -> str:
    """A kernel's name without its return type, template and argument lists, for one sentence."""
    return re.split(r"[<(]", name.removeprefix("void "), maxsplit=1)[0] or "?"


def device_verdict(p: Profile) -> Verdict:
    """The verdict for a trace with device activity (or launches that recorded none)."""
    device_time = sum(p.breakdown.values())
    if p.kernel_count + p.copy_count == 0:
        launched = (f"; the host made {p.launch_count:,} launch calls, but no kernel was recorded"
                    if p.launch_count else "")
        return "no device activity", f"no device activity: no kernel, memcpy or memset events{launched}"
    assert p.busy_fraction is not None  # a profile with a traced device has its busy fraction
    window = f"the {fmt(p.window)} window"
    if device_time and p.breakdown["communication"] / device_time >= COMMUNICATION_SHARE:
        return "communication-bound", (
            f"communication-bound: NCCL/RCCL collectives take {_percent(p.breakdown['communication'] / device_time)} "
            f"of device time ({fmt(p.breakdown['communication'])} of {fmt(device_time)}); overlap them with "
            "compute or exchange less")
    if p.busy_fraction >= GPU_BOUND_BUSY:
        name, calls, seconds = _largest(p)
        return "GPU-bound", (f"GPU-bound: busy {_percent(p.busy_fraction)} of {window}, most in {name} "
                             f"({count_text(calls, 'calls')}, {fmt(seconds)})"
                             f"{_near(p.busy_fraction, GPU_BOUND_BUSY, 'GPU-bound and mixed')}")
    if p.window and p.sync_time / p.window >= SYNC_SHARE:
        return "synchronization", (
            f"synchronization: the host waited in synchronize calls for {_percent(p.sync_time / p.window)} of "
            f"{window} ({fmt(p.sync_time)}) while the GPU was busy {_percent(p.busy_fraction)}; each wait "
            "drains the queue (.item(), .cpu(), print of a tensor): move them out of the loop")
    return _idle_verdict(p, window)


def _largest(p: Profile) -> tuple[str, int, float]:
    """(name, calls, seconds) of what took the most device time: the top kernel, or memory copies
    and sets together when they took more than it (a host-to-device copy loop is not its kernels)."""
    copies = ("memory copies and sets", p.copy_count, p.breakdown.get("memory", 0.0))
    if not p.top or copies[2] > p.top[0][2]:
        return copies
    name, calls, seconds = p.top[0]
    return short_name(name), calls, seconds


def _idle_verdict(p: Profile, window: str) -> Verdict:
    assert p.busy_fraction is not None and p.window is not None  # a profile with a traced device has both
    count = p.kernel_count + p.copy_count
    idle = (1 - p.busy_fraction) * p.window
    if p.busy_fraction < IDLE_BUSY and count >= LAUNCH_BOUND_COUNT and idle / count <= LAUNCH_GAP:
        mean = sum(p.breakdown.values()) / count
        # the launch calls' own time under the profiler, which adds its bookkeeping to each call
        host = f", {fmt(p.launch_mean)} of host time each as profiled" if p.launch_mean is not None else ""
        return "launch-bound", (f"launch-bound: {count:,} launches of ~{fmt(mean)}{host}, GPU idle "
                                f"{_percent(1 - p.busy_fraction)} of the time; batch the loop into one tensor op")
    if p.busy_fraction < IDLE_BUSY:
        return "host-bound", (f"host-bound: the GPU idles {_percent(1 - p.busy_fraction)} of {window} with "
                              f"{count_text(count, 'kernels and copies')}"
                              f"{_near(p.busy_fraction, IDLE_BUSY, 'host-bound and mixed')}; the time goes to host "
                              "work between them (Python, data loading, or the profiler's own gaps)")
    near = (_near(p.busy_fraction, IDLE_BUSY, "host-bound and mixed")
            or _near(p.busy_fraction, GPU_BOUND_BUSY, "mixed and GPU-bound"))
    return "mixed", (f"mixed: GPU busy {_percent(p.busy_fraction)} of {window} across "
                     f"{count_text(count, 'kernels and copies')}{near}; no single cause dominates")


def cpu_verdict(p: Profile) -> Verdict:
    """The verdict when no device was traced: operator calls stand in for kernels."""
    count, op_time, window, top = p.kernel_count, p.kernel_time, p.window, p.top
    mean = op_time / count if count else 0.0
    if count >= DISPATCH_BOUND_COUNT and mean < DISPATCH_BOUND_MEAN:
        return "dispatch-bound", (f"dispatch-bound: {count:,} operator calls of ~{fmt(mean)} each, "
                                  "each paying Python and dispatcher overhead; batch the loop into one tensor op")
    if not top:
        return "no operators", "no PyTorch operators ran"
    busy = op_time / window if window else 0.0
    share = min(top[0][2] / window, 1.0) if window else 0.0
    if busy < IDLE_BUSY:
        return "overhead-bound", (f"overhead-bound: PyTorch operators fill only {_percent(busy)} of the run"
                                  f"{_near(busy, IDLE_BUSY, 'overhead-bound and the rest')}; "
                                  "the rest is Python and the profiler's own bookkeeping")
    if share >= OPERATOR_SHARE:
        return "operator-bound", (f"operator-bound: {_percent(share)} of the run in {top[0][0]}"
                                  f"{_near(share, OPERATOR_SHARE, 'operator-bound and mixed')}, not in Python "
                                  "or dispatch (whether it is compute- or memory-bound: --roofline)")
    return "mixed", (f"mixed: {count_text(count, 'operator calls')}; the largest, {top[0][0]}, takes "
                     f"{_percent(share)} of the run{_near(share, OPERATOR_SHARE, 'mixed and operator-bound')}")
