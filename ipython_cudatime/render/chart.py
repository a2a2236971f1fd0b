"""The chart of every run, drawn with matplotlib's object API as an SVG ``<img>``.

Each bar is one run, in order: host time (Python busy) in full colour, the rest of the synchronized
time (the device still working) in a lighter solid colour, as PolyCollections, not a patch per bar.
Past ``MANY_RUNS`` runs a bar would be under a pixel or two and the bars after the cold run would
cover it: the chart then shows the cold run as its own marker beside the warm runs' histogram.

Charts are ``<img src="data:image/svg+xml;base64,…">``: an untrusted notebook (one downloaded from
GitHub) loses inline ``<svg>``, ``<style>`` and ``var(--jp-…)`` rules when reopened, but keeps that.
No theme reaches inside an image, so the chart sets its own background (``PANEL``) with its text: no
grey reads at 4.5:1 on both a light and a dark page. Text is drawn as paths (no font needed), with each
string as an SVG comment beside them (``<!-- 1 ms -->``), where tests read the tick labels.

Sizes are CSS pixels (1 pt = 4/3 px). The ``<img>`` follows the panel's width up to its natural size,
its text shrinking with it: so a chart is drawn for a phone, ``CHART_PX`` wide with ``FONT_PX`` text,
still 11 px text shown 200 px wide (drawn 500 px wide and shrunk, its text was 6.1-6.7 px there). Time
axes are in the report's units; legends are HTML below the image, listing only what the chart draws.
"""

from __future__ import annotations

import base64
import functools
import io
import math
import textwrap
from collections.abc import Collection, Iterable, Iterator, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from ..units import format_seconds

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..results.result import CudaTimeResult


Bar = tuple[str, float, float]  # (kind of run, host time, total time)
LOG_RATIO = 20.0  # a cold run this many times the median needs a log axis
CHART_HEIGHT_PX = 210
# runs listed one by one and drawn a bar each; beyond, their distribution (``spread_html``, and a histogram
# in the chart): a report of 1,000 runs stays under 60 KB, and one of 100,000 as large
MANY_RUNS = 200
BINS = 40  # the warm runs' histogram, past MANY_RUNS runs
# x of the cold run's marker is 0, then the warm-up runs' and the histogram's base; only "cold" and "warm" are
# written under them (three 15 px labels do not fit a 270 px chart; the legend names the warm-up runs' colour)
WARMUP_X = 1.2
HISTOGRAM_X = 2.2
HISTOGRAM_WIDTH = 3.0  # x units the tallest bin spans


def _bars(result: CudaTimeResult) -> Iterator[Bar]:
    """(kind, host, total) per run in order, total on the statistics clock. Where nothing was synchronized,
    wall beyond host is no device's work (the harness, the machine's noise): the bar is one part."""
    use_device = result.clock == "device"
    for kind, runs in (("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)):
        for run in runs:
            total = run.device if use_device and run.device is not None else run.wall
            high = max(total, run.host)
            yield kind, min(run.host, total) if result.synchronized else high, high


def many_runs(result: CudaTimeResult) -> bool:
    """Whether the chart shows the warm runs' distribution, not a bar per run (see ``MANY_RUNS``)."""
    return 1 + len(result.warmup) + len(result.warm) > MANY_RUNS


def _draw_runs(axes: Axes, bars: list[Bar], floor: float) -> None:
    from matplotlib.collections import PolyCollection
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    kinds = [kind for kind, _, _ in bars]
    tops_of_host = [max(host, floor) for _, host, _ in bars]
    for palette, lows, highs in ((COLOURS, [floor] * len(bars), tops_of_host),
                                 (LIGHTER, tops_of_host, [total for _, _, total in bars])):
        boxes = [[(x - 0.425, lo), (x + 0.425, lo), (x + 0.425, hi), (x - 0.425, hi)]
                 for x, (lo, hi) in enumerate(zip(lows, highs), start=1)]
        axes.add_collection(PolyCollection(boxes, facecolors=[palette[k] for k in kinds], linewidths=0,
                                           rasterized=True))
    pad = max(0.7, 0.012 * len(bars))  # room for the first bar's full width beside the axis
    axes.set_xlim(1 - pad, len(bars) + pad)
    axes.xaxis.set_major_locator(MaxNLocator(4, integer=True, min_n_ticks=1))  # "200" is 29 px wide
    axes.xaxis.set_major_formatter(ScalarFormatter())
    axes.set_xlabel("run, in order", fontsize=FONT_PT)


def _draw_distribution(axes: Axes, result: CudaTimeResult, bars: list[Bar], log: bool) -> None:
    """The cold run and the warm-up runs as markers, the warm runs as a histogram drawn sideways (log-spaced
    bins on a log axis), which the median line crosses."""
    import numpy

    totals = {kind: [total for k, _, total in bars if k == kind] for kind in ("cold", "warm-up")}
    samples = numpy.asarray(result.samples)
    low, high = float(samples.min()), float(samples.max())
    high = max(high, low * 1.01, low + 1e-12)  # one bin's width where every run took the same
    edges = numpy.geomspace(low, high, BINS + 1) if log and low > 0 else numpy.linspace(low, high, BINS + 1)
    counts, _ = numpy.histogram(samples, edges)
    axes.stairs(HISTOGRAM_X + counts / counts.max() * HISTOGRAM_WIDTH, edges, baseline=HISTOGRAM_X,
                orientation="horizontal", fill=True, color=COLOURS["warm"], linewidth=0, gid="warm-runs")
    axes.plot([0], totals["cold"], "D", markersize=9, color=COLOURS["cold"], gid="cold-run")
    if totals["warm-up"]:
        axes.plot([WARMUP_X] * len(totals["warm-up"]), totals["warm-up"], "o", markersize=6, color=COLOURS["warm-up"],
                  alpha=0.8, gid="warm-up-runs")
    axes.set_xticks([0, HISTOGRAM_X + HISTOGRAM_WIDTH / 2], ["cold", "warm"])
    axes.set_xlim(-0.6, HISTOGRAM_X + 0.3 + HISTOGRAM_WIDTH)
    axes.set_xlabel(f"{len(samples):,} warm runs by time", fontsize=FONT_PT)  # as wide as the plot at most


@functools.cache
def _chart() -> tuple[Figure, Axes]:
    """The process's one run chart, reused (emptied): keeping the axes' ticks and text layout, most of the
    drawing cost, keeps a report within 150 ms. Never registered with pyplot, so no figure is "open"."""
    fig, axes = figure(CHART_HEIGHT_PX)
    place(fig)
    return fig, axes


def _scale(result: CudaTimeResult, bars: list[Bar]) -> tuple[bool, float, float]:
    """(log, floor, top): the value axis of these bars."""
    values = [value for _, host, total in bars for value in (host, total)]
    log = bool(result.median and max(values) / result.median > LOG_RATIO)
    floor = min((value for value in values if value > 0), default=1e-9) / 2 if log else 0.0
    return log, floor, max(values) * (3.0 if log else 1.25)


def device_part_shown(result: CudaTimeResult) -> bool:
    """Whether some bar's device part is at least a pixel tall: the legend names only what the chart draws."""
    if many_runs(result):
        return False
    bars = list(_bars(result))
    log, floor, top = _scale(result, bars)
    pixels = CHART_HEIGHT_PX * 0.75  # about the plot's height
    tall = [math.log(total / max(host, floor)) / math.log(top / floor) if log else (total - host) / top
            for _, host, total in bars]
    return max(tall) * pixels >= 1.0


def chart_svg(result: CudaTimeResult) -> bytes:
    """SVG bytes of the run chart: a bar per run, or past ``MANY_RUNS`` runs their distribution."""
    bars = list(_bars(result))
    log, floor, top = _scale(result, bars)
    fig, axes = _chart()
    for artist in [*axes.collections, *axes.lines, *axes.patches, *axes.artists]:
        artist.remove()  # the previous chart's data
    if many_runs(result):
        _draw_distribution(axes, result, bars, log)
    else:
        _draw_runs(axes, bars, floor)
    axes.set_yscale("log" if log else "linear")
    axes.set_ylim(floor, top)  # 0 on a linear axis
    if result.median is not None:
        axes.axhline(result.median, color=MEDIAN, linestyle="--", linewidth=1.4, zorder=3, gid="warm-median")
    time_axis(axes, log)
    axes.set_ylabel(f"{result.clock} time" + (" (log)" if log else ""), fontsize=FONT_PT)
    return svg_bytes(fig)


def chart_html(result: CudaTimeResult) -> str:
    """The run chart and its legend (the median line as drawn, on the chart's own background); for a cell
    that ran once, a line: one bar would say what the header says."""
    if not result.warmup and not result.warm:
        return "<div class='cudatime-chart-note'>no chart: the cell ran once (its time is above)</div>"
    kinds = [("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)]
    items = [legend_item(swatch(COLOURS[kind]) + f"{kind} run") for kind, runs in kinds if runs]
    if many_runs(result):
        items[-1] = legend_item(swatch(COLOURS["warm"]) + f"warm runs ({len(result.warm):,}), as a histogram")
    if result.median is not None:
        items.append(legend_item(f"<span style='color:{MEDIAN};background:{PANEL};padding:0 2px'>– –</span> warm "
                                 f"median {escape(format_seconds(result.median))}"))
    if device_part_shown(result):
        items.append(legend_item(swatch(COLOURS["warm"], 0) + swatch(LIGHTER["warm"])
                                 + "each bar: host (Python busy), then the device still working"))
    return img_tag(chart_svg(result), "cudatime: every run, in order") + legend_html(items)


REPORT_PX = 600  # the width of every report
CHART_PX = 270  # the natural width of its charts, and their widest
FONT_PX = 15.0  # chart text at natural size: 11.1 px shown 200 px wide
FONT_PT = FONT_PX * 0.75  # the same in points, as matplotlib takes it (1 pt = 4/3 px)
CHAR_PX = 0.62 * FONT_PX  # the width of an average character of chart text (DejaVu Sans), for fitting labels
MARGINS_PX = (94, 13, 10, 44)  # left (tick labels and the y label), right, top, bottom (ticks and the x label)
PANEL = "#ffffff"  # the chart's own background, under its text
MUTED = "#666666"  # axes, ticks and labels: 5.7:1 on the panel (WCAG AA asks 4.5:1)
MEDIAN = "#222222"  # the warm median's line, over bars and histograms too (4.6:1 on the warm blue)
COLOURS = {"cold": "#e0504a", "warm-up": "#e8a030", "warm": "#3f8fd6"}
LIGHTER = {"cold": "#f0a6a2", "warm-up": "#f3cf97", "warm": "#9fc7ea"}  # same hues, half-way to white
SERIES = ("#3f8fd6", "#e8a030", "#4bab5a", "#e0504a", "#9a75c9", "#3fb3b3")  # sweep lines
# Text properties for what a user wrote (labels, swept values, loaded names) in a chart: drawn as
# typed, never parsed as mathtext (``$\\nosuch$`` would raise) or sent to TeX (``text.usetex``).
USER_TEXT = {"parse_math": False, "usetex": False}
# Settings a user's plots may change that would break ours (with TeX on, and none installed, a report would
# raise): figures are made and saved under these. Keys typed Any: matplotlib 3.11 types them as a Literal.
CHART_RC: dict[Any, Any] = {"text.usetex": False}


def figure(height_px: float, width_px: float = CHART_PX) -> tuple[Figure, Axes]:
    """A Figure with one axes (object API, never pyplot: nothing is left open or shown twice)."""
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    with matplotlib.rc_context(CHART_RC):
        fig = Figure(figsize=(width_px / 96, height_px / 96), dpi=96)
        FigureCanvasSVG(fig)
        axes = fig.add_subplot()
    fig.patch.set_facecolor(PANEL)
    axes.patch.set_alpha(0.0)
    axes.tick_params(which="both", labelsize=FONT_PT, colors=MUTED, labelcolor=MUTED)
    axes.xaxis.label.set_color(MUTED)
    axes.yaxis.label.set_color(MUTED)
    for side, spine in axes.spines.items():
        spine.set_visible(side in ("left", "bottom"))
        spine.set_color(MUTED)
    return fig, axes


def place(fig: Figure, extra_bottom_px: float = 0.0, left_px: float = MARGINS_PX[0]) -> None:
    """Fixed margins in pixels (``MARGINS_PX``; ``left_px`` for names left of the plot), ``extra_bottom_px``
    more below for wrapped tick labels (the figure grows by as much, so the plot keeps its height)."""
    width, height = (size * fig.dpi for size in fig.get_size_inches())
    height += extra_bottom_px
    fig.set_size_inches(width / fig.dpi, height / fig.dpi)
    _, right, top, bottom = MARGINS_PX
    fig.subplots_adjust(left=left_px / width, right=1 - right / width, top=1 - top / height,
                        bottom=(bottom + extra_bottom_px) / height)


def time_axis(axes: Axes, log: bool, which: str = "y") -> None:
    """Label the ``which`` axis of ``axes`` (its data drawn) in the report's units: a few round
    values from 0 on a linear axis; on a log axis decades, or 1-2-5 steps within a short span.
    Minor ticks stay unlabelled (matplotlib would write them as bare ``4×10⁻³`` beside ``1 ms``);
    the other axis (runs, swept values, rows) has none."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

    axis, other = (axes.yaxis, axes.xaxis) if which == "y" else (axes.xaxis, axes.yaxis)
    other.set_minor_locator(NullLocator())
    most = 5 if which == "y" else 3  # side by side, "100 ms" labels need about 60 px each
    if log:
        low, high = sorted(axes.get_ylim() if which == "y" else axes.get_xlim())
        span = high / low if low > 0 else math.inf
        decades = 100 if which == "y" else 10  # 15 px labels: 6 fit up a 160 px plot, 3 across it
        subs = (1.0,) if span >= decades else (1.0, 2.0, 5.0) if span >= 10 else tuple(range(1, 10))
        axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=most if which == "x" else None))
    else:
        axes.set_ylim(bottom=0.0) if which == "y" else axes.set_xlim(left=0.0)
        axis.set_major_locator(MaxNLocator(most))
    axis.set_major_formatter(FuncFormatter(lambda value, _: format_seconds(value) if value > 0 else "0"))
    axis.set_minor_formatter(NullFormatter())


VALUE_MARGIN = 0.1  # of the swept values' span, beyond them on either side of the x axis


def value_ticks(axes: Axes, values: Iterable[float], log: bool) -> None:
    """The swept values as the x ticks, thinned so that no two labels touch and none passes the
    chart's right edge (where "1e+06" was cut in half)."""
    values = sorted(set(values))
    where = [math.log(v) if log else v for v in values]
    span = (where[-1] - where[0]) or 1.0
    plot = CHART_PX - MARGINS_PX[0] - MARGINS_PX[1]
    axes.margins(x=VALUE_MARGIN)
    scale = plot / (span * (1 + 2 * VALUE_MARGIN))
    kept, last = [], None
    for value, position in zip(values, where):
        label = f"{value:g}"
        # a label is centred on its tick: the next may start half a label width past the last one's end
        spaced = last is None or (position - last[0]) * scale >= (len(label) + len(last[1])) / 2 * CHAR_PX + CHAR_PX
        right = (position - where[0] + VALUE_MARGIN * span) * scale + len(label) / 2 * CHAR_PX
        if spaced and right <= plot + MARGINS_PX[1]:
            kept.append(value)
            last = (position, label)
    axes.set_xticks(kept, [f"{v:g}" for v in kept])


CATEGORY_LINES = 3  # wrapped category labels of more lines than this become numbers, keyed below the chart


def category_ticks(axes: Axes, labels: Sequence[str]) -> tuple[int, list[str]]:
    """Horizontal labels under categories 0..n-1, wrapped at spaces to the room each has (never "contiguo /
    us"); numbers instead, keyed below (``1: label``), past CATEGORY_LINES lines or where a word is too wide.
    Returns the lines the tallest takes, and the key."""
    room = (CHART_PX - MARGINS_PX[0] - MARGINS_PX[1]) / max(len(labels), 1)
    chars = max(3, int(room / CHAR_PX))  # CHAR_PX is wide: a word 2 characters longer still fits
    wrapped = [textwrap.wrap(label, chars, break_long_words=False) or [""] for label in labels]
    key = []
    widest = max(len(line) for lines in wrapped for line in lines)
    if max(len(lines) for lines in wrapped) > CATEGORY_LINES or widest > chars + 2:
        key = [f"{number}: {label}" for number, label in enumerate(labels, 1)]
        wrapped = [[str(number)] for number in range(1, len(labels) + 1)]
    axes.set_xticks(range(len(labels)), ["\n".join(lines) for lines in wrapped], **USER_TEXT)
    return max(len(lines) for lines in wrapped), key


def svg_bytes(fig: Figure) -> bytes:
    """The figure as SVG, the same bytes for the same chart: no date, a fixed salt for matplotlib's ids."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({**CHART_RC, "svg.hashsalt": "ipython_cudatime"}):  # ticks are made as it draws
        fig.savefig(buffer, format="svg", facecolor=PANEL, dpi=144, metadata={"Date": None})
    return buffer.getvalue()


def swatch(colour: str, gap_px: float = 4) -> str:
    """A small square of ``colour``, for a legend entry (``gap_px`` before what follows)."""
    return (f"<span style='display:inline-block;width:11px;height:11px;background:{colour};"
            f"margin-right:{gap_px}px;vertical-align:-1px'></span>")


def legend_item(content: str) -> str:
    """One legend entry, moved to the next line whole (its swatch beside its label), wrapped only when wider."""
    return f"<span style='display:inline-block;max-width:100%;margin-right:14px'>{content}</span>"


def legend_html(items: Collection[str], key: Iterable[str] = ()) -> str:
    """A chart's legend below it: ``items`` (HTML) on wrapping lines, then the ``key`` (text), one a line."""
    lines = "".join(f"<div>{escape(line)}</div>" for line in key)
    return (f"<div class='cudatime-legend' style='font-size:90%;line-height:1.6;overflow-wrap:anywhere'>"
            f"{' '.join(items)}{lines}</div>") if items or lines else ""


def img_tag(svg: bytes, alt: str, width_px: float = CHART_PX) -> str:
    """An ``<img>`` showing ``svg`` at its natural width, narrower when the panel is."""
    source = "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
    return (f"<img alt='{escape(alt)}' src='{source}' "
            f"style='display:block;width:100%;max-width:{width_px}px;height:auto;margin:4px 0'/>")
