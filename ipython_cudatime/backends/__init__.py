"""Choose the device backends for a cell, among the frameworks the user already imported.

A framework is never imported here: a backend is tried only when its module is
already in ``sys.modules``. Several backends can be active at once; a
``DeviceSet`` synchronizes all of them and takes its clock from the first that
has one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from .base import Backend, DeviceTimer
from .cpu import CpuBackend
from .cupy_backend import CupyBackend
from .jax_backend import JaxBackend
from .numba_backend import NumbaBackend
from .objects import Kind
from .pandas_tables import PandasTables
from .tensorflow_backend import TensorflowBackend
from .torch_accelerator import TorchAcceleratorBackend
from .torch_cuda import TorchCudaBackend

# (module the user must have imported, backend class whose detect(module) returns a backend or None).
Entry = tuple[str, type[Backend]]
# Order matters: the first backend with a device timer provides the device clock.
# The default of every ``registry`` parameter; a tuple, so that nobody patches it in place.
REGISTRY: tuple[Entry, ...] = (
    ("torch", TorchCudaBackend),
    ("torch", TorchAcceleratorBackend),
    ("cupy", CupyBackend),
    ("jax", JaxBackend),
    ("tensorflow", TensorflowBackend),
    ("numba.cuda", NumbaBackend),
)
# The host's own frameworks, which hold no device work: NumPy (a dependency of the package) and
# pandas. Each registry is read together with these (``entries``).
HOST: tuple[Entry, ...] = (("numpy", CpuBackend), ("pandas", PandasTables))


def entries(registry: Iterable[Entry] = REGISTRY) -> list[Entry]:
    """The host's frameworks and ``registry``'s, each module once (its first entry): whatever the
    package needs to know of a framework (its versions, objects, pools) is read from these."""
    found: dict[str, Entry] = {}
    for entry in (*HOST, *registry):
        found.setdefault(entry[0], entry)
    return list(found.values())


def frameworks(registry: Iterable[Entry] = REGISTRY) -> list[str]:
    """The top-level packages of every framework the package knows (``entries``), each once, in
    order: those whose versions a result records (``numba`` for ``numba.cuda``)."""
    return list(dict.fromkeys(module.partition(".")[0] for module, _ in entries(registry)))


def active_backends(registry: Iterable[Entry] = REGISTRY, modules: Mapping[str, Any] | None = None,
                    skip: Collection[Entry] = ()) -> list[tuple[Entry, Backend]]:
    """The backends of ``registry`` whose framework is imported and has a device to wait for
    (the entries in ``skip`` left out), as (entry, backend) pairs."""
    modules = sys.modules if modules is None else modules
    found = []
    for entry in registry:
        module_name, backend_class = entry
        framework = modules.get(module_name)
        if framework is None or entry in skip:
            continue
        backend = backend_class.detect(framework)
        if backend is not None:
            found.append((entry, backend))
    return found


def object_kinds(registry: Iterable[Entry] = REGISTRY, modules: Mapping[str, Any] | None = None) -> list[Kind]:
    """How the repeat decision reads the objects of every framework imported now (``Backend.kinds``):
    NumPy's and pandas' first (the host's arrays and tables, no device), then each framework's of
    ``registry``, once per framework module (``entries``)."""
    modules = sys.modules if modules is None else modules
    found: list[Kind] = []
    for module_name, backend_class in entries(registry):
        framework = modules.get(module_name)
        kinds = getattr(backend_class, "kinds", None)  # an entry that declares none reads as Python objects
        if framework is not None and kinds is not None:
            found += kinds(framework)
    return found


class DeviceSet:
    """All active backends, seen by the runner as one device.

    Every backend is synchronized (each knows to do nothing while its framework has
    no device at work). The report names those the cell's work touched (``attribute``,
    see ``Backend.touched``), and falls back to the CPU's description when none was.
    ``redetect`` adds, after the cold run, the frameworks that run imported.
    """

    def __init__(self, backends: Iterable[Backend], registry: Collection[Entry] | None = None,
                 tried: Iterable[Entry] = ()) -> None:
        self.backends = list(backends)
        self._cpu = CpuBackend()
        self._registry, self._tried = registry, set(tried)
        self._seen: list[Any] | None = None  # what the cell read, returned and bound, once ``attribute`` was told
        self.joined: list[str] = []  # names of the backends that joined after the cold run

    def _touched(self, backend: Backend) -> bool:
        if self._seen is None:
            return backend.active
        touched = backend.touched(self._seen)
        return backend.active if touched is None else touched

    def _named(self) -> list[Backend]:
        return [backend for backend in self.backends if backend.active and self._touched(backend)]

    @classmethod
    def detect(cls, registry: Collection[Entry] = REGISTRY) -> DeviceSet:
        """The backends of the frameworks imported now; every entry of ``registry`` whose module
        is imported is tried once, the others again by ``redetect``."""
        found = active_backends(registry)
        tried = [entry for entry in registry if entry[0] in sys.modules]
        return cls([backend for _, backend in found], registry, tried)

    def begin(self) -> None:
        """Before the cold run: each backend reads what ``Backend.touched`` compares with."""
        for backend in self.backends:
            backend.begin()

    def redetect(self) -> list[str]:
        """After the cold run: add the backends of frameworks imported since ``detect`` (a cell that
        imports torch and uses it), synchronize them, and return their names. The cold run was
        not synchronized for them; every later run is."""
        if self._registry is None:
            return []
        found = active_backends(self._registry, skip=self._tried)
        self._tried.update(entry for entry in self._registry if entry[0] in sys.modules)
        for _, backend in found:
            backend.synchronize()
            self.backends.append(backend)
        self.joined += [backend.name for _, backend in found if backend.active]
        return self.joined

    def attribute(self, seen: Iterable[Any]) -> None:
        """The values the cell read, returned and bound (a list): from now on the report names a
        backend only where ``Backend.touched`` says the cell's work went through it."""
        self._seen = list(seen)

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        for backend in self.backends:
            backend.synchronize(outputs)

    def settle(self) -> None:
        for backend in self.backends:
            backend.settle()

    def timer(self) -> DeviceTimer | None:
        for backend in self.backends:
            timer = backend.timer()
            if timer is not None:
                return timer
        return None

    def describe(self) -> str:
        return ", ".join(backend.describe() for backend in self._named() or [self._cpu])

    @property
    def frameworks(self) -> list[str]:
        """The frameworks of the registry this set was detected from (``frameworks``; the default
        registry's for a set made by hand): those whose versions the result records."""
        return frameworks(REGISTRY if self._registry is None else self._registry)

    @property
    def names(self) -> list[str]:
        return [backend.name for backend in self._named()]

    def notes(self) -> list[str]:
        """Plain words about what could not be done: no GPU clock, a framework not synchronized
        (in the cold run, for one it imported), said only of the frameworks the cell used."""
        notes = [] if self._named() else [self._cpu.note]
        notes += [f"the cold run was not synchronized for {name}: the cell imported it during that run "
                  "(its time there is host time, work it queued was not waited for); later runs were"
                  for name in self.joined if name in self.names]
        return notes + [backend.note for backend in self.backends if self._touched(backend) and backend.note]
