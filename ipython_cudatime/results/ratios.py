"""Is B faster than A, and how sure are we: the ratio of two warm medians with its 95% bootstrap
interval (``contrast``), a winner only where it excludes 1, else what the runs can tell; and what
else differs besides the code (device, versions, threads, the features' records), named beside it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..units import percent_text
from .compare import Point
from .result import CI_MIN_RUNS, CudaTimeResult, RecordKeeper, judgement

if TYPE_CHECKING:
    from numpy.typing import NDArray


def _name(item: CudaTimeResult | Point | None, fallback: str) -> str:
    """A result's short name: its label (and swept values), else ``fallback``."""
    task = getattr(item, "task", None)  # a point's; a result's, None where made by hand
    return task.name if task is not None and (task.label or task.params) else fallback


RESAMPLES = 4000  # bootstrap draws of each median: the interval's ends move by well under 1% between seeds
SEED = 31  # fixed: the same results always get the same verdict, in every report


def bootstrap_medians(samples: Sequence[float], rng: Any) -> NDArray[Any]:
    """``RESAMPLES`` bootstrap medians of ``samples``, no resample built: the k-th smallest of n uniforms is
    Beta(k, n - k + 1), the next one up that plus (1 - it) × Beta(1, n - k), and picks the sample at its
    rank. So each median costs O(1), not O(n): 4,000 take under a millisecond for 100,000 runs."""
    import numpy

    ordered = numpy.sort(numpy.asarray(samples, dtype=float))
    n, k = len(ordered), (len(ordered) + 1) // 2
    low = rng.beta(k, n - k + 1, RESAMPLES)
    uniforms = [low] if n % 2 else [low, low + (1 - low) * rng.beta(1, n - k, RESAMPLES)]  # even n: two middle ranks
    picked = [ordered[numpy.minimum((uniform * n).astype(int), n - 1)] for uniform in uniforms]
    medians: NDArray[Any] = sum(picked) / len(picked)
    return medians


def ratio_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The seeded (deterministic) 95% percentile-bootstrap interval of median(a) / median(b), each resampled."""
    import numpy

    rng = numpy.random.default_rng(SEED)
    ratios = bootstrap_medians(a, rng) / bootstrap_medians(b, rng)
    low, high = numpy.quantile(ratios, (0.025, 0.975))
    return float(low), float(high)


def times_text(value: float) -> str:
    """``1.10×``, ``12.4×``, ``412×``, ``0.0009×``; a third decimal within 1% of 1, where ``1.00×``
    would hide that an interval's end (``1.004×``) excludes 1."""
    if value < 0.01:
        return f"{value:.2g}×"
    if value < 10:
        return f"{value:.3f}×" if value != 1 and abs(value - 1) < 0.01 else f"{value:.2f}×"
    return f"{value:.1f}×" if value < 100 else f"{value:.0f}×"


def interval_text(low: float, high: float) -> str:
    """``1.08–1.12×``: two ratios as ``times_text`` writes them, the sign once."""
    return f"{times_text(low)[:-1]}–{times_text(high)}"


@dataclass(frozen=True)
class Contrast:
    """Two results' verdict: ``ratio`` is a's median over b's (above 1: b is faster), ``ci`` its 95%
    interval; ``faster`` is named only when ``conclusive``, else ``reason`` says what the runs tell."""

    names: tuple[str, ...]
    medians: tuple[float | None, float | None]
    ratio: float | None = None
    faster: str | None = None
    conclusive: bool = False
    reason: str | None = None
    threads: str | None = None
    ci: tuple[float, float] | None = None
    differs: str | None = None  # what else differs beside the code: device, versions, load

    @property
    def speedup(self) -> tuple[float, float, float] | None:
        """(how many times faster the faster one is, and that factor's interval), or None without one."""
        if self.ratio is None or self.ci is None:
            return None
        if self.ratio >= 1:
            return self.ratio, self.ci[0], self.ci[1]
        return 1 / self.ratio, 1 / self.ci[1], 1 / self.ci[0]

    @property
    def sentence(self) -> str:
        """``torch 1.29× faster (1.21–1.37)`` or ``inconclusive: no difference larger than 4% ...``."""
        if not self.conclusive or self.speedup is None:
            text = f"inconclusive: {self.reason}"
        else:
            times, low, high = self.speedup
            text = f"{self.faster} {times_text(times)} faster ({interval_text(low, high)})"
        return (text + (f" ({self.threads})" if self.threads else "")
                + (f" (also differs: {self.differs})" if self.differs else ""))

    def to_dict(self) -> dict[str, Any]:
        return dict(dataclasses.asdict(self), sentence=self.sentence)


def _thread_note(a: CudaTimeResult, b: CudaTimeResult) -> str | None:
    """Why two results' thread settings differ (--threads N, or the user's), or None."""
    chosen_a, chosen_b = (r.task.threads if r.task is not None else None for r in (a, b))
    if chosen_a == chosen_b:
        return None
    words = ["--threads " + str(n) if n is not None else "the user's threads" for n in (chosen_a, chosen_b)]
    return f"timed with different thread settings: {words[0]} and {words[1]}"


def _differences(a: CudaTimeResult, b: CudaTimeResult, keepers: Iterable[RecordKeeper]) -> str | None:
    """What else differs beside the code: the device, the versions both recorded (``torch 2.5.1 vs 2.13.0``),
    what each keeper finds between their records (the pools, the load); None where nothing does."""
    found = [f"device {a.device} vs {b.device}"] if a.device != b.device else []
    one, two = a.env, b.env
    if one is not None and two is not None:
        if one.python and two.python and one.python != two.python:
            found.append(f"Python {one.python} vs {two.python}")
        found += [f"{name} {version} vs {two.frameworks[name]}" for name, version in one.frameworks.items()
                  if name in two.frameworks and version != two.frameworks[name]]
    for keeper in keepers:
        found += keeper.differences(a.records.get(keeper.name), b.records.get(keeper.name))
    return "; ".join(found) or None


def _undecided(ci: tuple[float, float], a: CudaTimeResult, b: CudaTimeResult) -> str:
    """What an interval holding 1 tells: the largest difference it leaves open, and the runs each that
    would halve it (it narrows as one over the root of the runs)."""
    bound = max(ci[1], 1 / ci[0]) - 1
    said = f"no difference larger than {percent_text(bound)} either way"
    if not bound:  # identical medians in every resample: nothing more runs would narrow
        return said
    runs = "runs" if a.batch == 1 else "samples"
    return f"{said}; about {4 * max(a.runs, b.runs):,} {runs} each would tell {percent_text(bound / 2)}"


def contrast(a: CudaTimeResult | Point | None, b: CudaTimeResult | Point | None,
             names: Sequence[str] | None = None, keepers: Iterable[RecordKeeper] = ()) -> Contrast:
    """Which of two results (or points) is faster, and can the runs tell: a winner only where the ratio's
    95% interval excludes 1 (``CI_MIN_RUNS`` samples each: fewer cannot bound a median)."""
    names = tuple(names or (_name(a, "a"), _name(b, "b")))
    a, b = (item.result if isinstance(item, Point) else item for item in (a, b))
    if a is None or b is None or not a.median or not b.median:
        return Contrast(names, (a.median if a is not None else None, b.median if b is not None else None),
                        reason="a result has no warm runs")
    ratio = a.median / b.median
    verdict = Contrast(names, (a.median, b.median), ratio, threads=_thread_note(a, b),
                       differs=_differences(a, b, keepers))
    if min(a.runs, b.runs) < CI_MIN_RUNS:
        reason = f"too few runs for an interval ({a.runs} and {b.runs}; {CI_MIN_RUNS} each needed)"
        return dataclasses.replace(verdict, reason=reason)
    ci = ratio_interval(a.samples, b.samples)
    if ci[0] <= 1 <= ci[1]:
        return dataclasses.replace(verdict, reason=_undecided(ci, a, b), ci=ci)
    return dataclasses.replace(verdict, faster=names[1] if ratio > 1 else names[0], conclusive=True, ci=ci)


class Verdicts:
    """Each keeper's judgement and each pair's contrast (a bootstrap), worked out once however many views
    ask; the results are kept with their answers, so that an id is never reused while this lives."""

    def __init__(self, keepers: Iterable[RecordKeeper] = ()) -> None:
        self.keepers = tuple(keepers)
        self._judged: dict[tuple[str, int], tuple[CudaTimeResult, Any]] = {}
        self._contrasts: dict[tuple[int, int, tuple[str, ...] | None], tuple[Any, Any, Contrast]] = {}

    def judged(self, keeper: RecordKeeper, result: CudaTimeResult) -> Any:
        key = (keeper.name, id(result))
        if key not in self._judged:
            self._judged[key] = (result, judgement(keeper, result))
        return self._judged[key][1]

    def contrast(self, a: CudaTimeResult | Point | None, b: CudaTimeResult | Point | None,
                 names: Sequence[str] | None = None) -> Contrast:
        key = (id(a), id(b), tuple(names) if names is not None else None)
        if key not in self._contrasts:
            self._contrasts[key] = (a, b, contrast(a, b, names, self.keepers))
        return self._contrasts[key][2]
