"""Why warm runs were noisy or slow, from the CPU facts of the measurement (``context``).

Two symptoms: *noisy* (an answer in doubt: ``is_noisy``) or *starved* (the timing thread waited for a
core); runs that vary around a median they pin down get at most a quiet note (``quiet_note``). A cause
is named only where the facts support it (``_cause``). The warning is one line, its full reasoning
(``NoiseCause.text``) goes under "Why"; the same check serves a report, every sweep point and every
compared result.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...units import format_seconds as fmt
from ...units import percent_text
from .context import CpuContext, pools_text

if TYPE_CHECKING:
    from ...results.result import CudaTimeResult

# The median's 95% interval reaching past 10% of it: the answer is in doubt (pyperf calls a benchmark
# unstable past a standard deviation of 10% of the mean); a finer comparison is decided by its own
# ratio's interval (``contrast``)...
NOISY_CI = 0.10
# ... by more than this in absolute terms: a synchronized run's own jitter (the synchronize call, the
# scheduler) is a few µs; a wider spread is the machine's, a narrower one the timer's.
NOISY_MIN_IQR = 20e-6
VARIES = 0.10  # an IQR above 10% of the median, with the median pinned down: a quiet note, not a warning
MODES_MIN_RUNS = 10  # warm samples from which two groups can be told apart...
MODE_SHARE = 5  # ... each holding at least a fifth of them...
MODE_GAP = 0.10  # ... with a gap between them of 10% of the median or more...
MODE_SPREAD = 2  # ... and this many times the spread (IQR) within either group
JITTER_TIMES = 3  # with null runs measured: a warm spread within 3× their IQR (per run) is the clocks' jitter
STARVED = 0.2  # the timing thread waited for a core during a fifth of the warm runs or more
QUIET_WAIT = 0.05  # ... and during under 5% of them, the CPU was not what held it back
BUSY = 0.8  # CPU time at least 80% of the wall time: the process was working, not waiting


@dataclass(frozen=True)
class NoiseCause:
    """The verdict on one result's warm runs: ``symptom`` ("noisy" or "starved"), ``kind``
    ("oversubscribed", "loaded", "varies" or "unknown"), the full sentence with its numbers
    (``text``), and the one-line form: the cause in a few words (``short``) and its ``fix``."""

    symptom: str
    kind: str
    text: str
    short: str = ""
    fix: str = ""
    pool: str | None = None  # the pool an oversubscription is blamed on


def uncertainty(result: CudaTimeResult) -> float | None:
    """How far the warm median's 95% interval reaches from the median, as a share of it; below
    ``CI_MIN_RUNS`` samples the min–max range stands in (an interval of lower confidence: when even
    it is wide, the answer is in doubt). None without two warm runs or a median."""
    median = result.median
    if result.runs < 2 or not median:
        return None
    low, high = result.median_ci or (min(result.samples), max(result.samples))
    return max(high - median, median - low) / median


def modes(result: CudaTimeResult) -> tuple[list[float], list[float]] | None:
    """The warm samples split into two groups where they fall into separate modes: the widest gap
    between neighbours that leaves at least a fifth of the runs on each side, when it is 10% of the
    median or more and wider than ``MODE_SPREAD`` times either group's IQR. None otherwise."""
    ordered, median = sorted(result.samples), result.median
    if len(ordered) < MODES_MIN_RUNS or not median:
        return None
    least = len(ordered) // MODE_SHARE
    cut = max(range(least, len(ordered) - least + 1), key=lambda i: ordered[i] - ordered[i - 1])
    low, high = ordered[:cut], ordered[cut:]
    gap = high[0] - low[-1]
    if gap < MODE_GAP * median or any(gap <= MODE_SPREAD * (g[3 * len(g) // 4] - g[len(g) // 4]) for g in (low, high)):
        return None
    return low, high


def split(result: CudaTimeResult) -> tuple[list[float], list[float]] | None:
    """The two groups (``modes``) where they move the answer: the runs' mean then lies further than
    ``NOISY_CI`` from the median, which describes one group only (70 runs of 1 ms and 30 of 2 ms: a
    median of 1 ms, a mean of 1.3). Groups closer than that leave both figures standing."""
    groups, median, mean = modes(result), result.median, result.mean
    if groups is None or not median or mean is None or abs(mean - median) <= NOISY_CI * median:
        return None
    return groups


def is_noisy(result: CudaTimeResult) -> bool:
    """An answer in doubt: the median's interval reaches further than ``NOISY_CI`` from it, or the
    runs fall into groups that move it (``split``); and the spread is wider than the clocks' own jitter."""
    share = uncertainty(result)
    if result.runs < 3 or share is None:
        return False
    # the spread the clocks and the synchronize show on their own, per run (NOISY_MIN_IQR: harness not measured)
    jitter = NOISY_MIN_IQR if result.harness is None else JITTER_TIMES * result.harness.jitter / result.batch
    low, high = result.median_ci or (min(result.samples), max(result.samples))
    if max(high - low, result.iqr or 0.0) <= jitter:
        return False
    return share > NOISY_CI or split(result) is not None


def quiet_note(result: CudaTimeResult) -> str | None:
    """For the details: runs that vary (an IQR above ``VARIES`` of the median) around a median
    they pin down, so no warning: ``the middle half of the runs spans 30% of the median; the
    median is known to ±0.9%``. None for steady or noisy runs."""
    median, iqr, share = result.median, result.iqr, uncertainty(result)
    if (not median or iqr is None or share is None or result.median_ci is None or iqr / median <= VARIES
            or is_noisy(result)):
        return None
    return (f"the middle half of the runs spans {iqr / median:.0%} of the median; the median is known to "
            f"±{percent_text(share)} (95% CI)")


def is_starved(context: CpuContext | None) -> bool | None:
    """Whether the timing thread waited for a core during STARVED of the warm runs or more (None: not said)."""
    share = context.waited_share if context is not None else None
    return None if share is None else share >= STARVED


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _thread_fix(threads: Iterable[str]) -> str:
    """How to set each recorded pool to one thread: torch's call, threadpoolctl's for BLAS pools."""
    fixes = ["torch.set_num_threads(1)" if pool == "torch" else "threadpoolctl.threadpool_limits(1)"
             for pool in threads]
    return " and ".join(dict.fromkeys(fixes))


def _cause(result: CudaTimeResult, context: CpuContext | None, symptom: str) -> NoiseCause:
    """The cause for a result with ``symptom``. A pool is blamed only where the cell's work ran in it;
    a load above the usable cores is a loaded machine even where the timing thread never waited (the
    work may run in other threads: JAX's, a BLAS pool's). A quiet machine and a busy process leave
    two causes, both named: the spread is the runs' own, or comes from what no reading here shows (a
    neighbour on the same host, clock changes)."""
    more_runs = " Time more runs (-n/-b) for a steadier median."
    if context is None:
        return NoiseCause(symptom, "unknown", "Cause unknown: no CPU facts were recorded with this result." + more_runs,
                          "cause unknown", "more runs (-n/-b)")
    # ``load average 3.50 and 4 other threads ready to run``
    load = "load average unknown" if context.load_before is None else f"load average {context.load_before:.2f}"
    if context.ready_before is not None:
        load += f" and {_plural(context.ready_before, 'other thread')} ready to run"
    cores, waited = _plural(context.cores, "usable core"), ""
    if context.waited_share is not None:
        waited = f", and the timing thread waited for a core during {100 * context.waited_share:.0f}% of the warm runs"
    hit = is_starved(context)  # the CPU was taken from the timing thread: True, False or not known
    pool, threads = context.widest_pool
    if hit is not False and threads >= 2 and threads > context.free_cores:
        free = "no core free" if context.free_cores < 0.05 else f"{context.free_cores:.1f} cores free"
        return NoiseCause(
            symptom, "oversubscribed",
            f"Likely cause: oversubscription. {pool} runs {threads} threads on {cores} (pools: "
            f"{pools_text(context.threads)}; the cell's work used {pool}'s), but the machine's load ({load}) left "
            f"{free}{waited}: the threads wait for each other at every barrier while one of them is descheduled. "
            f"Fix: {_thread_fix(context.cell_pools)}, or time with --threads 1 (as torch's Timer does); or a "
            "quieter machine.",
            f"oversubscribed, {pool} runs {threads} threads with {free}", "--threads 1 or a quieter machine", pool)
    if hit or context.others > context.cores or (hit is None and context.free_cores < 1):
        average = "" if context.load_before is None else f", load {context.load_before:.2f}"
        return NoiseCause(
            symptom, "loaded",
            f"Likely cause: a loaded machine: {load} on {cores}{waited}: other work wanted the cores this "
            "measurement ran on. Fix: a quieter machine (close other work), or more runs (-n/-b) for a steadier "
            "median.",
            f"machine loaded{average} on {cores}", "a quieter machine, or more runs (-n/-b)")
    quiet = context.waited_share is not None and context.waited_share < QUIET_WAIT
    share = context.cpu_share
    if quiet and not result.on_gpu and (share or 0) >= BUSY:
        return NoiseCause(
            symptom, "varies",
            f"Likely cause: not this machine's load, so the runs themselves vary. The CPU was free ({load} on "
            f"{cores}{waited}) and the process was busy all along (CPU time {share or 0:.2f}× the wall time): "
            "the runs differ in the work they do (data-dependent work, garbage collection, memory allocation), or "
            "something this process cannot see slowed the CPU (another virtual machine on the same host, frequency "
            "changes). Time more runs, or read the spread with the median.",
            "the runs themselves vary on a quiet machine", "more runs (-n/-b)")
    cpu = "" if share is None else f"; CPU time {share:.2f}× the wall time"
    return NoiseCause(symptom, "unknown", f"Cause unknown: the CPU facts do not explain it ({load} on {cores}{waited}"
                      f"{cpu})." + more_runs, "cause unknown", "more runs (-n/-b)")


def _symptom(result: CudaTimeResult, context: CpuContext | None) -> tuple[str, str] | None:
    """(symptom, its words with its size), or None for runs with neither symptom."""
    if is_noisy(result):
        groups = split(result)
        share = uncertainty(result)
        assert share is not None  # what is_noisy read
        if groups is not None and share <= NOISY_CI:
            low, high = groups
            return "noisy", (f"the runs fall into two groups ({len(low)} around {fmt(statistics.median(low))}, "
                             f"{len(high)} around {fmt(statistics.median(high))})")
        return "noisy", f"noisy (median ±{percent_text(share)}, 95% CI)"
    if result.runs and is_starved(context):
        assert context is not None and context.waited_share is not None  # what is_starved read
        return "starved", (f"slowed (the timing thread waited for a core during {100 * context.waited_share:.0f}% "
                           f"of the warm runs' {fmt(context.wall)})")
    return None


def noise(result: CudaTimeResult, context: CpuContext | None) -> tuple[str, NoiseCause] | tuple[None, None]:
    """(the one-line warning, ``NoiseCause``) for a result whose warm runs are noisy or starved, on the
    CPU facts ``context`` (None: not recorded), else (None, None): ``Warning: noisy (median ±12%, 95%
    CI): machine loaded, load 6.70 on 2 usable cores · fix: a quieter machine, or more runs (-n/-b)``."""
    found = _symptom(result, context)
    if found is None:
        return None, None
    symptom, words = found
    cause = _cause(result, context, symptom)
    return f"Warning: {words}: {cause.short} · fix: {cause.fix}", cause


@dataclass(frozen=True)
class Noise:
    """What the noise check made of one result (``judged``), for every view of it: its CPU facts (None:
    not recorded), the warning and its cause (both None for steady runs), and the ``quiet_note``."""

    context: CpuContext | None
    warning: str | None
    cause: NoiseCause | None
    quiet: str | None


def judged(result: CudaTimeResult, context: CpuContext | None) -> Noise:
    """The noise check of ``result`` on its CPU facts, once for all its views."""
    warning, cause = noise(result, context)
    return Noise(context, warning, cause, quiet_note(result))


def context_rows(context: CpuContext | None) -> list[tuple[str, str]]:
    if context is None:
        return [("CPU", "not recorded")]
    share = context.cpu_share
    loads = ["?" if load is None else f"{load:.2f}" for load in (context.load_before, context.load_after)]
    return [
        ("CPU: usable cores", str(context.cores)),
        ("CPU: load average", "unknown" if loads == ["?", "?"] else f"{loads[0]} before, {loads[1]} after"),
        ("CPU: other threads ready", "unknown" if context.ready_before is None
         else f"{context.ready_before} before the cold run"),
        ("CPU: thread pools", pools_text(context.threads)),
        ("CPU: warm runs' CPU time", f"{fmt(context.cpu)} over {fmt(context.wall)} wall"
                                     + (f" ({share:.2f}×)" if share is not None else "")),
        ("CPU: waited for a core", "unknown" if context.waited is None
         else f"{fmt(context.waited)} ({100 * (context.waited_share or 0):.0f}% of the warm runs)"),
        ("CPU: involuntary switches", "unknown" if context.preempted is None else f"{context.preempted:,}"),
    ]
