"""A long session stays fast, other threads' output survives the quiet later runs, and nothing a
user types loses a finished result or the kernel (real shell; a real kernel where said)."""

import gc
import time

import pytest
from conftest import run
from IPython.utils.capture import capture_output


def _callbacks(ip):
    return sum(len(callbacks) for callbacks in ip.events.callbacks.values())


def _empty_cell_seconds(ip, batches=5, cells=100):
    """The fastest of a few batches of empty cells, per cell: the minimum resists a busy machine."""
    fastest = float("inf")
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(cells):
            ip.run_cell("")
        fastest = min(fastest, (time.perf_counter() - start) / cells)
    return fastest


@pytest.mark.timing
def test_two_thousand_calls_leave_no_callbacks_objects_or_slowness(ip):
    run(ip, "%cudatime -q -n 1 -w 0 x = 1")  # the first call's imports and caches are not the session's growth
    gc.collect()
    callbacks, objects, empty = _callbacks(ip), len(gc.get_objects()), _empty_cell_seconds(ip)
    with capture_output():  # without history: IPython's own growth per numbered cell is not ours
        for _ in range(2000):  # quiet later runs: the path that built a display publisher per call
            ip.run_cell("%cudatime -q -n 1 -w 0 x = 1")
    gc.collect()
    assert _callbacks(ip) == callbacks
    assert len(gc.get_objects()) - objects < 1000  # was 27 more per call
    assert _empty_cell_seconds(ip) < 2.5 * empty  # was 1.6× after 200 calls, 4× after 1,000


TICKING = """import sys, threading, time
def tick():
    for number in range(30):
        print(f"tick {number}", file=TO)
        time.sleep(0.05)
ticker = threading.Thread(target=tick)
ticker.start()
"""


def _ticks(text):
    return sorted({int(line.split()[1]) for line in text.splitlines() if line.startswith("tick ")})


@pytest.mark.timing
def test_another_threads_prints_all_appear_across_the_quiet_later_runs(ip):
    ip.user_ns["TO"] = None  # print's default: sys.stdout, as the thread finds it at each print
    cell = run(ip, TICKING + "%cudatime -b 1 time.sleep(0.01)\nticker.join()")
    assert _ticks(cell.stdout) == list(range(30))
    assert "ran once" not in cell.stdout.lower()


@pytest.mark.timing
def test_another_threads_prints_on_a_terminals_fd_all_appear(ip, capfd):
    """In a terminal sys.stdout writes to fd 1, which the later runs point elsewhere: the thread's
    writes still reach it; the cell's own fd writes are dropped, and the report says how much."""
    ip.run_cell("import os, sys\nterminal = sys.stdout\nsys.stdout = sys.__stdout__\nTO = None")  # a terminal's stream
    try:
        ip.run_cell(TICKING + "def own():\n    os.write(1, b'cells-own\\n')\n    time.sleep(0.01)\n    return 1\n"
                    "%cudatime -b 1 y = own()\nticker.join()")  # a kept value: the cell repeats
    finally:
        ip.run_cell("sys.stdout.flush()\nsys.stdout = terminal")
    out = capfd.readouterr().out
    assert _ticks(out) == list(range(30))
    assert out.count("cells-own") == 1  # the cold run's
    assert "bytes to the process's stdout/stderr file descriptors" in out


@pytest.mark.timing
def test_another_threads_prints_all_appear_in_a_real_kernel(tmp_path):
    from nbformat.v4 import new_code_cell, new_notebook

    import browser

    cells = ["%load_ext ipython_cudatime\nTO = None", TICKING + "%cudatime -b 1 time.sleep(0.01)\nticker.join()"]
    nb = browser.execute_notebook(new_notebook(cells=[new_code_cell(cell) for cell in cells]), tmp_path)
    printed = "".join(out.text for out in nb.cells[1].outputs if out.output_type == "stream")
    assert _ticks(printed) == list(range(30))
