"""A test-only framework in one module, added to a registry by one line:
``REGISTRY + (("stand_in_framework", StandInBackend),)``. Not a mock of any real framework: a
small host framework with what the package needs to know of one, declared where a real one
declares it, on its backend (``backends.base.Backend``):

- a version (``__version__``), which a result's ``Env`` records;
- an array whose values live where no attribute shows them (as a tensor's live in device or C
  memory) with a version counter that in-place writes bump, read by its ``Kind`` for the repeat
  decision, and an immutable description (``DType``);
- its own thread pool (``threads``), which the CPU context reads and ``--threads N`` sets.

It has no device: ``detect`` finds none, as torch's CUDA backend finds none on a CPU-only machine.
"""

from ipython_cudatime.backends.base import Backend, Pool
from ipython_cudatime.backends.objects import Kind, Leaf

__version__ = "0.1.0"
threads = 4  # the framework's own pool: its threads now
_STORE = {}  # id(array) -> [values, version]: the array's memory, out of any attribute's reach


class DType:
    """An immutable description, as a dtype is."""


class Array:
    def __init__(self, values):
        _STORE[id(self)] = [list(values), 0]

    @property
    def values(self):
        return list(_STORE[id(self)][0])

    def add_(self, amount):
        """In place, as ``tensor.add_``: the values change and the version counter is bumped."""
        memory = _STORE[id(self)]
        memory[0], memory[1] = [value + amount for value in memory[0]], memory[1] + 1
        return self

    def __add__(self, amount):
        return Array(value + amount for value in _STORE[id(self)][0])


class ArrayKind(Kind):
    """An array by its version counter; put back by writing its values in again."""

    types = (Array,)

    def token(self, array):
        return _STORE[id(array)][1]

    def copy(self, array):
        return list(_STORE[id(array)][0])

    def restore(self, array, saved):
        _STORE[id(array)][0] = list(saved)

    def equal(self, array, other):
        return _STORE[id(array)][0] == (other if isinstance(other, list) else _STORE[id(other)][0])


class StandInPool(Pool):
    name = "stand_in"

    def threads(self, module):
        return module.threads

    def set(self, module, count):
        module.threads = count


class StandInBackend(Backend):
    packages = ("stand_in_framework",)
    pools = (StandInPool(),)

    @classmethod
    def detect(cls, module):
        return None

    @classmethod
    def kinds(cls, module):
        return ArrayKind(), Leaf(DType)
