"""The result of one ``%cudatime``: every run's clocks, warm statistics and plain reprs.

Like IPython's ``TimeitResult`` it is a small object you can keep (``-o``/``-v``);
the renderers in ``render/`` turn it into text or HTML, the text being the truth.
"""

import statistics
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple, Optional

from .units import format_seconds

DEVICE_SHARE = 0.5  # device events covering less of the wall time than this missed some work
# Quartiles of fewer warm runs than this rest on two or three samples each: show min and max instead.
IQR_MIN_RUNS = 10


class Run(NamedTuple):
    """The clocks of one run, in seconds.

    host   until Python got control back (what ``%time`` prints);
    wall   synchronized: all devices drained before and after;
    device event time on the current stream, or None without a device clock;
    cpu_user, cpu_sys  process CPU time over the wall span (cold run only).

    A NamedTuple: cheap to create on the hot path, and never tracked by the GC.
    """

    host: float
    wall: float
    device: Optional[float] = None
    cpu_user: Optional[float] = None
    cpu_sys: Optional[float] = None
    batch: int = 1  # runs of the cell this sample timed (see ``batching``); the clocks are per run


class Harness(NamedTuple):
    """The harness's own cost, from null runs (nothing in them) through the same path and devices.

    wall    median synchronized time of a null run: what the clocks and synchronize add to a sample;
    jitter  IQR of those times: the spread the clocks show on their own;
    device  median device-clock time of a null run, or None without a device clock.
    """

    wall: float
    jitter: float
    device: Optional[float] = None


@dataclass
class CudaTimeResult:
    """One cold run, the untimed-for-statistics warm-up runs, and the warm runs."""

    cold: Run
    warmup: list = field(default_factory=list)
    warm: list = field(default_factory=list)
    device: str = "cpu"
    synchronized: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    stopped: str = None
    cold_causes: list = field(default_factory=list)  # explain.Cause records
    profile: object = None  # explain.profile.Profile with --profile/--profile-cold
    roofline: object = None  # explain.roofline.Roofline with --roofline
    memory: object = None  # explain.memory.DeviceMemory where torch's CUDA allocator was used, else None
    harness: Harness = None  # the harness's own cost, measured once per call

    @property
    def batch(self):
        """Runs of the cell per warm sample: 1, or k when a run is short next to the harness's cost."""
        return self.warm[0].batch if self.warm else 1

    def batch_text(self):
        """How the warm runs were sampled, or None for one run per sample."""
        if self.batch == 1:
            return None
        return (f"each sample: {self.batch:,} runs in one timed loop, as timeit does: one run is short next to "
                f"the harness's own cost per sample ({format_seconds(self.harness.wall)}, measured on null "
                "runs), which a sample of many runs makes negligible")

    def harness_per_run(self, runs):
        """The harness's wall time per run in samples like ``runs``: spread over a sample's runs."""
        return self.harness.wall / runs[0].batch if self.harness is not None and runs else 0.0

    @cached_property
    def clock(self):
        """The clock the statistics use: device where every run has one and it accounts for
        most of the synchronized time, else wall. Events on the current stream miss work on
        other streams and other frameworks; the synchronized wall clock does not. The
        harness's own cost (a synchronize can cost 20 µs) is taken out of the wall time
        first, so that a 5 µs kernel's events still count as covering its run."""
        runs = self.warm or [self.cold]
        if any(run.device is None for run in runs):
            return "wall"
        device = statistics.median(run.device for run in runs)
        wall = statistics.median(run.wall for run in runs) - self.harness_per_run(runs)
        return "device" if device >= DEVICE_SHARE * wall else "wall"

    @cached_property
    def samples(self):
        """The warm runs' times on ``clock``; the cold run is never among them."""
        clock = self.clock
        return [getattr(run, clock) for run in self.warm]

    @property
    def cold_time(self):
        """The cold run on the statistics clock, or its wall time when it had no device clock."""
        value = getattr(self.cold, self.clock)
        return self.cold.wall if value is None else value

    @property
    def runs(self):
        return len(self.warm)

    @property
    def extra_runs(self):
        """The runs after the warm runs that stay out of the statistics: --profile's, --roofline's."""
        extra = []
        if self.profile is not None and not self.profile.cold:
            extra.append("1 profiled")
        if self.roofline is not None:
            extra.append("1 counting")
        return extra

    @property
    def total_runs(self):
        """How many times the cell ran in all: cold, warm-up, warm (every run of every sample),
        profiled and counting runs."""
        later = sum(run.batch for run in self.warmup) + sum(run.batch for run in self.warm)
        return 1 + later + len(self.extra_runs)

    def counts_text(self):
        """``the cell ran 10 times: 1 cold + 1 warm-up + 8 warm``, as every report states it; with
        batching ``... + 120 warm samples × 1,000 runs``."""
        warmup = sum(run.batch for run in self.warmup)
        warm = f"{len(self.warm)} warm" if self.batch == 1 else f"{len(self.warm)} warm samples × {self.batch:,} runs"
        parts = ["1 cold", f"{warmup:,} warm-up", warm, *self.extra_runs]
        total = self.total_runs
        return f"the cell ran {total:,} time{'s' if total != 1 else ''}: {' + '.join(parts)}"

    @property
    def median(self):
        return statistics.median(self.samples) if self.warm else None

    @property
    def iqr(self):
        samples = self.samples
        if len(samples) < 2:
            return 0.0 if samples else None
        q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        return q3 - q1

    @property
    def has_iqr(self):
        """Whether there are enough warm runs (``IQR_MIN_RUNS``) for the IQR to mean something."""
        return self.runs >= IQR_MIN_RUNS

    @property
    def min(self):
        return min(self.samples) if self.warm else None

    @property
    def max(self):
        return max(self.samples) if self.warm else None

    @property
    def mean(self):
        return statistics.fmean(self.samples) if self.warm else None

    @property
    def stdev(self):
        samples = self.samples
        if len(samples) < 2:
            return 0.0 if samples else None
        return statistics.stdev(samples)

    @property
    def ratio(self):
        """How many times slower the cold run was than the warm median."""
        median = self.median
        return self.cold_time / median if median else None

    def to_dict(self):
        """Plain data (JSON-ready): the runs, the statistics and what was synchronized."""
        stats = ("clock", "runs", "median", "iqr", "min", "max", "mean", "stdev", "cold_time", "ratio")
        data = {name: getattr(self, name) for name in stats}
        data.update(
            cold=self.cold._asdict(),
            warmup=[run._asdict() for run in self.warmup],
            warm=[run._asdict() for run in self.warm],
            device=self.device,
            synchronized=list(self.synchronized),
            notes=list(self.notes),
            stopped=self.stopped,
            cold_causes=[cause.__dict__.copy() for cause in self.cold_causes],
            profile=self.profile.to_dict() if self.profile is not None else None,
            roofline=self.roofline.to_dict() if self.roofline is not None else None,
            memory=self.memory.to_dict() if self.memory is not None else None,
            batch=self.batch,
            harness=self.harness._asdict() if self.harness is not None else None,
        )
        return data

    def __str__(self):
        from .render.text import render_text

        return render_text(self)

    def __repr__(self):
        """One line, like ``%timeit -o``'s ``<TimeitResult : ...>``: a bare ``%cudatime -o stmt``
        shows the report once, then this as its Out value. ``print(result)`` gives the report."""
        if self.median is None:
            return f"<CudaTimeResult cold {format_seconds(self.cold_time)} on {self.device}>"
        return (
            f"<CudaTimeResult cold {format_seconds(self.cold_time)}, warm median "
            f"{format_seconds(self.median)} over {self.runs} runs on {self.device}>"
        )
