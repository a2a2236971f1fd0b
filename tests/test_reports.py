"""Whole reports as the terminal shows them, on the fake clock and device (exact, no sleeping),
compared with the stored text in ``tests/expected/``. ``make expected`` rewrites that text
from what the code prints now; review the diff it leaves."""

import platform
import re
from html import unescape

from conftest import run
from expected_text import assert_expected
from report_parts import table

ONCE = ("def once(first, later):\n    host.advance(later if host.tick() else first)\n"
        "    return host.ticks")  # a value: not a call made for its effect


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
    ip.run_cell("sizes = [1, 1, 2, 1, 4, 1, 1, 8, 1, 1, 1, 1, 1]")
    report = shown(ip, "%cudatime -n 12 -w 0 gpu.launch(sizes[host.tick()] / 256)")
    assert_expected(report, "noisy_warm_runs")


def test_runs_stopped_by_an_error_are_reported(ip, fake_gpu):
    ip.run_cell("def flaky():\n    gpu.launch(1 / 128)\n"
                "    if host.tick() == 3:\n        raise ValueError('fourth call')")
    cell = run(ip, "%cudatime -n 5 --no-raise-error flaky()")
    assert cell.error is None  # --no-raise-error: the traceback is shown, the cell goes on
    assert_expected(cell.displayed[0], "stopped_by_an_error")


def test_sweep_report(ip, fake_gpu):
    report = shown(ip, "%cudatime -n 2 --sweep n=1,2,4 gpu.launch(n / 64)")
    assert_expected(report, "sweep")


GRID = ("%cudatime -n 6 --sweep n=256,1024,4096,16384 --sweep lib='numpy','torch' "  # 6 runs: an interval
        "gpu.launch(n / 2**20 * speed[lib])")


def test_a_two_name_sweep_is_a_grid_in_one_unit_with_the_fastest_marked(ip, fake_gpu):
    ip.run_cell("speed = {'numpy': 1.0, 'torch': 0.25}")
    report = shown(ip, GRID)
    title, rest = report.split("\n", 1)
    assert title == "warm median in µs, n down, lib across"
    assert table(rest) == (["n", "numpy", "torch"], [["256", "244", "61 *"], ["1024", "977", "244 *"],
                                                     ["4096", "3,906", "977 *"], ["16384", "15,625", "3,906 *"]])
    assert "n=16384, lib='numpy'  15.6 ms" in report  # every point, below the grid
    assert_expected(report, "sweep_grid")


def test_a_grid_in_html_is_a_table_of_rows_and_columns(ip, fake_gpu, seams):
    import fake_device

    clock = ip.user_ns["host"]
    seams(registry=(("fake_device", ip.user_ns["gpu"]),), probes=(), clock=clock,
          machine=fake_device.FakeMachine(clock), notebook=True)
    ip.run_cell("speed = {'numpy': 1.0, 'torch': 0.25}")
    [html] = [out.data["text/html"] for out in run(ip, GRID).outputs]
    [grid] = re.findall(r"<table class='cudatime-grid'.*?</table>", html)
    cells = [[unescape(cell).replace("\xa0", " ") for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
             for row in re.findall(r"<tr>(.*?)</tr>", grid)]
    assert cells[0] == ["n", "numpy", "torch"] and cells[1] == ["256", "244", "61 *"] and len(cells) == 5
    assert "<summary" in html.split("cudatime-grid")[1]  # every point's row, a click away


def test_comparison_report(ip, fake_gpu):
    run(ip, "%cudatime -q -n 6 -l loop host.advance(1 / 256); gpu.launch(1 / 64)")
    run(ip, "%cudatime -q -n 6 -l fused gpu.launch(1 / 256)")
    assert_expected(shown(ip, "%cudatime_compare loop fused"), "comparison")


def test_cpu_only_report(ip, fake_cpu):
    assert_expected(shown(ip, "%cudatime -n 3 host.advance(1 / 512)"), "cpu_only")


def test_chart_data_is_every_run_in_order(ip, fake_gpu):
    """The bars the chart draws: (kind, host, total) per run, total on the statistics clock."""
    from ipython_cudatime.render.chart import _bars

    r = ip.run_line_magic("cudatime", "-o -q -n 2 -w 1 host.advance(1 / 1024); gpu.launch(1 / 64)")
    run = (1 / 1024, 1 / 1024 + 1 / 64)
    assert list(_bars(r)) == [("cold", *run), ("warm-up", *run), ("warm", *run), ("warm", *run)]


def test_sweep_with_few_runs_shows_min_max_and_one_run_says_so(ip, fake_gpu):
    """Below 10 warm runs a table shows min–max, never "IQR 0 ns"; one run has no spread."""
    report = shown(ip, "%cudatime -b 0.1 --sweep n=1,16,64 gpu.launch(n / 512)")
    rows = report.splitlines()
    assert "IQR" in rows[1] and "min–max" in rows[2] and "one run" in rows[3]
    assert "IQR" not in rows[2] + rows[3]
    assert_expected(report, "sweep_few_runs")


def test_overlapping_results_compare_as_inconclusive(ip, fake_gpu):
    ip.run_cell("a = iter([1, 3, 1, 3, 1, 3] * 3)\nb = iter([2, 2, 2, 2, 3] * 3)")
    run(ip, "%cudatime -q -n 8 -l first gpu.launch(next(a) / 256)")
    run(ip, "%cudatime -q -n 8 -l second gpu.launch(next(b) / 256)")
    report = shown(ip, "%cudatime_compare first second")
    assert "second against first: inconclusive: no difference larger than " in report
    assert_expected(report, "comparison_inconclusive")


def test_noise_from_oversubscription_is_named_with_its_numbers(ip, fake_cpu):
    ip.run_cell("cpu.pools = {'torch': 2}\ncpu.load_average, cpu.ready = 2.6, 3\n"
                "stalls = [0, 8, 0, 1, 0, 8, 0, 1, 8, 0, 1, 0, 0]")
    report = shown(ip, "%cudatime -n 12 -w 0 cpu.stall(stalls[host.tick()] / 1024, tensor); host.advance(1 / 1024)")
    assert "Likely cause: oversubscription. torch runs 2 threads" in report
    assert_expected(report, "noise_oversubscribed")


def test_a_flag_and_its_value_never_break_across_lines_in_html(ip, fake_cpu, seams):
    """A browser may break a line after a hyphen: "--threads 1" would read "--" / "threads 1"."""
    import fake_device

    clock = ip.user_ns["host"]
    seams(registry=(("fake_device", fake_device.NoDevice),), probes=(), clock=clock, machine=ip.user_ns["cpu"],
          notebook=True)
    ip.run_cell("cpu.pools = {'torch': 2}\ncpu.load_average, cpu.ready = 2.6, 3\n"
                "stalls = [0, 8, 0, 1, 0, 8, 0, 1, 8, 0, 1, 0, 0]")
    cell = run(ip, "%cudatime -n 12 -w 0 cpu.stall(stalls[host.tick()] / 1024, tensor); host.advance(1 / 1024)")
    [html] = [out.data["text/html"] for out in cell.outputs]  # torch's work: its pool is the cause, --threads 1 the fix
    assert "<span style='white-space:nowrap'>--threads 1</span>" in html
