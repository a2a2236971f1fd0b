"""The machine a measurement runs on, as the kernel tells it in a few microseconds: the cores this process
may use, the load, how long the timing thread waited for a core, the involuntary context switches, and
each imported framework's thread pools (read and set, for ``--threads``).

``features/cpu_context`` reads it three times per call, ``options`` its usable cores. A framework's pools
are read only once it is in ``sys.modules``; BLAS pools through ``threadpoolctl`` (optional), if installed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

try:
    import resource
except ImportError:  # Windows: os.times instead
    resource = None  # type: ignore[assignment]

from ..backends import REGISTRY, Entry, entries
from ..backends.base import made_by

BLAS = "blas"  # threadpoolctl's user_api for BLAS libraries (OpenBLAS, MKL, BLIS, ...); an unseen BLAS: blas=None


def _read_proc(path: str) -> str | None:
    """A small /proc file's text, or None where it does not exist (not Linux, a sandbox). Raw
    os calls: Python's ``open`` costs 15 µs, these 2 µs."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 512).decode("ascii", "replace")
        finally:
            os.close(fd)
    except OSError:
        return None


class Sample(NamedTuple):
    """The machine at one moment: the 1-minute load average, the other threads ready to run
    (Linux), the seconds this thread has waited for a core so far (Linux's schedstat) and the
    process's involuntary context switches so far (Unix). None where the system does not say."""

    load: float | None = None
    ready: int | None = None
    waited: float | None = None
    preempted: int | None = None


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask (a container or ``taskset`` can give it
    fewer than the machine has), else the machine's count."""
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _declared(backend: Any, name: str) -> tuple[Any, ...]:
    """What a registry entry declares (``Backend.packages``, ``pools``, ``blas_users``), or nothing:
    an entry may be any object with a ``detect``, as a test's stand-in device is."""
    return tuple(getattr(backend, name, ()))


class Machine:
    """Where the CPU facts are read; a seam: tests pass a stand-in with fixed facts. One per magics instance: it
    keeps threadpoolctl's list of loaded libraries (1-2 ms to build), built again only once another framework is
    imported. What it knows of each framework (its pools, its packages, whether it calls BLAS) comes from the
    backends of ``registry`` (``backends.entries``): a new framework is its backend and one registry line."""

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
        """(1-minute load average, other threads ready to run now) from /proc/loadavg; elsewhere (or
        without ``ready``: 0.5 µs instead of 5) the load from ``os.getloadavg`` and no ready count;
        None where the system has none."""
        text = _read_proc("/proc/loadavg") if ready else None
        if text is not None:
            fields = text.split()
            running = fields[3].partition("/")[0]
            return float(fields[0]), max(int(running) - 1, 0)  # the thread reading it is running too
        with contextlib.suppress(AttributeError, OSError):  # Windows has none
            return os.getloadavg()[0], None
        return None, None

    def waits(self) -> tuple[float | None, int | None]:
        """(seconds this thread has waited for a core, the process's involuntary switches) so far."""
        text = _read_proc("/proc/thread-self/schedstat") or _read_proc("/proc/self/schedstat")
        waited = int(text.split()[1]) / 1e9 if text else None
        return waited, None if resource is None else resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw

    def _blas(self) -> list[Any] | None:
        """threadpoolctl's BLAS libraries loaded in this process; None without threadpoolctl; []
        before any framework that could load one is imported."""
        seen = tuple(name for name in self.pool_packages() if self._modules.get(name) is not None)
        if not seen:
            return []
        if seen != self._seen:
            try:
                import threadpoolctl
                self._controller = threadpoolctl.ThreadpoolController()
            except ImportError:
                self._controller = None
            self._seen = seen
        return None if self._controller is None else [
            lib for lib in self._controller.lib_controllers if lib.user_api == BLAS]

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
        """Run the block with ``threads`` threads (None: change nothing) in each framework's own pools (torch's
        intra-op pool) and in every BLAS pool that threadpoolctl sees, as torch's ``Timer(num_threads=)`` does;
        the user's settings come back afterwards, even when the block raises."""
        if threads is None:
            yield
            return
        own = [(pool, module, pool.threads(module)) for pool, module in self._own_pools()]
        limits = self._controller.limit(limits=threads, user_api=BLAS) if self._blas() else None
        try:
            for pool, module, _ in own:
                pool.set(module, threads)
            yield
        finally:
            for pool, module, before in own:
                pool.set(module, before)
            if limits is not None:
                limits.restore_original_limits()


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
