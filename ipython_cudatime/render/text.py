"""The text report: what terminal IPython prints, and the fallback everywhere else."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_seconds as fmt
from ..units import inert, plain, ratio_text

if TYPE_CHECKING:
    from ..clocks import Run
    from ..results.result import CudaTimeResult
    from .findings import Reading


def _clocks(run: Run) -> str:
    parts = [f"host {fmt(run.host)}", f"wall {fmt(run.wall)}"]
    if run.device is not None:
        parts.append(f"device {fmt(run.device)}")
    return ", ".join(parts)


def _warm_line(result: CudaTimeResult) -> str:
    """Median with its 95% interval, and spread: the IQR as "IQR 1.2 ms" (a width, not a ±
    half-width), or with fewer than ``IQR_MIN_RUNS`` warm runs only min and max."""
    runs = f"{result.runs} run{'s' if result.runs != 1 else ''}"
    if result.batch > 1:
        runs = f"{result.runs} samples of {result.batch:,} runs"
    extremes = f"min {fmt(result.min)}, max {fmt(result.max)}"
    median = f"warm     : {fmt(result.median)} median ({result.ci_text()})"
    if not result.has_iqr:
        return f"{median} over {runs} ({result.clock} clock; {extremes})"
    return (f"{median}, IQR {fmt(result.iqr)}, over {runs} ({result.clock} clock; "
            f"{extremes}, mean {fmt(result.mean)} ± {fmt(result.stdev)} std)")


def render_text(reading: Reading) -> str:
    """``%time``'s two lines for the cold run, then cold vs warm and what they mean."""
    result = reading.result
    cold = result.cold
    total = (cold.cpu_user or 0.0) + (cold.cpu_sys or 0.0)
    lines = [
        f"CPU times: user {fmt(cold.cpu_user or 0.0)}, sys: {fmt(cold.cpu_sys or 0.0)}, total: {fmt(total)}",
        f"Wall time: {fmt(cold.wall)}",
        f"cold run : {fmt(result.cold_time)}  ({_clocks(cold)})",
    ]
    if result.median is not None:
        lines.append(_warm_line(result))
        if result.batch > 1:
            lines.append(f"samples  : {result.batch_text()}")
        lines.append(f"cold/warm: {ratio_text(result.ratio)}")
    else:
        lines.append("warm     : no warm runs")
    lines.append(f"runs     : {result.counts_text()}")
    for keeper, record in reading.pairs():
        lines.extend(keeper.text_lines(result, record))
    synced = ", ".join(result.synchronized) if result.synchronized else "nothing (no device framework active)"
    lines.append(inert(f"device   : {result.device}; synchronized: {synced}", newlines=False))  # a loaded field's
    lines.extend(finding.text for finding in reading.findings)
    return plain("\n".join(lines))
