"""Live progress: a widget view in a real kernel replaced by the static report, a stderr line
on a TTY, nothing elsewhere, and never inside a timed run."""

import io
import re
import sys
import threading
import time

import pytest
from conftest import run

from ipython_cudatime.notebook import display as progress

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class TTY(io.StringIO):
    """A stand-in for a terminal's stderr: text that says it is a TTY."""

    def isatty(self):
        return True


def iopub_of(code, timeout=120):
    """Run ``code`` on a real kernel of this interpreter; return its iopub messages."""
    from jupyter_client.manager import KernelManager

    import browser

    messages = []
    with browser.this_python_kernel(KernelManager) as km:
        km.start_kernel()
        try:
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            reply = kc.execute_interactive(code, output_hook=messages.append, timeout=timeout)
            kc.stop_channels()
        finally:
            km.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", reply["content"]
    return messages


def timed_in_a_kernel(options, cell):
    """The iopub messages of ``%%cudatime options`` over ``cell`` on a real kernel."""
    pytest.importorskip("ipykernel")
    return iopub_of(f"%load_ext ipython_cudatime\nimport time\nget_ipython().run_cell_magic('cudatime', {options!r}, {cell!r})")


@pytest.fixture(scope="module")
def slow_cell():
    """One cold run and one warm run of 2 s each: the runner hears nothing for seconds."""
    return timed_in_a_kernel("-n 1", "time.sleep(2)")


def _progress_values(messages):
    """The values the kernel sent the view's widgets, in order: the bar's fractions, the line's texts."""
    states = [m["content"]["data"].get("state", {}) for m in messages if m["msg_type"] in ("comm_open", "comm_msg")]
    return [state["value"] for state in states if isinstance(state.get("value"), (float, str))]


def _progress_texts(messages):
    return [value for value in _progress_values(messages) if isinstance(value, str) and "cudatime" in value]


@pytest.mark.timing  # two runs of 2 s in a real kernel
def test_a_slow_cold_run_and_a_single_long_warm_run_show_their_time_so_far(slow_cell):
    texts = _progress_texts(slow_cell)
    cold = [t for t in texts if t.startswith("cudatime: cold run: ") and t.endswith(" so far")]
    warm = [t for t in texts if t.startswith("cudatime: warm run 1 of 1: ") and " so far · about " in t]
    assert len(set(cold)) >= 2 and len(set(warm)) >= 2, texts  # the view moves during each run
    assert not [t for t in warm if "cold run" in t]  # one run named at a time


@pytest.mark.timing  # two runs of 2 s in a real kernel
def test_the_bar_counts_the_cold_run_and_the_run_under_way(slow_cell):
    shown, fraction = [], 0.0  # (the bar, the text) of each refresh: a value left unchanged is not sent again
    for value in _progress_values(slow_cell):
        if isinstance(value, float):
            fraction = value
        elif "cudatime: " in value:
            shown.append((fraction, value))
    during_cold = [f for f, text in shown if text.startswith("cudatime: cold run: ")]
    during_warm = [f for f, text in shown if text.startswith("cudatime: warm run 1 of 1: ")]
    assert during_cold and min(during_cold) > 0  # the cold run under way fills part of the bar
    assert len(set(during_warm)) >= 2 and during_warm == sorted(during_warm)  # the warm run moves it on
    assert min(during_warm) >= max(during_cold)
    [final] = [m for m in slow_cell if m["msg_type"] == "update_display_data"]
    assert "warm median" in final["content"]["data"]["text/html"]  # ...and the report still replaces it


@pytest.fixture(scope="module")
def long_cell():
    return timed_in_a_kernel("-n 6", "time.sleep(0.15)")


def test_progress_view_is_replaced_by_the_report_through_its_display_id(long_cell):
    shown = [m for m in long_cell if m["msg_type"] == "display_data"]
    [view] = [m for m in shown if WIDGET_MIME in m["content"]["data"]]
    display_id = view["content"]["transient"]["display_id"]
    updates = [m for m in long_cell if m["msg_type"] == "update_display_data"]
    assert [m["content"]["transient"]["display_id"] for m in updates] == [display_id]
    final = updates[0]["content"]["data"]
    assert set(final) == {"text/plain", "text/html"} and "warm median" in final["text/html"]
    assert len(shown) == 1  # the report is the view's update, not a second output


def test_every_progress_widget_is_closed(long_cell):
    opened = {m["content"]["comm_id"] for m in long_cell if m["msg_type"] == "comm_open"}
    closed = {m["content"]["comm_id"] for m in long_cell if m["msg_type"] == "comm_close"}
    assert opened and opened <= closed


def test_progress_says_runs_done_and_running_median(long_cell):
    texts = _progress_texts(long_cell)
    assert any(" of 6" in text and "running median" in text for text in texts), texts


def test_fast_cell_makes_no_widget():
    pytest.importorskip("ipykernel")
    messages = iopub_of("%load_ext ipython_cudatime\n%cudatime -n 3 sum(range(100))")
    assert not [m for m in messages if m["msg_type"] == "comm_open"]
    [report] = [m for m in messages if m["msg_type"] == "display_data"]
    assert set(report["content"]["data"]) == {"text/plain", "text/html"}


@pytest.mark.timing  # the view waits for half a second of runs
def test_terminal_gets_one_updating_stderr_line_on_a_tty(ip, monkeypatch):
    tty = TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    ip.run_cell("import time")
    ip.run_line_magic("cudatime", "-n 5 time.sleep(0.15)")
    text = tty.getvalue()
    assert "\n" not in text and "\r\x1b[K" in text and "warm run" in text and " of 5" in text
    assert text.endswith("\r\x1b[K")  # cleared before the report is printed


@pytest.mark.timing  # the view waits for half a second of runs
def test_nothing_when_stderr_is_not_a_tty(ip, monkeypatch):
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    cell = run(ip, "import time\n%cudatime -n 5 time.sleep(0.15)")
    assert plain.getvalue() == "" and "cudatime:" not in cell.stderr


@pytest.mark.timing  # the view waits for half a second of runs
def test_sweep_progress_names_the_point(ip, monkeypatch):
    tty = TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    ip.run_cell("import time\n%cudatime -n 2 --sweep t=0.1,0.12 time.sleep(t)")
    assert "point 2 of 2 (t=0.12)" in tty.getvalue()


class FakeClock:
    """The runner's clock seam, moved by hand."""

    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t


class Recorder:
    """A progress view that records what it was told, and when on ``clock`` (a stand-in for the widgets)."""

    shown = False

    def __init__(self, clock=None):
        self.updates = []
        self.clock = clock

    def update(self, fraction, status, finished=()):
        self.updates.append((self.clock.now() if self.clock else time.perf_counter(), fraction, status))
        self.finished = list(finished)
        self.shown = True

    def close(self):
        self.shown = False


def test_no_view_before_half_a_second_and_refreshes_throttled():
    """On the runner's clock (a fake one here, moved 1 ms per run): no real second is spent."""
    clock = FakeClock()
    live = progress.LiveProgress(Recorder(clock), runs=1000, clock=clock)
    started = live.started
    warm = []
    while clock.t - started < 1.2:  # 1.2 s of runs that each take 1 ms
        clock.t += 0.001
        warm.append(progress_run())
        live.ran("warm", len(warm), warm)
    times = [t for t, _, _ in live.view.updates]
    assert times and times[0] - started >= progress.SHOW_AFTER
    assert all(b - a >= progress.MIN_INTERVAL for a, b in zip(times, times[1:]))
    assert len(times) <= 4 < len(warm)
    fractions = [f for _, f, _ in live.view.updates]
    assert fractions == sorted(fractions) and 0 < fractions[-1] <= 1


def progress_run():
    from ipython_cudatime.results.result import Run

    return Run(0.001, 0.001)


HANDLER = "<img src=x onerror=document.body.append(12345*11111)>"  # runs: the page shows 137170295
HOSTILE_SWEEP = f"%%cudatime -n 2 --sweep s='<b>bold</b>{HANDLER}','{HANDLER}'\ntime.sleep(0.2)"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def test_sweep_values_in_the_progress_widget_stay_text_in_chromium(tmp_path):
    """The progress widget as a live frontend had it mid-sweep (the state the kernel sent), rendered
    by the widget manager in Chromium: the values show as typed, no element is made, no handler runs."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    import browser

    if browser.browser_skip_reason():
        pytest.skip(browser.browser_skip_reason())
    cells = [new_code_cell("%load_ext ipython_cudatime\nimport time"), new_code_cell(HOSTILE_SWEEP)]
    nb = browser.execute_notebook(new_notebook(cells=cells), tmp_path)
    state = nb.metadata.widgets[WIDGET_STATE]["state"]
    [status] = [m["state"]["value"] for m in state.values() if m["model_name"] == "HTMLModel"]
    assert "point " in status and "&lt;img src=x" in status  # the latest status the kernel sent
    [box] = [model_id for model_id, m in state.items() if m["model_name"] == "HBoxModel"]
    view = {"version_major": 2, "version_minor": 0, "model_id": box}
    nb.cells.append(new_code_cell("", outputs=[new_output("display_data", data={WIDGET_MIME: view,
                                                                                "text/plain": "progress"})]))
    path = tmp_path / "hostile.ipynb"
    nbformat.write(nb, str(path))
    page = browser.export_and_render(path, widgets=True)
    assert page["errors"] == [] and page["blocked"] == [] and page["widget_views"] == 1
    assert f"{HANDLER}'): warm" in page["text"]  # shown as typed
    assert "137170295" not in page["text"]  # the handler never ran
    assert all(image["src_prefix"].startswith("data:image/") for image in page["images"])  # the chart only


def test_the_run_under_way_and_what_comes_next_on_the_runner_clock():
    clock = FakeClock()
    live = progress.LiveProgress(Recorder(), runs=1, clock=clock)
    texts = lambda: [status for _, _, status in live.view.updates]

    def at(t):
        clock.t = t
        live.tick()

    live.starting("cold", 1)
    at(0.3)
    assert texts() == []  # nothing before SHOW_AFTER
    at(0.6), at(0.7), at(0.85)
    assert texts() == ["cudatime: cold run: 600 ms so far", "cudatime: cold run: 850 ms so far"]  # throttled
    clock.t = 1.84
    live.ran("cold", 1, [])
    live.starting("warm", 1)
    at(1.9)  # just refreshed: no tick yet
    at(2.1)
    # a cold run over the budget: no warm-up, one warm run as long as the cold run is left
    assert texts()[-2:] == ["cudatime: cold run done in 1.84 s · about 2 s left",
                            "cudatime: warm run 1 of 1: 260 ms so far · about 2 s left"]
    clock.t = 3.9
    live.ran("warm", 1, [progress_run()])
    at(4.5)  # no run under way: nothing to add
    assert texts()[-1] == "cudatime: warm run 1 of 1 done · running median 1 ms · less than a second left"


def test_the_bar_and_the_time_left_count_the_points_to_come():
    """A sweep of 4 points of -n 2, on the fake clock: the first point takes 3 s, so 9 s are left
    once it ends; the bar follows the time, the cold run under way included."""
    clock = FakeClock()
    live = progress.LiveProgress(Recorder(), runs=2, points=4, clock=clock, warmup=0)

    def shown():
        return live.view.updates[-1][1:]

    for point in range(2):
        live.next_point(f"n={point}")
        for phase, number in (("cold", 1), ("warm", 1), ("warm", 2)):
            live.starting(phase, number)
            clock.t += 0.5
            live.tick()
            clock.t += 0.5
            live.ran(phase, number, [progress_run()] * (number if phase == "warm" else 0))
    fraction, text = shown()
    assert text == "cudatime: point 2 of 4 (n=1): warm run 2 of 2 done · running median 1 ms · about 6 s left"
    assert fraction == pytest.approx(0.5)
    live.next_point("n=2")
    live.starting("cold", 1)
    clock.t += 1.5
    live.tick()
    fraction, text = shown()
    assert text.startswith("cudatime: point 3 of 4 (n=2): cold run: 1.5 s so far") and text.endswith("left")
    assert fraction > 0.5  # the cold run under way moves the bar


def test_the_latest_finished_points_are_listed_escaped():
    finished = [(f"s='<b>{n}</b>'", "1 ms") for n in range(progress.FINISHED_SHOWN)]
    markup = progress._finished_table(finished)
    assert markup.count("<tr>") == progress.FINISHED_SHOWN and "&lt;b&gt;0&lt;/b&gt;" in markup and "<b>" not in markup
    assert progress._finished_table([]) == ""
    live = progress.LiveProgress(Recorder(), runs=1, points=20)
    for n in range(12):
        live.point_done(f"n={n}", 0.001 if n != 5 else None, failed=n == 5)
    live._refresh(live.clock.now())
    assert live.view.finished == [(f"n={n}", "error" if n == 5 else "1 ms") for n in range(4, 12)]


def test_the_ticker_stops_with_the_measurement():
    live = progress.LiveProgress(Recorder(), runs=1)
    with live:
        assert live._ticker.is_alive()
    assert live._ticker is None and not any(t.name == "cudatime-progress" for t in threading.enumerate())
    with progress.LiveProgress(None) as quiet:  # -q: no view, no thread
        assert quiet._ticker is None


@pytest.fixture(scope="module")
def sweep_cell():
    """A sweep of 4 points of 3 runs of 0.15 s: the view is made during the first point's later runs."""
    return timed_in_a_kernel("-n 2 --sweep t=0.15,0.16,0.17,0.18", "time.sleep(t)")


def _sent_at(message):
    """When the kernel sent ``message``, in seconds."""
    import datetime

    date = message["header"]["date"]
    return (date if isinstance(date, datetime.datetime) else datetime.datetime.fromisoformat(date)).timestamp()


@pytest.mark.timing  # four points of real runs in a real kernel
def test_the_progress_view_lives_through_every_point_of_a_sweep(sweep_cell):
    texts = _progress_texts(sweep_cell)
    assert all(any(f"point {n} of 4" in text for text in texts) for n in range(1, 5)), texts
    updates = [i for i, m in enumerate(sweep_cell) if m["msg_type"] == "comm_msg"
               and "cudatime" in str(m["content"]["data"].get("state", {}).get("value", ""))]
    closes = [i for i, m in enumerate(sweep_cell) if m["msg_type"] == "comm_close"]
    assert closes and min(closes) > max(updates)  # no widget of the view closed before its last update
    sent = [_sent_at(sweep_cell[i]) for i in updates]
    assert max(b - a for a, b in zip(sent, sent[1:])) < 2.0  # a person sees it move throughout
    [final] = [m for m in sweep_cell if m["msg_type"] == "update_display_data"]
    assert "t=0.18" in final["content"]["data"]["text/plain"]  # the report replaced the view


@pytest.mark.timing  # four points of real runs in a real kernel
def test_finished_points_fill_a_table_under_the_bar(sweep_cell):
    last = [text for text in _progress_texts(sweep_cell) if "point 4 of 4" in text][-1]
    rows = re.findall(r"<tr><td[^>]*>(.*?)</td><td>(.*?)</td></tr>", last)
    assert [label for label, _ in rows] == ["t=0.15", "t=0.16", "t=0.17"]
    assert all(median.endswith(" ms") for _, median in rows), rows
