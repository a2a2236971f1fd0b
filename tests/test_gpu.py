"""The same promises on a real CUDA device, with PyTorch, CuPy, Numba and JAX. Skipped without one
(scripts/gpu-check runs them with --strict-gpu, where a skip fails).

A framework's own backend is tested in a fresh process whose prelude imports that framework
only: in a process where torch is loaded, torch's synchronize and events would wait for and
time CuPy's and Numba's kernels too, and a broken CuPy or Numba backend would go unseen.
No assertion rests on a ratio near its threshold: each compares times an order of magnitude apart,
except the bands against CUDA events, which are marked ``timing`` (the suite retries them once).
"""

import json
import sys
from pathlib import Path

import pytest
from conftest import in_fresh_shell, run

torch = pytest.importorskip("torch", reason="torch not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from common import clock_scaled, sm_clock_mhz  # noqa: E402

FRAMEWORKS = ("torch", "cupy", "jax", "numba")
SLEEP_CYCLES = 100_000  # torch.cuda._sleep: about 50-100 µs at 1-2 GHz, far above a launch interval


def fresh_cudatime(prelude, setup, line, env=None):
    """``%cudatime -o -q line`` in a fresh process after ``prelude`` (its only imports) and
    ``setup`` (a cell of the shell): the result's ``to_dict()``, plus which frameworks were loaded."""
    code = (f"ip.run_cell({setup!r})\n"
            f"r = ip.run_line_magic('cudatime', {'-o -q ' + line!r})\n"
            "import json, sys\n"
            f"loaded = [name for name in {FRAMEWORKS!r} if name in sys.modules]\n"
            "print(json.dumps(dict(r.to_dict(), loaded=loaded), default=str))\n")
    return json.loads(in_fresh_shell(code, prelude=prelude, env=env))


def cause_names(result):
    return [cause["name"] for cause in result["records"]["cold_causes"]]


@pytest.fixture
def cuda_ns(ip):
    ip.run_cell("import torch\na = torch.randn(8192, 8192, device='cuda')\nb = torch.randn(8192, 8192, device='cuda')")
    return ip


def event_median(fn, repeat=5):
    """The median of ``repeat`` CUDA-event timings of ``fn`` on the current stream, in seconds."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeat):
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return sorted(times)[repeat // 2]


def test_matmul_async_trap_is_caught(cuda_ns):
    r = cuda_ns.run_line_magic("cudatime", "-o -q -n 5 a @ b")
    assert r.synchronized == ["torch cuda:0"]
    assert r.clock == "device"
    assert r.device.startswith("cuda:0 ")
    for one in r.warm:
        assert one.host < one.wall / 2  # Python returns long before the product is done
        assert one.device <= one.wall * 1.01


@pytest.mark.timing
def test_device_clock_agrees_with_cuda_events_reference(cuda_ns):
    r = cuda_ns.run_line_magic("cudatime", "-o -q -n 10 a @ b")
    ns = cuda_ns.user_ns
    assert r.median == pytest.approx(event_median(lambda: ns["a"] @ ns["b"], 10), rel=0.25)


def test_report_explains_the_349ms_puzzle(cuda_ns):
    cell = run(cuda_ns, "%cudatime -n 3 c = a @ b")
    text = cell.displayed[0]
    assert "synchronized: torch cuda:0" in text
    assert "%time alone would have printed" in text or "a second %time would print" in text


def test_context_creation_is_paid_by_the_cold_run():
    """In a fresh process the pre-sync must not create the CUDA context before the cold run."""
    r = fresh_cudatime("import torch\n", "import torch", "-n 3 torch.ones(1, device='cuda').sum()")
    assert r["cold"]["device"] is None  # no event could be recorded before the context existed
    assert "CUDA context created" in cause_names(r)
    assert r["ratio"] > 10  # context creation (~100 ms) against a warm run of microseconds


def test_get_device_name_first_leaves_the_context_to_the_cold_run():
    """get_device_name() initializes torch.cuda without creating a context: the cold run still
    creates it, and must say so."""
    r = fresh_cudatime("import torch\ntorch.cuda.get_device_name(0)\n", "import torch",
                       "-n 3 torch.ones(1, device='cuda').sum()")
    assert "CUDA context created" in cause_names(r)
    assert r["cold"]["device"] is None
    assert r["ratio"] > 10


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
    r = fresh_cudatime("import torch\n", "import torch\na = torch.randn(4096, 4096)", "-n 3 (a.cuda() @ a.cuda()).sum()")
    names = cause_names(r)
    assert names[:3] == ["CUDA context created", "memory pool grew", "cuBLAS handle and workspace created"]
    assert "precision settings" in names


def test_a_tensor_of_the_workspaces_size_is_no_cublas_cause():
    """A first CUDA cell that creates a tensor exactly the size of this GPU's cuBLAS workspace (32 MiB
    on an H100/H200: a 4096×4096 bf16 tensor) runs no product: no cuBLAS cause."""
    setup = "import torch\nfrom ipython_cudatime.features.cold_causes.torch_probe import workspace_size"
    line = "-n 3 w = torch.empty(workspace_size(torch), dtype=torch.uint8, device='cuda')"
    names = cause_names(fresh_cudatime("import torch\n", setup, line))
    assert "cuBLAS handle and workspace created" not in names and "memory pool grew" in names, names


def test_cuda_malloc_async_skips_the_workspace_check_with_a_note():
    """With PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, memory_snapshot() raises: the cell is timed
    and the report says the cuBLAS check was skipped."""
    r = fresh_cudatime("import torch\n", "import torch\na = torch.randn(1024, 1024)", "-n 3 (a.cuda() @ a.cuda()).sum()",
                       env={"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"})
    assert "cuBLAS workspace not looked for" in cause_names(r) and r["synchronized"] == ["torch cuda:0"]


def test_profile_of_one_kernel_after_host_work_is_not_a_synchronization_verdict(cuda_ns):
    """The harness's synchronizes before and after the profiled cell are not the cell's."""
    cuda_ns.run_cell("import time")
    cell = f"t0 = time.perf_counter()\nwhile time.perf_counter() - t0 < 5e-5: pass\ntorch.cuda._sleep({2 * SLEEP_CYCLES})"
    profile = cuda_ns.run_cell_magic("cudatime", "-o -q -n 3 -p", cell).profile
    assert profile.kind != "synchronization" and profile.sync_time < 0.05 * profile.window, profile


def test_profile_of_device_copies_names_the_copies(cuda_ns):
    cuda_ns.run_cell("src = torch.empty(1 << 30, dtype=torch.uint8, device='cuda')\ndst = torch.empty_like(src)")
    profile = cuda_ns.run_line_magic("cudatime", "-o -q -n 3 -p for _ in range(5): dst.copy_(src)").profile
    assert profile.kind == "GPU-bound" and "most in memory copies and sets" in profile.verdict, profile


def test_side_stream_kernel_is_caught_by_the_wall_clock(cuda_ns):
    """Events on the current stream miss a product queued on another stream; the synchronized
    wall clock does not, and the statistics must use it."""
    cuda_ns.run_cell("side = torch.cuda.Stream()")
    r = cuda_ns.run_line_magic("cudatime", "-o -q -n 5 with torch.cuda.stream(side): c = a @ b")
    ns = cuda_ns.user_ns
    product = event_median(lambda: ns["a"] @ ns["b"])
    assert r.clock == "wall"
    for one in r.warm:
        assert one.device < product / 10  # the events saw only the launch
        assert one.wall > product * 0.8  # the wall clock waited for the product


@pytest.mark.timing
def test_a_short_kernel_is_batched_and_reads_its_own_time_without_the_synchronize(cuda_ns):
    """A kernel of known cycles, long enough not to be launch-bound and short enough to be batched
    (under 100 synchronizes): it reads its own time, which CUDA events around one launch give,
    and not that plus a synchronize of 10-30 µs (15% or more of it). Its length follows the SM
    clock (345 MHz idle, 1980 MHz under load on an H200): reference and subject take turns (A B A B),
    each between two NVML readings, the reference scaled to the subject's clock and a pair whose
    clock moved within a band set aside (benchmarks/common.py's ``clock_scaled``)."""
    sleep = torch.cuda._sleep
    sleep(SLEEP_CYCLES)
    torch.cuda.synchronize()
    pairs = []
    for _ in range(2):
        before = sm_clock_mhz()
        kernel = event_median(lambda: sleep(SLEEP_CYCLES), 11)
        between = sm_clock_mhz()
        run(cuda_ns, f"_r = %cudatime -o -q torch.cuda._sleep({SLEEP_CYCLES})")
        pairs.append((clock_scaled(kernel, (before, between), (between, sm_clock_mhz())), cuda_ns.user_ns.pop("_r")))
    fair = [(kernel, r) for kernel, r in pairs if kernel is not None]
    assert fair, "the SM clock moved within every band: no fair comparison (retried once)"
    for kernel, r in fair:
        assert r.batch > 1 and r.clock == "device", r
        assert r.harness.wall > 0.1 * kernel, r.harness  # a synchronize in the answer would show
        assert r.median == pytest.approx(kernel, rel=0.07), f"band ±7% of {kernel:.3g} s, saw {r.median:.3g} s"


@pytest.mark.timing
def test_a_tiny_kernel_is_batched_and_read_on_the_device_clock(cuda_ns):
    """A few-µs kernel next to a synchronize of 10-30 µs: runs are batched k per sample, the
    device clock is the answer, and it agrees with CUDA events around 1,000 back-to-back launches:
    both read max(kernel time, host launch interval), which for ``t + 1`` is the launch interval."""
    cuda_ns.run_cell("t = torch.ones(16, device='cuda')\n(t + 1).sum().item()")
    run(cuda_ns, "_r = %cudatime -o -q u = t + 1")
    r = cuda_ns.user_ns.pop("_r")
    assert r.harness.device is not None and r.batch > 1 and r.clock == "device", r
    t = cuda_ns.user_ns["t"]
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    references = []
    for _ in range(5):
        start.record()
        for _ in range(1000):
            t + 1
        stop.record()
        torch.cuda.synchronize()
        references.append(start.elapsed_time(stop) / 1e3 / 1000)
    assert r.median == pytest.approx(sorted(references)[2], rel=0.25)  # no synchronize in the answer


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


def test_cupy_alone_is_synchronized_and_timed_by_its_own_backend():
    r = fresh_cudatime("import cupy\n", "import cupy\nm = cupy.random.rand(8192, 8192, dtype=cupy.float32)\n"
                       "(m @ m).sum()", "-n 5 m @ m")
    assert r["loaded"] == ["cupy"]
    assert r["synchronized"] == ["cupy cuda:0"]
    assert r["clock"] == "device"  # the event timer on CuPy's events, with no torch to lend its own
    for one in r["warm"]:
        assert one["host"] < one["wall"] / 2
        assert one["wall"] / 2 < one["device"] <= one["wall"] * 1.01


NUMBA_KERNEL = """\
from numba import cuda
@cuda.jit
def spin(out, n):
    i = cuda.grid(1)
    acc = 0.0
    for k in range(n):
        acc += k * 0.5
    if i < out.size:
        out[i] = acc
buf = cuda.device_array(1 << 16)
spin[256, 256](buf, 10)
cuda.synchronize()
"""


def test_numba_alone_is_waited_for():
    r = fresh_cudatime("from numba import cuda\n", NUMBA_KERNEL, "-n 3 spin[256, 256](buf, 2_000_000)")
    assert r["loaded"] == ["numba"]
    assert r["synchronized"] == ["numba cuda"]
    assert all(one["host"] < one["wall"] / 2 for one in r["warm"])


def test_jax_on_the_gpu_waits_for_a_jitted_product():
    setup = ("import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x @ x)\n"
             "x = jax.random.normal(jax.random.key(0), (8192, 8192))\nf(x).block_until_ready()")
    r = fresh_cudatime("import jax\n", setup, "-n 5 y = f(x)", env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    assert r["loaded"] == ["jax"]
    assert r["synchronized"][0].startswith("jax gpu:0") or r["synchronized"][0].startswith("jax cuda:0")
    assert r["device"].startswith("jax ")
    assert all(one["host"] < one["wall"] / 2 for one in r["warm"])  # dispatch returns before the product ends


@pytest.mark.multi_gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices; this machine has one")
def test_work_on_a_second_device_is_waited_for(ip):
    """The current device is cuda:0; a product queued on cuda:1 must still be waited for."""
    ip.run_cell("import torch\nd = torch.randn(8192, 8192, device='cuda:1')\n(d @ d).sum().item()\n"
                "torch.ones(1, device='cuda:0').sum().item()")
    r = ip.run_line_magic("cudatime", "-o -q -n 5 e = d @ d")
    assert torch.cuda.current_device() == 0
    assert r.clock == "wall"  # events on cuda:0 cannot see cuda:1's product
    assert all(one.host < one.wall / 2 for one in r.warm)


@pytest.mark.multi_gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices; this machine has one")
def test_work_on_the_second_gpu_alone_is_synchronized():
    line = in_fresh_shell(
        "ip.run_cell(\"import torch; a = torch.randn(8192, 8192, device='cuda:1')\")\n"
        "r = ip.run_line_magic('cudatime', '-o -q -n 3 a @ a')\n"
        "print(min(run.wall for run in r.warm) > 20 * max(run.host for run in r.warm))\n")
    assert line == "True"  # Python returns at once; the synchronized wall time waits for cuda:1


def test_the_cuda_random_stream_is_where_one_run_leaves_it(ip):
    ip.run_cell("import torch\ntorch.cuda.manual_seed(5)")
    first, second = ip.ev("torch.rand(4, device='cuda').tolist()"), ip.ev("torch.rand(4, device='cuda').tolist()")
    ip.run_cell("torch.cuda.manual_seed(5)")
    cell = run(ip, "%cudatime -b 0.05 r = torch.rand(4, device='cuda')")
    assert "Ran once only" not in "\n".join(cell.displayed) and "warm-up" in "\n".join(cell.displayed)
    assert ip.ev("r.tolist()") == first and ip.ev("torch.rand(4, device='cuda').tolist()") == second


def test_the_issues_tensor_cells_on_the_gpu_leave_one_runs_state(ip):
    ip.run_cell("import torch\nZ = torch.zeros(2, device='cuda')\nt = torch.zeros(1, device='cuda')")
    for cell in ("%cudatime Z[0] = Z[0] + 1", "%%cudatime\nalias = t\nalias += 1"):
        assert "Ran once only" in "\n".join(run(ip, cell).displayed)
    assert ip.ev("Z.tolist()") == [1, 0] and ip.ev("t.tolist()") == [1]


def test_a_cell_that_imports_torch_is_synchronized_from_its_first_warm_run():
    """`%%cudatime` on the cell that imports torch and uses CUDA: torch's backend and probe join
    after the cold run, which the report says was not synchronized for it."""
    cell = "import torch\na = torch.randn(8192, 8192, device='cuda')\nb = a @ a"
    code = (f"r = ip.run_cell_magic('cudatime', '-o -q -n 3', {cell!r})\n"
            "import json\nprint(json.dumps(r.to_dict(), default=str))\n")
    r = json.loads(in_fresh_shell(code))
    assert r["synchronized"] == ["torch cuda:0"] and r["clock"] == "device"
    assert "CUDA context created" in cause_names(r)
    assert any("the cold run was not synchronized for torch cuda:0" in note for note in r["notes"])
    assert all(one["host"] < one["wall"] / 2 for one in r["warm"])  # each warm run waited for its product


def test_a_torch_cell_after_jax_on_the_gpu_names_torch_alone():
    setup = ("import jax, jax.numpy as jnp, torch\n(jnp.ones(4) + 1).block_until_ready()\n"
             "a = torch.randn(4096, 4096, device='cuda')")
    r = fresh_cudatime("import jax, torch\n", setup, "-n 3 a @ a", env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    assert r["synchronized"] == ["torch cuda:0"] and r["device"].startswith("cuda:0 ")
    assert not any("jax" in note for note in r["notes"])


def test_work_on_a_side_stream_is_named_and_timed_on_the_wall_clock(cuda_ns):
    """Events on the current stream see nothing of a kernel on another stream: the synchronized
    wall clock times it, and the report says what the device clock missed."""
    from ipython_cudatime.features import FEATURES
    from ipython_cudatime.render.report import Reading

    cuda_ns.run_cell("side = torch.cuda.Stream()")
    r = cuda_ns.run_cell("%%cudatime -o -q -n 3\nwith torch.cuda.stream(side):\n"
                         "    torch.cuda._sleep(50_000_000)").result  # about 25 ms at 2 GHz
    kinds = {finding.kind: finding.text for finding in Reading.of(r, FEATURES).findings}
    assert r.clock == "wall" and r.median > 5e-3
    assert "other streams or other devices" in kinds["coverage"] and "wall clock" in kinds["clock"]


@pytest.mark.multi_gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices; this machine has one")
def test_a_cell_that_switches_devices_is_timed_on_the_device_it_started_on(ip):
    ip.run_cell("import torch\nfor d in (0, 1):\n    torch.ones(1, device=f'cuda:{d}').sum().item()")
    executed = ip.run_cell("%%cudatime -o -q -n 4\ntorch.cuda.set_device(1 - torch.cuda.current_device())\n"
                           "x = torch.randn(4096, 4096, device='cuda') @ torch.randn(4096, 4096, device='cuda')")
    torch.cuda.set_device(0)
    assert executed.error_in_exec is None  # not "Event device does not match recording stream's device"
    assert len(executed.result.warm) == 4 and all(run.device is not None for run in executed.result.warm)
