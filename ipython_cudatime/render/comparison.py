"""Several results side by side: a sweep's points, or labelled results (``%cudatime_compare``).

Text (the truth), and an HTML report with a chart (an SVG ``<img>``, see ``image``): warm
median (and cold) against the swept value, or grouped cold/warm bars per label.
"""

from html import escape

from ..units import format_seconds as fmt
from ..units import plain, ratio_text
from .html import report_html, table_html
from .image import COLOURS, FONT_PT, MUTED, SERIES, figure, img_tag, svg_bytes
from .roofline import RATE_HEADER, rate_cells

CHART_HEIGHT_PX = 260


def _params(params):
    return ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in params.items())


def _sweep_rows(sweep):
    """(point label, median, IQR, cold, runs, speed-up or "", error) per point."""
    speedups = sweep.speedups()
    for index, point in enumerate(sweep.points):
        r = point.result
        if r is None:
            yield _params(point.params), "", "", "", "", "", point.error
            continue
        speedup = f"{speedups[index]:.1f}×" if index in speedups else ""
        yield (_params(point.params), fmt(r.median), fmt(r.iqr), fmt(r.cold_time), str(r.runs), speedup, "")


HEADER = ("point", "warm median", "IQR", "cold", "runs", "speed-up", "error")


def _with_rates(header, rows, results):
    """Add the achieved-rate columns (before the last one) when --roofline counted any result."""
    results = list(results)
    if not any(r is not None and r.roofline is not None for r in results):
        return header, list(rows)
    header = header[:-1] + RATE_HEADER + header[-1:]
    return header, [row[:-1] + rate_cells(r) + row[-1:] for row, r in zip(rows, results)]


def _sweep_table(sweep):
    return _with_rates(HEADER, _sweep_rows(sweep), (point.result for point in sweep.points))


def _check_line(check):
    if check is None:
        return None
    skipped = "".join(f"; not compared: {_params(params)}, because {why}" for params, why in check.skipped)
    if not check.compared:
        return f"check: nothing was compared{skipped}"
    if check.ok:
        return (f"check: all values agree ({check.compared} compared with the first point of their shape; "
                f"largest difference {check.max_abs_diff:.3g}){skipped}")
    worst = max(check.mismatches, key=lambda m: m[2])
    return (f"check: MISMATCH at {len(check.mismatches)} point(s); largest difference {worst[2]:.3g} "
            f"at {_params(worst[0])} against {_params(worst[1])}{skipped}")


def _table_text(header, rows):
    rows = [tuple(header)] + [tuple(row) for row in rows]
    keep = [i for i in range(len(header)) if any(row[i] for row in rows[1:])] or [0]
    widths = [max(len(row[i]) for row in rows) for i in keep]
    return ["  ".join(row[i].ljust(w) for i, w in zip(keep, widths)).rstrip() for row in rows]


def sweep_text(sweep):
    lines = _table_text(*_sweep_table(sweep))
    for extra in (_check_line(sweep.check), sweep.stopped and f"stopped: {sweep.stopped}"):
        if extra:
            lines.append(extra)
    return plain("\n".join(lines))


def _figure():
    fig, axes = figure(CHART_HEIGHT_PX)
    fig.subplots_adjust(left=0.16, right=0.98, top=0.94, bottom=0.2)
    axes.set_prop_cycle(color=SERIES)
    return fig, axes


def _finish(fig, axes, alt):
    """Common axes text, legend in the chart's muted colour, then the ``<img>``."""
    from matplotlib.ticker import FuncFormatter

    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v) if v > 0 else "0"))
    axes.legend(fontsize=FONT_PT, frameon=False, labelcolor=MUTED)
    return img_tag(svg_bytes(fig), alt)


def sweep_chart(sweep):
    """Warm median (solid) and cold (dashed) against the first numeric swept value, one line per
    combination of the other values; log-log when the values span decades."""
    done = [p for p in sweep.points if p.result is not None]
    if not done:
        return ""
    numeric = [n for n in sweep.names if all(isinstance(p.params[n], (int, float)) for p in done)]
    x_name = numeric[0] if numeric else None
    fig, axes = _figure()
    series = {}
    for index, point in enumerate(done):
        key = _params({k: v for k, v in point.params.items() if k != x_name}) or "median"
        series.setdefault(key, []).append((point.params[x_name] if x_name else index, point.result))
    for key, points in series.items():
        xs = [x for x, _ in points]
        line, = axes.plot(xs, [r.median for _, r in points], marker="o", label=key)
        axes.plot(xs, [r.cold_time for _, r in points], linestyle="--", color=line.get_color())
    if x_name:
        values = [p.params[x_name] for p in done]
        if min(values) > 0 and max(values) / min(values) >= 10:
            axes.set_xscale("log")
            axes.set_yscale("log")
        axes.set_xlabel(x_name, fontsize=FONT_PT)
    else:
        axes.set_xticks(range(len(done)), [_params(p.params) for p in done], rotation=15)
    axes.set_ylabel("time", fontsize=FONT_PT)
    return _finish(fig, axes, "cudatime: warm median and cold run per sweep point")


def sweep_html(sweep):
    extras = [f"<div>{escape(line)}</div>" for line in (_check_line(sweep.check), sweep.stopped) if line]
    chart = sweep_chart(sweep)
    key = "<div class='cudatime-legend' style='font-size:90%'>solid: warm median · dashed: cold run</div>" if chart else ""
    return report_html([chart, key, table_html(*_sweep_table(sweep)), *extras], "cudatime-sweep")


def _ratio(value):
    """``0.73×``, and ``0.0009×`` rather than ``0.00×`` for results far faster than the first."""
    return f"{value:.2f}×" if value >= 0.01 else f"{value:.2g}×"


def compare_rows(history):
    """(label, warm median, cold, cold/warm, against the first) per recorded result."""
    first = next(iter(history.values())).median if history else None
    for label, r in history.items():
        against = _ratio(r.median / first) if first and r.median else ""
        yield label, fmt(r.median), fmt(r.cold_time), ratio_text(r.ratio), against, r.device


COMPARE_HEADER = ("label", "warm median", "cold", "cold/warm", "vs first", "device")


def _compare_table(history):
    return _with_rates(COMPARE_HEADER, compare_rows(history), history.values())


def compare_text(history):
    return plain("\n".join(_table_text(*_compare_table(history))))


def compare_chart(history):
    """Grouped bars: cold and warm median per label, log scale when they span decades."""
    fig, axes = _figure()
    labels = list(history)
    xs = range(len(labels))
    cold = [history[label].cold_time for label in labels]
    warm = [history[label].median or history[label].cold_time for label in labels]
    axes.bar([x - 0.2 for x in xs], cold, width=0.4, color=COLOURS["cold"], label="cold run")
    axes.bar([x + 0.2 for x in xs], warm, width=0.4, color=COLOURS["warm"], label="warm median")
    if max(cold + warm) / min(cold + warm) >= 20:
        axes.set_yscale("log")
    axes.set_xticks(list(xs), labels, rotation=15 if len(labels) > 3 else 0)
    return _finish(fig, axes, "cudatime: cold run and warm median per label")


def compare_html(history):
    return report_html([compare_chart(history), table_html(*_compare_table(history))],
                       "cudatime-compare")
