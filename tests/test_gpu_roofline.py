"""--roofline and peak device memory on a real CUDA device, against the datasheet and torch's own counter.

Skipped without a GPU. The floors are loose on purpose (half the bf16 peak, 60% of the
bandwidth): a wrong count, a wrong table entry or a wrong dtype column misses them by far. Every
fraction must also be at most 1: above it, the clock saw only part of the work (the launch), or
the count or the table is wrong (benchmarks/common.py's ``fraction_of_peak``, which
tests/test_gpu_check.py feeds a 3.0). The fraction tests are marked ``timing``: the suite retries
them once (a clock that ramped late, a neighbour on the card).
"""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]

from ipython_cudatime import report
from ipython_cudatime.features.roofline.peaks import lookup  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from common import fraction_of_peak  # noqa: E402

N = 8192


def datacenter_entry():
    name = torch.cuda.get_device_name()
    entry = lookup(name)
    if entry is None or entry.name.startswith("RTX"):
        pytest.skip(f"{name} is not a datacenter GPU in the peak table")
    return entry


@pytest.mark.timing
def test_bf16_gemm_reaches_half_the_tables_peak(ip):
    entry = datacenter_entry()
    if "bf16" not in entry.flops:
        pytest.skip(f"the {entry.name} has no bf16 tensor cores")
    ip.run_cell(f"import torch\na = torch.randn({N}, {N}, device='cuda', dtype=torch.bfloat16)\nb = torch.randn_like(a)")
    r = ip.run_line_magic("cudatime", "-o -q -n 20 --roofline a @ b").roofline
    assert r.flops == 2 * N**3 and r.dtype == "bf16" and r.device == torch.cuda.get_device_name()
    assert r.peak_flops == entry.flops["bf16"] and r.bound == "compute"
    check = fraction_of_peak(r, 0.5)
    assert check.ok, f"{check.line()}; {r.verdict}"


@pytest.mark.timing
def test_large_copy_reaches_sixty_percent_of_the_bandwidth(ip):
    entry = datacenter_entry()
    ip.run_cell("import torch\nsrc = torch.empty(1 << 28, device='cuda')\ndst = torch.empty_like(src)")  # 1 GiB each
    r = ip.run_line_magic("cudatime", "-o -q -n 20 --roofline dst.copy_(src)").roofline
    assert r.bytes == 2 * (1 << 30) and r.flops == 0
    assert r.peak_bandwidth == entry.bandwidth and r.bound == "memory"
    check = fraction_of_peak(r, 0.6)
    assert check.ok, f"{check.line()}; {r.verdict}"


@pytest.mark.timing
def test_a_uint8_copy_is_memory_bound_without_a_uint8_peak(ip):
    """The table has no uint8 FLOP peak; a copy computes nothing and is rated against bandwidth."""
    entry = datacenter_entry()
    ip.run_cell("import torch\nsrc = torch.empty(1 << 30, dtype=torch.uint8, device='cuda')\ndst = torch.empty_like(src)")
    r = ip.run_line_magic("cudatime", "-o -q -n 20 --roofline dst.copy_(src)").roofline
    assert r.dtype == "uint8" and r.peak_flops is None and r.bytes == 2 * (1 << 30)
    check = fraction_of_peak(r, 0.6)
    assert r.bound == "memory" and check.ok and "memory-bound" in r.verdict, f"{check.line()}; {r.verdict}"
    assert r.peak_bandwidth == entry.bandwidth


def test_the_harness_is_not_work_outside_the_ops(ip):
    """A counting run of torch ops alone: its final synchronize and timing event are the harness's,
    not "NumPy, CuPy, JAX or Python work" (the share stays under a few percent)."""
    ip.run_cell(f"import torch\na = torch.randn({N}, {N}, device='cuda', dtype=torch.bfloat16)")
    r = ip.run_line_magic("cudatime", "-o -q -n 5 --roofline a @ a").roofline
    assert r.outside_share < 0.05, r


def test_memory_agrees_with_max_memory_allocated_measured_by_hand(ip):
    ip.run_cell("import torch\na = torch.randn(4096, 4096, device='cuda')\nc = a @ a\ndel c")  # cuBLAS set up
    ns = ip.user_ns
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()  # the test is the user here: the counter is its own
    before = torch.cuda.memory_allocated()
    ns["c"] = ns["a"] @ ns["a"]
    torch.cuda.synchronize()
    by_hand = torch.cuda.max_memory_allocated() - before
    del ns["c"]
    torch.cuda.reset_peak_memory_stats()
    memory = ip.run_line_magic("cudatime", "-o -q -n 3 c = a @ a").memory
    assert memory.cold_exact and memory.cold_peak == by_hand == 4096 * 4096 * 4
    # each warm run makes the next c while the last one is still referenced: one product more
    assert memory.warm_exact and memory.warm_peak == by_hand
    assert memory.total == torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory


def test_the_users_peak_counter_survives_a_call(ip):
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    del big
    peak = torch.cuda.max_memory_allocated()
    ip.run_cell("import torch")
    r = ip.run_line_magic("cudatime", "-o -q -n 3 torch.ones(1024, device='cuda').sum()")
    assert torch.cuda.max_memory_allocated() == peak
    assert not r.memory.cold_exact and "at most" in report(r)
