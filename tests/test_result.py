"""The result object (-o, -v, -q) and the text report."""

import json
import statistics

import pytest
from conftest import run

from ipython_cudatime import report
from ipython_cudatime.notebook import display
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.cpu_context import noise
from ipython_cudatime.results.result import CudaTimeResult, Run, median_rank
from ipython_cudatime.results.schema import checked_line
from ipython_cudatime.units import format_seconds


def make(cold, warm, **kw):
    return CudaTimeResult(cold=Run(**cold), warm=[Run(host=w, wall=w) for w in warm], **kw)


def test_statistics_use_warm_runs_only():
    r = make(dict(host=5.0, wall=5.0), [1.0, 2.0, 3.0, 4.0, 100.0])
    assert r.clock == "wall"
    assert r.median == 3.0 and r.min == 1.0 and r.max == 100.0
    assert r.iqr == pytest.approx(2.0)
    assert r.mean == pytest.approx(22.0)
    assert r.stdev == pytest.approx(statistics.stdev([1, 2, 3, 4, 100]))
    assert r.ratio == pytest.approx(5.0 / 3.0)


def test_device_clock_preferred_when_every_warm_run_has_it():
    r = CudaTimeResult(cold=Run(0.001, 0.5), warm=[Run(0.001, 0.3, 0.29), Run(0.001, 0.31, 0.3)])
    assert r.clock == "device"
    assert r.median == pytest.approx(0.295)
    assert r.cold_time == 0.5  # the cold run had no device clock yet (context created in it)


def test_to_dict_is_json_ready():
    r = make(dict(host=0.001, wall=0.4, cpu_user=0.2, cpu_sys=0.1), [0.3, 0.3], device="cuda:0 X")
    data = json.loads(json.dumps(r.to_dict()))
    assert data["cold"] == {"host": 0.001, "wall": 0.4, "device": None, "cpu_user": 0.2, "cpu_sys": 0.1, "batch": 1}
    assert data["median"] == 0.3 and data["runs"] == 2 and data["clock"] == "wall"
    assert data["device"] == "cuda:0 X"


def test_reprs():
    r = make(dict(host=0.001, wall=0.4, cpu_user=0.2, cpu_sys=0.1), [0.3, 0.3])
    assert repr(r).startswith("<CudaTimeResult cold 400 ms, warm median 300 ms over 2 runs")
    assert "\n" not in repr(r)  # the Out value of a bare `%cudatime -o`: one line, the report is shown apart
    bundle = display.bundle(r, FEATURES)
    assert bundle["text/plain"] == report(r)
    assert "<table" in bundle["text/html"] and "300 ms" in bundle["text/html"]
    assert "data:image/svg+xml;base64," in bundle["text/html"]  # the run chart, inline


def test_text_report_starts_like_time_and_compares_cold_and_warm():
    r = make(dict(host=0.000999, wall=0.349, cpu_user=0.288, cpu_sys=0.191), [0.0047, 0.0048, 0.0049])
    lines = report(r).splitlines()
    assert lines[0] == "CPU times: user 288 ms, sys: 191 ms, total: 479 ms"
    assert lines[1] == "Wall time: 349 ms"
    text = report(r)
    assert "warm     : 4.8 ms median" in text and "over 3 runs" in text
    assert "cold/warm: 72.7×" in text
    assert "%time alone would have printed 999 µs–4.9 ms, the host's hand-over over the 4 timed runs (999 µs the first time)" in text
    assert "The cold run was 73× slower than a warm run" in text


def test_noisy_warning_only_when_the_median_is_in_doubt():
    quiet = make(dict(host=0.01, wall=0.01), [0.010, 0.0101, 0.0102, 0.0101])
    noisy = make(dict(host=0.01, wall=0.01), [0.010, 0.020, 0.010, 0.030, 0.015])  # min–max stands in below 6
    assert "noisy" not in report(quiet)
    [warning] = [line for line in report(noisy).splitlines() if line.startswith("Warning:")]
    assert warning == "Warning: noisy (median ±100%, 95% CI): cause unknown · fix: more runs (-n/-b)"


def test_runs_that_vary_around_a_median_they_pin_down_get_a_quiet_note_not_a_warning():
    """1,000 runs spread ±15% (seeded uniform draws): the IQR is 15% of the median, but the median is
    known to about ±1%: no warning, one row in the details saying both."""
    import numpy

    runs = 1e-3 * numpy.random.default_rng(2).uniform(0.85, 1.15, 1000)
    r = make(dict(host=1e-3, wall=1e-3), list(runs))
    assert "Warning" not in report(r)
    html = display.bundle(r, FEATURES)["text/html"]
    assert "the middle half of the runs spans 15% of the median; the median is known to ±" in html
    few = make(dict(host=1e-3, wall=1e-3), list(runs[:10]))  # the same spread, 10 runs: ±14%, in doubt
    assert "Warning: noisy (median ±14%" in report(few)
    twenty = make(dict(host=1e-3, wall=1e-3), list(runs[:20]))  # 20 runs: ±7%, the median stands
    assert "Warning" not in report(twenty)


def test_runs_in_two_separate_groups_are_noisy_even_with_a_tight_median():
    """70 runs at 1 ms and 30 at 2 ms: the median (1 ms) is pinned down, but it describes only one of
    the two groups the cell's runs fall into, and the report says so."""
    r = make(dict(host=1e-3, wall=1e-3), [1e-3] * 70 + [2e-3] * 30)
    assert r.median_ci == (1e-3, 1e-3)
    [warning] = [line for line in report(r).splitlines() if line.startswith("Warning:")]
    assert warning.startswith("Warning: the runs fall into two groups (70 around 1 ms, 30 around 2 ms): ")
    assert "Warning" not in report(make(dict(host=1e-3, wall=1e-3), [1e-3] * 90 + [2e-3] * 10))  # a tail


def test_two_groups_that_leave_the_answer_standing_get_no_warning():
    """22 runs at 1 ms and 8 at 1.15 ms: two groups, but the median's interval holds 1 ms alone and
    the mean (1.04 ms) lies within 10% of the median: the runs vary, the answer is not in doubt. The
    details say how they vary."""
    r = make(dict(host=1e-3, wall=1e-3), [1e-3, 1.15e-3] * 8 + [1e-3] * 14)
    assert r.median_ci == (1e-3, 1e-3) and noise.modes(r) is not None
    assert "Warning" not in report(r)
    assert "the middle half of the runs spans 11% of the median" in display.bundle(r, FEATURES)["text/html"]


def test_no_async_sentence_when_host_matches_wall():
    r = make(dict(host=0.1, wall=0.1001), [0.1, 0.1])
    assert "%time alone" not in report(r) and "one-time setup" not in report(r)


@pytest.mark.parametrize(
    "seconds, text",
    [(0.349, "349 ms"), (0.000999, "999 µs"), (1.5e-8, "15 ns"), (2.0, "2 s"), (65.0, "1min 5s"), (0.0, "0 ns"), (0.12345, "123 ms"),
     (0.0009999, "1 ms"), (999.9e-9, "1 µs")],  # rounded up to the next unit, never "1e+03 µs"
)
def test_units_like_time(seconds, text):
    assert format_seconds(seconds) == text


def test_dash_o_returns_result_and_dash_v_stores_it(ip):
    cell = run(ip, "res = %cudatime -o -n 3 1 + 1")
    res = ip.user_ns["res"]
    assert isinstance(res, CudaTimeResult) and len(res.warm) == 3
    cell = run(ip, "%cudatime -v stored -n 2 'value'")
    assert cell.value == "value"
    assert isinstance(ip.user_ns["stored"], CudaTimeResult)
    assert any(text.startswith("CPU times") for text in cell.displayed)


def test_dash_q_shows_nothing(ip):
    cell = run(ip, "%cudatime -q -n 2 -v r 1 + 1")
    assert cell.displayed == [] and cell.stdout.strip().endswith("2")
    assert isinstance(ip.user_ns["r"], CudaTimeResult)


def test_terminal_shows_the_text_report_only(ip):
    cell = run(ip, "%cudatime -n 2 1 + 1")
    (data,) = [out.data for out in cell.outputs]
    assert list(data) == ["text/plain"] and data["text/plain"].startswith("CPU times:")


def test_microsecond_jitter_is_not_called_one_time_setup():
    r = make(dict(host=3e-6, wall=3e-6), [6e-7, 7e-7])  # 5× slower, but by 2 µs only
    assert r.ratio > 3 and "one-time setup" not in report(r)


def test_zero_warm_median_has_no_ratio_and_still_renders():
    r = CudaTimeResult(cold=Run(0.001, 0.001, 0.0), warm=[Run(0.0, 0.0, 0.0), Run(0.0, 0.0, 0.0)])
    assert r.ratio is None
    assert "cold/warm: n/a" in report(r) and "n/a" in display.bundle(r, FEATURES)["text/html"]


def test_device_clock_is_not_trusted_when_it_misses_most_of_the_wall_time():
    """Work on a side stream: the events on the current stream finish early; wall does not."""
    side = CudaTimeResult(cold=Run(0.001, 0.5, 0.01), warm=[Run(0.001, 0.3, 0.002), Run(0.001, 0.31, 0.002)])
    assert side.clock == "wall" and side.median == pytest.approx(0.305)


def test_iqr_is_a_width_and_few_runs_show_min_and_max_instead():
    few = make(dict(host=0.01, wall=0.01), [0.004, 0.005, 0.006])
    [line] = [line for line in report(few).splitlines() if line.startswith("warm     :")]
    assert line == ("warm     : 5 ms median (too few runs for a 95% CI, which needs 6) over 3 runs "
                    "(wall clock; min 4 ms, max 6 ms)")
    html = display.bundle(few, FEATURES)["text/html"]
    assert ">IQR<" not in html and ">min / max<" in html
    many = make(dict(host=0.01, wall=0.01), [0.001 * (40 + i) for i in range(12)])
    [line] = [line for line in report(many).splitlines() if line.startswith("warm     :")]
    assert line.startswith(f"warm     : 45.5 ms median (95% CI 42–49 ms), IQR {format_seconds(many.iqr)}, over 12 runs "
                           "(wall clock; "
                           "min 40 ms, max 51 ms, mean 45.5 ms ± ")
    assert "±" not in line.split("mean")[0]  # never "median ± IQR": that reads as a half-width
    assert ">IQR<" in display.bundle(many, FEATURES)["text/html"]


def test_the_medians_interval_comes_from_order_statistics_and_needs_six_runs():
    """The textbook ranks: [x(1), x(6)] of 6 (96.9%), [x(2), x(9)] of 10, [x(40), x(61)] of 100;
    below 6 none exists, and the report says so instead of making one up."""
    def interval(count):
        return make(dict(host=1.0, wall=1.0), [float(i) for i in range(1, count + 1)]).median_ci

    assert interval(5) is None and interval(6) == (1.0, 6.0) and interval(10) == (2.0, 9.0)
    assert interval(100) == (40.0, 61.0)
    assert median_rank(1000) == 469 and median_rank(1001) == 469  # the normal approximation beyond 1,000
    five = make(dict(host=1.0, wall=1.0), [0.004, 0.005, 0.006, 0.007, 0.008])
    assert "too few runs for a 95% CI, which needs 6" in report(five)
    assert "too few runs for a 95% CI" in display.bundle(five, FEATURES)["text/html"].split("</div>")[0]  # the headline


def test_the_medians_interval_covers_the_true_median_about_95_percent_of_the_time():
    """Seeded draws from known skewed distributions: the interval holds the population's median in
    95-97% of 2,000 results (order statistics guarantee at least 95%, a little more at small n)."""
    import numpy

    rng = numpy.random.default_rng(31)
    for count in (6, 25, 200):
        draws = rng.lognormal(mean=0.0, sigma=0.5, size=(2000, count)) * 1e-3  # true median 1 ms
        hits = 0
        for row in draws:
            low, high = make(dict(host=1e-3, wall=1e-3), list(row)).median_ci
            hits += low <= 1e-3 <= high
        assert 0.94 <= hits / 2000 <= 0.99, (count, hits)


def test_a_batched_sample_is_one_observation_of_the_interval():
    """Six samples of 1,000 runs each have the interval of six observations (min to max), not of 6,000."""
    warm = [Run(host=w, wall=w, batch=1000) for w in (1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6)]
    r = CudaTimeResult(cold=Run(1e-5, 1e-5), warm=warm)
    assert r.median_ci == (1e-6, 6e-6)


def test_the_interval_is_saved_and_recomputed_and_an_older_line_without_it_loads():
    r = make(dict(host=0.01, wall=0.01), [0.001 * (40 + i) for i in range(12)])
    data = json.loads(json.dumps(r.to_dict()))
    assert data["median_ci"] == [0.042, 0.049]
    del data["median_ci"]  # a line saved before the field existed
    assert CudaTimeResult.from_dict(checked_line(data), FEATURES).median_ci == (0.042, 0.049)


def test_noise_warning_needs_a_spread_above_the_timers_own_jitter():
    tiny = make(dict(host=1e-6, wall=1e-6), [5e-7, 5e-7, 8e-7, 8e-7, 5e-7])  # IQR 60%, but 0.3 µs
    assert "noisy" not in report(tiny)
    slow = make(dict(host=1e-3, wall=1e-3), [5e-4, 5e-4, 8e-4, 8e-4, 5e-4])  # IQR 60%, 300 µs
    assert "noisy" in report(slow)


def test_a_result_is_built_once_and_never_changes():
    """Frozen: nothing is attached after the run; a changed copy (``dataclasses.replace``) recomputes
    its statistics, and a copy or a pickle is equal to the original, records and all."""
    import copy
    import dataclasses
    import pickle

    r = make({"host": 0.001, "wall": 0.5}, [0.1, 0.2, 0.3], records={"profile": None})
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.notes = ["attached"]
    faster = dataclasses.replace(r, warm=[Run(0.01, 0.01)] * 3)
    assert (r.median, faster.median) == (0.2, 0.01)
    assert pickle.loads(pickle.dumps(r)) == r == copy.deepcopy(r)
    assert r.profile is None and r.records["profile"] is None  # a feature that was off: None, by name
    with pytest.raises(AttributeError):
        r.no_such_feature
