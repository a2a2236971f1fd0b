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
REGISTRY = [
    ("torch", TorchCudaBackend),
    ("torch", TorchAcceleratorBackend),
    ("cupy", CupyBackend),
    ("jax", JaxBackend),
    ("tensorflow", TensorflowBackend),
    ("numba.cuda", NumbaBackend),
]


def active_backends(modules=None):
    """The backends whose framework is imported and has a device to wait for."""
    modules = sys.modules if modules is None else modules
    found = []
    for module_name, backend_class in REGISTRY:
        framework = modules.get(module_name)
        if framework is None:
            continue
        backend = backend_class.detect(framework)
        if backend is not None:
            found.append(backend)
    return found


class DeviceSet:
    """All active backends, seen by the runner as one device."""

    def __init__(self, backends):
        self.backends = list(backends) or [CpuBackend()]
        self.on_cpu = all(isinstance(b, CpuBackend) for b in self.backends)

    @classmethod
    def detect(cls):
        return cls(active_backends())

    def synchronize(self, outputs=None):
        for backend in self.backends:
            backend.synchronize(outputs)

    def timer(self):
        for backend in self.backends:
            timer = backend.timer()
            if timer is not None:
                return timer
        return None

    def describe(self):
        return ", ".join(backend.describe() for backend in self.backends)

    @property
    def names(self):
        return [backend.name for backend in self.backends]

    def notes(self):
        return [b.note for b in self.backends if getattr(b, "note", None)]

    def memory_stats(self):
        return {b.name: b.memory_stats() for b in self.backends}
