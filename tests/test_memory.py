"""Peak device memory per run, read without resetting the user's peak counter.

No GPU here: the torch probe is fed a *stand-in* for ``torch.cuda`` (``AllocatorStandIn``)
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
from ipython_cudatime.explain import ColdWatch
from ipython_cudatime.render.html import render_html
from ipython_cudatime.result import CudaTimeResult, Run
from ipython_cudatime.explain.memory import NOT_MEASURED, DeviceMemory, memory_sentence, phase_peak
from ipython_cudatime.explain.torch_probe import TorchProbe

GiB = 2**30
WORKSPACE = 8_519_680  # the default cuBLAS workspace (see torch_probe)


class AllocatorStandIn:
    """A stand-in for ``torch.cuda`` on one GPU: the caching allocator's counters, set by the test."""

    def __init__(self, total=139 * GiB):
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

    def memory_snapshot(self, mempool_id=None, include_traces=True):
        self.snapshot_calls.append(include_traces)
        return [{"blocks": [{"state": "active_allocated", "size": WORKSPACE}]}] if self.initialized else []

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
    return SimpleNamespace(cuda=cuda, version=SimpleNamespace(hip=None),
                           _C=SimpleNamespace(_cuda_hasPrimaryContext=lambda index: cuda.initialized))


def watch_phases(cuda, cold, warm):
    """The runner's three snapshots around a cold phase and a warm phase (callables on ``cuda``)."""
    watch = ColdWatch([TorchProbe(torch_stand_in(cuda))])
    watch.snapshot("before")
    cold()
    watch.snapshot("after_cold")
    warm()
    watch.snapshot("after_warm")
    return watch.memory()


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
    assert r.memory is None and r.to_dict()["memory"] is None
    assert "memory   :" not in report(r)
    assert escape(NOT_MEASURED) in render_html(r)


def test_a_gpu_cell_without_torch_memory_says_why_in_the_text():
    """A GPU framework synchronized but no torch CUDA allocator reading (CuPy, say): the text
    report says memory was not measured, rather than staying silent."""
    r = CudaTimeResult(cold=Run(1e-3, 2e-3), synchronized=["cupy cuda:0"])
    assert r.on_gpu and r.memory is None
    assert f"memory   : {NOT_MEASURED}" in report(r)


@pytest.mark.parametrize("moment", ["before", "after_cold", "after_warm"])
def test_probe_state_never_resets_the_peak_counter(moment):
    cuda = AllocatorStandIn()
    cuda.allocate(3 * GiB)
    state = TorchProbe(torch_stand_in(cuda)).state(moment)
    assert state["allocated_bytes.all.peak"] == 3 * GiB and cuda.peak == 3 * GiB

