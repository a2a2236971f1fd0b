"""PyTorch's cold-run causes: CUDA context, allocator growth, cuBLAS workspace, compilation, settings."""

import os
import sys

from ..backends.torch_cuda import TorchCudaBackend
from ..units import format_bytes, format_seconds
from .memory import ALLOCATED, RESERVED, DeviceMemory, phase_peak
from .probe import Cause, Probe

# cuBLAS workspace: CUBLAS_WORKSPACE_CONFIG's default ":4096:2:16:8" is 4096 KiB × 2 + 16 KiB × 8;
# cuBLASLt on sm90+ takes 32 MiB (docs/design.md).
DEFAULT_WORKSPACES = (8_519_680, 32 * 2**20)
SETTINGS = "precision settings"  # context for the reader, not a cost of the cold run


def _workspace_sizes():
    """Workspace sizes to look for, honouring CUBLAS_WORKSPACE_CONFIG (":KiB:count" pairs)."""
    config = os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")
    try:
        numbers = [int(part) for part in config.split(":") if part]
    except ValueError:
        numbers = []
    if not numbers:
        return DEFAULT_WORKSPACES
    return (sum(kib * 1024 * count for kib, count in zip(numbers[::2], numbers[1::2])),) + DEFAULT_WORKSPACES


def _dynamo_compile_seconds():
    """Total dynamo compile time so far (0.0 when dynamo was never loaded: no compile happened)."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return 0.0
    metrics = getattr(utils, "compilation_time_metrics", {})
    # "_compile.compile_inner" in recent torch; "_compile.<locals>.compile_inner" in older ones
    return float(sum(sum(times) for name, times in metrics.items() if name.endswith(".compile_inner")))


class TorchProbe(Probe):
    MEMORY = ("num_device_alloc", "segment.all.current", "reserved_bytes.all.current")

    def __init__(self, torch):
        self._torch = torch
        self._cuda_backend = TorchCudaBackend(torch)

    @classmethod
    def detect(cls, torch):
        return cls(torch) if hasattr(torch, "cuda") else None

    def state(self, moment):
        """Compile time and the allocator's counters, the peak included: read, never reset (see
        ``memory.py``). The cuBLAS workspace is looked for only around the cold run."""
        # "cuda": the current device has a primary context, so its allocator's counters exist and can be
        # read without creating one. ``is_initialized()`` is not enough: after ``get_device_name()`` it is
        # True while ``memory_stats()`` is still {}; and a context on another device does not count here.
        state = {"compile": _dynamo_compile_seconds(), "cuda": self._cuda_backend.current_device_ready()}
        if state["cuda"]:
            state.update(self._cuda_backend.memory_stats())
            if moment != "after_warm":
                state["workspace_blocks"] = self._workspace_blocks()
        return state

    def memory(self, before, after_cold, after_warm):
        """The cell's peak device memory (``DeviceMemory``), or None when it never used CUDA."""
        if not after_cold["cuda"]:
            return None
        start = before if before["cuda"] else dict.fromkeys(after_cold, 0)
        cold_peak, cold_exact = phase_peak(start, after_cold)
        warm_peak, warm_exact = phase_peak(after_cold, after_warm) if after_warm and after_warm["cuda"] else (None, False)
        cuda = self._torch.cuda
        return DeviceMemory(cold_peak, cold_exact, warm_peak, warm_exact,
                            reserved_growth=after_cold[RESERVED] - start[RESERVED],
                            total=cuda.get_device_properties(cuda.current_device()).total_memory,
                            before=start[ALLOCATED])

    def _snapshot(self):
        """The allocator's segments. Recent torch collects allocation traces by default, which
        costs time and memory: only block states are read here, so traces are turned off
        where the argument exists (older torch has none and collects none)."""
        snapshot = self._torch.cuda.memory_snapshot
        try:
            return snapshot(include_traces=False)
        except TypeError:
            return snapshot()

    def _workspace_blocks(self):
        """Active allocator blocks of a cuBLAS workspace's size."""
        sizes = _workspace_sizes()
        count = 0
        for segment in self._snapshot():
            for block in segment.get("blocks", ()):
                if block.get("state") == "active_allocated" and block.get("size") in sizes:
                    count += 1
        return count

    def causes(self, before, after_cold, after_warm):
        found = self._cuda_causes(before, after_cold) if after_cold["cuda"] else []
        compiled = after_cold["compile"] - before["compile"]
        if compiled > 0:
            found.append(Cause("torch.compile compilation", compiled,
                               f"dynamo and its backend compiled for {format_seconds(compiled)}; "
                               "later runs reuse the compiled code unless a guard fails"))
        if after_cold["cuda"]:
            found.extend(self._settings())
        return found

    def _cuda_causes(self, before, after):
        """The context, the allocator's growth and cuBLAS's workspace, from the CUDA allocator's counters."""
        found = []
        if not before["cuda"]:
            found.append(Cause("CUDA context created", None, "this cell initialized CUDA (driver, context, lazy "
                                                             "module loading): a one-time cost per process"))
        base = before if before["cuda"] else {key: 0 for key in self.MEMORY}
        new_allocs = after["num_device_alloc"] - base["num_device_alloc"]
        if new_allocs > 0:
            grown = after["reserved_bytes.all.current"] - base["reserved_bytes.all.current"]
            segments = after["segment.all.current"] - base["segment.all.current"]
            found.append(Cause("memory pool grew", None,
                               f"{new_allocs} cudaMalloc call(s); reserved memory grew by {format_bytes(grown)} "
                               f"in {segments} new segment(s): warm runs reuse the cached blocks"))
        if after["workspace_blocks"] > before.get("workspace_blocks", 0):
            found.append(Cause("cuBLAS handle and workspace created", None,
                               "the first matrix product on this thread and device creates the cuBLAS handle "
                               "and allocates its workspace"))
        return found

    def _settings(self):
        """cuDNN autotuning (a cost) and the precision settings (context, not a cost)."""
        torch = self._torch
        backends = torch.backends
        found = []
        if backends.cudnn.benchmark:
            found.append(Cause("cuDNN autotuning enabled", None,
                               "torch.backends.cudnn.benchmark = True: the first run of each convolution shape "
                               "tries several algorithms"))
        found.append(Cause(SETTINGS, None,
                           f"float32 matmul precision '{torch.get_float32_matmul_precision()}', "
                           f"TF32 for matmul {'on' if backends.cuda.matmul.allow_tf32 else 'off'}, "
                           f"for cuDNN {'on' if backends.cudnn.allow_tf32 else 'off'}", explains=False))
        return found
