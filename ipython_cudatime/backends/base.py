"""The one small interface every device backend implements, and the one device timer: the runner
only talks to these, so a new framework (or a test's asynchronous device) plugs in without touching it."""

from __future__ import annotations

import types
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, ClassVar

from .objects import Kind

SHALLOW = 100  # items of a list, tuple or dict value looked at for a framework's objects, at most


def _modules_of(value: object) -> list[object]:
    """The modules ``value`` comes from: a module's name; the defining module of a function, of a class and of
    every class in its MRO (a user's subclass of a framework's class is the framework's)."""
    if isinstance(value, types.ModuleType):
        return [value.__name__]
    classes = value.__mro__ if isinstance(value, type) else type(value).__mro__
    own = [] if isinstance(value, type) else [getattr(value, "__module__", None)]
    return own + [klass.__module__ for klass in classes]


def _shallow(values: Iterable[Any]) -> Iterator[Any]:
    """The values, and the items of the lists, tuples and dicts among them (one level down)."""
    for value in values:
        yield value
        if isinstance(value, (list, tuple)):
            yield from value[:SHALLOW]
        elif isinstance(value, dict):
            yield from list(value.values())[:SHALLOW]


def made_by(values: Iterable[Any], packages: Collection[str]) -> bool:
    """Whether any of ``values`` (one level into containers) is a module, class or object of ``packages``."""
    for value in _shallow(values):
        try:
            modules = _modules_of(value)
        except Exception:  # an object whose attributes raise: not evidence of anything
            continue
        if any(isinstance(name, str) and name.partition(".")[0] in packages for name in modules):
            return True
    return False


class DeviceTimer:
    """Device events around one run, recorded on the stream current at the time."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def elapsed(self) -> float:
        """Seconds between start and stop; call only after the device was synchronized."""
        raise NotImplementedError


class EventTimer(DeviceTimer):
    """Reusable timing events from ``make_event()``; ``elapsed_ms(start, stop)`` reads milliseconds between two
    (by default ``start.elapsed_time(stop)``, as torch's events do).
    Both events of a run are recorded on the device current when it started (``device()``), on that device's
    ``stream(device)`` (None: ``record()``'s choice): after ``torch.cuda.set_device(1)`` in the cell, torch would
    refuse a stop event on another device. An event stays bound to its first device, so there is one pair per
    device, made once (a driver call each)."""

    def __init__(self, make_event: Callable[[], Any], elapsed_ms: Callable[[Any, Any], float] | None = None,
                 device: Callable[[], Any] = lambda: None, stream: Callable[[Any], Any] = lambda device: None) -> None:
        self._make_event, self._current, self._stream = make_event, device, stream
        self._elapsed_ms = elapsed_ms or (lambda start, stop: float(start.elapsed_time(stop)))
        self._pairs: dict[Any, tuple[Any, Any]] = {}
        self._device: Any = None

    def _record(self, event: Any) -> None:
        stream = self._stream(self._device)
        if stream is None:
            event.record()
        else:
            event.record(stream)

    def start(self) -> None:
        self._device = self._current()
        if self._device not in self._pairs:
            self._pairs[self._device] = (self._make_event(), self._make_event())
        self._record(self._pairs[self._device][0])

    def stop(self) -> None:
        self._record(self._pairs[self._device][1])

    def elapsed(self) -> float:
        return self._elapsed_ms(*self._pairs[self._device]) / 1e3


class Pool:
    """A framework's own intra-op thread pool (BLAS pools are threadpoolctl's), read and set by ``--threads N``."""

    name = ""

    def threads(self, module: Any) -> int:
        raise NotImplementedError

    def set(self, module: Any, threads: int) -> None:
        raise NotImplementedError


class Backend:
    """A framework that can hold queued device work, and all the package needs to know of it. A backend never
    initializes a device on its own: ``synchronize`` and ``timer`` do nothing while ``active`` is False, so
    the cold run still pays for the device context and shows it."""

    packages: tuple[str, ...] = ()  # top-level modules whose objects show a cell's work went through it
    pools: ClassVar[tuple[Pool, ...]] = ()  # its own intra-op pools, which the CPU context reads and --threads sets
    blas_users: ClassVar[tuple[str, ...]] = ()  # packages whose linear algebra runs in the BLAS pools

    @property
    def name(self) -> str:
        """Read-only: a subclass may fix it (a class attribute) or compute it (``torch cuda:1``, the current device)."""
        return "backend"

    @classmethod
    def detect(cls, module: Any) -> Backend | None:
        """A backend for ``module``, or None without a device to wait for (a host framework's): never starts one."""
        return None

    @classmethod
    def kinds(cls, module: Any) -> tuple[Kind, ...]:
        """How the repeat decision reads ``module``'s objects (``objects.Kind``s), with a device or not."""
        return ()

    @property
    def active(self) -> bool:
        """Whether this framework has a live device context here: only then can it hold work, or be asked to wait."""
        return True

    def begin(self) -> None:
        """Before the cold run: read what ``touched`` compares with (a counter of the framework's work).
        A backend that joins after the cold run is not asked: before the import, that counter was zero."""

    def touched(self, seen: list[Any]) -> bool | None:
        """Whether the runs just made went through this framework (``seen``: what the cell read, returned and
        bound): None where it cannot tell, and the report names it whenever ``active``. By default one of its
        objects among them is proof, their absence proves nothing; a backend that can tell more answers
        False, so that a framework merely imported, or used by an earlier cell, is not named for this one."""
        return True if made_by(seen, self.packages) else None

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        """Wait for all work queued on this framework's devices. ``outputs`` (None before a run) gives what
        the run produced (its value, the names it bound): JAX can only wait on those."""
        raise NotImplementedError

    def settle(self) -> None:
        """Before a run skipping ``synchronize`` (the last one drained the device): wait for what it could not see."""

    def timer(self) -> DeviceTimer | None:
        """A DeviceTimer for the current stream, or None when there is no device clock."""
        return None

    def describe(self) -> str:
        """A readable device name, e.g. ``cuda:0 NVIDIA H200``."""
        return self.name

    @property
    def note(self) -> str | None:
        """A plain sentence for the report about what could not be done (work not waited for, no clock)."""
        return None
