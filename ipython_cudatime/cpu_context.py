"""The CPU a measurement ran on: how many cores it could use, how loaded the machine was, how many
threads each imported framework's pools run, and the CPU time the warm runs used against their
wall time. Facts only; ``noise`` reads them to name why runs were noisy or slow.

Read three times per call (before the cold run, before and after the warm runs), never per run,
from what the kernel gives in a few microseconds: ``/proc/loadavg`` (the 1-minute load and the
threads ready to run now), ``/proc/self/schedstat`` (how long this thread waited for a core),
``getrusage`` (involuntary context switches) and the process's CPU times. A framework's pools
are read only when it is already in ``sys.modules``; BLAS pools through ``threadpoolctl``, an
optional package, where it is installed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from .backends import REGISTRY, Entry, entries
from .backends.base import made_by

if TYPE_CHECKING:
    from .clocks import Clock

BLAS = "blas"  # threadpoolctl's user_api for BLAS libraries (OpenBLAS, MKL, BLIS, ...); an unseen BLAS: blas=None
Reading = TypeVar("Reading", int, float)  # a counter read at the start and the end (seconds waited, switches)


def _read_proc(path: str) -> str | None:
    """A small /proc file's text, or None where it does not exist (not Linux, a sandbox). Raw
    os calls: Python's ``open`` costs 15 µs, these 2 µs."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 512).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def pools_text(threads: Mapping[str, int | None]) -> str:
    """``torch 2, openblas 2``; a BLAS threadpoolctl could not see reads as such."""
    if not threads:
        return "no framework thread pool"
    return ", ".join(f"{pool} {count}" if count is not None else f"{pool} not seen (threadpoolctl is not installed)"
                     for pool, count in threads.items())


class Sample(NamedTuple):
    """The machine at one moment: the 1-minute load average, the other threads ready to run
    (Linux), the seconds this thread has waited for a core so far (Linux's schedstat) and the
    process's involuntary context switches so far (Unix). None where the system does not say."""

    load: float | None = None
    ready: int | None = None
    waited: float | None = None
    preempted: int | None = None


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has none
        return None


def _load(ready: bool = True) -> tuple[float | None, int | None]:
    """(1-minute load average, other threads ready to run now) from /proc/loadavg; elsewhere (or
    without ``ready``: 0.5 µs instead of 5) the load from ``os.getloadavg`` and no ready count."""
    text = _read_proc("/proc/loadavg") if ready else None
    if text is None:
        return _load_average(), None
    fields = text.split()
    running = fields[3].partition("/")[0]
    return float(fields[0]), max(int(running) - 1, 0)  # the thread reading it is running too


def _waited() -> float | None:
    text = _read_proc("/proc/thread-self/schedstat") or _read_proc("/proc/self/schedstat")
    return int(text.split()[1]) / 1e9 if text else None


def _preempted() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask (a container or ``taskset`` can give it
    fewer than the machine has), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _declared(backend: Any, name: str) -> tuple[Any, ...]:
    """What a registry entry declares (``Backend.packages``, ``pools``, ``blas_users``), or nothing:
    an entry may be any object with a ``detect``, as a test's stand-in device is."""
    return tuple(getattr(backend, name, ()))


class Machine:
    """Where the CPU facts are read; a seam: tests pass a stand-in with fixed facts. One per
    magics instance, since it keeps threadpoolctl's list of loaded libraries (1-2 ms to build),
    built again only when another framework has been imported since. What it knows of each
    framework (its pools, its packages, whether it calls BLAS) comes from the backends of
    ``registry`` (``backends.entries``): a new framework is its backend and one registry line."""

    def __init__(self, modules: Mapping[str, Any] | None = None, registry: Iterable[Entry] = REGISTRY) -> None:
        self._modules = sys.modules if modules is None else modules
        self._entries = entries(registry)
        self._controller: Any = None  # threadpoolctl's ThreadpoolController, where it is installed
        self._seen: tuple[str, ...] | None = None

    def pool_packages(self) -> list[str]:
        """The packages of every framework known (its own, and those whose linear algebra goes
        through BLAS): a cell's work touched those among its values, and once one is imported it
        may have loaded a BLAS or OpenMP pool."""
        return list(dict.fromkeys(name for module, backend in self._entries for name in (
            module.partition(".")[0], *_declared(backend, "packages"), *_declared(backend, "blas_users"))))

    def touched(self, seen: list[Any]) -> list[str]:
        """The frameworks (of ``pool_packages``) whose objects are among ``seen``: those whose thread
        pools the cell's work could have run in, so that no other pool is blamed for its noise."""
        return [name for name in self.pool_packages() if made_by(seen, (name,))]

    def users(self, pools: Mapping[str, int | None]) -> dict[str, list[str]]:
        """{pool: the frameworks whose work runs in it} for ``pools``: a framework's own pool its
        packages (``Backend.pools``), any other (a BLAS library, or ``blas`` unseen) the packages
        whose linear algebra goes through BLAS (``Backend.blas_users``)."""
        own = {pool.name: list(_declared(backend, "packages")) for _, backend in self._entries
               for pool in _declared(backend, "pools")}
        blas = [name for _, backend in self._entries for name in _declared(backend, "blas_users")]
        return {pool: own.get(pool, blas) for pool in pools}

    def _own_pools(self) -> Iterator[tuple[Any, Any]]:
        """(pool, its framework's module) for each framework's own pool, its framework imported."""
        for module_name, backend in self._entries:
            module = self._modules.get(module_name)
            if module is not None:
                yield from ((pool, module) for pool in _declared(backend, "pools"))

    def cores(self) -> int:
        return usable_cores()

    def load(self, ready: bool = True) -> tuple[float | None, int | None]:
        """(1-minute load average, other threads ready to run, or None without ``ready``), None where
        the system has none."""
        return _load(ready)

    def waits(self) -> tuple[float | None, int | None]:
        """(seconds this thread has waited for a core, the process's involuntary switches) so far."""
        return _waited(), _preempted()

    def _blas(self) -> list[Any] | None:
        """threadpoolctl's BLAS libraries loaded in this process; None without threadpoolctl; []
        before any framework that could load one is imported."""
        seen = tuple(name for name in self.pool_packages() if self._modules.get(name) is not None)
        if not seen:
            return []
        if seen != self._seen:
            try:
                import threadpoolctl
            except ImportError:
                threadpoolctl = None
            self._controller = threadpoolctl.ThreadpoolController() if threadpoolctl is not None else None
            self._seen = seen
        if self._controller is None:
            return None
        return [lib for lib in self._controller.lib_controllers if lib.user_api == BLAS]

    def threads(self) -> dict[str, int | None]:
        """{pool: threads}: each imported framework's own pools (torch's intra-op pool), each BLAS
        library threadpoolctl sees (by its internal name, e.g. ``openblas``, ``mkl``); ``blas:
        None`` when a framework is imported but threadpoolctl is not installed to see its BLAS."""
        pools: dict[str, int | None] = {}
        for pool, module in self._own_pools():
            with contextlib.suppress(AttributeError):  # a module of that name that is not the framework
                pools[pool.name] = pool.threads(module)
        blas = self._blas()
        if blas is None:
            pools[BLAS] = None
        for lib in blas or []:
            pools[lib.internal_api] = max(pools.get(lib.internal_api) or 0, lib.num_threads)
        return pools

    @contextlib.contextmanager
    def limit(self, threads: int | None) -> Iterator[None]:
        """Run the block with ``threads`` threads in each framework's own pools (torch's intra-op
        pool) and in every BLAS pool that threadpoolctl sees, as torch's ``Timer(num_threads=)``
        does; the user's settings come back afterwards, even when the block raises. None: change
        nothing."""
        if threads is None:
            yield
            return
        own = [(pool, module, pool.threads(module)) for pool, module in self._own_pools()]
        blas = self._blas()
        limits = None
        try:
            if blas:
                limits = self._controller.limit(limits=threads, user_api=BLAS)
            for pool, module, _ in own:
                pool.set(module, threads)
            yield
        finally:
            for pool, module, before in own:
                pool.set(module, before)
            if limits is not None:
                limits.restore_original_limits()


class CpuWatch:
    """The three readings of one call, on the runner's clock: "before" the cold run (the load),
    "warm" as the warm runs begin (the clocks, the waits, the pools as the warm runs see them,
    inside --threads) and "after" they end (all but the pools). Each reads only what the context
    needs from that moment: a /proc file costs a few µs."""

    def __init__(self, machine: Machine, clock: Clock) -> None:
        self.machine, self.clock = machine, clock
        self.readings: dict[str, tuple[float, float, Sample]] = {}
        self.pools: dict[str, int | None] = {}

    def read(self, moment: str) -> None:
        machine = self.machine
        load = machine.load(ready=moment == "before") if moment != "warm" else (None, None)
        waits = machine.waits() if moment != "before" else (None, None)
        user, system = self.clock.cpu()
        self.readings[moment] = (self.clock.now(), user + system, Sample(*load, *waits))
        if moment == "warm":
            self.pools = machine.threads()

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


def joined(contexts: list[CpuContext | None]) -> CpuContext | None:
    """One context for warm runs read in several spans (an interleaved sweep's rounds): the first
    span's load, pools and frameworks, the last one's load after, and the CPU time, wall time, waits
    and switches of all of them added up (None where a span did not say)."""
    known = [context for context in contexts if context is not None]
    if not known:
        return None

    waited = [c.waited for c in known]
    preempted = [c.preempted for c in known]
    return dataclasses.replace(
        known[0], load_after=known[-1].load_after, cpu=sum(c.cpu for c in known), wall=sum(c.wall for c in known),
        waited=None if None in waited else sum(w for w in waited if w is not None),
        preempted=None if None in preempted else sum(p for p in preempted if p is not None))


def _delta(first: Reading | None, last: Reading | None) -> Reading | None:
    return None if first is None or last is None else last - first


class NoCpuWatch:
    """No facts read: what a bare ``measure`` call without a machine gets."""

    def read(self, moment: str) -> None:
        pass

    def context(self, seen: list[Any] | None = None) -> None:
        return None


@dataclass(frozen=True)
class CpuContext:
    """The CPU facts of one measurement (plain data, saved with the result).

    cores                  cores this process could use (affinity mask, else the machine's);
    load_before/after      the 1-minute load average before the cold run and after the warm runs
                           (this process included), None where the system has none;
    ready_before           other threads ready to run before the cold run (Linux), None elsewhere
                           (not read after the runs: the pools' own threads may still be spinning);
    threads                {pool: threads} during the warm runs: ``torch`` (intra-op), BLAS
                           libraries by name; ``blas: None`` where threadpoolctl could not look;
    cpu, wall              the process's CPU seconds (all its threads) and the wall seconds of the
                           warm runs (warm-up included);
    waited                 seconds the timing thread waited for a core during them (Linux), or None;
    preempted              involuntary context switches of the process during them (Unix), or None;
    users                  {pool: the frameworks whose work runs in it}, as their backends declare
                           (``Machine.users``); None in a file saved before it was recorded;
    touched                the frameworks whose objects the cell read, returned or bound (of
                           ``Machine.pool_packages``), so whose pools its work could run in; None where
                           not known (a file saved before it was recorded): every pool counts.
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
        """How many cores' worth of work the rest of the machine wanted: the larger of the load
        average before the call and the threads ready to run then (0 when neither is known)."""
        known = [value for value in (self.load_before, self.ready_before) if value is not None]
        return max(known) if known else 0.0

    @property
    def free_cores(self) -> float:
        return max(self.cores - self.others, 0.0)

    @property
    def cell_pools(self) -> dict[str, int | None]:
        """The pools the cell's work could have run in: those whose users (``users``) it touched
        (torch's where it touched torch, a BLAS library's where it touched NumPy; torch sizes its
        own BLAS threads with its intra-op pool). All of them where either is not known: without
        the evidence, no pool is cleared."""
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

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
