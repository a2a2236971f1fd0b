"""torch, whichever its device: how the repeat decision reads PyTorch's objects, torch's thread pool, and
torch on accelerators other than CUDA (MPS, XPU, ...) through ``torch.accelerator`` (PyTorch ≥ 2.6) and
``torch.Event``. CUDA is ``torch_cuda``'s, which knows how to avoid creating a context.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from typing import Any

from .base import Backend, DeviceTimer, EventTimer, Pool, event_elapsed_ms
from .objects import Kind, Leaf, Unseen, present

COPY_LIMIT = 1 << 31  # bytes: a tensor larger than this is not copied to be put back


class TorchTensor(Kind):
    """A tensor by its version counter, which every in-place write bumps (``t._version``, on the host: reading
    it never synchronizes a device), and its gradient (accumulated in place by ``backward()``); put back by
    copying its values in."""

    def __init__(self, torch: Any) -> None:
        self.torch, self.types = torch, (torch.Tensor,)

    @staticmethod
    def _grad(tensor: Any) -> Any:
        """Its gradient, read only where one is kept (a leaf, or ``retain_grad()``): torch warns otherwise."""
        return tensor._grad if tensor.is_leaf or tensor.retains_grad else None

    def token(self, tensor: Any) -> Any:
        try:
            version = tensor._version
        except RuntimeError:  # "Inference tensors do not track version counter"
            raise Unseen("an inference tensor keeps no version counter") from None
        return version, id(self._grad(tensor))

    def change(self, before: Any, after: Any) -> str:
        if before[1] != after[1]:
            return ".grad (set)" if before[1] == id(None) else ".grad (replaced)"
        return " (written in place)"

    def children(self, tensor: Any) -> list[tuple[str, Any]]:
        grad = self._grad(tensor)
        return [] if grad is None else [(".grad", grad)]

    def copy(self, tensor: Any) -> Any:
        too_big = tensor.is_sparse or tensor.numel() * tensor.element_size() > COPY_LIMIT
        return None if too_big else (tensor.detach().clone(), self._grad(tensor))

    def restore(self, tensor: Any, saved: Any) -> None:
        values, grad = saved
        with self.torch.no_grad():
            tensor.copy_(values)
        if self._grad(tensor) is not grad:
            tensor.grad = grad

    def equal(self, tensor: Any, other: Any) -> bool:
        """Against another tensor, or against a copy (its values and the gradient it had)."""
        if isinstance(other, tuple):
            other, grad = other
            if self._grad(tensor) is not grad:
                return False
        same_kind = (tensor.shape, tensor.dtype, tensor.device) == (other.shape, other.dtype, other.device)
        return same_kind and bool(self.torch.equal(tensor.detach(), other.detach()))


class TorchGenerator(Kind):
    """A ``torch.Generator`` of the user's own, by its state (the global ones are put back anyway)."""

    def __init__(self, torch: Any) -> None:
        self.torch, self.types = torch, (torch.Generator,)

    def token(self, generator: Any) -> Any:
        return generator.get_state().numpy().tobytes()

    def copy(self, generator: Any) -> Any:
        return generator.get_state()

    def equal(self, generator: Any, other: Any) -> bool:
        state = other if isinstance(other, self.torch.Tensor) else other.get_state()
        return bool(self.torch.equal(generator.get_state(), state))

    def restore(self, generator: Any, saved: Any) -> None:
        generator.set_state(saved)


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
        return TorchTensor(torch), TorchModule(torch), TorchGenerator(torch), Leaf(*leaves)


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
            make_event = functools.partial(self._torch.Event, device=self._device, enable_timing=True)
            self._timer = EventTimer(make_event, event_elapsed_ms)
        return self._timer

    def describe(self) -> str:
        return f"{self._device.type}:{self._torch.accelerator.current_device_index()}"
