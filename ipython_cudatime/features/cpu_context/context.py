"""The CPU facts of one measurement (``CpuContext``): cores, load, each framework pool's threads, and
the warm runs' CPU time against their wall time. Facts only, ``noise`` judges them. Read three times
per call (``CpuWatch``), never per run, from what ``machine.Machine`` reads in microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ...measure.machine import Sample
from ...measure.runner import Outcome, Watch
from ...results.schema import AMOUNT, COUNT, SECONDS, TEXT, dict_of, list_of, optional, record, whole

if TYPE_CHECKING:
    from ...measure.machine import Clock, Machine

Reading = TypeVar("Reading", int, float)  # a counter read at the start and the end (seconds waited, switches)


def pools_text(threads: Mapping[str, int | None]) -> str:
    """``torch 2, openblas 2``; a BLAS threadpoolctl could not see reads as such."""
    if not threads:
        return "no framework thread pool"
    return ", ".join(f"{pool} {count}" if count is not None else f"{pool} not seen (threadpoolctl is not installed)"
                     for pool, count in threads.items())


class CpuWatch(Watch):
    """The three readings of one call: "before" the cold run (the load), "warm" as the warm runs begin
    (clocks, waits, and the pools as they see them, inside --threads) and "after" (all but the pools).
    Each reads only what that moment needs: a /proc file costs a few µs."""

    def __init__(self, machine: Machine, clock: Clock) -> None:
        self.machine, self.clock = machine, clock
        self.readings: dict[str, tuple[float, float, Sample]] = {}
        self.pools: dict[str, int | None] = {}

    def before(self) -> None:
        self._read("before")

    def before_warm(self) -> None:
        self._read("warm")

    def after_warm(self) -> None:
        self._read("after")

    def _read(self, moment: str) -> None:
        machine = self.machine
        load = machine.load(ready=moment == "before") if moment != "warm" else (None, None)
        waits = machine.waits() if moment != "before" else (None, None)
        user, system = self.clock.cpu()
        self.readings[moment] = (self.clock.now(), user + system, Sample(*load, *waits))
        if moment == "warm":
            self.pools = machine.threads()

    def record(self, outcome: Outcome) -> CpuContext | None:
        return self.context(outcome.seen)

    def context(self, seen: list[Any] | None = None) -> CpuContext | None:
        """The ``CpuContext`` of the call (``seen``: what the cell read, returned and bound, whose
        frameworks it touched; None: not known), or None when the warm runs never began."""
        if not {"before", "warm", "after"} <= self.readings.keys():
            return None
        (_, _, first), (t0, cpu0, start), (t1, cpu1, end) = (self.readings[m] for m in ("before", "warm", "after"))
        return CpuContext(
            cores=self.machine.cores(), load_before=first.load, load_after=end.load,
            ready_before=first.ready, threads=dict(self.pools), users=self.machine.users(self.pools),
            cpu=cpu1 - cpu0, wall=t1 - t0, waited=_delta(start.waited, end.waited),
            preempted=_delta(start.preempted, end.preempted),
            touched=self.machine.touched(seen) if seen is not None else None)


def _delta(first: Reading | None, last: Reading | None) -> Reading | None:
    return None if first is None or last is None else last - first


@dataclass(frozen=True)
class CpuContext:
    """The CPU facts of one measurement (plain data, saved with the result). None: not known.

    cores              cores this process could use (affinity mask, else the machine's)
    load_before/after  1-minute load average before the cold run and after the warm runs
    ready_before       other threads ready to run before the cold run (Linux; not read after the
                       runs, where the pools' own threads may still be spinning)
    threads            {pool: threads} during the warm runs; None where threadpoolctl could not look
    cpu, wall          the process's CPU seconds and the wall seconds of the warm runs (warm-up included)
    waited, preempted  seconds the timing thread waited for a core (Linux); involuntary switches (Unix)
    users, touched     {pool: frameworks whose work runs in it} (``Machine.users``); the frameworks the
                       cell read, returned or bound: whose pools its work could run in (None in a file
                       saved before they were recorded: every pool counts)
    """

    cores: int
    load_before: float | None = None
    load_after: float | None = None
    ready_before: int | None = None
    threads: dict[str, int | None] = field(default_factory=dict)
    cpu: float = 0.0
    wall: float = 0.0
    waited: float | None = None
    preempted: int | None = None
    touched: list[str] | None = None
    users: dict[str, list[str]] | None = None

    @property
    def cpu_share(self) -> float | None:
        """CPU time over wall time of the warm runs: 1.0 is one thread busy all along."""
        return self.cpu / self.wall if self.wall > 0 else None

    @property
    def waited_share(self) -> float | None:
        """The part of the warm runs' wall time the timing thread spent waiting for a core."""
        return self.waited / self.wall if self.waited is not None and self.wall > 0 else None

    @property
    def others(self) -> float:
        """How many cores' worth of work the rest of the machine wanted before the call (0: not known)."""
        known = [value for value in (self.load_before, self.ready_before) if value is not None]
        return max(known) if known else 0.0

    @property
    def free_cores(self) -> float:
        return max(self.cores - self.others, 0.0)

    @property
    def cell_pools(self) -> dict[str, int | None]:
        """The pools the cell's work could have run in: those whose ``users`` it touched. All of them
        where either is not known: without the evidence, no pool is cleared."""
        if self.touched is None or self.users is None:
            return dict(self.threads)
        touched = set(self.touched)
        return {pool: count for pool, count in self.threads.items() if touched & set(self.users.get(pool, ()))}

    @property
    def widest_pool(self) -> tuple[str, int] | tuple[None, int]:
        """(pool, threads) of the pool the cell's work could have run in (``cell_pools``) with the most
        threads (the first recorded, torch's, on a tie), or (None, 0)."""
        known = [(pool, threads) for pool, threads in self.cell_pools.items() if threads is not None]
        return max(known, key=lambda item: item[1]) if known else (None, 0)


CPU_CONTEXT = record({
    "cores": whole("a whole number of cores, at least 1", least=1),
    "load_before": optional(AMOUNT), "load_after": optional(AMOUNT), "ready_before": optional(COUNT),
    "threads": dict_of(optional(COUNT)), "cpu": SECONDS, "wall": SECONDS, "waited": optional(SECONDS),
    "preempted": optional(COUNT), "touched": optional(list_of(TEXT)), "users": optional(dict_of(list_of(TEXT))),
}, required=("cores",))
