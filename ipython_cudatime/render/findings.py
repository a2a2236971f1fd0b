"""What the numbers say, in plain sentences shared by every renderer.

Each finding has a ``kind`` (a stable key tests and widgets can use) and ``text``. A ``Reading``
is what every view of one result reads: the result, the features that word its records, and
its findings, worked out once for all the views.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, Any

from ..results.result import Finding, judgement
from ..units import format_seconds as fmt
from ..units import inert, range_text

if TYPE_CHECKING:
    from ..results.result import CudaTimeResult, RecordKeeper

ASYNC_HOST_FRACTION = 0.5  # host below half of wall: Python moved on while the device worked
ASYNC_MIN_GAP = 50e-6  # ... by more than this, so that sync overhead alone never triggers it
# Device events seeing less than this share of the synchronized time (harness cost out) missed work.
COVERED = 0.9


def _async_gap(host: float, wall: float) -> bool:
    return host < ASYNC_HOST_FRACTION * wall and wall - host > ASYNC_MIN_GAP


def _worker(result: CudaTimeResult) -> str:
    """What kept working after Python moved on: "the GPU", or "the device" for CPU async backends."""
    return "the GPU" if result.on_gpu else "the device"


def _async_findings(result: CudaTimeResult) -> list[Finding]:
    """The async trap, where the cold run or the warm runs' medians handed control back long before
    the work was done. What ``%time`` would have printed is what it measures, the host's hand-over,
    and that varies from run to run (a first dispatch, a busy core): so the sentence gives the range
    of every run's host time, the first one named, never one run's figure as "what %time prints"."""
    cold, warm = result.cold, result.warm
    warm_gap = bool(warm) and _async_gap(median(run.host for run in warm), median(run.wall for run in warm))
    if not (_async_gap(cold.host, cold.wall) or warm_gap):
        return []
    # the synchronized time of the runs that showed the trap: the warm median, or the cold run alone
    synchronized = f"{fmt(median(run.wall for run in warm))} (warm median)" if warm_gap else \
        f"{fmt(cold.wall)} (the first run)"
    return [Finding(
        "async",
        f"%time alone would have printed {_hand_over(result)}: {_worker(result)} was still working when "
        f"Python moved on. The synchronized time is {synchronized}.",
    )]


def _hand_over(result: CudaTimeResult) -> str:
    """``0.15–7.3 ms, the host's hand-over over the cell's 12 runs (111 µs the first time)``."""
    cold = result.cold
    hosts = [cold.host] + [run.host for run in result.warmup + result.warm]
    low, high = fmt(min(hosts)), fmt(max(hosts))
    if len(hosts) == 1:
        return f"{low}, the host's hand-over"
    if low == high:
        return f"{low}, the host's hand-over in each of the {len(hosts):,} timed runs"
    return (f"{range_text(min(hosts), max(hosts))}, the host's hand-over over the {len(hosts):,} timed runs "
            f"({fmt(cold.host)} the first time)")


def _feature_findings(result: CudaTimeResult, pairs: Iterable[tuple[RecordKeeper, Any]]) -> list[Finding]:
    """Each feature's sentences, in the features' order (why the cold run was slow, the profile, ...,
    why the warm runs vary), from what each judged of its record (``Reading.pairs``)."""
    return [found for keeper, judged in pairs for found in keeper.findings(result, judged)]


def _clock_findings(result: CudaTimeResult) -> list[Finding]:
    """Where the device clock saw less than the synchronized time: what it missed, and why the
    statistics then use the wall clock."""
    coverage = result.coverage
    found = []
    if coverage is not None and coverage < COVERED:
        found.append(Finding(
            "coverage",
            f"The device clock (events on the current stream) saw {coverage:.0%} of the synchronized time: "
            "the rest ran on other streams or other devices (or in a framework these events do not see), "
            "which only the synchronized wall clock includes.",
        ))
    why = result.clock_why()
    if why:
        found.append(Finding("clock", why))
    return found


def findings(result: CudaTimeResult, keepers: Iterable[RecordKeeper]) -> list[Finding]:
    """The sentences worth printing under the numbers, most important first; ``keepers`` (the
    features) word their own records (``Reading.of`` works them out with the rest of a report)."""
    return list(Reading.of(result, keepers).findings)


def _findings(result: CudaTimeResult, pairs: Iterable[tuple[RecordKeeper, Any]]) -> list[Finding]:
    found = _async_findings(result) + _feature_findings(result, pairs) + _clock_findings(result)
    if result.stopped:  # these two may come from a file: one line each, whatever they hold
        found.append(Finding("stopped", f"Stopped early by {inert(result.stopped, newlines=False)}; "
                                        "the statistics cover the runs done."))
    found.extend(Finding("note", inert(note, newlines=False)) for note in result.notes)
    return found


@dataclass(frozen=True)
class Reading:
    """One result as its views read it, as pyinstrument's renderers read one ``Session``: the result
    (plain data), the keepers that word its records (the features, handed in as the registry is),
    what each judged of its record (``RecordKeeper.judge``) and its findings, worked out once.
    ``display.bundle`` makes one and hands it to the text and the HTML report, so that neither asks
    the noise check or a feature's words a second time."""

    result: CudaTimeResult
    keepers: tuple[RecordKeeper, ...]
    judged: tuple[Any, ...]
    findings: tuple[Finding, ...]

    @classmethod
    def of(cls, result: CudaTimeResult, keepers: Iterable[RecordKeeper]) -> Reading:
        keepers = tuple(keepers)
        judged = tuple(judgement(keeper, result) for keeper in keepers)
        return cls(result, keepers, judged, tuple(_findings(result, zip(keepers, judged))))

    def pairs(self) -> list[tuple[RecordKeeper, Any]]:
        """(keeper, what it judged of its record on the result), in the keepers' order."""
        return list(zip(self.keepers, self.judged))
