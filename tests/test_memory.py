"""Peak device memory per run, read without resetting the user's peak counter.

No GPU here: the memory watch (``features.memory``) and the torch probe are fed a *stand-in* for ``torch.cuda`` (``AllocatorStandIn``)
that answers with counters in the layout a real GPU's allocator gives
(``memory_stats_as_nested_dict``: ``allocated_bytes.all.current``/``peak``,
``reserved_bytes.all.current``, ...) and with the signature torch 2.13 gives
``memory_snapshot``. It fails loudly if anything resets the peak counter. The same
promises are checked against a real GPU in test_gpu.py.
"""

from html import escape
from types import SimpleNamespace

import pytest

from ipython_cudatime import report
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.cold_causes.probes import ColdWatch
from ipython_cudatime.features.cold_causes.torch_probe import TorchProbe
from ipython_cudatime.features.memory import MemoryWatch
from ipython_cudatime.features.memory.record import NOT_MEASURED, DeviceMemory, memory_sentence, phase_peak
from ipython_cudatime.render.report import Reading
from ipython_cudatime.render.report import render_html
from ipython_cudatime.results.result import CudaTimeResult, Run

GiB = 2**30
WORKSPACE = 8_519_680  # the default cuBLAS workspace (see torch_probe)


class AllocatorStandIn:
    """A stand-in for ``torch.cuda`` on one GPU: the caching allocator's counters, set by the test."""

    def __init__(self, total=139 * GiB, capability=(8, 0), snapshot_error=None):
        self.capability, self.snapshot_error = capability, snapshot_error
        self.blocks = [WORKSPACE]  # sizes of the active blocks, once initialized
        self.initialized = False
        self.allocated = self.peak = self.reserved = 0
        self.total = total
        self.snapshot_calls = []

    # the torch.cuda functions the probe and the backend call
    def is_initialized(self):
        return self.initialized

    def is_available(self):
        return True

    def current_device(self):
        return 0

    def get_device_properties(self, index):
        return SimpleNamespace(total_memory=self.total)

    def memory_stats_as_nested_dict(self, device=None):
        return {"allocated_bytes": {"all": {"current": self.allocated, "peak": self.peak}},
                "reserved_bytes": {"all": {"current": self.reserved}},
                "segment": {"all": {"current": 1 if self.reserved else 0}},
                "allocation": {"all": {"allocated": 1}}, "num_device_alloc": 1 if self.reserved else 0}

    def get_device_capability(self, device=None):
        return self.capability

    def memory_snapshot(self, mempool_id=None, include_traces=True):
        self.snapshot_calls.append(include_traces)
        if self.snapshot_error is not None:
            raise self.snapshot_error
        blocks = [{"state": "active_allocated", "size": size} for size in self.blocks]
        return [{"blocks": blocks}] if self.initialized else []

    def reset_peak_memory_stats(self, device=None):
        raise AssertionError("the user's peak counter must never be reset")

    def max_memory_allocated(self, device=None):
        return self.peak

    # what a cell does
    def allocate(self, nbytes, keep=True):
        self.initialized = True
        self.peak = max(self.peak, self.allocated + nbytes)
        self.reserved = max(self.reserved, self.peak)
        if keep:
            self.allocated += nbytes


def torch_stand_in(cuda):
    """torch as 2.11 has it: no ``torch.backends.cuda.cublas_workspace_size`` to ask."""
    backends = SimpleNamespace(cudnn=SimpleNamespace(benchmark=False, allow_tf32=True),
                               cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False)))
    return SimpleNamespace(cuda=cuda, version=SimpleNamespace(hip=None), backends=backends,
                           get_float32_matmul_precision=lambda: "highest",
                           _C=SimpleNamespace(_cuda_hasPrimaryContext=lambda index: cuda.initialized))


def watch_phases(cuda, cold, warm):
    """The runner's three moments around a cold phase and a warm phase (callables on ``cuda``), seen
    by the memory watch and by the torch probe (whose cold-run causes read the allocator too)."""
    torch = torch_stand_in(cuda)
    memory, probes = MemoryWatch({"torch": torch}), ColdWatch([TorchProbe(torch)])
    memory.before(), probes.snapshot("before")
    cold()
    memory.after_cold(), probes.snapshot("after_cold")
    warm()
    memory.after_warm(), probes.snapshot("after_warm")
    return memory.record(None)


def test_first_cell_on_a_fresh_gpu_is_measured_exactly_without_a_reset():
    cuda = AllocatorStandIn()

    def cold():  # c = a @ b: 2 GiB kept, 1 GiB of temporaries
        cuda.allocate(GiB, keep=False)
        cuda.allocate(2 * GiB)

    def warm():  # the next c is made while the old one is still referenced
        cuda.allocate(2 * GiB, keep=False)

    memory = watch_phases(cuda, cold, warm)
    assert memory == DeviceMemory(2 * GiB, True, 2 * GiB, True, reserved_growth=2 * GiB, total=139 * GiB, before=0)
    assert memory_sentence(memory) == ("peak 2 GiB of 139 GiB during the cold run (above the 0 B allocated before "
                                       "it); 2 GiB in warm runs; the caching allocator reserved 2 GiB more")


def test_snapshot_is_taken_without_traces_and_only_around_the_cold_run():
    cuda = AllocatorStandIn()
    cuda.allocate(GiB)
    watch_phases(cuda, lambda: cuda.allocate(GiB), lambda: None)
    assert cuda.snapshot_calls == [False, False]  # before and after the cold run, never after the warm runs


def test_a_run_below_an_earlier_peak_is_an_upper_bound_and_says_how_to_get_the_exact_figure():
    cuda = AllocatorStandIn()
    cuda.allocate(10 * GiB, keep=False)  # the user's earlier work peaked at 10 GiB
    memory = watch_phases(cuda, lambda: cuda.allocate(GiB, keep=False), lambda: cuda.allocate(GiB, keep=False))
    assert (memory.cold_peak, memory.cold_exact, memory.warm_peak, memory.warm_exact) == (10 * GiB, False, 10 * GiB, False)
    assert cuda.peak == 10 * GiB  # the user's counter still reads their own peak
    text = memory_sentence(memory)
    assert "peak at most 10 GiB of 139 GiB during the cold run" in text
    assert "at most 10 GiB in warm runs (they stayed below an earlier peak)" in text
    assert "call torch.cuda.reset_peak_memory_stats() before the cell for the exact figure" in text


def test_a_cell_that_resets_the_counter_itself_leaves_that_phase_unknown():
    start = {"allocated_bytes.all.current": GiB, "allocated_bytes.all.peak": 5 * GiB}
    assert phase_peak(start, {"allocated_bytes.all.current": GiB, "allocated_bytes.all.peak": 2 * GiB}) == (None, False)
    assert phase_peak(start, {"allocated_bytes.all.current": GiB, "allocated_bytes.all.peak": 7 * GiB}) == (6 * GiB, True)


def test_a_cold_run_that_resets_the_counter_is_reported_as_unknown():
    cuda = AllocatorStandIn()
    cuda.allocate(4 * GiB, keep=False)

    def cold():  # the cell calls torch.cuda.reset_peak_memory_stats() itself, then allocates
        cuda.peak = cuda.allocated
        cuda.allocate(GiB, keep=False)

    memory = watch_phases(cuda, cold, lambda: None)
    assert memory.cold_peak is None
    assert "peak unknown (the cell reset torch's peak counter itself)" in memory_sentence(memory)


def test_older_torch_without_the_traces_argument_still_finds_the_workspace():
    class OlderAllocator(AllocatorStandIn):
        def memory_snapshot(self):  # torch before include_traces existed
            self.snapshot_calls.append("no argument")
            return [{"blocks": [{"state": "active_allocated", "size": WORKSPACE}]}]

    cuda = OlderAllocator()
    cuda.allocate(GiB)
    state = TorchProbe(torch_stand_in(cuda)).state("before")
    assert state["workspace_blocks"] == 1 and cuda.snapshot_calls == ["no argument"]


def test_a_cell_on_the_cpu_has_no_memory_line_and_a_note_in_the_details(ip, seams):
    """On a CPU-only cell (no backend registered) the text report has no memory line: nothing
    was on a device. The HTML report's details still say why there is no figure."""
    seams(registry=())
    r = ip.run_line_magic("cudatime", "-o -q -n 2 sum(range(100))")
    assert r.memory is None and r.to_dict()["records"]["memory"] is None
    assert "memory   :" not in report(r)
    assert escape(NOT_MEASURED) in render_html(Reading.of(r, FEATURES))


def test_a_gpu_cell_without_torch_memory_says_why_in_the_text():
    """A GPU framework synchronized but no torch CUDA allocator reading (CuPy, say): the text
    report says memory was not measured, rather than staying silent."""
    r = CudaTimeResult(cold=Run(1e-3, 2e-3), synchronized=["cupy cuda:0"], records={"memory": None})
    assert r.on_gpu and r.memory is None
    assert f"memory   : {NOT_MEASURED}" in report(r)


@pytest.mark.parametrize("moment", ["before", "after_cold", "after_warm"])
def test_probe_state_never_resets_the_peak_counter(moment):
    cuda = AllocatorStandIn()
    cuda.allocate(3 * GiB)
    state = TorchProbe(torch_stand_in(cuda)).state(moment)
    assert state["allocated_bytes.all.peak"] == 3 * GiB and cuda.peak == 3 * GiB



# The cuBLAS cold cause (torch 2.11's CublasHandlePool.cpp) ------------------------------

def first_cell_causes(cuda, source, blocks):
    """The causes of a first CUDA cell whose allocator ends with active blocks of ``blocks`` bytes."""
    cuda.blocks = []
    watch = ColdWatch([TorchProbe(torch_stand_in(cuda))], source)
    watch.snapshot("before")
    cuda.blocks = blocks
    cuda.allocate(sum(blocks))
    watch.snapshot("after_cold")
    watch.snapshot("after_warm")
    return [cause.name for cause in watch.causes()]


CUBLAS = "cuBLAS handle and workspace created"
HOPPER = 32 * 2**20


@pytest.mark.parametrize("capability, workspace", [((9, 0), HOPPER), ((8, 0), WORKSPACE), ((10, 0), WORKSPACE),
                                                   ((12, 0), WORKSPACE)])
def test_the_workspace_looked_for_is_this_architectures(capability, workspace):
    """32 MiB on compute capability 9.0 only; 8,519,680 bytes on every other GPU."""
    other = HOPPER if workspace == WORKSPACE else WORKSPACE
    assert CUBLAS in first_cell_causes(AllocatorStandIn(capability=capability), "c = a @ b", [workspace])
    assert CUBLAS not in first_cell_causes(AllocatorStandIn(capability=capability), "c = a @ b", [other])


def test_a_32_mib_tensor_is_not_a_cublas_workspace():
    """A 4096×4096 bf16 tensor is 32 MiB, the Hopper workspace's size: creating one runs no product."""
    cell = "a = torch.empty(4096, 4096, dtype=torch.bfloat16, device='cuda')"
    assert CUBLAS not in first_cell_causes(AllocatorStandIn(capability=(9, 0)), cell, [HOPPER])
    assert CUBLAS not in first_cell_causes(AllocatorStandIn(capability=(9, 0)), "@torch.no_grad\ndef f(): pass",
                                           [HOPPER])
    for product in ("c = a @ b", "c = torch.matmul(a, b)", "y = torch.nn.functional.linear(x, w)", "a @= b"):
        assert CUBLAS in first_cell_causes(AllocatorStandIn(capability=(9, 0)), product, [HOPPER])


def test_cublas_workspace_config_sets_the_size(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    assert CUBLAS in first_cell_causes(AllocatorStandIn(capability=(8, 0)), "c = a @ b", [HOPPER])
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    assert CUBLAS in first_cell_causes(AllocatorStandIn(capability=(9, 0)), "c = a @ b", [16 * 1024 * 8])


def test_cuda_malloc_async_has_no_snapshot_and_the_check_is_skipped_with_a_note():
    """With PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, torch.cuda.memory_snapshot() raises
    RuntimeError: the cell is still timed, its other causes named, and the report says why cuBLAS is not."""
    error = RuntimeError("CUDAMallocAsyncAllocator does not yet support getSnapshot (not meaningful)")
    cuda = AllocatorStandIn(snapshot_error=error)
    names = first_cell_causes(cuda, "c = a @ b", [WORKSPACE])
    assert names[:2] == ["CUDA context created", "memory pool grew"] and CUBLAS not in names
    assert "cuBLAS workspace not looked for" in names
