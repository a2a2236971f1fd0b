"""The HTML report: a one-line answer, the run chart inline, the statistics table, the findings.

Its parts are also the widget's parts, so both always say the same thing.
"""

import base64
from html import escape

from ..findings import findings
from .chart import legend_html
from ..units import format_seconds as fmt


def header_html(result):
    """The answer in one line: warm median, cold run, their ratio, the device."""
    if result.median is None:
        answer = f"<b>{fmt(result.cold_time)}</b> (cold run only)"
    else:
        answer = (f"warm median <b>{fmt(result.median)}</b> · cold run {fmt(result.cold_time)} "
                  f"({result.ratio:.1f}× the warm median)")
    return f"<div class='cudatime-header'>{answer} · {escape(result.device)}</div>"


def _row(label, value):
    return f"<tr><th style='text-align:left;padding-right:1em'>{escape(label)}</th><td style='text-align:left'>{escape(value)}</td></tr>"


def details_html(result):
    """The statistics table, the device and the cold run's three clocks."""
    cold = result.cold
    rows = []
    if result.median is not None:
        rows += [
            _row("warm median", f"{fmt(result.median)} ({result.clock} clock)"),
            _row("IQR", fmt(result.iqr)),
            _row("min / max", f"{fmt(result.min)} / {fmt(result.max)}"),
            _row("mean ± std", f"{fmt(result.mean)} ± {fmt(result.stdev)}"),
            _row("warm runs", f"{result.runs} (after {len(result.warmup)} warm-up)"),
            _row("cold / warm", f"{result.ratio:.1f}×"),
        ]
    rows += [
        _row("cold run: host", fmt(cold.host)),
        _row("cold run: wall", fmt(cold.wall)),
        _row("cold run: device", fmt(cold.device) if cold.device is not None else "no device clock"),
        _row("cold run: CPU", f"user {fmt(cold.cpu_user or 0.0)}, sys {fmt(cold.cpu_sys or 0.0)}"),
        _row("device", result.device),
        _row("synchronized", ", ".join(result.synchronized) or "nothing"),
    ]
    return "<table class='cudatime-details'>" + "".join(rows) + "</table>"


def findings_html(result):
    items = "".join(f"<li>{escape(f.text)}</li>" for f in findings(result))
    return f"<ul class='cudatime-findings'>{items}</ul>" if items else ""


def render_html(result, png=None):
    """The whole report; ``png`` (chart bytes) is inlined as a data URI when given."""
    chart = ""
    if png is not None:
        chart = (f"<img alt='cudatime runs' src='data:image/png;base64,{base64.b64encode(png).decode()}'/>"
                 + legend_html(result))
    return ("<div class='cudatime-report'>" + header_html(result) + chart + details_html(result)
            + findings_html(result) + "</div>")
