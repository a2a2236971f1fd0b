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
    """The fastest of a few batches of empty cells, per cell, in this thread's CPU time: what the
    cell costs the kernel, which other processes on a busy machine do not add to (wall time would),
    while a hook left behind by every call would (its work runs in this thread)."""
    fastest = float("inf")
    for _ in range(batches):
        start = time.thread_time()
        for _ in range(cells):
            ip.run_cell("")
        fastest = min(fastest, (time.thread_time() - start) / cells)
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


OURS = ("magics.py", "compare.py", "display.py", "store.py")


def test_a_point_with_an_unprintable_error_keeps_every_other_point(ip, tmp_path):
    path = tmp_path / "sweep.jsonl"
    ip.run_cell("class Bad(Exception):\n    def __str__(self):\n        raise RuntimeError('no words')\n"
                "def at(v):\n    if v == 2:\n        raise Bad()\n    return v")
    cell = run(ip, f"%%cudatime -n 1 -w 0 -l s --save {path} -v sweep --sweep v=1,2,3\nat(v)")
    sweep = ip.user_ns["sweep"]
    assert [point.error for point in sweep.points] == [None, "<unprintable Bad>", None]
    assert "<unprintable Bad>" in "\n".join(cell.displayed) and "RuntimeError" not in cell.stdout + cell.stderr
    assert len(path.read_text().splitlines()) == 3
    recorded = ip.magics_manager.registry["CudaTimeMagics"].history.points  # the shell's: other tests' too
    assert len([point for point in recorded if point.label == "s"]) == 2  # the two timed points


def test_each_sweep_point_is_saved_as_it_finishes(ip, tmp_path):
    path = tmp_path / "sweep.jsonl"
    ip.run_cell(f"import os\nseen = []\ndef lines():\n    return len(open({str(path)!r}).read().splitlines()) "
                f"if os.path.exists({str(path)!r}) else 0")
    run(ip, f"%%cudatime -n 1 -w 0 --save {path} --sweep v=1,2,3\nif not seen or seen[-1][0] != v:\n"
            "    seen.append((v, lines()))")
    assert ip.user_ns["seen"] == [(1, 0), (2, 1), (3, 2)]


def test_an_interrupt_while_a_sweeps_report_is_assembled_still_shows_and_saves_it(ip, tmp_path):
    import signal

    path = tmp_path / "sweep.jsonl"
    ip.run_cell("import os, signal, numpy\nclass Stop:\n    def __array__(self, *args, **kwargs):\n"
                "        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as a user presses it: --check reads us\n"
                "        return numpy.zeros(2)")
    cell = run(ip, f"%%cudatime -n 1 -w 0 --check --save {path} --sweep v=1,2\nStop()")
    assert isinstance(cell.error, KeyboardInterrupt)
    assert not any(name in cell.stdout + cell.stderr for name in OURS)
    assert sum("v=2" in text for text in cell.displayed) == 1
    assert len(path.read_text().splitlines()) == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.timing
def test_an_interrupt_during_compare_is_one_line_without_our_frames(ip, tmp_path):
    import os
    import signal
    import threading

    path = tmp_path / "many.jsonl"
    run(ip, f"%cudatime -q -n 1 -w 0 --save {path} x = 1")
    path.write_text(path.read_text() * 3000)  # loading takes a while: Ctrl-C lands while it loads
    timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    cell = run(ip, f"%cudatime_compare --load {path}")
    timer.join()
    assert isinstance(cell.error, KeyboardInterrupt)
    assert not any(name in cell.stdout + cell.stderr for name in OURS)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def usage_error(ip, line):
    """The one-line message a bad command line gets in the shell (IPython prints UsageError's alone)."""
    from IPython.core.error import UsageError

    cell = run(ip, line)
    assert isinstance(cell.error, UsageError), cell.stdout + cell.stderr
    assert not any(name in cell.stdout + cell.stderr for name in OURS)
    return str(cell.error)


def test_threads_are_capped_at_a_few_per_usable_core(ip):
    from ipython_cudatime.measure.machine import usable_cores

    message = usage_error(ip, "%cudatime --threads 100000 pass")
    assert f"at most {4 * usable_cores():,} threads" in message and "per core" in message
    assert ip.user_ns.get("_cudatime_never_ran") is None


@pytest.mark.parametrize("points", [24, 50])
def test_a_grid_too_large_for_memory_is_refused_whatever_the_flag(ip, points):
    sweeps = " ".join(f"--sweep a{i}=0,1" for i in range(points))
    for flag in ("", "--yes-large-grid "):
        message = usage_error(ip, f"%cudatime {flag}{sweeps} pass")
        assert f"{2 ** points:,} points" in message and "--yes-large-grid" not in message  # it would not help
    assert "--yes-large-grid" in usage_error(ip, "%cudatime --sweep a=0,1,2,3,4,5,6,7,8,9,10 "
                                                 "--sweep b=0,1,2,3,4,5,6,7,8,9 pass")  # where it would


@pytest.mark.parametrize("line", ["%cudatime --save {path}\\0x pass", "%cudatime_compare --load {path}\\0x",
                                  "%cudatime --trace {path}\\0x pass"])
def test_a_nul_byte_in_a_path_is_a_one_line_usage_error(ip, tmp_path, line):
    ip.user_ns["line"] = line.format(path=tmp_path / "f")
    ip.run_cell("line = line.replace('\\\\0', chr(0))")
    message = usage_error(ip, "get_ipython().run_line_magic(*line[1:].split(' ', 1))")
    assert "NUL" in message


def _saved(ip, tmp_path, name="kept.jsonl"):
    path = tmp_path / name
    run(ip, f"%cudatime -q -n 2 -w 0 --save {path} x = 1")
    return path


def test_load_refuses_what_is_not_a_regular_file_at_once(tmp_path):
    """In a fresh process with a time limit: reading a FIFO or /dev/zero waited for ever."""
    import os

    from conftest import in_fresh_shell

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = ("from IPython.utils.capture import capture_output\nrefused = []\n"
            f"for path in ('/dev/zero', {str(fifo)!r}):\n"
            "    with capture_output() as out:\n"
            "        done = ip.run_cell(f'%cudatime_compare --load {path}')\n"
            "    refused.append('not a regular file' in out.stderr and 'nothing loaded' in str(done.error_in_exec))\n"
            "print(refused)")
    assert in_fresh_shell(code, timeout=60) == "[True, True]"


def test_a_leading_bom_is_read(ip, tmp_path):
    path = _saved(ip, tmp_path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    cell = run(ip, f"%cudatime_compare --load {path}")
    assert cell.error is None and cell.stderr == ""


def test_load_takes_one_path_as_well_as_a_list(tmp_path, ip):
    import ipython_cudatime

    path = _saved(ip, tmp_path)
    for paths in (str(path), path, [path]):
        results, problems = ipython_cudatime.load(paths)
        assert len(results.points) == 1 and problems == []


@pytest.mark.parametrize("field", ["device", "synchronized", "stopped", "notes", "extra_runs"])
def test_a_newline_in_a_loaded_field_forges_no_line_of_the_single_result_report(ip, tmp_path, field):
    import json

    path = _saved(ip, tmp_path)
    data = json.loads(path.read_text())
    forged = "x\nFORGED: line"
    data[field] = [forged] if isinstance(data[field], list) else forged
    path.write_text(json.dumps(data) + "\n")
    ip.user_ns["path"] = str(path)
    cell = run(ip, "import ipython_cudatime\nresults, problems = ipython_cudatime.load(path)\n"
                   "assert problems == [], problems\nresults.points[0].result")
    shown = cell.displayed + [cell.stdout]
    assert cell.error is None and "FORGED" in "".join(shown)
    assert not any(line.startswith("FORGED") for text in shown for line in text.splitlines())


def test_a_save_that_cannot_complete_leaves_the_file_as_it_was(ip, tmp_path):
    import resource
    import signal

    path = _saved(ip, tmp_path)
    before = path.read_bytes()
    limits, handler = resource.getrlimit(resource.RLIMIT_FSIZE), signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 200, limits[1]))  # the disk fills up mid-line
    try:
        cell = run(ip, f"%cudatime -n 20 -w 0 --save {path} x = 1")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert "not saved" in cell.stderr and "CPU times" in "".join(cell.displayed)
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", ["print", "len", "__builtins__", "get_ipython", "Out", "_i2", "_"])
def test_v_refuses_names_that_are_not_the_users(ip, name):
    ip.run_cell("import builtins\nsaved = (builtins.print, builtins.len)")
    message = usage_error(ip, f"%cudatime -q -v {name} x = 1")
    assert name in message and "of your own" in message
    assert run(ip, "print(len('ok'))").stdout == "2\n"


def test_sweep_refuses_ipythons_names_too(ip):
    assert "of your own" in usage_error(ip, "%cudatime --sweep __builtins__=1,2 pass")
    assert "of your own" in usage_error(ip, "%cudatime --sweep In=1,2 pass")


def test_a_megabyte_error_message_is_cut_in_the_table_and_kept_in_the_result(ip):
    ip.run_cell("def at(v):\n    if v == 2:\n        raise ValueError('m' * 1_000_000)\n    return v")
    cell = run(ip, "%%cudatime -n 1 -w 0 -v sweep --sweep v=1,2\nat(v)")
    shown = "\n".join(cell.displayed) + cell.stdout
    assert len(shown) < 20_000 and "1,000,012 characters in all" in shown
    assert ip.user_ns["sweep"].points[1].error == "ValueError: " + "m" * 1_000_000


def test_a_swept_value_nested_past_the_limit_is_a_bad_line_not_a_crash(ip, tmp_path):
    import json

    import ipython_cudatime

    path = tmp_path / "deep.jsonl"
    run(ip, f"%cudatime -q -n 1 -w 0 --save {path} x = 1")
    data = json.loads(path.read_text())
    deep = 1
    for _ in range(40):
        deep = [deep]
    data["task"]["params"] = {"x": deep}
    path.write_text(path.read_text() + json.dumps(data) + "\n")
    results, problems = ipython_cudatime.load(path)
    assert len(results.points) == 1 and len(problems) == 1 and "nested more than 32 levels deep" in problems[0]
