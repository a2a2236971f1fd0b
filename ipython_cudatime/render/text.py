"""The text report: what terminal IPython prints, and the fallback everywhere else."""

from ..findings import findings
from ..units import format_seconds as fmt
from ..units import ratio_text


def _clocks(run):
    parts = [f"host {fmt(run.host)}", f"wall {fmt(run.wall)}"]
    if run.device is not None:
        parts.append(f"device {fmt(run.device)}")
    return ", ".join(parts)


def _profile_lines(profile):
    which = "the cold run" if profile.cold else "one extra run"
    lines = [f"profile  : {which} ({fmt(profile.wall)}): {profile.kernel_count:,} {profile.counted}, "
             f"{fmt(profile.kernel_time)} in them"
             + (f", GPU busy {100 * profile.busy_fraction:.0f}%" if profile.busy_fraction is not None else "")]
    lines += [f"  {seconds / profile.wall * 100 if profile.wall else 0:5.1f}%  {count:>6,}×  {name}"
              for name, count, seconds in profile.top]
    return lines


def render_text(result):
    """``%time``'s two lines for the cold run, then cold vs warm and what they mean."""
    cold = result.cold
    total = (cold.cpu_user or 0.0) + (cold.cpu_sys or 0.0)
    lines = [
        f"CPU times: user {fmt(cold.cpu_user or 0.0)}, sys: {fmt(cold.cpu_sys or 0.0)}, total: {fmt(total)}",
        f"Wall time: {fmt(cold.wall)}",
        f"cold run : {fmt(result.cold_time)}  ({_clocks(cold)})",
    ]
    if result.median is not None:
        lines.append(
            f"warm     : {fmt(result.median)} median ± {fmt(result.iqr)} IQR over {result.runs} "
            f"run{'s' if result.runs != 1 else ''} ({result.clock} clock; "
            f"min {fmt(result.min)}, max {fmt(result.max)}, mean {fmt(result.mean)} ± {fmt(result.stdev)})"
        )
        lines.append(f"cold/warm: {ratio_text(result.ratio)}")
    else:
        lines.append("warm     : no warm runs")
    for cause in result.cold_causes:
        seconds = f" ({fmt(cause.seconds)})" if cause.seconds else ""
        lines.append(f"why      : {cause.name}{seconds}: {cause.detail}")
    if result.profile is not None:
        lines.extend(_profile_lines(result.profile))
    synced = ", ".join(result.synchronized) if result.synchronized else "nothing (no device framework active)"
    lines.append(f"device   : {result.device}; synchronized: {synced}")
    lines.extend(finding.text for finding in findings(result))
    return "\n".join(lines)
