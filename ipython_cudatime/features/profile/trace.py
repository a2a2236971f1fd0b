"""What ran on the device, as plain data, read from a Kineto / Chrome-trace JSON file (what
``export_chrome_trace`` writes): ``--profile`` exports its live run and ``profile_trace(path)`` reads
a file, both here, so that they never disagree. By category (``cat``; ``ts``, ``dur`` in µs):
``kernel``, ``gpu_memcpy``, ``gpu_memset`` are device work; ``gpu_user_annotation`` (a range drawn
on the GPU timeline) is not, and is never counted: it would fill the idle gaps it spans;
``cuda_runtime`` / ``cuda_driver`` are host calls (HIP's too); ``cpu_op`` the operators.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Event = dict[str, Any]  # one trace event, as the JSON holds it

COPY_CATEGORIES = ("gpu_memcpy", "gpu_memset")  # device work beside the kernels ("kernel")
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver")
# cudaLaunchKernel(ExC), cuLaunchKernel(Ex), cudaLaunchCooperativeKernel, hip(Ext)(Module)LaunchKernel,
# and graph launches (one call, many kernels)
LAUNCH = re.compile(r"Launch\w*Kernel|GraphLaunch")
# calls that block the host until the device (cudaDeviceSynchronize, cuCtxSynchronize), a
# stream or an event is done; hip* alike
SYNC = re.compile(r"^(cuda|cu|hip)(Device|Ctx|Stream|Event)Synchronize")
# The range ``--profile`` draws around the run it watches (a ``record_function``): in a trace
# it marks the profiled run's synchronized span on the trace's own clock.
RUN_MARK = "ipython_cudatime: profiled run"
# The range drawn around the cell's own code inside that run: the harness's synchronizations before
# and after it (``runner.timed_run``) fall outside it and are never the cell's.
CELL_MARK = "ipython_cudatime: cell"
# NCCL's kernels (ncclKernel_*, ncclDevKernel_*); RCCL, ROCm's NCCL, keeps the names
COLLECTIVE = re.compile(r"nccl|rccl", re.IGNORECASE)


class TraceError(ValueError):
    """The file is not a Chrome trace; the message names the file."""


@dataclass(frozen=True)
class Span:
    """One timed event, in seconds on the trace's clock."""

    name: str
    start: float
    duration: float

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True)
class DeviceActivity:
    """What one trace shows: device intervals (``kernels``, ``copies``), host calls (``launches``,
    ``syncs``), each thread's outermost CPU ``operators``, and the (start, end) of the ``RUN_MARK`` and
    ``CELL_MARK`` ranges (``window``, ``cell``) where ``--profile`` drew them. ``device_traced``: the
    profiler watched a GPU at all, so a GPU trace without kernels reads as "no device activity"
    rather than counting operators as a CPU-only one does.
    """

    kernels: tuple[Span, ...] = ()
    copies: tuple[Span, ...] = ()
    launches: tuple[Span, ...] = ()
    syncs: tuple[Span, ...] = ()
    operators: tuple[Span, ...] = ()
    window: tuple[float, float] | None = None
    device_traced: bool = False
    cell: tuple[float, float] | None = None

    @property
    def device(self) -> tuple[Span, ...]:
        return self.kernels + self.copies


def _read(path: str | os.PathLike[str]) -> Any:
    """The file's JSON; gzip when it starts with gzip's magic bytes, whatever its name."""
    raw = Path(path).read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (OSError, EOFError, ValueError) as exc:
        raise TraceError(f"{path} is not a Chrome trace (JSON, optionally gzipped): {exc}") from None


def _span(event: Event) -> Span:
    return Span(str(event.get("name", "")), float(event["ts"]) / 1e6, float(event.get("dur", 0.0)) / 1e6)


def outermost(events: Iterable[Event]) -> list[Event]:
    """The events no other event of the same thread contains (operators called by operators drop out)."""
    by_thread: defaultdict[tuple[Any, Any], list[Event]] = defaultdict(list)
    for event in events:
        by_thread[(event.get("pid"), event.get("tid"))].append(event)
    kept = []
    for thread in by_thread.values():
        end: float | None = None
        for event in sorted(thread, key=lambda e: (float(e["ts"]), -float(e.get("dur", 0.0)))):
            if end is None or float(event["ts"]) >= end:
                kept.append(event)
                end = float(event["ts"]) + float(event.get("dur", 0.0))
    return kept


def load_trace(path: str | os.PathLike[str]) -> DeviceActivity:
    """Read a Kineto / Chrome-trace file (``.json`` or ``.json.gz``) into a ``DeviceActivity``: its
    events are ``{"traceEvents": [...]}`` (what Kineto writes) or a bare list."""
    data = _read(path)
    listed = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(listed, list) or not all(isinstance(event, dict) for event in listed):
        raise TraceError(f"{path} is not a Chrome trace: it has no list of trace events (\"traceEvents\")")
    by_category: defaultdict[Any, list[Event]] = defaultdict(list)
    for event in (e for e in listed if e.get("ph") == "X" and "ts" in e):  # complete events, with a start
        by_category[event.get("cat")].append(event)
    kernels = tuple(_span(e) for e in by_category["kernel"])
    copies = tuple(_span(e) for category in COPY_CATEGORIES for e in by_category[category])
    runtime = [e for category in RUNTIME_CATEGORIES for e in by_category[category]]
    properties = data.get("deviceProperties") if isinstance(data, dict) else None
    annotations = by_category["user_annotation"]
    return DeviceActivity(
        kernels=kernels, copies=copies,
        launches=tuple(_span(e) for e in runtime if LAUNCH.search(str(e.get("name", "")))),
        syncs=tuple(_span(e) for e in runtime if SYNC.search(str(e.get("name", "")))),
        operators=tuple(_span(e) for e in outermost(by_category["cpu_op"])),
        window=_marked(annotations, RUN_MARK), cell=_marked(annotations, CELL_MARK),
        device_traced=bool(properties or runtime or kernels or copies))


def _marked(annotations: Iterable[Event], mark: str) -> tuple[float, float] | None:
    """(start, end) over the ``record_function`` ranges named ``mark``, or None without one."""
    spans = [_span(e) for e in annotations if e.get("name") == mark]
    return (min(s.start for s in spans), max(s.end for s in spans)) if spans else None
