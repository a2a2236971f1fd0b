"""The one small interface every device backend implements, and the one device timer.

The runner only ever talks to this interface, so a new framework (or a test
stand-in for an asynchronous device) plugs in without touching the core.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, ClassVar

from .objects import Kind

SHALLOW = 100  # items of a list, tuple or dict value looked at for a framework's objects, at most


def _modules_of(value: object) -> list[object]:
    """The modules that ``value`` comes from: its own name for a module; the defining module
    of a function, of a class and of every class in its MRO (a user's subclass of a
    framework's class counts as the framework's)."""
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
    """Whether any of ``values`` (one level into containers) is an object of one of ``packages``
    (top-level module names): a module, a function, a class or an instance of theirs."""
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


class Place:
    """Where an ``EventTimer`` records: the device current when a run starts, and the stream to
    record on for a device. This default knows one device: ``record()`` on the current stream."""

    def device(self) -> Any:
        return None

    def stream(self, device: Any) -> Any:
        """The stream to record on for ``device``, or None for ``record()``'s own choice."""
        return None


class EventTimer(DeviceTimer):
    """Reusable timing events from ``make_event()``: ``torch.cuda.Event``, ``torch.Event`` and
    ``cupy.cuda.Event`` all record on the current stream, and ``elapsed_ms(start, stop)``
    reads milliseconds between two of them.

    Both events of a run are recorded on the device current when it started (``place``): a
    cell that calls ``torch.cuda.set_device(1)`` would otherwise put its stop event on another
    device, which torch refuses ("Event device does not match recording stream's device").
    An event stays bound to the device it was first recorded on, so there is one pair per
    device, made once: creating events on every run would cost a driver call each time."""

    def __init__(self, make_event: Callable[[], Any], elapsed_ms: Callable[[Any, Any], float],
                 place: Place | None = None) -> None:
        self._make_event, self._elapsed_ms = make_event, elapsed_ms
        self._place = place or Place()
        self._pairs: dict[Any, tuple[Any, Any]] = {}
        self._device: Any = None

    def _record(self, event: Any) -> None:
        stream = self._place.stream(self._device)
        if stream is None:
            event.record()
        else:
            event.record(stream)

    def start(self) -> None:
        self._device = self._place.device()
        if self._device not in self._pairs:
            self._pairs[self._device] = (self._make_event(), self._make_event())
        self._record(self._pairs[self._device][0])

    def stop(self) -> None:
        self._record(self._pairs[self._device][1])

    def elapsed(self) -> float:
        start, stop = self._pairs[self._device]
        return self._elapsed_ms(start, stop) / 1e3


def event_elapsed_ms(start: Any, stop: Any) -> float:
    """``start.elapsed_time(stop)``: how torch's events read milliseconds."""
    return float(start.elapsed_time(stop))


class Pool:
    """A framework's own intra-op thread pool (a BLAS library's pools are threadpoolctl's to read):
    its name in the report, the threads it runs now, and how ``--threads N`` sets them."""

    name = ""

    def threads(self, module: Any) -> int:
        """The threads the pool of ``module`` (the framework, imported) runs now."""
        raise NotImplementedError

    def set(self, module: Any, threads: int) -> None:
        raise NotImplementedError


class Backend:
    """A framework that can hold queued device work, and what the rest of the package needs to
    know of it: the one room a framework lives in. Besides its device (below), it declares its
    packages (whose objects show its work), how the repeat decision reads its objects (``kinds``),
    its own thread pools (``pools``) and the packages whose linear algebra runs in the BLAS pools
    (``blas_users``); ``backends.frameworks`` and ``machine`` read these from the registry.

    ``name`` is what the report calls it ("torch cuda"). A backend must never
    initialize a device on its own: ``synchronize`` and ``timer`` do nothing
    while ``active`` is False, so the cold run still pays for the device context
    and shows it.
    """

    # the top-level modules whose objects show that a cell's work went through this framework
    packages: tuple[str, ...] = ()
    # its own intra-op thread pools, whose threads the CPU context reads and --threads sets
    pools: ClassVar[tuple[Pool, ...]] = ()
    # packages whose linear algebra runs in the BLAS pools threadpoolctl sees (NumPy's, SciPy's)
    blas_users: ClassVar[tuple[str, ...]] = ()

    @property
    def name(self) -> str:
        """Read-only, so that a subclass may fix it (a class attribute) or compute it (``torch cuda:1``
        follows the current device)."""
        return "backend"

    @classmethod
    def detect(cls, module: Any) -> Backend | None:
        """A backend for ``module`` (the framework, already imported by the user), or None
        when it has no device to wait for. Must not initialize any device."""
        raise NotImplementedError

    @classmethod
    def kinds(cls, module: Any) -> tuple[Kind, ...]:
        """How the repeat decision reads this framework's objects (``objects.Kind``), for
        ``module`` (the framework, imported): its arrays, generators and immutable types.
        Asked whether or not the framework has a device. Default: none."""
        return ()

    @property
    def active(self) -> bool:
        """Whether this framework has a live device context in this process (a CUDA context,
        a started runtime): only then can it hold work, and only then may it be asked to wait."""
        return True

    def begin(self) -> None:
        """Before the cold run: read what ``touched`` compares with (a counter of the framework's
        work). A backend that joins after the cold run is not asked: before its framework was
        imported, that counter was zero. Most backends: nothing."""

    def touched(self, seen: list[Any]) -> bool | None:
        """Whether the runs just made went through this framework: True, False, or None where
        it cannot tell, and then the report names it whenever it is ``active`` (it was waited
        for and may hold the cell's work). ``seen``: what the cell read, returned and bound.

        The default: one of this framework's objects among them (a tensor, its module, a
        model subclassing its class) is proof; nothing among them proves nothing. A backend
        that can tell more (it waited on the cell's results, it counts its work) overrides
        this to answer False, so that a framework merely imported, or used by an earlier
        cell, is never named for a cell that did not use it.
        """
        return True if made_by(seen, self.packages) else None

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        """Wait until all work queued on all of this framework's devices is done.

        ``outputs``, after a run, is a zero-argument callable giving what the run
        produced (the cell's value, and the values of the names it bound), for
        frameworks that can only wait on their results (JAX); None before a run.
        """
        raise NotImplementedError

    def settle(self) -> None:
        """Before a run that skips the full ``synchronize`` (the previous run's final one drained
        the device): wait for whatever that one could not see. Most backends: nothing."""

    def timer(self) -> DeviceTimer | None:
        """A DeviceTimer for the current stream, or None when there is no device clock."""
        return None

    def describe(self) -> str:
        """A readable device name, e.g. ``cuda:0 NVIDIA H200``."""
        return self.name

    @property
    def note(self) -> str | None:
        """A plain sentence for the report about what could not be done (work not waited
        for, no clock), or None when there is nothing to say."""
        return None

    def memory_stats(self) -> dict[str, int]:
        """A flat dict of allocator counters (empty when the framework has none)."""
        return {}
