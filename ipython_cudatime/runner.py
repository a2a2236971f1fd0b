"""Run a cell: one cold run, warm-up runs, then warm runs, with three clocks per run.

Knows nothing of IPython or of any framework: it is handed a callable and a
``DeviceSet`` (see ``backends``). The run-count rule lives in ``Plan``.
"""

import contextlib
import dataclasses
import functools
import os
import time
from dataclasses import dataclass

from .result import CudaTimeResult, Run

DEFAULT_BUDGET = 1.0  # seconds of warm-up + warm runs after the cold run
MIN_RUNS = 3  # warm runs, whenever they fit
MAX_RUNS = 1000  # warm runs, at most, without -n


@dataclass(frozen=True)
class Plan:
    """How many runs to make.

    ``runs`` fixes the warm-run count (0: the cold run only). Otherwise warm runs
    go on until ``budget`` seconds have passed since the cold run ended, at least
    MIN_RUNS when they fit in one more budget, at least one always, at most MAX_RUNS.
    ``warmup`` defaults to one run, or none when the cold run alone exceeded the
    budget, so that a slow cell is repeated only once.
    """

    runs: int = None
    warmup: int = None
    budget: float = DEFAULT_BUDGET
    profile: str = None  # "warm": one extra profiled run after the warm runs; "cold": profile the cold run

    def warmup_count(self, cold_seconds):
        if self.runs == 0:
            return 0  # -n 0 is one run in all
        if self.warmup is not None:
            return self.warmup
        return 1 if cold_seconds <= self.budget else 0

    def once(self):
        """This plan cut to the cold run alone: what a cell that must not repeat gets."""
        return dataclasses.replace(self, runs=0, profile=None if self.profile == "warm" else self.profile)

    def wants_more(self, done, spent, last):
        """Whether to make another warm run after ``done`` runs and ``spent`` seconds."""
        if self.runs is not None:
            return done < self.runs
        if done >= MAX_RUNS:
            return False
        if done == 0 or spent < self.budget:
            return True
        return done < MIN_RUNS and last * (MIN_RUNS - done) <= self.budget


class Repeats:
    """What must happen between runs of the same cell; the seam between the runner and
    the user's state (``state.CellRepeats`` is the real one). This default does nothing.

    ``begin()`` is called before the cold run; ``after_cold()`` after it says whether the
    cell may run again when the plan does not force a count (``-n``); ``reset()`` runs
    before every later run (warm-up, warm, profiled); ``quiet()`` is a context manager
    around the later runs (it discards their output); ``end()`` follows them, even
    when one failed.
    """

    def begin(self):
        pass

    def after_cold(self):
        return True

    def reset(self):
        pass

    def quiet(self):
        return contextlib.nullcontext()

    def end(self):
        pass


@dataclass
class Measurement:
    """What ``measure`` hands back: the result, the cold run's value, and what stopped the warm runs."""

    result: CudaTimeResult
    value: object = None
    error: BaseException = None


def timed_run(fn, devices, cpu_times=False, outputs=None, presync=True):
    """Run ``fn`` once between two synchronizations; return (Run, value).

    ``outputs(value)`` lists what the run produced, for backends that wait on results.
    ``presync=False`` skips the first wait when the previous run's final one just drained
    every device (consecutive warm runs), which saves a synchronize per run.
    """
    if presync:
        devices.synchronize()
    timer = devices.timer()
    cpu0 = os.times() if cpu_times else None
    if timer is not None:
        timer.start()
    t0 = time.perf_counter()
    value = fn()
    t1 = time.perf_counter()
    if timer is not None:
        timer.stop()
    devices.synchronize(None if outputs is None else lambda: outputs(value))
    t2 = time.perf_counter()
    device = timer.elapsed() if timer is not None else None
    if cpu0 is not None:
        cpu1 = os.times()
        return Run(t1 - t0, t2 - t0, device, cpu1.user - cpu0.user, cpu1.system - cpu0.system), value
    return Run(t1 - t0, t2 - t0, device), value


def _drain(devices):
    """After an error, let queued work finish so that the next cell starts clean."""
    with contextlib.suppress(Exception):
        devices.synchronize()


def measure(fn, devices, plan, repeats=None, watch=None, profiler=None, outputs=None, counter=None):
    """Cold run, warm-up and warm runs of ``fn`` on ``devices`` according to ``plan``.

    An exception in the cold run propagates: there is nothing to report. An
    exception or interrupt during later runs stops them; the runs done so far are
    returned with the exception in ``Measurement.error``. ``repeats`` (see
    ``Repeats``) is told about every run, and may cut the plan to the cold run.

    ``watch`` (see ``explain.ColdWatch``) is read before the cold run, after it and
    after the warm runs, and names the cold run's causes. ``profiler`` (see
    ``explain.profile.TorchProfiler``) watches the run ``plan.profile`` asks for.
    ``outputs(value)`` lists what a run produced (see ``Backend.synchronize``).
    ``counter`` (see ``explain.op_counter.OpCounter``) counts FLOPs and bytes in one more run
    after those (``--roofline``), whose time stays out of the statistics.
    """
    repeats = repeats or Repeats()
    run_once = functools.partial(timed_run, fn, devices, outputs=outputs)
    watch = watch or _NoWatch()
    repeats.begin()
    watch.snapshot("before")
    try:
        with profiler if plan.profile == "cold" else contextlib.nullcontext():
            cold, value = run_once(cpu_times=True)
    except BaseException:
        _drain(devices)
        raise
    watch.snapshot("after_cold")
    if not repeats.after_cold() and plan.runs is None:
        plan, counter = plan.once(), None
    try:
        later = _later_runs(run_once, plan, repeats, watch, profiler, counter, cold)
    finally:
        repeats.end()
    result = CudaTimeResult(
        cold=cold,
        warmup=later.warmup,
        warm=later.warm,
        device=devices.describe(),
        synchronized=devices.names,
        notes=devices.notes(),
        stopped=later.stopped,
        cold_causes=watch.causes(),
        memory=watch.memory(),
    )
    if later.error is not None:
        _drain(devices)
    if plan.profile == "cold":
        result.profile = profiler.summary(cold, cold=True)
    elif later.profiled is not None:
        result.profile = profiler.summary(later.profiled)
    if later.counted is not None:
        result.roofline = counter.summary(later.counted, result.median)
    return Measurement(result, value, later.error)


@dataclass
class _Later:
    """The runs after the cold run, and what stopped them."""

    warmup: list = dataclasses.field(default_factory=list)
    warm: list = dataclasses.field(default_factory=list)
    profiled: object = None
    counted: object = None
    error: BaseException = None
    stopped: str = None


def _later_runs(run_once, plan, repeats, watch, profiler, counter, cold):
    """Warm-up, warm, profiled and counting runs, each after ``repeats.reset()``; errors stop them."""
    later, phase = _Later(), "warm-up"

    def again(**kwargs):
        repeats.reset()
        return run_once(**kwargs)[0]

    start = time.perf_counter()
    try:
        with repeats.quiet():
            for _ in range(plan.warmup_count(cold.wall)):
                later.warmup.append(again(presync=False))
            phase = "warm"
            last = later.warmup[-1].wall if later.warmup else cold.wall
            while plan.wants_more(len(later.warm), time.perf_counter() - start, last):
                later.warm.append(again(presync=False))
                last = later.warm[-1].wall
            watch.snapshot("after_warm")
            if plan.profile == "warm" and plan.runs != 0:
                phase = "profiled"
                with profiler:
                    later.profiled = again()
            if counter is not None:
                phase = "counting"
                with counter:
                    later.counted = again()
    except (Exception, KeyboardInterrupt, SystemExit) as exc:
        later.error = exc
        number = {"warm-up": len(later.warmup) + 1, "warm": len(later.warm) + 1}.get(phase, "")
        later.stopped = f"{type(exc).__name__} in {phase} run {number}".rstrip()
    return later


class _NoWatch:
    def snapshot(self, moment):
        pass

    def causes(self):
        return []

    def memory(self):
        return None
