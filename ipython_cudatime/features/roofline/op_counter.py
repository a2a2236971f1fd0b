"""``--roofline``'s counting run: FLOPs and bytes of every PyTorch (aten) op, seen through dispatch modes.

FLOPs come from ``FlopCounterMode`` (exact for products, convolutions, attention). Ops without a
formula are sorted: views and allocations move nothing, copies compute nothing, pointwise ops count one
FLOP per output element, and the rest are listed as not counted with their share of the ops' time,
never silently dropped. Bytes are each op's distinct input and output elements: what it must read and
write at least once. Imported only with ``--roofline``, once the user has imported torch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from ..cold_causes.torch_probe import tf32_allowed
from .model import OpStat, PeakOverride, Roofline, build

if TYPE_CHECKING:
    from ...results.result import Run

Key = tuple[str, str, str]  # (op name, dtype, device): one ``OpStat`` each

# Ops that allocate or alias storage without reading or writing it (views are found by ``is_view``).
NO_TRAFFIC = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::_unsafe_view", "aten::detach",
              "aten::alias", "aten::lift_fresh", "aten::set_", "aten::resize_", "aten::as_strided"}
# Ops that move or fill data but do no arithmetic (aten tags ``clone`` and ``fill_`` pointwise).
DATA_MOVEMENT = {"aten::copy_", "aten::_to_copy", "aten::clone", "aten::_copy_from", "aten::cat", "aten::stack",
                 "aten::fill_", "aten::zero_", "aten::zeros", "aten::ones", "aten::full", "aten::zeros_like",
                 "aten::ones_like", "aten::full_like", "aten::index_select", "aten::gather", "aten::index",
                 "aten::slice_scatter", "aten::select_scatter", "aten::constant_pad_nd", "aten::repeat",
                 "aten::flip", "aten::roll", "aten::lift_fresh_copy", "aten::scalar_tensor"}
# Ops that write their first argument without reading it (an ``out=`` tensor is never read either).
WRITE_ONLY_FIRST = {"aten::copy_", "aten::fill_", "aten::zero_"}


def _tensors(tree: Any, found: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """The tensors in an op's arguments or results: aten nests them in tuples, lists and dicts only
    (a walk of those is several times cheaper than pytree's general flattening)."""
    found = [] if found is None else found
    if isinstance(tree, torch.Tensor):
        found.append(tree)
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            _tensors(item, found)
    elif isinstance(tree, dict):
        for item in tree.values():
            _tensors(item, found)
    return found


def _unique_bytes(tensor: torch.Tensor) -> int:
    """Bytes of the distinct elements a tensor addresses: dimensions of stride 0 (broadcasts) count once."""
    try:
        elements = math.prod(size for size, stride in zip(tensor.shape, tensor.stride()) if stride != 0)
        return int(elements * tensor.element_size())
    except (RuntimeError, NotImplementedError):  # sparse or nested layouts have no strides
        return int(tensor.numel() * tensor.element_size())


def _elements(tensor: torch.Tensor) -> Hashable:
    """What names a tensor's elements, so that ``a`` and ``a.t()`` are the same: its storage, offset,
    dtype and (size, stride) pairs; the tensor itself where it has no storage (meta, fake, sparse)."""
    try:
        address = tensor.untyped_storage().data_ptr()
        pairs = sorted((size, stride) for size, stride in zip(tensor.shape, tensor.stride()) if size != 1)
    except (RuntimeError, NotImplementedError):
        return id(tensor)
    if not address:
        return id(tensor)
    return (str(tensor.device), address, tensor.storage_offset(), tensor.dtype, tuple(pairs))


def _distinct(tensors: Iterable[torch.Tensor]) -> list[torch.Tensor]:
    """``tensors`` with each set of elements once: ``a @ a`` reads ``a`` once. Inputs and outputs
    are kept apart by the caller: an in-place op reads and writes the same elements."""
    seen: dict[Hashable, torch.Tensor] = {}
    for tensor in tensors:
        seen.setdefault(_elements(tensor), tensor)
    return list(seen.values())


def _kind(func: Any, name: str, flops: float) -> str:
    if flops:
        return "counted"
    if getattr(func, "is_view", False) or name in NO_TRAFFIC:
        return "view"
    if name in DATA_MOVEMENT:
        return "data"
    if torch.Tag.pointwise in func.tags:
        return "pointwise"
    return "uncounted"


def _dtype_name(dtype: torch.dtype) -> str:
    text = str(dtype).replace("torch.", "")
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}.get(
        text, "fp8" if text.startswith("float8") else text)


class _Recorder(TorchDispatchMode):  # type: ignore[misc]  # torch is untyped here (Any): its class too
    """Sits above FlopCounterMode: sees each top-level op, times it and reads the FLOPs it added."""

    def __init__(self, flop_counter: FlopCounterMode, stats: dict[Key, OpStat]) -> None:
        super().__init__()
        self._flop_counter, self._stats = flop_counter, stats
        self.bookkeeping = 0.0  # seconds spent here beside the ops: not the cell's own work

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        entered = time.perf_counter()
        kwargs = kwargs or {}
        before = self._flop_counter.get_total_flops()
        start = time.perf_counter()
        out = func(*args, **kwargs)
        outputs = _tensors(out)
        # the tensors it reads: not the destination of a copy or fill, nor an ``out=`` tensor, which
        # would count bytes the op only writes (they are counted once, as outputs)
        read = args[1:] if func._schema.name in WRITE_ONLY_FIRST else args
        inputs = _tensors((read, {key: value for key, value in kwargs.items() if key != "out"}))
        cuda = [t.device for t in outputs + inputs if t.is_cuda]
        if cuda:  # per-op time on the GPU needs the op to finish; this run is reported apart
            torch.cuda.synchronize(cuda[0])
        seconds = time.perf_counter() - start
        self._record(func, inputs, outputs, self._flop_counter.get_total_flops() - before, seconds)
        self.bookkeeping += time.perf_counter() - entered - seconds
        return out

    def _record(self, func: Any, inputs: list[torch.Tensor], outputs: list[torch.Tensor], flops: float,
                seconds: float) -> None:
        name = func._schema.name
        kind = _kind(func, name, flops)
        first = next((t for t in inputs if t.is_floating_point()), (inputs or outputs or [None])[0])
        dtype = _dtype_name(first.dtype) if first is not None else "none"
        device = str(first.device) if first is not None else "cpu"
        stat = self._stats.setdefault((name, dtype, device), OpStat(name, kind, dtype, device))
        stat.calls += 1
        stat.seconds += seconds
        if kind == "pointwise":
            flops = sum(t.numel() for t in outputs[:1])
        stat.flops += flops
        if kind != "view":
            stat.bytes += sum(_unique_bytes(t) for t in _distinct(inputs) + _distinct(outputs))


class OpCounter:
    """Around the counting run: an ``OpStat`` per op, dtype and device, ``summary`` a ``Roofline``; ``peak``: --peak."""

    def __init__(self, peak: PeakOverride | None = None) -> None:
        self.peak = peak
        self._stats: dict[Key, OpStat] = {}
        self._flop_counter = FlopCounterMode(display=False)
        self._recorder = _Recorder(self._flop_counter, self._stats)
        self.tf32: dict[str, bool] = {}  # "matmul", "conv" -> whether TF32 was allowed for the counting run

    def __enter__(self) -> OpCounter:
        self.tf32 = tf32_allowed(torch)
        self._flop_counter.__enter__()
        self._recorder.__enter__()
        # The first op under these modes pays seconds of lazy imports, once per process: pay them
        # here, outside the counted run, and forget what this op recorded.
        torch.zeros(1) + 1
        self._stats.clear()
        self._recorder.bookkeeping = 0.0
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self._recorder.__exit__(*exc)
        self._flop_counter.__exit__(*exc)
        return False

    def summary(self, run: Run, median: float | None, harness: float = 0.0) -> Roofline:
        return build(list(self._stats.values()), run, median, self.device_name, self.tf32, self.peak,
                     self._recorder.bookkeeping, harness)

    @staticmethod
    def device_name(device: str) -> str:
        """``"cuda:0"`` → torch's name for that GPU (``"NVIDIA H200"``); the CPU stays ``"cpu"``."""
        return str(torch.cuda.get_device_name(torch.device(device))) if device.startswith("cuda") else device
