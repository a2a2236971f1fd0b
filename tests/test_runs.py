"""Cold run apart from warm runs; warm-up; -n; the budget rule; bad counts."""

import pytest
from conftest import run
from IPython.core.error import UsageError

from ipython_cudatime.measure.runner import MAX_RUNS, MIN_RUNS, Plan


def result_of(ip, line):
    return ip.run_line_magic("cudatime", "-o -q " + line)


# Durations below are powers of two: sums of them are exact, so run counts are too.


def test_cold_run_is_never_in_the_statistics(ip, fake_cpu):
    ip.user_ns["calls"] = 0
    # The first call does 1/16 s of work, every later one 1/1024 s.
    ip.run_cell("def f():\n    global calls\n    calls += 1\n    host.advance(1 / 16 if calls == 1 else 1 / 1024)")
    r = result_of(ip, "-n 5 f()")
    assert r.cold.wall == 1 / 16
    assert len(r.warm) == 5 and r.samples == [1 / 1024] * 5
    assert r.ratio == 64


def test_warmup_runs_are_kept_apart(ip):
    r = result_of(ip, "-n 4 -w 3 1 + 1")
    assert (len(r.warmup), len(r.warm)) == (3, 4)


def test_runs_zero_times_the_cold_run_only(ip):
    r = result_of(ip, "-n 0 1 + 1")
    assert r.warm == [] and r.warmup == []
    assert r.median is None and r.ratio is None
    assert r.cold.cpu_user is not None and r.cold.cpu_sys is not None


def test_warm_runs_fill_the_budget(ip, fake_cpu):
    """One warm-up run, then warm runs until the budget (counted from the end of the cold run) is spent."""
    r = result_of(ip, "-b 0.25 host.advance(1 / 64)")
    assert len(r.warmup) == 1
    assert len(r.warm) == 15  # 1 warm-up + 15 warm runs of 1/64 s fill 0.25 s


def test_a_cell_taking_no_time_stops_at_the_run_cap(ip, fake_cpu):
    r = result_of(ip, "pass")
    assert len(r.warm) == MAX_RUNS


def test_a_slow_cell_still_gets_min_runs_when_they_fit(ip, fake_cpu):
    r = result_of(ip, "-b 1 host.advance(0.375)")
    assert (len(r.warmup), len(r.warm)) == (1, MIN_RUNS)  # 0.375 s more per run: 3 runs end at 1.5 s


def test_slow_cell_is_repeated_once_only(ip, fake_cpu):
    r = result_of(ip, "-b 0.0625 host.advance(0.125)")
    assert (len(r.warmup), len(r.warm)) == (0, 1)


@pytest.mark.parametrize(
    "plan, done, spent, last, more",
    [
        (Plan(runs=3), 2, 99.0, 9.0, True),
        (Plan(runs=3), 3, 0.0, 0.0, False),
        (Plan(budget=1.0), 0, 5.0, 30.0, True),  # always at least one warm run
        (Plan(budget=1.0), 1, 30.0, 30.0, False),  # a 30 s cell is not repeated again
        (Plan(budget=1.0), 1, 1.2, 0.4, True),  # reaching MIN_RUNS costs less than a budget
        (Plan(budget=1.0), 2, 1.8, 0.9, True),
        (Plan(budget=1.0), 1, 1.8, 0.9, False),  # two more 0.9 s runs would exceed it
        (Plan(budget=1.0), 500, 0.5, 0.001, True),
        (Plan(budget=1.0), MAX_RUNS, 0.5, 1e-6, False),
    ],
)
def test_budget_rule(plan, done, spent, last, more):
    assert plan.wants_more(done, spent, last) is more


def test_warmup_default_skipped_when_cold_exceeds_budget():
    assert Plan(budget=1.0).warmup_count(0.5) == 1
    assert Plan(budget=1.0).warmup_count(30.0) == 0
    assert Plan(runs=0).warmup_count(0.1) == 0
    assert Plan(warmup=4).warmup_count(30.0) == 4


@pytest.mark.parametrize(
    "line, message",
    [
        ("-n -1 pass", "≥ 0"),
        ("-n 2.5 pass", "whole number"),
        ("-n x pass", "whole number"),
        ("-w -3 pass", "≥ 0"),
        ("-n 100001 pass", "-n expects at most 100,000 runs per call, got 100,001"),
        ("--runs=2000000 pass", "--runs expects at most 100,000 runs per call"),
        ("-w 100001 pass", "-w expects at most 100,000 runs per call"),
        ("-b 0 pass", "positive"),
        ("-b -1 pass", "positive"),
        ("-b nan pass", "positive"),
        ("--budget=abc pass", "seconds"),
        ("-v 1x pass", "variable name"),
        ("-x pass", "unknown option -x"),
        ("--frobnicate pass", "unknown option --frobnicate (put -- before a statement that starts with -)"),
        ("--run 5 pass", "unknown option --run; did you mean --runs?"),  # the closest declared spelling
        ("--rofline pass", "unknown option --rofline; did you mean --roofline?"),  # a feature's flag too
        ("-n", "needs a value"),
        ("-q", "nothing to time"),
        ("", "nothing to time"),
    ],
)
def test_bad_options_are_one_line_usage_errors(ip, line, message):
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("cudatime", line)
    assert message in str(info.value)
    assert "\n" not in str(info.value) and str(info.value).endswith("`%cudatime?` for help")


def test_empty_cell_is_a_usage_error(ip):
    with pytest.raises(UsageError, match="cell is empty"):
        ip.run_cell_magic("cudatime", "-n 1", "\n  \n")


def test_option_forms(ip):
    r = result_of(ip, "--runs=2 --warmup 0 -b1 --quiet 3")
    assert (len(r.warmup), len(r.warm)) == (0, 2)
    r = result_of(ip, "-n2 -- -1")
    assert len(r.warm) == 2


def test_statement_keeps_its_spacing_and_quotes(ip):
    cell = run(ip, "%cudatime -n 1 'a  b' + \"  c\"")
    assert cell.value == "a  b  c"
