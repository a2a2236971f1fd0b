"""Choose the device backends for a cell, among the frameworks the user already imported.

A framework is never imported here: a backend is tried only when its module is
already in ``sys.modules``. Several backends can be active at once; a
``DeviceSet`` synchronizes all of them and takes its clock from the first that
has one.
"""

import sys

from .cpu import CpuBackend
from .cupy_backend import CupyBackend
from .jax_backend import JaxBackend
from .numba_backend import NumbaBackend
from .tensorflow_backend import TensorflowBackend
from .torch_accelerator import TorchAcceleratorBackend
from .torch_cuda import TorchCudaBackend

# (module the user must have imported, backend class whose detect(module) returns a backend or None).
# Order matters: the first backend with a device timer provides the device clock.
# The default of every ``registry`` parameter; a tuple, so that nobody patches it in place.
REGISTRY = (
    ("torch", TorchCudaBackend),
    ("torch", TorchAcceleratorBackend),
    ("cupy", CupyBackend),
    ("jax", JaxBackend),
    ("tensorflow", TensorflowBackend),
    ("numba.cuda", NumbaBackend),
)


def active_backends(registry=REGISTRY, modules=None):
    """The backends of ``registry`` whose framework is imported and has a device to wait for."""
    modules = sys.modules if modules is None else modules
    found = []
    for module_name, backend_class in registry:
        framework = modules.get(module_name)
        if framework is None:
            continue
        backend = backend_class.detect(framework)
        if backend is not None:
            found.append(backend)
    return found


class DeviceSet:
    """All active backends, seen by the runner as one device.

    Every backend is synchronized (each knows to do nothing while its framework has
    no device at work); the report names only those active once the cell has run,
    and falls back to the CPU's description when none was.
    """

    def __init__(self, backends):
        self.backends = list(backends)
        self._cpu = CpuBackend()

    def _active(self):
        return [backend for backend in self.backends if backend.active]

    @classmethod
    def detect(cls, registry=REGISTRY):
        return cls(active_backends(registry))

    def synchronize(self, outputs=None):
        for backend in self.backends:
            backend.synchronize(outputs)

    def settle(self):
        for backend in self.backends:
            backend.settle()

    def timer(self):
        for backend in self.backends:
            timer = backend.timer()
            if timer is not None:
                return timer
        return None

    def describe(self):
        return ", ".join(backend.describe() for backend in self._active() or [self._cpu])

    @property
    def names(self):
        return [backend.name for backend in self._active()]

    def notes(self):
        """Plain words about what could not be done: no GPU clock, a framework not synchronized."""
        notes = [] if self._active() else [self._cpu.note]
        return notes + [backend.note for backend in self.backends if backend.note]

