"""PyTorch's cold-run causes: CUDA context, allocator growth, cuBLAS workspace, compilation, settings."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from ...backends.torch_cuda import TorchCudaBackend
from ...units import failure_text, format_bytes, format_seconds
from .probe import Cause, Probe

# The cuBLAS workspace torch allocates on a (thread, device, stream)'s first matrix product, as torch
# 2.11's CublasHandlePool.cpp chooses it: CUBLAS_WORKSPACE_CONFIG's ":KiB:count" pairs when set, else
# 32 MiB on compute capability 9.0 and ":4096:2:16:8" elsewhere (cuBLASLt's comes after: docs/design.md).
HOPPER_WORKSPACE = 4096 * 1024 * 8
DEFAULT_WORKSPACE = 4096 * 1024 * 2 + 16 * 1024 * 8
CONFIG_PAIR = re.compile(r":([0-9]+):([0-9]+)")
# A cell that calls a matrix product: a binary ``@`` (not a decorator) or a BLAS-backed op by name.
# A block of the workspace's size is also what a tensor of that size takes (a 4096×4096 bf16 tensor
# is 32 MiB): without a product in the cell, such a block is not claimed as cuBLAS's.
MATRIX_PRODUCT = re.compile(
    r"[\w)\]][ \t]*@=?[ \t]*[\w(\[-]|\b(matmul|mm|bmm|addmm|addbmm|baddbmm|addmv|mv|dot|vdot|inner|outer|einsum|"
    r"tensordot|chain_matmul|multi_dot|linear|bilinear|Linear|Bilinear|LazyLinear|MultiheadAttention|"
    r"Transformer\w*|scaled_dot_product_attention|_scaled_mm|_grouped_mm)\b")
SETTINGS = "precision settings"  # context for the reader, not a cost of the cold run


def workspace_size(torch: Any) -> int:
    """The cuBLAS workspace torch allocates on the current device, in bytes: what torch says where
    it can be asked (``torch.backends.cuda.cublas_workspace_size``, newer than 2.11), else
    CublasHandlePool.cpp's rule for the current device's compute capability."""
    ask = getattr(getattr(getattr(torch, "backends", None), "cuda", None), "cublas_workspace_size", None)
    if ask is not None:
        with contextlib.suppress(Exception):
            return int(ask())
    pairs = CONFIG_PAIR.findall(os.environ.get("CUBLAS_WORKSPACE_CONFIG", ""))
    if pairs:
        return sum(int(kib) * 1024 * int(count) for kib, count in pairs)
    return HOPPER_WORKSPACE if tuple(torch.cuda.get_device_capability()) == (9, 0) else DEFAULT_WORKSPACE


def _dynamo_compile_seconds() -> float:
    """Total dynamo compile time so far (0.0 when dynamo was never loaded: no compile happened)."""
    metrics = getattr(sys.modules.get("torch._dynamo.utils"), "compilation_time_metrics", {})
    # "_compile.compile_inner" in recent torch; "_compile.<locals>.compile_inner" in older ones
    return float(sum(sum(times) for name, times in metrics.items() if name.endswith(".compile_inner")))


def _workspace_causes(before: dict[str, Any], after: dict[str, Any], source: str | None) -> list[Cause]:
    """cuBLAS's handle and workspace, when the cell (``source``) calls a matrix product and a block
    of the workspace's size appeared; a note instead when the allocator could not be looked into."""
    if source is None or not MATRIX_PRODUCT.search(source):
        return []
    blocks = after.get("workspace_blocks")
    if blocks is None:
        return [Cause("cuBLAS workspace not looked for", None,
                      "torch.cuda.memory_snapshot() is unavailable with this allocator "
                      "(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync), so a cuBLAS handle created "
                      "here is not named", explains=False)]
    if blocks > (before.get("workspace_blocks") or 0):
        return [Cause("cuBLAS handle and workspace created", None,
                      "the first matrix product on this thread and device creates the cuBLAS handle "
                      "and allocates its workspace")]
    return []


class TorchProbe(Probe[dict[str, Any]]):
    label = "PyTorch state"

    def __init__(self, torch: Any) -> None:
        self._torch, self._cuda_backend = torch, TorchCudaBackend(torch)

    @classmethod
    def detect(cls, torch: Any) -> TorchProbe | None:
        return cls(torch) if hasattr(torch, "cuda") else None

    def state(self, moment: str) -> dict[str, Any]:
        """Compile time and the allocator's counters, the peak included: read, never reset. The cuBLAS
        workspace is looked for only around the cold run."""
        # "cuda": the current device has a primary context, so its counters can be read without making
        # one (``is_initialized()`` is True after ``get_device_name()`` while ``memory_stats()`` is {})
        state: dict[str, Any] = {"compile": _dynamo_compile_seconds(),
                                 "cuda": self._cuda_backend.current_device_ready()}
        if state["cuda"]:
            state.update(self._cuda_backend.memory_stats())
            if moment != "after_warm":
                state["workspace_blocks"] = self._workspace_blocks()
        return state

    def initial(self) -> dict[str, Any]:
        return {"compile": 0.0, "cuda": False}

    def _workspace_blocks(self) -> int | None:
        """Active allocator blocks of this device's cuBLAS workspace size, or None where the allocator has
        no snapshot (``backend:cudaMallocAsync``: RuntimeError). The snapshot leaves out the allocation
        traces recent torch collects by default, time and memory spent for nothing (older torch has none)."""
        snapshot = self._torch.cuda.memory_snapshot
        try:
            try:
                segments = list(snapshot(include_traces=False))
            except TypeError:
                segments = list(snapshot())
        except RuntimeError:
            return None
        size = workspace_size(self._torch)
        return sum(1 for segment in segments for block in segment.get("blocks", ())
                   if block.get("state") == "active_allocated" and block.get("size") == size)

    def causes(self, before: dict[str, Any], after_cold: dict[str, Any], after_warm: dict[str, Any] | None,
               source: str | None = None) -> list[Cause]:
        found = self._cuda_causes(before, after_cold, source) if after_cold["cuda"] else []
        compiled = after_cold["compile"] - before["compile"]
        if compiled > 0:
            found.append(Cause("torch.compile compilation", compiled,
                               f"dynamo and its backend compiled for {format_seconds(compiled)}; "
                               "later runs reuse the compiled code unless a guard fails"))
        if after_cold["cuda"]:
            found.extend(self._settings())
        return found

    def _cuda_causes(self, before: dict[str, Any], after: dict[str, Any], source: str | None) -> list[Cause]:
        """The context, the allocator's growth and cuBLAS's workspace, from the CUDA allocator's counters."""
        found = []
        if not before["cuda"]:
            found.append(Cause("CUDA context created", None, "this cell initialized CUDA (driver, context, lazy "
                                                             "module loading): a one-time cost per process"))
        base = before if before["cuda"] else dict.fromkeys(after, 0)
        new_allocs = after["num_device_alloc"] - base["num_device_alloc"]
        if new_allocs > 0:
            grown = after["reserved_bytes.all.current"] - base["reserved_bytes.all.current"]
            segments = after["segment.all.current"] - base["segment.all.current"]
            found.append(Cause("memory pool grew", None,
                               f"{new_allocs} cudaMalloc call(s); reserved memory grew by {format_bytes(grown)} "
                               f"in {segments} new segment(s): warm runs reuse the cached blocks"))
        found.extend(_workspace_causes(before, after, source))
        return found

    def _settings(self) -> list[Cause]:
        """cuDNN autotuning (a cost) and the precision settings (context, not a cost); settings that
        cannot be read are one line saying so, and the other causes stand."""
        found = []
        try:
            if self._torch.backends.cudnn.benchmark:
                found.append(Cause("cuDNN autotuning enabled", None,
                                   "torch.backends.cudnn.benchmark = True: the first run of each convolution "
                                   "shape tries several algorithms"))
            found.append(Cause(SETTINGS, None, precision_words(self._torch), explains=False))
        except Exception as error:  # a torch whose settings read differently: context, never fatal
            found.append(Cause(f"{SETTINGS} not read", None, failure_text(error), explains=False))
        return found


def _tf32(precision_owner: Any, legacy: Callable[[], bool]) -> bool:
    """Whether TF32 is allowed: ``precision_owner.fp32_precision`` where it exists and was set
    ("tf32", "ieee"; torch resolves "none" from the parent setting, and answers "none" only when
    nothing was set through this API), else the legacy switch ``legacy()``."""
    precision = getattr(precision_owner, "fp32_precision", None)
    if precision is not None and precision != "none":
        return bool(precision == "tf32")
    return bool(legacy())


def tf32_allowed(torch: Any) -> dict[str, bool]:
    """Whether TF32 is allowed for float32 matrix products ("matmul") and cuDNN convolutions ("conv").
    Once torch 2.9+'s ``fp32_precision`` was used, torch refuses the legacy reads (RuntimeError:
    "...mix of the legacy and new APIs"), so the new one is read where it exists."""
    backends = torch.backends
    return {"matmul": _tf32(backends.cuda.matmul, lambda: backends.cuda.matmul.allow_tf32),
            "conv": _tf32(getattr(backends.cudnn, "conv", None), lambda: backends.cudnn.allow_tf32)}


def precision_words(torch: Any) -> str:
    """The precision settings in force, as the report names them: the ``fp32_precision`` values
    where torch has that API, else the float32 matmul precision."""
    tf32 = tf32_allowed(torch)
    on = {True: "on", False: "off"}
    switches = f"TF32 for matmul {on[tf32['matmul']]}, for cuDNN {on[tf32['conv']]}"
    matmul = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
    if matmul is not None:
        return f"fp32_precision for matmul '{matmul}': {switches}"
    return f"float32 matmul precision '{torch.get_float32_matmul_precision()}', {switches}"
