"""Why warm runs were noisy or slow, from the CPU facts of the measurement (``cpu_context``).

Two symptoms: the runs are *noisy* (their IQR is large against the median and against the clocks'
own jitter), or *starved* (the timing thread waited for a core during a good part of them). A
symptom gets a cause only where the facts support one:

- **oversubscribed**: a framework pool runs more threads than the cores the machine's load left
  free, so its threads wait for each other at every barrier while one is descheduled;
- **loaded**: the machine's other work took the cores (the thread waited for one);
- **varies**: the machine was quiet, the thread never waited and the process was busy all along,
  so the spread is the runs' own, or from what no reading here shows (a neighbour VM, clock changes);
- **unknown**: none of these is supported (or no facts were recorded).

The same check serves a single report, every sweep point and every compared result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..cpu_context import CpuContext, pools_text
from ..units import format_seconds as fmt

if TYPE_CHECKING:
    from ..result import CudaTimeResult

NOISY_IQR = 0.10  # IQR above 10% of the median: the warm runs disagree...
# ... by more than this in absolute terms: perf_counter resolves 1 ns and CUDA events 0.5 µs, but
# a synchronized run's own jitter (the synchronize call, the scheduler) is a few µs; a wider spread
# than that is the machine's, a narrower one is the timer's.
NOISY_MIN_IQR = 20e-6
# Where the harness was measured (null runs), the floor is the clocks' own spread instead: a warm
# spread within this many times the null runs' IQR (per run of a sample) is the clock's jitter.
JITTER_TIMES = 3
STARVED = 0.2  # the timing thread waited for a core during a fifth of the warm runs or more
QUIET_WAIT = 0.05  # ... and during under 5% of them, the CPU was not what held it back
BUSY = 0.8  # CPU time at least 80% of the wall time: the process was working, not waiting


@dataclass(frozen=True)
class NoiseCause:
    """The verdict on one result's warm runs: ``symptom`` ("noisy" or "starved"), ``kind``
    ("oversubscribed", "loaded", "varies" or "unknown") and the sentence with its numbers."""

    symptom: str
    kind: str
    text: str


def clock_jitter(result: CudaTimeResult) -> float:
    """The spread the clocks and the synchronize show on their own, per run: JITTER_TIMES the null
    runs' IQR spread over a sample's runs; NOISY_MIN_IQR where the harness was not measured."""
    if result.harness is None:
        return NOISY_MIN_IQR
    return JITTER_TIMES * result.harness.jitter / result.batch


def is_noisy(result: CudaTimeResult) -> bool:
    """A spread large against the median and against the clocks' own jitter."""
    median, iqr = result.median, result.iqr
    return bool(result.runs >= 3 and median and iqr is not None and iqr / median > NOISY_IQR
                and iqr > clock_jitter(result))


def is_starved(context: CpuContext | None) -> bool | None:
    """Whether the timing thread waited for a core during STARVED of the warm runs or more (None:
    the system does not say)."""
    share = context.waited_share if context is not None else None
    return None if share is None else share >= STARVED


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _load_words(context: CpuContext) -> str:
    """``load average 3.50 and 4 other threads ready to run``."""
    load = "load average unknown" if context.load_before is None else f"load average {context.load_before:.2f}"
    if context.ready_before is None:
        return load
    return f"{load} and {_plural(context.ready_before, 'other thread')} ready to run"


def _cores_words(context: CpuContext) -> str:
    return _plural(context.cores, "usable core")


def _waited_words(context: CpuContext) -> str:
    share = context.waited_share
    if share is None:
        return ""
    return f", and the timing thread waited for a core during {100 * share:.0f}% of the warm runs"


def _free_words(free: float) -> str:
    return "no core free" if free < 0.05 else f"{free:.1f} cores free"


def _thread_fix(threads: Iterable[str]) -> str:
    """How to set each recorded pool to one thread: torch's call, threadpoolctl's for BLAS pools."""
    fixes = ["torch.set_num_threads(1)" if pool == "torch" else "threadpoolctl.threadpool_limits(1)"
             for pool in threads]
    return " and ".join(dict.fromkeys(fixes))


def _oversubscribed(context: CpuContext, pool: str | None, threads: int) -> str:
    return (f"Likely cause: oversubscription. {pool} runs {threads} threads on {_cores_words(context)} "
            f"(pools: {pools_text(context.threads)}), but the machine's load ({_load_words(context)}) left "
            f"{_free_words(context.free_cores)}{_waited_words(context)}: the threads wait for each other at every "
            f"barrier while one of them is descheduled. Fix: {_thread_fix(context.threads)}, or time with "
            "--threads 1 (as torch's Timer does); or a quieter machine.")


def _loaded(context: CpuContext) -> str:
    return (f"Likely cause: a loaded machine: {_load_words(context)} on {_cores_words(context)}"
            f"{_waited_words(context)}. Fix: a quieter machine (close other work), or more runs (-n/-b) "
            "for a steadier median.")


def _varies(context: CpuContext) -> str:
    """What a quiet machine and a busy process allow: the spread is the runs' own, or comes from
    what no reading here shows (a neighbour on the same host, clock changes). Both are named."""
    return (f"Likely cause: not this machine's load, so the runs themselves vary. The CPU was free "
            f"({_load_words(context)} on {_cores_words(context)}{_waited_words(context)}) and the process "
            f"was busy all along (CPU time {context.cpu_share:.2f}× the wall time): the runs differ in the work "
            "they do (data-dependent work, garbage collection, memory allocation), or something this process "
            "cannot see slowed the CPU (another virtual machine on the same host, frequency changes). Time "
            "more runs, or read the spread with the median.")


def _unknown(context: CpuContext | None) -> str:
    if context is None:
        return ("Cause unknown: no CPU facts were recorded with this result. Time more runs (-n/-b) for a "
                "steadier median.")
    return (f"Cause unknown: the CPU facts do not explain it ({_load_words(context)} on {_cores_words(context)}"
            f"{_waited_words(context)}; "
            f"CPU time {context.cpu_share or 0:.2f}× the wall time). Time more runs (-n/-b) for a steadier median.")


def _cause(result: CudaTimeResult, context: CpuContext | None) -> tuple[str, str]:
    """(kind, sentence) for a result with a symptom."""
    if context is None:
        return "unknown", _unknown(None)
    hit = is_starved(context)  # the CPU was taken from the timing thread: True, False or not known
    pool, threads = context.widest_pool
    if hit is not False and threads >= 2 and threads > context.free_cores:
        return "oversubscribed", _oversubscribed(context, pool, threads)
    if hit or (hit is None and context.free_cores < 1):
        return "loaded", _loaded(context)
    quiet = context.waited_share is not None and context.waited_share < QUIET_WAIT
    if quiet and not result.on_gpu and (context.cpu_share or 0) >= BUSY:
        return "varies", _varies(context)
    return "unknown", _unknown(context)


def _symptom(result: CudaTimeResult, context: CpuContext | None) -> tuple[str, str] | None:
    """(symptom, warning sentence), or None for runs with neither symptom."""
    if is_noisy(result):
        assert result.iqr is not None and result.median  # what is_noisy read
        return "noisy", (f"Warning: the warm runs are noisy (IQR is {100 * result.iqr / result.median:.0f}% of "
                         "the median, more than the clocks' own jitter).")
    if result.runs and is_starved(context):
        assert context is not None and context.waited_share is not None  # what is_starved read
        return "starved", (f"Warning: the warm runs were slowed down: the timing thread waited for a core during "
                           f"{100 * context.waited_share:.0f}% of their {fmt(context.wall)}.")
    return None


def noise(result: CudaTimeResult) -> tuple[str, NoiseCause] | tuple[None, None]:
    """(warning sentence, ``NoiseCause``) for a result whose warm runs are noisy or starved, else
    (None, None)."""
    context: CpuContext | None = result.cpu_context
    found = _symptom(result, context)
    if found is None:
        return None, None
    symptom, warning = found
    kind, text = _cause(result, context)
    return warning, NoiseCause(symptom, kind, text)


def _pair(before: float | None, after: float | None, show: Callable[[float | None], str]) -> str:
    return "unknown" if before is None and after is None else f"{show(before)} before, {show(after)} after"


def context_rows(context: CpuContext | None) -> list[tuple[str, str]]:
    """(label, value) rows of the CPU facts, for the report's details."""
    if context is None:
        return [("CPU", "not recorded")]
    share = context.cpu_share
    return [
        ("CPU: usable cores", str(context.cores)),
        ("CPU: load average", _pair(context.load_before, context.load_after,
                                    lambda v: "?" if v is None else f"{v:.2f}")),
        ("CPU: other threads ready", "unknown" if context.ready_before is None
         else f"{context.ready_before} before the cold run"),
        ("CPU: thread pools", pools_text(context.threads)),
        ("CPU: warm runs' CPU time", f"{fmt(context.cpu)} over {fmt(context.wall)} wall"
                                     + (f" ({share:.2f}×)" if share is not None else "")),
        ("CPU: waited for a core", "unknown" if context.waited is None
         else f"{fmt(context.waited)} ({100 * (context.waited_share or 0):.0f}% of the warm runs)"),
        ("CPU: involuntary switches", "unknown" if context.preempted is None else f"{context.preempted:,}"),
    ]
