"""The chart of every run, drawn with matplotlib's object API as an SVG ``<img>`` (see ``image``).

Each bar is one run, in order; its full-colour part is host time (Python busy), its
lighter part the rest of the synchronized time (the device still working). The two
parts are two solid colours, not one colour at two opacities, so that they look the
same on a light and a dark page. Bars are PolyCollections (or, for hundreds of runs,
stepped areas), not one patch per bar, so 1,000 runs draw fast. The legend is HTML below
the image (``image.legend_html``), and names the lighter part only when some bar shows one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from ..units import format_seconds
from .image import (
    COLOURS,
    FONT_PT,
    LIGHTER,
    MUTED,
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

    from ..result import CudaTimeResult

Bar = tuple[str, float, float]  # (kind of run, host time, total time)

LOG_RATIO = 20.0  # a cold run this many times the median needs a log axis
CHART_HEIGHT_PX = 230
MANY_BARS = 200  # beyond this, bars of one kind merge into one stepped area (cheaper, same picture)
CHART_BARS = 2_000  # beyond this many runs, consecutive runs share a bar: 600 px cannot show more


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


def runs_per_bar(count: int) -> int:
    """How many runs one bar stands for in a chart of ``count`` runs: 1 up to ``CHART_BARS``."""
    return -(-count // CHART_BARS)


def summarised(bars: list[Bar]) -> tuple[list[Bar], list[int] | None]:
    """(bars, the first run of each) with at most about ``CHART_BARS`` bars, so that drawing time
    and the report stay the same size past what the chart can show (``-n 100000``). Consecutive
    runs of one kind share a bar spanning what their own bars would show at that width: from
    the lowest host time to the highest total. None for the first runs when nothing is merged."""
    from itertools import groupby

    step = runs_per_bar(len(bars))
    if step == 1:
        return bars, None
    merged: list[Bar] = []
    starts: list[int] = []
    run = 1
    for kind, same in groupby(bars, key=lambda bar: bar[0]):
        group = list(same)
        for at in range(0, len(group), step):
            chunk = group[at:at + step]
            merged.append((kind, min(host for _, host, _ in chunk), max(total for _, _, total in chunk)))
            starts.append(run + at)
        run += len(group)
    return merged, starts


def _run_axis(axes: Axes, starts: list[int] | None) -> None:
    """The x axis in run numbers: the bars' own numbers, or round run numbers placed on the bars
    that hold them when bars were merged (``starts``: each bar's first run)."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, MaxNLocator, ScalarFormatter

    if starts is None:
        axes.xaxis.set_major_locator(MaxNLocator(8, integer=True, min_n_ticks=1))
        axes.xaxis.set_major_formatter(ScalarFormatter())
        return
    import numpy

    runs = [run for run in MaxNLocator(8, integer=True).tick_values(1, starts[-1]) if 1 <= run <= starts[-1]]
    axes.xaxis.set_major_locator(FixedLocator(numpy.interp(runs, starts, range(1, len(starts) + 1)).tolist()))
    axes.xaxis.set_major_formatter(FixedFormatter([f"{run:,.0f}" for run in runs]))


def _draw_bars(axes: Axes, kinds: Sequence[str], lows: Sequence[float], highs: Sequence[float],
               palette: Mapping[str, str]) -> None:
    """Bars 1..n from ``lows`` to ``highs``, coloured by kind of run from ``palette``."""
    from itertools import groupby

    from matplotlib.collections import PolyCollection
    from matplotlib.patches import StepPatch

    if len(kinds) <= MANY_BARS:
        boxes = [[(x - 0.425, lo), (x + 0.425, lo), (x + 0.425, hi), (x - 0.425, hi)]
                 for x, (lo, hi) in enumerate(zip(lows, highs), start=1)]
        axes.add_collection(PolyCollection(boxes, facecolors=[palette[k] for k in kinds], linewidths=0,
                                          rasterized=True))
        return
    start = 0
    for kind, group in groupby(kinds):
        end = start + len(list(group))
        if kind == "warm":
            # add_artist, not stairs(): the limits are set by hand, and updating them from a
            # stepped path of 1,000 steps is most of the drawing time.
            edges = [x + 0.5 for x in range(start, end + 1)]
            # baseline: an array, one per step (StepPatch's documented use); matplotlib's stubs say float
            axes.add_artist(StepPatch(highs[start:end], edges,
                                      baseline=lows[start:end],  # type: ignore[arg-type, unused-ignore]
                                      fill=True, color=palette[kind], linewidth=0, rasterized=True))
        else:  # the few cold and warm-up runs keep a visible width however many runs follow
            axes.vlines(range(start + 1, end + 1), lows[start:end], highs[start:end], colors=palette[kind],
                        linewidth=5, rasterized=True)
        start = end


@functools.cache
def _chart() -> tuple[Figure, Axes]:
    """The process's one chart figure and its axes, made on first use and reused by every chart.

    Reusing one figure keeps the axes' tick artists and text layout, which is most of the
    drawing cost (half of it at 1,000 runs), within the 150 ms a report may take. It is
    never registered with pyplot, so no figure is ever "open"; only the last chart's data
    stays in it.
    """
    fig, axes = figure(CHART_HEIGHT_PX)
    place(fig)
    axes.set_xlabel("run, in order", fontsize=FONT_PT)
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
    nothing has none."""
    bars = list(_bars(result))
    log, floor, top = _scale(result, bars)
    pixels = CHART_HEIGHT_PX * 0.75  # about the plot's height
    if log:
        tall = [math.log(total / max(host, floor)) / math.log(top / floor) for _, host, total in bars]
    else:
        tall = [(total - host) / top for _, host, total in bars]
    return max(tall) * pixels >= 1.0


def chart_svg(result: CudaTimeResult) -> bytes:
    """SVG bytes of the run chart."""
    from matplotlib.ticker import NullLocator

    bars, starts = summarised(list(_bars(result)))
    kinds = [kind for kind, _, _ in bars]
    hosts = [host for _, host, _ in bars]
    totals = [total for _, _, total in bars]
    log, floor, top = _scale(result, bars)

    fig, axes = _emptied()
    tops_of_host = [max(host, floor) for host in hosts]
    _draw_bars(axes, kinds, [floor] * len(bars), tops_of_host, COLOURS)
    _draw_bars(axes, kinds, tops_of_host, totals, LIGHTER)
    axes.set_yscale("log" if log else "linear")
    pad = max(0.7, 0.012 * len(bars))  # room for the first bar's full width beside the axis
    axes.set_xlim(1 - pad, len(bars) + pad)
    axes.set_ylim(floor if log else 0.0, top)
    if result.median is not None:
        axes.axhline(result.median, color=MUTED, linestyle="--", linewidth=1.2)
    _run_axis(axes, starts)
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
    """The run chart's legend: colours per kind of run, the median line, and the host and device
    parts of a bar where some bar shows a device part."""
    kinds = [("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)]
    items = [legend_item(swatch(COLOURS[kind]) + f"{kind} run") for kind, runs in kinds if runs]
    if result.median is not None:
        items.append(legend_item(f"<span style='color:{MUTED}'>– –</span> warm median "
                                 f"{escape(format_seconds(result.median))}"))
    if device_part_shown(result):
        items.append(legend_item(swatch(COLOURS["warm"], 0) + swatch(LIGHTER["warm"])
                                 + "each bar: host (Python busy), then the device still working"))
    step = runs_per_bar(1 + len(result.warmup) + len(result.warm))
    if step > 1:
        items.append(legend_item(f"each bar: up to {step:,} runs in a row, from their lowest host time to their "
                                 "highest total"))
    return legend_html(items)
