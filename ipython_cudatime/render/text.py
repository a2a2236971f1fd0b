"""The text report: what terminal IPython prints, and the fallback everywhere else."""

from ..cpu_context import pools_text
from ..findings import findings
from ..units import format_seconds as fmt
from ..units import count_text, percent_text
from ..units import plain, ratio_text
from .roofline import memory_line, roofline_lines


def _clocks(run):
    parts = [f"host {fmt(run.host)}", f"wall {fmt(run.wall)}"]
    if run.device is not None:
        parts.append(f"device {fmt(run.device)}")
    return ", ".join(parts)


def _profile_source(profile):
    if profile.wall is None:
        return f"trace {profile.trace_file}" if profile.trace_file else "trace"
    return f"{'the cold run' if profile.cold else 'one extra run'} ({fmt(profile.wall)})"


def _device_lines(profile):
    """Launches, synchronization and where device time went, for a profile with a traced device."""
    lines = []
    if profile.launch_count:
        lines.append(f"           launches: {profile.launch_count:,}, {fmt(profile.launch_mean)} of host time each "
                     f"(mean); host blocked in synchronize calls: {fmt(profile.sync_time)}")
    if profile.kernel_count + profile.copy_count:
        lines.append("           device time: " + ", ".join(f"{kind} {fmt(seconds)}"
                                                        for kind, seconds in profile.breakdown.items()))
    return lines


def _cut(name, width=100):
    """Kernel names run to hundreds of characters of C++ templates: the first ``width`` of them."""
    return name if len(name) <= width else name[: width - 1] + "…"


def profile_lines(profile):
    """The ``profile  :`` block: counts, busy fraction, launches, breakdown, top names, the trace kept."""
    device = profile.busy_fraction is not None
    counts = count_text(profile.kernel_count, profile.counted)
    if device:
        counts += f", {profile.copy_count:,} memcpy/memset"
    lines = [f"profile  : {_profile_source(profile)}: {counts}, {fmt(profile.kernel_time)} in "
             f"{'kernels' if device else 'them'}"
             + (f"; GPU busy {percent_text(profile.busy_fraction)} of {fmt(profile.window)}"
                if device and profile.window else "")]
    if device:
        lines += _device_lines(profile)
    lines += [f"  {percent_text(seconds / profile.window) if profile.window else '':>7}  {count:>6,}×  {_cut(name)}"
              for name, count, seconds in profile.top]
    if profile.trace_file and profile.wall is not None:
        lines.append(f"trace    : {profile.trace_file} (open it in Perfetto or chrome://tracing)")
    return lines


def profile_text(profile):
    """A ``Profile`` on its own (what ``profile_trace`` returns): the block and its verdict."""
    return plain("\n".join(profile_lines(profile) + [f"verdict  : {profile.verdict}"]))


def _warm_line(result):
    """Median and spread: the IQR as "IQR 1.2 ms" (a width, not a ± half-width), or with
    fewer than ``IQR_MIN_RUNS`` warm runs only min and max."""
    runs = f"{result.runs} run{'s' if result.runs != 1 else ''}"
    if result.batch > 1:
        runs = f"{result.runs} samples of {result.batch:,} runs"
    extremes = f"min {fmt(result.min)}, max {fmt(result.max)}"
    if not result.has_iqr:
        return f"warm     : {fmt(result.median)} median over {runs} ({result.clock} clock; {extremes})"
    return (f"warm     : {fmt(result.median)} median, IQR {fmt(result.iqr)}, over {runs} ({result.clock} clock; "
            f"{extremes}, mean {fmt(result.mean)} ± {fmt(result.stdev)} std)")


def threads_text(result):
    """What --threads N set, as the warm runs saw it: ``--threads 1: torch 1, openblas 1``."""
    context = result.cpu_context
    return f"--threads {result.task.threads}: " + (pools_text(context.threads) if context is not None else "not read")


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
        lines.append(_warm_line(result))
        if result.batch > 1:
            lines.append(f"samples  : {result.batch_text()}")
        lines.append(f"cold/warm: {ratio_text(result.ratio)}")
    else:
        lines.append("warm     : no warm runs")
    lines.append(f"runs     : {result.counts_text()}")
    for cause in result.cold_causes:
        seconds = f" ({fmt(cause.seconds)})" if cause.seconds else ""
        lines.append(f"why      : {cause.name}{seconds}: {cause.detail}")
    if result.profile is not None:
        lines.extend(profile_lines(result.profile))
    if result.roofline is not None:
        lines.extend(roofline_lines(result.roofline))
    if result.memory is not None or result.on_gpu:  # a cell on the CPU has no device memory to speak of
        lines.append(memory_line(result.memory))
    synced = ", ".join(result.synchronized) if result.synchronized else "nothing (no device framework active)"
    lines.append(f"device   : {result.device}; synchronized: {synced}")
    if result.task is not None and result.task.threads is not None:
        lines.append(f"threads  : {threads_text(result)}")
    lines.extend(finding.text for finding in findings(result))
    return plain("\n".join(lines))
