"""The CPU context of a measurement and the cause named for noisy or slow warm runs.

On the fake clock and the fake machine (``fake_device.FakeMachine``): each case of the cause
logic with facts chosen for it. ``cpu.stall(s)`` is a wait for a core (wall time, no CPU time),
``host.advance(s)`` host work. The real machine's facts are read in the ``timing`` test at the end,
under load made by the test itself.
"""

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import run

from ipython_cudatime import contrast, report
from ipython_cudatime.results.compare import Point, Results
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.cpu_context.context import CpuContext
from ipython_cudatime.features.cpu_context.noise import noise as check
from ipython_cudatime.measure.machine import Machine
from ipython_cudatime.results.result import CudaTimeResult, Run, Task

NOISY = "stalls = iter([0, 8, 0, 1, 0, 8, 0, 1, 8, 0, 1, 0, 0])"  # 13 runs: every other one waits
STALLED_CELL = "cpu.stall(next(stalls) / 1024, tensor); host.advance(1 / 1024)"  # torch's work (a stand-in tensor)


def timed(ip, cell, options="-n 12 -w 0"):
    return ip.run_line_magic("cudatime", f"-o -q {options} {cell}")


def noise(result):
    """The noise check of a result on the CPU facts it recorded."""
    return check(result, result.records.get("cpu_context"))


def cause_kind(result):
    return noise(result)[1].kind if noise(result)[1] is not None else None


def test_oversubscribed_names_the_pool_its_threads_the_cores_and_the_load(ip, fake_cpu):
    ip.run_cell(f"cpu.pools = {{'torch': 2, 'openblas': 1}}\ncpu.load_average, cpu.ready = 1.4, 1\n{NOISY}")
    r = timed(ip, STALLED_CELL)
    assert cause_kind(r) == "oversubscribed"
    text = noise(r)[1].text
    assert "torch runs 2 threads on 2 usable cores" in text and "load average 1.40" in text
    assert "torch.set_num_threads(1)" in text and "--threads 1" in text


def test_a_blas_pool_that_oversubscribes_gets_threadpoolctl_as_the_fix(ip, fake_cpu):
    ip.run_cell(f"cpu.pools = {{'openblas': 4}}\n{NOISY}")  # 4 threads on 2 quiet cores: its own waits
    text = noise(timed(ip, STALLED_CELL.replace("tensor", "array")))[1].text
    assert "openblas runs 4 threads" in text and "threadpoolctl.threadpool_limits(1)" in text


def test_loaded_when_one_thread_waited_for_a_core(ip, fake_cpu):
    ip.run_cell(f"cpu.pools = {{'torch': 1}}\ncpu.load_average, cpu.ready = 3.5, 4\n{NOISY}")
    r = timed(ip, STALLED_CELL)
    assert cause_kind(r) == "loaded"
    assert "a loaded machine: load average 3.50 and 4 other threads ready to run on 2 usable cores" in report(r)
    assert "oversubscription" not in report(r)


def test_threads_1_turns_oversubscription_into_no_such_diagnosis(ip, fake_cpu):
    """The same cell and load as the oversubscribed case, with --threads 1: the pools run one thread
    while it is timed (and get the user's two back after)."""
    ip.run_cell(f"cpu.pools = {{'torch': 2}}\ncpu.load_average, cpu.ready = 2.6, 3\n{NOISY}")
    r = timed(ip, STALLED_CELL, "-n 12 -w 0 --threads 1")
    assert r.task.threads == 1 and r.cpu_context.threads == {"torch": 1}
    assert ip.user_ns["cpu"].pools == {"torch": 2}
    assert cause_kind(r) == "loaded" and "oversubscription" not in report(r)
    assert "threads  : --threads 1: torch 1" in report(r)


def test_a_cell_whose_runs_differ_in_work_varies(ip, fake_cpu):
    ip.run_cell("sizes = iter([1, 1, 2, 1, 4, 1, 1, 8, 1, 1, 1, 1, 1])")
    r = timed(ip, "host.advance(next(sizes) / 1024)")
    assert cause_kind(r) == "varies"
    assert "the runs themselves vary" in report(r) and "another virtual machine" in report(r) and "CPU time 1.00× the wall time" in report(r)


def test_quiet_steady_runs_get_no_warning_and_no_cause(ip, fake_cpu):
    r = timed(ip, "host.advance(1 / 1024)")
    assert noise(r) == (None, None)
    assert "cause" not in report(r).lower() and "Warning" not in report(r)


def test_steady_but_starved_runs_are_called_slowed(ip, fake_cpu):
    """No spread, but the thread waited for a core half of the time: a symptom all the same."""
    ip.run_cell("cpu.load_average, cpu.ready = 2.5, 3")
    r = timed(ip, "cpu.stall(1 / 1024); host.advance(1 / 1024)")
    warning, cause = noise(r)
    assert cause.symptom == "starved" and cause.kind == "loaded"
    assert warning.startswith("Warning: slowed (the timing thread waited for a core during 50% of the warm runs' ")
    assert warning.endswith("): machine loaded, load 2.50 on 2 usable cores · fix: a quieter machine, or more runs (-n/-b)")


def test_noise_the_facts_do_not_explain_is_cause_unknown(ip, fake_gpu):
    ip.run_cell("sizes = iter([1, 1, 2, 1, 4, 1, 1, 8, 1, 1, 1, 1, 1])")
    r = timed(ip, "gpu.launch(next(sizes) / 256)")  # the device varies; the CPU was free and idle
    assert cause_kind(r) == "unknown"
    assert "Cause unknown: the CPU facts do not explain it" in report(r)


def test_a_result_without_cpu_facts_is_cause_unknown_and_older_files_load(ip, fake_cpu):
    ip.run_cell("sizes = iter([1, 1, 2, 1, 4, 1, 1, 8, 1, 1, 1, 1, 1])")
    data = timed(ip, "host.advance(next(sizes) / 1024)").to_dict()
    del data["records"]["cpu_context"], data["task"]["threads"]  # as a file from before these were written
    old = CudaTimeResult.from_dict(json.loads(json.dumps(data)), FEATURES)
    assert old.cpu_context is None and old.task.threads is None
    assert "Cause unknown: no CPU facts were recorded" in report(old)


def test_a_line_saved_with_the_cpu_facts_beside_the_fields_loads_them_as_the_features_record(ip, fake_cpu, tmp_path):
    """Schema 2 kept the CPU facts in a field of the result ("cpu_context" beside "records"); they are
    the CPU facts feature's record now, and such a line reads them there, as schema 3 writes them."""
    from ipython_cudatime import load

    ip.run_cell(f"cpu.pools = {{'torch': 2}}\ncpu.load_average, cpu.ready = 1.5, 2\n{NOISY}")
    r = timed(ip, STALLED_CELL)
    data = r.to_dict()
    old = {"format": "ipython_cudatime", "schema": 2, **data, "cpu_context": data["records"].pop("cpu_context")}
    path = tmp_path / "schema2.jsonl"
    path.write_text(json.dumps(old) + "\n")
    loaded, problems = load([path])
    assert problems == [] and loaded.points[0].result == r and loaded.points[0].result.cpu_context.load_before == 1.5
    assert "Likely cause: oversubscription. torch runs 2 threads" in report(loaded.points[0].result)


def test_the_cpu_facts_are_a_feature_the_views_are_handed(ip, fake_cpu):
    """Without the CPU facts among the features, a result records none and no view says a word of
    its noise: nothing below the features wires them in."""
    ip.run_cell(f"cpu.pools = {{'torch': 2}}\ncpu.load_average, cpu.ready = 2.6, 3\n{NOISY}")
    r = timed(ip, STALLED_CELL)
    others = tuple(feature for feature in FEATURES if feature.name != "cpu_context")
    assert "Warning: noisy" in report(r) and "Warning: noisy" not in report(r, others)
    assert "noisy: oversubscribed" in report(Results([Point(r.task, r)]), FEATURES)
    assert "noise" not in report(Results([Point(r.task, r)]), others).splitlines()[0]


def test_an_interleaved_points_cpu_facts_add_up_its_rounds(ip, fake_cpu):
    """Each round of ``--interleave`` reads the CPU facts around its warm run; the point's record
    holds all of them added up (``CpuFacts.merged``), not its first round's."""
    sweep = ip.run_line_magic("cudatime", "-o -q -n 4 -w 0 --interleave --sweep way='a','b' host.advance(1 / 1024)")
    for point in sweep.points:
        assert point.result.runs == 4
        assert point.result.cpu_context.wall == pytest.approx(4 / 1024)  # one round alone: 1 / 1024


def test_the_cpu_context_is_saved_and_loaded_with_the_result(ip, fake_cpu):
    ip.run_cell(f"cpu.pools = {{'torch': 2, 'blas': None}}\ncpu.load_average, cpu.ready = 1.5, 2\n{NOISY}")
    r = timed(ip, STALLED_CELL, "-n 12 -w 0 --threads 3")
    context = r.cpu_context
    assert (context.cores, context.load_before, context.ready_before) == (2, 1.5, 2)
    assert context.wall == pytest.approx(12 / 1024 + 27 / 1024) and context.cpu == pytest.approx(12 / 1024)
    assert context.waited == pytest.approx(27 / 1024)
    again = CudaTimeResult.from_dict(json.loads(json.dumps(r.to_dict())), FEATURES)
    assert again == r and again.cpu_context == context and again.task.threads == 3


def test_the_html_details_list_the_cpu_facts(ip, fake_cpu):
    from ipython_cudatime.notebook.display import bundle

    ip.run_cell("cpu.pools = {'torch': 2, 'blas': None}\ncpu.load_average, cpu.ready = 1.5, 2")
    html = bundle(timed(ip, "host.advance(1 / 1024)"), FEATURES)["text/html"].replace("\xa0", " ")  # as it reads
    for text in ("CPU: usable cores", "1.50 before", "torch 2, blas not seen (threadpoolctl is not installed)",
                 "CPU: warm runs&#x27; CPU time", "CPU: waited for a core"):
        assert text in html


def test_every_sweep_point_carries_the_noise_check(ip, fake_cpu):
    ip.run_cell("cpu.pools = {'torch': 2}\ncpu.load_average, cpu.ready = 2.6, 3\n"
                "stalls = iter([0, 8, 0, 1, 0, 8, 0, 1, 8, 0, 1, 0, 0] + [0] * 13)")
    cell = run(ip, f"%cudatime -n 12 -w 0 --sweep n=1,2 {STALLED_CELL}")
    table = cell.displayed[0].splitlines()
    assert "noisy: oversubscribed" in table[1] and "noisy" not in table[2]
    assert any(line.startswith("n=1: Likely cause: oversubscription.") for line in table)


def _result(*warm, label=None, threads=None):
    return CudaTimeResult(cold=Run(warm[0], warm[0]), warm=[Run(t, t) for t in warm],
                          task=Task(label=label, threads=threads))


def test_contrast_names_the_faster_only_when_the_ratios_interval_excludes_1():
    numpy = _result(*[1.28e-3, 1.29e-3, 1.30e-3] * 2, label="numpy")
    torch = _result(*[1.0e-3, 1.01e-3, 0.99e-3] * 2, label="torch")
    verdict = contrast(numpy, torch)
    assert verdict.conclusive and verdict.faster == "torch" and verdict.ratio == pytest.approx(1.29)
    low, high = verdict.ci
    assert 1.25 < low <= 1.29 <= high < 1.32
    assert verdict.sentence == f"torch 1.29× faster ({low:.2f}–{high:.2f}×)"
    overlapping = contrast(numpy, _result(*[1.0e-3, 1.4e-3, 1.2e-3, 1.3e-3, 1.25e-3, 1.35e-3], label="torch"))
    assert (overlapping.conclusive, overlapping.faster) == (False, None)
    assert overlapping.ci[0] <= 1 <= overlapping.ci[1]
    assert overlapping.sentence.startswith("inconclusive: no difference larger than ")
    assert " either way; about 24 runs each would tell " in overlapping.sentence
    assert contrast(_result(*[2e-3] * 5), _result(*[1e-3] * 6)).sentence == (
        "inconclusive: too few runs for an interval (5 and 6; 6 each needed)")
    assert contrast(_result(*[4e-3] * 6), _result(*[1e-3] * 6)).sentence == "b 4.00× faster (4.00–4.00×)"
    assert contrast(_result(*[1e-3] * 6), _result(*[1e-3] * 6)).sentence == (
        "inconclusive: no difference larger than 0% either way")


def test_contrast_says_when_the_thread_settings_differ():
    verdict = contrast(_result(*[2e-3] * 6, label="one", threads=1), _result(*[1e-3] * 6, label="all"))
    assert verdict.sentence == ("all 2.00× faster (2.00–2.00×) (timed with different thread settings: --threads 1 "
                                "and the user's threads)")
    assert verdict.to_dict()["sentence"] == verdict.sentence


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_threads_needs_a_whole_number_of_at_least_1(ip, value):
    cell = run(ip, f"%cudatime --threads {value} 1")
    assert type(cell.error).__name__ == "UsageError" and "--threads" in str(cell.error)


def test_threads_sets_torch_and_restores_the_users_setting_even_on_error(ip):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        ip.run_cell("import torch\nseen = []")
        r = ip.run_line_magic("cudatime", "-o -q -n 3 --threads 1 seen.append(torch.get_num_threads())")
        assert set(ip.user_ns["seen"]) == {1} and torch.get_num_threads() == 2
        assert r.cpu_context.threads["torch"] == 1
        cell = run(ip, "%cudatime -n 3 --threads 1 seen.append(1); 1 / (len(seen) < 6)")
        assert isinstance(cell.error, ZeroDivisionError) and torch.get_num_threads() == 2
        cell = run(ip, "%cudatime --threads 1 1 / 0")  # the cold run fails
        assert isinstance(cell.error, ZeroDivisionError) and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_threads_limits_the_blas_pools_threadpoolctl_sees(ip):
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="optional: the test extras install it")
    pytest.importorskip("numpy")
    ip.run_cell("import numpy as np\nfrom threadpoolctl import threadpool_info\nseen = []\n"
                "a = np.ones((64, 64))")
    blas = [pool for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]
    if not blas or max(pool["num_threads"] for pool in blas) < 2:
        pytest.skip("no BLAS pool with more than one thread to limit here")
    before = [pool["num_threads"] for pool in blas]
    r = ip.run_line_magic("cudatime", "-o -q -n 2 --threads 1 "
                          "seen.append([p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'])")
    assert all(set(counts) == {1} for counts in ip.user_ns["seen"])
    assert [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"] == before
    assert all(r.cpu_context.threads[pool["internal_api"]] == 1 for pool in blas)


def test_reading_the_facts_imports_no_framework():
    code = ("import sys\nfrom ipython_cudatime.measure.machine import Machine\nm = Machine()\n"
            "m.load(); m.waits(); m.threads(); m.cores()\n"
            "print(sorted(n for n in ('torch', 'numpy', 'jax', 'threadpoolctl') if n in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_real_machine_gives_its_facts():
    machine = Machine()
    (load, ready), (waited, preempted) = machine.load(), machine.waits()
    assert machine.cores() == len(os.sched_getaffinity(0))
    if sys.platform.startswith("linux"):
        assert load >= 0 and ready >= 0 and waited >= 0 and preempted >= 0


BUSY = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"


@pytest.mark.timing
@pytest.mark.torch
def test_under_real_load_two_threads_are_named_oversubscribed_and_one_thread_is_not(ip):
    """Busy processes, one more than the usable cores (three on this 2-core machine; bounded: they stop
    by themselves after a minute, and by PID in the finally), load the cores. With only one per core, the
    scheduler may give this process a core of its own (three tasks on two cores go two and one): the
    pure cell's timing thread then waited under a fifth of its runs, and the test failed one run in
    several. With one more, every core is shared. A 256×256 torch product
    timed with 2 threads then waits at every barrier. The report must name oversubscription with the
    thread count, the usable cores and the load it read; with --threads 1 it must not. A pure-Python
    cell, torch imported at 2 threads, is slowed by the same load: named a loaded machine, never
    torch's threads."""
    torch = pytest.importorskip("torch")
    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        pytest.skip("needs 2 usable cores, so that 2 threads can run at once on a quiet machine")
    before = torch.get_num_threads()
    busy = [subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=60)]) for _ in range(cores + 1)]
    try:
        time.sleep(0.5)  # all spinning before the first reading
        ip.run_cell("import torch\ntorch.set_num_threads(2)\na = torch.rand(256, 256)")
        two = ip.run_line_magic("cudatime", "-o -q -b 0.5 a @ a")
        one = ip.run_line_magic("cudatime", "-o -q -b 0.5 --threads 1 a @ a")
        pure = ip.run_line_magic("cudatime", "-o -q -b 0.5 sum(range(3000))")  # torch imported, never used
    finally:
        for process in busy:
            process.kill()
            process.wait()
        torch.set_num_threads(before)
    context = two.cpu_context
    assert context.threads["torch"] == 2 and context.ready_before >= 2
    text = report(two)
    assert "Likely cause: oversubscription. torch runs 2 threads on" in text, text
    assert f"{context.cores} usable cores" in text and f"load average {context.load_before:.2f}" in text
    assert one.cpu_context.threads["torch"] == 1
    assert "oversubscription" not in report(one), report(one)
    # a pure-Python cell never ran in torch's pool: the cause is the loaded machine, not torch's threads
    assert pure.cpu_context.threads["torch"] == 2 and pure.cpu_context.touched == []
    cause = noise(pure)[1]
    assert cause is not None and cause.kind == "loaded", report(pure)
    assert "torch" not in noise(pure)[0] + cause.text and "machine loaded" in noise(pure)[0]


def test_the_widest_pool_is_torch_on_a_tie_and_unseen_pools_do_not_count():
    context = CpuContext(cores=2, threads={"torch": 2, "openblas": 2, "blas": None})
    assert context.widest_pool == ("torch", 2)
    assert CpuContext(cores=2, threads={"blas": None}).widest_pool == (None, 0)


def test_to_pandas_has_the_spread_and_the_noise_of_each_point(ip, fake_cpu):
    pytest.importorskip("pandas")
    ip.run_cell("cpu.pools = {'torch': 2}\ncpu.load_average, cpu.ready = 2.6, 3\n"
                "stalls = iter([0, 8, 0, 1, 0, 8, 0, 1, 8, 0, 1, 0, 0] + [0] * 13)")
    frame = ip.run_line_magic("cudatime", f"-o -q -n 12 -w 0 --sweep n=1,2 {STALLED_CELL}").to_pandas()
    assert frame["noise"][0] == "oversubscribed" and frame["noise"].isna()[1]
    assert list(frame["min"]) == [pytest.approx(1 / 1024)] * 2 and frame["max"][0] == pytest.approx(9 / 1024)
    # the median's 95% interval: the 3rd smallest and the 3rd largest of 12 (six runs of 1, three of 9 units)
    assert (frame["ci_low"][0], frame["ci_high"][0]) == (pytest.approx(1 / 1024), pytest.approx(9 / 1024))


def test_a_sweep_names_a_cause_found_at_every_point_once_for_all(ip, fake_gpu):
    ip.run_cell("sizes = [1, 1, 4, 1, 4, 1, 4, 1, 4]")  # per point: the cold run, then 8 warm runs 1 or 4 long
    cell = run(ip, "%cudatime -n 8 -w 0 --sweep n=1,2,3 gpu.launch(sizes[host.tick() % 9] * n / 256)")
    lines = cell.displayed[0].splitlines()
    assert all("noisy: cause unknown" in row for row in lines[1:4])
    assert [line.partition(":")[0] for line in lines[4:]] == ["all 3 points (numbers from n=1)"]


def test_a_table_names_each_pool_blamed_apart(ip, fake_cpu):
    """NumPy's points blame the BLAS pool, torch's points torch's: two causes, never one pool's
    sentence for the other's rows."""
    ip.run_cell(f"cpu.pools = {{'torch': 2, 'openblas': 2}}\ncpu.load_average, cpu.ready = 1.4, 1\n"
                "objects = {'numpy': array, 'torch': tensor}\nstalls = [0, 8, 0, 1, 0, 8, 0, 1, 8]")
    cell = run(ip, "%%cudatime -n 8 -w 0 --sweep lib='numpy','torch' used = objects[lib]\n"
                   "cpu.stall(stalls[host.tick() % 9] / 1024, used); host.advance(1 / 1024)")
    notes = [line for line in cell.displayed[0].splitlines() if "Likely cause" in line]
    assert len(notes) == 2 and "openblas runs 2 threads" in notes[0] and "torch runs 2 threads" in notes[1]


def test_a_load_above_the_usable_cores_is_the_cause_even_when_the_timing_thread_never_waited(ip, fake_gpu):
    """The demo's JAX cell at load 6.45 on 2 cores: the work ran in other threads, the timing thread
    only waited on them; the cause is the loaded machine, never "cause unknown"."""
    ip.run_cell("cpu.load_average, cpu.ready = 6.45, 5\nsizes = iter([1, 1, 2, 1, 4, 1, 1, 8, 1, 1, 1, 1, 1])")
    r = timed(ip, "gpu.launch(next(sizes) / 256)")
    warning, cause = noise(r)
    assert cause.kind == "loaded" and r.cpu_context.waited_share == 0
    assert warning.endswith(": machine loaded, load 6.45 on 2 usable cores · fix: a quieter machine, or more runs (-n/-b)")


def test_a_pool_is_blamed_only_when_the_cells_work_ran_in_it(ip, fake_cpu):
    """torch at 2 threads on a loaded machine: a cell that used a torch object is oversubscribed; the
    same cell on a NumPy object (whose BLAS pool runs one thread) is slowed by the load, not by
    torch's threads; one on neither is the loaded machine too."""
    ip.run_cell("cpu.pools = {'torch': 2, 'openblas': 1}\ncpu.load_average, cpu.ready = 1.4, 1")
    kinds = {}
    for name in ("tensor", "array", "None"):
        ip.run_cell(NOISY)
        r = timed(ip, f"cpu.stall(next(stalls) / 1024, {name}); host.advance(1 / 1024)")
        kinds[name] = cause_kind(r), "torch" in noise(r)[1].text
    assert kinds == {"tensor": ("oversubscribed", True), "array": ("loaded", False), "None": ("loaded", False)}


def test_cpu_time_is_said_only_where_it_was_measured():
    unmeasured = CpuContext(cores=2, load_before=0.1, ready_before=0, waited=0.0)  # no warm span: no CPU time
    assert unmeasured.cpu_share is None
    r = CudaTimeResult(cold=Run(1e-3, 1e-3), warm=[Run(t, t) for t in (1e-3, 3e-3) * 3],
                       records={"cpu_context": unmeasured})
    assert cause_kind(r) == "unknown" and "CPU time" not in noise(r)[1].text


def test_contrast_names_a_different_load_and_nothing_where_nothing_differs():
    def timed_at(load):
        return CudaTimeResult(cold=Run(1e-3, 1e-3), warm=[Run(1e-3, 1e-3)] * 6,
                              records={"cpu_context": CpuContext(cores=2, load_before=load)})

    assert contrast(timed_at(0.3), timed_at(6.7)).differs == "load 0.30 vs 6.70 on 2 cores"
    assert contrast(timed_at(0.3), timed_at(0.9)).differs is None  # less than a core's worth apart
    assert "also differs" not in contrast(timed_at(0.3), timed_at(0.3)).sentence
