"""The ``--profile`` record, ``Profile``, and its words: the text report's ``profile  :`` block, and a
profile on its own (what ``profile_trace`` prints). The words sit beside the record, so that a
profile read from a file prints itself; ``summary`` makes records, ``verdicts`` judges them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...results.schema import AMOUNT, COUNT, FLAG, SECONDS, TEXT, dict_of, list_of, optional, record, row
from ...units import count_text, percent_text, plain
from ...units import format_seconds as fmt

if TYPE_CHECKING:
    from IPython.lib.pretty import RepresentationPrinter


@dataclass
class Profile:
    """What one profiled run (or one trace file) did. Times in seconds.

    ``kernel_count`` counts ``kernel`` events (without a traced device: operator calls, as
    ``counted`` says). ``window``, the span of the busy fraction: the profiled run's marked span,
    else the first device interval's start to the last one's end. ``sync_time``: the host blocked in
    synchronize calls of the cell's own marked code, never the harness's around it.
    """

    kernel_count: int
    kernel_time: float
    busy_fraction: float | None  # None without a traced device (operator calls counted)
    top: list[tuple[str, int, float]] = field(default_factory=list)  # (name, count, total seconds)
    verdict: str = ""
    counted: str = "device kernels"
    wall: float | None = None  # the profiled run's own wall clock (reported apart from the timed runs); None for a file
    cold: bool = False
    warning: str | None = None
    copy_count: int = 0
    window: float | None = None
    breakdown: dict[str, float] = field(default_factory=dict)
    launch_count: int = 0
    launch_mean: float | None = None
    sync_time: float = 0.0
    kind: str = ""  # the verdict's stable key: "GPU-bound", "launch-bound", ...
    trace_file: str | None = None  # where --trace kept the trace, or the file profile_trace read

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, top=[list(row) for row in self.top], breakdown=dict(self.breakdown))

    def __str__(self) -> str:
        return plain("\n".join(profile_lines(self) + [f"verdict  : {self.verdict}"]))

    def _repr_pretty_(self, printer: RepresentationPrinter, cycle: bool) -> None:
        printer.text(str(self))


PROFILE = record({
    "kernel_count": COUNT, "kernel_time": SECONDS, "busy_fraction": optional(AMOUNT),
    "top": list_of(row(TEXT, COUNT, SECONDS)), "verdict": TEXT, "counted": TEXT, "wall": optional(SECONDS),
    "cold": FLAG, "warning": optional(TEXT), "copy_count": COUNT, "window": optional(SECONDS),
    "breakdown": dict_of(SECONDS), "launch_count": COUNT, "launch_mean": optional(SECONDS),
    "sync_time": SECONDS, "kind": TEXT, "trace_file": optional(TEXT),
}, required=("kernel_count", "kernel_time", "busy_fraction"))


def _cut(name: str, width: int = 100) -> str:
    """Kernel names run to hundreds of characters of C++ templates: the first ``width`` of them."""
    return name if len(name) <= width else name[: width - 1] + "…"


def profile_lines(profile: Profile) -> list[str]:
    """The ``profile  :`` block: counts, busy fraction, launches, breakdown, top names, the trace kept."""
    device = profile.busy_fraction is not None
    copies = f", {profile.copy_count:,} memcpy/memset" if device else ""
    if profile.wall is None:
        source = f"trace {profile.trace_file}" if profile.trace_file else "trace"
    else:
        source = f"{'the cold run' if profile.cold else 'one extra run'} ({fmt(profile.wall)})"
    lines = [f"profile  : {source}: {count_text(profile.kernel_count, profile.counted)}{copies}, "
             f"{fmt(profile.kernel_time)} in {'kernels' if device else 'them'}"
             + (f"; GPU busy {percent_text(profile.busy_fraction)} of {fmt(profile.window)}"
                if profile.busy_fraction is not None and profile.window else "")]
    if device and profile.launch_count:  # with a traced device: launches, synchronization, where device time went
        lines.append(f"           launches: {profile.launch_count:,}, {fmt(profile.launch_mean)} of host time each "
                     "(mean, as profiled: the profiler's bookkeeping inflates each launch call); host blocked in "
                     f"synchronize calls: {fmt(profile.sync_time)}")
    if device and profile.kernel_count + profile.copy_count:
        lines.append("           device time: " + ", ".join(f"{kind} {fmt(seconds)}"
                                                        for kind, seconds in profile.breakdown.items()))
    lines += [f"  {percent_text(seconds / profile.window) if profile.window else '':>7}  {count:>6,}×  {_cut(name)}"
              for name, count, seconds in profile.top]
    if profile.trace_file and profile.wall is not None:
        lines.append(f"trace    : {profile.trace_file} (open it in Perfetto or chrome://tracing)")
    return lines
