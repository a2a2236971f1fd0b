"""``--profile``, ``--profile-cold`` and ``--trace``: one run under torch.profiler, summarized.
One more run after the warm runs by default, so that the timed runs are not affected;
``--profile-cold`` profiles the cold run instead (whose time is then inflated).
"""

from __future__ import annotations

import sys
from html import escape

from ...command.options import Flag, OptionError, Values, writable_file
from ...measure.runner import Watch
from ...render.report import percent, stacked_bar, table_html
from ...results.result import CudaTimeResult, Finding
from ...units import count_text
from ...units import format_seconds as fmt
from ..feature import Call, Feature, OneRunWatch, Unavailable
from .record import PROFILE, Profile, profile_lines
from .summary import TorchProfiler


def _profiled_run(values: Values) -> None:
    """One trace, one run: no --sweep; and a warm run to profile, unless --profile-cold."""
    if values.trace is not None and values.sweeps:
        raise OptionError("--trace keeps one run's trace: it cannot be combined with --sweep")
    if values.runs == 0 and (values.profile or ("warm" if values.trace else None)) == "warm":
        raise OptionError("-n 0 runs the cell once in all: use --profile-cold to profile that run")


RULES = (_profiled_run,)


class Profiling(Feature):
    name = "profile"
    flags = (
        Flag(("-p", "--profile"), "profile", "one more run, after the warm runs, under torch.profiler: kernels (or, "
             "on the CPU, operator calls) per run, GPU busy fraction, top kernels and a verdict such as "
             "\"launch-bound\". Timed runs are not affected.", const="warm", rules=RULES),
        Flag(("--profile-cold",), "profile", "profile the cold run instead (its time is then inflated)",
             const="cold", rules=RULES),
        Flag(("--trace",), "trace", "keep the profiled run's Chrome trace in FILE (.json, or .json.gz compressed; "
             "a file, never a folder) for Perfetto or chrome://tracing; implies -p. "
             "ipython_cudatime.profile_trace(FILE) reads it back. -p alone keeps no file", "FILE",
             writable_file("trace.json"), rules=RULES),
    )
    schema = staticmethod(PROFILE)
    record_checks = ((Profile, PROFILE),)
    record_rows = ("top",)
    section_title = "Profile"
    section_class = "cudatime-section-profile"

    def settings(self, values: Values) -> tuple[bool, str | None] | None:
        """(whether the cold run is profiled, where the trace is kept): -p, --profile-cold, or --trace
        (which profiles the warm run unless --profile-cold chose)."""
        mode = values.profile or ("warm" if values.trace is not None else None)
        return None if mode is None else (mode == "cold", values.trace)

    def watch(self, settings: tuple[bool, str | None], call: Call) -> Watch:
        torch = sys.modules.get("torch")
        if torch is None:
            raise Unavailable("--profile uses torch.profiler: import torch first")
        cold, trace = settings
        profiler = TorchProfiler(torch, trace)
        return OneRunWatch(profiler, None if cold else "profiled", lambda run, outcome: profiler.summary(run, cold),
                           profiler.cell)

    def text_lines(self, result: CudaTimeResult, record: Profile | None) -> list[str]:
        return profile_lines(record) if record is not None else []

    def findings(self, result: CudaTimeResult, record: Profile | None) -> list[Finding]:
        if record is None:
            return []
        warning = [Finding("profile-warning", f"Note: {record.warning}.")] if record.warning else []
        return [Finding("profile", f"Profile: {record.verdict}."), *warning]

    def section_html(self, result: CudaTimeResult, record: Profile | None) -> str:
        if record is None:
            return ""
        busy = ""
        if record.busy_fraction is not None:
            busy = stacked_bar([("GPU busy", record.busy_fraction, "#3d9a4b"),
                                ("idle", 1 - record.busy_fraction, "#808080")], 1.0, show=percent)
        rows = [(name, f"{count:,}", fmt(seconds)) for name, count, seconds in record.top]
        copies = f", {record.copy_count:,} memcpy/memset" if record.busy_fraction is not None else ""
        kept = (f"<br>trace kept in <span style='font-family:monospace'>{escape(record.trace_file)}</span>"
                if record.trace_file else "")
        return (f"<div class='cudatime-profile'><b>{escape(record.verdict)}</b><br>"
                f"{escape(count_text(record.kernel_count, record.counted))}{copies} in {fmt(record.window)}{kept}{busy}"
                + table_html(("name", "calls", "total"), rows) + "</div>")

    def extra_runs(self, record: Profile | None) -> list[str]:
        return ["1 profiled"] if record is not None and not record.cold else []
