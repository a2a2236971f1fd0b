"""The three clocks. On the fake device (exact, no sleeping): what each clock reads, and the
report. On the asynchronous device double (a real thread, marked ``timing``): that the
clocks see real asynchrony, host ≪ wall being the async trap."""

import pytest
from conftest import run
from expected_text import assert_expected

KERNEL = 0.125  # seconds of queued "device work" per run


def test_host_wall_device_read_what_each_is(ip, fake_gpu):
    r = ip.run_line_magic("cudatime", f"-o -q -n 3 host.advance(1 / 1024); gpu.launch({KERNEL})")
    for one in [r.cold, *r.warm]:
        assert one.host == 1 / 1024  # Python got control back after its own work...
        assert one.wall == 1 / 1024 + KERNEL  # ...the synchronized run waited for the kernel queued after it
        assert one.device == 1 / 1024 + KERNEL  # events around the run: the stream reached the stop after it
    assert r.clock == "device"
    assert r.synchronized == ["fake device"]
    assert r.device == "fake:0 stand-in device"


def test_runs_do_not_overlap(ip, fake_gpu):
    """Work queued by one run is drained before the next starts: each run sees only its own."""
    r = ip.run_line_magic("cudatime", "-o -q -n 4 for _ in range(3): gpu.launch(1 / 64)")
    assert [one.device for one in r.warm] == [3 / 64] * 4
    assert fake_gpu.kernels == 3 * (1 + len(r.warmup) + 4)


def test_report_explains_the_async_trap(ip, fake_gpu):
    report = run(ip, f"%cudatime -n 3 gpu.launch({KERNEL})").displayed[0]
    assert "%time alone would have printed" in report
    assert "the device was still working when Python moved on" in report
    assert_expected(report, "async_trap")


def test_cpu_fallback_says_no_gpu_clock(ip, fake_cpu):
    r = ip.run_line_magic("cudatime", "-o -q -n 3 host.advance(1 / 512)")
    assert r.clock == "wall"
    assert r.cold.device is None
    assert r.synchronized == []
    assert any("no GPU clock was used" in note for note in r.notes)
    assert "no GPU clock was used" in run(ip, "%cudatime -n 3 host.advance(1 / 512)").displayed[0]


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
