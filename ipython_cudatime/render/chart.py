"""The chart of every run, drawn with matplotlib's object API as an SVG ``<img>`` (see ``image``).

Each bar is one run, in order; its full-colour part is host time (Python busy), its
lighter part the rest of the synchronized time (the device still working). The two
parts are two solid colours, not one colour at two opacities. Bars are PolyCollections, not
one patch per bar. Past ``MANY_RUNS`` runs a bar would be narrower than a pixel or two and the
bars after the cold run would cover it: the chart then shows the cold run as its own marker
beside the warm runs' histogram, the median line across it, at the same size however many
runs there were. The legend is HTML below the image (``image.legend_html``), and names the
lighter part only when some bar shows one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from ..units import format_seconds
from .html import MANY_RUNS
from .image import (
    COLOURS,
    FONT_PT,
    LIGHTER,
    MEDIAN,
    PANEL,
    figure,
    img_tag,
    legend_html,
    legend_item,
    place,
    svg_bytes,
    swatch,
    time_axis,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..results.result import CudaTimeResult

Bar = tuple[str, float, float]  # (kind of run, host time, total time)

LOG_RATIO = 20.0  # a cold run this many times the median needs a log axis
CHART_HEIGHT_PX = 210
BINS = 40  # the warm runs' histogram, past MANY_RUNS runs
# x of the cold run's marker is 0, then the warm-up runs' and the histogram's base. Only "cold" and "warm"
# are written under them: three labels of 15 px text do not fit side by side in a 270 px chart, and the
# legend names the warm-up runs' colour.
WARMUP_X = 1.2
HISTOGRAM_X = 2.2
HISTOGRAM_WIDTH = 3.0  # x units the tallest bin spans


def _bars(result: CudaTimeResult) -> Iterator[Bar]:
    """(kind, host, total) per run in order; total is on the statistics clock. Where nothing was
    synchronized, wall beyond host is no device's work (only the harness and the machine's
    noise), so the whole bar is one part: host is total."""
    use_device = result.clock == "device"
    for kind, runs in (("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)):
        for run in runs:
            total = run.device if use_device and run.device is not None else run.wall
            high = max(total, run.host)
            yield kind, min(run.host, total) if result.synchronized else high, high


def many_runs(result: CudaTimeResult) -> bool:
    """Whether the chart shows the warm runs' distribution, not a bar per run: past ``MANY_RUNS``
    a bar is narrower than a pixel or two, and the bars after the cold run would cover it."""
    return 1 + len(result.warmup) + len(result.warm) > MANY_RUNS


def _draw_bars(axes: Axes, kinds: Sequence[str], lows: Sequence[float], highs: Sequence[float],
               palette: Mapping[str, str]) -> None:
    """Bars 1..n from ``lows`` to ``highs``, coloured by kind of run from ``palette``: one
    PolyCollection, not one patch per bar."""
    from matplotlib.collections import PolyCollection

    boxes = [[(x - 0.425, lo), (x + 0.425, lo), (x + 0.425, hi), (x - 0.425, hi)]
             for x, (lo, hi) in enumerate(zip(lows, highs), start=1)]
    axes.add_collection(PolyCollection(boxes, facecolors=[palette[k] for k in kinds], linewidths=0, rasterized=True))


def _draw_runs(axes: Axes, bars: list[Bar], floor: float) -> None:
    """A bar per run, in order: host time in full colour, the device still working lighter."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    kinds = [kind for kind, _, _ in bars]
    tops_of_host = [max(host, floor) for _, host, _ in bars]
    _draw_bars(axes, kinds, [floor] * len(bars), tops_of_host, COLOURS)
    _draw_bars(axes, kinds, tops_of_host, [total for _, _, total in bars], LIGHTER)
    pad = max(0.7, 0.012 * len(bars))  # room for the first bar's full width beside the axis
    axes.set_xlim(1 - pad, len(bars) + pad)
    axes.xaxis.set_major_locator(MaxNLocator(4, integer=True, min_n_ticks=1))  # "200" is 29 px wide
    axes.xaxis.set_major_formatter(ScalarFormatter())
    axes.set_xlabel("run, in order", fontsize=FONT_PT)


def _draw_distribution(axes: Axes, result: CudaTimeResult, bars: list[Bar], log: bool) -> None:
    """The cold run as its own marker at x=0, the warm-up runs as markers at ``WARMUP_X``, and the
    warm runs as a histogram from ``HISTOGRAM_X`` sideways (how many took each time, in ``BINS`` bins,
    log-spaced on a log axis): nothing covers the cold run, and the median line crosses the histogram."""
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
    """The process's one chart figure and its axes, made on first use and reused by every chart.

    Reusing one figure keeps the axes' tick artists and text layout, which is most of the
    drawing cost, within the 150 ms a report may take. It is never registered with pyplot, so
    no figure is ever "open"; only the last chart's data stays in it.
    """
    fig, axes = figure(CHART_HEIGHT_PX)
    place(fig)
    return fig, axes


def _emptied() -> tuple[Figure, Axes]:
    """The chart, emptied of the previous chart's data."""
    fig, axes = _chart()
    for artist in [*axes.collections, *axes.lines, *axes.patches, *axes.artists]:
        artist.remove()
    return fig, axes


def _scale(result: CudaTimeResult, bars: list[Bar]) -> tuple[bool, float, float]:
    """(log, floor, top): the value axis of these bars."""
    values = [value for _, host, total in bars for value in (host, total)]
    log = bool(result.median and max(values) / result.median > LOG_RATIO)
    floor = min((value for value in values if value > 0), default=1e-9) / 2 if log else 0.0
    return log, floor, max(values) * (3.0 if log else 1.25)


def device_part_shown(result: CudaTimeResult) -> bool:
    """Whether some bar's lighter part (the device still working after Python returned) is at
    least a pixel tall: the legend names only what the chart draws. A cell that synchronized
    nothing has none, nor does a chart of many runs (it draws no bars)."""
    if many_runs(result):
        return False
    bars = list(_bars(result))
    log, floor, top = _scale(result, bars)
    pixels = CHART_HEIGHT_PX * 0.75  # about the plot's height
    if log:
        tall = [math.log(total / max(host, floor)) / math.log(top / floor) for _, host, total in bars]
    else:
        tall = [(total - host) / top for _, host, total in bars]
    return max(tall) * pixels >= 1.0


def chart_svg(result: CudaTimeResult) -> bytes:
    """SVG bytes of the run chart: a bar per run, or past ``MANY_RUNS`` runs their distribution."""
    from matplotlib.ticker import NullLocator

    bars = list(_bars(result))
    log, floor, top = _scale(result, bars)
    fig, axes = _emptied()
    if many_runs(result):
        _draw_distribution(axes, result, bars, log)
    else:
        _draw_runs(axes, bars, floor)
    axes.set_yscale("log" if log else "linear")
    axes.set_ylim(floor if log else 0.0, top)
    if result.median is not None:
        axes.axhline(result.median, color=MEDIAN, linestyle="--", linewidth=1.4, zorder=3, gid="warm-median")
    axes.xaxis.set_minor_locator(NullLocator())
    time_axis(axes, log)
    axes.set_ylabel(f"{result.clock} time" + (" (log)" if log else ""), fontsize=FONT_PT)
    return svg_bytes(fig)


def chart_html(result: CudaTimeResult) -> str:
    """The run chart as an ``<img>`` and its legend; for a cell that ran once, a line: a chart of
    one bar would take 230 px to say what the header says."""
    if not result.warmup and not result.warm:
        return "<div class='cudatime-chart-note'>no chart: the cell ran once (its time is above)</div>"
    return img_tag(chart_svg(result), "cudatime: every run, in order") + run_legend_html(result)


def run_legend_html(result: CudaTimeResult) -> str:
    """The run chart's legend: colours per kind of run, the median line (as drawn, on the chart's
    own background), and the host and device parts of a bar where some bar shows a device part."""
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
    return legend_html(items)
