"""The three clocks, on the asynchronous device double: host ≪ wall is the async trap."""

import pytest
from conftest import run

KERNEL = 0.12  # seconds of queued "device work" per run


@pytest.mark.timing
def test_host_wall_device_on_an_async_device(ip, async_device):
    ip.user_ns["gpu"] = async_device
    r = ip.run_line_magic("cudatime", f"-o -q -n 3 gpu.launch({KERNEL})")
    for one in [r.cold, *r.warm]:
        assert one.host < KERNEL / 4  # Python got control back at once...
        assert one.wall >= KERNEL  # ...but the synchronized run waited for the kernel
        assert KERNEL <= one.device <= one.wall
    assert r.clock == "device"
    assert r.synchronized == ["async double"]
    assert r.device == "double:0 asynchronous test device"


@pytest.mark.timing
def test_without_synchronization_the_work_would_be_missed(async_device):
    """The double really is asynchronous: an unsynchronized timing misses the kernel."""
    import time

    t0 = time.perf_counter()
    async_device.launch(KERNEL)
    host = time.perf_counter() - t0
    async_device.synchronize()
    wall = time.perf_counter() - t0
    assert host < KERNEL / 4 <= KERNEL <= wall


@pytest.mark.timing
def test_runs_do_not_overlap(ip, async_device):
    """Work queued by one run is drained before the next starts: each run sees only its own."""
    ip.user_ns["gpu"] = async_device
    r = ip.run_line_magic("cudatime", "-o -q -n 4 for _ in range(3): gpu.launch(0.02)")
    assert all(0.06 <= one.device < 0.12 for one in r.warm)


@pytest.mark.timing
def test_report_explains_the_async_trap(ip, async_device):
    ip.user_ns["gpu"] = async_device
    cell = run(ip, f"%cudatime -n 2 gpu.launch({KERNEL})")
    report = cell.displayed[0]
    assert "%time alone would have printed" in report
    assert "the device was still working when Python moved on" in report
    assert "synchronized: async double" in report


def test_cpu_fallback_says_no_gpu_clock(ip, seams):
    seams(registry=())
    r = ip.run_line_magic("cudatime", "-o -q -n 2 sum(range(100))")
    assert r.clock == "wall"
    assert r.cold.device is None
    assert r.synchronized == []
    assert any("no GPU clock was used" in note for note in r.notes)
    assert "no GPU clock was used" in str(r)
