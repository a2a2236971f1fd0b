"""One result's reports: the text (what terminal IPython prints, and the fallback everywhere else) and the HTML.

A ``Reading`` works out the findings (a stable ``kind``, plain sentences every view shares) once for all the
views. The HTML is the lasting output in a notebook, so it uses only what every frontend keeps in an untrusted
notebook (see ``chart``): tags with classes, ``<details>``, inline styles with literal values, the chart as an
``<img>``. Colours are left to the frontend (its theme), except where an element sets both text and background.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from statistics import median
from typing import TYPE_CHECKING, Any

from ..results.result import Finding, judgement
from ..units import format_seconds as fmt
from ..units import inert, plain, range_text, ratio_text
from .chart import MANY_RUNS, REPORT_PX, legend_html, legend_item, swatch

if TYPE_CHECKING:
    from ..results.result import CudaTimeResult, RecordKeeper, Run


def _warm_line(result: CudaTimeResult) -> str:
    """The spread as "IQR 1.2 ms" (a width, not a ± half-width); below ``IQR_MIN_RUNS`` runs min and max only."""
    runs = (f"{result.runs} samples of {result.batch:,} runs" if result.batch > 1
            else f"{result.runs} run{'s' if result.runs != 1 else ''}")
    extremes = f"min {fmt(result.min)}, max {fmt(result.max)}"
    median = f"warm     : {fmt(result.median)} median ({result.ci_text()})"
    if not result.has_iqr:
        return f"{median} over {runs} ({result.clock} clock; {extremes})"
    return (f"{median}, IQR {fmt(result.iqr)}, over {runs} ({result.clock} clock; "
            f"{extremes}, mean {fmt(result.mean)} ± {fmt(result.stdev)} std)")


def render_text(reading: Reading) -> str:
    """``%time``'s two lines for the cold run, then cold vs warm and what they mean."""
    result = reading.result
    cold = result.cold
    total = (cold.cpu_user or 0.0) + (cold.cpu_sys or 0.0)
    device = "" if cold.device is None else f", device {fmt(cold.device)}"
    lines = [
        f"CPU times: user {fmt(cold.cpu_user or 0.0)}, sys: {fmt(cold.cpu_sys or 0.0)}, total: {fmt(total)}",
        f"Wall time: {fmt(cold.wall)}",
        f"cold run : {fmt(result.cold_time)}  (host {fmt(cold.host)}, wall {fmt(cold.wall)}{device})",
    ]
    if result.median is None:
        lines.append("warm     : no warm runs")
    else:
        lines += [_warm_line(result), *([f"samples  : {result.batch_text()}"] if result.batch > 1 else []),
                  f"cold/warm: {ratio_text(result.ratio)}"]
    lines.append(f"runs     : {result.counts_text()}")
    lines += [line for keeper, record in reading.pairs for line in keeper.text_lines(result, record)]
    synced = ", ".join(result.synchronized) if result.synchronized else "nothing (no device framework active)"
    lines.append(inert(f"device   : {result.device}; synchronized: {synced}", newlines=False))  # a loaded field's
    lines.extend(finding.text for finding in reading.findings)
    return plain("\n".join(lines))


ASYNC_HOST_FRACTION = 0.5  # host below half of wall: Python moved on while the device worked
ASYNC_MIN_GAP = 50e-6  # ... by more than this, so that sync overhead alone never triggers it
# Device events seeing less than this share of the synchronized time (harness cost out) missed work.
COVERED = 0.9


def _async_gap(host: float, wall: float) -> bool:
    return host < ASYNC_HOST_FRACTION * wall and wall - host > ASYNC_MIN_GAP


def _async_findings(result: CudaTimeResult) -> list[Finding]:
    """The async trap: the cold run or the warm medians handed control back long before the work was done. The
    host's hand-over (what ``%time`` prints) varies from run to run, so the sentence gives every run's range."""
    cold, warm = result.cold, result.warm
    warm_gap = bool(warm) and _async_gap(median(run.host for run in warm), median(run.wall for run in warm))
    if not (_async_gap(cold.host, cold.wall) or warm_gap):
        return []
    # the synchronized time of the runs that showed the trap: the warm median, or the cold run alone
    synchronized = f"{fmt(median(run.wall for run in warm))} (warm median)" if warm_gap else \
        f"{fmt(cold.wall)} (the first run)"
    worker = "the GPU" if result.on_gpu else "the device"  # CPU async backends have no GPU
    return [Finding("async", f"%time alone would have printed {_hand_over(result)}: {worker} was still working "
                             f"when Python moved on. The synchronized time is {synchronized}.")]


def _hand_over(result: CudaTimeResult) -> str:
    """``0.15–7.3 ms, the host's hand-over over the cell's 12 runs (111 µs the first time)``."""
    hosts = [result.cold.host] + [run.host for run in result.warmup + result.warm]
    low, high = fmt(min(hosts)), fmt(max(hosts))
    if len(hosts) == 1:
        return f"{low}, the host's hand-over"
    if low == high:
        return f"{low}, the host's hand-over in each of the {len(hosts):,} timed runs"
    return (f"{range_text(min(hosts), max(hosts))}, the host's hand-over over the {len(hosts):,} timed runs "
            f"({fmt(hosts[0])} the first time)")


@dataclass(frozen=True)
class Reading:
    """One result as its views read it: (keeper, what it judged of its record) in the keepers' order, and the
    findings, worked out once, so that neither report asks the noise check or a feature a second time."""

    result: CudaTimeResult
    pairs: tuple[tuple[RecordKeeper, Any], ...]
    findings: tuple[Finding, ...]

    @classmethod
    def of(cls, result: CudaTimeResult, keepers: Iterable[RecordKeeper]) -> Reading:
        """The findings, most important first: the async trap, the features' sentences, what a device clock that
        saw too little of the synchronized time missed (and why the statistics then use the wall clock), the notes."""
        pairs = tuple((keeper, judgement(keeper, result)) for keeper in keepers)
        found = _async_findings(result) + [each for keeper, judged in pairs for each in keeper.findings(result, judged)]
        if (coverage := result.coverage) is not None and coverage < COVERED:
            found.append(Finding("coverage", f"The device clock (events on the current stream) saw {coverage:.0%} "
                                 "of the synchronized time: the rest ran on other streams or other devices (or in a "
                                 "framework these events do not see), which only the synchronized wall clock "
                                 "includes."))
        if why := result.clock_why():
            found.append(Finding("clock", why))
        if result.stopped:  # these two may come from a file: one line each, whatever they hold
            found.append(Finding("stopped", f"Stopped early by {inert(result.stopped, newlines=False)}; "
                                            "the statistics cover the runs done."))
        found.extend(Finding("note", inert(note, newlines=False)) for note in result.notes)
        return cls(result, pairs, tuple(found))


# One table style for every report, on each cell: the frontends set their own rules (right-aligned, padded by
# half an em, wrapping) on every td and th, which a table's style cannot override, so each cell says only
# what shows there, which keeps a saved report light.
CELL = "padding:0 10px 0 0;text-align:left"
LONG_CELL = 24  # characters: a longer cell (a sentence, a long name) may wrap; a number and its unit never do
BREAKS = re.compile(r"[\s\-–/]")  # where a browser may break a short cell's line


def _row(cells: Sequence[str], tag: str = "td") -> str:
    """A table row of ``tag`` cells. Short cells stay on one line (marked only where a browser could break one
    past its spaces: a hyphen, a dash), long ones wrap at spaces, their row's cells at the top. ``break-word``
    breaks a word only where it alone is wider than its line (``anywhere`` squeezed a column to a character)."""
    top = ";vertical-align:top" if any(len(text) > LONG_CELL for text in cells) else ""
    fit = [";overflow-wrap:break-word" if len(text) > LONG_CELL else ";white-space:nowrap" if BREAKS.search(
        text.replace(" ", "")) else "" for text in cells]
    return "<tr>" + "".join(f"<{tag} style='{CELL}{top}{how}'>{_short(text)}</{tag}>"
                            for text, how in zip(cells, fit)) + "</tr>"


def _short(text: str) -> str:
    """A cell's text, escaped; a short one's spaces unbreakable ("15.5 µs" on one line), two bytes each in a
    saved notebook where a nowrap style on every cell weighed twenty."""
    return escape(text) if len(text) > LONG_CELL else escape(text).replace(" ", "\u00a0")


# a command-line flag and its value ("--threads 1", "-n N"): a browser may break a line after a hyphen
FLAG = re.compile(r"(?<![\w-])(--?[a-z][\w-]*(?: (?:\d+|[A-Z]+)\b)?)")


def sentence_html(text: str) -> str:
    """A sentence as HTML: escaped, each flag with its value kept on one line (never "--" / "threads 1")."""
    return FLAG.sub(r"<span style='white-space:nowrap'>\1</span>", escape(text))


def table_html(header: Sequence[str], rows: Iterable[Sequence[object]], cls: str = "cudatime-table") -> str:
    """A compact table of text cells under a header row, in a box that scrolls sideways when it is wider than
    the output area (never cut); a column empty in every row is left out."""
    rows = [tuple(row) for row in rows]
    keep = [i for i in range(len(header)) if any(row[i] != "" for row in rows)] if rows else range(len(header))
    body = _row([header[i] for i in keep], "th") + "".join(_row([str(row[i]) for i in keep]) for row in rows)
    return (f"<div style='overflow-x:auto;max-width:100%'><table class='{cls}' "
            f"style='border-collapse:collapse;margin:4px 0'>{body}</table></div>")


def section_html(title: str, body: str, cls: str) -> str:
    """A collapsed section with the browser's own disclosure marker. Classic Notebook's stylesheet makes every
    summary a block (no marker): the summary's inline ``display:list-item`` gives the marker back there."""
    return (f"<details class='{cls}' style='margin:4px 0'><summary style='display:list-item;cursor:pointer'><b>"
            f"{escape(title)}</b></summary><div style='padding:2px 0 4px 14px'>{body}</div></details>") if body else ""


def details_html(reading: Reading) -> str:
    """The warm statistics, the cold run, the device and the features' rows, a name and its value to a line, the
    values aligned: a grid styled once on its box (a table's every cell must override the frontends' rules), which
    wraps a long value at spaces; then every run."""
    result = reading.result
    rows: list[tuple[str, str]] = []
    if result.median is not None:
        rows += [
            ("warm median", f"{fmt(result.median)} ({result.clock} clock)"),
            ("median's interval", result.ci_text()),
            *([("IQR", fmt(result.iqr)), ("mean ± std", f"{fmt(result.mean)} ± {fmt(result.stdev)}")]
              if result.has_iqr else []),
            ("min / max", f"{fmt(result.min)} / {fmt(result.max)}"),
            ("warm runs", f"{result.runs} (after {len(result.warmup)} warm-up)"),
            *([("each sample", text)] if (text := result.batch_text()) is not None else []),
            ("cold / warm", ratio_text(result.ratio)),
        ]
    rows += [  # the cold run's clocks are the first row of the runs' table under this one
        ("cold run: CPU", f"user {fmt(result.cold.cpu_user or 0.0)}, sys {fmt(result.cold.cpu_sys or 0.0)}"),
        ("device", result.device),
        ("synchronized", ", ".join(result.synchronized) or "nothing"),
        *(row for keeper, record in reading.pairs for row in keeper.detail_rows(result, record)),
        *([("threads", f"--threads {result.task.threads}")] if result.task and result.task.threads else []),
    ]
    cells = "".join(f"<b>{escape(name)}</b><span>{_short(value)}</span>" for name, value in rows)
    return (f"<div class='cudatime-details' style='display:grid;grid-template-columns:max-content minmax(0,1fr);"
            f"gap:0 10px;margin:4px 0;overflow-wrap:break-word'>{cells}</div>" + runs_html(result))


def _clock_row(kind: str, number: int, run: Run) -> tuple[str, str, str, str, str]:
    return (kind, str(number), fmt(run.host), fmt(run.wall), "" if run.device is None else fmt(run.device))


PERCENTILES = (0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100)


def spread_html(kind: str, times: Sequence[float]) -> str:
    """``times`` (of ``kind`` runs) as percentiles past ``MANY_RUNS``: the report stays the same size
    however many runs there were; every run is still in the result (``-o``) and what ``--save`` writes."""
    ordered = sorted(times)
    cells = " · ".join(_short(f"{f'p{p}' if 0 < p < 100 else ('min', 'max')[p // 100]} "
                              f"{fmt(ordered[round(p / 100 * (len(ordered) - 1))])}") for p in PERCENTILES)
    return f"<div class='cudatime-spread' style='margin:4px 0'><b>{len(ordered):,} {kind} runs</b>: {cells}</div>"


def runs_html(result: CudaTimeResult) -> str:
    """The cold and warm-up runs' clocks, the warm runs on the statistics clock; past ``MANY_RUNS``, percentiles."""
    warmup = ([_clock_row("warm-up", i, r) for i, r in enumerate(result.warmup, 1)]
              if len(result.warmup) <= MANY_RUNS else [])
    html = table_html(("run", "#", "host", "wall", "device"), [_clock_row("cold", 1, result.cold)] + warmup,
                      "cudatime-first-runs")
    if not warmup and result.warmup:
        html += spread_html("warm-up (wall)", [run.wall for run in result.warmup])
    samples = result.samples
    if len(samples) > MANY_RUNS:
        return html + spread_html(f"warm ({result.clock})", samples)
    # numbered, as many to a line as fit (a table of ten to a row was wider than a phone's output), in a grid's
    # columns of a fixed minimum width, so that the lines align: styled once, not on every entry
    entries = "".join(f"<span>{number}: {fmt(time)}</span>" for number, time in enumerate(samples, 1))
    return html + (f"<div class='cudatime-warm-runs' style='margin:4px 0'><b>warm runs ({result.clock} clock)</b>"
                   "<div style='display:grid;grid-template-columns:repeat(auto-fill,minmax(7.5em,1fr));"
                   f"white-space:nowrap'>{entries}</div></div>" if samples else "")


def percent(fraction: float) -> str:
    return f"{100 * fraction:.0f}%"


def stacked_bar(parts: Iterable[tuple[str, float, str]], total: float,
                show: Callable[[float], str] = fmt) -> str:
    """A one-line bar of (label, amount, colour) segments of ``total``, with a legend below (``show`` formats
    the amounts: seconds, or ``percent``): labels in the segments would be cut where a segment is narrow."""
    shown = [(label, amount, colour) for label, amount, colour in parts if amount > 0]
    cells = "".join(f"<div style='flex:{amount / total:.4f};background:{colour};height:14px'></div>"
                    for _, amount, colour in shown)
    items = [legend_item(swatch(colour) + f"{escape(label)} {escape(show(amount))}") for label, amount, colour in shown]
    return f"<div style='display:flex;width:100%;margin:4px 0 2px 0'>{cells}</div>" + legend_html(items)


def report_html(parts: Iterable[str], cls: str, wide: bool = False) -> str:
    """Every report's frame, REPORT_PX wide at most; a ``wide`` one (a sweep's or a comparison's) as wide as its
    widest part, up to the output's: its text and chart ``capped``, its table may use the rest."""
    width = "display:inline-block;max-width:100%" if wide else f"max-width:{REPORT_PX}px"
    return (f"<div class='{cls}' style='{width};line-height:1.4;text-align:left;overflow-wrap:break-word'>"
            + "".join(parts) + "</div>")


def capped(html: str) -> str:
    """Text or a chart in a wide frame (``report_html``): REPORT_PX wide at most, as in any report."""
    return f"<div style='max-width:{REPORT_PX}px'>{html}</div>" if html else ""


def render_html(reading: Reading, chart: str = "") -> str:
    """The answer in one line, the run chart (``chart.chart_html``, if drawn), the findings (one with a
    ``Finding.reason`` is its keeper's section's), one line of the runs, then the sections."""
    result = reading.result
    if result.median is None:
        answer = f"<b>{fmt(result.cold_time)}</b> (cold run only)"
    else:
        answer = (f"warm median <b>{fmt(result.median)}</b> ({escape(result.ci_text())}) · "
                  f"cold run {fmt(result.cold_time)} ({ratio_text(result.ratio)} the warm median)")
    items = "".join(f"<li>{sentence_html(f.text)}</li>" for f in reading.findings if not f.reason)
    stopped = f" · stopped: {escape(result.stopped)}" if result.stopped else ""
    synced = ", ".join(result.synchronized) or "nothing (no device framework active)"
    sections = [section_html(keeper.section_title, keeper.section_html(result, record), keeper.section_class)
                for keeper, record in reading.pairs]
    listed = f"<ul class='cudatime-findings' style='margin:4px 0;padding-left:20px'>{items}</ul>" if items else ""
    runs = (f"<div class='cudatime-runs'>{escape(result.counts_text())} ({result.clock} clock) · "
            f"synchronized: {escape(synced)}{stopped}</div>")
    details = section_html("Details", details_html(reading), "cudatime-section-details")
    return report_html([f"<div class='cudatime-header'>{answer} · {escape(result.device)}</div>", chart, listed, runs,
                        *sections, details], "cudatime-report")
