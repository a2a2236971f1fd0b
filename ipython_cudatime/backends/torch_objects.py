"""torch, whichever its device: how the repeat decision reads PyTorch's objects, torch's thread pool, and
torch on accelerators other than CUDA (MPS, XPU, ...) through ``torch.accelerator`` (PyTorch ≥ 2.6) and
``torch.Event``. CUDA is ``torch_cuda``'s, which knows how to avoid creating a context.
"""

from __future__ import annotations

import functools
import operator
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from .base import Backend, DeviceTimer, EventTimer, Pool
from .cpu import NumpyArray
from .objects import Kind, Leaf, Stateful, Unseen, present

COPY_LIMIT = 1 << 31  # bytes: a tensor larger than this is not copied to be put back
SMALL_BYTES = 1 << 16  # a host tensor this small is always checksummed, with crc32: its fixed cost is the least
CHECKSUM_BYTES = 1 << 30  # the larger host tensors checksummed, per kind (one timed cell's), first met first


class TorchTensor(Kind):
    """A tensor by its version counter, which every in-place write through it bumps (``t._version``, read on the
    host: never a synchronization), and its gradient (``backward()`` accumulates in place); put back by copying in.

    ``.data`` is an alias with a counter of its own (``ema.data.mul_(0.9)``), and a kernel may write into its own
    arguments (BatchNorm's running mean): a checksum of a host tensor's values sees both, a small one's always,
    larger ones' up to ``allowance`` bytes per kind (one kind per timed cell; the walk's ``Budget.seconds`` holds
    them too), first met first. Assigning ``.data`` moves the tensor onto another storage with its counter
    unchanged: where its values live is in every token. A device's tensor is read by that alone: a checksum would
    wait for the device (a reduction on it could not be tested without a GPU), so a write through ``.data`` on a
    GPU goes unseen, as does one into a host tensor past the allowance."""

    def __init__(self, torch: Any, allowance: int = CHECKSUM_BYTES) -> None:
        import numpy  # a dependency of this package; torch's own .numpy() imported it already

        self.torch, self.types = torch, (torch.Tensor,)
        self.arrays = NumpyArray(numpy)
        self.integers = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        self._left = allowance
        self._granted: set[int] = set()  # ids of the larger tensors charged

    @staticmethod
    def _grad(tensor: Any) -> Any:
        """Its gradient, read only where one is kept (a leaf, or ``retain_grad()``): torch warns otherwise."""
        return tensor._grad if tensor.is_leaf or tensor.retains_grad else None

    def token(self, tensor: Any) -> Any:
        try:
            version = tensor._version
        except RuntimeError:  # "Inference tensors do not track version counter"
            raise Unseen("an inference tensor keeps no version counter") from None
        summed = tensor.is_cpu and tensor.layout is self.torch.strided and self._within(tensor.nbytes, id(tensor))
        return version, id(self._grad(tensor)), self._storage(tensor), self.checksum(tensor) if summed else None

    def _within(self, size: int, key: int) -> bool:
        """Whether a host tensor of ``size`` bytes is checksummed: a small one always; a larger one is charged to
        the allowance when first met, and keeps its grant (a tensor is read the same way before and after a run)."""
        if size <= SMALL_BYTES or key in self._granted:
            return True
        if size > self._left:
            return False
        self._left -= size
        self._granted.add(key)
        return True

    @staticmethod
    def _storage(tensor: Any) -> Any:
        """Where its values live, read on the host (CUDA's unified addressing keeps the devices' addresses apart);
        None for a tensor with no one storage (sparse, nested)."""
        try:
            address = tensor.untyped_storage().data_ptr()
            return address, tensor.storage_offset(), tensor.shape, tensor.stride(), tensor.dtype
        except (RuntimeError, NotImplementedError):
            return None

    def checksum(self, tensor: Any) -> int | None:
        """A checksum of a host tensor's bytes (its dtype's bits: NaN is a value like another), or None where
        they are no array (a conjugate or negative view, a tensor subclass's own memory): crc32 for a small
        contiguous one, NumPy's weighted one (``NumpyArray.checksum``, three times crc32's speed) for the others."""
        try:
            array = self._array(tensor.detach())  # detach(): the same memory, with no gradient to refuse .numpy()
        except (RuntimeError, TypeError, KeyError):
            return None
        if array.nbytes <= SMALL_BYTES and array.flags.c_contiguous:
            return zlib.crc32(array)
        return self.arrays.checksum(array)

    def _array(self, values: Any) -> Any:
        """A host tensor's memory as a NumPy array, not copied: as it is, or for a dtype NumPy has not (bfloat16,
        float8, quantized), as integers of its size."""
        try:
            return values.numpy()
        except TypeError:
            return values.view(self.integers[values.element_size()]).numpy()

    def change(self, before: Any, after: Any) -> str:
        if before[1] != after[1]:
            return ".grad (set)" if before[1] == id(None) else ".grad (replaced)"
        if before[0] != after[0]:
            return " (written in place)"
        if before[2] != after[2]:
            return " (.data replaced)"
        return " (its values changed outside its version counter)"

    def children(self, tensor: Any) -> list[tuple[str, Any]]:
        """Its gradient, and the leaves of the graph it was computed by, which its ``backward()`` writes into
        (``loss`` built in an earlier cell: ``loss.backward()`` sets ``w.grad`` through a graph the cell never
        names, and frees the graph, so that a second run would fail on what the first used up)."""
        grad = self._grad(tensor)
        found = [] if grad is None else [(".grad", grad)]
        return found + [(f" (its graph's leaf {i})", leaf) for i, leaf in enumerate(_leaves(tensor.grad_fn))]

    def copy(self, tensor: Any) -> Any:
        too_big = tensor.is_sparse or tensor.numel() * tensor.element_size() > COPY_LIMIT
        return None if too_big else (tensor.detach().clone(), self._grad(tensor))

    def restore(self, tensor: Any, saved: Any) -> None:
        values, grad = saved
        if _alike(tensor, values):
            with self.torch.no_grad():
                tensor.copy_(values)
        else:  # its .data was replaced by another shape, dtype or device, where copy_ would broadcast or convert
            tensor.data = values.clone()  # a copy of the copy: later runs must not write into what puts it back
        if self._grad(tensor) is not grad:
            tensor.grad = grad

    def equal(self, tensor: Any, other: Any) -> bool:
        """Against another tensor, or against a copy (its values and the gradient it had)."""
        if isinstance(other, tuple):
            other, grad = other
            if self._grad(tensor) is not grad:
                return False
        return _alike(tensor, other) and bool(self.torch.equal(tensor.detach(), other.detach()))


GRAPH_NODES = 100_000  # an autograd graph's nodes walked for its leaves, at most (a large model's has thousands)


def _leaves(node: Any) -> list[Any]:
    """The leaf tensors an autograd graph accumulates gradients into (its ``AccumulateGrad`` nodes' variables),
    from ``node`` (a ``grad_fn``, or None) down, each once. The nodes seen are kept alive: torch may hand out a
    new Python object for a node on each access, and a freed one's id would be taken for another node's."""
    pending, seen, leaves = [node], dict[int, Any](), dict[int, Any]()
    while pending and len(seen) < GRAPH_NODES:
        node = pending.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        variable = getattr(node, "variable", None)  # only AccumulateGrad has one
        if variable is not None:
            leaves[id(variable)] = variable
        pending.extend(child for child, _ in node.next_functions)
    return list(leaves.values())


def _alike(tensor: Any, other: Any) -> bool:
    """Whether two tensors have the same shape, dtype and device: one's values can be copied into the other."""
    return bool((tensor.shape, tensor.dtype, tensor.device) == (other.shape, other.dtype, other.device))


class TorchModule(Kind):
    """An ``nn.Module`` by its attributes, the contents of its dicts (parameters, buffers, submodules,
    hooks) and its training flag, each by identity: a hook added, a buffer replaced, ``train()``. Its
    parameters, buffers and submodules are named as the user writes them (``bn.running_mean``)."""

    holds_state = True

    def __init__(self, torch: Any) -> None:
        self.types = (torch.nn.Module,)

    def token(self, module: Any) -> tuple[Any, ...]:
        attributes = vars(module)
        dicts = tuple((key, tuple(value.items())) for key, value in attributes.items() if isinstance(value, dict))
        return tuple(attributes), tuple(attributes.values()), dicts

    def same(self, before: Any, after: Any) -> bool:
        return (before[0] == after[0] and all(map(operator.is_, before[1], after[1]))
                and [(key, [k for k, _ in items]) for key, items in before[2]]
                == [(key, [k for k, _ in items]) for key, items in after[2]]
                and all(a is b for (_, x), (_, y) in zip(before[2], after[2]) for (_, a), (_, b) in zip(x, y)))

    def children(self, module: Any) -> Iterator[tuple[str, Any]]:
        yield f"\x00{type(module).__qualname__}", type(module)  # a user's subclass may keep class-level state
        for key, value in vars(module).items():
            if key in NAMED:
                yield from ((f".{name}", item) for name, item in value.items() if item is not None)
            elif isinstance(value, dict):
                yield from ((f".{key}[{place}]", item) for place, item in enumerate(value.values()))
            elif not all(isinstance(item, PLAIN) for item in (value if isinstance(value, tuple) else (value,))):
                yield f".{key}", value  # not a layer's sizes: (3, 3) holds nothing that changes

    def restore(self, module: Any, saved: Any) -> None:
        names, values, dicts = saved
        attributes = vars(module)
        attributes.clear()
        attributes.update(zip(names, values))
        for key, items in dicts:
            attributes[key].clear()
            attributes[key].update(items)


NAMED = frozenset({"_parameters", "_buffers", "_modules"})  # what a module's attribute access reads through
PLAIN = (int, float, str, bool, type(None))


class TorchPool(Pool):
    """torch's intra-op pool (``torch.get_num_threads``), which also sizes torch's own BLAS threads."""

    name = "torch"

    def threads(self, torch: Any) -> int:
        return int(torch.get_num_threads())

    def set(self, torch: Any, threads: int) -> None:
        torch.set_num_threads(threads)


class TorchBackend(Backend):
    """torch, whichever its device: its objects and its pool."""

    packages = ("torch",)
    pools = (TorchPool(),)

    @classmethod
    def kinds(cls, torch: Any) -> tuple[Kind, ...]:
        """Tensors (parameters included), modules, generators, and torch's immutable descriptions."""
        leaves = present(torch, "dtype", "device", "layout", "memory_format", "finfo", "iinfo", "qscheme")
        generators = Stateful((torch.Generator,), lambda generator: generator.get_state(),
                              lambda generator, state: generator.set_state(state),
                              lambda state: state.numpy().tobytes())
        return TorchTensor(torch), TorchModule(torch), generators, Leaf(*leaves)


class TorchAcceleratorBackend(TorchBackend):
    """Synchronizes the current non-CUDA accelerator."""

    def __init__(self, torch: Any, device: Any) -> None:
        self._torch = torch
        self._device = device
        self._timer: EventTimer | None = None

    @property
    def name(self) -> str:
        return f"torch {self._device.type}"

    @classmethod
    def detect(cls, torch: Any) -> TorchAcceleratorBackend | None:
        accelerator = getattr(torch, "accelerator", None)
        device = accelerator.current_accelerator() if accelerator is not None and accelerator.is_available() else None
        return None if device is None or device.type == "cuda" else cls(torch, device)

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        self._torch.accelerator.synchronize()

    def timer(self) -> DeviceTimer | None:
        if self._timer is None and hasattr(self._torch, "Event"):
            self._timer = EventTimer(functools.partial(self._torch.Event, device=self._device, enable_timing=True))
        return self._timer

    def describe(self) -> str:
        return f"{self._device.type}:{self._torch.accelerator.current_device_index()}"
