"""GPU clock state through NVML (``nvidia-ml-py``): the SM clock and why it is held back. Read only,
never set; used where PyTorch has an initialized CUDA device and ``pynvml`` is installed."""

from __future__ import annotations

from typing import Any

from ...backends.torch_cuda import TorchCudaBackend
from .probe import Cause, Probe

# NVML clock-event reasons (formerly "throttle reasons") worth naming.
REASONS = {0x1: "idle", 0x4: "software power cap", 0x8: "hardware slowdown",
           0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown"}


class NvmlProbe(Probe[dict[str, int] | None]):
    label = "GPU clock state"

    def __init__(self, torch: Any, pynvml: Any) -> None:
        self._torch, self._nvml, self._handle = torch, pynvml, None

    @classmethod
    def detect(cls, torch: Any) -> NvmlProbe | None:
        cuda = getattr(torch, "cuda", None)
        if cuda is None or not cuda.is_available():
            return None
        try:
            import pynvml
        except ImportError:
            return None
        return cls(torch, pynvml)

    def _device(self) -> Any:
        """The NVML handle of torch's current GPU, found by UUID: NVML's indices ignore
        CUDA_VISIBLE_DEVICES, CUDA's do not."""
        if self._handle is None:
            nvml = self._nvml
            nvml.nvmlInit()
            cuda = self._torch.cuda
            uuid = getattr(cuda.get_device_properties(cuda.current_device()), "uuid", None)
            self._handle = (nvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}") if uuid is not None
                            else nvml.nvmlDeviceGetHandleByIndex(cuda.current_device()))
        return self._handle

    def state(self, moment: str) -> dict[str, int] | None:
        # Read only where CUDA is already set up: asking torch for the current device
        # would otherwise initialize CUDA before the cold run.
        if moment == "after_cold" or not TorchCudaBackend(self._torch).active:
            return None
        nvml = self._nvml
        try:
            handle = self._device()
            read = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            return {"sm_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                    "max_mhz": nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
                    "reasons": read(handle)}
        except Exception:  # NVMLError, or e.g. TypeError from an older pynvml: clocks are context, never fatal
            return None

    def causes(self, before: dict[str, int] | None, after_cold: dict[str, int] | None,
               after_warm: dict[str, int] | None, source: str | None = None) -> list[Cause]:
        """The clock state before the cold run and after the warm runs: context, not a cost."""
        parts = []
        for label, state in (("before the cold run", before), ("after the warm runs", after_warm)):
            if state is not None:
                held = [name for bit, name in REASONS.items() if state["reasons"] & bit] or ["none"]
                parts.append(f"{label}: SM clock {state['sm_mhz']} of {state['max_mhz']} MHz, "
                             f"held back by: {', '.join(held)}")
        return [Cause("GPU clock state", None, "; ".join(parts), explains=False)] if parts else []
