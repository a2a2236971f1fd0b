"""Bad input loses nothing: the user's traceback, partial reports, a usable shell."""

import pytest
from IPython.core.error import UsageError
from conftest import in_fresh_shell, run

FAIL_ON_THIRD = """
calls = 0
def flaky(exc):
    global calls
    calls += 1
    if calls == 3:
        raise exc
"""


def assert_shell_usable(ip):
    cell = run(ip, "%cudatime -n 1 'still-alive'")
    assert cell.error is None and cell.value == "still-alive"


@pytest.mark.parametrize("source", ["%cudatime -n 1 1 +* 2", "%%cudatime -n 1\nx = 1\n1 +* 2"])
def test_a_syntax_error_in_the_cell_is_shown_as_in_a_cell(ip, source):
    cell = run(ip, source)
    assert isinstance(cell.error, SyntaxError)  # error_in_exec: Run All stops
    out = cell.stdout + cell.stderr
    assert out.count("SyntaxError: invalid syntax") == 1 and "1 +* 2" in out
    assert "magics.py" not in out and "interactiveshell.py" not in out and "Traceback" not in out  # no frame
    assert_shell_usable(ip)


def test_exception_in_cold_run_shows_user_traceback_and_keeps_namespace(ip):
    cell = run(ip, "%%cudatime -n 3\nreached = 'before'\ndef inner():\n    return 1 / 0\ninner()\nafter = 1")
    out = cell.stdout + cell.stderr
    assert "ZeroDivisionError" in out
    assert "inner()" in out and "return 1 / 0" in out  # the user's own frames and lines
    assert "ipython_cudatime" not in out and "runner.py" not in out
    assert ip.user_ns["reached"] == "before"
    assert "after" not in ip.user_ns
    assert not any(text.startswith("CPU times") for text in cell.displayed)
    assert_shell_usable(ip)


def test_exception_in_warm_run_reports_runs_done_then_raises(ip):
    ip.run_cell(FAIL_ON_THIRD)
    cell = run(ip, "%cudatime -n 10 -w 0 -v partial flaky(ValueError('third run fails'))")
    assert isinstance(cell.error, ValueError)
    partial = ip.user_ns["partial"]
    assert len(partial.warm) == 1  # cold, warm 1, then warm 2 failed
    assert partial.stopped == "ValueError in warm run 2"
    assert partial.cpu_context is not None  # the watches hear the warm runs end, however they ended
    report = cell.displayed[0]
    assert "Stopped early by ValueError in warm run 2" in report
    assert "third run fails" in cell.stdout + cell.stderr
    assert_shell_usable(ip)


def test_keyboard_interrupt_in_warm_runs_reports_then_propagates(ip):
    ip.run_cell(FAIL_ON_THIRD)
    cell = run(ip, "%cudatime -n 10 -w 1 -v partial flaky(KeyboardInterrupt())")
    assert isinstance(cell.error, KeyboardInterrupt)
    partial = ip.user_ns["partial"]
    assert (len(partial.warmup), len(partial.warm)) == (1, 0)
    assert partial.stopped == "KeyboardInterrupt in warm run 1"
    assert any("Stopped early by KeyboardInterrupt" in text for text in cell.displayed)
    assert_shell_usable(ip)


def test_out_of_memory_in_warm_run_gets_a_hint(ip):
    torch = pytest.importorskip("torch", reason="torch not installed: its OutOfMemoryError type is needed")
    ip.user_ns["torch"] = torch
    ip.run_cell(FAIL_ON_THIRD)
    cell = run(ip, "%cudatime -n 5 -w 0 flaky(torch.cuda.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB'))")
    assert type(cell.error).__name__ == "OutOfMemoryError"
    report = cell.displayed[0]
    assert "Out of memory during the warm runs" in report
    assert "warm run 2" in report
    assert_shell_usable(ip)


def _cell_name(cell):
    """How IPython names the cell that ran in tracebacks: `Cell In[N]` (8+) or `<ipython-input-N-...>` (7)."""
    import IPython

    number = cell.result.execution_count
    return f"Cell In[{number}]" if IPython.version_info[0] >= 8 else f"<ipython-input-{number}-"


def test_cold_run_error_propagates_with_the_users_traceback_once(ip):
    ip.run_cell("def inner():\n    return 1 / 0")
    cell = run(ip, "%cudatime -n 3 inner()")
    assert isinstance(cell.error, ZeroDivisionError)  # error_in_exec: the kernel replies "error"
    out = cell.stdout + cell.stderr
    assert out.count("ZeroDivisionError: division by zero") == 1
    assert _cell_name(cell) in out and "return 1 / 0" in out
    assert "run_line_magic" not in out and "decorator" not in out  # IPython 7's magic machinery too
    assert_shell_usable(ip)


def test_setup_error_propagates(ip):
    cell = run(ip, "%%cudatime -n 1 undefined_name\ntimed = 1")
    assert isinstance(cell.error, NameError) and "timed" not in ip.user_ns
    assert _cell_name(cell) in cell.stdout + cell.stderr


@pytest.mark.parametrize("flags", ["", "--no-raise-error "])
def test_a_bad_trace_folder_stops_before_the_setup_code_runs(ip, tmp_path, flags):
    """Every rule of the command line is checked before setup code or the cell runs."""
    for path in (tmp_path / "no" / "such" / "t.json", tmp_path):  # a missing folder; a folder itself
        cell = run(ip, f"%%cudatime {flags}--trace {path} print('SETUP RAN')\n1")
        assert isinstance(cell.error, UsageError) and "SETUP RAN" not in cell.stdout


def test_a_usage_error_found_while_timing_stops_the_cell_even_with_no_raise_error():
    """-p needs torch, which setup code may import, so that rule is checked after the setup; its
    UsageError still stops the cell: --no-raise-error is about the cell's own errors."""
    last = in_fresh_shell(
        "r = ip.run_cell('%%cudatime --no-raise-error -n 1 -p\\n1')\n"
        "print(type(r.error_in_exec).__name__, 'torch' in sys.modules)",
        prelude="import sys\n",
    )
    assert last == "UsageError False"


def test_no_raise_error_prints_and_goes_on(ip):
    cell = run(ip, "%cudatime --no-raise-error -n 1 1 / 0")
    assert cell.error is None
    assert "ZeroDivisionError" in cell.stdout + cell.stderr
    ip.run_cell(FAIL_ON_THIRD)
    cell = run(ip, "%cudatime --no-raise-error -n 5 -w 0 flaky(ValueError('late'))")
    assert cell.error is None and "Stopped early by ValueError in warm run 2" in cell.displayed[0]


@pytest.mark.parametrize("exc", ["KeyboardInterrupt()", "SystemExit(3)"])
def test_interrupts_in_the_cold_run_show_no_internal_frames(ip, exc):
    ip.run_cell(f"def stop():\n    raise {exc}")
    cell = run(ip, "%cudatime -n 3 stop()")
    assert type(cell.error).__name__ == exc.partition("(")[0]
    out = cell.stdout + cell.stderr
    assert "runner.py" not in out and "magics.py" not in out


def test_system_exit_in_warm_runs_reports_then_propagates(ip):
    ip.run_cell(FAIL_ON_THIRD)
    cell = run(ip, "%cudatime -n 10 -w 0 flaky(SystemExit(2))")
    assert isinstance(cell.error, SystemExit)
    assert any("Stopped early by SystemExit in warm run 2" in text for text in cell.displayed)
    assert_shell_usable(ip)


def test_an_error_in_a_batched_later_run_shows_the_cells_frames_only(ip, async_device):
    ip.user_ns["gpu"] = async_device  # counts the runs without a state of the user's: the cell repeats
    ip.run_cell("start = gpu.launches\ndef g():\n    gpu.launch(0)\n    if gpu.launches - start == 30:\n"
                "        raise ValueError('thirtieth')\n    return 1")
    cell = run(ip, "%cudatime y = g() + 1")  # fast: timed in batches, as timeit does
    assert isinstance(cell.error, ValueError)
    out = cell.stdout + cell.stderr
    assert "y = g() + 1" in out and "thirtieth" in out
    assert "_cudatime_batch" not in out and "ipython_cudatime" not in out
    assert any("Stopped early by ValueError in warm-up run" in text for text in cell.displayed)


ODD = """
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str")

class Frozen(Exception):
    def __setattr__(self, name, value):
        raise RuntimeError("frozen")

class Custom(BaseException):
    pass
"""


@pytest.mark.parametrize("raised", ["Unprintable()", "Frozen()", "Custom()", "GeneratorExit()"])
def test_odd_exceptions_in_a_warm_run_get_the_report_and_propagate_unchanged(ip, raised):
    from IPython.utils.capture import capture_output

    from conftest import Cell

    ip.run_cell(ODD + FAIL_ON_THIRD + f"boom = {raised}")
    with capture_output() as captured:  # no history: IPython 9 stores str(error) there, which Unprintable refuses
        cell = Cell(ip.run_cell("%cudatime -n 5 -w 0 flaky(boom)"), captured)
    assert cell.error is ip.user_ns["boom"]
    name = raised.partition("(")[0]
    assert any(f"Stopped early by {name} in warm run 2" in text for text in cell.displayed)
    assert_shell_usable(ip)


def test_an_interrupt_while_the_report_is_assembled_still_shows_and_saves_it(ip, seams, tmp_path):
    import os
    import signal

    import fake_device

    class Interrupting(fake_device.FakeBackend):
        def describe(self):  # called while the result is assembled, after the runs
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as a user presses it
            return super().describe()

    clock = fake_device.FakeClock()
    device = fake_device.FakeDevice(clock)
    device.detect = lambda module: Interrupting(device)
    seams(registry=(("fake_device", device),), probes=(), clock=clock)
    ip.user_ns["gpu"] = device
    path = tmp_path / "results.jsonl"
    cell = run(ip, f"%cudatime -n 2 --save {path} gpu.launch(1 / 64)")
    assert isinstance(cell.error, KeyboardInterrupt)  # the interrupt is not lost: it comes after the report
    assert "magics.py" not in cell.stdout + cell.stderr
    assert sum(text.startswith("CPU times") for text in cell.displayed) == 1
    assert len(path.read_text().splitlines()) == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
