"""Run a cell: one cold run, warm-up runs, then warm runs, with three clocks per run.

Knows nothing of IPython or of any framework: it is handed a callable and a ``DeviceSet`` (see
``backends``). The run-count rule lives in ``Plan``.

A tiny cell runs many times per sample (``compile_batch``): a run of ``sum(range(40))`` takes about
300 ns, less than the harness's own cost per sample (two clock reads, the synchronize, the call), which
would be billed to every sample. As ``timeit`` and torch's ``Timer`` do, the cell becomes the body of
``for _ in itertools.repeat(None, k)``, timed as one and divided by k.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import itertools
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import TYPE_CHECKING, Any, cast

from ..results.result import CudaTimeResult, Env, Harness, Run, Task, extra_runs, statistics_clock
from ..units import failure_line
from .machine import Clock

if TYPE_CHECKING:
    from ..backends import DeviceSet
    from ..results.result import RecordKeeper


DEFAULT_BUDGET = 1.0  # seconds of warm-up + warm runs after the cold run
MIN_RUNS = 3  # warm runs (samples), whenever they fit
MAX_RUNS = 1000  # warm runs (samples), at most, without -n

# Null runs per call to measure the harness's own cost: enough for a median and quartiles,
# and cheap (25 synchronizes: about 0.5 ms on a GPU, 15 µs on the CPU).
NULL_RUNS = 25

# A run shorter than this many times the harness's cost per sample is timed in batches of k
# runs per sample, k chosen so that a sample lasts this long: the harness then adds at most 1%.
BATCH_TARGET = 100
MAX_BATCH = 10**7  # runs per sample, at most (a 5 ns `pass` needs 10**4 for a 50 µs sample)
SIZED = "sized"  # ``Plan.batch``: the runs per sample sized from the warm-up, even with a fixed count
# 2, 5, 10, 20, 50, ... up to MAX_BATCH, as ``timeit``'s autorange tries them
_BATCH_SIZES: list[int] = [size for size in (step * 10**power for power in range(8) for step in (1, 2, 5))
                           if 1 < size <= MAX_BATCH]

Outputs = Callable[[Any], list[Any]]  # ``Cell.outputs``: a run's value -> what the run produced


@dataclass(frozen=True)
class Plan:
    """How many runs to make.

    ``runs`` fixes the warm-run count (0: the cold run only). Otherwise warm runs go on until ``budget``
    seconds have passed since the cold run ended, at least MIN_RUNS when they fit in one more budget, at
    least one always, at most MAX_RUNS. ``warmup`` defaults to one run, or none when the cold run alone
    exceeded the budget, so that a slow cell is repeated only once.

    ``batch`` is the runs per warm sample (see ``Sampler._warm_loop``). None: sized from the warm-up
    without ``runs``, 1 with it (-n N makes N runs). SIZED: sized from the warm-up even so (an interleaved
    sweep's first round, whose -n counts rounds, not runs). A number: that many, in a plain loop where the
    cell cannot be batched (later rounds keep the first's size: each round's sample of a µs-scale cell
    spreads the harness's cost as ordinary warm runs do).
    """

    runs: int | None = None
    warmup: int | None = None
    budget: float = DEFAULT_BUDGET
    batch: int | str | None = None

    def warmup_count(self, cold_seconds: float) -> int:
        if self.runs == 0:
            return 0  # -n 0 is one run in all
        if self.warmup is not None:
            return self.warmup
        return 1 if cold_seconds <= self.budget else 0

    def wants_more(self, done: int, spent: float, last: float) -> bool:
        """Whether to make another warm run after ``done`` runs and ``spent`` seconds."""
        if self.runs is not None:
            return done < self.runs
        return done < MAX_RUNS and (done == 0 or spent < self.budget
                                    or (done < MIN_RUNS and last * (MIN_RUNS - done) <= self.budget))


class StopRepeats(BaseException):
    """Raised during a later run (by ``Repeats.quiet``'s stand-ins) to end the later runs without
    an error: the runs done are reported, and the cell succeeds (``input()`` in a later run).
    Not an ``Exception``, so that the cell's own ``except Exception`` does not swallow it."""


class Unrepeatable(StopRepeats):
    """Raised before or during a later run when the cell turned out not to be repeatable (a second
    run changed again what the first changed; an effect refused before it happened): the later
    runs end, and ``Repeats.why_once`` says why, in place of an early stop."""


class Repeats:
    """What must happen between runs of the same cell; the seam between the runner and
    the user's state (``state.CellRepeats`` is the real one). This default does nothing."""

    def begin(self) -> None:
        """Called before the cold run."""

    def cold(self) -> contextlib.AbstractContextManager[Any]:
        """A context manager around the cold run, left even when it fails."""
        return contextlib.nullcontext()

    def after_cold(self, value: Any = None) -> bool:
        """After the cold run, with its value: whether the cell may run again (when it may not, the
        plan is cut to the cold run, or with ``-n`` loses its default warm-up)."""
        return True

    def reset(self) -> None:
        """Called before every later run (warm-up, warm, extra)."""

    def quiet(self) -> contextlib.AbstractContextManager[Any]:
        """A context manager around the later runs: it discards their output; a ``StopRepeats``
        raised inside ends them quietly."""
        return contextlib.nullcontext()

    def end(self) -> None:
        """Called after the later runs, even when one failed."""

    def why_once(self) -> list[str]:
        """Why the cell must not run again (found after the cold run or in a later run), or what
        a forced repeat did to the state: one phrase each."""
        return []

    def notes(self) -> list[str]:
        """Sentences for the report about the state and the output after the runs (a change put
        back; output the later runs' ``quiet()`` dropped that it cannot tell was the cell's)."""
        return []

    def failed(self, error: BaseException) -> bool:
        """A later run raised ``error``: True when the repeats explain it (a probe run that failed on
        the state the first run left), which ends the runs as ``Unrepeatable`` does, with no error."""
        return False

    def rewinds(self) -> bool:
        """True when ``reset()`` puts back, before every later run, what the cold run changed: such a cell
        is never batched, since a put-back inside a timed loop would be timed."""
        return False

    def other_start(self) -> str | None:
        """After ``end()``: None when the warm runs started from what the cold run found (nothing changed,
        or it was put back: ``rewinds``), else a sentence saying what they started from."""
        return None


class Progress:
    """The seam through which ``measure`` reports between runs, never inside a timed span; this default does
    nothing. An implementation (``progress.LiveProgress``) must return quickly: it is called after every run."""

    def starting(self, phase: str, number: int) -> None:
        """Just before a run's timed span, so that a view can say which run is under way and for how long."""

    def ran(self, phase: str, done: int, warm: Sequence[Run], harness: Harness | None = None) -> None:
        """``phase`` is "cold", "warm-up" or "warm"; ``done`` counts its runs; ``warm``: the warm samples so far
        (read, never kept); ``harness``: the harness's own cost (None after the cold run, before it is measured),
        so that a running median is read on the clock the result will use (``statistics_clock``)."""


class Watch:
    """A feature's part in one measurement (``Feature.watch`` makes one per cell or sweep point): the seam between
    the runner and ``features/``, called between runs, never inside a timed span; the runner names no feature.
    This default watches nothing. A cell that must not repeat gets no extra runs."""

    extra: str | None = None  # the extra run's name, as a stop names it ("profiled", "counting"), or None for none
    batching: bool = True  # False: warm runs are never timed k at a time (a watch that must see each run)

    def before(self) -> None:
        """Just before the cold run."""

    def after_cold(self) -> None:
        """Just after the cold run, once the frameworks it imported have joined."""

    def before_warm(self) -> None:
        """As the warm-up runs begin (inside the quiet of later runs and any ``--threads``)."""

    def after_warm(self) -> None:
        """After the warm runs, however they ended (an error or a stop too)."""

    def before_run(self) -> None:
        """Before each later run or sample (warm-up, warm, extra), outside its timed span."""

    def after_run(self, run: Run) -> None:
        """After each later run or sample, outside its timed span; ``run`` its clocks, per run."""

    def hears_each_run(self) -> bool:
        """Whether this watch overrides ``before_run`` or ``after_run``: the others cost a later run nothing."""
        kind = type(self)
        return kind.before_run is not Watch.before_run or kind.after_run is not Watch.after_run

    def around(self, run: str) -> contextlib.AbstractContextManager[Any] | None:
        """A context manager around ``run`` ("cold", or "extra": the one more run after the warm runs, out
        of the statistics, that a watch with an ``extra`` name asks for), or None."""
        return None

    def mark(self, run: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        """The cell as ``run`` calls it."""
        return fn

    def record(self, outcome: Outcome) -> Any:
        """What the feature keeps on the result: plain data, or None."""
        return None


class Unmade(Watch):
    """A feature's watch that could not be made (``Feature.watch`` raised): it raises that error
    at its first part, where ``Guarded`` keeps it as the report's one line; the runs stand."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def before(self) -> None:
        raise self.error


class Guarded(Watch):
    """A feature's watch that cannot sink the measurement: the first exception from any of its parts (a reading,
    its context's enter or exit, its mark, its record) turns it off and is kept as one line, ``failure``, for the
    result's notes; the runs and the other features stand. The cell's own exceptions pass through untouched."""

    def __init__(self, name: str, watch: Watch) -> None:
        self.name, self._watch = name, watch
        self.extra, self.batching = watch.extra, watch.batching
        self.failure: str | None = None

    def _fail(self, error: Exception) -> None:
        if self.failure is None:
            self.failure = failure_line(f"{self.name} not recorded", error)

    def _call(self, part: str, *args: Any) -> Any:
        """``part`` of the watch with ``args``; None once the watch has failed."""
        if self.failure is None:
            try:
                return getattr(self._watch, part)(*args)
            except Exception as error:
                self._fail(error)
        return None

    def around(self, run: str) -> contextlib.AbstractContextManager[Any] | None:
        around = self._call("around", run)
        return None if around is None else self._guarded(around)

    @contextlib.contextmanager
    def _guarded(self, around: contextlib.AbstractContextManager[Any]) -> Iterator[None]:
        """``around``, its failures kept: one entering it leaves the run unwatched (the runner then
        skips an extra run); the cell's exception reaches its exit and goes on."""
        try:
            around.__enter__()
        except Exception as error:
            self._fail(error)
            yield
            return
        raised: tuple[Any, Any, Any] = (None, None, None)
        try:
            yield
        except BaseException as exc:
            raised = (type(exc), exc, exc.__traceback__)
            raise
        finally:
            try:
                around.__exit__(*raised)
            except Exception as error:
                if error is not raised[1]:
                    self._fail(error)

    def mark(self, run: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        marked = self._call("mark", run, fn)
        return fn if marked is None else marked


# The parts that need no more than ``_call``: each part of the watch, through it.
for _part in ("before", "after_cold", "before_warm", "after_warm", "before_run", "after_run", "record",
              "hears_each_run"):
    setattr(Guarded, _part, lambda self, *args, _part=_part: self._call(_part, *args))


@dataclass(frozen=True)
class Outcome:
    """What a watch's record is made from once every run is done: the cold run, the watch's own extra run (None
    when it made none), the warm median on the statistics clock (None without warm runs), the harness's own
    cost, and what the cell read, returned and bound (``seen``: whose frameworks it touched)."""

    cold: Run
    extra: Run | None
    median: float | None
    harness: Harness
    seen: list[Any] = dataclasses.field(default_factory=list)
    other_start: str | None = None  # ``Repeats.other_start``: the warm runs did not time the cold run's job


@dataclass
class Cell:
    """What ``measure`` runs: the cell as a no-argument callable, and what it knows of it. ``outputs(value)`` lists
    what a run produced (see ``Backend.synchronize``); ``reads()`` the values of the names the cell reads (with its
    outputs they tell ``devices.attribute`` what it touched); ``batch(k)`` runs it k times in one call, or is None."""

    fn: Callable[[], Any]
    outputs: Outputs | None = None
    reads: Callable[[], list[Any]] | None = None
    batch: Callable[[int], Any] | None = None


@dataclass
class Measurement:
    """What ``measure`` hands back: the result, the cold run's value, and what stopped the warm runs."""

    result: CudaTimeResult
    value: Any = None
    error: BaseException | None = None


def timed_run(fn: Callable[[], Any], devices: DeviceSet, clock: Clock, cpu_times: bool = False,
              outputs: Outputs | None = None, before: str | None = "synchronize") -> tuple[Run, Any]:
    """Run ``fn`` once between two synchronizations; return (Run, value). ``outputs(value)`` lists what the run
    produced, for backends that wait on results. ``before="settle"``, where the previous run's final synchronize
    just drained every device (consecutive warm runs), waits only for what that one cannot see
    (``Backend.settle``), a synchronize saved per run; ``before=None`` waits for nothing (the harness's null runs).
    """
    if before == "synchronize":
        devices.synchronize()
    elif before == "settle":
        devices.settle()
    timer = devices.timer()
    cpu0 = clock.cpu() if cpu_times else None
    if timer is not None:
        timer.start()
    t0 = clock.now()
    value = fn()
    t1 = clock.now()
    if timer is not None:
        timer.stop()
    devices.synchronize(None if outputs is None else lambda: outputs(value))
    t2 = clock.now()
    device = timer.elapsed() if timer is not None else None
    if cpu0 is not None:
        (user0, sys0), (user1, sys1) = cpu0, clock.cpu()
        return Run(t1 - t0, t2 - t0, device, user1 - user0, sys1 - sys0), value
    return Run(t1 - t0, t2 - t0, device), value


def calibrate(devices: DeviceSet, clock: Clock, outputs: Outputs | None = None) -> Harness:
    """The harness's own cost: NULL_RUNS runs of nothing through ``timed_run`` on ``devices``,
    as a warm run goes (``outputs`` as the cell's), once per call."""
    runs = [timed_run(lambda: None, devices, clock, outputs=outputs, before=None)[0] for _ in range(NULL_RUNS)]
    walls = [run.wall for run in runs]
    q1, _, q3 = statistics.quantiles(walls, n=4, method="inclusive")
    device_times = [run.device for run in runs if run.device is not None]
    device = None if len(device_times) < len(runs) else statistics.median(device_times)
    return Harness(statistics.median(walls), q3 - q1, device)


def _drain(devices: DeviceSet) -> None:
    """After an error, let queued work finish so that the next cell starts clean."""
    with contextlib.suppress(Exception):
        devices.synchronize()


def _entered(stack: contextlib.ExitStack, watches: Sequence[Watch], run: str,
             fn: Callable[[], Any]) -> Callable[[], Any]:
    """Enter each watch's context around ``run`` on ``stack``; return ``fn`` in the mark of each
    watch that has one."""
    for watch in watches:
        around = watch.around(run)
        if around is not None:
            stack.enter_context(around)
            fn = watch.mark(run, fn)
    return fn


class Sampler:
    """The runs of one cell on ``devices``, timed on ``clock``, and what stopped them: the cold run, then the later
    runs (warm-up, warm, extra), each after ``repeats.reset()``; ``progress`` hears of each. A sample of k runs
    (``cell.batch(k)``, unless a watch forbids it: ``Watch.batching``) is timed as one and reported per run."""

    cold: Run  # set by ``cold_run``
    harness: Harness  # set by ``later_runs``

    def __init__(self, cell: Cell, devices: DeviceSet, repeats: Repeats, clock: Clock, watches: Sequence[Guarded],
                 progress: Progress, cpu_times: bool = False) -> None:
        self.cell, self.devices, self.repeats, self.clock = cell, devices, repeats, clock
        self.watches, self.progress, self.cpu_times = watches, progress, cpu_times  # cpu_times: -c reads them every run
        self.batch = cell.batch if all(watch.batching for watch in watches) else None
        self._each = [watch for watch in watches if watch.hears_each_run()]
        self.warmup: list[Run] = []
        self.warm: list[Run] = []
        self.extra: dict[Watch, Run] = {}  # watch -> its extra run
        self.phase = "warm-up"
        self.error: BaseException | None = None
        self.stopped: str | None = None

    def cold_run(self) -> Any:
        """The first run, inside ``repeats.cold()`` and between the watches' ``before`` and ``after_cold``;
        its value. Its error is the user's and propagates, once the devices are drained. The frameworks it
        imported join after it (``redetect``), before the watches hear that it ended."""
        self.repeats.begin()
        self.progress.starting("cold", 1)
        with self.repeats.cold():
            self.devices.begin()
            for watch in self.watches:
                watch.before()
            try:
                with contextlib.ExitStack() as stack:  # with the process's CPU times, as ``%time`` prints them
                    self.cold, value = timed_run(_entered(stack, self.watches, "cold", self.cell.fn), self.devices,
                                                 self.clock, cpu_times=True, outputs=self.cell.outputs)
            except BaseException:
                _drain(self.devices)
                raise
            self.devices.redetect()
            for watch in self.watches:
                watch.after_cold()
        self.progress.ran("cold", 1, [])
        return value

    def run(self, before: str | None = "settle", fn: Callable[[], Any] | None = None, runs: int = 1) -> Run:
        """One later run (of ``fn``: the cell as a watch marked it), or a sample of ``runs`` runs in one batch
        (clocks per run), after the cell's names are put back and the watches that hear each run hear it."""
        self.repeats.reset()
        for watch in self._each:
            watch.before_run()
        call = functools.partial(self.batch or self._looped, runs) if runs > 1 else fn or self.cell.fn
        run = timed_run(call, self.devices, self.clock, self.cpu_times, self.cell.outputs, before)[0]
        if runs > 1:  # the sample's clocks (every field but the last, ``batch``), per run
            run = Run._make([None if value is None else value / runs for value in run[:-1]] + [runs])
        for watch in self._each:
            watch.after_run(run)
        return run

    def _looped(self, runs: int) -> Any:
        """The cell ``runs`` times in a plain loop, as timeit runs one; the last run's value."""
        value = None
        for _ in range(runs):
            value = self.cell.fn()
        return value

    def _halt(self, cause: str) -> None:
        """Say what stopped the later runs, and in which run: "input() in warm-up run 1"."""
        number = {"warm-up": len(self.warmup) + 1, "warm": len(self.warm) + 1}.get(self.phase, "")
        self.stopped = f"{cause} in {self.phase} run {number}".rstrip()

    def later_runs(self, plan: Plan, extras: Sequence[Guarded]) -> None:
        """The null runs that measure the harness (``calibrate``), the watches' ``before_warm``, the warm
        loop, their ``after_warm`` (however the loop ended), then the extra runs that ``extras`` ask for,
        in order; an error stops them."""
        self.harness = calibrate(self.devices, self.clock, self.cell.outputs)
        try:
            with self.repeats.quiet():
                for watch in self.watches:
                    watch.before_warm()
                try:
                    self._warm_loop(plan)
                finally:
                    for watch in self.watches:
                        watch.after_warm()
                for watch in extras:
                    self.phase = cast(str, watch.extra)  # ``extras`` are the watches with an extra name
                    with contextlib.ExitStack() as stack:
                        fn = _entered(stack, [watch], "extra", self.cell.fn)
                        if watch.failure is None:  # a watch that failed (or failed to enter) gets no run
                            self.extra[watch] = self.run(before="synchronize", fn=fn)
        except Unrepeatable:
            pass  # not an early stop: the repeat note says why the runs ended
        except StopRepeats as stop:
            self._halt(stop.args[0] if stop.args else "a stop")
        except BaseException as exc:  # GeneratorExit and the user's own BaseException subclasses too
            if not self.repeats.failed(exc):  # kept, and the stop says which run: "ValueError in warm run 3"
                self.error = exc
                self._halt(type(exc).__name__)

    def _warm_loop(self, plan: Plan) -> None:
        """Warm-up runs, then warm samples until the plan has enough, on the budget counted from the end of the cold
        run; ``progress`` hears of each. Runs per sample: ``plan.batch`` when a number, else 1 unless the plan sizes
        it and the cell can be batched; then 1 when the shortest run so far lasts BATCH_TARGET times the harness's
        cost, else the first of 2, 5, 10, 20, ... whose sample lasts that long, each tried in turn (as warm-up runs)."""
        start = self.clock.now()
        for number in range(1, plan.warmup_count(self.cold.wall) + 1):
            self.progress.starting("warm-up", number)
            self.warmup.append(self.run())
            self.progress.ran("warm-up", len(self.warmup), self.warm, self.harness)
        goal = BATCH_TARGET * self.harness.wall
        shortest = min(run.wall for run in [self.cold, *self.warmup])  # one slow run must not stop batching
        if isinstance(plan.batch, int):  # -r R -n N: N runs, in a plain loop where the cell cannot be batched
            runs = plan.batch
        elif (self.batch is None or self.repeats.rewinds() or (plan.runs is not None and plan.batch != SIZED)
                or shortest >= goal):
            runs = 1
        else:
            for runs in _BATCH_SIZES:
                self.warmup.append(self.run(runs=runs))
                if self.warmup[-1].wall * runs >= goal:
                    break
        self.phase = "warm"
        last = (self.warmup[-1].wall if self.warmup else self.cold.wall) * runs  # the last run, or try, as a sample
        while plan.wants_more(len(self.warm), self.clock.now() - start, last):
            self.progress.starting("warm", len(self.warm) + 1)
            self.warm.append(self.run(runs=runs))
            last = self.warm[-1].wall * runs
            self.progress.ran("warm", len(self.warm), self.warm, self.harness)

    def result(self, task: Task, features: Iterable[RecordKeeper], asked: Plan, seen: list[Any]) -> CudaTimeResult:
        """The result, once: the runs, what the devices say, the task where it ran, the notes (the devices', why the
        cell ran once when it changes state that restoring names cannot undo, or what -n forced: ``asked`` is the plan
        before the cut; an OOM hint; each watch's failure), each watch's record (its ``Outcome``, with the watch's
        extra run and the warm median)."""
        other_start = self.repeats.other_start()
        notes, reasons, runs = self.devices.notes(), self.repeats.why_once(), asked.runs
        if reasons and runs != 0:
            total = 1 + sum(run.batch for run in self.warmup + self.warm) + len(self.extra) + (self.stopped is not None)
            why = "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else "")
            if runs is None:
                ran = "Ran once only" if total == 1 else f"Stopped repeating after {total} runs"
                notes.append(f"{ran}: {why}. -n N forces N more runs (the state then reflects all of them).")
            else:  # the fixed count as it was typed: -n 10, -r 3 -n 10 or -r 3
                spelled = (f"-r {runs} -n {asked.batch}" if isinstance(asked.batch, int)
                           else f"-r {runs}" if asked.batch == SIZED else f"-n {runs}")
                notes.append(f"The state reflects all {total} runs, not one ({spelled} forced them): {why}.")
        notes += self.repeats.notes()
        with contextlib.suppress(Exception):  # an error that cannot be printed gets no hint
            if self.error is not None and (type(self.error).__name__ == "OutOfMemoryError"
                                           or "out of memory" in str(self.error).lower()):
                notes.append(OOM_HINT)
        median = None  # the warm median on the statistics' clock (``statistics_clock``)
        if self.warm:
            clock = statistics_clock(self.warm, self.harness, task.clock)
            median = float(statistics.median(getattr(run, clock) for run in self.warm))
        features = tuple(features)  # read twice: a generator would be spent
        records: dict[str, Any] = {feature.name: None for feature in features}  # off: None; r.<name> reads
        records.update((watch.name, watch.record(Outcome(self.cold, self.extra.get(watch), median, self.harness,
                                                         seen, other_start))) for watch in self.watches)
        notes += [watch.failure for watch in self.watches if watch.failure is not None]
        device = self.devices.describe()
        return CudaTimeResult(cold=self.cold, warmup=self.warmup, warm=self.warm, device=device,
                              synchronized=self.devices.names, notes=notes, stopped=self.stopped, harness=self.harness,
                              task=dataclasses.replace(task, env=Env.here(device, frameworks=self.devices.frameworks)),
                              records=records, extra_runs=extra_runs(features, records))


OOM_HINT = (
    "Out of memory during the warm runs: each run allocates again while the previous result "
    "is still referenced. Time fewer runs (-n), free tensors with del, or make the cell "
    "overwrite its result in place."
)


def measure(cell: Cell, devices: DeviceSet, plan: Plan, task: Task, features: Iterable[RecordKeeper] = (),
            watches: Mapping[str, Watch] | None = None, repeats: Repeats | None = None, clock: Clock | None = None,
            progress: Progress | None = None) -> Measurement:
    """Cold run, warm-up and warm runs of ``cell`` on ``devices`` according to ``plan``: the finished
    ``CudaTimeResult`` of ``task`` (its ``env`` filled in here), with the cold run's value and what stopped
    the later runs. An exception in the cold run propagates: there is nothing to report; one in a later
    run (or an interrupt) stops them, and is kept in ``Measurement.error``. ``repeats`` may cut the plan
    to the cold run. ``watches``, the parts of this call's features by feature name, each leave their
    record under that name; each of ``features`` gets an entry in the records (None where it did not watch).
    """
    repeats, clock, progress = repeats or Repeats(), clock or Clock(), progress or Progress()
    parts = [Guarded(name, watch) for name, watch in (watches or {}).items()]
    sampler = Sampler(cell, devices, repeats, clock, parts, progress, cpu_times=task.clock == "cpu")
    value = sampler.cold_run()
    asked, extras = plan, [watch for watch in parts if watch.extra]
    if not repeats.after_cold(value):
        if plan.runs is None:  # a cell that must not repeat: the cold run alone
            plan, extras = dataclasses.replace(plan, runs=0), []
        else:  # with -n N: exactly N more runs, one per sample, no warm-up unless asked
            batch = plan.batch if isinstance(plan.batch, int) else 1
            plan = dataclasses.replace(plan, warmup=plan.warmup or 0, batch=batch)
    try:
        sampler.later_runs(plan, extras)
    finally:
        repeats.end()
    if sampler.error is not None:
        _drain(devices)
    produced = cell.outputs(value) if cell.outputs is not None else [value]
    seen = (cell.reads() if cell.reads is not None else []) + produced
    devices.attribute(seen)
    return Measurement(sampler.result(task, features, asked, seen), value, sampler.error)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (*_DEFS, ast.Lambda)
_NOT_IN_A_LOOP_FUNCTION = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)
# statements that bind their names whenever they run (a loop or a branch may not run at all)
_ALWAYS_BINDS = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, *_DEFS)

# The loop's own names start with _cudatime_: the cell's ``_`` (IPython's last output) stays the user's.
_TEMPLATE = """
def _cudatime_batch(_cudatime_k, _cudatime_repeat):
    _cudatime_value = None
    for _cudatime_run in _cudatime_repeat(None, _cudatime_k):
        pass
    return _cudatime_value
"""


def _in_scope(nodes: Iterable[ast.AST], scopes: tuple[type[ast.AST], ...]) -> Iterator[ast.AST]:
    """``nodes`` and all below them that run in their scope: a node of ``scopes`` is given, never entered."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, scopes):
            pending.extend(ast.iter_child_nodes(node))


def top_level_names(tree: ast.AST) -> list[str]:
    """Names a cell binds or deletes at its top level (assignments, del, imports, defs, for/with targets)."""
    names: set[str] = set()
    for node in _in_scope(ast.iter_child_nodes(tree), (*_SCOPES, ast.comprehension)):
        if isinstance(node, _DEFS):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.alias) and node.name != "*":
            names.add((node.asname or node.name).partition(".")[0])
    return sorted(names)


def independent(tree: ast.Module) -> bool:
    """Whether each run does the same work whatever the run before it left, as a batch needs (nothing puts the
    cell's names back between its runs): no statement may read a name the cell binds before a statement that
    always binds it has (``c = a @ b; c.sum()`` yes; ``x = x + 1`` or ``for ...: z = ...`` then ``z`` no)."""
    bound = set(top_level_names(tree))
    done: set[str] = set()
    for statement in tree.body:
        # what it reads (``x += 1`` reads x, ``del x`` needs it), nested scopes too: an over-estimate on purpose
        nodes = list(ast.walk(statement))
        targets = [node.target for node in nodes if isinstance(node, ast.AugAssign)]
        reads = {node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store)}
        if (reads | {target.id for target in targets if isinstance(target, ast.Name)}) & (bound - done):
            return False
        if isinstance(statement, _ALWAYS_BINDS):
            done |= set(top_level_names(ast.Module([statement], [])))
    return True


def _loop_module(tree: ast.Module) -> ast.Module:
    """``_TEMPLATE`` with the cell as the loop's body and its bound names declared global, so that the
    runs read and write the user's namespace as an unbatched run does; the template's lines are put on
    the cell's first line, so a traceback shows the cell's lines only."""
    module = ast.parse(_TEMPLATE)
    body = list(tree.body)
    for node in ast.walk(module):
        ast.copy_location(node, body[0])  # a no-op on the nodes without a location
    function = cast(ast.FunctionDef, module.body[0])  # the template's def, whose body[1] is its for loop
    if isinstance(body[-1], ast.Expr):  # the final expression's value is the batch's value
        body[-1] = ast.copy_location(ast.Assign([ast.Name("_cudatime_value", ast.Store())], body[-1].value),
                                     body[-1])
    cast(ast.For, function.body[1]).body = body
    if names := top_level_names(tree):  # a global statement names at least one
        function.body.insert(0, ast.Global(names))
    return ast.fix_missing_locations(module)


def compile_batch(tree: ast.Module, compile_module: Callable[[ast.Module], CodeType],
                  namespace: dict[str, Any]) -> Callable[[int], Any] | None:
    """``batch(k)``: run the cell (``tree``, its transformed module AST) ``k`` times in ``namespace`` (the user's
    globals), compiled by ``compile_module`` as the shell compiles, and return the last run's value; or None
    when its runs depend on each other (``independent``) or it cannot be the loop function's body (``:=``, or one
    of ``_NOT_IN_A_LOOP_FUNCTION`` outside defs, lambdas and classes, which are scopes of their own)."""
    if (not tree.body or not independent(tree) or any(isinstance(node, ast.NamedExpr) for node in ast.walk(tree))
            or any(isinstance(node, _NOT_IN_A_LOOP_FUNCTION) for node in _in_scope(tree.body, _SCOPES))):
        return None
    try:
        code = compile_module(_loop_module(tree))
    except SyntaxError:  # e.g. ``from m import *``, which a function body may not hold
        return None
    scratch: dict[str, Any] = {}
    exec(code, namespace, scratch)  # defines the function, whose globals are the user's namespace
    loop = scratch["_cudatime_batch"]
    # The loop's code named ``<module>``, as a cell's own code is: an error in a batched run is
    # shown as in one run, with no frame of this package's function.
    if sys.version_info >= (3, 11):
        loop.__code__ = loop.__code__.replace(co_name="<module>", co_qualname="<module>")
    else:
        loop.__code__ = loop.__code__.replace(co_name="<module>")
    return lambda k: loop(k, itertools.repeat)
