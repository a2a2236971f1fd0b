"""``--roofline`` and ``--peak``: how good is the time? One more run counts the FLOPs and bytes of
every PyTorch op (``op_counter``); over the warm median they are rates against the device's peaks
(``model``). The HTML section's log-log chart is SVG drawn by hand (no matplotlib), shown only where
both peaks are known, as an ``<img>``: an untrusted notebook strips inline ``<svg>``.
"""

from __future__ import annotations

import math
import sys
from html import escape
from typing import Any

from ...command.options import Flag, OptionError, Values
from ...measure.runner import Watch
from ...render.chart import COLOURS, MUTED, PANEL, img_tag
from ...results.result import CudaTimeResult, Finding
from ...units import format_seconds as fmt
from ...units import format_si
from ..feature import Call, Feature, OneRunWatch, Unavailable
from .model import BYTES_NOTE, ROOFLINE, PeakOverride, Roofline, sentences

UNCOUNTED_SHOWN = 5
# as the run chart (render.image): drawn for a phone, 15 px text that stays 11 px or more shown 200 px wide
SVG_SIZE = (270, 230)
FONT_PX = 15
MARGIN = (104, 12, 14, 46)  # left ("100 TFLOP/s"), right, top, bottom (a row of ticks and the axis's name)


def _items(r: Roofline) -> list[str]:
    """The counting run's numbers, its rates and what was not counted: the text block's lines, the section's list."""
    items = [f"one extra counting run ({fmt(r.wall)}, not in the statistics): {_counted(r)}", _rates(r), BYTES_NOTE]
    return items + ([f"FLOPs not counted for: {_uncounted(r)}"] if r.uncounted else [])


def _counted(r: Roofline) -> str:
    pointwise = (f", {format_si(r.pointwise_flops, 'FLOP')} of them pointwise (one per output element)"
                 if r.pointwise_flops else "")
    where = f"{r.dtype} on {r.device}" if r.dtype else r.device
    return f"{format_si(r.flops, 'FLOP')}{pointwise}, {format_si(r.bytes, 'B')} moved ({where})"


def _uncounted(r: Roofline) -> str:
    rows = r.uncounted[:UNCOUNTED_SHOWN]
    more = f", and {len(r.uncounted) - len(rows)} more" if len(r.uncounted) > len(rows) else ""
    return ", ".join(f"{name} ({100 * share:.0f}% of op time)" for name, _, share in rows) + more


def _rates(r: Roofline) -> str:
    if not r.flops and not r.bytes:
        return "no PyTorch ops counted: no rates"
    if r.flop_rate is None:
        return "no warm runs: no rates"
    intensity = f"; intensity {r.intensity:.3g} FLOP/B" if r.intensity is not None else ""
    peaks = [format_si(value, unit) for value, unit in ((r.peak_flops, "FLOP/s"), (r.peak_bandwidth, "B/s")) if value]
    against = f" (peak {', '.join(peaks)})" if peaks else ""
    return (f"{format_si(r.flop_rate, 'FLOP/s')}, {format_si(r.byte_rate, 'B/s')} over the warm median"
            f"{intensity}{against}")


def _scale(value: float, low: float, high: float, size: float, flip: bool = False) -> float:
    position = (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low))
    return size * (1 - position) if flip else size * position


def _decades(low: float, high: float, size: float, label_px: float) -> list[float]:
    """The powers of ten from ``low`` to ``high``, every other one (or fewer) where ``size`` px
    would hold fewer than one ``label_px`` wide label a decade."""
    powers = range(math.ceil(math.log10(low)), math.floor(math.log10(high)) + 1)
    step = max(1, math.ceil(label_px * (math.log10(high) - math.log10(low)) / size))
    return [10.0 ** e for e in powers if e % step == 0]


def roofline_svg(r: Roofline) -> str:
    """A log-log roofline (FLOP/s against FLOP/B) with this cell as a point; "" without both peaks."""
    ridge, peak_flops, bandwidth = r.ridge, r.peak_flops, r.peak_bandwidth
    if ridge is None or peak_flops is None or bandwidth is None or not r.intensity or not r.flop_rate:
        return ""  # a ridge needs both peaks
    width, height = SVG_SIZE
    left, right, top, bottom = MARGIN
    plot_w, plot_h = width - left - right, height - top - bottom
    x_lo, x_hi = min(r.intensity, ridge) / 10, max(r.intensity, ridge) * 10
    y_lo, y_hi = min(r.flop_rate, bandwidth * x_lo) / 2, max(peak_flops, r.flop_rate) * 2

    def xy(intensity: float, rate: float) -> tuple[float, float]:
        return (left + _scale(intensity, x_lo, x_hi, plot_w), top + _scale(rate, y_lo, y_hi, plot_h, flip=True))

    roof = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(x_lo, bandwidth * x_lo), xy(ridge, peak_flops),
                                                    xy(x_hi, peak_flops)))
    px, py = xy(r.intensity, r.flop_rate)
    ticks = "".join(f"<text x='{xy(v, y_lo)[0]:.1f}' y='{height - bottom + FONT_PX + 2}' text-anchor='middle'>"
                    f"{v:g}</text>" for v in _decades(x_lo, x_hi, plot_w, 3.5 * FONT_PX))
    ticks += "".join(f"<text x='{left - 4}' y='{xy(x_lo, v)[1] + FONT_PX / 3:.1f}' text-anchor='end'>"
                     f"{escape(format_si(v, 'FLOP/s'))}</text>" for v in _decades(y_lo, y_hi, plot_h, 1.4 * FONT_PX))
    return (f"<svg class='cudatime-roofline' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"font-size='{FONT_PX}' font-family='sans-serif' fill='{MUTED}'>"
            f"<rect width='100%' height='100%' fill='{PANEL}'/>"
            f"<rect x='{left}' y='{top}' width='{plot_w}' height='{plot_h}' fill='none' stroke='{MUTED}'/>"
            f"<polyline points='{roof}' fill='none' stroke='{COLOURS['warm']}' stroke-width='2'/>"
            f"<circle cx='{px:.1f}' cy='{py:.1f}' r='4' fill='{COLOURS['cold']}'><title>this cell: "
            f"{escape(format_si(r.flop_rate, 'FLOP/s'))} at {r.intensity:.3g} FLOP/B</title></circle>"
            f"{ticks}<text x='{width - right}' y='{height - 5}' text-anchor='end'>"
            f"FLOP/byte, ridge {ridge:.3g}</text></svg>")


_SI = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def _peak(name: str, text: str) -> PeakOverride:
    """``989e12,4.8e12``, ``989T,4.8T`` or ``989T``: one or two positive numbers, each with an optional
    decimal prefix."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > 2:
        raise OptionError(f"{name} expects FLOPS[,BYTES_PER_S], got {text!r}")
    rates = []
    for part in parts:
        scale = _SI.get(part[-1:], 1.0)
        try:
            value = float(part[:-1] if scale != 1.0 else part) * scale
        except ValueError:
            value = math.nan
        if not (value > 0 and math.isfinite(value)):
            raise OptionError(f"{name} expects FLOPS[,BYTES_PER_S] as positive numbers (989e12,4.8e12 or "
                              f"989T,4.8T), got {part!r}")
        rates.append(value)
    return PeakOverride(*rates)


class RooflineFeature(Feature):
    name = "roofline"
    flags = (
        Flag(("--roofline",), "roofline", "one more run, after the warm runs, counting PyTorch ops' FLOPs (torch's "
             "FlopCounterMode) and bytes (each op's inputs and outputs: a lower bound on traffic): FLOP/s and "
             "bytes/s over the warm median, against the GPU's datasheet peak, and a compute- or memory-bound "
             "verdict. Only PyTorch ops are counted. Timed runs are not affected.", default=False),
        Flag(("--peak",), "peak", "the peaks to compare with (implies --roofline), e.g. --peak 989e12,4.8e12 or "
             "--peak 989T,4.8T; without it the table of common GPUs is used (none on the CPU)",
             "FLOPS[,BYTES_PER_S]", _peak),
    )
    schema = staticmethod(ROOFLINE)
    record_checks = ((Roofline, ROOFLINE),)
    record_rows = ("uncounted",)
    section_title = "Roofline"
    section_class = "cudatime-section-roofline"
    columns = ("FLOP/s", "B/s", "of peak")

    def settings(self, values: Values) -> tuple[PeakOverride | None] | None:
        """``(--peak's figures)``, None in it for the table of common GPUs; None: off."""
        return (values.peak,) if values.roofline or values.peak is not None else None

    def watch(self, settings: tuple[PeakOverride | None], call: Call) -> Watch:
        if sys.modules.get("torch") is None:
            raise Unavailable("--roofline counts PyTorch ops: import torch first (NumPy, CuPy and JAX work is "
                              "not counted)")
        from .op_counter import OpCounter  # imports torch: only once the user has

        counter = OpCounter(settings[0])
        return OneRunWatch(counter, "counting", lambda run, outcome: counter.summary(run, outcome.median,
                                                                                    outcome.harness.wall))

    def text_lines(self, result: CudaTimeResult, record: Roofline | None) -> list[str]:
        """The counted numbers and the rates (the verdict itself is a finding)."""
        heads = ("roofline : ", "rates    : ", " " * 11, "")
        return [head + item for head, item in zip(heads, _items(record))] if record is not None else []

    def findings(self, result: CudaTimeResult, record: Roofline | None) -> list[Finding]:
        return [Finding(kind, text) for kind, text in sentences(record)] if record is not None else []

    def section_html(self, result: CudaTimeResult, record: Roofline | None) -> str:
        if record is None:
            return ""
        svg = roofline_svg(record)
        chart = img_tag(svg.encode(), "roofline: this cell against the device peaks", SVG_SIZE[0]) if svg else ""
        items = "".join(f"<li>{escape(item)}</li>" for item in _items(record))
        return f"<div class='cudatime-roofline'><b>{escape(record.verdict)}</b><br>{chart}<ul>{items}</ul></div>"

    def cells(self, record: Roofline | None) -> tuple[str, ...]:
        if record is None or record.flop_rate is None:
            return ("", "", "")
        if not (record.flops or record.bytes):
            return ("not counted", "", "")
        fraction = record.fraction_of_peak
        return (format_si(record.flop_rate, "FLOP/s"), format_si(record.byte_rate, "B/s"),
                f"{100 * fraction:.0f}% ({record.bound or 'peak'})" if fraction is not None else "")

    def table_fields(self, record: Roofline | None) -> dict[str, Any]:
        if record is None:
            return {}
        return {"flop_rate": record.flop_rate, "byte_rate": record.byte_rate,
                "fraction_of_peak": record.fraction_of_peak}

    def extra_runs(self, record: Roofline | None) -> list[str]:
        return ["1 counting"] if record is not None else []
