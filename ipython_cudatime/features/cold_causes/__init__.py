"""Why the cold run was slow: the probes (``probes``) read around it name its causes. Always on, and
cheap (microseconds a probe); the report sets the causes' seconds against the cold run and says how
much of it no measured cause accounts for."""

from __future__ import annotations

from html import escape
from typing import Any

from ...measure.runner import Watch
from ...render.chart import COLOURS
from ...render.report import stacked_bar
from ...results.result import CudaTimeResult, Finding
from ...results.schema import list_of
from ...units import format_seconds as fmt
from ..feature import Call, Feature
from .probe import CAUSE, Cause
from .probes import OTHER_INPUTS, ColdWatch, remainder

COLD_RATIO = 3.0  # cold run this many times a warm run: one-time setup...
COLD_MIN_GAP = 100e-6  # ... and slower by more than this, so that µs jitter is not "setup"
CAUSE_COLOURS = ("#9a75c9", "#a0705a", "#d0659f", "#a5a82e", "#3fb3b3")


def _named(cause: Cause) -> str:
    """``torch.compile compilation (1.20 s)``: its seconds where measured."""
    return cause.name + (f" ({fmt(cause.seconds)})" if cause.seconds else "")


def _sentence(result: CudaTimeResult, causes: list[Cause], ratio: float) -> str:
    other = " ".join(cause.detail for cause in causes if cause.name == OTHER_INPUTS)
    explaining = [cause for cause in causes if cause.explains and cause.name != OTHER_INPUTS]
    rest = remainder(explaining, result.cold_time, result.median)
    if other:  # the gap is the warm runs' other job, not a mystery: never "unexplained"
        said = _sentence(result, explaining, ratio) if explaining else (
            f"The cold run was {ratio:.0f}× slower than a warm run, but the warm runs timed another job.")
        return f"{said} {other}"
    if not explaining:
        return (f"The cold run was {ratio:.0f}× slower than a warm run, and none of the checks "
                "(device context, memory pool, cuBLAS, compilation) explains it: "
                f"{fmt(rest)} is unexplained.")
    named = ", ".join(_named(cause) for cause in explaining)
    return (f"The cold run was {ratio:.0f}× slower than a warm run. It paid one-time setup: {named}; "
            f"{fmt(rest)} of it is not accounted for by a measured cause. Later runs do not pay it again.")


class ColdCauses(Feature):
    name = "cold_causes"
    schema = staticmethod(list_of(CAUSE))
    record_checks = ((Cause, CAUSE),)  # its record: a list of causes
    section_title = "Why the cold run was slow"
    section_class = "cudatime-section-why"

    def watch(self, settings: bool, call: Call) -> Watch:
        return ColdWatch.detect(call.probes, call.source)

    def from_json(self, data: list[dict[str, Any]] | None) -> list[Cause] | None:
        return None if data is None else [Cause(**cause) for cause in data]

    def text_lines(self, result: CudaTimeResult, record: list[Cause] | None) -> list[str]:
        return [f"why      : {_named(cause)}: {cause.detail}" for cause in record or []]

    def findings(self, result: CudaTimeResult, record: list[Cause] | None) -> list[Finding]:
        ratio, median = result.ratio, result.median
        if ratio is None or median is None or ratio < COLD_RATIO or result.cold_time - median <= COLD_MIN_GAP:
            return []
        return [Finding("cold", _sentence(result, record or [], ratio))]

    def section_html(self, result: CudaTimeResult, record: list[Cause] | None) -> str:
        if not record:
            return ""
        items = "".join(f"<li><b>{escape(c.name)}</b>{f' ({fmt(c.seconds)})' if c.seconds else ''}: "
                        f"{escape(c.detail)}</li>" for c in record)
        measured = [c for c in record if c.explains and c.seconds]
        parts = [("warm work", result.median or 0.0, COLOURS["warm"])]
        parts += [(c.name, c.seconds or 0.0, CAUSE_COLOURS[i % len(CAUSE_COLOURS)]) for i, c in enumerate(measured)]
        parts.append(("unexplained", remainder(measured, result.cold_time, result.median), "#808080"))
        return (f"<div class='cudatime-why'>cold run {fmt(result.cold_time)}:"
                + stacked_bar(parts, sum(seconds for _, seconds, _ in parts) or 1.0)
                + f"<ul style='margin:4px 0;padding-left:20px'>{items}</ul></div>")
