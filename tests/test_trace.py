"""``profile_trace`` and the ``--profile`` summary, on real GPU traces and on traces built here.

Stand-in, named as such: the four ``tests/data/*.json.gz`` files are recorded real data
(Kineto traces from V100 and A100 GPUs, from HolisticTraceAnalysis's test data; see
``tests/data/README.md``). Every expected number below is either counted by hand from
those files or computed from their raw JSON by code independent of the package's.
"""

import gzip
import json
from pathlib import Path

import pytest

from ipython_cudatime import profile_trace
from ipython_cudatime.features.profile.summary import Profile
from ipython_cudatime.features.profile.trace import TraceError
from ipython_cudatime.features.profile.verdicts import cpu_verdict

DATA = Path(__file__).parent / "data"
V100, SIMPLE_ADD, TRITON, NO_KERNELS = (DATA / f"{name}.json.gz" for name in (
    "v100_ns_resolution", "a100_simple_add", "a100_triton_one_kernel", "a100_cupti_counters_no_kernels"))
DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_events(path):
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def swept_busy(events, categories):
    """Busy fraction by a sweep line over start (+1) and end (-1) points: an algorithm other
    than the package's sort-and-merge, over the raw JSON, in microseconds."""
    points = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in categories:
            points += [(e["ts"], 1), (e["ts"] + e["dur"], -1)]
    points.sort()
    busy, depth, previous = 0.0, 0, None
    for time, step in points:
        if depth > 0:
            busy += time - previous
        depth += step
        previous = time
    return busy / (points[-1][0] - points[0][0])


@pytest.mark.parametrize("path, kernels, copies, launches", [
    (V100, 4350, 1600 + 145, 4350),
    (SIMPLE_ADD, 79, 16 + 3, 79),
    (TRITON, 1, 0, 1),
    (NO_KERNELS, 0, 0, 77),
])
def test_exact_counts_on_real_traces(path, kernels, copies, launches):
    profile = profile_trace(path)
    assert isinstance(profile, Profile) and profile.trace_file == str(path)
    assert (profile.kernel_count, profile.copy_count, profile.launch_count) == (kernels, copies, launches)


@pytest.mark.parametrize("path", [V100, SIMPLE_ADD, TRITON])
def test_busy_fraction_matches_an_independent_computation(path):
    assert abs(profile_trace(path).busy_fraction - swept_busy(raw_events(path), DEVICE)) <= 0.002


def test_gpu_user_annotations_are_not_counted_as_device_work():
    """V100's trace has 15 GPU user annotations (Optimizer.step, backward, forward) on the GPU
    timeline. Counted as work they would fill 0.8 points of idle gaps and add 15 "kernels"."""
    events = raw_events(V100)
    annotations = [e for e in events if e.get("cat") == "gpu_user_annotation"]
    with_annotations = swept_busy(events, DEVICE + ("gpu_user_annotation",))
    without = swept_busy(events, DEVICE)
    assert len(annotations) == 15 and with_annotations - without > 0.005  # the test can tell them apart
    profile = profile_trace(V100)
    assert abs(profile.busy_fraction - without) <= 0.002
    assert profile.kernel_count == 4350
    assert not {e["name"] for e in annotations} & {name for name, _, _ in profile.top}


def test_breakdown_and_host_costs_of_the_v100_trace():
    events = [e for e in raw_events(V100) if e.get("ph") == "X"]
    profile = profile_trace(V100)
    copies = sum(e["dur"] for e in events if e["cat"] in ("gpu_memcpy", "gpu_memset")) / 1e6
    kernels = sum(e["dur"] for e in events if e["cat"] == "kernel") / 1e6
    assert profile.breakdown["memory"] == pytest.approx(copies)
    assert profile.breakdown["compute"] == pytest.approx(kernels) and profile.breakdown["communication"] == 0
    launches = [e["dur"] for e in events if e["name"] == "cudaLaunchKernel"]
    assert profile.launch_mean == pytest.approx(sum(launches) / len(launches) / 1e6)
    [sync] = [e for e in events if e["name"] == "cudaDeviceSynchronize"]  # 89 ms, mostly inside the window
    assert 0.5 * sync["dur"] / 1e6 < profile.sync_time <= sync["dur"] / 1e6


def test_verdicts_of_the_real_traces():
    v100 = profile_trace(V100)
    assert v100.kind == "GPU-bound"
    assert v100.verdict.startswith("GPU-bound: busy 98% of the 480 ms window, most in "
                                   "at::native::vectorized_elementwise_kernel (160 calls")
    simple_add = profile_trace(SIMPLE_ADD)
    assert simple_add.kind == "host-bound" and simple_add.busy_fraction < 0.01
    assert "idles 99.7% of the 16 s window with 98 kernels and copies" in simple_add.verdict
    triton = profile_trace(TRITON)
    assert triton.kind == "GPU-bound" and "triton_poi_fused_add_cos_sin_0 (1 call, 1.76 µs)" in triton.verdict
    assert triton.launch_mean == pytest.approx(47.768e-6)  # a cuLaunchKernel: the driver API counts too


def test_a_gpu_trace_without_device_activity_is_a_clean_answer():
    profile = profile_trace(NO_KERNELS)
    assert profile.kernel_count == 0 and profile.copy_count == 0 and profile.top == []
    assert profile.kind == "no device activity"
    assert profile.verdict == ("no device activity: no kernel, memcpy or memset events; the host made 77 launch "
                               "calls, but no kernel was recorded")
    assert "verdict  : no device activity" in str(profile)


def test_a_file_that_is_not_a_trace_is_an_error_naming_it(tmp_path):
    notes = tmp_path / "notes.json"
    notes.write_text("these are not JSON")
    with pytest.raises(TraceError, match=f"{notes} is not a Chrome trace"):
        profile_trace(notes)
    other = tmp_path / "config.json"
    other.write_text('{"lr": 0.1}')
    with pytest.raises(TraceError, match=f"{other} is not a Chrome trace: it has no list of trace events"):
        profile_trace(other)
    broken = tmp_path / "cut.json.gz"
    broken.write_bytes(gzip.compress(b'{"traceEvents": [')[:20])
    with pytest.raises(TraceError, match="cut.json.gz is not a Chrome trace"):
        profile_trace(broken)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        profile_trace(tmp_path / "missing.json")


# Traces built here, from the same schema ------------------------------------------------

def event(name, ts, dur, cat="kernel", tid=7, **args):
    pid = 0 if cat in DEVICE else 100
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def write(tmp_path, events, name="trace.json", **extra):
    data = json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "test"}], **extra,
                       "traceEvents": events}).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def test_a_rocm_shaped_trace(tmp_path):
    """ROCm's Kineto writes the same categories with HIP names and AMD kernel names."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 1, "ts": 0, "dur": 30,
         "args": {"External id": 1}},
        event("hipExtModuleLaunchKernel", 5, 10, "cuda_runtime", 1, correlation=11),
        event("Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0", 20, 800, correlation=11, **{"External id": 1}),
        event("hipLaunchKernel", 16, 6, "cuda_runtime", 1, correlation=12),
        event("void at::native::vectorized_elementwise_kernel<4>", 820, 100, correlation=12),
        event("hipMemcpyAsync", 23, 4, "cuda_runtime", 1, correlation=13),
        event("CopyDeviceToHost", 920, 80, "gpu_memcpy", correlation=13),
        event("hipDeviceSynchronize", 28, 972, "cuda_runtime", 1),
        event("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", 1000, 50, tid=9),
    ]
    path = write(tmp_path, events, "rocm.json.gz", deviceProperties=[{"id": 0, "name": "AMD Instinct MI300X"}])
    profile = profile_trace(path)
    assert (profile.kernel_count, profile.copy_count, profile.launch_count) == (3, 1, 2)
    assert profile.window == pytest.approx(1030e-6) and profile.busy_fraction == pytest.approx(1.0)
    assert profile.launch_mean == pytest.approx(8e-6) and profile.sync_time == pytest.approx(972e-6)
    assert profile.breakdown == pytest.approx({"compute": 900e-6, "communication": 50e-6, "memory": 80e-6})
    assert profile.kind == "GPU-bound" and "Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0" in profile.verdict


def test_communication_bound(tmp_path):
    events = [event("ncclKernel_AllReduce_RING_LL_Sum_float", 0, 700, tid=20),
              event("sm90_xmma_gemm_bf16bf16", 0, 300)]
    profile = profile_trace(write(tmp_path, events))
    assert profile.kind == "communication-bound"
    assert profile.verdict.startswith("communication-bound: NCCL/RCCL collectives take 70% of device time "
                                      "(700 µs of 1 ms)")


def test_launch_bound_and_host_bound_differ_by_the_gap_per_kernel(tmp_path):
    """200 kernels of 2 µs: 8 µs apart is launch overhead, 1 ms apart is other host work."""
    tight = [event("vectorized_elementwise_kernel", 10 * i, 2) for i in range(200)]
    tight += [event("cudaLaunchKernel", 10 * i - 6, 5, "cuda_runtime", 1) for i in range(200)]
    launch = profile_trace(write(tmp_path, tight, "tight.json"))
    assert launch.kind == "launch-bound"
    assert launch.verdict == ("launch-bound: 200 launches of ~2 µs, 5 µs of host time each as profiled, GPU idle 80% of the "
                              "time; batch the loop into one tensor op")
    sparse = [event("vectorized_elementwise_kernel", 1000 * i, 2) for i in range(200)]
    assert profile_trace(write(tmp_path, sparse, "sparse.json")).kind == "host-bound"


def test_synchronization_and_mixed(tmp_path):
    kernels = [event("gemm", 150 * i, 50) for i in range(10)]
    syncs = [event("cudaStreamSynchronize", 150 * i + 40, 60, "cuda_runtime", 1) for i in range(10)]
    synced = profile_trace(write(tmp_path, kernels + syncs, "synced.json"))
    assert synced.kind == "synchronization"
    assert synced.sync_time == pytest.approx(9 * 60e-6 + 10e-6)  # the last one runs 50 µs past the window: clipped
    assert "waited in synchronize calls for 39% of the 1.4 ms window (550 µs)" in synced.verdict
    half = [event("gemm", 100 * i, 60) for i in range(10)]
    assert profile_trace(write(tmp_path, half, "half.json")).kind == "mixed"


def test_an_empty_trace_is_not_an_exception(tmp_path):
    profile = profile_trace(write(tmp_path, [], deviceProperties=[]))
    assert profile.kernel_count == 0 and profile.verdict == "no PyTorch operators ran"


def test_cpu_only_traces_count_outermost_operators_per_thread(tmp_path):
    def op(name, ts, dur, tid=1):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur}

    events = [op("aten::matmul", 0, 100), op("aten::mm", 10, 80), op("aten::add", 150, 20),
              op("aten::sum", 50, 30, tid=2), {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 100,
                                               "tid": 1, "ts": 0, "dur": 200}]
    profile = profile_trace(write(tmp_path, events, deviceProperties=[]))
    assert profile.kernel_count == 3 and profile.busy_fraction is None
    assert profile.counted == "operator calls (CPU only: no device kernels to count)"
    assert [name for name, _, _ in profile.top] == ["aten::matmul", "aten::sum", "aten::add"]


def cpu_profile(count, op_time, window, top):
    return Profile(count, op_time, None, top, window=window)


def test_cpu_verdicts_for_few_operators():
    assert cpu_verdict(cpu_profile(3, 0.002, 0.010, [("aten::mm", 1, 0.0021)]))[1].startswith(
        "overhead-bound: PyTorch operators fill only 20%")
    assert cpu_verdict(cpu_profile(3, 0.009, 0.010, [("aten::mm", 1, 0.008)])) == (
        "operator-bound", "operator-bound: 80% of the run in aten::mm, not in Python or dispatch (whether it is "
        "compute- or memory-bound: --roofline)")
    assert cpu_verdict(cpu_profile(9, 0.009, 0.010, [("aten::add", 3, 0.003)]))[1].startswith(
        "mixed: 9 operator calls; the largest")


def test_the_harness_synchronizations_around_the_cell_are_not_the_cells(tmp_path):
    """``--profile``'s window: the harness synchronizes, the cell does 50 µs of host work and
    launches one 100 µs kernel, the harness waits for it. Those two waits are the harness's
    (outside the cell's mark): no synchronization verdict, no advice about a loop of .item()."""
    marks = [event("ipython_cudatime: profiled run", 0, 160, "user_annotation", 1),
             event("ipython_cudatime: cell", 4, 54, "user_annotation", 1)]
    host = [event("cudaDeviceSynchronize", 1, 2, "cuda_runtime", 1),
            event("cudaLaunchKernel", 50, 6, "cuda_runtime", 1, correlation=1),
            event("cudaDeviceSynchronize", 59, 100, "cuda_runtime", 1)]
    kernel = [event("sm90_xmma_gemm_bf16bf16", 58, 100, correlation=1)]
    profile = profile_trace(write(tmp_path, marks + host + kernel))
    assert profile.sync_time == 0.0
    assert profile.kind != "synchronization" and ".item()" not in profile.verdict
    # the cell's own wait, inside its mark, still counts
    inside = [event("ipython_cudatime: cell", 4, 150, "user_annotation", 1)]
    own = profile_trace(write(tmp_path, marks[:1] + inside + host + kernel, "own.json"))
    assert own.sync_time == pytest.approx(95e-6) and own.kind == "synchronization"


def test_a_gpu_bound_run_of_copies_names_the_copies_not_the_top_kernel(tmp_path):
    """900 µs of host-to-device copies and a 100 µs kernel: the copies are where the time went."""
    events = [event("Memcpy HtoD (Pageable -> Device)", 100 * i, 90, "gpu_memcpy") for i in range(10)]
    events.append(event("void at::native::vectorized_elementwise_kernel<4>", 1000, 100))
    profile = profile_trace(write(tmp_path, events))
    assert profile.kind == "GPU-bound"
    assert "most in memory copies and sets (10 calls, 900 µs)" in profile.verdict
    assert "vectorized_elementwise_kernel" not in profile.verdict


def test_cpu_verdicts_near_a_threshold_say_so():
    """The same ``a @ a`` measured 62% in aten::matmul once and 44% of operators another time."""
    near_compute = cpu_verdict(cpu_profile(1, 0.0062, 0.010, [("aten::matmul", 1, 0.0062)]))
    assert near_compute == ("operator-bound", "operator-bound: 62% of the run in aten::matmul, near the 50% line "
                                              "between operator-bound and mixed, not in Python or dispatch (whether "
                                              "it is compute- or memory-bound: --roofline)")
    near_overhead = cpu_verdict(cpu_profile(1, 0.0044, 0.010, [("aten::matmul", 1, 0.0044)]))[1]
    assert near_overhead.startswith("overhead-bound: PyTorch operators fill only 44% of the run, "
                                    "near the 50% line between overhead-bound and the rest;")
    assert "near" not in cpu_verdict(cpu_profile(3, 0.009, 0.010, [("aten::mm", 1, 0.008)]))[1]


def test_one_operator_call_is_singular():
    assert cpu_verdict(cpu_profile(1, 0.009, 0.010, [("aten::add", 1, 0.003)]))[1].startswith(
        "mixed: 1 operator call; the largest")
    from ipython_cudatime.features.profile.record import profile_lines

    profile = cpu_profile(1, 0.009, 0.010, [("aten::add", 1, 0.003)])
    profile.counted = "operator calls (CPU only: no device kernels to count)"
    assert "1 operator call (CPU only: no device kernels to count)," in profile_lines(profile)[0]
