"""benchmarks/accuracy.py's bands: %cudatime is compared with the harnesses that measure what it
measured (per call against per call, throughput against throughput), within the band plus the
offsets it states (one synchronize per block on a wall clock, one launch between the kinds).

The readings are written here (what each harness returns on a GPU, figures chosen for the
case); the band logic is the benchmark's own, with its GPU switch turned on.
"""

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="benchmarks/accuracy.py imports torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import accuracy  # noqa: E402

US = 1e-6


@pytest.fixture
def on_gpu(monkeypatch):
    monkeypatch.setattr(accuracy, "CUDA", True)


def workload(part):
    """The benchmark's workload whose name contains ``part`` (sizes are the quick ones)."""
    [found] = [w for w in accuracy.workloads(True) if part in w.name]
    return found


def cudatime(seconds, batch, clock="device", sync=20 * US):
    return {"seconds": seconds, "kind": accuracy.THROUGHPUT if batch > 1 else accuracy.PER_CALL, "clock": clock,
            "calls_per_sync": batch if clock == "wall" else None, "sync": sync}


def test_the_tiny_op_compares_throughput_with_throughput_only(on_gpu):
    """t.mul_(1.0): %cudatime batched reads the 6 µs launch interval, as Timer does; the per-call
    harnesses read an isolated launch (14 µs) and are shown, not compared (no offset is known)."""
    tiny = workload("tiny elementwise")
    row = {"%cudatime": cudatime(6 * US, 1000), "torch Timer": {"seconds": 6.3 * US, "calls_per_sync": 10_000},
           "cupyx benchmark": {"seconds": 14 * US}, "triton do_bench": {"seconds": 20 * US}}
    verdict = accuracy.band_verdict(tiny, row, 6 * US)
    assert verdict.startswith("pass (±15% of %cudatime throughput: torch Timer (+ one synchronize per block)")
    assert "not compared, another kind: cupyx benchmark (per call), triton do_bench (per call)" in verdict
    row["torch Timer"]["seconds"] = 9 * US  # a real disagreement is still caught
    failed = accuracy.band_verdict(tiny, row, 6 * US)
    assert failed.startswith("FAIL") and failed.endswith("): torch Timer")


def test_a_long_kernel_compares_across_kinds_with_one_launch_stated(on_gpu):
    """A 500 µs copy read per call by events (it includes one launch) and batched by %cudatime: the
    band is ±5% plus one launch, and says so; 10% off is still a failure."""
    copy = workload("copy")
    row = {"%cudatime": cudatime(500 * US, 4), "cupyx benchmark": {"seconds": 506 * US},
           "torch Timer": {"seconds": 501 * US, "calls_per_sync": 20}}
    verdict = accuracy.band_verdict(copy, row, 500 * US)
    assert verdict.startswith("pass (±5% of %cudatime throughput: cupyx benchmark (+ one launch), "
                              "torch Timer (+ one synchronize per block)")
    row["cupyx benchmark"]["seconds"] = 550 * US
    assert accuracy.band_verdict(copy, row, 500 * US) == "FAIL (" + verdict[len("pass ("):] + ": cupyx benchmark"


def test_a_wall_clock_sample_states_its_synchronize(on_gpu):
    """%cudatime on the wall clock, one run per sample: its reading carries one synchronize (20 µs);
    a per-call event reading of the same 200 µs work is 20 µs lower and within the stated offset."""
    gemm = workload("GEMM")
    row = {"%cudatime": cudatime(220 * US, 1, clock="wall"), "cupyx benchmark": {"seconds": 200 * US}}
    assert accuracy.band_verdict(gemm, row, 220 * US) == (
        "pass (±5% of %cudatime per call: cupyx benchmark (+ one synchronize per block))")
    row["%cudatime"] = cudatime(220 * US, 1)  # on events, no synchronize to allow for: 10% off fails
    assert accuracy.band_verdict(gemm, row, 220 * US).startswith("FAIL")


def test_a_harness_of_unknown_kind_is_not_compared(on_gpu):
    row = {"%cudatime": cudatime(1e-3, 1), "someone's harness": {"seconds": 2e-3}}
    verdict = accuracy.band_verdict(workload("seed 002 loop"), row, 1e-3)
    assert verdict.startswith("pass") and "not compared, another kind: someone's harness (unknown kind)" in verdict


def test_a_cudatime_reading_without_a_warm_median_fails_the_step():
    """%cudatime's column read "n/a" when its repeat rule ran a None-returning function once: the
    step must fail on the CPU too, where no band is applied."""
    row = {"times": {"%cudatime": cudatime(None, 1), "torch Timer": {"seconds": 1e-3}}, "band": "±5% on a GPU"}
    assert accuracy.failed({"rows": [row]})
    row["times"]["%cudatime"] = cudatime(1e-3, 1)
    assert not accuracy.failed({"rows": [row]})
