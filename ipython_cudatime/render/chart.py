"""The chart of every run, drawn with matplotlib's object API as an SVG ``<img>`` (see ``image``).

Each bar is one run, in order; its full-colour part is host time (Python busy), its
lighter part the rest of the synchronized time (the device still working). The two
parts are two solid colours, not one colour at two opacities, so that they look the
same on a light and a dark page. Bars are PolyCollections (or, for hundreds of runs,
stepped areas), not one patch per bar, so 1,000 runs draw fast. The legend is HTML
(``legend_html``): its swatch and label never wrap apart, and it costs nothing to draw.
"""

import functools
from html import escape

from ..units import format_seconds
from .image import COLOURS, FONT_PT, LIGHTER, MUTED, REPORT_PX, figure, img_tag, svg_bytes

LOG_RATIO = 20.0  # a cold run this many times the median needs a log axis
CHART_HEIGHT_PX = 230
MANY_BARS = 200  # beyond this, bars of one kind merge into one stepped area (cheaper, same picture)
CHART_BARS = 2_000  # beyond this many runs, consecutive runs share a bar: 600 px cannot show more


def _bars(result):
    """(kind, host, total) per run in order; total is on the statistics clock."""
    use_device = result.clock == "device"
    for kind, runs in (("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)):
        for run in runs:
            total = run.device if use_device and run.device is not None else run.wall
            yield kind, min(run.host, total), max(total, run.host)


def runs_per_bar(count):
    """How many runs one bar stands for in a chart of ``count`` runs: 1 up to ``CHART_BARS``."""
    return -(-count // CHART_BARS)


def summarised(bars):
    """(bars, the first run of each) with at most about ``CHART_BARS`` bars, so that drawing time
    and the report stay the same size past what the chart can show (``-n 100000``). Consecutive
    runs of one kind share a bar spanning what their own bars would show at that width: from
    the lowest host time to the highest total. None for the first runs when nothing is merged."""
    from itertools import groupby

    step = runs_per_bar(len(bars))
    if step == 1:
        return bars, None
    merged, starts, run = [], [], 1
    for kind, group in groupby(bars, key=lambda bar: bar[0]):
        group = list(group)
        for at in range(0, len(group), step):
            chunk = group[at:at + step]
            merged.append((kind, min(host for _, host, _ in chunk), max(total for _, _, total in chunk)))
            starts.append(run + at)
        run += len(group)
    return merged, starts


def _run_axis(axes, starts):
    """The x axis in run numbers: the bars' own numbers, or round run numbers placed on the bars
    that hold them when bars were merged (``starts``: each bar's first run)."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, MaxNLocator, ScalarFormatter

    if starts is None:
        axes.xaxis.set_major_locator(MaxNLocator(8, integer=True, min_n_ticks=1))
        axes.xaxis.set_major_formatter(ScalarFormatter())
        return
    import numpy

    runs = [run for run in MaxNLocator(8, integer=True).tick_values(1, starts[-1]) if 1 <= run <= starts[-1]]
    axes.xaxis.set_major_locator(FixedLocator(numpy.interp(runs, starts, range(1, len(starts) + 1))))
    axes.xaxis.set_major_formatter(FixedFormatter([f"{run:,.0f}" for run in runs]))


def _draw_bars(axes, kinds, lows, highs, palette):
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
            axes.add_artist(StepPatch(highs[start:end], edges, baseline=lows[start:end], fill=True,
                                      color=palette[kind], linewidth=0, rasterized=True))
        else:  # the few cold and warm-up runs keep a visible width however many runs follow
            axes.vlines(range(start + 1, end + 1), lows[start:end], highs[start:end], colors=palette[kind],
                        linewidth=5, rasterized=True)
        start = end


@functools.cache
def _chart_axes():
    """The process's one chart axes, made on first use and reused by every chart.

    Reusing one figure keeps the axes' tick artists and text layout, which is most of the
    drawing cost (half of it at 1,000 runs), within the 150 ms a report may take. It is
    never registered with pyplot, so no figure is ever "open"; only the last chart's data
    stays in it.
    """
    fig, axes = figure(CHART_HEIGHT_PX)
    fig.subplots_adjust(left=0.15, right=0.98, top=0.95, bottom=0.2)
    axes.set_xlabel("run, in order", fontsize=FONT_PT)
    return axes


def _axes():
    """The chart axes, emptied of the previous chart's data."""
    axes = _chart_axes()
    for artist in [*axes.collections, *axes.lines, *axes.patches, *axes.artists]:
        artist.remove()
    return axes


def chart_svg(result):
    """SVG bytes of the run chart."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

    bars, starts = summarised(list(_bars(result)))
    kinds = [kind for kind, _, _ in bars]
    hosts = [host for _, host, _ in bars]
    totals = [total for _, _, total in bars]
    log = bool(result.median) and max(totals) / result.median > LOG_RATIO
    floor = min(value for value in hosts + totals if value > 0) / 2 if log else 0.0

    axes = _axes()
    tops_of_host = [max(host, floor) for host in hosts]
    _draw_bars(axes, kinds, [floor] * len(bars), tops_of_host, COLOURS)
    _draw_bars(axes, kinds, tops_of_host, totals, LIGHTER)
    axes.set_yscale("log" if log else "linear")
    if log:
        axes.yaxis.set_minor_locator(NullLocator())
    pad = max(0.7, 0.012 * len(bars))  # room for the first bar's full width beside the axis
    axes.set_xlim(1 - pad, len(bars) + pad)
    axes.set_ylim(floor if log else 0.0, max(totals) * (3.0 if log else 1.25))
    if result.median is not None:
        axes.axhline(result.median, color=MUTED, linestyle="--", linewidth=1.2)
    _run_axis(axes, starts)
    axes.yaxis.set_major_locator(MaxNLocator(5) if not log else axes.yaxis.get_major_locator())
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: format_seconds(value) if value > 0 else "0"))
    axes.set_ylabel(f"{result.clock} time" + (" (log)" if log else ""), fontsize=FONT_PT)
    return svg_bytes(axes.figure)


def chart_html(result):
    """The run chart as an ``<img>`` and its legend."""
    return img_tag(chart_svg(result), "cudatime: every run, in order", REPORT_PX) + legend_html(result)


def _item(content):
    """One legend entry that never wraps inside itself: its swatch stays beside its label."""
    return f"<span style='white-space:nowrap;margin-right:14px'>{content}</span>"


def _swatch(colour):
    return (f"<span style='display:inline-block;width:11px;height:11px;background:{colour};"
            "margin-right:4px;vertical-align:-1px'></span>")


def legend_html(result):
    """The chart's legend as HTML: colours per kind of run, the median line, host vs device."""
    kinds = [("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)]
    items = [_item(_swatch(COLOURS[kind]) + f"{kind} run") for kind, runs in kinds if runs]
    if result.median is not None:
        items.append(_item(f"<span style='color:{MUTED}'>– –</span> warm median {escape(format_seconds(result.median))}"))
    items += [_item(_swatch(COLOURS["warm"]) + "host (Python)"),
              _item(_swatch(LIGHTER["warm"]) + "device still working")]
    step = runs_per_bar(1 + len(result.warmup) + len(result.warm))
    if step > 1:
        items.append(_item(f"each bar: up to {step:,} runs in a row, from their lowest host time to their highest total"))
    return f"<div class='cudatime-legend' style='font-size:90%;line-height:1.6'>{' '.join(items)}</div>"
