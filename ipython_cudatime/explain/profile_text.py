"""A ``Profile`` in words: the text report's ``profile  :`` block, and a profile on its own (what
``profile_trace`` prints). Beside the record, so that a profile read from a file prints itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import count_text, percent_text, plain
from ..units import format_seconds as fmt

if TYPE_CHECKING:
    from .profile import Profile


def _profile_source(profile: Profile) -> str:
    if profile.wall is None:
        return f"trace {profile.trace_file}" if profile.trace_file else "trace"
    return f"{'the cold run' if profile.cold else 'one extra run'} ({fmt(profile.wall)})"


def _device_lines(profile: Profile) -> list[str]:
    """Launches, synchronization and where device time went, for a profile with a traced device."""
    lines = []
    if profile.launch_count:
        lines.append(f"           launches: {profile.launch_count:,}, {fmt(profile.launch_mean)} of host time each "
                     "(mean, as profiled: the profiler's bookkeeping inflates each launch call); host blocked in "
                     f"synchronize calls: {fmt(profile.sync_time)}")
    if profile.kernel_count + profile.copy_count:
        lines.append("           device time: " + ", ".join(f"{kind} {fmt(seconds)}"
                                                        for kind, seconds in profile.breakdown.items()))
    return lines


def _cut(name: str, width: int = 100) -> str:
    """Kernel names run to hundreds of characters of C++ templates: the first ``width`` of them."""
    return name if len(name) <= width else name[: width - 1] + "…"


def profile_lines(profile: Profile) -> list[str]:
    """The ``profile  :`` block: counts, busy fraction, launches, breakdown, top names, the trace kept."""
    device = profile.busy_fraction is not None
    counts = count_text(profile.kernel_count, profile.counted)
    if device:
        counts += f", {profile.copy_count:,} memcpy/memset"
    lines = [f"profile  : {_profile_source(profile)}: {counts}, {fmt(profile.kernel_time)} in "
             f"{'kernels' if device else 'them'}"
             + (f"; GPU busy {percent_text(profile.busy_fraction)} of {fmt(profile.window)}"
                if profile.busy_fraction is not None and profile.window else "")]
    if device:
        lines += _device_lines(profile)
    lines += [f"  {percent_text(seconds / profile.window) if profile.window else '':>7}  {count:>6,}×  {_cut(name)}"
              for name, count, seconds in profile.top]
    if profile.trace_file and profile.wall is not None:
        lines.append(f"trace    : {profile.trace_file} (open it in Perfetto or chrome://tracing)")
    return lines


def profile_text(profile: Profile) -> str:
    """A ``Profile`` on its own (what ``profile_trace`` returns): the block and its verdict."""
    return plain("\n".join(profile_lines(profile) + [f"verdict  : {profile.verdict}"]))
