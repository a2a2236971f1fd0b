"""Cells moved over from %timeit: its options with its meanings, and its binding rules on request.

A real IPython shell (``ip``), in IPython 9 and, in the Colab-like environment, 7.34.
"""

import pytest
from conftest import run
from IPython.core.error import UsageError


def timed(ip, line):
    """``%cudatime -o -q LINE``'s result, the cell's error raised."""
    cell = run(ip, f"r = %cudatime -o -q {line}")
    if cell.error is not None:
        raise cell.error
    return ip.user_ns["r"]


def test_r_and_n_make_r_samples_of_n_runs_as_timeit_does(ip):
    r = timed(ip, "-r 3 -n 10 sum(range(100))")
    assert (r.runs, r.batch) == (3, 10)
    assert all(run.batch == 10 for run in r.warm)
    assert "3 warm samples × 10 runs" in r.counts_text()
    assert "each sample: 10 runs" in r.batch_text()


def test_r_alone_sizes_each_sample_as_timeit_does(ip):
    r = timed(ip, "-r 4 pass")
    assert r.runs == 4
    assert r.batch > 1  # a `pass` is short next to the harness: its samples are loops of many runs


def test_r_and_n_on_a_cell_that_cannot_be_batched_still_loop_n_runs(ip):
    """A cell that reads what it binds is not compiled into a loop; its samples are plain loops."""
    ip.user_ns["x"] = 0
    r = timed(ip, "-r 2 -n 5 -w 0 x = x + 1")
    assert (r.runs, r.batch) == (2, 5)
    assert r.total_runs == 11
    assert ip.user_ns["x"] == 1  # the names hold what the cold run bound


@pytest.mark.parametrize("line", ["-p 3 -n 5 sum(range(9))", "-p3 -n 5 sum(range(9))"])
def test_timeits_precision_is_a_one_line_usage_error_not_a_statement(ip, line):
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("cudatime", line)
    message = str(caught.value)
    assert "\n" not in message
    assert "-p is --profile" in message and "%timeit's -p P" in message


@pytest.mark.parametrize("line, error", [("-r 0 pass", "-r expects a number of samples"),
                                         ("-n 0 -r 3 pass", "cannot be combined with -r"),
                                         ("-r x pass", "-r expects a whole number")])
def test_bad_samples_are_one_line_usage_errors(ip, line, error):
    with pytest.raises(UsageError, match=error):
        ip.run_line_magic("cudatime", line)


def test_o_q_and_v_mean_what_they_mean_to_timeit(ip):
    cell = run(ip, "r = %cudatime -o -q -v kept -n 3 6 * 7")
    assert cell.error is None and cell.displayed == [] and "42" not in cell.stdout
    assert ip.user_ns["r"] is ip.user_ns["kept"]
    assert ip.user_ns["r"].runs == 3


def test_a_timed_assignment_over_an_existing_name_says_it_rebound_it(ip):
    ip.run_cell("import numpy as np\nx = np.arange(100.0)\ncounts = 'before'")
    r = timed(ip, "-n 3 counts, edges = np.histogram(x, 5)")
    assert list(ip.user_ns["counts"]) == [20] * 5  # as %time leaves it
    [note] = [note for note in r.notes if "`counts`" in note]
    assert "%timeit would have left it unchanged" in note and "--timeit" in note
    assert "`edges`" not in note  # a name that held nothing before is no surprise


def test_timeit_option_binds_nothing_and_shows_no_value(ip):
    ip.run_cell("import numpy as np\nx = np.arange(100.0)\ncounts = 'before'")
    r = timed(ip, "--timeit -n 3 counts, edges = np.histogram(x, 5)")
    assert ip.user_ns["counts"] == "before" and "edges" not in ip.user_ns
    assert r.runs == 3 and not [note for note in r.notes if "`counts`" in note]
    cell = run(ip, "%cudatime --timeit -n 2 list(range(7840))")
    assert cell.error is None and cell.value is None and "7839" not in cell.stdout
    assert any(text.startswith("CPU times:") for text in cell.displayed)  # the report, not the value


@pytest.mark.parametrize("flag, clock, median", [("", "device", 0.011), ("-t", "wall", 0.011), ("-c", "cpu", 0.001)])
def test_t_and_c_choose_the_clock_of_the_statistics(ip, fake_gpu, flag, clock, median):
    """1 ms of host work, then 10 ms queued on the device (the fake clock: exact): device and synchronized
    wall 11 ms, the process's CPU 1 ms; -t and -c pick the clock as %timeit's do."""
    r = timed(ip, f"{flag} -n 4 host.advance(0.001); gpu.launch(0.010)")
    assert r.clock == clock
    assert r.median == pytest.approx(median, rel=0.05)
    assert all(run.cpu == pytest.approx(0.001, rel=0.05) for run in r.warm) if flag == "-c" else True
    why = r.clock_why()
    assert (why is not None and f"as {flag} asked" in why) if flag else why is None


def test_an_asked_clock_survives_a_saved_line_and_a_bad_one_is_refused(ip, fake_gpu):
    import json

    from ipython_cudatime.results.result import CudaTimeResult
    from ipython_cudatime.results.schema import checked_line

    r = timed(ip, "-c -n 3 host.advance(0.001); gpu.launch(0.010)")
    data = json.loads(json.dumps(r.to_dict()))
    again = CudaTimeResult.from_dict(data)
    assert (again.clock, again.median) == ("cpu", r.median)
    data["task"]["clock"] = "device"  # the rule's own choice is never stored as asked
    with pytest.raises(ValueError, match="clock"):
        checked_line(data)


def test_t_and_c_together_are_a_one_line_usage_error(ip):
    with pytest.raises(UsageError, match="-t and -c") as caught:
        ip.run_line_magic("cudatime", "-t -c pass")
    assert "\n" not in str(caught.value)
