"""Choose the device backends for a cell among the frameworks already in ``sys.modules`` (never imported
here). A ``DeviceSet`` synchronizes every active one and takes its clock from the first."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable
from typing import Any

from .base import Backend, DeviceTimer
from .cpu import CpuBackend, PandasTables
from .cupy_backend import CupyBackend
from .jax_backend import JaxBackend
from .numba_backend import NumbaBackend
from .objects import Kind
from .tensorflow_backend import TensorflowBackend
from .torch_cuda import TorchCudaBackend
from .torch_objects import TorchAcceleratorBackend

# (module the user must have imported, backend class whose detect(module) returns a backend or None).
Entry = tuple[str, type[Backend]]
# Order matters: the first backend with a device timer provides the device clock. A tuple: nobody patches it.
REGISTRY: tuple[Entry, ...] = (("torch", TorchCudaBackend), ("torch", TorchAcceleratorBackend), ("cupy", CupyBackend),
                               ("jax", JaxBackend), ("tensorflow", TensorflowBackend), ("numba.cuda", NumbaBackend))
# The host's own frameworks, which hold no device work (NumPy, a dependency); every registry is read with them.
HOST: tuple[Entry, ...] = (("numpy", CpuBackend), ("pandas", PandasTables))


def entries(registry: Iterable[Entry] = REGISTRY) -> list[Entry]:
    """The host's frameworks and ``registry``'s, each module once (its first entry): those the package reads."""
    found: dict[str, Entry] = {}
    for entry in (*HOST, *registry):
        found.setdefault(entry[0], entry)
    return list(found.values())


def frameworks(registry: Iterable[Entry] = REGISTRY) -> list[str]:
    """The top-level packages of ``entries``, once each: those whose versions a result records (``numba``)."""
    return list(dict.fromkeys(module.partition(".")[0] for module, _ in entries(registry)))


def _detect(registry: Iterable[Entry], tried: set[Entry]) -> list[Backend]:
    """The backends of ``registry``'s imported frameworks with a device to wait for, each entry tried once."""
    found = []
    for entry in registry:
        framework = sys.modules.get(entry[0])
        if framework is not None and entry not in tried:
            tried.add(entry)
            found.append(entry[1].detect(framework))
    return [backend for backend in found if backend is not None]


def object_kinds(registry: Iterable[Entry] = REGISTRY) -> list[Kind]:
    """How the repeat decision reads the objects of every framework of ``entries`` imported now, the host's first."""
    # an entry that declares no kinds reads as Python objects
    declared = [(sys.modules.get(name), getattr(backend, "kinds", None)) for name, backend in entries(registry)]
    return [kind for module, kinds in declared if module is not None and kinds is not None for kind in kinds(module)]


class DeviceSet:
    """All active backends, seen by the runner as one device: each is synchronized; the report names those
    the cell's work touched (``attribute``), else the CPU. ``redetect`` adds those the cold run imported."""

    def __init__(self, backends: Iterable[Backend], registry: Collection[Entry] | None = None,
                 tried: Iterable[Entry] = ()) -> None:
        self.backends = list(backends)
        self._cpu = CpuBackend()
        self._registry, self._tried = registry, set(tried)
        self._seen: list[Any] | None = None  # what the cell read, returned and bound, once ``attribute`` was told
        self.joined: list[str] = []  # names of the backends that joined after the cold run

    def _touched(self, backend: Backend) -> bool:
        touched = None if self._seen is None else backend.touched(self._seen)
        return backend.active if touched is None else touched

    def _named(self) -> list[Backend]:
        return [backend for backend in self.backends if backend.active and self._touched(backend)]

    @classmethod
    def detect(cls, registry: Collection[Entry] = REGISTRY) -> DeviceSet:
        """The backends of the frameworks imported now; the others are tried again by ``redetect``."""
        tried: set[Entry] = set()
        return cls(_detect(registry, tried), registry, tried)

    def begin(self) -> None:
        """Before the cold run: each backend reads what ``Backend.touched`` compares with."""
        for backend in self.backends:
            backend.begin()

    def redetect(self) -> list[str]:
        """After the cold run: add and synchronize the backends of frameworks imported since ``detect`` (a cell
        that imports torch and uses it), and return their names: every later run is synchronized for them."""
        found = _detect(self._registry or (), self._tried)
        for backend in found:
            backend.synchronize()
        self.backends += found
        self.joined += [backend.name for backend in found if backend.active]
        return self.joined

    def attribute(self, seen: Iterable[Any]) -> None:
        """The values the cell read, returned and bound: the report then names the backends they ``touched``."""
        self._seen = list(seen)

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        for backend in self.backends:
            backend.synchronize(outputs)

    def settle(self) -> None:
        for backend in self.backends:
            backend.settle()

    def timer(self) -> DeviceTimer | None:
        return next((timer for backend in self.backends if (timer := backend.timer()) is not None), None)

    def describe(self) -> str:
        return ", ".join(backend.describe() for backend in self._named() or [self._cpu])

    @property
    def frameworks(self) -> list[str]:
        """The frameworks whose versions the result records: its registry's (the default for one made by hand)."""
        return frameworks(REGISTRY if self._registry is None else self._registry)

    @property
    def names(self) -> list[str]:
        return [backend.name for backend in self._named()]

    def notes(self) -> list[str]:
        """What could not be done (no GPU clock, a cold run not synchronized), said of the frameworks the cell used."""
        notes = [] if self._named() else [self._cpu.note]
        notes += [f"the cold run was not synchronized for {name}: the cell imported it during that run "
                  "(its time there is host time, work it queued was not waited for); later runs were"
                  for name in self.joined if name in self.names]
        return notes + [backend.note for backend in self.backends if self._touched(backend) and backend.note]
