"""The chart of every run, an SVG ``<img>`` written by hand; the sweep and comparison charts' matplotlib setup.

Each bar is one run, in order: host time (Python busy) in full colour, the rest of the synchronized time (the
device still working) lighter. Past ``MANY_RUNS`` runs a bar would be under a pixel or two and the bars after the
cold run would cover it: the chart then shows the cold run as its own marker beside the warm runs' histogram.
Written by hand (1-3 kB; matplotlib's was 20 kB), it keeps a report light in a saved notebook.

Charts are ``<img src="data:image/svg+xml;base64,…">``: an untrusted notebook (one downloaded from GitHub) loses
inline ``<svg>``, ``<style>`` and ``var(--jp-…)`` rules when reopened, but keeps that. No theme reaches inside an
image, so the chart sets its own background (``PANEL``) under its text: no grey reads at 4.5:1 on both a light
and a dark page. Matplotlib's text is paths, each string an SVG comment beside them, where tests read ticks.

Sizes are CSS pixels (1 pt = 4/3 px). The ``<img>`` follows the panel's width up to its natural size, its text
shrinking with it: so a chart is drawn for a phone, ``CHART_PX`` wide with ``FONT_PX`` text, still 11 px text
shown 200 px wide. Time axes are in the report's units; legends are HTML below the image, naming what it draws.
"""

from __future__ import annotations

import base64
import bisect
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
    tall = [math.log(total / max(host, floor)) / math.log(top / floor) if log else (total - host) / top
            for _, host, total in bars]
    return max(tall) * CHART_HEIGHT_PX * 0.75 >= 1.0  # the plot is about 3/4 of the chart's height


class _Axis:
    """Data to pixels along one axis, linear or log, to a tenth: ``None`` maps to the axis's start (a bar's foot)."""

    def __init__(self, low: float, high: float, start: float, end: float, log: bool = False) -> None:
        self.low, self.high, self.start, self.end, self.log = low, high, start, end, log

    def __call__(self, value: float | None) -> float:
        if value is None or value <= self.low:
            return self.start
        where = (math.log(value / self.low) / math.log(self.high / self.low) if self.log
                 else (value - self.low) / (self.high - self.low))
        return round(self.start + where * (self.end - self.start), 1)  # a tenth of a pixel: what SVG keeps


def _ticks(low: float, high: float, log: bool, most: int) -> list[float]:
    """At most ``most`` round values in [low, high]: 1, 2, 2.5 or 5 times a power of ten apart on a linear axis;
    on a log axis decades (every other one and more where there are many), or 1-2-5 or 1..9 in a short span."""
    if high <= low:
        return [low]
    if log:
        first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
        subs = (1,) if high / low >= 100 else (1, 2, 5) if high / low >= 10 else range(1, 10)
        every = math.ceil((last - first - 1) / most) if high / low >= 100 else 1  # decades within, over most
        values = [sub * 10.0 ** d for d in range(first + (first < math.log10(low)), last + 1, every) for sub in subs]
    else:
        power = 10.0 ** math.floor(math.log10((high - low) / most))
        step = next(s * power for s in (1, 2, 2.5, 5, 10) if s * power * most >= high - low)
        values = [k * step for k in range(math.ceil(low / step), math.floor(high / step) + 1)]
    return [value for value in values if low <= value * (1 + 1e-9) and value <= high * (1 + 1e-9)]


def _marks(result: CudaTimeResult, bars: list[Bar], x: _Axis, y: _Axis) -> tuple[list[str], str]:
    """The runs as SVG elements (``x``, ``y``: data to pixels) and the x label: a stroke per bar, or past
    ``MANY_RUNS`` the cold run's diamond, the warm-up runs' dots and the warm runs' histogram drawn sideways."""
    if not many_runs(result):
        width = 0.85 * (x(2) - x(1))
        strokes: dict[str, list[str]] = {}
        for number, (kind, host, total) in enumerate(bars, 1):
            strokes.setdefault(COLOURS[kind], []).append(f"M{x(number):g} {y(None):g}V{y(host):g}")
            if y(total) < y(host) - 0.05:  # the device still working, where a tenth of a pixel or more
                strokes.setdefault(LIGHTER[kind], []).append(f"M{x(number):g} {y(host):g}V{y(total):g}")
        return [f'<path stroke="{colour}" stroke-width="{width:.2f}" d="{"".join(d)}"/>'
                for colour, d in strokes.items()], "run, in order"
    samples = result.samples
    low, high = min(samples), max(samples)
    high = max(high, low * 1.01, low + 1e-12)  # one bin's width where every run took the same
    edges = [low * (high / low) ** (k / BINS) if y.log and low > 0 else low + (high - low) * k / BINS
             for k in range(BINS + 1)]
    counts = [0] * BINS
    for sample in samples:
        counts[min(max(bisect.bisect_right(edges, sample) - 1, 0), BINS - 1)] += 1
    steps = "".join(f"H{x(HISTOGRAM_X + count / max(counts) * HISTOGRAM_WIDTH):g}V{y(edge):g}"
                    for count, edge in zip(counts, edges[1:]))
    cold, warmups = y(result.cold_time), [y(total) for kind, _, total in bars if kind == "warm-up"]
    dots = "".join(f"M{x(WARMUP_X) - 4:g} {dot:g}a4 4 0 0 0 8 0a4 4 0 0 0-8 0" for dot in warmups)
    return [f'<path id="warm-runs" fill="{COLOURS["warm"]}" d="M{x(HISTOGRAM_X):g} {y(low):g}{steps}'
            f'H{x(HISTOGRAM_X):g}z"/>',
            f'<path id="cold-run" fill="{COLOURS["cold"]}" d="M{x(0):g} {cold - 6:g}l6 6-6 6-6-6z"/>',
            *([f'<path fill="{COLOURS["warm-up"]}" fill-opacity=".8" d="{dots}"/>'] if dots else [])], \
        f"{len(samples):,} warm runs by time"  # as wide as the plot at most


def chart_svg(result: CudaTimeResult) -> bytes:
    """The run chart's SVG (see the module's docstring): CSS pixels to a tenth, the same bytes for the same result."""
    bars = list(_bars(result))
    log, floor, top = _scale(result, bars)
    left, right, upper, lower = MARGINS_PX
    width, height = CHART_PX, CHART_HEIGHT_PX
    base = height - lower
    if many_runs(result):
        x = _Axis(-0.6, HISTOGRAM_X + 0.3 + HISTOGRAM_WIDTH, left, width - right)
        x_ticks = [(0.0, "cold"), (HISTOGRAM_X + HISTOGRAM_WIDTH / 2, "warm")]
    else:
        pad = max(0.7, 0.012 * len(bars))  # room for the first bar's full width beside the axis
        x = _Axis(1 - pad, len(bars) + pad, left, width - right)
        x_ticks = [(n, f"{n:g}") for n in _ticks(1, len(bars), False, 4) if n == int(n)]  # "200" is 29 px wide
    y = _Axis(floor, top, base, upper, log)
    marks, x_label = _marks(result, bars, x, y)
    y_ticks = [(y(v), format_seconds(v) if v > 0 else "0") for v in _ticks(floor, top, log, 5)]
    median = (f'<path id="warm-median" stroke="{MEDIAN}" stroke-width="1.9" stroke-dasharray="7 3" '
              f'd="M{left} {y(result.median):g}H{width - right}"/>') if result.median is not None else ""
    ticks = "".join(f"M{x(v):g} {base}v5" for v, _ in x_ticks) + "".join(f"M{left} {v:g}h-5" for v, _ in y_ticks)
    return "".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="sans-serif" font-size="{FONT_PX:g}" fill="{MUTED}">',
        f'<rect width="100%" height="100%" fill="{PANEL}"/>', *marks, median,
        f'<path stroke="{MUTED}" fill="none" d="M{left} {upper}V{base}H{width - right}{ticks}"/>',
        '<g id="x-ticks" text-anchor="middle">',
        *(f'<text x="{x(v):g}" y="{base + 21}">{label}</text>' for v, label in x_ticks), "</g>",
        '<g id="y-ticks" text-anchor="end">',
        *(f'<text x="{left - 8}" y="{v + 5:g}">{escape(label)}</text>' for v, label in y_ticks), "</g>",
        f'<text text-anchor="middle" x="{(left + width - right) / 2:g}" y="{height - 5}">{x_label}</text>',
        f'<text text-anchor="middle" transform="rotate(-90)" x="{-(upper + base) / 2:g}" y="17">'
        f'{result.clock} time{" (log)" if log else ""}</text></svg>']).encode()


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


def figure(height_px: float) -> tuple[Figure, Axes]:
    """A Figure ``CHART_PX`` wide with one axes (object API, never pyplot: nothing is left open or shown twice)."""
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    with matplotlib.rc_context(CHART_RC):
        fig = Figure(figsize=(CHART_PX / 96, height_px / 96), dpi=96)
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


def time_axis(axes: Axes, log: bool, which: str = "y") -> None:
    """Scale the ``which`` axis of ``axes`` (its data drawn) and label it in the report's units, as ``_ticks`` does.
    Minor ticks stay unlabelled (matplotlib would write bare ``4×10⁻³`` beside ``1 ms``); the other axis has none."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

    (axes.set_yscale if which == "y" else axes.set_xscale)("log" if log else "linear")
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
    """The swept values as the x ticks on a ``log`` or linear axis, thinned so that no two labels touch and
    none passes the chart's right edge (where "1e+06" was cut in half)."""
    axes.set_xscale("log" if log else "linear")
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
    """Horizontal labels under categories 0..n-1, wrapped at spaces to the room each has (never "contiguo / us"),
    or numbers keyed below (``1: label``) past CATEGORY_LINES lines or a word too wide: (the tallest's lines, key)."""
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


def svg_bytes(fig: Figure, extra_bottom_px: float = 0.0, left_px: float = MARGINS_PX[0]) -> bytes:
    """The figure as SVG in fixed margins (``left_px`` for names left of the plot; the figure grows by
    ``extra_bottom_px`` for wrapped tick labels, so the plot keeps its height), the same bytes for the same chart."""
    import matplotlib

    width, height = (size * fig.dpi for size in fig.get_size_inches())
    height += extra_bottom_px
    fig.set_size_inches(width / fig.dpi, height / fig.dpi)
    _, right, top, bottom = MARGINS_PX
    fig.subplots_adjust(left=left_px / width, right=1 - right / width, top=1 - top / height,
                        bottom=(bottom + extra_bottom_px) / height)
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
    return (f"<img alt='{escape(alt)}' src='data:image/svg+xml;base64,{base64.b64encode(svg).decode('ascii')}' "
            f"style='display:block;width:100%;max-width:{width_px}px;height:auto;margin:4px 0'/>")
