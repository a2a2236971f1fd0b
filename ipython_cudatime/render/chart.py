"""The bar chart of every run, drawn with matplotlib's object API (Agg) as PNG bytes.

Never pyplot: a pyplot figure under a kernel is shown again as an extra output
and stays open. Each bar is one run, in order; its dark part is host time (Python
busy), its light part the rest of the synchronized time (the device still working).
Bars are PolyCollections (or, for hundreds of runs, stepped areas), not one patch
per bar, so 1,000 runs draw fast;
the legend is HTML (``legend_html``), which is cheaper than matplotlib's.
"""

import functools
import io

from ..units import format_seconds

COLOURS = {"cold": "#d62728", "warm-up": "#ff9f1c", "warm": "#1f77b4"}
LOG_RATIO = 20.0  # a cold run this many times the median needs a log axis
CHART_INCHES, CHART_DPI = (7.0, 2.6), 100
CHART_PX = (int(CHART_INCHES[0] * CHART_DPI), int(CHART_INCHES[1] * CHART_DPI))


def _bars(result):
    """(kind, host, total) per run in order; total is on the statistics clock."""
    use_device = result.clock == "device"
    for kind, runs in (("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)):
        for run in runs:
            total = run.device if use_device and run.device is not None else run.wall
            yield kind, min(run.host, total), max(total, run.host)


MANY_BARS = 200  # beyond this, bars of one kind merge into one stepped area (cheaper, same picture)


def _draw_bars(axes, kinds, lows, highs, alpha):
    """Bars 1..n from ``lows`` to ``highs``, coloured by kind of run."""
    from itertools import groupby

    from matplotlib.collections import PolyCollection
    from matplotlib.patches import StepPatch

    if len(kinds) <= MANY_BARS:
        boxes = [[(x - 0.425, lo), (x + 0.425, lo), (x + 0.425, hi), (x - 0.425, hi)]
                 for x, (lo, hi) in enumerate(zip(lows, highs), start=1)]
        axes.add_collection(PolyCollection(boxes, facecolors=[COLOURS[k] for k in kinds], alpha=alpha, linewidths=0))
        return
    start = 0
    for kind, group in groupby(kinds):
        end = start + len(list(group))
        if kind == "warm":
            # add_artist, not stairs(): the limits are set by hand, and updating them from a
            # stepped path of 1,000 steps is most of the drawing time.
            edges = [x + 0.5 for x in range(start, end + 1)]
            axes.add_artist(StepPatch(highs[start:end], edges, baseline=lows[start:end], fill=True,
                                      color=COLOURS[kind], alpha=alpha, linewidth=0))
        else:  # the few cold and warm-up runs keep a visible width however many runs follow
            axes.vlines(range(start + 1, end + 1), lows[start:end], highs[start:end], colors=COLOURS[kind],
                        alpha=alpha, linewidth=5)
        start = end


@functools.cache
def _chart_axes():
    """The process's one chart axes, made on first use and reused by every chart.

    Reusing one figure keeps one Agg renderer and the axes' tick artists, which is
    most of the drawing cost, and keeps matplotlib's text-layout cache (keyed by
    renderer) from filling anew on every chart. It is never registered with
    pyplot, so no figure is ever "open"; only the last chart's data stays in it.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=CHART_INCHES, dpi=CHART_DPI)
    FigureCanvasAgg(figure)
    figure.subplots_adjust(left=0.11, right=0.98, top=0.95, bottom=0.18)
    axes = figure.add_subplot()
    axes.set_xlabel("run, in order", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.spines[["top", "right"]].set_visible(False)
    return axes


def _axes():
    """The chart axes, emptied of the previous chart's data."""
    axes = _chart_axes()
    for artist in [*axes.collections, *axes.lines, *axes.artists]:
        artist.remove()
    return axes


def chart_png(result):
    """PNG bytes of the run chart."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

    bars = list(_bars(result))
    kinds = [kind for kind, _, _ in bars]
    hosts = [host for _, host, _ in bars]
    totals = [total for _, _, total in bars]
    log = bool(result.median) and max(totals) / result.median > LOG_RATIO
    floor = min(value for value in hosts + totals if value > 0) / 2 if log else 0.0

    axes = _axes()
    tops_of_host = [max(host, floor) for host in hosts]
    _draw_bars(axes, kinds, [floor] * len(bars), tops_of_host, 1.0)
    _draw_bars(axes, kinds, tops_of_host, totals, 0.35)
    axes.set_yscale("log" if log else "linear")
    if log:
        axes.yaxis.set_minor_locator(NullLocator())
    pad = max(0.7, 0.012 * len(bars))  # room for the first bar's full width beside the axis
    axes.set_xlim(1 - pad, len(bars) + pad)
    axes.set_ylim(floor if log else 0.0, max(totals) * (3.0 if log else 1.25))
    if result.median is not None:
        axes.axhline(result.median, color="black", linestyle="--", linewidth=1)
    axes.xaxis.set_major_locator(MaxNLocator(10, integer=True))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: format_seconds(value) if value > 0 else "0"))
    axes.set_ylabel(f"{result.clock} time" + (" (log)" if log else ""), fontsize=8)

    buffer = io.BytesIO()
    axes.figure.savefig(buffer, format="png")
    return buffer.getvalue()


def legend_html(result):
    """The chart's legend as HTML: colours per kind of run, the median line, host vs device."""
    swatch = "<span style='display:inline-block;width:10px;height:10px;background:{};opacity:{};margin:0 3px 0 10px'></span>{}"
    kinds = [("cold", [result.cold]), ("warm-up", result.warmup), ("warm", result.warm)]
    items = [swatch.format(COLOURS[kind], 1, f"{kind} run") for kind, runs in kinds if runs]
    if result.median is not None:
        items.append(f"<span style='margin-left:10px'>- - warm median {format_seconds(result.median)}</span>")
    items += [swatch.format("grey", 1, "host (Python)"), swatch.format("grey", 0.35, "device still working")]
    return f"<div class='cudatime-legend' style='font-size:80%'>{''.join(items)}</div>"
