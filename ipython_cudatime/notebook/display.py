"""How results are shown: the reports ``%cudatime`` publishes, how a result echoed as a cell's
value looks, and the live progress while a measurement runs. The data (``result``, ``compare``)
knows nothing of this layer.

In a notebook kernel: ``text/plain`` (the text report) and self-contained ``text/html`` (the
report with its chart as an SVG image), which every frontend renders the same before and after
the notebook is saved and reopened, trusted or not. Widgets are only for the live progress view,
which this final bundle replaces through its display id: nothing widget-based is left in the
saved notebook. In terminal IPython: the text report only, the progress one updating line on a
TTY stderr. Which of the two is one decision, made once and passed in (``Display(shell, keepers,
notebook=...)``, as rich's ``force_jupyter``), never a global to patch.
"""

from __future__ import annotations

import contextvars
import statistics
import sys
import threading
import uuid
from collections.abc import Iterable, Sequence
from html import escape
from importlib.util import find_spec
from typing import IO, TYPE_CHECKING, Any, ClassVar

from ..measure.machine import Clock
from ..measure.runner import Progress
from ..render.chart import chart_html
from ..render.comparison import results_html, results_text
from ..render.report import Reading, render_html, render_text
from ..repeat.state import OWN_WIDGET
from ..results.compare import Results
from ..results.ratios import Verdicts
from ..results.result import CudaTimeResult, statistics_clock
from ..units import format_seconds as fmt
from ..units import inert

if TYPE_CHECKING:
    from IPython.lib.pretty import RepresentationPrinter

    from ..measure.runner import Plan
    from ..results.result import Harness, RecordKeeper, Run


def text(obj: CudaTimeResult | Results, keepers: Iterable[RecordKeeper]) -> str:
    """The text report of a result, or of results side by side: the truth every view shares."""
    return bundle(obj, keepers, html=False)["text/plain"]


def bundle(obj: CudaTimeResult | Results, keepers: Iterable[RecordKeeper], html: bool = True) -> dict[str, str]:
    """The mimebundle for a result or results side by side: the text report and (``html``) the HTML report, both
    read from one ``Reading`` or ``Verdicts``; ``keepers`` word the records of results that carry no features."""
    obj = obj.read_by(keepers)  # a result read back without features holds plain records: they word them
    if isinstance(obj, Results):
        verdicts = Verdicts(obj.keepers)
        data = {"text/plain": results_text(obj, verdicts)}
        return {**data, "text/html": results_html(obj, verdicts)} if html else data
    reading = Reading.of(obj, keepers)
    data = {"text/plain": render_text(reading)}
    return {**data, "text/html": render_html(reading, chart_html(obj))} if html else data


class Display:
    """Shows results on one shell. ``keepers``: the features that word a result's records. ``notebook``: None
    detects a Jupyter kernel behind the shell (Lab, Notebook, VS Code, Colab), True or False forces it (tests, or
    a frontend we misjudge). ``install`` registers echoed results' reprs with IPython's formatters, by type, so
    that the data imports no display code; IPython asks for the text/html only where a notebook shows it."""

    SHOWN: ClassVar[tuple[type, ...]] = (CudaTimeResult, Results)

    def __init__(self, shell: Any, keepers: Iterable[RecordKeeper], notebook: bool | None = None) -> None:
        self.shell = shell
        self.keepers = tuple(keepers)
        self.notebook = getattr(shell, "kernel", None) is not None if notebook is None else notebook
        # (cell, object) last published: its echo in the same cell is one line
        self._shown: tuple[int, object] | None = None

    def show(self, obj: CudaTimeResult | Results, text_only: bool = False, live: LiveProgress | None = None) -> None:
        """Publish a result or results the way this frontend reads best (in a notebook: text and
        HTML), in place of ``live``'s progress view when one is given."""
        self._shown = (self.shell.execution_count, obj)
        data = bundle(obj, self.keepers, html=self.notebook and not text_only)
        if live is not None:
            live.finish(data)  # replaces the progress view, if one is showing
        else:
            from IPython.display import display

            display(data, raw=True)

    def line(self, text: str) -> None:
        """Publish one line (auto mode's): printed in a terminal, text and HTML in a notebook."""
        if not self.notebook:
            print(text)
            return
        from IPython.display import display

        display({"text/plain": text, "text/html": f"<div class='cudatime-auto'>{escape(text)}</div>"}, raw=True)

    def _just_shown(self, obj: object) -> bool:
        """Whether ``obj`` is what this cell already published (``%cudatime -o stmt``): its Out
        value is then its one-line repr, not the report a second time."""
        shown = self._shown
        return shown is not None and shown[0] == self.shell.execution_count and shown[1] is obj

    def _pretty(self, obj: CudaTimeResult | Results, printer: RepresentationPrinter, cycle: bool) -> None:
        printer.text(repr(obj) if cycle or self._just_shown(obj) else text(obj, self.keepers))

    def _html(self, obj: CudaTimeResult | Results) -> str | None:
        if not self.notebook or self._just_shown(obj):
            return None  # IPython then shows the text/plain alone
        return bundle(obj, self.keepers)["text/html"]

    def install(self) -> None:
        formatters = self.shell.display_formatter.formatters
        for kind in self.SHOWN:
            formatters["text/plain"].for_type(kind, self._pretty)
            formatters["text/html"].for_type(kind, self._html)

    def uninstall(self) -> None:
        for formatter in self.shell.display_formatter.formatters.values():
            for kind in self.SHOWN:
                formatter.pop(kind, None)


SHOW_AFTER = 0.5  # seconds before a view appears: fast cells never flash one
MIN_INTERVAL = 0.2  # seconds between two refreshes, at least
TICK = 0.25  # seconds between two looks of the ticker at a run under way
COST_SHARE = 0.01  # refreshing costs at most this share of the time measured
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
FINISHED_SHOWN = 8  # finished sweep points listed under the bar, the latest ones


class LiveProgress(Progress):
    """Follows one ``%cudatime`` (all points of a sweep) and owns its progress view, shown once it has taken
    ``SHOW_AFTER`` seconds: the run, the running median, the time left, the sweep point.

    The runner reports before and after each run (``runner.Progress``); the view refreshes then, on its thread,
    at most every ``MIN_INTERVAL`` seconds and never for more than ``COST_SHARE`` of the time measured. A run
    that lasts (a slow cold run) would leave the view still, so a ticker thread looks every ``TICK`` seconds and
    shows the run under way ("warm run 1 of 1: 1.2 s so far"): a widget's value set from another thread is sent
    like any other (ipywidgets 7 and 8). Only those refreshes fall inside a timed span, a fraction of a
    millisecond in a run of at least ``TICK`` seconds. All time is read on the runner's ``Clock``.

    A context manager around the measurement: ``finish(data)`` publishes the final bundle in place of the view;
    leaving removes a view no report replaced (``-q``, ``-o``, an error). The bar is the time spent out of the
    time spent and left (``_left``), so the cold run and the run under way move it too.
    """

    def __init__(self, view: WidgetView | LineView | None, runs: int | None = None, budget: float = 1.0,
                 points: int = 1, clock: Clock | None = None, warmup: int | None = None) -> None:
        self.view, self.runs, self.budget, self.points, self.warmup = view, runs, budget, points, warmup
        self.point, self.label = -1, ""  # the sweep point being timed (``next_point``), from 0
        self.clock = clock or Clock()
        self.started = self.clock.now()
        self._next = self.started + SHOW_AFTER
        self._took: list[float] = []  # how long each finished sweep point took
        self._point_started = self._cold_ended = self.started
        self._cold: float | None = None  # how long this point's cold run took, once it ended
        self._each: float | None = None  # how long this point's last later run (or sample) took
        self._later = 0  # this point's later runs (warm-up and warm) that ended
        # (phase, number, start) of the run under way, between starting() and ran()
        self._running: tuple[str, int, float] | None = None
        # what ran() last heard, for the text: (phase, done, warm, spent, harness)
        self._done: tuple[str, int, Sequence[Run], float, Harness | None] | None = None
        self._shown = 0.0  # the fraction shown last: the bar never moves back
        self._finished: list[tuple[str, str]] = []  # (label, warm median or "error") of each finished point
        self._lock = threading.Lock()  # one refresh at a time: the runner's thread or the ticker's
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def next_point(self, label: str) -> None:
        now = self.clock.now()
        if self.point >= 0:
            self._took.append(now - self._point_started)
        self.point, self.label = self.point + 1, label
        self._point_started, self._cold, self._each, self._later, self._done = now, None, None, 0, None

    def point_done(self, label: str, median: float | None, failed: bool = False) -> None:
        """A sweep point finished: the view lists it (its warm median, or that it failed)."""
        self._finished.append((label, "error" if failed else fmt(median) if median is not None else "cold run only"))

    def starting(self, phase: str, number: int) -> None:
        self._running = (phase, number, self.clock.now())

    def ran(self, phase: str, done: int, warm: Sequence[Run], harness: Harness | None = None) -> None:
        now = self.clock.now()
        running, self._running = self._running, None
        took = now - running[2] if running is not None else None
        if phase == "cold":
            self._cold, self._cold_ended = took if took is not None else now - self._point_started, now
        else:
            self._each, self._later = took if took is not None else self._each, self._later + 1
        self._done = (phase, done, warm, now - self._cold_ended, harness)  # spent: of the budget
        if now >= self._next and self.view is not None:
            self._refresh(now)

    def _refresh(self, now: float) -> None:
        """Show where the measurement stands; the next refresh waits until this one's cost is COST_SHARE of the
        time between them (the first, which makes the view and imports ipywidgets, is a one-off)."""
        fraction, text = self._fraction(now), self._text(now)
        with self._lock:
            if self.view is None:
                return
            first = not self.view.shown
            prefix = f"point {self.point + 1} of {self.points} ({self.label}): " if self.points > 1 else ""
            self.view.update(fraction, f"cudatime: {prefix}{text}", self._finished[-FINISHED_SHOWN:])
        cost = 0.0 if first else self.clock.now() - now
        self._next = now + max(MIN_INTERVAL, cost / COST_SHARE)

    def tick(self) -> None:
        """The ticker's look: a run under way for ``MIN_INTERVAL`` or more, with no refresh for as long."""
        running, now = self._running, self.clock.now()
        if running is not None and now >= self._next and now - running[2] >= MIN_INTERVAL:
            self._refresh(now)

    def _text(self, now: float) -> str:
        """One run named (the one under way, else the last that ended), the running median, and
        the time left once a run has ended to estimate it from."""
        running, done = self._running, self._done
        parts = []
        if running is not None:
            phase, number, start = running
            parts.append(f"{self._run_name(phase, number)}: {fmt(now - start)} so far")
        elif done is not None:
            parts.append(self._ended(*done[:2], done[3]))
        if done is not None and done[2]:
            clock = statistics_clock(done[2], done[4])  # the clock the result will use
            parts.append(f"running median {fmt(statistics.median(getattr(run, clock) for run in done[2]))}")
        if done is not None or self._took:
            parts.append(_about(self._left(now)))
        return " · ".join(parts)

    def _run_name(self, phase: str, number: int) -> str:
        if phase == "warm":
            return f"warm run {number}" + (f" of {self.runs}" if self.runs is not None else "")
        return "cold run" if phase == "cold" else f"warm-up run {number}"

    def _ended(self, phase: str, done: int, spent: float) -> str:
        """The run that ended last, when none is under way."""
        if phase == "cold":
            return f"cold run done in {fmt(self._cold or 0.0)}"
        if phase == "warm-up" or self.runs is not None:
            return f"{self._run_name(phase, done)} done"
        return f"{done} warm sample{'s' if done != 1 else ''}, {fmt(spent)} of the {fmt(self.budget)} budget"

    def _fraction(self, now: float) -> float:
        spent = now - self.started
        total = spent + self._left(now)
        self._shown = max(self._shown, min(spent / total, 1.0) if total > 0 else 0.0)
        return self._shown

    def _left(self, now: float) -> float:
        """Seconds still to go, from the runs so far: the rest of this point, then each point to
        come as long as the finished ones took on average (this one, before any finished)."""
        point = self._point_left(now)
        per_point = statistics.mean(self._took) if self._took else now - self._point_started + point
        return point + (self.points - max(self.point, 0) - 1) * per_point

    def _point_left(self, now: float) -> float:
        """Seconds left in this point: each later run as long as the last one that ended (the cold
        run before any; a cold run under way as long as so far), the run under way finishing."""
        running = self._running
        under_way = now - running[2] if running is not None else 0.0
        cold = self._cold if self._cold is not None else under_way
        each = self._each if self._each is not None else cold
        if self.runs is None:  # the budget: counted from the end of the cold run
            if self._cold is None:
                return max(self.budget, each)
            return max(self.budget - (now - self._cold_ended), each - under_way if running is not None else 0.0)
        warmup = self.warmup if self.warmup is not None else int(cold <= self.budget)
        planned = warmup + self.runs if self.runs else 0
        if self._cold is None:
            return planned * each
        to_start = max(planned - self._later - (running is not None), 0)
        return to_start * each + (max(each - under_way, 0.0) if running is not None else 0.0)

    def _tick_loop(self) -> None:
        while not self._stop.wait(TICK):
            try:
                self.tick()
            except Exception:  # a view that can no longer be updated: the measurement goes on without it
                return

    def _stop_ticker(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None

    def finish(self, data: dict[str, Any]) -> None:
        self._stop_ticker()
        view, self.view = self.view, None
        if isinstance(view, WidgetView) and view.shown:
            view.close(data)
            return
        if view is not None:
            view.close()  # a stderr line is cleared before the report
        from IPython.display import display

        display(data, raw=True)

    def __enter__(self) -> LiveProgress:
        if self.view is not None:  # the ticker, in a copy of this context (a kernel finds the cell's output by it)
            context = contextvars.copy_context()
            self._ticker = threading.Thread(target=context.run, args=(self._tick_loop,), name="cudatime-progress",
                                            daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop_ticker()
        if self.view is not None:
            self.view.close()
            self.view = None


class WidgetView:
    """A FloatProgress and an HTML line, published under a display id through the shell's
    own publisher (taken at creation, so the capture around warm runs does not swallow it).
    The widgets are made at the first update: a fast cell never creates any."""

    def __init__(self, shell: Any) -> None:
        self._publisher = shell.display_pub
        self.display_id = uuid.uuid4().hex
        self.widgets: tuple[Any, Any, Any] | None = None  # (box, bar, text), made at the first update

    @property
    def shown(self) -> bool:
        return self.widgets is not None

    def _publish(self, data: dict[str, Any], update: bool) -> None:
        self._publisher.publish(data, metadata={}, transient={"display_id": self.display_id}, update=update)

    def update(self, fraction: float, status: str, finished: Sequence[tuple[str, str]] = ()) -> None:
        """Show ``status``, and under it the ``finished`` sweep points (label, median): both hold the user's sweep
        values and labels, so they are escaped for the HTML widget (``<img onerror=...>`` shows as typed)."""
        _, bar, text = self.widgets or self._show()
        bar.value, text.value = fraction, escape(status, quote=False) + _finished_table(finished)

    def _show(self) -> tuple[Any, Any, Any]:
        import ipywidgets

        bar = ipywidgets.FloatProgress(value=0.0, min=0.0, max=1.0, layout=ipywidgets.Layout(width="240px"))
        text = ipywidgets.HTML("cudatime")
        box = ipywidgets.HBox([bar, text])
        self.widgets = (box, bar, text)
        for model in self._models():  # the later runs' cleanup closes the cell's widgets, never these
            setattr(model, OWN_WIDGET, True)
        view = {"version_major": 2, "version_minor": 0, "model_id": box.model_id}
        self._publish({"text/plain": "cudatime: measuring", WIDGET_MIME: view}, False)
        return self.widgets

    def close(self, data: dict[str, Any] | None = None) -> None:
        """The final bundle takes the view's place (an empty output where no report follows); then every
        model made is closed: a model left open stays in the notebook's saved widget state."""
        if self.widgets is not None:
            self._publish({"text/plain": ""} if data is None else data, True)
            for model in self._models():
                model.close()
            self.widgets = None

    def _models(self) -> list[Any]:
        """Every model the view made: its widgets, their layouts and styles."""
        models = [(widget, widget.layout, getattr(widget, "style", None)) for widget in self.widgets or ()]
        return [model for group in models for model in group if model is not None]


class LineView:
    """One ``\\r``-updated line on a TTY stderr (taken at creation, before any capture)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.shown = False

    def update(self, fraction: float, status: str, finished: Sequence[tuple[str, str]] = ()) -> None:
        """The status alone: one line has no room for the finished points."""
        self.stream.write(f"\r\x1b[K{inert(status, newlines=False)} [{100 * fraction:3.0f}%]")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def live_progress(shell: Any, quiet: bool, plan: Plan, notebook: bool, points: int, clock: Clock) -> LiveProgress:
    """The progress follower for one ``%cudatime`` (its ``runner.Plan``, on the runner's ``clock``): a widget view
    in a notebook with ipywidgets, a stderr line on a TTY, or none (``quiet``: -q, or nowhere to show it)."""
    view: WidgetView | LineView | None = None
    if not quiet:
        # a widget view where ipywidgets is installed (found, not imported: that waits for a view)
        view = WidgetView(shell) if notebook and find_spec("ipywidgets") is not None else None
        if view is None and sys.stderr.isatty():
            view = LineView(sys.stderr)
    return LiveProgress(view, plan.runs, plan.budget, points, clock, plan.warmup)


def _finished_table(finished: Sequence[tuple[str, str]]) -> str:
    """The finished sweep points as a small table, escaped; "" before the first."""
    rows = "".join(f"<tr><td style='padding-right:10px'>{escape(label, quote=False)}</td><td>{escape(median)}</td></tr>"
                   for label, median in finished)
    return f"<table style='font-size:90%;border-collapse:collapse'>{rows}</table>" if rows else ""


def _about(seconds: float) -> str:
    """Time left, as a person reads it: a rounded figure, never a false precision."""
    if seconds < 1:
        return "less than a second left"
    if seconds < 90:
        return f"about {seconds:.0f} s left"
    return f"about {seconds / 60:.0f} min left"

