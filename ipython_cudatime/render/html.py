"""The HTML report: a table of the numbers and the same sentences as the text report."""

from html import escape

from ..findings import findings
from ..units import format_seconds as fmt


def _row(label, value):
    return f"<tr><th style='text-align:left'>{escape(label)}</th><td style='text-align:left'>{escape(value)}</td></tr>"


def render_html(result):
    cold = result.cold
    rows = [_row("cold run", f"{fmt(result.cold_time)} (host {fmt(cold.host)}, wall {fmt(cold.wall)}"
                 + (f", device {fmt(cold.device)})" if cold.device is not None else ")"))]
    if result.median is not None:
        rows += [
            _row("warm median", f"{fmt(result.median)} ± {fmt(result.iqr)} IQR, {result.runs} runs, {result.clock} clock"),
            _row("min / max", f"{fmt(result.min)} / {fmt(result.max)}"),
            _row("mean ± std", f"{fmt(result.mean)} ± {fmt(result.stdev)}"),
            _row("cold / warm", f"{result.ratio:.1f}×"),
        ]
    rows.append(_row("CPU times (cold)", f"user {fmt(cold.cpu_user or 0.0)}, sys {fmt(cold.cpu_sys or 0.0)}"))
    rows.append(_row("device", result.device))
    rows.append(_row("synchronized", ", ".join(result.synchronized) or "nothing"))
    notes = "".join(f"<li>{escape(f.text)}</li>" for f in findings(result))
    return (
        "<div class='cudatime-report'><table>" + "".join(rows) + "</table>"
        + (f"<ul>{notes}</ul>" if notes else "") + "</div>"
    )
