"""The result of one ``%cudatime``: every run's clocks, warm statistics, and what was timed.

Plain data, the bottom layer: like IPython's ``TimeitResult`` it is a small object you
can keep (``-o``/``-v``), and like torch's ``Measurement`` it carries a ``Task`` saying
what it timed, so any list of results can be grouped, saved and compared later. The
layers above know it, never the reverse: ``display`` gives it its reprs, ``render/`` its
text and HTML.
"""

import ast
import dataclasses
import platform
import statistics
import sys
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


FRAMEWORKS = ("torch", "jax", "cupy", "tensorflow", "numba", "numpy")  # versions an Env records


@dataclass(frozen=True)
class Env:
    """Where a result was timed: enough to tell two machines' results apart in one table."""

    device: str = "cpu"
    frameworks: dict = field(default_factory=dict)  # name -> __version__, of those imported
    python: str = ""
    host: str = ""

    @classmethod
    def here(cls, device, modules=None):
        """This process, now. Versions come from frameworks already imported (``modules``,
        default ``sys.modules``): asking a version must never import a framework."""
        modules = sys.modules if modules is None else modules
        versions = {name: str(getattr(modules[name], "__version__", "unknown"))
                    for name in FRAMEWORKS if modules.get(name) is not None}
        return cls(device, versions, platform.python_version(), platform.node())

    def to_dict(self):
        return dataclasses.asdict(self)


def format_params(params):
    """``n=256, device='cuda'``: the one way a point's swept values are written, in every table
    and message (repr, so that the string ``'1'`` and the number ``1`` read differently)."""
    return ", ".join(f"{name}={value!r}" for name, value in params.items())


def _plain(value):
    """Whether JSON gives ``value`` back as it is: so a saved file keeps it readable."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    return type(value) is list and all(_plain(item) for item in value)


def params_to_json(params):
    """Swept values for JSON: plain ones as they are, other literals (tuples, dicts, sets,
    bytes, complex) as ``{"literal": repr}``, which ``params_from_json`` reads back exactly."""
    return {name: value if _plain(value) else {"literal": repr(value)} for name, value in params.items()}


def params_from_json(data):
    return {name: ast.literal_eval(value["literal"]) if isinstance(value, dict) else value
            for name, value in data.items()}


@dataclass(frozen=True)
class Task:
    """What was timed, like torch's ``TaskSpec``: the statement, its ``-l`` label, the swept
    values of this point, and where. Frozen: a result's task never changes after the run."""

    stmt: str = ""
    label: str = None
    params: dict = field(default_factory=dict)
    env: Env = field(default_factory=Env)
    threads: int = None  # --threads N: the intra-op threads it ran with; None: the user's own settings

    @property
    def name(self):
        """How a table names it: ``loop``, ``loop[n=256]``, ``n=256`` (an unlabelled sweep point)."""
        params = format_params(self.params)
        if self.label and params:
            return f"{self.label}[{params}]"
        return self.label or params or self.stmt

    def to_dict(self):
        return {"stmt": self.stmt, "label": self.label, "params": params_to_json(self.params),
                "env": self.env.to_dict(), "threads": self.threads}

    @classmethod
    def from_dict(cls, data):
        return cls(data["stmt"], data["label"], params_from_json(data["params"]), Env(**data["env"]),
                   data.get("threads"))


def _record(kind, data, rows=()):
    """A nested record (profile, roofline, memory) from its dict: its own fields only (``to_dict``
    adds derived ones, such as the roofline's ridge), ``rows`` back to the tuples they were made as."""
    if data is None:
        return None
    names = {f.name for f in dataclasses.fields(kind)}
    values = {name: value for name, value in data.items() if name in names}
    for name in rows:
        values[name] = [tuple(row) for row in values[name]]
    return kind(**values)


STATS = ("clock", "runs", "median", "iqr", "min", "max", "mean", "stdev", "cold_time", "ratio")


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
    task: Task = None  # what was timed; the magic sets it, a bare runner result has none
    cpu_context: object = None  # cpu_context.CpuContext: the CPU facts of the call, or None (older files)

    # What was timed, forwarded from the task as torch's ``Measurement`` forwards its ``TaskSpec``.
    @property
    def stmt(self):
        return self.task.stmt if self.task is not None else None

    @property
    def label(self):
        return self.task.label if self.task is not None else None

    @property
    def params(self):
        return dict(self.task.params) if self.task is not None else {}

    @property
    def env(self):
        return self.task.env if self.task is not None else None

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
    def coverage(self):
        """The share of the synchronized time that the device clock saw: the median device time
        over the median wall time less the harness's own cost (a synchronize can cost 20 µs, so
        that a 5 µs kernel's events still count as covering its run). None where a run of the
        statistics had no device clock. Events on the current stream miss work on other
        streams, other devices and other frameworks; the synchronized wall clock does not."""
        runs = self.warm or [self.cold]
        if any(run.device is None for run in runs):
            return None
        device = statistics.median(run.device for run in runs)
        wall = statistics.median(run.wall for run in runs) - self.harness_per_run(runs)
        return device / wall if wall > 0 else 1.0

    @cached_property
    def clock(self):
        """The clock the statistics use: device where every run has one and it saw most of the
        synchronized time (``coverage``), else wall."""
        coverage = self.coverage
        return "device" if coverage is not None and coverage >= DEVICE_SHARE else "wall"

    def clock_why(self):
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
    def on_gpu(self):
        """Whether a GPU framework was synchronized (names like "torch cuda:0", "cupy cuda:0"),
        as opposed to a CPU-only cell or JAX dispatching on the CPU."""
        words = ("cuda", "rocm", "gpu", "mps", "xpu")
        return any(word in name for name in self.synchronized for word in words)

    @property
    def ratio(self):
        """How many times slower the cold run was than the warm median."""
        median = self.median
        return self.cold_time / median if median else None

    def to_dict(self):
        """Plain data (JSON-ready): what was timed, the runs, the explainers' records, and the
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
            cold_causes=[dataclasses.asdict(cause) for cause in self.cold_causes],
            profile=self.profile.to_dict() if self.profile is not None else None,
            roofline=self.roofline.to_dict() if self.roofline is not None else None,
            memory=self.memory.to_dict() if self.memory is not None else None,
            batch=self.batch,
            harness=self.harness._asdict() if self.harness is not None else None,
            cpu_context=self.cpu_context.to_dict() if self.cpu_context is not None else None,
        )
        return data

    @classmethod
    def from_dict(cls, data):
        """The result ``to_dict`` wrote, exactly: ``from_dict(r.to_dict()) == r``. The runs and the
        device are required (KeyError, or TypeError for a foreign field in a run); what a later
        version added may be missing, so that older files still load."""
        # The explainers' records are data too; their classes live beside the code that makes them.
        from .cpu_context import CpuContext
        from .explain import Cause
        from .explain.memory import DeviceMemory
        from .explain.profile import Profile
        from .explain.roofline import Roofline

        get = data.get
        return cls(
            cold=Run(**data["cold"]),
            warmup=[Run(**run) for run in data["warmup"]],
            warm=[Run(**run) for run in data["warm"]],
            device=data["device"],
            synchronized=list(get("synchronized", [])),
            notes=list(get("notes", [])),
            stopped=get("stopped"),
            cold_causes=[Cause(**cause) for cause in get("cold_causes", [])],
            profile=_record(Profile, get("profile"), rows=("top",)),
            roofline=_record(Roofline, get("roofline"), rows=("uncounted",)),
            memory=_record(DeviceMemory, get("memory")),
            harness=Harness(**get("harness")) if get("harness") is not None else None,
            task=Task.from_dict(get("task")) if get("task") is not None else None,
            cpu_context=_record(CpuContext, get("cpu_context")),
        )

    def __repr__(self):
        """One line, like ``%timeit -o``'s ``<TimeitResult : ...>``. Echoed in IPython, a result
        shows its report instead (see ``display``), once."""
        if self.median is None:
            return f"<CudaTimeResult cold {format_seconds(self.cold_time)} on {self.device}>"
        return (
            f"<CudaTimeResult cold {format_seconds(self.cold_time)}, warm median "
            f"{format_seconds(self.median)} over {self.runs} runs on {self.device}>"
        )
