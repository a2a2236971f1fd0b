"""Several results side by side (a ``compare.Results``): as a sweep, or as a comparison.

Text (the truth), and HTML with a chart (an SVG ``<img>``, see ``chart``): warm median (and cold)
against the swept value, or a dot plot with a row per result. One label's points from one machine read
as a sweep; anything else (several labels, results loaded from other kernels or machines) as a comparison.
"""

from __future__ import annotations

import itertools
import math
import statistics
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from html import escape
from typing import TYPE_CHECKING, Any, cast

from ..results.ratios import Verdicts, interval_text, times_text
from ..results.result import format_params as _params
from ..units import format_seconds as fmt
from ..units import inert, plain, range_text, ratio_text, shortened, time_unit
from . import chart
from .report import capped, report_html, section_html, sentence_html, table_html

if TYPE_CHECKING:
    from ..results.compare import Check, Point, Results
    from ..results.result import CudaTimeResult

Row = tuple[str, ...]  # a table row's cells
Series = dict[str, list[tuple[Any, "CudaTimeResult"]]]  # a sweep chart's series: name -> [(x, result)]

CHART_HEIGHT_PX = 230
CHART_ROWS = 40  # bars or labelled points a 600 px chart can show; past them the table stands alone
CHART_SERIES = 12  # lines one sweep chart can tell apart in its legend
CONTRAST_LINES = 8  # rows put in words against the first; past them the "vs first" column speaks
LOG_SPAN = 20  # times spanning this factor are drawn on a log axis
X_LOG_SPAN = 10  # and swept values spanning a decade


def _spread(result: CudaTimeResult) -> tuple[float, float] | None:
    """(low, high) of the warm runs as a table words them and a chart draws them: the quartiles, min and max
    below ``IQR_MIN_RUNS`` (quartiles of a few samples mean little); None without two."""
    if result.runs < 2:
        return None
    if result.has_iqr:
        q1, _, q3 = statistics.quantiles(result.samples, n=4, method="inclusive")
        return q1, q3
    return min(result.samples), max(result.samples)


def spread_text(result: CudaTimeResult) -> str:
    """A table's spread cell: the IQR, or min–max (``_spread``)."""
    if (spread := _spread(result)) is None:
        return "one run" if result.runs else ""
    return f"IQR {fmt(spread[1] - spread[0])}" if result.has_iqr else f"min–max {range_text(*spread)}"


def median_text(result: CudaTimeResult) -> str:
    """A table's median cell, with its 95% interval: ``17.5 ms (17.1–18.0 ms)``, or ``(too few runs)``."""
    interval = result.median_ci
    return f"{fmt(result.median)} ({range_text(*interval) if interval else 'too few runs'})"


def _settled(results: Results, verdicts: Verdicts) -> frozenset[int]:
    """The rows whose every contrast in the table holds (the ratio's 95% interval excludes 1): however their
    runs varied, the verdict stands, so what judges a row's numbers (``beside_verdict``: the noise) is left out."""
    points, held = results.points, dict[int, bool]()
    timed = [k for k, point in enumerate(points) if point.result is not None and point.result.median]
    # a comparison states each row with warm runs against the first (its "vs first")
    for i, j in _sweep_pairs(results) if is_sweep(results) else [(timed[0], k) for k in timed[1:]]:
        conclusive = verdicts.contrast(points[i], points[j]).conclusive
        for k in (i, j):
            held[k] = held.get(k, True) and conclusive
    return frozenset(k for k, holds in held.items() if holds)


def keeper_notes(results: Results, names: Sequence[str], verdicts: Verdicts, what: str) -> list[str]:
    """Under a table: each keeper's lines (``RecordKeeper.table_notes``: each noise cause once, with its rows)."""
    settled = _settled(results, verdicts)
    rows = [(i, name, point.result) for i, (name, point) in enumerate(zip(names, results.points))]
    return [line for keeper in verdicts.keepers for line in keeper.table_notes(
        [(name, r, None if i in settled and keeper.beside_verdict else verdicts.judged(keeper, r))
         for i, name, r in rows if r is not None], what)]


def _ratio_cell(reference: Point, point: Point, verdicts: Verdicts, inverse: bool = False) -> str:
    """``40.0× (38.1–41.9×)``: the median ratio to ``reference`` with its 95% interval (``inverse``:
    the reference's to this point's, as "vs first" reads), or "inconclusive" where that interval holds 1."""
    verdict = verdicts.contrast(reference, point)
    if not verdict.conclusive or verdict.ratio is None or verdict.ci is None:  # a conclusive one has both
        return "inconclusive"
    (low, high), ratio = verdict.ci, verdict.ratio
    if inverse:
        low, high, ratio = 1 / high, 1 / low, 1 / ratio
    return f"{times_text(ratio)} ({interval_text(low, high)})"


def _sweep_rows(sweep: Results, verdicts: Verdicts) -> Iterator[Row]:
    """(point label, median, spread, cold, runs, speed-up or "", error) per point."""
    references = _references(sweep)
    for index, point in enumerate(sweep.points):
        r = point.result
        if r is None:
            yield point.name, "", "", "", "", "", shortened(point.error or "")
            continue
        speedup = _ratio_cell(sweep.points[references[index]], point, verdicts) if index in references else ""
        yield point.name, median_text(r), spread_text(r), fmt(r.cold_time), str(r.runs), speedup, ""


def _references(sweep: Results) -> dict[int, int]:
    """{index: its reference's index} for a device sweep's points (``Results.references``)."""
    where = {id(point.result): k for k, point in enumerate(sweep.points)}
    return {i: where[id(reference)] for i, reference in sweep.references().items()}


def _sweep_pairs(sweep: Results) -> list[tuple[int, int]]:
    """The contrasts a sweep's tables state: each point against its reference device (the speed-up), and in a
    grid's row the fastest against the next (its mark)."""
    index = {id(point): k for k, point in enumerate(sweep.points)}
    pairs = [(reference, i) for i, reference in _references(sweep).items() if reference != i]
    for row in grid[2].values() if (grid := _grid(sweep)) else ():
        timed = _by_speed(row.values())
        pairs += [(index[id(timed[0])], index[id(timed[1])])] if len(timed) > 1 else []
    return pairs


HEADER: Row = ("point", "warm median (95% CI)", "spread", "cold", "runs", "speed-up", "error")
COMPARE_HEADER: Row = ("label", "warm median (95% CI)", "spread", "cold", "cold/warm", "vs first", "device", "error")
VERDICT = ("speed-up", "vs first")  # each table's own verdict on a row: a keeper's judging columns follow it


def _table(collection: Results, verdicts: Verdicts) -> tuple[Row, list[Row]]:
    """A sweep's or a comparison's table, with the columns of each of the ``verdicts``' keepers that judged any
    row: beside the table's verdict (``VERDICT``) for a keeper that judges the row (the CPU facts' noise), else
    before the last (--roofline's rates); empty for a row without a result, or ``_settled`` for a judge."""
    header, rows = ((HEADER, list(_sweep_rows(collection, verdicts))) if is_sweep(collection)
                    else (COMPARE_HEADER, list(compare_rows(collection, verdicts))))
    results, settled = [point.result for point in collection.points], _settled(collection, verdicts)
    beside = next(i for i, name in enumerate(header) if name in VERDICT) + 1  # where the next verdict column goes
    for feature in (keeper for keeper in verdicts.keepers if keeper.columns):
        shown = [r is not None and not (i in settled and feature.beside_verdict) for i, r in enumerate(results)]
        judged = [verdicts.judged(feature, r) if show and r is not None else None for r, show in zip(results, shown)]
        if all(value is None for value in judged):
            continue
        at = beside if feature.beside_verdict else len(header) - 1
        beside += len(feature.columns) if feature.beside_verdict else 0
        header = header[:at] + feature.columns + header[at:]
        blank = ("",) * len(feature.columns)
        rows = [row[:at] + (feature.cells(value) if show else blank) + row[at:]
                for row, value, show in zip(rows, judged, shown)]
    return header, rows


FASTEST = " *"  # marks the fastest in a grid's row
GRID_MAX = 100  # a grid's unit is at least that of its largest time / this: 5 digits at most (633 µs, not 633,474 ns)
GRID_KEY = "* the fastest in its row, where the 95% interval of its ratio to the next one's excludes 1"


def _grid(sweep: Results) -> tuple[str, str, dict[str, dict[str, Point]]] | None:
    """(down, across, {value down: {value across: point}}) for a sweep of two names every point has, the first
    numeric one down the rows (sizes, as torch's ``Compare`` puts them); else None."""
    names = sweep.names
    if len(names) != 2 or not all(len(point.params) == 2 for point in sweep.points):
        return None
    down = (_numeric_names(sweep) or names)[0]
    across = next(name for name in names if name != down)
    rows: dict[str, dict[str, Point]] = {}
    for point in sweep.points:
        rows.setdefault(_value_text(point.params[down]), {})[_value_text(point.params[across])] = point
    return down, across, rows


def _by_speed(points: Iterable[Point]) -> list[Point]:
    """The points with warm runs, the fastest (the smallest warm median) first."""
    timed = [(p.result.median, i, p) for i, p in enumerate(points) if p.result is not None and p.result.median]
    return [p for _, _, p in sorted(timed, key=lambda each: each[:2])]


def _grid_cell(point: Point | None, fastest: Point | None, factor: int) -> str:
    """The median in the grid's one unit, three figures, never an exponent: ``0.456``, ``15.6``, ``15,600``."""
    if point is None or point.result is None:
        return "" if point is None else "error"
    if point.result.median is None:
        return "n/a"
    value = point.result.median * factor
    return (f"{value:,.0f}" if value >= 100 else f"{value:.3g}") + (FASTEST if point is fastest else "")


def _grid_table(sweep: Results, verdicts: Verdicts) -> tuple[str, Row, list[Row]] | None:
    """A two-name sweep as (title, header, rows), a grid of warm medians in one unit (see GRID_MAX); else None."""
    grid = _grid(sweep)
    medians = [p.result.median for p in sweep.points if p.result is not None and p.result.median]
    if grid is None or not medians:
        return None
    down, across, grid_rows = grid
    unit, factor = time_unit(max(min(medians), max(medians) / GRID_MAX))
    columns = list(dict.fromkeys(_value_text(p.params[across]) for p in sweep.points))
    rows = []
    for value, row in grid_rows.items():
        timed = _by_speed(row.values())  # marked where the 95% interval of its ratio to the next excludes 1
        fastest = timed[0] if len(timed) > 1 and verdicts.contrast(timed[0], timed[1]).conclusive else None
        rows.append((value, *(_grid_cell(row.get(column), fastest, factor) for column in columns)))
    return f"warm median in {unit}, {down} down, {across} across", (down, *columns), rows


def _check_line(check: Check) -> str:
    skipped = "".join(f"; not compared: {_params(params)}, because {why}" for params, why in check.skipped)
    if not check.compared:
        return f"check: nothing was compared{skipped}"
    if check.ok:
        return (f"check: all values agree ({check.compared} compared with the first point of their shape; "
                f"largest difference {check.max_abs_diff:.3g}){skipped}")
    worst = max(check.mismatches, key=lambda m: m[2])
    return (f"check: MISMATCH at {len(check.mismatches)} point(s); largest difference {worst[2]:.3g} "
            f"at {_params(worst[0])} against {_params(worst[1])}{skipped}")


def _table_text(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    rows = [tuple(header)] + [tuple(inert(cell, newlines=False) for cell in row) for row in rows]
    keep = [i for i in range(len(header)) if any(row[i] for row in rows[1:])] or [0]
    widths = [max(len(row[i]) for row in rows) for i in keep]
    return ["  ".join(row[i].ljust(w) for i, w in zip(keep, widths)).rstrip() for row in rows]


SPREAD_OUT = 60.0  # seconds: a sequential sweep this long may have drifted between its first and last points


def _sweep_notes(sweep: Results, verdicts: Verdicts) -> list[str]:
    """Under a sweep's table: the features' lines (the noise causes), a long sweep's drift, the check, the stop."""
    notes = keeper_notes(sweep, [point.name for point in sweep.points], verdicts, "points")
    span = sweep.span if sweep.span is not None and len(sweep.points) >= 2 else 0.0
    drift = (f"the points were timed one after the other over {fmt(span)}: a drift in that time (a neighbour "
             "that starts, a clock that ramps) reads as a difference between them; --interleave -n N spreads it "
             "over every point") if span >= SPREAD_OUT else None
    more = (drift, sweep.check and _check_line(sweep.check), sweep.stopped and f"stopped: {sweep.stopped}")
    return notes + [line for line in more if line]


def _spans_decades(values: Iterable[float | None], factor: float = LOG_SPAN) -> bool:
    known = [v for v in values if v is not None]
    return bool(known) and min(known) > 0 and max(known) / min(known) >= factor


def _numeric_names(sweep: Results) -> list[str]:
    """The swept names whose every value is a number, at every point with a result."""
    done = [point.params for point in sweep.points if point.result is not None]
    return [name for name in sweep.names if all(
        isinstance(params[name], (int, float)) and not isinstance(params[name], bool) for params in done)]


def _value_text(value: object) -> str:
    """A swept value as a tick label: a string as it is (the axis names it), anything else as repr."""
    return value if isinstance(value, str) else repr(value)


def crowded(count: int, limit: int, what: str) -> str:
    """The line instead of a chart of more than ``limit`` (unreadable, and slow: 10,000 bars take minutes)."""
    return (f"<div class='cudatime-chart-note' style='font-size:90%'>no chart: {count:,} {what} are more than "
            f"one chart can show ({limit}); the table below has them all</div>") if count > limit else ""


def sweep_chart(sweep: Results) -> str:
    """Warm median (filled dots) and cold run (open dots) against the swept value, a colour per series, joined
    by solid and dashed lines where the values are numbers: x the first numeric swept name, else the first; a
    series for each combination of the others."""
    done = [p for p in sweep.points if p.result is not None]
    if not done:
        return ""
    numeric = _numeric_names(sweep)
    x_name = (numeric or sweep.names)[0]
    categories = list(dict.fromkeys(_value_text(p.params[x_name]) for p in done))
    series: Series = {}
    for point in done:
        others = _params({k: v for k, v in point.params.items() if k != x_name})
        x = point.params[x_name] if numeric else categories.index(_value_text(point.params[x_name]))
        series.setdefault(others, []).append((x, cast("CudaTimeResult", point.result)))  # ``done`` have one
    if note := crowded(len(series), CHART_SERIES, "lines") if numeric else crowded(len(done), CHART_ROWS, "points"):
        return note
    fig, axes = chart.figure(CHART_HEIGHT_PX)
    lines, key = 1, list[str]()
    for colour, points in zip(itertools.cycle(chart.SERIES), series.values()):
        xs = [x for x, _ in points]
        medians = [r.median for _, r in points]  # None where a point has no warm runs: matplotlib leaves a gap
        axes.plot(xs, medians, marker="o", color=colour, linestyle="-" if numeric else "none")  # type: ignore[arg-type]
        axes.plot(xs, [r.cold_time for _, r in points], marker="o", markerfacecolor="none", color=colour,
                  linestyle="--" if numeric else "none")
        spreads = [_spread(r) for _, r in points]  # the interval a contrast compares; none under 2 runs
        lows, highs = ([s[k] if s else math.nan for s in spreads] for k in (0, 1))
        if any(spreads) and numeric:  # a band along a line of numbers
            axes.fill_between(xs, lows, highs, color=colour, alpha=0.2, linewidth=0)
        elif any(spreads):  # a bar through each dot of a category
            axes.vlines(xs, lows, highs, color=colour, linewidth=3, alpha=0.5)
    if numeric:
        values = [p.params[x_name] for p in done]
        chart.value_ticks(axes, values, _spans_decades(values, X_LOG_SPAN))
    else:
        axes.set_xlim(-0.5, len(categories) - 0.5)
        lines, key = chart.category_ticks(axes, categories)
    axes.set_xlabel(x_name, fontsize=chart.FONT_PT)
    axes.set_ylabel("time", fontsize=chart.FONT_PT)
    log = _spans_decades([v for _, points in series.items() for _, r in points for v in (r.median, r.cold_time)])
    chart.time_axis(axes, log)
    solid, dashed = (" (solid line)", " (dashed line)") if numeric else ("", "")
    spread_mark = "shaded band" if numeric else "bar through it"
    items = [chart.legend_item(f"<span style='color:{chart.MUTED}'>●</span> warm median{solid}, its spread a "
                               f"{spread_mark}"),
             chart.legend_item(f"<span style='color:{chart.MUTED}'>○</span> cold run{dashed}")]
    if any(series):  # a series is unnamed ("") only where it is the one
        items += [chart.legend_item(chart.swatch(colour) + escape(name or "the rest"))
                  for colour, name in zip(itertools.cycle(chart.SERIES), series)]
    svg = chart.svg_bytes(fig, (lines - 1) * chart.FONT_PX * 1.25)  # room for the lines of the x tick labels
    return chart.img_tag(svg, "cudatime: warm median and cold run per sweep point") + chart.legend_html(items, key)


def _names(points: Sequence[Point]) -> list[str]:
    """Each row's name: ``label[n=2]``, and `` @ host`` when the rows come from several machines."""
    hosts = {point.task.env.host for point in points}
    return [point.name + (f" @ {point.task.env.host}" if len(hosts) > 1 else "") for point in points]


def _first(results: Results) -> Point | None:
    """The first point that has warm runs: what every other row is measured against."""
    return next((point for point in results.points if point.result is not None and point.result.median), None)


def compare_rows(results: Results, verdicts: Verdicts) -> Iterator[Row]:
    """(name, warm median, spread, cold, cold/warm, against the first, device, error) per point."""
    first = _first(results)
    for name, point in zip(_names(results.points), results.points):
        r = point.result
        if r is None:
            yield name, "", "", "", "", "", point.task.env.device, shortened(point.error or "")
            continue
        against = "" if first is None or not r.median else \
            times_text(1.0) if point is first else _ratio_cell(first, point, verdicts, inverse=True)
        yield name, median_text(r), spread_text(r), fmt(r.cold_time), ratio_text(r.ratio), against, r.device, ""


def compare_notes(results: Results, verdicts: Verdicts) -> list[str]:
    """Each row against the first, in words ("fused 5.00× faster (4.81–5.20×)"), then the features' lines."""
    first, names = _first(results), _names(results.points)
    name_of = {id(point): name for name, point in zip(names, results.points)}
    others = [point for point in results.points
              if first is not None and point is not first and point.result is not None]
    lines = [f"{name_of[id(point)]} against {name_of[id(first)]}: "
             + verdicts.contrast(first, point, (name_of[id(first)], name_of[id(point)])).sentence
             for point in others[:CONTRAST_LINES]]
    if len(others) > CONTRAST_LINES:
        lines.append(f"... and {len(others) - CONTRAST_LINES:,} more rows: their 'vs first' column says the same")
    return lines + keeper_notes(results, names, verdicts, "rows")


NAME_CHARS = 11  # characters in a line of a row's name, left of a comparison's dots (102 px of a 270 px chart)
NAME_LINES = 3  # lines a name may take; a longer one ends in "…" (the table below has it whole)


def compare_chart(results: Results) -> str:
    """A dot plot, a row per result, named on the left: warm median, its spread a whisker, the cold run open.
    Dots, not bars: a bar on a log axis starts at an arbitrary floor, its length meaningless."""
    done = [(name, point.result) for name, point in zip(_names(results.points), results.points)
            if point.result is not None]
    if not done:
        return ""
    if note := crowded(len(done), CHART_ROWS, "rows"):
        return note
    names = []  # each row's as the chart writes it left of its dots: wrapped, at most NAME_LINES lines
    for name, _ in done:
        lines = textwrap.wrap(name, NAME_CHARS, break_long_words=True) or [""]
        if len(lines) > NAME_LINES:
            lines = lines[:NAME_LINES]
            lines[-1] = lines[-1][:NAME_CHARS - 1] + "…"
        names.append("\n".join(lines))
    row_px = max(name.count("\n") + 1 for name in names) * chart.FONT_PX * 1.25 + 10
    fig, axes = chart.figure(chart.MARGINS_PX[2] + chart.MARGINS_PX[3] + row_px * len(done))
    warm, cold = chart.COLOURS["warm"], chart.COLOURS["cold"]
    for y, (_, r) in enumerate(done):
        if (interval := _spread(r)) is not None:
            axes.hlines(y, *interval, color=warm, linewidth=2.5)
        if r.median is not None:
            axes.plot([r.median], [y], "o", color=warm, markersize=7)
        axes.plot([r.cold_time], [y], "o", markerfacecolor="none", color=cold, markersize=7)
    axes.set_yticks(range(len(done)), names, **chart.USER_TEXT)
    axes.set_ylim(len(done) - 0.5, -0.5)  # the first row on top, as in the table
    log = _spans_decades([v for _, r in done for v in (r.median, r.cold_time)])
    chart.time_axis(axes, log, "x")
    axes.set_xlabel("time per run" + (" (log)" if log else ""), fontsize=chart.FONT_PT)
    svg = chart.svg_bytes(fig, left_px=NAME_CHARS * chart.CHAR_PX + 12)
    items = [chart.legend_item(f"<span style='color:{warm}'>●</span> warm median, its spread as a line"),
             chart.legend_item(f"<span style='color:{cold}'>○</span> cold run")]
    return chart.img_tag(svg, "cudatime: warm median, its spread and the cold run per row") + chart.legend_html(items)


def is_sweep(results: Results) -> bool:
    """One label's points (or none's), all with swept values, from one machine: a sweep's table and chart."""
    points = results.points
    return (bool(points) and all(point.params for point in points)
            and len({(point.label, point.task.env.host) for point in points}) == 1)


def results_text(results: Results, verdicts: Verdicts | None = None) -> str:
    """Results side by side in text: the table (a two-name sweep's grid first), then the notes under it. The
    ``verdicts`` given are shared with the HTML view, so that neither works out a judgement the other did."""
    verdicts, sweep = verdicts or Verdicts(results.keepers), is_sweep(results)
    grid = _grid_table(results, verdicts) if sweep else None
    lines = [grid[0], *_table_text(*grid[1:]), GRID_KEY, ""] if grid else []
    lines += _table_text(*_table(results, verdicts))
    return plain("\n".join(lines + (_sweep_notes(results, verdicts) if sweep else compare_notes(results, verdicts))))


def results_html(results: Results, verdicts: Verdicts | None = None) -> str:
    """The chart, the table, the notes; a two-name sweep's grid first, its table then opening on demand."""
    verdicts, sweep = verdicts or Verdicts(results.keepers), is_sweep(results)
    html, grid = table_html(*_table(results, verdicts)), _grid_table(results, verdicts) if sweep else None
    if grid is not None:
        title, header, rows = grid
        html = (f"<div><b>{escape(title)}</b></div>{table_html(header, rows, 'cudatime-grid')}"
                + capped(f"<div style='font-size:90%'>{escape(GRID_KEY)}</div>")
                + section_html("Every point", html, "cudatime-section-points"))
    drawn = sweep_chart(results) if sweep else compare_chart(results)
    notes = _sweep_notes(results, verdicts) if sweep else compare_notes(results, verdicts)
    extras = capped("".join(f"<div>{sentence_html(line)}</div>" for line in notes))
    return report_html([capped(drawn), html, extras], "cudatime-sweep" if sweep else "cudatime-compare", wide=True)
