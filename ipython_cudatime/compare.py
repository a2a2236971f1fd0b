"""Several results compared: one collection (``Results``) for sweeps over a grid (``--sweep
n=256,512 --sweep device=cpu,cuda``), labelled results (``-l``), ``%cudatime_compare`` and
results loaded from files; and value checks (``--check``).

Plain data and no IPython: ``run_sweep`` is handed a function that times one point.
Each point has its own cold and warm runs; an error at one point does not lose the others.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import itertools
import keyword
import math
import os
import re
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .cpu_context import joined, pools_text
from .noise import noise
from .result import CI_MIN_RUNS, CudaTimeResult, Env, Task, format_params, params_from_json, params_to_json
from .units import inert, percent_text

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .result import RecordKeeper

MAX_GRID = 100  # points; a larger grid needs --yes-large-grid (it may run for a long time)
RUN_BYTES = 256  # what a result keeps per run, rounded up (about 190 bytes, measured on 10,000 runs)
FREE_MEMORY_UNKNOWN = 4 << 30  # bytes, where the system does not say
Sweeps = Sequence[tuple[str, Sequence[Any]]]  # (name, its values) per --sweep, as ``parse_sweep`` gives them


_CLOSING = {"(": ")", "[": "]", "{": "}"}


def top_level(text: str) -> Iterator[tuple[int, str]]:
    """Yield (index, character) for each character of ``text`` outside quotes and brackets.

    Written out rather than left to ``tokenize``, whose rules for quotes, backslashes and ``#``
    changed between Python 3.11 and 3.12 (PEP 701): here a quote opens a string that the same
    quote closes, a backslash inside it escapes the next character, as in a Python string, and
    ``#`` is a character like any other. Raises ValueError for a bracket closed that was not open
    (as soon as it is met) or a quote or bracket left open (at the end)."""
    closing: list[str] = []
    quote: str | None = None
    escaped = False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in _CLOSING:
            closing.append(_CLOSING[char])
        elif char in ")]}":
            if not closing or closing.pop() != char:
                raise ValueError(f"{char!r} closes no bracket")
        elif not closing:
            yield index, char
    if quote or closing:
        raise ValueError("a quote or a bracket is left open")


def _split_values(name: str, text: str) -> list[str]:
    """Split at the commas outside brackets and quotes: ``[1,2],[3,4]`` → ``[1,2]``, ``[3,4]``."""
    try:
        cuts = [index for index, char in top_level(text) if char == ","]
    except ValueError:
        raise ValueError(f"--sweep {name}: unbalanced quotes or brackets in {text!r}") from None
    bounds = [-1, *cuts, len(text)]
    return [text[start + 1:end] for start, end in zip(bounds, bounds[1:])]


def _value(name: str, text: str) -> Any:
    """A Python literal, else the text itself: a plain word (``cpu``, ``cuda:0``, ``#ff0000``) stays
    a string. A value with a quote in it must be a literal: a quoting mistake is an error, never a
    string that keeps the quotes. Warnings are errors, so that ``'\\d'`` (an invalid escape, a
    warning that differs between Python versions) fails the same way on each."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, Warning):
        if "'" in text or '"' in text:
            raise ValueError(f"--sweep {name}: {inert(text)} is not a Python literal (a value with quotes must be one; "
                             "a backslash in a string is written \\\\)") from None
        return text


IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "_", "__", "___", "_i", "_ii", "_iii",
                           "_ih", "_oh", "_dh"})  # what IPython keeps in the user's namespace


def not_yours(name: str) -> str | None:
    """What ``name`` is when it is not the user's to bind (binding it would break later cells), else
    None: a builtin, ``__builtins__``, or one of IPython's names (``Out``, ``_i3``, ``_3``...)."""
    if hasattr(builtins, name) or name == "__builtins__":
        return "a builtin"
    if name in IPYTHON_NAMES or re.fullmatch(r"_i?\d+", name):
        return "one of IPython's own names"
    return None


def parse_sweep(spec: str) -> tuple[str, list[Any]]:
    """``NAME=V1,V2,...`` → (NAME, [values]); each value a Python literal, else a string.

    The name must be a free variable name: not a keyword, and not a builtin's name,
    which the sweep would shadow while it runs.
    """
    name, eq, values = spec.partition("=")
    name = name.strip()
    if not eq or not name.isidentifier() or not values.strip():
        raise ValueError(f"--sweep expects NAME=V1,V2,..., got {spec!r}")
    if keyword.iskeyword(name):
        raise ValueError(f"--sweep {name}: {name!r} is a Python keyword, not a variable name")
    taken = not_yours(name)
    if taken:
        raise ValueError(f"--sweep {name}: {name!r} is {taken}; sweep a name of your own")
    texts = [text.strip() for text in _split_values(name, values)]
    if "" in texts:
        raise ValueError(f"--sweep {name}: empty value in {values!r}")
    return name, [_value(name, text) for text in texts]


def grid_size(sweeps: Sweeps) -> int:
    return math.prod(len(values) for _, values in sweeps) if sweeps else 0


def largest_grid(runs: int) -> int:
    """The most sweep points whose results, at up to ``runs`` runs each (RUN_BYTES a run), half the
    memory available now can hold: a larger grid would exhaust the kernel's memory, whatever the flag."""
    return max(MAX_GRID, _available_memory() // 2 // (RUN_BYTES * max(runs, 1)))


def _available_memory() -> int:
    """Bytes the system could give now: Linux's MemAvailable (free memory and the caches it can
    drop), else the free pages, else FREE_MEMORY_UNKNOWN."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # in kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # no such sysconf name here (macOS, Windows)
        return FREE_MEMORY_UNKNOWN


def grid(sweeps: Sweeps) -> list[dict[str, Any]]:
    """The product of the sweeps, in order, as a list of {name: value} dicts."""
    names = [name for name, _ in sweeps]
    return [dict(zip(names, combo)) for combo in itertools.product(*(values for _, values in sweeps))]


@dataclass
class Point:
    """One row of any collection: what was timed (its ``Task``) and its result, or the error
    that stopped it. A live point's ``task`` is its result's."""

    task: Task
    result: CudaTimeResult | None = None  # None when the point failed
    error: str | None = None

    @property
    def params(self) -> dict[str, Any]:
        return self.task.params

    @property
    def label(self) -> str | None:
        return self.task.label

    @property
    def name(self) -> str:
        return self.task.name

    def to_dict(self) -> dict[str, Any]:
        """One saved line's worth: the result's dict (which holds its task), or the task and the error."""
        if self.result is not None:
            return self.result.to_dict()
        return {"task": self.task.to_dict(), "error": self.error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], features: Collection[RecordKeeper] | None = None) -> Point:
        """The point ``to_dict`` wrote; ``features`` (by default the package's own) read their records
        back (``CudaTimeResult.from_dict``)."""
        if "cold" not in data:
            return cls(Task.from_dict(data["task"]), None, data["error"])
        result = CudaTimeResult.from_dict(data, features)
        return cls(result.task or Task(), result)


def _params_rows(rows: Iterable[Sequence[Any]]) -> list[list[Any]]:
    """Check rows (params first, then more params or a reason) in JSON form, and back."""
    return [[params_to_json(item) if isinstance(item, dict) else item for item in row] for row in rows]


def _rows_params(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    return [tuple(params_from_json(item) if isinstance(item, dict) else item for item in row) for row in rows]


@dataclass
class Check:
    """``--check``: each point's final value against the first point with the same shape."""

    ok: bool
    max_abs_diff: float
    # (params, reference params, largest difference)
    mismatches: list[tuple[dict[str, Any], dict[str, Any], float]] = field(default_factory=list)
    skipped: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # (params, why it was not compared)
    compared: int = 0  # points compared against a reference

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, mismatches=_params_rows(self.mismatches), skipped=_params_rows(self.skipped))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        return cls(**dict(data, mismatches=_rows_params(data["mismatches"]), skipped=_rows_params(data["skipped"])))


def _squeezed(text: str) -> str:
    return "".join(text.split())


@dataclass
class Results:
    """Results side by side: a sweep's points, the ``-l`` record, ``%cudatime_compare``'s table,
    results loaded from files. One list of ``Point``s, each saying what it timed, so that
    like torch's ``Compare`` one table and one chart serve them all."""

    points: list[Point] = field(default_factory=list)
    check: Check | None = None
    stopped: str | None = None
    interrupted: bool = False  # stopped by KeyboardInterrupt or SystemExit
    span: float | None = None  # seconds a sweep took, its points timed one after the other (not --interleave)
    # what stopped it, for the magic to raise
    error: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def rows(self) -> list[tuple[dict[str, Any], CudaTimeResult | None]]:
        return [(point.params, point.result) for point in self.points]

    @property
    def names(self) -> list[str]:
        """The swept names, in the order the points first use them."""
        return list(dict.fromkeys(name for point in self.points for name in point.params))

    def references(self) -> dict[int, CudaTimeResult]:
        """For a ``device`` sweep: {index: the result at the first device with the other params equal},
        for each point whose speed-up can be computed."""
        if "device" not in self.names:
            return {}
        first = self.points[0].params.get("device")
        reference: dict[tuple[tuple[str, str], ...], CudaTimeResult] = {}
        for point in self.points:
            if point.params.get("device") == first and point.result is not None and point.result.median:
                reference[_others(point)] = point.result
        return {i: reference[_others(p)] for i, p in enumerate(self.points)
                if p.result is not None and p.result.median and _others(p) in reference}

    def speedups(self) -> dict[int, float]:
        """For a ``device`` sweep: each point's warm median against the first device's, other params equal."""
        # references() holds only the points with a result and a warm median, and those medians
        return {i: reference.median / self.points[i].result.median  # type: ignore[operator, union-attr]
                for i, reference in self.references().items()}

    def record(self, points: Collection[Point]) -> None:
        """Add ``points``, replacing those recorded earlier under the same label (``-l`` again)."""
        labels = {point.label for point in points}
        self.points = [point for point in self.points if point.label not in labels] + list(points)

    def select(self, words: Iterable[str]) -> tuple[Results, list[str]]:
        """(the points each word names, in the words' order; the words naming none). A word is a
        label (all its points) or one point's name, ``label[n=2]``, spaces optional."""
        chosen: list[Point] = []
        unknown: list[str] = []
        for word in words:
            found = [p for p in self.points if word == p.label or _squeezed(word) == _squeezed(p.name)]
            chosen += [point for point in found if all(point is not seen for seen in chosen)]
            unknown += [] if found else [word]
        return Results(chosen), unknown

    def to_dict(self) -> dict[str, Any]:
        return {"points": [point.to_dict() for point in self.points],
                "check": None if self.check is None else self.check.to_dict(),
                "stopped": self.stopped, "interrupted": self.interrupted, "span": self.span}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], features: Collection[RecordKeeper] | None = None) -> Results:
        """The results ``to_dict`` wrote; ``features`` as for ``Point.from_dict``."""
        check = data["check"] and Check.from_dict(data["check"])
        return cls([Point.from_dict(point, features) for point in data["points"]], check, data["stopped"],
                   data["interrupted"], data.get("span"))

    def to_pandas(self) -> Any:  # a pandas.DataFrame (pandas is optional here, and untyped)
        """One row per point: the swept values, median, the bounds of its 95% interval (``ci_low``,
        ``ci_high``: None below 6 warm runs), IQR, min, max, cold, runs, noise and error,
        then label, device and host, then each feature's fields (--roofline: flop_rate, byte_rate
        and fraction_of_peak)."""
        import pandas

        return pandas.DataFrame.from_records([_record(point) for point in self.points])

    def __repr__(self) -> str:
        """One line, so that a bare ``%cudatime -o --sweep ...`` does not show the table twice."""
        failed = sum(point.result is None for point in self.points)
        return (f"<Results: {len(self.points)} point(s) over {', '.join(self.names) or 'nothing'}"
                + (f", {failed} failed" if failed else "") + ">")


def _record(point: Point) -> dict[str, Any]:
    """``to_pandas``'s row for one point; ``noise``: the noise check's cause ("oversubscribed",
    "loaded", "varies", "unknown") where the warm runs were noisy or slowed, else None."""
    r = point.result
    cause = noise(r)[1] if r is not None else None
    low, high = r.median_ci if r is not None and r.median_ci else (None, None)
    record = {**point.params, "median": r and r.median, "ci_low": low, "ci_high": high, "iqr": r and r.iqr,
              "min": r and r.min, "max": r and r.max,
              "cold": r and r.cold_time, "runs": r.runs if r else 0, "noise": cause and cause.kind,
              "error": point.error, "label": point.label, "device": point.task.env.device, "host": point.task.env.host}
    for feature, kept in r.record_pairs() if r is not None else ():
        if kept is not None:
            record.update(feature.table_fields(kept))
    return record


def _others(point: Point) -> tuple[tuple[str, str], ...]:
    return tuple((k, repr(v)) for k, v in point.params.items() if k != "device")


def error_text(error: BaseException) -> str:
    """``"Name: message"`` for a failed point's row; an exception whose ``__str__`` raises is
    ``"<unprintable Name>"`` (as the traceback module writes it), never a second error."""
    name = type(error).__name__
    try:
        return f"{name}: {error}"
    except Exception:
        return f"<unprintable {name}>"


def run_sweep(points: Iterable[dict[str, Any]], time_point: Callable[[dict[str, Any]], tuple[CudaTimeResult, Any]],
              stop_on_error: bool = False, task: Task | None = None,
              finished: Callable[[Point], None] = lambda point: None) -> tuple[Results, list[Any]]:
    """Time every point with ``time_point(params) -> (result, value)``; return (Results, values).

    An Exception at a point is recorded there, under ``task`` with the point's params; the
    sweep goes on unless ``stop_on_error``. KeyboardInterrupt and SystemExit stop the sweep,
    keeping the points done. What stopped it is kept in ``Results.error`` for the caller to raise.
    ``finished(point)`` hears of each point as it is done (the caller records and saves it then:
    what a later point does cannot lose it).
    """
    task = task or Task()
    done: list[Point] = []
    values: list[Any] = []
    stopped: str | None = None
    interrupted = False
    error: BaseException | None = None
    for params in points:
        try:
            result, value = time_point(params)
        except (KeyboardInterrupt, SystemExit) as exc:
            stopped, interrupted, error = f"{type(exc).__name__} at {format_params(params)}", True, exc
            break
        except Exception as exc:
            done.append(Point(dataclasses.replace(task, params=params), None, error_text(exc)))
            values.append(None)
            finished(done[-1])
            if stop_on_error:
                stopped, error = f"--stop-on-error after the error at {format_params(params)}", exc
                break
            continue
        done.append(Point(result.task or dataclasses.replace(task, params=params), result))
        values.append(value)
        finished(done[-1])
    return Results(done, stopped=stopped, interrupted=interrupted, error=error), values


def rotation(count: int, rounds: int) -> list[list[int]]:
    """The order of ``count`` points in each of ``rounds`` rounds: round r starts at point r (mod
    count) and goes on in grid order, so each point is first, second, ... equally often, and a
    drift over the rounds hits every point alike."""
    return [[(start + step) % count for step in range(count)] for start in range(rounds)] if count else []


def merge_rounds(results: Sequence[CudaTimeResult]) -> CudaTimeResult:
    """One point's result from its rounds (``run_interleaved``): the first round's cold run, warm-up,
    records and facts; each later round's first run (made after the other points ran) as a warm-up
    run; every round's warm sample (one run, or a batch of the size the first round found), in
    order, as the warm samples; the CPU facts of all rounds."""
    first, later = results[0], results[1:]
    warmup = [*first.warmup, *(run for r in later for run in (r.cold, *r.warmup))]
    sample = "run" if first.batch == 1 else f"sample of {first.batch:,} runs (the size its first round found)"
    note = (f"interleaved: {len(results)} rounds of one warm {sample} of each point, in a rotating order (each "
            "round's first run of a point, after the other points ran, is a warm-up run)")
    return dataclasses.replace(
        first, warmup=warmup, warm=[run for r in results for run in r.warm], notes=[*first.notes, note],
        stopped=next((r.stopped for r in results if r.stopped), None),
        cpu_context=joined([r.cpu_context for r in results]))


def run_interleaved(points: Iterable[dict[str, Any]], time_point: Callable[[dict[str, Any], CudaTimeResult | None],
                    tuple[CudaTimeResult, Any]], rounds: int, stop_on_error: bool = False, task: Task | None = None,
                    finished: Callable[[Point], None] = lambda point: None) -> tuple[Results, list[Any]]:
    """``run_sweep`` in rounds (``--interleave``): each round times every point once (``time_point(params,
    first)``, ``first`` the point's first round, None in it), in the rotating order of ``rotation``, so that slow drift
    (a neighbour starting mid-sweep, a clock that ramps) hits every point alike instead of deciding a
    comparison. A point's rounds merge into one result (``merge_rounds``); an error at a point ends
    its rounds, and the sweep too with ``stop_on_error``; KeyboardInterrupt and SystemExit stop it,
    keeping the rounds done. ``finished`` hears of each point once all is over."""
    grid_points, task = list(points), task or Task()
    timed: list[list[CudaTimeResult]] = [[] for _ in grid_points]
    values: list[Any] = [None] * len(grid_points)
    errors: dict[int, str] = {}
    stopped: str | None = None
    error: BaseException | None = None
    interrupted = False
    for order in rotation(len(grid_points), rounds):
        for index in (i for i in order if i not in errors):
            params = grid_points[index]
            try:
                result, values[index] = time_point(params, timed[index][0] if timed[index] else None)
            except (KeyboardInterrupt, SystemExit) as exc:
                stopped, interrupted, error = f"{type(exc).__name__} at {format_params(params)}", True, exc
                break
            except Exception as exc:
                errors[index] = error_text(exc)
                if stop_on_error:
                    stopped, error = f"--stop-on-error after the error at {format_params(params)}", exc
                    break
                continue
            timed[index].append(result)
        if error is not None:
            break
    reached = [i for i in range(len(grid_points)) if timed[i] or i in errors]
    done = [_round_point(grid_points[i], timed[i], errors.get(i), task) for i in reached]
    for point in done:
        finished(point)
    return Results(done, stopped=stopped, interrupted=interrupted, error=error), [values[i] for i in reached]


def _round_point(params: dict[str, Any], rounds: list[CudaTimeResult], error: str | None, task: Task) -> Point:
    """A point of an interleaved sweep: its error, else its rounds merged."""
    if error is not None or not rounds:
        return Point(dataclasses.replace(task, params=params), None, error)
    result = merge_rounds(rounds)
    return Point(result.task or dataclasses.replace(task, params=params), result)


def _result(item: CudaTimeResult | Point | None) -> CudaTimeResult | None:
    return item.result if isinstance(item, Point) else item


def _name(item: CudaTimeResult | Point | None, fallback: str) -> str:
    """A result's short name: its label (and swept values), else ``fallback``."""
    task = item.task if isinstance(item, Point) else getattr(item, "task", None)
    return task.name if task is not None and (task.label or task.params) else fallback


RESAMPLES = 4000  # bootstrap draws of each median: the interval's ends move by well under 1% between seeds
SEED = 31  # fixed: the same results always get the same verdict, in every report


def bootstrap_medians(samples: Sequence[float], rng: Any, draws: int = RESAMPLES) -> NDArray[Any]:
    """``draws`` medians of bootstrap resamples of ``samples`` (n draws with replacement), drawn
    without building a resample: a resample's i-th smallest value is the sample at the i-th
    smallest of n uniform draws, and the k-th smallest of n uniforms is Beta(k, n - k + 1); the
    next one up is that plus (1 - it) × Beta(1, n - k). So each resampled median costs O(1), not
    O(n): 4,000 of them take well under a millisecond for 100,000 runs as for 10."""
    import numpy

    ordered = numpy.sort(numpy.asarray(samples, dtype=float))
    n, k = len(ordered), (len(ordered) + 1) // 2

    def value(uniform: NDArray[Any]) -> NDArray[Any]:
        picked: NDArray[Any] = ordered[numpy.minimum((uniform * n).astype(int), n - 1)]
        return picked

    low = rng.beta(k, n - k + 1, draws)
    if n % 2:
        return value(low)
    medians: NDArray[Any] = (value(low) + value(low + (1 - low) * rng.beta(1, n - k, draws))) / 2
    return medians


def ratio_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of median(a) / median(b), each side resampled on its
    own (``bootstrap_medians``), seeded (``SEED``): deterministic. Each sample is one observation
    (a batched sample too)."""
    import numpy

    rng = numpy.random.default_rng(SEED)
    ratios = bootstrap_medians(a, rng) / bootstrap_medians(b, rng)
    low, high = numpy.quantile(ratios, (0.025, 0.975))
    return float(low), float(high)


def times_text(value: float) -> str:
    """``1.10×``, ``12.4×``, ``412×``, ``0.0009×``: a ratio to three significant figures (two decimals
    below 10), and a third decimal within 1% of 1, where ``1.00×`` would hide that an interval's end
    (``1.004×``) excludes 1."""
    if value < 0.01:
        return f"{value:.2g}×"
    if value < 10:
        return f"{value:.3f}×" if value != 1 and abs(value - 1) < 0.01 else f"{value:.2f}×"
    return f"{value:.1f}×" if value < 100 else f"{value:.0f}×"


def interval_text(low: float, high: float, show: Callable[[float], str]) -> str:
    """``1.08–1.12×``: two ratios as ``show`` writes them, the sign once."""
    return f"{show(low)[:-1]}–{show(high)}"


@dataclass(frozen=True)
class Contrast:
    """Two results' verdict, as plain data: ``ratio`` is a's median over b's (above 1: b is faster)
    and ``ci`` its 95% interval (``ratio_interval``); ``faster`` names the faster one only when
    ``conclusive`` (the interval excludes 1); ``reason`` says otherwise what the runs can tell;
    ``threads`` notes different thread settings, ``differs`` what else differs beside the code."""

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
        """(how many times faster the faster one is, and that factor's interval), or None without an
        interval; for a's median over b's below 1, a's speed-up over b."""
        if self.ratio is None or self.ci is None:
            return None
        if self.ratio >= 1:
            return self.ratio, self.ci[0], self.ci[1]
        return 1 / self.ratio, 1 / self.ci[1], 1 / self.ci[0]

    @property
    def sentence(self) -> str:
        """``torch 1.29× faster (1.21–1.37)`` or ``inconclusive: no difference larger than 4% either
        way; ...``."""
        if not self.conclusive or self.speedup is None:
            text = f"inconclusive: {self.reason}"
        else:
            times, low, high = self.speedup
            text = f"{self.faster} {times_text(times)} faster ({interval_text(low, high, times_text)})"
        return (text + (f" ({self.threads})" if self.threads else "")
                + (f" (also differs: {self.differs})" if self.differs else ""))

    def to_dict(self) -> dict[str, Any]:
        return dict(dataclasses.asdict(self), sentence=self.sentence)


def _thread_note(a: CudaTimeResult, b: CudaTimeResult) -> str | None:
    """Why two results' thread settings differ, or None: --threads N against the user's settings,
    or different pools (what each CPU context saw during the warm runs)."""
    def setting(r: CudaTimeResult) -> tuple[int | None, dict[str, int | None] | None]:
        chosen = r.task.threads if r.task is not None else None
        pools = r.cpu_context.threads if r.cpu_context is not None else None
        return chosen, pools

    (chosen_a, pools_a), (chosen_b, pools_b) = setting(a), setting(b)
    if chosen_a != chosen_b:
        words = ["--threads " + str(n) if n is not None else "the user's threads" for n in (chosen_a, chosen_b)]
        return f"timed with different thread settings: {words[0]} and {words[1]}"
    if pools_a is not None and pools_b is not None and pools_a != pools_b:
        return f"timed with different thread pools: {pools_text(pools_a)} and {pools_text(pools_b)}"
    return None


LOAD_GAP = 1.0  # load averages this far apart (in cores' worth of work) are a difference worth naming


def _versions(a: Env, b: Env) -> list[str]:
    """``Python 3.11.7 vs 3.13.0``, ``torch 2.5.1 vs 2.13.0``: what both environments recorded, differing."""
    found = [f"Python {a.python} vs {b.python}"] if a.python and b.python and a.python != b.python else []
    return found + [f"{name} {a.frameworks[name]} vs {b.frameworks[name]}" for name in a.frameworks
                    if name in b.frameworks and a.frameworks[name] != b.frameworks[name]]


def _loads(a: CudaTimeResult, b: CudaTimeResult) -> list[str]:
    """``load 0.30 vs 6.70 on 2 cores``, where both loads were read and are ``LOAD_GAP`` apart or more."""
    first, second = a.cpu_context, b.cpu_context
    if first is None or second is None or first.load_before is None or second.load_before is None:
        return []
    if abs(first.load_before - second.load_before) < LOAD_GAP:
        return []
    cores = f"{first.cores} cores" if first.cores == second.cores else f"{first.cores} and {second.cores} cores"
    return [f"load {first.load_before:.2f} vs {second.load_before:.2f} on {cores}"]


def _differences(a: CudaTimeResult, b: CudaTimeResult) -> str | None:
    """What else differs between two results beside the code, as both recorded it: the device,
    Python's and the frameworks' versions, the load; None where nothing does (or nothing was recorded)."""
    found: list[str] = []
    if a.device != b.device:
        found.append(f"device {a.device} vs {b.device}")
    if a.env is not None and b.env is not None:
        found += _versions(a.env, b.env)
    found += _loads(a, b)
    return "; ".join(found) or None


def _runs_word(result: CudaTimeResult) -> str:
    return "runs" if result.batch == 1 else "samples"


def _undecided(ci: tuple[float, float], a: CudaTimeResult, b: CudaTimeResult) -> str:
    """What an interval that holds 1 still tells: the largest difference it leaves open, either way,
    and the runs each that would halve it (the interval narrows as one over the root of the runs)."""
    bound = max(ci[1], 1 / ci[0]) - 1
    said = f"no difference larger than {percent_text(bound)} either way"
    if not bound:  # identical medians in every resample: nothing more runs would narrow
        return said
    return f"{said}; about {4 * max(a.runs, b.runs):,} {_runs_word(a)} each would tell {percent_text(bound / 2)}"


def contrast(a: CudaTimeResult | Point | None, b: CudaTimeResult | Point | None,
             names: Sequence[str] | None = None) -> Contrast:
    """Which of two results (``CudaTimeResult`` or ``Point``) is faster, and whether the runs can
    tell: the ratio of their warm medians with its 95% bootstrap interval (``ratio_interval``), a
    winner only when that interval excludes 1. Each needs ``CI_MIN_RUNS`` warm samples: fewer
    cannot bound a median. Different thread settings, devices, versions or loads are named beside
    the verdict. ``names`` defaults to their labels, else "a" and "b"."""
    names = tuple(names or (_name(a, "a"), _name(b, "b")))
    a, b = _result(a), _result(b)
    if a is None or b is None or not a.median or not b.median:
        return Contrast(names, (a.median if a is not None else None, b.median if b is not None else None),
                        reason="a result has no warm runs")
    ratio = a.median / b.median
    verdict = Contrast(names, (a.median, b.median), ratio, threads=_thread_note(a, b), differs=_differences(a, b))
    if min(a.runs, b.runs) < CI_MIN_RUNS:
        reason = f"too few runs for an interval ({a.runs} and {b.runs}; {CI_MIN_RUNS} each needed)"
        return dataclasses.replace(verdict, reason=reason)
    ci = ratio_interval(a.samples, b.samples)
    if ci[0] <= 1 <= ci[1]:
        return dataclasses.replace(verdict, reason=_undecided(ci, a, b), ci=ci)
    return dataclasses.replace(verdict, faster=names[1] if ratio > 1 else names[0], conclusive=True, ci=ci)


def to_numpy(value: Any) -> NDArray[Any]:
    """A tensor or array as a NumPy array (torch, CuPy, JAX, NumPy, nested lists)."""
    import numpy

    if hasattr(value, "detach"):  # torch; bfloat16 and float16 have no NumPy twin everywhere
        value = value.detach().cpu()
        if value.is_floating_point():
            value = value.double()
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        value = value.get()
    return numpy.asarray(value)


def _as_floats(value: Any) -> tuple[NDArray[Any], None] | tuple[None, str]:
    """The value as a float array, or the reason it cannot be compared."""
    try:
        return to_numpy(value).astype(float), None
    except (TypeError, ValueError):
        return None, f"not numeric ({type(value).__name__})"


def _difference(array: NDArray[Any], reference: NDArray[Any]) -> float:
    """Largest absolute difference, NaN against NaN (and inf against the same inf) counting as 0."""
    import numpy

    if not array.size:
        return 0.0
    with numpy.errstate(invalid="ignore"):
        diff = numpy.abs(array - reference)
    same = (array == reference) | (numpy.isnan(array) & numpy.isnan(reference))
    diff = numpy.where(same, 0.0, diff)
    return float(numpy.max(numpy.where(numpy.isnan(diff), math.inf, diff)))


def check_values(sweep: Results, values: Sequence[Any], rtol: float = 1e-4, atol: float = 1e-6) -> Check:
    """``allclose`` (NaN equal to NaN) of each point's value against the first point with the same shape.

    A point that has no other point of its shape, or whose value is not numeric, is
    listed in ``Check.skipped`` with the reason: it was not compared.
    """
    import numpy

    references: dict[tuple[int, ...], tuple[dict[str, Any], NDArray[Any]]] = {}
    shapes: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    largest, mismatches, skipped, compared = 0.0, [], [], 0
    for point, value in zip(sweep.points, values):
        if point.result is None or value is None:
            continue
        array, why = _as_floats(value)
        if why is not None:
            skipped.append((point.params, why))
            continue
        assert array is not None  # _as_floats gives an array, or None and the reason
        shapes.setdefault(array.shape, []).append(point.params)
        ref = references.setdefault(array.shape, (point.params, array))
        if ref[0] is point.params:
            continue
        compared += 1
        diff = _difference(array, ref[1])
        largest = max(largest, diff)
        if not numpy.allclose(array, ref[1], rtol=rtol, atol=atol, equal_nan=True):
            mismatches.append((point.params, ref[0], diff))
    skipped += [(group[0], f"no other point gave a value of shape {shape}")
                for shape, group in shapes.items() if len(group) == 1]
    sweep.check = Check(not mismatches, largest, mismatches, skipped, compared)
    return sweep.check
