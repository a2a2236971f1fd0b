"""``%cudatime_auto on``: every following cell timed once, synchronized, with a one-line summary.

In the spirit of ipython-autotime, but it waits for the devices before and after
the cell, so GPU work is counted. No cell is run twice: side effects happen once.
When the same cell is run again, the line shows its first time beside it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..backends import DeviceSet, Entry
from ..measure.machine import Clock
from ..units import format_seconds as fmt
from ..units import ratio_text
from .display import Display


class AutoTimer:
    _devices: DeviceSet  # by pre_run_cell(): the devices of the cell being timed

    def __init__(self, shell: Any, registry: Collection[Entry], clock: Clock, display: Display) -> None:
        self.shell = shell
        self.display = display  # how its line is shown
        self.registry = registry
        self.clock = clock
        self.enabled = False
        self.first: dict[str, float] = {}  # cell source -> its first synchronized time
        self._start: float | None = None

    def enable(self, on: bool) -> None:
        if on != self.enabled:
            change = self.shell.events.register if on else self.shell.events.unregister
            change("pre_run_cell", self.pre_run_cell)
            change("post_run_cell", self.post_run_cell)
        self.enabled = on

    def pre_run_cell(self, info: Any = None) -> None:
        self._devices = DeviceSet.detect(self.registry)
        self._devices.synchronize()
        self._start = self.clock.now()

    def post_run_cell(self, result: Any = None) -> None:
        if self._start is None:
            return
        host = self.clock.now() - self._start
        value = getattr(result, "result", None)
        self._devices.synchronize(lambda: [value])
        wall = self.clock.now() - self._start
        self._start = None
        source = getattr(getattr(result, "info", None), "raw_cell", None)
        if source is None or source.lstrip().startswith("%cudatime_auto"):
            return
        self.display.line(self.summary(source, host, wall))

    def summary(self, source: str, host: float, wall: float) -> str:
        synced = ", ".join(self._devices.names) or "no device"
        line = f"cudatime: {fmt(wall)} synchronized ({synced}); host {fmt(host)}"
        first = self.first.setdefault(source, wall)
        if first is not wall:
            line += f"; first run of this cell: {fmt(first)} ({ratio_text(first / wall)} this run)"
        return line
