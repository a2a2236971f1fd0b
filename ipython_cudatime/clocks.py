"""The clocks of a run and where they are read: the bottom of the house, so that the runner, the
result, the CPU context and the features share these types without knowing one another.

``Run`` is one run's clocks, ``Harness`` the harness's own cost from null runs, and ``Clock`` the
seam the runner reads time through (tests pass a fake clock, exact and never sleeping).
"""

from __future__ import annotations

import operator
import os
import time
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeVar

try:
    import resource
except ImportError:  # Windows: os.times instead
    resource = None  # type: ignore[assignment]


class Run(NamedTuple):
    """The clocks of one run, in seconds.

    host   until Python got control back (what ``%time`` prints);
    wall   synchronized: all devices drained before and after;
    device event time on the current stream, or None without a device clock;
    cpu_user, cpu_sys  process CPU time over the wall span (cold run only).

    A NamedTuple: cheap to create on the hot path, and never tracked by the GC.
    """

    host: float
    wall: float
    device: float | None = None
    cpu_user: float | None = None
    cpu_sys: float | None = None
    batch: int = 1  # runs of the cell this sample timed (see ``batching``); the clocks are per run


class Harness(NamedTuple):
    """The harness's own cost, from null runs (nothing in them) through the same path and devices.

    wall    median synchronized time of a null run: what the clocks and synchronize add to a sample;
    jitter  IQR of those times: the spread the clocks show on their own;
    device  median device-clock time of a null run, or None without a device clock.
    """

    wall: float
    jitter: float
    device: float | None = None


Saved = TypeVar("Saved", Run, Harness)
# Each kind's values in the order of its fields, read in one C call (dict lookups by name, so in any key order)
_VALUES = {kind: operator.itemgetter(*kind._fields) for kind in (Run, Harness)}


def from_saved(kind: type[Saved], data: Mapping[str, Any]) -> Saved:
    """``kind(**data)`` for clocks read back from a saved line (``data`` checked by ``schema``), sooner
    where it holds every field (as many keys as fields, none missing: so no foreign one): the values go
    into the tuple as they are, read by name in one step, where a call by keyword compares each key with
    the names as text (JSON's keys are equal to the fields' names, not the same strings), and where
    testing the keys' order first (``tuple(data) == kind._fields``) cost as much again: 300 ns a run."""
    if len(data) == len(kind._fields):
        try:
            return tuple.__new__(kind, _VALUES[kind](data))
        except KeyError:  # a field missing, a foreign key in its place: the call says which
            pass
    return kind(**data)


class Clock:
    """Where the runner reads time; a seam: tests pass a fake clock, exact and never sleeping."""

    def now(self) -> float:
        """Seconds on the finest monotonic clock (``time.perf_counter``)."""
        return time.perf_counter()

    def cpu(self) -> tuple[float, float]:
        """(user, system) CPU seconds this process has used so far: ``getrusage`` as IPython's
        ``%time`` reads them (microseconds, from the scheduler's exact runtime on Linux), where
        ``os.times`` counts 10 ms ticks and reads 0 for a short sweep point's warm runs."""
        if resource is None:  # Windows
            times = os.times()
            return times.user, times.system
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime, usage.ru_stime
