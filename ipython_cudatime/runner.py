"""Run a cell: one cold run, warm-up runs, then warm runs, with three clocks per run.

Knows nothing of IPython or of any framework: it is handed a callable and a
``DeviceSet`` (see ``backends``). The run-count rule lives in ``Plan``.
"""

import contextlib
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
        if self.warmup is not None:
            return self.warmup
        return 1 if self.runs != 0 and cold_seconds <= self.budget else 0

    def wants_more(self, done, spent, last):
        """Whether to make another warm run after ``done`` runs and ``spent`` seconds."""
        if self.runs is not None:
            return done < self.runs
        if done >= MAX_RUNS:
            return False
        if done == 0 or spent < self.budget:
            return True
        return done < MIN_RUNS and last * (MIN_RUNS - done) <= self.budget


@dataclass
class Measurement:
    """What ``measure`` hands back: the result, the last run's value, and what stopped the warm runs."""

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


def measure(fn, devices, plan, quiet=contextlib.nullcontext, watch=None, profiler=None, outputs=None,
            counter=None):
    """Cold run, warm-up and warm runs of ``fn`` on ``devices`` according to ``plan``.

    An exception in the cold run propagates: there is nothing to report. An
    exception or interrupt during later runs stops them; the runs done so far are
    returned with the exception in ``Measurement.error``. ``quiet`` is a context
    manager that swallows what the later runs print, so output appears once.

    ``watch`` (see ``explain.ColdWatch``) is read before the cold run, after it and
    after the warm runs, and names the cold run's causes. ``profiler`` (see
    ``explain.profile.TorchProfiler``) watches the run ``plan.profile`` asks for.
    ``outputs(value)`` lists what a run produced (see ``Backend.synchronize``).
    ``counter`` (see ``explain.op_counter.OpCounter``) counts FLOPs and bytes in one more run
    after those (``--roofline``), whose time stays out of the statistics.
    """
    run_once = functools.partial(timed_run, fn, devices, outputs=outputs)
    watch = watch or _NoWatch()
    watch.snapshot("before")
    try:
        with profiler if plan.profile == "cold" else contextlib.nullcontext():
            cold, value = run_once(cpu_times=True)
    except BaseException:
        _drain(devices)
        raise
    watch.snapshot("after_cold")
    warmup, warm, error, stopped, profiled = [], [], None, None, None
    phase = "warm-up"
    start = time.perf_counter()
    try:
        with quiet():
            for _ in range(plan.warmup_count(cold.wall)):
                run, value = run_once(presync=False)
                warmup.append(run)
            phase = "warm"
            last = warmup[-1].wall if warmup else cold.wall
            while plan.wants_more(len(warm), time.perf_counter() - start, last):
                run, value = run_once(presync=False)
                warm.append(run)
                last = run.wall
            watch.snapshot("after_warm")
            if plan.profile == "warm":
                phase = "profiled"
                with profiler:
                    profiled, value = run_once()
            if counter is not None:
                phase = "counting"
                with counter:
                    counted, value = run_once()
    except (Exception, KeyboardInterrupt) as exc:
        _drain(devices)
        error = exc
        number = {"warm-up": len(warmup) + 1, "warm": len(warm) + 1}.get(phase, "")
        stopped = f"{type(exc).__name__} in {phase} run {number}".rstrip()
    result = CudaTimeResult(
        cold=cold,
        warmup=warmup,
        warm=warm,
        device=devices.describe(),
        synchronized=devices.names,
        notes=devices.notes(),
        stopped=stopped,
        cold_causes=watch.causes(),
        memory=watch.memory(),
    )
    if plan.profile == "cold":
        result.profile = profiler.summary(cold, cold=True)
    elif plan.profile == "warm" and error is None:
        result.profile = profiler.summary(profiled)
    if counter is not None and error is None:
        result.roofline = counter.summary(counted, result.median)
    return Measurement(result, value, error)


class _NoWatch:
    def snapshot(self, moment):
        pass

    def causes(self):
        return []

    def memory(self):
        return None
