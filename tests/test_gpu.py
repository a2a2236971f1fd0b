"""The same promises with PyTorch on a real CUDA device. Skipped without one."""

import pytest
from conftest import in_fresh_shell, run

torch = pytest.importorskip("torch", reason="torch not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]


@pytest.fixture
def cuda_ns(ip):
    ip.run_cell("import torch\na = torch.randn(8192, 8192, device='cuda')\nb = torch.randn(8192, 8192, device='cuda')")
    return ip


def test_matmul_async_trap_is_caught(cuda_ns):
    r = cuda_ns.run_line_magic("cudatime", "-o -q -n 5 a @ b")
    assert r.synchronized == ["torch cuda:0"]
    assert r.clock == "device"
    assert r.device.startswith("cuda:0 ")
    for one in r.warm:
        assert one.host < one.wall / 2  # Python returns long before the product is done
        assert one.device <= one.wall * 1.01


def test_device_clock_agrees_with_cuda_events_reference(cuda_ns):
    r = cuda_ns.run_line_magic("cudatime", "-o -q -n 10 a @ b")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ns = cuda_ns.user_ns
    times = []
    for _ in range(10):
        start.record()
        ns["a"] @ ns["b"]
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    reference = sorted(times)[5]
    assert r.median == pytest.approx(reference, rel=0.25)


def test_report_explains_the_349ms_puzzle(cuda_ns):
    cell = run(cuda_ns, "%cudatime -n 3 c = a @ b")
    text = cell.displayed[0]
    assert "synchronized: torch cuda:0" in text
    assert "%time alone would have printed" in text or "a second %time would print" in text


def test_context_creation_is_paid_by_the_cold_run():
    """In a fresh process the pre-sync must not create the CUDA context before the cold run."""
    last = in_fresh_shell(
        "r = ip.run_line_magic('cudatime', \"-o -q -n 3 torch.ones(1, device='cuda').sum()\")\n"
        "print(r.cold.device is None, r.clock, round(r.ratio))",
        prelude="import torch\n",
    )
    no_event_in_cold, clock, ratio = last.split()
    assert no_event_in_cold == "True" and clock == "device"
    assert int(ratio) > 10  # context creation makes the cold run far slower


def test_out_of_memory_in_warm_runs_is_reported(cuda_ns):
    cuda_ns.run_cell("keep = []")
    total = torch.cuda.get_device_properties(0).total_memory
    chunk = total // 3
    cell = run(cuda_ns, f"%cudatime -n 10 -w 0 keep.append(torch.empty({chunk}, dtype=torch.uint8, device='cuda'))")
    assert type(cell.error).__name__ == "OutOfMemoryError"
    assert "Out of memory during the warm runs" in cell.displayed[0]
    cuda_ns.run_cell("keep.clear(); torch.cuda.empty_cache()")
    assert run(cuda_ns, "%cudatime -n 1 1").value == 1


def test_cold_causes_name_context_pool_and_cublas_on_a_first_matmul():
    names = in_fresh_shell(
        "ip.run_cell(\"import torch\\na = torch.randn(4096, 4096)\")\n"
        "r = ip.run_line_magic('cudatime', \"-o -q -n 3 (a.cuda() @ a.cuda()).sum()\")\n"
        "print('|'.join(c.name for c in r.cold_causes))",
        prelude="import torch\n",
    ).split("|")
    assert names[:3] == ["CUDA context created", "memory pool grew", "cuBLAS handle and workspace created"]
    assert "precision settings" in names


def test_profile_on_cuda_counts_kernels_and_busy_fraction(cuda_ns):
    cuda_ns.run_cell("small = torch.randn(64, device='cuda')")
    loop = cuda_ns.run_line_magic("cudatime", "-o -q -n 3 -p for _ in range(2000): small.mul_(1.0)").profile
    assert loop.counted == "device kernels" and loop.kernel_count >= 2000
    assert loop.busy_fraction < 0.5 and loop.verdict.startswith("launch-bound")
    assert loop.kind == "launch-bound" and loop.launch_count >= 2000 and loop.launch_mean > 0
    gemm = cuda_ns.run_line_magic("cudatime", "-o -q -n 3 -p a @ b").profile
    assert gemm.kernel_count >= 1 and gemm.busy_fraction > 0.8 and gemm.verdict.startswith("GPU-bound")
    assert gemm.copy_count == 0 and gemm.breakdown["compute"] == pytest.approx(gemm.kernel_time)


def test_profile_counts_exactly_and_skips_user_annotations_on_cuda(cuda_ns, tmp_path):
    """100 record_function ranges around 100 multiplies: Kineto draws each range on the GPU
    timeline too (a gpu_user_annotation); counted as work they would add 100 "kernels" and a
    busy GPU. One copy back to the host is a memcpy, not a kernel."""
    cuda_ns.run_cell("small = torch.randn(64, device='cuda')")
    cell = ("for _ in range(100):\n"
            "    with torch.profiler.record_function('step'):\n"
            "        small.mul_(1.0)\n"
            "small.cpu()")
    path = tmp_path / "t.json.gz"
    r = cuda_ns.run_cell_magic("cudatime", f"-o -q -n 2 --trace {path}", cell)
    profile = r.profile
    assert profile.kernel_count == 100 and profile.copy_count == 1, profile
    assert profile.busy_fraction < 0.5 and profile.breakdown["memory"] > 0
    from ipython_cudatime import profile_trace

    read = profile_trace(path)
    assert (read.kernel_count, read.copy_count, read.launch_count) == (100, 1, profile.launch_count)
    assert read.busy_fraction == pytest.approx(profile.busy_fraction)  # same marked window


def test_cupy_async_trap_is_caught(ip):
    pytest.importorskip("cupy", reason="cupy not installed")
    ip.run_cell("import cupy\nm = cupy.random.rand(8192, 8192, dtype=cupy.float32)\n(m @ m).sum()")
    r = ip.run_line_magic("cudatime", "-o -q -n 5 m @ m")
    assert any(name.startswith("cupy cuda:") for name in r.synchronized)
    assert r.clock == "device"
    assert all(one.host < one.wall / 2 for one in r.warm)


def test_numba_kernels_are_waited_for(ip):
    pytest.importorskip("numba", reason="numba not installed")
    ip.run_cell(
        "from numba import cuda\n"
        "@cuda.jit\n"
        "def spin(out, n):\n"
        "    i = cuda.grid(1)\n"
        "    acc = 0.0\n"
        "    for k in range(n):\n"
        "        acc += k * 0.5\n"
        "    if i < out.size:\n"
        "        out[i] = acc\n"
        "buf = cuda.device_array(1 << 16)\n"
        "spin[256, 256](buf, 10)\n"
        "cuda.synchronize()"
    )
    r = ip.run_line_magic("cudatime", "-o -q -n 3 spin[256, 256](buf, 2_000_000)")
    assert "numba cuda" in r.synchronized
    assert all(one.host < one.wall / 2 for one in r.warm)


def test_initialized_cuda_without_a_context_is_not_a_crash():
    """`get_device_name()` initializes torch.cuda but creates no context: the cold run then creates it."""
    line = in_fresh_shell(
        "ip.run_cell('import torch; torch.cuda.get_device_name()')\n"
        "r = ip.run_line_magic('cudatime', \"-o -q -n 2 torch.ones(1 << 20, device='cuda').sum()\")\n"
        "print([c.name for c in r.cold_causes])\n")
    assert "CUDA context created" in line


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_work_on_the_second_gpu_alone_is_synchronized():
    line = in_fresh_shell(
        "ip.run_cell(\"import torch; a = torch.randn(8192, 8192, device='cuda:1')\")\n"
        "r = ip.run_line_magic('cudatime', '-o -q -n 3 a @ a')\n"
        "print(min(run.wall for run in r.warm) > 20 * max(run.host for run in r.warm))\n")
    assert line == "True"  # Python returns at once; the synchronized wall time waits for cuda:1
