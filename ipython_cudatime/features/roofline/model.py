"""``--roofline``'s rates, the counting run's FLOPs and bytes over the warm median, against the peaks of
``--peak`` or ``peaks.py`` for the dtype doing most FLOPs; the ridge (peak FLOP/s over bandwidth) splits
compute-bound cells from memory-bound ones. Knows nothing of torch: it reads ``OpStat`` records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...results.schema import AMOUNT, COUNT, SECONDS, TEXT, list_of, optional, record, row
from ...units import format_si
from . import peaks as peak_table

if TYPE_CHECKING:
    from ...results.result import Run

Peaks = tuple[float | None, float | None, str | None, list[str]]  # (peak_flops, peak_bandwidth, source, notes)

FUSION_HINT_SHARE = 0.5  # pointwise ops take this much of the ops' time: a fusable elementwise chain
BYTES_NOTE = ("bytes are each op's inputs and outputs, read and written once: a lower bound for unfused ops "
              "(caches can serve repeated reads of small tensors)")


@dataclass
class OpStat:
    """One aten op (per dtype and device): calls, FLOPs, bytes, and its time in the counting run.
    ``kind``: "counted" (FlopCounterMode), "pointwise", "view", "data" (no arithmetic) or "uncounted"."""

    name: str
    kind: str
    dtype: str
    device: str
    calls: int = 0
    flops: float = 0
    bytes: float = 0
    seconds: float = 0.0


@dataclass
class Roofline:
    """What the counting run counted, and the rates over the warm median. FLOP, bytes, seconds.

    flops            FlopCounterMode's FLOPs plus ``pointwise_flops`` (one per output element of
                     pointwise ops, which it does not count); ``bytes``: a lower bound (BYTES_NOTE)
    flop_rate        flops / warm median, ``byte_rate`` likewise (None without warm runs)
    peak_flops       the dense peak for ``dtype`` (``--peak`` or the table); ``peak_bandwidth``
    bound            "compute" (intensity ≥ ridge), "memory", or None without both peaks;
                     ``fraction_of_peak`` the achieved rate over the roof that binds
    uncounted        (op name, calls, share of the ops' time) for ops whose FLOPs nobody counts
    outside_share    share of the counting run outside PyTorch ops (NumPy, CuPy, JAX, Python)
    """

    flops: float
    bytes: float
    intensity: float | None = None
    flop_rate: float | None = None
    byte_rate: float | None = None
    peak_flops: float | None = None
    peak_bandwidth: float | None = None
    fraction_of_peak: float | None = None
    bound: str | None = None
    device: str = "cpu"
    dtype: str | None = None
    peak_source: str | None = None  # "the H200's bf16 dense peak", "the peak you passed (--peak)", or None
    pointwise_flops: float = 0
    uncounted: list[tuple[str, int, float]] = field(default_factory=list)
    outside_share: float = 0.0
    wall: float | None = None
    notes: list[str] = field(default_factory=list)
    verdict: str = ""

    @property
    def ridge(self) -> float | None:
        """The intensity where the memory roof meets the compute roof (FLOP/byte), or None."""
        if self.peak_flops and self.peak_bandwidth:
            return self.peak_flops / self.peak_bandwidth
        return None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, uncounted=[list(row) for row in self.uncounted], notes=list(self.notes),
                    ridge=self.ridge)


ROOFLINE = record({
    "flops": AMOUNT, "bytes": AMOUNT, "intensity": optional(AMOUNT), "flop_rate": optional(AMOUNT),
    "byte_rate": optional(AMOUNT), "peak_flops": optional(AMOUNT), "peak_bandwidth": optional(AMOUNT),
    "fraction_of_peak": optional(AMOUNT), "bound": optional(TEXT), "device": TEXT, "dtype": optional(TEXT),
    "peak_source": optional(TEXT), "pointwise_flops": AMOUNT, "uncounted": list_of(row(TEXT, COUNT, AMOUNT)),
    "outside_share": AMOUNT, "wall": optional(SECONDS), "notes": list_of(TEXT), "verdict": TEXT,
}, required=("flops", "bytes"))


@dataclass(frozen=True)
class PeakOverride:
    """``--peak FLOPS[,BYTES_PER_S]``: replaces the table's figures for this call."""

    flops: float
    bandwidth: float | None = None


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def _table_peaks(device_name: str, dtype: str, op_name: str, tf32: Mapping[str, bool]) -> Peaks:
    entry = peak_table.lookup(device_name)
    if entry is None:
        return None, None, None, [f"no peak for '{device_name}' in the table: pass --peak FLOPS[,BYTES_PER_S] "
                                  "(for example --peak 989e12,4.8e12) to compare with one"]
    notes = [entry.note] if entry.note else []
    family = "conv" if "convolution" in op_name else "matmul"
    column = dtype
    if dtype == "fp32" and tf32.get(family) and "tf32" in entry.flops:
        column = "tf32"
        setting = ("torch.backends.cuda.matmul.fp32_precision = 'tf32', allow_tf32 or "
                   "set_float32_matmul_precision('high')" if family == "matmul"
                   else "torch.backends.cudnn.allow_tf32 or cudnn.conv.fp32_precision = 'tf32'")
        notes.append(f"TF32 is on for float32 {'matrix products' if family == 'matmul' else 'convolutions'} "
                     f"({setting}): compared with the TF32 peak")
    flops = entry.flops.get(column)
    if flops is None:
        notes.append(f"the table has no {dtype} peak for the {entry.name}: rates against its bandwidth only")
        return None, entry.bandwidth, None, notes
    return flops, entry.bandwidth, f"the {entry.name}'s {column} dense peak", notes


def resolve_peaks(device: str, device_name: str, dtype: str, op_name: str, tf32: Mapping[str, bool],
                  override: PeakOverride | None) -> Peaks:
    """The peaks to compare with: ``--peak`` first, then the table for GPUs; none for the CPU."""
    if override is not None:
        entry = peak_table.lookup(device_name)  # its bandwidth where --peak gave none (the CPU has no entry)
        bandwidth = override.bandwidth or (entry.bandwidth if entry is not None else None)
        return override.flops, bandwidth, "the peak you passed (--peak)", []
    if device == "cpu":
        return None, None, None, ["no peak on the CPU (the table lists GPUs): pass --peak FLOPS[,BYTES_PER_S] "
                                  "to compare with one"]
    return _table_peaks(device_name, dtype, op_name, tf32)


def _roof(line: tuple[float | None, float | None], intensity: float | None, flop_rate: float | None,
          byte_rate: float | None) -> tuple[str | None, float | None]:
    """bound and fraction_of_peak from the peaks and the achieved rates. Work that computes
    nothing (a copy, a fill: intensity 0) is memory-bound on any device, FLOP peak or none: a
    uint8 or bool copy has no FLOP peak to look up, and needs none."""
    peak_flops, peak_bandwidth = line
    if peak_bandwidth and intensity is not None and (peak_flops or intensity == 0):
        if peak_flops and intensity >= peak_flops / peak_bandwidth:
            return "compute", flop_rate / peak_flops if flop_rate is not None else None
        return "memory", byte_rate / peak_bandwidth if byte_rate is not None else None
    if peak_flops and flop_rate is not None:
        return None, flop_rate / peak_flops
    if peak_bandwidth and byte_rate is not None:
        return None, byte_rate / peak_bandwidth
    return None, None


def _uncounted(stats: Sequence[OpStat]) -> list[tuple[str, int, float]]:
    total = sum(s.seconds for s in stats) or 1.0
    rows: dict[str, tuple[int, float]] = {}  # name -> (calls, seconds)
    for s in stats:
        if s.kind == "uncounted":
            calls, seconds = rows.get(s.name, (0, 0.0))
            rows[s.name] = (calls + s.calls, seconds + s.seconds)
    ranked = sorted(rows.items(), key=lambda item: -item[1][1])
    return [(name, calls, seconds / total) for name, (calls, seconds) in ranked]


def build(stats: Sequence[OpStat], run: Run, median: float | None, device_name: Callable[[str], str],
          tf32: Mapping[str, bool], override: PeakOverride | None = None, bookkeeping: float = 0.0,
          harness: float = 0.0) -> Roofline:
    """A Roofline from the counting run's ``stats`` and its ``run``, over ``median``. ``device_name``
    turns "cuda:0" into torch's name; ``bookkeeping`` (the counter's own time in the run) and
    ``harness`` (the harness's final synchronize and timing event) are no one's work, kept out of the
    outside share: the share of the run outside PyTorch ops."""
    flops = sum(s.flops for s in stats)
    nbytes = sum(s.bytes for s in stats)
    op_seconds = sum(s.seconds for s in stats)
    own = run.wall - harness if run.wall else 0.0
    top = max(stats, key=lambda s: (s.flops, s.bytes)) if stats else None  # most FLOPs; by bytes if none computed
    device = top.device if top else "cpu"
    dtype = top.dtype if top else None
    name = device_name(device) if top else "cpu"
    rates: tuple[float | None, float | None] = (flops / median, nbytes / median) if median else (None, None)
    roofline = Roofline(flops, nbytes, flops / nbytes if nbytes else None, *rates, device=name, dtype=dtype,
                        pointwise_flops=sum(s.flops for s in stats if s.kind == "pointwise"),
                        uncounted=_uncounted(stats), wall=run.wall,
                        outside_share=max(0.0, 1 - (op_seconds + bookkeeping) / own) if own > 0 else 0.0)
    if top is not None:
        peak_flops, peak_bandwidth, source, notes = resolve_peaks(device, name, top.dtype, top.name, tf32, override)
        roofline.peak_flops, roofline.peak_bandwidth, roofline.peak_source = peak_flops, peak_bandwidth, source
        roofline.notes.extend(notes)
        roofline.bound, roofline.fraction_of_peak = _roof((peak_flops, peak_bandwidth), roofline.intensity, *rates)
        if override is None and device != "cpu":
            roofline.notes.extend(_reached(roofline))
    pointwise_seconds = sum(s.seconds for s in stats if s.kind == "pointwise")
    roofline.verdict = verdict(roofline, pointwise_seconds / op_seconds if op_seconds else 0.0)
    return roofline


def _reached(r: Roofline) -> list[str]:
    """The cell against what this kind of card was measured to reach (``peaks.CEILINGS``), on the
    roof that binds, where a ceiling for it was measured: the datasheet's peak is never reached."""
    found = peak_table.lookup(r.device, peak_table.CEILINGS)
    if found is None:
        return []
    if r.bound == "compute" and r.flop_rate is not None and r.dtype in found.flops:
        rate, reached, what, unit = r.flop_rate, found.flops[r.dtype], f"a {r.dtype} matrix product", "FLOP/s"
    elif r.bound == "memory" and r.byte_rate is not None:
        rate, reached, what, unit = r.byte_rate, found.bandwidth, "a device copy", "B/s"
    else:
        return []
    return [f"{100 * rate / reached:.0f}% of what this kind of card reached on {what} "
            f"({format_si(reached, unit)}, {found.source})"]


def verdict(r: Roofline, pointwise_share: float = 0.0) -> str:
    if not r.flops and not r.bytes:
        return "no PyTorch ops ran in the counting run: nothing to rate"
    if r.flop_rate is None:
        return (f"counted {format_si(r.flops, 'FLOP')} and {format_si(r.bytes, 'B')}; no warm runs, "
                "so no rates (time at least one warm run)")
    intensity = f"intensity {_number(r.intensity)} FLOP/B" if r.intensity is not None else "no bytes counted"
    ridge = f", ridge {_number(r.ridge)}" if r.ridge else ""
    if r.bound == "compute":
        assert r.fraction_of_peak is not None  # _roof gives a bound its fraction once the rates are known
        return (f"{format_si(r.flop_rate, 'FLOP/s')}: {100 * r.fraction_of_peak:.0f}% of {r.peak_source} "
                f"({format_si(r.peak_flops, 'FLOP/s')}); compute-bound ({intensity}{ridge})")
    if r.bound == "memory":
        assert r.fraction_of_peak is not None  # as for "compute"
        hint = ("fusing this elementwise chain (torch.compile) saves traffic" if pointwise_share >= FUSION_HINT_SHARE
                else "moving fewer bytes (fusion, a smaller dtype) is what would speed it up")
        return (f"{format_si(r.byte_rate, 'B/s')}: {100 * r.fraction_of_peak:.0f}% of "
                f"the {format_si(r.peak_bandwidth, 'B/s')} memory bandwidth; memory-bound ({intensity}{ridge}): "
                f"{hint}")
    achieved = f"{format_si(r.flop_rate, 'FLOP/s')} and {format_si(r.byte_rate, 'B/s')} achieved ({intensity})"
    if r.fraction_of_peak is not None and r.peak_flops:
        return f"{achieved}: {100 * r.fraction_of_peak:.0f}% of {r.peak_source} ({format_si(r.peak_flops, 'FLOP/s')})"
    if r.fraction_of_peak is not None:
        return f"{achieved}: {100 * r.fraction_of_peak:.0f}% of {format_si(r.peak_bandwidth, 'B/s')} bandwidth"
    return achieved


def sentences(r: Roofline) -> list[tuple[str, str]]:
    outside = (f"; {100 * r.outside_share:.0f}% of the counting run was spent outside them "
               "(NumPy, CuPy, JAX or Python work)" if r.outside_share >= 0.01 else "")
    return [("roofline", f"Roofline: {r.verdict}."),
            ("not-counted", f"Not counted: only PyTorch ops are seen{outside}."),
            *(("roofline-note", f"Note: {note}.") for note in r.notes)]
