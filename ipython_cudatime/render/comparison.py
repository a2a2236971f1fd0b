"""Several results side by side (a ``compare.Results``): as a sweep, or as a comparison.

Text (the truth), and an HTML report with a chart (an SVG ``<img>``, see ``image``): warm
median (and cold) against the swept value, or grouped cold/warm bars per row. One label's
points from one machine read as a sweep; anything else (several labels, results loaded from
other kernels or machines) as a comparison, each row named by its label, swept values and,
where the rows come from more than one machine, the machine.
"""

from html import escape

from ..result import format_params as _params
from ..units import format_seconds as fmt
from ..units import inert, plain, ratio_text
from .html import report_html, table_html
from .image import COLOURS, FONT_PT, MUTED, SERIES, USER_TEXT, figure, img_tag, svg_bytes
from .roofline import RATE_HEADER, rate_cells

CHART_HEIGHT_PX = 260
CHART_ROWS = 40  # bars or labelled points a 600 px chart can show; past them the table stands alone
CHART_SERIES = 12  # lines one sweep chart can tell apart in its legend


def _sweep_rows(sweep):
    """(point label, median, IQR, cold, runs, speed-up or "", error) per point."""
    speedups = sweep.speedups()
    for index, point in enumerate(sweep.points):
        r = point.result
        if r is None:
            yield point.name, "", "", "", "", "", point.error
            continue
        speedup = f"{speedups[index]:.1f}×" if index in speedups else ""
        yield (point.name, fmt(r.median), fmt(r.iqr), fmt(r.cold_time), str(r.runs), speedup, "")


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
    rows = [tuple(header)] + [tuple(inert(cell, newlines=False) for cell in row) for row in rows]
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
    legend = axes.legend(fontsize=FONT_PT, frameon=False, labelcolor=MUTED)
    for label in legend.get_texts():
        label.update(USER_TEXT)
    return img_tag(svg_bytes(fig), alt)


def crowded(count, limit, what):
    """The line shown instead of a chart of ``count`` ``what`` when more than ``limit`` would make
    it unreadable (and slow: 10,000 labelled bars take minutes to draw), else ""."""
    if count <= limit:
        return ""
    return (f"<div class='cudatime-chart-note' style='font-size:90%'>no chart: {count:,} {what} are more than "
            f"one chart can show ({limit}); the table below has them all</div>")


def sweep_chart(sweep):
    """Warm median (solid) and cold (dashed) against the first numeric swept value, one line per
    combination of the other values; log-log when the values span decades. The chart's HTML, its
    key included, or the line saying why there is none."""
    done = [p for p in sweep.points if p.result is not None]
    if not done:
        return ""
    numeric = [n for n in sweep.names if all(isinstance(p.params[n], (int, float)) for p in done)]
    x_name = numeric[0] if numeric else None
    series = {}
    for index, point in enumerate(done):
        key = _params({k: v for k, v in point.params.items() if k != x_name}) or "median"
        series.setdefault(key, []).append((point.params[x_name] if x_name else index, point.result))
    note = crowded(len(series), CHART_SERIES, "lines") if x_name else crowded(len(done), CHART_ROWS, "points")
    if note:
        return note
    fig, axes = _figure()
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
        axes.set_xticks(range(len(done)), [_params(p.params) for p in done], rotation=15, **USER_TEXT)
    axes.set_ylabel("time", fontsize=FONT_PT)
    return (_finish(fig, axes, "cudatime: warm median and cold run per sweep point")
            + "<div class='cudatime-legend' style='font-size:90%'>solid: warm median · dashed: cold run</div>")


def sweep_html(sweep):
    extras = [f"<div>{escape(line)}</div>" for line in (_check_line(sweep.check), sweep.stopped) if line]
    return report_html([sweep_chart(sweep), table_html(*_sweep_table(sweep)), *extras], "cudatime-sweep")


def _ratio(value):
    """``0.73×``, and ``0.0009×`` rather than ``0.00×`` for results far faster than the first."""
    return f"{value:.2f}×" if value >= 0.01 else f"{value:.2g}×"


def _names(points):
    """Each row's name: ``label[n=2]``, and `` @ host`` when the rows come from several machines."""
    hosts = {point.task.env.host for point in points}
    return [point.name + (f" @ {point.task.env.host}" if len(hosts) > 1 else "") for point in points]


def compare_rows(results):
    """(name, warm median, cold, cold/warm, against the first, device, error) per point."""
    done = [point.result for point in results.points if point.result is not None]
    first = done[0].median if done else None
    for name, point in zip(_names(results.points), results.points):
        r = point.result
        if r is None:
            yield name, "", "", "", "", point.task.env.device, point.error
            continue
        against = _ratio(r.median / first) if first and r.median else ""
        yield name, fmt(r.median), fmt(r.cold_time), ratio_text(r.ratio), against, r.device, ""


COMPARE_HEADER = ("label", "warm median", "cold", "cold/warm", "vs first", "device", "error")


def _compare_table(results):
    return _with_rates(COMPARE_HEADER, compare_rows(results), (point.result for point in results.points))


def compare_text(results):
    return plain("\n".join(_table_text(*_compare_table(results))))


def compare_chart(results):
    """Grouped bars: cold and warm median per row, log scale when they span decades."""
    done = [(name, point.result) for name, point in zip(_names(results.points), results.points)
            if point.result is not None]
    if not done:
        return ""
    note = crowded(len(done), CHART_ROWS, "rows")
    if note:
        return note
    fig, axes = _figure()
    labels = [name for name, _ in done]
    xs = range(len(labels))
    cold = [r.cold_time for _, r in done]
    warm = [r.median or r.cold_time for _, r in done]
    axes.bar([x - 0.2 for x in xs], cold, width=0.4, color=COLOURS["cold"], label="cold run")
    axes.bar([x + 0.2 for x in xs], warm, width=0.4, color=COLOURS["warm"], label="warm median")
    if min(cold + warm) > 0 and max(cold + warm) / min(cold + warm) >= 20:
        axes.set_yscale("log")
    axes.set_xticks(list(xs), labels, rotation=15 if len(labels) > 3 else 0, **USER_TEXT)
    return _finish(fig, axes, "cudatime: cold run and warm median per label")


def compare_html(results):
    return report_html([compare_chart(results), table_html(*_compare_table(results))], "cudatime-compare")


def is_sweep(results):
    """One label's points (or none's), all with swept values, from one machine: a sweep's table and chart."""
    points = results.points
    return (bool(points) and all(point.params for point in points)
            and len({(point.label, point.task.env.host) for point in points}) == 1)


def results_text(results):
    return sweep_text(results) if is_sweep(results) else compare_text(results)


def results_html(results):
    return sweep_html(results) if is_sweep(results) else compare_html(results)
