"""``--profile`` and ``profile_trace``: a ``trace.DeviceActivity`` (a live run's, exported, or a file's)
summarized as counts, busy time (the union of device intervals over the window) and a verdict. Without
a traced device (CPU-only PyTorch) the outermost operator calls stand in for kernels.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .record import Profile
from .trace import CELL_MARK, COLLECTIVE, RUN_MARK, load_trace
from .verdicts import cpu_verdict, device_verdict

if TYPE_CHECKING:
    from ...results.result import Run
    from .trace import DeviceActivity, Span

TOP = 5


def union(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length covered by (start, end) intervals, overlaps counted once."""
    total, end = 0.0, -math.inf
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def _clipped(spans: Iterable[Span], window: tuple[float, float]) -> list[tuple[float, float]]:
    start, end = window
    return [(max(s.start, start), min(s.end, end)) for s in spans if s.end > start and s.start < end]


def _top(spans: Iterable[Span]) -> list[tuple[str, int, float]]:
    by_name: defaultdict[str, list[Any]] = defaultdict(lambda: [0, 0.0])  # name -> [calls, seconds]
    for span in spans:
        by_name[span.name][0] += 1
        by_name[span.name][1] += span.duration
    rows = sorted(by_name.items(), key=lambda item: -item[1][1])[:TOP]
    return [(name, count, total) for name, (count, total) in rows]


def _window(activity: DeviceActivity, spans: Sequence[Span]) -> tuple[float, float]:
    if activity.window is not None:
        return activity.window
    if not spans:
        return (0.0, 0.0)
    return (min(s.start for s in spans), max(s.end for s in spans))


def _device_profile(activity: DeviceActivity) -> Profile:
    window = _window(activity, activity.device)
    length = window[1] - window[0]
    busy = union(_clipped(activity.device, window))
    communication = sum(k.duration for k in activity.kernels if COLLECTIVE.search(k.name))
    kernel_time = sum(k.duration for k in activity.kernels)
    launches = activity.launches
    return Profile(
        kernel_count=len(activity.kernels), kernel_time=kernel_time,
        busy_fraction=min(busy / length, 1.0) if length > 0 else 0.0,
        top=_top(activity.kernels), copy_count=len(activity.copies), window=length,
        breakdown={"compute": kernel_time - communication, "communication": communication,
                   "memory": sum(c.duration for c in activity.copies)},
        launch_count=len(launches), sync_time=_cell_syncs(activity, window),
        launch_mean=sum(s.duration for s in launches) / len(launches) if launches else None)


def _cell_syncs(activity: DeviceActivity, window: tuple[float, float]) -> float:
    """Seconds the host blocked in synchronize calls of the cell's own code (``CELL_MARK``), else
    of the whole window (a trace not written by ``--profile``)."""
    return union(_clipped(activity.syncs, activity.cell or window))


def _operator_profile(activity: DeviceActivity) -> Profile:
    window = _window(activity, activity.operators)
    counted = ("operator calls (no device kernels ran: counted on the CPU)" if activity.device_traced
               else "operator calls (CPU only: no device kernels to count)")
    return Profile(kernel_count=len(activity.operators), kernel_time=sum(o.duration for o in activity.operators),
                   busy_fraction=None, top=_top(activity.operators), counted=counted,
                   window=window[1] - window[0], sync_time=_cell_syncs(activity, window))


def summarize(activity: DeviceActivity) -> Profile:
    device = bool(activity.device or activity.launches)
    profile = _device_profile(activity) if device else _operator_profile(activity)
    profile.kind, profile.verdict = (device_verdict if device else cpu_verdict)(profile)
    return profile


def profile_trace(path: str | os.PathLike[str]) -> Profile:
    """Summarize a Kineto / Chrome-trace file (``.json`` or ``.json.gz``) as a ``Profile``; a file
    that is not a trace raises ``TraceError`` naming it."""
    profile = summarize(load_trace(path))
    profile.trace_file = str(path)
    return profile


@contextlib.contextmanager
def _silent_stderr_fd() -> Iterator[None]:
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
    """A context manager around one run; ``summary(run)`` reads what it recorded. The run and the
    cell's code in it are marked (``RUN_MARK``, ``CELL_MARK``: annotations, never work), so that its
    trace carries the run's span and leaves the harness's synchronizations out of the cell's.
    ``trace`` keeps the Chrome trace there (``--trace``), else a temporary file is read and removed.
    """

    def __init__(self, torch: Any, trace: str | None = None) -> None:
        profiler = torch.profiler
        activities = [profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(profiler.ProfilerActivity.CUDA)
        self._profile = profiler.profile(activities=activities)
        self._mark = profiler.record_function(RUN_MARK)
        self._record_function = profiler.record_function
        self._trace = trace

    def cell(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """``fn`` inside a ``CELL_MARK`` range: what the runner calls as the profiled run's cell."""
        def marked() -> Any:
            with self._record_function(CELL_MARK):
                return fn()
        return marked

    def __enter__(self) -> TorchProfiler:
        with _silent_stderr_fd():
            self._profile.__enter__()
        self._mark.__enter__()
        return self

    def __exit__(self, *exc: object) -> bool | None:
        self._mark.__exit__(*exc)
        with _silent_stderr_fd():
            return bool(self._profile.__exit__(*exc))

    def summary(self, run: Run, cold: bool = False) -> Profile:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "trace.json") if self._trace is None else self._trace
            with _silent_stderr_fd():
                self._profile.export_chrome_trace(path)
            profile = summarize(load_trace(path))
        profile.wall, profile.cold, profile.trace_file = run.wall, cold, self._trace
        if cold:
            profile.warning = ("the profiler slows the run it watches: the cold run's own timing is inflated "
                               "here, so read the counts, not the times")
        return profile
