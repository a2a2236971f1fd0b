"""The HTML report: a one-line answer, the run chart inline, the statistics table, the findings.

Its parts are also the widget's parts, so both always say the same thing.
"""

import base64
from html import escape

from ..explain.memory import memory_sentence
from ..findings import findings
from ..units import format_seconds as fmt
from ..units import ratio_text
from .chart import legend_html
from .roofline import roofline_html


def header_html(result):
    """The answer in one line: warm median, cold run, their ratio, the device."""
    if result.median is None:
        answer = f"<b>{fmt(result.cold_time)}</b> (cold run only)"
    else:
        answer = (f"warm median <b>{fmt(result.median)}</b> · cold run {fmt(result.cold_time)} "
                  f"({ratio_text(result.ratio)} the warm median)")
    return f"<div class='cudatime-header'>{answer} · {escape(result.device)}</div>"


def _row(label, value):
    return (f"<tr><th style='text-align:left;padding-right:1em'>{escape(label)}</th>"
            f"<td style='text-align:left'>{escape(value)}</td></tr>")


def details_html(result):
    """The statistics table, the device and the cold run's three clocks."""
    cold = result.cold
    rows = []
    if result.median is not None:
        rows += [
            _row("warm median", f"{fmt(result.median)} ({result.clock} clock)"),
            *([_row("IQR", fmt(result.iqr)), _row("mean ± std", f"{fmt(result.mean)} ± {fmt(result.stdev)}")]
              if result.has_iqr else []),
            _row("min / max", f"{fmt(result.min)} / {fmt(result.max)}"),
            _row("warm runs", f"{result.runs} (after {len(result.warmup)} warm-up)"),
            *([_row("each sample", result.batch_text())] if result.batch > 1 else []),
            _row("cold / warm", ratio_text(result.ratio)),
        ]
    rows += [
        _row("runs", result.counts_text()),
        _row("cold run: host", fmt(cold.host)),
        _row("cold run: wall", fmt(cold.wall)),
        _row("cold run: device", fmt(cold.device) if cold.device is not None else "no device clock"),
        _row("cold run: CPU", f"user {fmt(cold.cpu_user or 0.0)}, sys {fmt(cold.cpu_sys or 0.0)}"),
        _row("device", result.device),
        _row("synchronized", ", ".join(result.synchronized) or "nothing"),
        _row("device memory", memory_sentence(result.memory)),
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
    return ("<div class='cudatime-report'>" + header_html(result) + chart + findings_html(result)
            + why_html(result) + profile_html(result) + roofline_html(result) + details_html(result) + "</div>")


def _percent(fraction):
    return f"{100 * fraction:.0f}%"


def _stacked_bar(parts, total, show=fmt):
    """A one-line HTML bar: (label, amount, colour) segments of ``total``; ``show`` formats an amount
    (seconds by default; ``_percent`` for fractions)."""
    cells = "".join(
        f"<div title='{escape(label)}: {show(amount)}' style='flex:{amount / total:.4f};background:{colour};"
        f"color:white;font-size:75%;overflow:hidden;white-space:nowrap;padding:2px'>{escape(label)} {show(amount)}</div>"
        for label, amount, colour in parts if amount > 0)
    return f"<div style='display:flex;width:100%;max-width:700px;margin:4px 0'>{cells}</div>"


CAUSE_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


def why_html(result):
    """The cold run's causes as a list, and a bar splitting it into warm work, causes and remainder."""
    from ..explain import remainder

    if not result.cold_causes:
        return ""
    items = "".join(f"<li><b>{escape(c.name)}</b>{f' ({fmt(c.seconds)})' if c.seconds else ''}: {escape(c.detail)}</li>"
                    for c in result.cold_causes)
    measured = [c for c in result.cold_causes if c.explains and c.seconds]
    parts = [("warm work", result.median or 0.0, "#1f77b4")]
    parts += [(c.name, c.seconds, CAUSE_COLOURS[i % len(CAUSE_COLOURS)]) for i, c in enumerate(measured)]
    parts.append(("unexplained", remainder(measured, result.cold_time, result.median), "#7f7f7f"))
    return (f"<div class='cudatime-why'>cold run {fmt(result.cold_time)}:"
            + _stacked_bar(parts, sum(seconds for _, seconds, _ in parts) or 1.0) + f"<ul>{items}</ul></div>")


def profile_html(result):
    """The verdict, the busy fraction as a bar, and the top kernels or operators."""
    profile = result.profile
    if profile is None:
        return ""
    busy = ""
    if profile.busy_fraction is not None:
        busy = _stacked_bar([("GPU busy", profile.busy_fraction, "#2ca02c"),
                             ("idle", 1 - profile.busy_fraction, "#bbbbbb")], 1.0, show=_percent)
    rows = "".join(f"<tr><td style='text-align:left'>{escape(name)}</td><td>{count:,}</td><td>{fmt(seconds)}</td></tr>"
                   for name, count, seconds in profile.top)
    copies = f", {profile.copy_count:,} memcpy/memset" if profile.busy_fraction is not None else ""
    kept = f"<br>trace kept in <code>{escape(profile.trace_file)}</code>" if profile.trace_file else ""
    return (f"<div class='cudatime-profile'><b>{escape(profile.verdict)}</b><br>"
            f"{profile.kernel_count:,} {escape(profile.counted)}{copies} in {fmt(profile.window)}{kept}{busy}"
            f"<table><tr><th style='text-align:left'>name</th><th>calls</th><th>total</th></tr>{rows}</table></div>")
