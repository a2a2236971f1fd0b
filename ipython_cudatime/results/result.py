"""The result of one ``%cudatime``: every run's clocks, warm statistics, and what was timed.

Plain data, the bottom layer: like IPython's ``TimeitResult`` it is a small object you
can keep (``-o``/``-v``), and like torch's ``Measurement`` it carries a ``Task`` saying
what it timed, so any list of results can be grouped, saved and compared later. The
layers above know it, never the reverse: ``display`` gives it its reprs, ``render/`` its
text and HTML.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import operator
import platform
import statistics
import sys
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, ClassVar, NamedTuple, TypeVar

from .. import backends
from ..units import failure_line, format_seconds, inert, range_text


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
    device: float | None = None
    cpu_user: float | None = None
    cpu_sys: float | None = None
    batch: int = 1  # runs of the cell this sample timed (see ``batching``); the clocks are per run


class Harness(NamedTuple):
    """The harness's own cost, from null runs (nothing in them) through the same path and devices.

    wall    median synchronized time of a null run: what the clocks and synchronize add to a sample;
    jitter  IQR of those times: the spread the clocks show on their own;
    device  median device-clock time of a null run, or None without a device clock.
    """

    wall: float
    jitter: float
    device: float | None = None


Saved = TypeVar("Saved", Run, Harness)


# Each kind's values in the order of its fields, read in one C call (dict lookups by name, so in any key order)
_VALUES = {kind: operator.itemgetter(*kind._fields) for kind in (Run, Harness)}


def from_saved(kind: type[Saved], data: Mapping[str, Any]) -> Saved:
    """``kind(**data)`` for clocks read back from a saved line (``data`` checked by ``schema``), sooner
    where it holds every field (as many keys as fields, none missing: so no foreign one): the values go
    into the tuple as they are, read by name in one step, where a call by keyword compares each key with
    the names as text (JSON's keys are equal to the fields' names, not the same strings), and where
    testing the keys' order first (``tuple(data) == kind._fields``) cost as much again: 300 ns a run."""
    if len(data) == len(kind._fields):
        try:
            return tuple.__new__(kind, _VALUES[kind](data))
        except KeyError:  # a field missing, a foreign key in its place: the call says which
            pass
    return kind(**data)


DEVICE_SHARE = 0.5  # device events covering less of the wall time than this missed some work
# Quartiles of fewer warm runs than this rest on two or three samples each: show min and max instead.
IQR_MIN_RUNS = 10
# The median's interval: 95%, from order statistics; below CI_MIN_RUNS samples none exists (with 5, the
# widest, min to max, covers the median only 94% of the time). Its ranks come from the exact binomial up
# to EXACT_RANKS samples, from the normal approximation beyond (one rank wider at most, never narrower).
CI_MIN_RUNS = 6
EXACT_RANKS = 1000


Frozen = TypeVar("Frozen", bound=Hashable)  # bound: the cache below takes classes of Hashable instances


@functools.cache
def _filling(cls: Any) -> tuple[tuple[str, ...], Callable[[Any], None] | None]:
    """The names ``cls.__init__`` takes, in order (a dataclass's fields less those it computes), and its
    ``__post_init__`` or None: looked up once per class (``hasattr`` on a class without one costs a
    failed lookup through its bases on every call)."""
    return tuple(item.name for item in dataclasses.fields(cls) if item.init), getattr(cls, "__post_init__", None)


def frozen_from(cls: type[Frozen], values: Mapping[str, Any]) -> Frozen:
    """``cls(**values)`` for a frozen dataclass where ``values`` holds every field ``__init__`` takes, in
    order: the same object, its ``__dict__`` filled in one go (in the same order, so that it compares, prints
    and pickles the same), where the frozen ``__init__`` sets each field through ``object.__setattr__`` (some
    13,000 of a short saved line's instructions to load); else the call itself."""
    fields, post_init = _filling(cls)
    if tuple(values) != fields:
        return cls(**values)
    made: Any = object.__new__(cls)
    made.__dict__.update(values)
    if post_init is not None:
        post_init(made)
    result: Frozen = made
    return result


@dataclass(frozen=True)
class Env:
    """Where a result was timed: enough to tell two machines' results apart in one table."""

    device: str = "cpu"
    frameworks: dict[str, str] = field(default_factory=dict)  # name -> __version__, of those imported
    python: str = ""
    host: str = ""

    @classmethod
    def here(cls, device: str, modules: Mapping[str, Any] | None = None,
             frameworks: Iterable[str] | None = None) -> Env:
        """This process, now. Versions come from ``frameworks`` (default: those of the backends'
        registry, ``backends.frameworks``) already imported (``modules``, default ``sys.modules``):
        asking a version must never import a framework."""
        modules = sys.modules if modules is None else modules
        names = backends.frameworks() if frameworks is None else frameworks
        versions = {name: str(getattr(modules[name], "__version__", "unknown"))
                    for name in names if modules.get(name) is not None}
        return cls(device, versions, platform.python_version(), platform.node())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def format_params(params: Mapping[str, Any]) -> str:
    """``n=256, device='cuda'``: the one way a point's swept values are written, in every table
    and message (repr, so that the string ``'1'`` and the number ``1`` read differently)."""
    return ", ".join(f"{name}={value!r}" for name, value in params.items())


def _plain(value: Any) -> bool:
    """Whether JSON gives ``value`` back as it is: so a saved file keeps it readable."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    return type(value) is list and all(_plain(item) for item in value)


def params_to_json(params: Mapping[str, Any]) -> dict[str, Any]:
    """Swept values for JSON: plain ones as they are, other literals (tuples, dicts, sets,
    bytes, complex) as ``{"literal": repr}``, which ``params_from_json`` reads back exactly."""
    return {name: value if _plain(value) else {"literal": repr(value)} for name, value in params.items()}


def params_from_json(data: Mapping[str, Any]) -> dict[str, Any]:
    return {name: ast.literal_eval(value["literal"]) if isinstance(value, dict) else value
            for name, value in data.items()}


@dataclass(frozen=True)
class Task:
    """What was timed, like torch's ``TaskSpec``: the statement, its ``-l`` label, the swept
    values of this point, and where. Frozen: a result's task never changes after the run."""

    stmt: str = ""
    label: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    env: Env = field(default_factory=Env)
    threads: int | None = None  # --threads N: the intra-op threads it ran with; None: the user's own settings

    @property
    def name(self) -> str:
        """How a table names it: ``loop``, ``loop[n=256]``, ``n=256`` (an unlabelled sweep point)."""
        params = format_params(self.params)
        if self.label and params:
            return f"{self.label}[{params}]"
        return self.label or params or self.stmt

    def to_dict(self) -> dict[str, Any]:
        return {"stmt": self.stmt, "label": self.label, "params": params_to_json(self.params),
                "env": self.env.to_dict(), "threads": self.threads}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        return frozen_from(cls, {"stmt": data["stmt"], "label": data["label"],
                                 "params": params_from_json(data["params"]), "env": frozen_from(Env, data["env"]),
                                 "threads": data.get("threads")})


STATS = ("clock", "runs", "median", "median_ci", "iqr", "min", "max", "mean", "stdev", "cold_time", "ratio")


def median_rank(samples: int) -> int:
    """How many samples lie outside the median's 95% interval on each side, plus one: the interval
    runs from the ``k``-th smallest sample to the ``k``-th largest, ``k`` the largest rank for which
    fewer than ``k`` of ``samples`` fall below the median with probability at most 2.5% (the count
    below is binomial(samples, 1/2) whatever the distribution). 0: too few samples for an interval."""
    if samples < CI_MIN_RUNS:
        return 0
    if samples > EXACT_RANKS:
        return math.floor(samples / 2 - 0.98 * math.sqrt(samples) + 0.5)
    total, tail, rank, term = 2**samples, 0, 0, 1  # in units of 2**-samples: exact integers
    while 40 * (tail + term) <= total:  # P(fewer than rank + 1 below) <= 1/40
        tail, term, rank = tail + term, term * (samples - rank) // (rank + 1), rank + 1
    return rank


def median_interval(samples: Sequence[float]) -> tuple[float, float] | None:
    """The distribution-free 95% interval of the median of the population ``samples`` come from,
    from their order statistics (``median_rank``), or None below ``CI_MIN_RUNS`` samples."""
    rank = median_rank(len(samples))
    if not rank:
        return None
    ordered = sorted(samples)
    return ordered[rank - 1], ordered[-rank]


def harness_per_run(harness: Harness | None, runs: Sequence[Run]) -> float:
    """The harness's wall time per run in samples like ``runs``: spread over a sample's runs."""
    return harness.wall / runs[0].batch if harness is not None and runs else 0.0


def coverage(runs: Sequence[Run], harness: Harness | None = None) -> float | None:
    """The share of the synchronized time that the device clock saw in ``runs``: the median device
    time over the median wall time less the harness's own cost (a synchronize can cost 20 µs, so
    that a 5 µs kernel's events still count as covering its run). None where a run had no device
    clock. Events on the current stream miss work on other streams, other devices and other
    frameworks; the synchronized wall clock does not."""
    device_times = [run.device for run in runs if run.device is not None]
    if not runs or len(device_times) < len(runs):
        return None
    device = statistics.median(device_times)
    wall = statistics.median(run.wall for run in runs) - harness_per_run(harness, runs)
    return device / wall if wall > 0 else 1.0


def statistics_clock(runs: Sequence[Run], harness: Harness | None = None) -> str:
    """The clock the statistics of ``runs`` use, the one rule for the result, its chart and the live
    progress: "device" where every run has one and it saw most of the synchronized time
    (``coverage`` at least ``DEVICE_SHARE``), else "wall"."""
    return clock_for(coverage(runs, harness))


def clock_for(share: float | None) -> str:
    """``statistics_clock`` from the runs' ``coverage``, for a caller that keeps the coverage too."""
    return "device" if share is not None and share >= DEVICE_SHARE else "wall"


def extra_runs(keepers: Iterable[RecordKeeper], records: Mapping[str, Any]) -> list[str]:
    """The runs ``keepers`` added out of the statistics, as each names its own in ``records``."""
    return [run for keeper in keepers for run in keeper.extra_runs(records.get(keeper.name))]


def record_json(record: Any) -> Any:
    """A feature's record as JSON data for a saved line. A record is plain data: a dataclass (with a
    ``to_dict`` of its own where it writes derived values too, as the roofline's ridge), a list of
    them, or JSON's own values; so the result writes it without asking the feature that made it."""
    if hasattr(record, "to_dict"):
        return record.to_dict()
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    if isinstance(record, (list, tuple)):
        return [record_json(item) for item in record]
    return record


@dataclass(frozen=True)
class Finding:
    """One sentence about a result, shared by every view: ``kind`` is a stable key that tests and
    widgets use, ``text`` the sentence. A ``reason`` is the full reasoning behind the finding before
    it (why the warm runs vary): the text report prints it, the HTML report leaves it out of its list
    of findings, since its keeper's section says it."""

    kind: str
    text: str
    reason: bool = False


class RecordKeeper:
    """What keeps one record on a result: the seam the result, the schema, the store and the views
    are typed against, declared here, below them, so that they never know the features above them
    (``features.Feature`` is a keeper that adds its flags and its part in the runs). Every method
    has a default that adds nothing. ``record`` below is the keeper's record on a result, or None
    (it was off, or the result comes from a file written before it existed): every method accepts
    None. The word methods get what ``judge`` made of it (the record itself, unless the keeper says
    otherwise). Its word methods cannot sink a report: where one raises, the view gets what it shows
    for no record and one line saying what was not shown and why (``__init_subclass__``)."""

    name: ClassVar[str] = ""  # its record's key: ``r.<name>``, and its key in a saved line
    # what a saved record may hold: a ``schema`` check, as a staticmethod (a plain function would bind)
    schema: ClassVar[staticmethod[[Any], Any] | None] = None
    # (record class, the check that reads one) for each class its saved record is made of: every field
    # of the class is declared by its check (tests/test_store.py holds them equal)
    record_checks: ClassVar[tuple[tuple[type, Any], ...]] = ()
    section_title: ClassVar[str] = ""  # its collapsed section in the HTML report ("": none)
    section_class: ClassVar[str] = ""
    columns: ClassVar[tuple[str, ...]] = ()  # its columns in sweep and comparison tables
    # True: its columns judge the row's numbers (noise), beside the table's own verdict (speed-up, vs first),
    # and a row whose every verdict holds leaves them blank (what they say could not change it);
    # False: they add to them (--roofline's rates), at the end of the row, before its error
    beside_verdict: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each word method a keeper defines is guarded (``_shown``): every view and table calls
        them, and none of those call sites needs to know."""
        super().__init_subclass__(**kwargs)
        for name, instead in INSTEAD.items():
            if name in cls.__dict__:
                setattr(cls, name, _shown(cls.__dict__[name], instead))

    def from_json(self, data: Any) -> Any:
        """The record ``record_json`` wrote (already checked against ``schema``), or None."""
        return None

    def judge(self, result: CudaTimeResult, record: Any) -> Any:
        """What its words read of one result: its record, unless what every view of it shows also
        needs the runs (the CPU facts' noise check), worked out here once per result for all the views
        (``findings.Reading`` asks once per report, ``ratios.Verdicts`` once per table row)."""
        return record

    def text_lines(self, result: CudaTimeResult, record: Any) -> list[str]:
        """Its lines in the text report, after the run counts."""
        return []

    def findings(self, result: CudaTimeResult, record: Any) -> list[Finding]:
        """Its sentences under the numbers (every view shows them)."""
        return []

    def section_html(self, result: CudaTimeResult, record: Any) -> str:
        """The body of its collapsed HTML section ("" leaves the section out)."""
        return ""

    def detail_rows(self, result: CudaTimeResult, record: Any) -> list[tuple[str, str]]:
        """(label, value) rows in the report's Details table."""
        return []

    def cells(self, record: Any) -> tuple[str, ...]:
        """Its cells in a table row, one per ``columns``; shown where any row has a record (``judge``
        made something of it)."""
        return ()

    def table_notes(self, rows: list[tuple[str, CudaTimeResult, Any]], what: str) -> list[str]:
        """Its lines under a table, from (row name, result, what ``judge`` made of its record) for
        each row with a result; ``what`` names the rows ("points", "rows")."""
        return []

    def table_fields(self, record: Any) -> dict[str, Any]:
        """Its columns in ``Results.to_pandas()``, where the row has a record."""
        return {}

    def differences(self, first: Any, second: Any) -> list[str]:
        """What differs between two results' records (either may be None) beside the code, named
        beside a contrast's verdict: ``load 0.30 vs 6.70 on 2 cores``."""
        return []

    def merged(self, records: list[Any]) -> Any:
        """One record for a point timed in rounds (``--interleave``), from each round's record in
        order: the first round's, unless the keeper's facts add up across rounds."""
        return records[0] if records else None

    def extra_runs(self, record: Any) -> list[str]:
        """The runs it added out of the statistics, as the run counts name them ("1 profiled")."""
        return []


def judgement(keeper: RecordKeeper, result: CudaTimeResult) -> Any:
    """What ``keeper`` judged of its record on ``result`` (``RecordKeeper.judge``): what its words read."""
    return keeper.judge(result, result.records.get(keeper.name))


# What a view gets from a word method that raised, given the keeper and the one line saying so.
INSTEAD: dict[str, Callable[[RecordKeeper, str], Any]] = {
    "text_lines": lambda keeper, line: [line],
    "findings": lambda keeper, line: [Finding("note", line)],
    "section_html": lambda keeper, line: escape(line),
    "detail_rows": lambda keeper, line: [(keeper.name, line)],
    "cells": lambda keeper, line: ("",) * len(keeper.columns),
    "table_fields": lambda keeper, line: {},
    "judge": lambda keeper, line: None,
    "table_notes": lambda keeper, line: [line],
    "differences": lambda keeper, line: [line],
    "extra_runs": lambda keeper, line: [],
}


def _shown(words: Callable[..., Any], instead: Callable[[RecordKeeper, str], Any]) -> Callable[..., Any]:
    """``words`` (a keeper's word method), or where it raises, ``instead(keeper, line)``."""
    @functools.wraps(words)
    def shown(keeper: RecordKeeper, *args: Any) -> Any:
        try:
            return words(keeper, *args)
        except Exception as error:  # a record this version cannot word: say so, keep the report
            return instead(keeper, failure_line(f"{keeper.name} not shown", error))

    return shown


@dataclass(frozen=True)
class CudaTimeResult:
    """One cold run, the untimed-for-statistics warm-up runs, and the warm runs: built once, by
    ``runner.measure`` or ``from_dict``, and never changed after.

    Plain data only, as torch's ``Measurement`` is: ``records`` holds what each feature recorded,
    under its name (None where it was off), and ``extra_runs`` the runs those features added out of
    the statistics, as each named them ("1 profiled"). The features themselves, which word the
    records and read them back from a file, are never kept here: the views and the store are handed
    them, as they are handed the registry. A record also reads as an attribute: ``r.profile`` is
    ``r.records["profile"]``. The statistics (``clock``, ``samples``, ``median_ci``) are computed
    once, when the result is made."""

    cold: Run
    warmup: list[Run] = field(default_factory=list)
    warm: list[Run] = field(default_factory=list)
    device: str = "cpu"
    synchronized: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None
    harness: Harness | None = None  # the harness's own cost, measured once per call
    task: Task | None = None  # what was timed; a result made by hand may have none
    records: dict[str, Any] = field(default_factory=dict)  # feature name -> its record (plain data) or None
    # The features' runs out of the statistics ("1 profiled"), as they named them when the result was made
    # (``extra_runs``): how many times the cell ran is a fact of the call, saved with it.
    extra_runs: list[str] = field(default_factory=list)
    coverage: float | None = field(init=False, compare=False, repr=False)
    clock: str = field(init=False, compare=False, repr=False)
    samples: list[float] = field(init=False, compare=False, repr=False)  # warm times on ``clock``, never the cold run
    # The warm median's 95% interval (``median_interval``), or None below CI_MIN_RUNS warm samples. A
    # batched sample (k runs in one timed loop) is one observation: the interval is over samples, not runs.
    median_ci: tuple[float, float] | None = field(init=False, compare=False, repr=False)

    @classmethod
    def check_keepers(cls, keepers: Iterable[RecordKeeper]) -> None:
        """Refuse ``keepers`` whose names cannot each be ``r.<name>`` (ValueError naming the keeper): a
        name that is not an identifier, that two keepers share, or that a field, property, method or
        statistic of the result already answers to (a feature named ``median`` would be shadowed)."""
        taken = {item.name for item in dataclasses.fields(cls)} | set(STATS)
        taken |= {name for name in dir(cls) if not name.startswith("_")}
        seen: set[str] = set()
        for keeper in keepers:
            name, what = keeper.name, type(keeper).__name__
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"{what}'s name {name!r} is not a public Python name: r.<name> could not read it")
            if name in taken:
                raise ValueError(f"{what}'s name {name!r} is already the result's own r.{name}: rename the feature")
            if name in seen:
                raise ValueError(f"{what}'s name {name!r} is taken by another feature: names must differ")
            seen.add(name)

    def __post_init__(self) -> None:
        """The statistics, once."""
        runs = self.warm or [self.cold]
        share = coverage(runs, self.harness)
        clock = clock_for(share)
        samples = [getattr(run, clock) for run in self.warm]
        # in one go, as ``frozen_from`` sets the fields: what object.__setattr__ would set, in the same order
        self.__dict__.update(coverage=share, clock=clock, samples=samples, median_ci=median_interval(samples))

    def __getattr__(self, name: str) -> Any:
        """A feature's record by its name (``r.roofline``): None where that feature was off (its
        maker, ``runner.measure`` or ``from_dict``, gives every feature it was handed an entry)."""
        if name.startswith("_") or name == "records":
            raise AttributeError(name)
        if name in self.records:
            return self.records[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # What was timed, forwarded from the task as torch's ``Measurement`` forwards its ``TaskSpec``.
    @property
    def stmt(self) -> str | None:
        return self.task.stmt if self.task is not None else None

    @property
    def label(self) -> str | None:
        return self.task.label if self.task is not None else None

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.task.params) if self.task is not None else {}

    @property
    def env(self) -> Env | None:
        return self.task.env if self.task is not None else None

    @property
    def batch(self) -> int:
        """Runs of the cell per warm sample: 1, or k when a run is short next to the harness's cost."""
        return self.warm[0].batch if self.warm else 1

    def batch_text(self) -> str | None:
        """How the warm runs were sampled, or None for one run per sample."""
        if self.batch == 1:
            return None
        cost = self.harness.wall if self.harness is not None else None  # None: a saved line without it ("n/a")
        return (f"each sample: {self.batch:,} runs in one timed loop, as timeit does: one run is short next to "
                f"the harness's own cost per sample ({format_seconds(cost)}, measured on null "
                "runs), which a sample of many runs makes negligible")

    def harness_per_run(self, runs: Sequence[Run]) -> float:
        """The harness's wall time per run in samples like ``runs``."""
        return harness_per_run(self.harness, runs)

    def clock_why(self) -> str | None:
        """Why the statistics use the wall clock although some run had a device clock, or None."""
        runs = self.warm or [self.cold]
        if self.clock == "device" or all(run.device is None for run in runs):
            return None
        if self.coverage is None:
            missing = sum(run.device is None for run in runs)
            return (f"The statistics use the wall clock: {missing} of {len(runs)} runs had no device clock "
                    "(no device context when it started).")
        return (f"The statistics use the wall clock: the device clock saw less than {DEVICE_SHARE:.0%} "
                "of the synchronized time.")

    @property
    def cold_time(self) -> float:
        """The cold run on the statistics clock, or its wall time when it had no device clock."""
        value = getattr(self.cold, self.clock)
        return self.cold.wall if value is None else value

    @property
    def runs(self) -> int:
        return len(self.warm)

    @property
    def total_runs(self) -> int:
        """How many times the cell ran in all: cold, warm-up, warm (every run of every sample),
        the features' extra runs, and the run an error or a stop cut short (it ran, in part)."""
        later = sum(run.batch for run in self.warmup) + sum(run.batch for run in self.warm)
        return 1 + later + len(self.extra_runs) + (self.stopped is not None)

    def counts_text(self) -> str:
        """``the cell ran 10 times: 1 cold + 1 warm-up + 8 warm``, as every report states it; with
        batching ``... + 120 warm samples × 1,000 runs``."""
        warmup = sum(run.batch for run in self.warmup)
        warm = f"{len(self.warm)} warm" if self.batch == 1 else f"{len(self.warm)} warm samples × {self.batch:,} runs"
        stopped = ["1 stopped early"] if self.stopped else []
        extra = [inert(run, newlines=False) for run in self.extra_runs]  # may come from a file: one line each
        parts = ["1 cold", f"{warmup:,} warm-up", warm, *extra, *stopped]
        total = self.total_runs
        return f"the cell ran {total:,} time{'s' if total != 1 else ''}: {' + '.join(parts)}"

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.warm else None

    def ci_text(self) -> str:
        """The warm median's interval as every report writes it: ``95% CI 17.1–18.0 ms``, or why
        there is none (never an interval made up from a handful of runs)."""
        if self.median_ci is None:
            return f"too few runs for a 95% CI, which needs {CI_MIN_RUNS}" if self.warm else "no warm runs"
        return f"95% CI {range_text(*self.median_ci)}"

    @property
    def iqr(self) -> float | None:
        samples = self.samples
        if len(samples) < 2:
            return 0.0 if samples else None
        q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        return q3 - q1

    @property
    def has_iqr(self) -> bool:
        """Whether there are enough warm runs (``IQR_MIN_RUNS``) for the IQR to mean something."""
        return self.runs >= IQR_MIN_RUNS

    @property
    def min(self) -> float | None:
        return min(self.samples) if self.warm else None

    @property
    def max(self) -> float | None:
        return max(self.samples) if self.warm else None

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.samples) if self.warm else None

    @property
    def stdev(self) -> float | None:
        samples = self.samples
        if len(samples) < 2:
            return 0.0 if samples else None
        return statistics.stdev(samples)

    @property
    def on_gpu(self) -> bool:
        """Whether a GPU framework was synchronized (names like "torch cuda:0", "cupy cuda:0"),
        as opposed to a CPU-only cell or JAX dispatching on the CPU."""
        words = ("cuda", "rocm", "gpu", "mps", "xpu")
        return any(word in name for name in self.synchronized for word in words)

    @property
    def ratio(self) -> float | None:
        """How many times slower the cold run was than the warm median."""
        median = self.median
        return self.cold_time / median if median else None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): what was timed, the runs, each feature's record under its name in
        ``records`` (their own key: no feature's name can take a field of the result), and the
        statistics for a reader of the file (``from_dict`` recomputes them from the runs)."""
        data = {name: getattr(self, name) for name in STATS}
        data.update(
            task=self.task.to_dict() if self.task is not None else None,
            cold=self.cold._asdict(),
            warmup=[run._asdict() for run in self.warmup],
            warm=[run._asdict() for run in self.warm],
            device=self.device,
            synchronized=list(self.synchronized),
            notes=list(self.notes),
            stopped=self.stopped,
            extra_runs=list(self.extra_runs),
        )
        data.update(records={name: record_json(record) for name, record in self.records.items()})
        data.update(
            batch=self.batch,
            harness=self.harness._asdict() if self.harness is not None else None,
        )
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], features: Collection[RecordKeeper]) -> CudaTimeResult:
        """The result ``to_dict`` wrote, exactly: ``from_dict(r.to_dict(), FEATURES) == r``. The runs
        and the device are required (KeyError, or TypeError for a foreign field in a run); what a
        later version added may be missing, so that older files still load. Each of ``features``
        (``features.FEATURES``, handed in as the store is) reads its own record back and names its
        extra runs where a line from before they were saved does not say; a record no feature here
        knows is left out. Plain data from before the records had their own key (schema 1) still reads."""
        get = data.get
        harness, task = get("harness"), get("task")
        saved = get("records", data) or {}  # before schema 2 the records stood beside the fields; null: none
        records = {feature.name: feature.from_json(saved.get(feature.name)) for feature in features}
        return frozen_from(cls, dict(
            cold=from_saved(Run, data["cold"]),
            warmup=[from_saved(Run, run) for run in data["warmup"]],
            warm=[from_saved(Run, run) for run in data["warm"]],
            device=data["device"],
            synchronized=list(get("synchronized", [])),
            notes=list(get("notes", [])),
            stopped=get("stopped"),
            harness=from_saved(Harness, harness) if harness is not None else None,
            task=Task.from_dict(task) if task is not None else None,
            records=records,
            extra_runs=list(data["extra_runs"]) if "extra_runs" in data else extra_runs(features, records),
        ))

    def __repr__(self) -> str:
        """One line, like ``%timeit -o``'s ``<TimeitResult : ...>``. Echoed in IPython, a result
        shows its report instead (see ``display``), once."""
        if self.median is None:
            return f"<CudaTimeResult cold {format_seconds(self.cold_time)} on {self.device}>"
        return (
            f"<CudaTimeResult cold {format_seconds(self.cold_time)}, warm median "
            f"{format_seconds(self.median)} over {self.runs} runs on {self.device}>"
        )
