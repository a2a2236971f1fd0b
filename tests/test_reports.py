"""Whole reports as the terminal shows them, on the fake clock and device (exact, no sleeping),
compared with the stored text in ``tests/expected/``. ``make expected`` rewrites that text
from what the code prints now; review the diff it leaves."""

import platform

from conftest import run
from expected_text import assert_expected

ONCE = ("seen = []\ndef once(first, later):\n    host.advance(later if seen else first)\n    seen.append(1)\n"
        "    return len(seen)")  # a value: not a call made for its effect, which would run once


def shown(ip, source):
    """The text report(s) a cell displays, joined; the CPU's architecture is the one thing
    that differs from machine to machine."""
    cell = run(ip, source)
    return "\n".join(cell.displayed).replace(f"cpu {platform.machine()}", "cpu MACHINE")


def test_a_slow_cold_run_with_no_cause_is_said_plainly(ip, fake_cpu):
    ip.run_cell(ONCE)
    report = shown(ip, "%cudatime -n 3 once(1 / 16, 1 / 1024)")
    assert "none of the checks (device context, memory pool, cuBLAS, compilation) explains it" in report
    assert_expected(report, "cold_run_unexplained")


def test_warm_runs_that_disagree_are_called_noisy(ip, fake_gpu):
    ip.run_cell("sizes = iter([1, 1, 2, 1, 4, 1, 1, 8, 1, 1, 1, 1, 1])")
    report = shown(ip, "%cudatime -n 12 -w 0 gpu.launch(next(sizes) / 256)")
    assert_expected(report, "noisy_warm_runs")


def test_runs_stopped_by_an_error_are_reported(ip, fake_gpu):
    ip.run_cell("calls = []\ndef flaky():\n    calls.append(1)\n    gpu.launch(1 / 128)\n"
                "    if len(calls) == 4:\n        raise ValueError('fourth call')")
    cell = run(ip, "%cudatime -n 5 --no-raise-error flaky()")
    assert cell.error is None  # --no-raise-error: the traceback is shown, the cell goes on
    assert_expected(cell.displayed[0], "stopped_by_an_error")


def test_sweep_report(ip, fake_gpu):
    report = shown(ip, "%cudatime -n 2 --sweep n=1,2,4 gpu.launch(n / 64)")
    assert_expected(report, "sweep")


def test_comparison_report(ip, fake_gpu):
    run(ip, "%cudatime -q -n 3 -l loop host.advance(1 / 256); gpu.launch(1 / 64)")
    run(ip, "%cudatime -q -n 3 -l fused gpu.launch(1 / 256)")
    assert_expected(shown(ip, "%cudatime_compare loop fused"), "comparison")


def test_cpu_only_report(ip, fake_cpu):
    assert_expected(shown(ip, "%cudatime -n 3 host.advance(1 / 512)"), "cpu_only")


def test_chart_data_is_every_run_in_order(ip, fake_gpu):
    """The bars the chart draws: (kind, host, total) per run, total on the statistics clock."""
    from ipython_cudatime.render.chart import _bars

    r = ip.run_line_magic("cudatime", "-o -q -n 2 -w 1 host.advance(1 / 1024); gpu.launch(1 / 64)")
    run = (1 / 1024, 1 / 1024 + 1 / 64)
    assert list(_bars(r)) == [("cold", *run), ("warm-up", *run), ("warm", *run), ("warm", *run)]
