"""``--profile``: one extra run under ``torch.profiler``, summarized as counts, busy time and a verdict.

On a GPU it counts device kernels and measures how much of the run the GPU was
busy (the union of kernel intervals over the run's wall time). On the CPU there
are no kernels: it counts operator calls instead and says so.
"""

import contextlib
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field

from ..units import format_seconds

TOP = 5
LAUNCH_BOUND_BUSY = 0.5  # GPU busy less than half the run...
LAUNCH_BOUND_COUNT = 100  # ... across this many kernels: the launches, not the kernels, set the pace
GPU_BOUND_BUSY = 0.8
DISPATCH_BOUND_COUNT = 200  # CPU: this many operator calls...
DISPATCH_BOUND_MEAN = 50e-6  # ... each this short: dispatch overhead dominates


@dataclass
class Profile:
    """What one profiled run did. Times in seconds."""

    kernel_count: int
    kernel_time: float
    busy_fraction: float
    top: list = field(default_factory=list)  # (name, count, total seconds)
    verdict: str = ""
    counted: str = "device kernels"
    wall: float = None  # the profiled run itself, reported apart from the timed runs
    cold: bool = False
    warning: str = None

    def to_dict(self):
        return dict(self.__dict__, top=[list(row) for row in self.top])


def _union(intervals):
    total, end = 0.0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def _top(events, seconds):
    by_name = defaultdict(lambda: [0, 0.0])
    for event in events:
        by_name[event.name][0] += 1
        by_name[event.name][1] += seconds(event)
    rows = sorted(by_name.items(), key=lambda item: -item[1][1])[:TOP]
    return [(name, count, total) for name, (count, total) in rows]


def _gpu_verdict(count, kernel_time, busy, top):
    mean = kernel_time / count
    if busy < LAUNCH_BOUND_BUSY and count >= LAUNCH_BOUND_COUNT:
        return (f"launch-bound: {count:,} launches of ~{format_seconds(mean)}, GPU idle "
                f"{100 * (1 - busy):.0f}% of the time; batch the loop into one tensor op")
    if busy >= GPU_BOUND_BUSY and top:
        return f"GPU-bound: {100 * busy:.0f}% busy, most in {top[0][0]}"
    return f"mixed: GPU busy {100 * busy:.0f}% of the run across {count:,} kernels"


def _cpu_verdict(count, op_time, wall, top):
    mean = op_time / count if count else 0.0
    if count >= DISPATCH_BOUND_COUNT and mean < DISPATCH_BOUND_MEAN:
        return (f"dispatch-bound: {count:,} operator calls of ~{format_seconds(mean)} each, "
                "each paying Python and dispatcher overhead; batch the loop into one tensor op")
    if not top:
        return "no PyTorch operators ran"
    busy = op_time / wall if wall else 0.0
    share = min(top[0][2] / wall, 1.0) if wall else 0.0
    if busy < 0.5:
        return (f"overhead-bound: PyTorch operators fill only {100 * busy:.0f}% of the run; "
                "the rest is Python and the profiler's own bookkeeping")
    if share >= 0.5:
        return f"compute-bound: {100 * share:.0f}% of the run in {top[0][0]}"
    return f"mixed: {count:,} operator calls; the largest, {top[0][0]}, takes {100 * share:.0f}% of the run"


def _kernel_seconds(event):
    """A kernel's total device time; ``cuda_time_total`` before torch renamed it (2.4)."""
    total = getattr(event, "device_time_total", None)
    return (total if total is not None else event.cuda_time_total) / 1e6


@contextlib.contextmanager
def _silent_stderr_fd():
    """Hide what C++ writes to fd 2 meanwhile: Kineto logs "USDT: profiler_start/stop" lines,
    which a notebook would show as red stderr output; no setting turns them off."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class TorchProfiler:
    """A context manager around one run; ``summary(run)`` reads what it recorded."""

    def __init__(self, torch):
        self._torch = torch
        profiler = torch.profiler
        self._cuda = torch.cuda.is_available()
        activities = [profiler.ProfilerActivity.CPU]
        if self._cuda:
            activities.append(profiler.ProfilerActivity.CUDA)
        self._profile = profiler.profile(activities=activities)

    def __enter__(self):
        with _silent_stderr_fd():
            self._profile.__enter__()
        return self

    def __exit__(self, *exc):
        with _silent_stderr_fd():
            return self._profile.__exit__(*exc)

    def summary(self, run, cold=False):
        events = self._profile.events()
        device_type = self._torch.autograd.DeviceType
        kernels = [e for e in events if e.device_type == device_type.CUDA]
        warning = ("the profiler slows the run it watches: the cold run's own timing is inflated "
                   "here, so read the counts, not the times" if cold else None)
        if kernels:
            intervals = [(e.time_range.start / 1e6, e.time_range.end / 1e6) for e in kernels]
            busy = min(_union(intervals) / run.wall, 1.0) if run.wall else 0.0
            kernel_time = sum(stop - start for start, stop in intervals)
            top = _top(kernels, _kernel_seconds)
            return Profile(len(kernels), kernel_time, busy, top, _gpu_verdict(len(kernels), kernel_time, busy, top),
                           "device kernels", run.wall, cold, warning)
        ops = [e for e in events if e.cpu_parent is None and e.device_type == device_type.CPU]
        op_time = sum(e.cpu_time_total for e in ops) / 1e6
        top = _top(ops, lambda e: e.cpu_time_total / 1e6)
        counted = ("operator calls (no device kernels ran: counted on the CPU)" if self._cuda
                   else "operator calls (CPU only: no device kernels to count)")
        return Profile(len(ops), op_time, None, top, _cpu_verdict(len(ops), op_time, run.wall, top),
                       counted, run.wall, cold, warning)
