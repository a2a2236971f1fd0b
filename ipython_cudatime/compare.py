"""Several results compared: sweeps over a grid (``--sweep n=256,512 --sweep device=cpu,cuda``),
labelled results side by side (``-l`` and ``%cudatime_compare``), and value checks (``--check``).

Knows nothing of IPython: ``run_sweep`` is handed a function that times one point.
Each point has its own cold and warm runs; an error at one point does not lose the others.
"""

import ast
import itertools
import math
from dataclasses import dataclass, field


def parse_sweep(spec):
    """``NAME=V1,V2,...`` → (NAME, [values]); values are Python literals where they parse, else strings."""
    name, eq, values = spec.partition("=")
    name = name.strip()
    if not eq or not name.isidentifier() or not values:
        raise ValueError(f"--sweep expects NAME=V1,V2,..., got {spec!r}")
    parsed = []
    for text in values.split(","):
        try:
            parsed.append(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            parsed.append(text)
    return name, parsed


def grid(sweeps):
    """The product of the sweeps, in order, as a list of {name: value} dicts."""
    names = [name for name, _ in sweeps]
    return [dict(zip(names, combo)) for combo in itertools.product(*(values for _, values in sweeps))]


@dataclass
class Point:
    params: dict
    result: object = None  # CudaTimeResult, or None when the point failed
    error: str = None


@dataclass
class Check:
    """``--check``: each point's final value against the first point with the same shape."""

    ok: bool
    max_abs_diff: float
    mismatches: list = field(default_factory=list)  # (params, reference params, largest difference)
    skipped: list = field(default_factory=list)  # params whose value is not numeric: not compared


@dataclass
class SweepResult:
    points: list
    check: Check = None
    stopped: str = None
    interrupted: bool = False  # stopped by KeyboardInterrupt: the magic shows the points done, then re-raises

    @property
    def rows(self):
        return [(point.params, point.result) for point in self.points]

    @property
    def names(self):
        return list(self.points[0].params) if self.points else []

    def speedups(self):
        """For a ``device`` sweep: each point's warm median against the first device's, other params equal."""
        if "device" not in self.names:
            return {}
        first = self.points[0].params["device"]
        reference = {}
        for point in self.points:
            if point.params["device"] == first and point.result is not None:
                reference[_others(point.params)] = point.result.median
        return {i: reference[_others(p.params)] / p.result.median for i, p in enumerate(self.points)
                if p.result is not None and p.result.median and reference.get(_others(p.params))}

    def to_dict(self):
        return {
            "points": [{"params": p.params, "result": p.result.to_dict() if p.result else None, "error": p.error}
                       for p in self.points],
            "check": None if self.check is None else self.check.__dict__,
            "stopped": self.stopped,
        }

    def to_pandas(self):
        """One row per point: the parameters, then median, IQR, cold, runs and error; with --roofline,
        also flop_rate, byte_rate and fraction_of_peak."""
        import pandas

        records = []
        for point in self.points:
            r = point.result
            record = {**point.params, "median": r and r.median, "iqr": r and r.iqr,
                      "cold": r and r.cold_time, "runs": r.runs if r else 0, "error": point.error}
            roofline = r.roofline if r is not None else None
            if roofline is not None:
                record.update(flop_rate=roofline.flop_rate, byte_rate=roofline.byte_rate,
                              fraction_of_peak=roofline.fraction_of_peak)
            records.append(record)
        return pandas.DataFrame.from_records(records)

    def __str__(self):
        from .render.comparison import sweep_text

        return sweep_text(self)

    def _repr_pretty_(self, printer, cycle):
        printer.text(str(self))

    def _repr_mimebundle_(self, include=None, exclude=None):
        if include is not None and "text/html" not in include:
            return {"text/plain": str(self)}
        from .render.comparison import sweep_html

        return {"text/plain": str(self), "text/html": sweep_html(self)}


def _others(params):
    return tuple((k, repr(v)) for k, v in params.items() if k != "device")


def run_sweep(points, time_point, stop_on_error=False):
    """Time every point with ``time_point(params) -> (result, value)``; return (SweepResult, values).

    An Exception at a point is recorded there; the sweep goes on unless ``stop_on_error``.
    A KeyboardInterrupt stops the sweep, keeping the points done.
    """
    done, values = [], []
    stopped, interrupted = None, False
    for params in points:
        try:
            result, value = time_point(params)
        except KeyboardInterrupt:
            stopped, interrupted = f"KeyboardInterrupt at {_label(params)}", True
            break
        except Exception as exc:
            done.append(Point(params, None, f"{type(exc).__name__}: {exc}"))
            values.append(None)
            if stop_on_error:
                stopped = f"--stop-on-error after the error at {_label(params)}"
                break
            continue
        done.append(Point(params, result))
        values.append(value)
    return SweepResult(done, stopped=stopped, interrupted=interrupted), values


def _label(params):
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def to_numpy(value):
    """A tensor or array as a NumPy array (torch, CuPy, JAX, NumPy, nested lists)."""
    import numpy

    if hasattr(value, "detach"):  # torch; bfloat16 and float16 have no NumPy twin everywhere
        value = value.detach().cpu()
        if value.is_floating_point():
            value = value.double()
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        value = value.get()
    return numpy.asarray(value)


def check_values(sweep, values, rtol=1e-4, atol=1e-6):
    """``allclose`` of each point's value against the first point with the same shape."""
    import numpy

    references = {}
    largest, mismatches, skipped = 0.0, [], []
    for point, value in zip(sweep.points, values):
        if point.result is None or value is None:
            continue
        try:
            array = to_numpy(value).astype(float)
        except (TypeError, ValueError):
            skipped.append(point.params)
            continue
        ref = references.setdefault(array.shape, (point.params, array))
        if ref[0] is point.params:
            continue
        diff = float(numpy.max(numpy.abs(array - ref[1]))) if array.size else 0.0
        largest = max(largest, diff if math.isfinite(diff) else math.inf)
        if not numpy.allclose(array, ref[1], rtol=rtol, atol=atol):
            mismatches.append((point.params, ref[0], diff))
    sweep.check = Check(not mismatches, largest, mismatches, skipped)
    return sweep.check


@dataclass
class Comparison:
    """Labelled results side by side, as ``%cudatime_compare`` shows them."""

    results: dict  # label -> CudaTimeResult, first is the reference

    def __str__(self):
        from .render.comparison import compare_text

        return compare_text(self.results)

    def _repr_pretty_(self, printer, cycle):
        printer.text(str(self))

    def _repr_mimebundle_(self, include=None, exclude=None):
        if include is not None and "text/html" not in include:
            return {"text/plain": str(self)}
        from .render.comparison import compare_html

        return {"text/plain": str(self), "text/html": compare_html(self.results)}
