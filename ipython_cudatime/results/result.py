"""The result of one ``%cudatime``: every run's clocks, warm statistics, and what was timed (a
``Task``, as torch's ``Measurement`` carries one), so that any list of results can be grouped, saved
and compared later. Plain data, the bottom layer: the layers above know it, never the reverse."""

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
    """The clocks of one run, in seconds (a NamedTuple: cheap on the hot path, never tracked by the GC)."""

    host: float  # until Python got control back (what ``%time`` prints)
    wall: float  # synchronized: all devices drained before and after
    device: float | None = None  # event time on the current stream, or None without a device clock
    cpu_user: float | None = None  # the process's CPU time, user and system, over the wall span (cold run only)
    cpu_sys: float | None = None
    batch: int = 1  # runs of the cell this sample timed (see ``batching``); the clocks are per run

    @property
    def cpu(self) -> float | None:
        """The process's CPU time (user + system), where the run read it: %timeit -c's clock."""
        return None if self.cpu_user is None or self.cpu_sys is None else self.cpu_user + self.cpu_sys


class Harness(NamedTuple):
    """The harness's own cost, from null runs (nothing in them) through the same path and devices."""

    wall: float  # median synchronized time of a null run: what the clocks and synchronize add to a sample
    jitter: float  # IQR of those times: the spread the clocks show on their own
    device: float | None = None  # median device-clock time of a null run, or None without a device clock


Saved = TypeVar("Saved", Run, Harness)
# Each kind's values in the order of its fields, read in one C call (dict lookups by name, so in any key order)
_VALUES = {kind: operator.itemgetter(*kind._fields) for kind in (Run, Harness)}


def from_saved(kind: type[Saved], data: Mapping[str, Any]) -> Saved:
    """``kind(**data)``, sooner where ``data`` holds every field: a call by keyword costs 300 ns a run."""
    if len(data) == len(kind._fields):
        try:
            return tuple.__new__(kind, _VALUES[kind](data))
        except KeyError:  # a field missing, a foreign key in its place: the call says which
            pass
    return kind(**data)


DEVICE_SHARE = 0.5  # device events covering less of the wall time than this missed some work
IQR_MIN_RUNS = 10  # quartiles of fewer warm runs rest on two or three samples each: min and max instead
CI_MIN_RUNS = 6  # samples the median's 95% interval needs (with 5, min to max covers it 94% of the time)
EXACT_RANKS = 1000  # its ranks exact up to this many samples, normal beyond (one rank wider at most, never narrower)
Frozen = TypeVar("Frozen", bound=Hashable)  # bound: the cache below takes classes of Hashable instances


@functools.cache
def _filling(cls: Any) -> tuple[tuple[str, ...], Callable[[Any], None] | None]:
    """The names ``cls.__init__`` takes, in order, and its ``__post_init__`` or None: once per class."""
    return tuple(item.name for item in dataclasses.fields(cls) if item.init), getattr(cls, "__post_init__", None)


def frozen_from(cls: type[Frozen], values: Mapping[str, Any]) -> Frozen:
    """``cls(**values)`` for a frozen dataclass, filled in one go where ``values`` holds every field in order:
    the frozen ``__init__`` sets each through ``object.__setattr__`` (13,000 instructions of a short line)."""
    fields, post_init = _filling(cls)
    if tuple(values) != fields:
        return cls(**values)
    made = object.__new__(cls)
    made.__dict__.update(values)
    if post_init is not None:
        post_init(made)
    return made


@dataclass(frozen=True)
class Env:
    """Where a result was timed: enough to tell two machines' results apart in one table."""

    device: str = "cpu"
    frameworks: dict[str, str] = field(default_factory=dict)  # name -> __version__, of those imported
    python: str = ""
    host: str = ""

    @classmethod
    def here(cls, device: str, frameworks: Iterable[str] | None = None) -> Env:
        """This process, now: the versions of ``frameworks`` (default: the backends') already imported (in
        ``sys.modules``): asking a version must never import a framework."""
        names = backends.frameworks() if frameworks is None else frameworks
        versions = {name: str(getattr(sys.modules[name], "__version__", "unknown"))
                    for name in names if sys.modules.get(name) is not None}
        return cls(device, versions, platform.python_version(), platform.node())


def format_params(params: Mapping[str, Any]) -> str:
    """``n=256, device='cuda'``, in every table and message (repr: ``'1'`` and ``1`` read differently)."""
    return ", ".join(f"{name}={value!r}" for name, value in params.items())


def _plain(value: Any) -> bool:
    """Whether JSON gives ``value`` back as it is: so a saved file keeps it readable."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    return type(value) is list and all(_plain(item) for item in value)


def params_to_json(params: Mapping[str, Any]) -> dict[str, Any]:
    """Swept values for JSON: plain ones as they are, other literals as ``{"literal": repr}``."""
    return {name: value if _plain(value) else {"literal": repr(value)} for name, value in params.items()}


def params_from_json(data: Mapping[str, Any]) -> dict[str, Any]:
    return {name: ast.literal_eval(value["literal"]) if isinstance(value, dict) else value
            for name, value in data.items()}


@dataclass(frozen=True)
class Task:
    """What was timed, like torch's ``TaskSpec``. Frozen: a result's task never changes after the run."""

    stmt: str = ""
    label: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    env: Env = field(default_factory=Env)
    threads: int | None = None  # --threads N: the intra-op threads it ran with; None: the user's own settings
    clock: str | None = None  # -t "wall", -c "cpu": the clock its statistics were asked to use; None: the rule

    @property
    def name(self) -> str:
        """How a table names it: ``loop``, ``loop[n=256]``, ``n=256`` (an unlabelled sweep point)."""
        params = format_params(self.params)
        if self.label and params:
            return f"{self.label}[{params}]"
        return self.label or params or self.stmt

    def to_dict(self) -> dict[str, Any]:
        return {"stmt": self.stmt, "label": self.label, "params": params_to_json(self.params),
                "env": dataclasses.asdict(self.env), "threads": self.threads, "clock": self.clock}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        return frozen_from(cls, {"stmt": data["stmt"], "label": data["label"],
                                 "params": params_from_json(data["params"]), "env": frozen_from(Env, data["env"]),
                                 "threads": data.get("threads"), "clock": data.get("clock")})


STATS = ("clock", "runs", "median", "median_ci", "iqr", "min", "max", "mean", "stdev", "cold_time", "ratio")


def median_rank(samples: int) -> int:
    """``k``: the median's 95% interval runs from the ``k``-th smallest sample to the ``k``-th largest,
    the largest ``k`` for which P(fewer than ``k`` below the median) <= 2.5% (binomial(samples, 1/2),
    whatever the distribution). 0: too few samples for an interval (below ``CI_MIN_RUNS``: 2**-samples > 1/40)."""
    if samples > EXACT_RANKS:
        return math.floor(samples / 2 - 0.98 * math.sqrt(samples) + 0.5)
    total, tail, rank, term = 2**samples, 0, 0, 1  # in units of 2**-samples: exact integers
    while 40 * (tail + term) <= total:  # P(fewer than rank + 1 below) <= 1/40
        tail, term, rank = tail + term, term * (samples - rank) // (rank + 1), rank + 1
    return rank


def coverage(runs: Sequence[Run], harness: Harness | None = None) -> float | None:
    """The share of the synchronized time the device clock saw (None: a run had none; events on the current
    stream miss work elsewhere), less the harness's cost (a 20 µs synchronize must not hide a 5 µs kernel)."""
    device_times = [run.device for run in runs if run.device is not None]
    if not runs or len(device_times) < len(runs):
        return None
    device = statistics.median(device_times)
    per_run = harness.wall / runs[0].batch if harness is not None else 0.0  # spread over a sample's runs
    wall = statistics.median(run.wall for run in runs) - per_run
    return device / wall if wall > 0 else 1.0


ASKED_CLOCKS = ("wall", "cpu")  # what -t and -c ask for instead of the rule


def statistics_clock(runs: Sequence[Run], harness: Harness | None = None, asked: str | None = None) -> str:
    """The clock the statistics use, one rule for the result, its chart and the live progress: ``asked`` (-t, -c),
    else "device" where every run has one and it saw ``DEVICE_SHARE`` of the synchronized time, else "wall"."""
    return asked or clock_for(coverage(runs, harness))


def clock_for(share: float | None) -> str:
    return "device" if share is not None and share >= DEVICE_SHARE else "wall"


def extra_runs(keepers: Iterable[RecordKeeper], records: Mapping[str, Any]) -> list[str]:
    return [run for keeper in keepers for run in keeper.extra_runs(records.get(keeper.name))]


def _unread(record: Any) -> bool:
    """Whether a record is still as JSON holds it (an object, or a list of them), never a keeper's reading."""
    return type(record) is dict or type(record) is list and bool(record) and all(type(x) is dict for x in record)


def record_json(record: Any) -> Any:
    """A record as JSON, without asking its feature: a dataclass (by its ``to_dict`` where it has one)."""
    if hasattr(record, "to_dict"):
        return record.to_dict()
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    if isinstance(record, (list, tuple)):
        return [record_json(item) for item in record]
    return record


@dataclass(frozen=True)
class Finding:
    """One sentence about a result, for every view (``kind``: a stable key). A ``reason`` explains the
    finding before it: the text report prints it; the HTML report leaves it to its keeper's section."""

    kind: str
    text: str
    reason: bool = False


class RecordKeeper:
    """What keeps one record on a result, declared here so that the layers below never know the features above
    (``features.Feature`` is one). Every default adds nothing and accepts a None record (off, or an older file);
    a word method that raises cannot sink a report: its view gets the no-record answer and a line saying why."""

    name: ClassVar[str] = ""  # its record's key: ``r.<name>``, and its key in a saved line
    # what a saved record may hold: a ``schema`` check, as a staticmethod (a plain function would bind)
    schema: ClassVar[staticmethod[[Any], Any] | None] = None
    # (record class, its check) for each class its saved record is made of (tests/test_store.py: fields equal)
    record_checks: ClassVar[tuple[tuple[type, Any], ...]] = ()
    section_title: ClassVar[str] = ""  # its collapsed section in the HTML report ("": none)
    section_class: ClassVar[str] = ""
    columns: ClassVar[tuple[str, ...]] = ()  # its columns in sweep and comparison tables
    # True: its columns judge the row's numbers (noise), beside the table's verdict, blank where every verdict
    # holds (they could not change it); False: they add to them (--roofline's rates), at the row's end
    beside_verdict: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each word method a keeper defines is guarded (``_shown``), so that no call site needs to."""
        super().__init_subclass__(**kwargs)
        for name, instead in INSTEAD.items():
            if name in cls.__dict__:
                setattr(cls, name, _shown(cls.__dict__[name], instead))

    def from_json(self, data: Any) -> Any:
        """The record ``record_json`` wrote (already checked against ``schema``), or None."""
        return None

    def judge(self, result: CudaTimeResult, record: Any) -> Any:
        """What its words read of one result, once for all the views: its record, or more (the noise check)."""
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
        """Its cells in a table row, one per ``columns``; shown where any row's ``judge`` gave something."""
        return ()

    def table_notes(self, rows: list[tuple[str, CudaTimeResult, Any]], what: str) -> list[str]:
        """Its lines under a table, from (row name, result, ``judge``'s reading) of each row with a
        result; ``what`` names the rows ("points", "rows")."""
        return []

    def table_fields(self, record: Any) -> dict[str, Any]:
        """Its columns in ``Results.to_pandas()``, where the row has a record."""
        return {}

    def differences(self, first: Any, second: Any) -> list[str]:
        """What differs between two records (either may be None), beside a contrast's verdict: ``load 0.30 vs 6.70``."""
        return []

    def merged(self, records: list[Any]) -> Any:
        """One record from each round's of a point (``--interleave``): the first, unless they add up."""
        return records[0] if records else None

    def extra_runs(self, record: Any) -> list[str]:
        """The runs it added out of the statistics, as the run counts name them ("1 profiled")."""
        return []


def judgement(keeper: RecordKeeper, result: CudaTimeResult) -> Any:
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
    """One cold run, the warm-up runs (out of the statistics), and the warm runs: built once, never changed.
    Plain data only, as torch's ``Measurement`` is: ``records`` holds each feature's record by name (None:
    off; ``r.profile`` reads it too); the features that word them are handed to the views, never kept here."""

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
    extra_runs: list[str] = field(default_factory=list)  # the features' runs out of the statistics ("1 profiled")
    coverage: float | None = field(init=False, compare=False, repr=False)
    clock: str = field(init=False, compare=False, repr=False)
    samples: list[float] = field(init=False, compare=False, repr=False)  # warm times on ``clock``, never the cold run
    # The warm median's 95% interval, or None below CI_MIN_RUNS samples (a batched sample is one observation)
    median_ci: tuple[float, float] | None = field(init=False, compare=False, repr=False)

    @classmethod
    def check_keepers(cls, keepers: Iterable[RecordKeeper]) -> None:
        """ValueError for a keeper whose name cannot be ``r.<name>`` (a feature named ``median`` would be shadowed)."""
        taken = {item.name for item in dataclasses.fields(cls)}
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
        """The statistics, once, set in one go as ``frozen_from`` sets the fields."""
        share = coverage(self.warm or [self.cold], self.harness)
        clock = (self.task.clock if self.task is not None else None) or clock_for(share)
        samples = [getattr(run, clock) for run in self.warm]
        rank, ordered = median_rank(len(samples)), sorted(samples)  # the distribution-free interval
        median_ci = (ordered[rank - 1], ordered[-rank]) if rank else None
        self.__dict__.update(coverage=share, clock=clock, samples=samples, median_ci=median_ci)

    def __getattr__(self, name: str) -> Any:
        """A feature's record by its name (``r.roofline``): None where that feature was off."""
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

    def clock_why(self) -> str | None:
        """Why the statistics use the wall or CPU clock although some run had a device clock, or None."""
        runs = self.warm or [self.cold]
        if self.task is not None and self.task.clock:
            flag, what = ("-c", "the process's CPU time, without the device's") if self.clock == "cpu" else \
                ("-t", "synchronized")
            return f"The statistics use the {self.clock} clock ({what}), as {flag} asked."
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
        """How many times the cell ran: cold, warm-up, warm, the features' extra runs, and the one cut short."""
        later = sum(run.batch for run in self.warmup) + sum(run.batch for run in self.warm)
        return 1 + later + len(self.extra_runs) + (self.stopped is not None)

    def counts_text(self) -> str:
        """``the cell ran 10 times: 1 cold + 1 warm-up + 8 warm``, or ``... 120 warm samples × 1,000 runs``."""
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
        """``95% CI 17.1–18.0 ms``, or why there is none (never one made up from a handful of runs)."""
        if self.median_ci is None:
            return f"too few runs for a 95% CI, which needs {CI_MIN_RUNS}" if self.warm else "no warm runs"
        return f"95% CI {range_text(*self.median_ci)}"

    @property
    def iqr(self) -> float | None:
        if len(self.samples) < 2:
            return 0.0 if self.samples else None
        q1, _, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
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
        return statistics.stdev(self.samples) if len(self.samples) > 1 else 0.0 if self.samples else None

    @property
    def on_gpu(self) -> bool:
        """Whether a GPU framework was synchronized ("torch cuda:0"), not a CPU-only cell or JAX on the CPU."""
        return any(word in name for name in self.synchronized for word in ("cuda", "rocm", "gpu", "mps", "xpu"))

    @property
    def ratio(self) -> float | None:
        """How many times slower the cold run was than the warm median."""
        median = self.median
        return self.cold_time / median if median else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the records under their own key (no feature can take a field), the statistics for readers."""
        return {**{name: getattr(self, name) for name in STATS},
                "task": self.task.to_dict() if self.task is not None else None, "cold": self.cold._asdict(),
                "warmup": [run._asdict() for run in self.warmup], "warm": [run._asdict() for run in self.warm],
                "device": self.device, "synchronized": list(self.synchronized), "notes": list(self.notes),
                "stopped": self.stopped, "extra_runs": list(self.extra_runs),
                "records": {name: record_json(record) for name, record in self.records.items()},
                "batch": self.batch, "harness": self.harness._asdict() if self.harness is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], features: Collection[RecordKeeper] = ()) -> CudaTimeResult:
        """The result ``to_dict`` wrote (``from_dict(r.to_dict(), FEATURES) == r``). Only the runs and the device
        are required: what a later version added may be missing. Each of ``features`` reads its own record
        back; any other stays the JSON it was (``read_by``). Schema 1's records, beside the fields, still read."""
        get = data.get
        harness, task = get("harness"), get("task")
        saved = get("records", data) or {}  # before schema 2 the records stood beside the fields; null: none
        records = {feature.name: feature.from_json(saved.get(feature.name)) for feature in features}
        if saved is not data:
            records.update((name, record) for name, record in saved.items() if name not in records)
        return frozen_from(cls, dict(
            cold=from_saved(Run, data["cold"]), warmup=[from_saved(Run, run) for run in data["warmup"]],
            warm=[from_saved(Run, run) for run in data["warm"]], device=data["device"],
            synchronized=list(get("synchronized", [])), notes=list(get("notes", [])), stopped=get("stopped"),
            harness=from_saved(Harness, harness) if harness is not None else None,
            task=Task.from_dict(task) if task is not None else None, records=records,
            extra_runs=list(data["extra_runs"]) if "extra_runs" in data else extra_runs(features, records)))

    def read_by(self, keepers: Iterable[RecordKeeper]) -> CudaTimeResult:
        """This result with each record still as a file held it read by its keeper in ``keepers``, for the views."""
        read = {keeper.name: keeper.from_json(self.records[keeper.name]) for keeper in keepers
                if _unread(self.records.get(keeper.name))}
        return dataclasses.replace(self, records={**self.records, **read}) if read else self

    def __repr__(self) -> str:
        """One line, like ``%timeit -o``'s ``<TimeitResult : ...>`` (echoed in IPython, its report instead)."""
        if self.median is None:
            return f"<CudaTimeResult cold {format_seconds(self.cold_time)} on {self.device}>"
        return (f"<CudaTimeResult cold {format_seconds(self.cold_time)}, warm median "
                f"{format_seconds(self.median)} over {self.runs} runs on {self.device}>")
