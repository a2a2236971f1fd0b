"""GPU code paths fed the states a real GPU gives, on the CPU.

``CudaStandIn`` is a stand-in for the ``torch.cuda`` API surface only (named as such):
it answers ``is_initialized``, ``_cuda_hasPrimaryContext``, ``memory_stats`` etc. the way
torch 2.11-2.13 does in each state, so the code that reads them can be checked here.
The real thing is checked by the ``gpu``-marked tests on a GPU machine.
"""

from types import SimpleNamespace

from ipython_cudatime.backends.torch_cuda import TorchCudaBackend
from ipython_cudatime.features.cold_causes.nvml_probe import NvmlProbe
from ipython_cudatime.features.profile.summary import Profile
from ipython_cudatime.features.cold_causes.torch_probe import TorchProbe
from ipython_cudatime.features.profile import Profiling
from ipython_cudatime.results.result import CudaTimeResult, Run


class CudaStandIn:
    """Stand-in for torch.cuda: ``contexts`` are the devices with a primary context."""

    def __init__(self, devices=1, initialized=True, contexts=(), current=0):
        self.devices, self.initialized, self.contexts, self.current = devices, initialized, set(contexts), current
        self.synchronized = []

    def is_available(self):
        return True

    def is_initialized(self):
        return self.initialized

    def device_count(self):
        return self.devices

    def get_device_capability(self, device=None):
        return (8, 0)

    def current_device(self):
        return self.current

    def synchronize(self, index):
        self.synchronized.append(index)

    def memory_stats_as_nested_dict(self, device=None):
        # torch: {} until the current device's allocator has a primary context to count in
        if self.current not in self.contexts:
            return {}
        return {"num_device_alloc": 2, "segment": {"all": {"current": 2}},
                "reserved_bytes": {"all": {"current": 4 << 20}}, "allocation": {"all": {"allocated": 3}},
                "allocated_bytes": {"all": {"current": 1 << 20, "peak": 2 << 20}}}

    def reset_peak_memory_stats(self, device=None):
        raise AssertionError("the user's peak counter must never be reset")

    def memory_snapshot(self, *args, **kwargs):
        return []

    def get_device_properties(self, index):
        return SimpleNamespace(uuid="not-a-real-uuid", total_memory=80 << 30)


def torch_stand_in(cuda):
    """A module-like object with the torch attributes the code reads (a stand-in, not torch)."""
    return SimpleNamespace(
        cuda=cuda, version=SimpleNamespace(hip=None),
        _C=SimpleNamespace(_cuda_hasPrimaryContext=lambda index: index in cuda.contexts),
        backends=SimpleNamespace(cudnn=SimpleNamespace(benchmark=False, allow_tf32=True),
                                 cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False))),
        get_float32_matmul_precision=lambda: "highest",
    )


def test_initialized_without_a_context_is_not_cuda_yet():
    """After `torch.cuda.get_device_name()`: initialized, no context, memory_stats() == {}."""
    cuda = CudaStandIn(initialized=True, contexts=())
    probe = TorchProbe(torch_stand_in(cuda))
    before = probe.state("before")
    assert before["cuda"] is False
    cuda.contexts.add(0)  # the cold run created the context
    after = probe.state("after_cold")
    names = [cause.name for cause in probe.causes(before, after, None)]  # no KeyError('num_device_alloc')
    assert "CUDA context created" in names and "memory pool grew" in names


def test_work_on_a_second_gpu_is_synchronized():
    cuda = CudaStandIn(devices=2, contexts={1}, current=0)
    backend = TorchCudaBackend(torch_stand_in(cuda))
    assert backend.active
    backend.synchronize()
    assert cuda.synchronized == [1]  # device 0 has no context: left alone, never given one
    assert backend.timer() is None  # an event on device 0 would create its context
    assert backend.memory_stats() == {}


def test_no_context_anywhere_is_not_active():
    cuda = CudaStandIn(devices=2, contexts=())
    backend = TorchCudaBackend(torch_stand_in(cuda))
    backend.synchronize()
    assert not backend.active and cuda.synchronized == []


def test_any_nvml_error_is_not_fatal():
    def broken(*args):
        raise TypeError("an older pynvml wants bytes for a UUID")

    class NVMLError(Exception):
        pass

    pynvml = SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetHandleByUUID=broken, NVMLError=NVMLError)
    cuda = CudaStandIn(contexts={0})
    probe = NvmlProbe(torch_stand_in(cuda), pynvml)
    assert probe.state("before") is None


def test_busy_bar_shows_percent():
    result = CudaTimeResult(cold=Run(0.01, 0.01), warm=[Run(0.01, 0.01)])
    profile = Profile(kernel_count=10, kernel_time=0.0097, busy_fraction=0.97, wall=0.01, verdict="GPU-bound")
    html = Profiling().section_html(result, profile)
    assert "GPU busy 97%" in html and "idle 3%" in html and "970 ms" not in html
