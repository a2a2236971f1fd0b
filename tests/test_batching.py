"""Tiny cells: the harness's own cost is measured (null runs) and short runs are timed k per sample.

The device double (``async_device_double``) is a stand-in for a GPU, named as such.
"""

import ast

import pytest
from conftest import run

from ipython_cudatime import report
from ipython_cudatime.notebook import display
from ipython_cudatime.backends import DeviceSet
from ipython_cudatime.measure.runner import compile_batch, independent
from ipython_cudatime.features import FEATURES
from ipython_cudatime.results.result import CudaTimeResult, Harness, Run
from ipython_cudatime.measure.runner import BATCH_TARGET, NULL_RUNS, Clock, calibrate


def timed(ip, line):
    """Through a real cell, as a user types it: the statement runs in the user's namespace."""
    cell = run(ip, f"_r = %cudatime -o -q {line}")
    assert cell.error is None, cell.error
    return ip.user_ns.pop("_r")


@pytest.mark.parametrize("source, batched", [
    ("sum(range(40))", True),
    ("c = a @ b\nc.sum()", True),  # reads what it bound itself first
    ("import os\nos.sep", True),
    ("w = [i for i in range(3)]", True),  # a comprehension's variable is its own
    ("x = x + 1", False),  # each run would start from the last one's x
    ("x += 1", False),
    ("del x", False),
    ("for i in range(3):\n    z = i\nz", False),  # a loop may bind nothing
])
def test_which_cells_are_independent(source, batched):
    assert independent(ast.parse(source)) is batched


@pytest.mark.parametrize("source", ["return 1", "[(t := 1) for _ in range(2)]", "global g\ng = 1",
                                    "from os import *", "x = x + 1"])
def test_cells_that_are_never_batched(source):
    assert compile_batch(ast.parse(source), lambda m: compile(m, "<cell>", "exec"), {"x": 1}) is None


def test_a_batch_runs_the_cell_k_times_in_the_users_namespace():
    namespace = {"a": 2, "seen": []}
    batch = compile_batch(ast.parse("y = a * 3\nseen.append(y)\ny + 1"), lambda m: compile(m, "<c>", "exec"),
                          namespace)
    assert batch(4) == 7
    assert namespace["y"] == 6 and namespace["seen"] == [6] * 4
    assert "_cudatime_batch" not in namespace


def test_harness_is_measured_with_null_runs_through_the_same_path():
    harness = calibrate(DeviceSet([]), Clock())
    assert isinstance(harness, Harness) and harness.wall > 0 and harness.jitter >= 0 and harness.device is None
    assert NULL_RUNS >= 10  # enough for quartiles


@pytest.mark.timing  # whether a run is short next to the harness is a matter of real time
def test_a_tiny_cell_is_batched_and_the_report_says_so(ip):
    r = timed(ip, "sum(range(40))")
    assert r.batch > 1 and all(sample.batch == r.batch for sample in r.warm)
    assert r.batch * r.median >= 0.5 * BATCH_TARGET * r.harness.wall  # a sample outlasts the harness
    text = report(r)
    assert f"each sample: {r.batch:,} runs in one timed loop" in text
    assert f"samples of {r.batch:,} runs" in text
    assert f"{len(r.warm)} warm samples × {r.batch:,} runs" in r.counts_text()
    assert "each sample" in display.bundle(r, FEATURES)["text/html"]


def test_every_run_of_every_sample_is_a_real_run_and_counted(ip, async_device):
    """The device double counts its launches (machinery, not the user's state: the cell repeats)."""
    ip.user_ns["gpu"] = async_device
    before = async_device.launches
    r = timed(ip, "-b 0.05 gpu.launch(0)")
    assert r.batch > 1
    assert async_device.launches - before == r.total_runs == 1 + sum(w.batch for w in r.warmup) + len(r.warm) * r.batch


def test_a_cell_that_reads_what_it_binds_runs_once_per_sample_and_leaves_one_runs_state(ip):
    ip.run_cell("x = 0")
    r = timed(ip, "-b 0.05 x = x + 1")
    assert r.batch == 1 and r.runs > 3 and ip.user_ns["x"] == 1


def test_n_means_n_runs_of_one(ip):
    ip.run_cell("calls = 0\ndef tick():\n    global calls\n    calls += 1")
    r = timed(ip, "-n 7 -w 0 tick()")
    assert r.batch == 1 and ip.user_ns["calls"] == 8


def test_a_statement_in_a_function_scope_is_not_batched(ip):
    """From Python code the line magic runs in the caller's locals: no loop function can write those."""
    assert ip.run_line_magic("cudatime", "-o -q sum(range(40))").batch == 1


@pytest.mark.timing
def test_a_5us_kernel_reads_5us_on_the_device_clock_despite_a_20us_synchronize(ip, async_device, monkeypatch):
    """Each sample's fixed cost (a synchronize of 20 µs) is 4 times the kernel: batching spreads
    it over the sample's runs, and the device clock, not the wall clock, is the answer."""
    monkeypatch.setattr(async_device, "sync_cost", 20e-6)
    ip.user_ns["gpu"] = async_device
    r = timed(ip, "gpu.launch(5e-6)")
    assert r.harness.wall >= 20e-6 and r.batch > 1
    assert r.clock == "device"
    assert abs(r.median - 5e-6) <= 1e-6


def test_device_clock_is_kept_when_only_the_harness_fills_the_wall_time():
    """One 5 µs run with a 20 µs synchronize: device 5 µs of a 26 µs wall, 20 µs of which is the harness."""
    runs = [Run(host=2e-6, wall=26e-6, device=5e-6)] * 5
    measured = CudaTimeResult(cold=runs[0], warm=runs, harness=Harness(wall=20e-6, jitter=1e-6))
    assert measured.clock == "device" and measured.median == pytest.approx(5e-6)
    unmeasured = CudaTimeResult(cold=runs[0], warm=runs)
    assert unmeasured.clock == "wall"
    other_streams = [Run(host=2e-6, wall=60e-6, device=5e-6)] * 5  # events miss work elsewhere
    assert CudaTimeResult(cold=runs[0], warm=other_streams, harness=Harness(20e-6, 1e-6)).clock == "wall"


def test_the_noise_warning_does_not_blame_the_machine_for_the_clocks_jitter():
    spread = [Run(host=t, wall=t) for t in (300e-9, 340e-9, 380e-9, 420e-9, 460e-9) * 4]  # IQR ~ 27% of median
    jittery = CudaTimeResult(cold=spread[0], warm=spread, harness=Harness(wall=350e-9, jitter=100e-9))
    assert "noisy" not in report(jittery)
    steady = CudaTimeResult(cold=spread[0], warm=spread, harness=Harness(wall=350e-9, jitter=5e-9))
    assert "Warning: noisy (median ±11%, 95% CI)" in report(steady)


def test_the_batch_loop_is_compiled_once_per_cell_and_namespace(ip):
    """Every round of an interleaved sweep runs the same loop, which the interpreter has adapted to
    (Python 3.11+ specializes code as it runs): one compiled afresh per round read 20-40% slower."""
    from ipython_cudatime.notebook.magics import CompiledCell

    compiled = CompiledCell(ip, "sum(range(40))")
    loop = compiled.batch(ip.user_ns, None)
    assert loop is not None and compiled.batch(ip.user_ns, None) is loop
    other = {"__builtins__": __builtins__}
    assert compiled.batch(other, None) is not loop and compiled.batch(other, None)(3) == 780
