"""Several results compared: one collection (``Results``) for sweeps (``--sweep n=256,512``), labelled results
(``-l``), ``%cudatime_compare`` and loaded files; running a sweep, in order or in rounds (``--interleave``); and
value checks (``--check``). Plain data and no IPython: ``run_sweep`` is handed a function that times one point.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .result import CudaTimeResult, Task, format_params, judgement, params_from_json, params_to_json

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .result import RecordKeeper


@dataclass
class Point:
    """One row of any collection: what was timed, and its result or the error that stopped it."""

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
        """One saved line: the result's dict (which holds its task), or the task and the error."""
        return self.result.to_dict() if self.result is not None else {"task": self.task.to_dict(), "error": self.error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], features: Collection[RecordKeeper] = ()) -> Point:
        """The point ``to_dict`` wrote; ``features`` read their records back (``CudaTimeResult.from_dict``)."""
        if "cold" not in data:
            return cls(Task.from_dict(data["task"]), None, data["error"])
        result = CudaTimeResult.from_dict(data, features)
        return cls(result.task or Task(), result)


def _converted(rows: Iterable[Sequence[Any]], convert: Callable[[Any], Any], kind: type = list) -> list[Any]:
    """Check rows (params first, then more params or a reason), each params ``convert``ed: to JSON, or back."""
    return [kind(convert(item) if isinstance(item, dict) else item for item in row) for row in rows]


_ROWS = ("mismatches", "skipped")  # the check's fields of such rows


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
        return dict(self.__dict__, **{name: _converted(getattr(self, name), params_to_json) for name in _ROWS})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        return cls(**dict(data, **{name: _converted(data[name], params_from_json, tuple) for name in _ROWS}))


@dataclass
class Results:
    """Results side by side (a sweep, the ``-l`` record, loaded files): one list of ``Point``s, each
    saying what it timed, so that like torch's ``Compare`` one table and one chart serve them all."""

    points: list[Point] = field(default_factory=list)
    check: Check | None = None
    stopped: str | None = None
    interrupted: bool = False  # stopped by KeyboardInterrupt or SystemExit
    span: float | None = None  # seconds a sweep took, its points timed one after the other (not --interleave)
    error: BaseException | None = field(default=None, repr=False, compare=False)  # what stopped it, to raise
    # The features that word and tabulate its points' records, handed in by its maker (the magics, ``store.load``)
    keepers: tuple[RecordKeeper, ...] = field(default=(), repr=False, compare=False)

    @property
    def rows(self) -> list[tuple[dict[str, Any], CudaTimeResult | None]]:
        return [(point.params, point.result) for point in self.points]

    @property
    def names(self) -> list[str]:
        """The swept names, in the order the points first use them."""
        return list(dict.fromkeys(name for point in self.points for name in point.params))

    def references(self) -> dict[int, CudaTimeResult]:
        """For a ``device`` sweep: {index: the result at the first device, the other params equal}."""
        if "device" not in self.names:
            return {}
        timed = [(i, p, p.result) for i, p in enumerate(self.points) if p.result is not None and p.result.median]
        first = self.points[0].params.get("device")
        reference = {_others(p): r for _, p, r in timed if p.params.get("device") == first}
        return {i: reference[_others(p)] for i, p, _ in timed if _others(p) in reference}

    def record(self, points: Collection[Point]) -> None:
        """Add ``points``, replacing those recorded earlier under the same label (``-l`` again)."""
        labels = {point.label for point in points}
        self.points = [point for point in self.points if point.label not in labels] + list(points)

    def select(self, words: Iterable[str]) -> tuple[Results, list[str]]:
        """(the points each word names: a label, or a name such as ``label[n=2]``; the words naming none)."""
        chosen: list[Point] = []
        unknown: list[str] = []
        for word in words:
            squeezed = "".join(word.split())  # "label[n=2, m=3]" names "label[n=2,m=3]"
            found = [p for p in self.points if word == p.label or squeezed == "".join(p.name.split())]
            chosen += [point for point in found if all(point is not seen for seen in chosen)]
            unknown += [] if found else [word]
        return Results(chosen, keepers=self.keepers), unknown

    def to_dict(self) -> dict[str, Any]:
        return {"points": [point.to_dict() for point in self.points],
                "check": None if self.check is None else self.check.to_dict(),
                "stopped": self.stopped, "interrupted": self.interrupted, "span": self.span}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], features: Collection[RecordKeeper] = ()) -> Results:
        """The results ``to_dict`` wrote; ``features`` as for ``Point.from_dict``, and its ``keepers``."""
        check = data["check"] and Check.from_dict(data["check"])
        return cls([Point.from_dict(point, features) for point in data["points"]], check, data["stopped"],
                   data["interrupted"], data.get("span"), keepers=tuple(features))

    def read_by(self, keepers: Iterable[RecordKeeper]) -> Results:
        """These results, their records read by their own keepers, else by ``keepers`` (then kept), for the views."""
        keepers = self.keepers or tuple(keepers)
        points = [point if point.result is None else dataclasses.replace(point, result=point.result.read_by(keepers))
                  for point in self.points]
        return dataclasses.replace(self, points=points, keepers=keepers)

    def to_pandas(self) -> Any:  # a pandas.DataFrame (pandas is optional here, and untyped)
        """One row per point (``_record``): the swept values, the statistics, then each feature's fields."""
        import pandas

        return pandas.DataFrame.from_records([_record(point, self.keepers) for point in self.points])

    def __repr__(self) -> str:
        """One line, so that a bare ``%cudatime -o --sweep ...`` does not show the table twice."""
        failed = sum(point.result is None for point in self.points)
        return (f"<Results: {len(self.points)} point(s) over {', '.join(self.names) or 'nothing'}"
                + (f", {failed} failed" if failed else "") + ">")


def _record(point: Point, keepers: Iterable[RecordKeeper]) -> dict[str, Any]:
    """``to_pandas``'s row for one point, each keeper's fields where it judged something of its record."""
    r = point.result
    low, high = r.median_ci if r is not None and r.median_ci else (None, None)
    record = {**point.params, "median": r and r.median, "ci_low": low, "ci_high": high, "iqr": r and r.iqr,
              "min": r and r.min, "max": r and r.max, "cold": r and r.cold_time, "runs": r.runs if r else 0,
              "error": point.error, "label": point.label, "device": point.task.env.device, "host": point.task.env.host}
    for keeper in keepers:
        judged = judgement(keeper, r) if r is not None else None
        if judged is not None:
            record.update(keeper.table_fields(judged))
    return record


def _others(point: Point) -> tuple[tuple[str, str], ...]:
    return tuple((k, repr(v)) for k, v in point.params.items() if k != "device")


def run_sweep(points: Iterable[dict[str, Any]], time_point: Callable[[dict[str, Any]], tuple[CudaTimeResult, Any]],
              stop_on_error: bool = False, task: Task | None = None,
              finished: Callable[[Point], None] = lambda point: None) -> tuple[Results, list[Any]]:
    """Time every point with ``time_point(params) -> (result, value)``. An Exception is recorded at its point,
    the sweep going on unless ``stop_on_error``; KeyboardInterrupt and SystemExit stop it (``Results.error``).
    ``finished(point)`` hears of each point as it is done (the caller saves it: a later point cannot lose it)."""
    task = task or Task()
    done: list[Point] = []
    values: list[Any] = []
    stopped = error = None
    for params in points:
        timed, failed, stopped, error = _attempt(time_point, (params,), stop_on_error)
        if timed is None and failed is None:  # interrupted
            break
        result, value = timed or (None, None)
        done.append(Point(getattr(result, "task", None) or dataclasses.replace(task, params=params), result, failed))
        values.append(value)
        finished(done[-1])
        if error is not None:
            break
    interrupted = isinstance(error, (KeyboardInterrupt, SystemExit))
    return Results(done, stopped=stopped, interrupted=interrupted, error=error), values


def _attempt(time_point: Callable[..., tuple[CudaTimeResult, Any]], args: tuple[Any, ...], stop_on_error: bool
             ) -> tuple[tuple[CudaTimeResult, Any] | None, str | None, str | None, BaseException | None]:
    """(``time_point(*args)``, or None; its error; why the sweep stops and what stops it, or None, None)."""
    where = format_params(args[0])
    try:
        return time_point(*args), None, None, None
    except (KeyboardInterrupt, SystemExit) as exc:
        return None, None, f"{type(exc).__name__} at {where}", exc
    except Exception as exc:
        stops = (f"--stop-on-error after the error at {where}", exc) if stop_on_error else (None, None)
        try:  # the failed point's row: "Name: message", or "<unprintable Name>" as traceback writes it
            text = f"{type(exc).__name__}: {exc}"
        except Exception:
            text = f"<unprintable {type(exc).__name__}>"
        return None, text, *stops


def rotation(count: int, rounds: int) -> list[list[int]]:
    """The order of ``count`` points in each of ``rounds``: round r starts at point r (mod count), so that
    each point is first, second, ... equally often, and a drift hits every point alike."""
    return [[(start + step) % count for step in range(count)] for start in range(rounds)] if count else []


def merge_rounds(results: Sequence[CudaTimeResult], keepers: Iterable[RecordKeeper] = ()) -> CudaTimeResult:
    """One point's result from its rounds: the first's cold run, warm-up and facts; each later round's first
    run (after the other points ran) a warm-up run; every round's warm samples; each record as its keeper merges."""
    first, later = results[0], results[1:]
    records = dict(first.records)
    records.update((keeper.name, keeper.merged([r.records.get(keeper.name) for r in results]))
                   for keeper in keepers if keeper.name in records)
    warmup = [*first.warmup, *(run for r in later for run in (r.cold, *r.warmup))]
    sample = "run" if first.batch == 1 else f"sample of {first.batch:,} runs (the size its first round found)"
    note = (f"interleaved: {len(results)} rounds of one warm {sample} of each point, in a rotating order (each "
            "round's first run of a point, after the other points ran, is a warm-up run)")
    return dataclasses.replace(
        first, warmup=warmup, warm=[run for r in results for run in r.warm], notes=[*first.notes, note],
        stopped=next((r.stopped for r in results if r.stopped), None), records=records)


def run_interleaved(points: Iterable[dict[str, Any]], time_point: Callable[[dict[str, Any], CudaTimeResult | None],
                    tuple[CudaTimeResult, Any]], rounds: int, stop_on_error: bool = False, task: Task | None = None,
                    finished: Callable[[Point], None] = lambda point: None,
                    keepers: Iterable[RecordKeeper] = ()) -> tuple[Results, list[Any]]:
    """``run_sweep`` in rounds (``--interleave``), each timing every point once (``time_point(params, its first
    round's result or None)``) in ``rotation``'s order, so that slow drift cannot decide a comparison."""
    grid_points, task, keepers = list(points), task or Task(), tuple(keepers)
    timed: list[list[CudaTimeResult]] = [[] for _ in grid_points]
    values: list[Any] = [None] * len(grid_points)
    errors: dict[int, str] = {}
    stopped = error = None
    for index in (i for order in rotation(len(grid_points), rounds) for i in order if i not in errors):
        first = timed[index][0] if timed[index] else None
        got, failed, stopped, error = _attempt(time_point, (grid_points[index], first), stop_on_error)
        if got is not None:
            timed[index].append(got[0])
            values[index] = got[1]
        elif failed is not None:
            errors[index] = failed
        if error is not None:
            break
    reached = [i for i in range(len(grid_points)) if timed[i] or i in errors]
    done = []
    for i in reached:
        result = merge_rounds(timed[i], keepers) if i not in errors else None
        own = result.task if result is not None else None
        done.append(Point(own or dataclasses.replace(task, params=grid_points[i]), result, errors.get(i)))
    for point in done:
        finished(point)
    interrupted = isinstance(error, (KeyboardInterrupt, SystemExit))
    return Results(done, stopped=stopped, interrupted=interrupted, error=error), [values[i] for i in reached]


def to_numpy(value: Any) -> NDArray[Any]:
    """A tensor or array (torch, CuPy, JAX, NumPy, nested lists) as a NumPy array."""
    import numpy

    if hasattr(value, "detach"):  # torch; bfloat16 and float16 have no NumPy twin everywhere
        value = value.detach().cpu()
        if value.is_floating_point():
            value = value.double()
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        value = value.get()
    return numpy.asarray(value)


def check_values(sweep: Results, values: Sequence[Any], rtol: float = 1e-4, atol: float = 1e-6) -> Check:
    """``allclose`` (NaN equal to NaN) of each point's value against the first point of the same shape;
    a point with no other of its shape, or a value not numeric, is in ``Check.skipped``, with why."""
    import numpy

    references: dict[tuple[int, ...], tuple[dict[str, Any], NDArray[Any]]] = {}
    shapes: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    largest, mismatches, skipped, compared = 0.0, [], [], 0
    for point, value in zip(sweep.points, values):
        if point.result is None or value is None:
            continue
        try:
            array = to_numpy(value).astype(float)
        except (TypeError, ValueError):
            skipped.append((point.params, f"not numeric ({type(value).__name__})"))
            continue
        shapes.setdefault(array.shape, []).append(point.params)
        first, reference = references.setdefault(array.shape, (point.params, array))
        if first is point.params:
            continue
        compared += 1
        # the largest absolute difference, NaN against NaN (and inf against the same inf) counting as 0
        with numpy.errstate(invalid="ignore"):
            apart = numpy.abs(array - reference)
        apart = numpy.where((array == reference) | (numpy.isnan(array) & numpy.isnan(reference)), 0.0, apart)
        diff = float(numpy.max(numpy.where(numpy.isnan(apart), math.inf, apart))) if array.size else 0.0
        largest = max(largest, diff)
        if not numpy.allclose(array, reference, rtol=rtol, atol=atol, equal_nan=True):
            mismatches.append((point.params, first, diff))
    skipped += [(group[0], f"no other point gave a value of shape {shape}")
                for shape, group in shapes.items() if len(group) == 1]
    sweep.check = Check(not mismatches, largest, mismatches, skipped, compared)
    return sweep.check
