"""What a saved line may hold: each field's type and range, checked before the line is trusted.

A line that ``%cudatime_compare --load`` reads may come from another version, another tool,
a hand edit or a hostile file. ``checked_line`` compares it with the fields declared here
(``LINE``) and returns a copy holding only them: a field a newer version added is dropped, so
an older reader still loads the line, and the statistics a line carries for other readers are
dropped too (loading recomputes them from the runs). Any other value raises ``BadField``,
which names the field by its path in the line (``warm[3].wall``) and says what it should
have been (the path is built only for a bad value: a good line costs its checks alone). So
``from_dict``, the table and the chart only ever see values they can use: finite, non-negative
times; whole numbers that are not booleans; text where text belongs.

Limits, per line (``store.MAX_LINE`` bounds its length): a swept value's lists nested at most
``MAX_DEPTH`` deep (every other field has a fixed depth); a swept value JSON has no type for
(``{"literal": "(2, 3)"}``) at most ``MAX_LITERAL`` characters of a Python literal.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import math
import warnings
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .result import RecordKeeper

MAX_DEPTH = 32  # the deepest line --save writes is 5; a swept list of lists adds its own levels
MAX_LITERAL = 10_000  # characters; a shape or a small dict is a few dozen
# A field's check: ``check(value)`` gives back the value to keep, or raises BadField.
Check = Callable[[Any], Any]


class BadField(ValueError):
    """A value a saved line may not hold, named by its path in the line (``warm[3].wall``). The path
    is put together as the error passes up through the containers (``within``), so checking a
    well-formed line, the common case, builds no path at all."""

    def __init__(self, what: str, path: str = "") -> None:
        super().__init__(what, path)
        self.what, self.path = what, path

    def __str__(self) -> str:
        return f"{self.path} {self.what}" if self.path else self.what

    def within(self, part: str) -> BadField:
        """The same error one container up: ``part`` (a field's name, or ``[3]``) before its path."""
        return BadField(self.what, part + self.path if self.path[:1] in ("", "[") else f"{part}.{self.path}")


def _shown(value: Any) -> str:
    """A value as a message shows it: its JSON spelling for a scalar, its JSON type for the rest.
    JSON's spelling escapes every control character, so a message never carries one raw."""
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return names.get(type(value)) or json.dumps(value)


def _fail(what: str, value: Any) -> NoReturn:
    raise BadField(f"must be {what}, got {_shown(value)}")


def number(what: str, allowed: Callable[[Any], bool] = lambda value: True) -> Check:
    """A finite int or float (never a bool) that ``allowed`` accepts."""
    def check(value: Any) -> Any:
        if type(value) not in (int, float) or not math.isfinite(value) or not allowed(value):
            _fail(what, value)
        return value
    return check


def whole(what: str, allowed: Callable[[Any], bool] = lambda value: True) -> Check:
    """An int (never a bool) that ``allowed`` accepts."""
    def check(value: Any) -> Any:
        if type(value) is not int or not allowed(value):
            _fail(what, value)
        return value
    return check


def of_type(kind: type, what: str) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not kind:
            _fail(what, value)
        return value
    return check


SECONDS = number("a finite number of seconds, not negative", lambda value: value >= 0)
AMOUNT = number("a finite number, not negative", lambda value: value >= 0)
COUNT = whole("a whole number, not negative", lambda value: value >= 0)
INTEGER = whole("a whole number")
TEXT = of_type(str, "a string")
FLAG = of_type(bool, "true or false")


def optional(check: Check) -> Check:
    """None, or what ``check`` accepts."""
    return lambda value: None if value is None else check(value)


def _items(checks: Iterable[Check], value: list[Any]) -> list[Any]:
    """Each item of ``value`` checked by its check in ``checks``; a bad one is named by its index."""
    kept: list[Any] = []
    try:
        for check, item in zip(checks, value):
            kept.append(check(item))
    except BadField as exc:
        raise exc.within(f"[{len(kept)}]") from None
    return kept


def list_of(check: Check) -> Check:
    def checked(value: Any) -> list[Any]:
        if type(value) is not list:
            _fail("a list", value)
        return _items(itertools.repeat(check), value)
    return checked


def dict_of(check: Check) -> Check:
    """An object of any keys (JSON's are strings) whose values ``check`` accepts."""
    def checked(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            _fail("an object", value)
        kept: dict[str, Any] = {}
        key = ""
        try:
            for key, item in value.items():
                kept[key] = check(item)
        except BadField as exc:
            raise exc.within(f"[{json.dumps(key)}]") from None
        return kept
    return checked


def row(*checks: Check) -> Check:
    """A list of exactly ``len(checks)`` items, each checked by its own check."""
    def checked(value: Any) -> list[Any]:
        if type(value) is not list or len(value) != len(checks):
            _fail(f"a list of {len(checks)} items", value)
        return _items(checks, value)
    return checked


class record:  # named as the other checks are: a class only so that its fields are typed
    """An object: the ``required`` keys present, each declared field checked, any other key dropped.
    A check like the others (called with the value), that also names its ``fields``."""

    def __init__(self, fields: dict[str, Check], required: Collection[str] = ()) -> None:
        self._checks, self._required = fields, required
        self.fields = tuple(fields)

    def __call__(self, value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            _fail("an object", value)
        for name in self._required:
            if name not in value:
                raise BadField("is missing", name)
        kept: dict[str, Any] = {}
        name = ""
        try:
            for name, check in self._checks.items():
                if name in value:
                    kept[name] = check(value[name])
        except BadField as exc:
            raise exc.within(name) from None
        return kept


def _literal(text: str) -> dict[str, str]:
    """``{"literal": "(2, 3)"}``: a Python literal of at most ``MAX_LITERAL`` characters that
    ``ast.literal_eval`` reads without a warning (an invalid escape warns on one Python, fails on another)."""
    if len(text) > MAX_LITERAL:
        raise BadField(f"is a literal of {len(text):,} characters (at most {MAX_LITERAL:,})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, Warning):
        raise BadField("is not a Python literal") from None
    return {"literal": text}


def _swept(value: Any, depth: int = 0) -> Any:
    """A swept value as ``params_to_json`` writes it: JSON's own null, true/false, number
    (inf and nan included: a sweep may take them), string or list of these (nested at most
    ``MAX_DEPTH`` deep: the one field a line may nest without end), or a literal."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is list:
        if depth >= MAX_DEPTH:
            raise BadField(f"is nested more than {MAX_DEPTH} levels deep")
        return _items(itertools.repeat(lambda item: _swept(item, depth + 1)), value)
    if type(value) is dict and list(value) == ["literal"] and type(value["literal"]) is str:
        return _literal(value["literal"])
    _fail('a JSON value or {"literal": "..."}', value)


RUN = record({"host": SECONDS, "wall": SECONDS, "device": optional(SECONDS), "cpu_user": optional(SECONDS),
              "cpu_sys": optional(SECONDS), "batch": whole("a whole number, at least 1", lambda value: value >= 1)},
             required=("host", "wall"))
ENV = record({"device": TEXT, "frameworks": dict_of(TEXT), "python": TEXT, "host": TEXT})
TASK = record({"stmt": TEXT, "label": optional(TEXT), "params": dict_of(_swept), "env": ENV,
               "threads": optional(whole("a whole number of threads, at least 1", lambda value: value >= 1))},
              required=("stmt", "label", "params", "env"))
HARNESS = record({"wall": SECONDS, "jitter": SECONDS, "device": optional(SECONDS)}, required=("wall", "jitter"))
CPU_CONTEXT = record({
    "cores": whole("a whole number of cores, at least 1", lambda value: value >= 1),
    "load_before": optional(AMOUNT), "load_after": optional(AMOUNT), "ready_before": optional(COUNT),
    "threads": dict_of(optional(COUNT)), "cpu": SECONDS, "wall": SECONDS, "waited": optional(SECONDS),
    "preempted": optional(COUNT), "touched": optional(list_of(TEXT)), "users": optional(dict_of(list_of(TEXT))),
}, required=("cores",))
RESULT_FIELDS: dict[str, Check] = {
    "task": optional(TASK), "cold": RUN, "warmup": list_of(RUN), "warm": list_of(RUN), "device": TEXT,
    "synchronized": list_of(TEXT), "notes": list_of(TEXT), "stopped": optional(TEXT),
    "harness": optional(HARNESS), "cpu_context": optional(CPU_CONTEXT),
}
FAILED = record({"task": TASK, "error": TEXT}, required=("task", "error"))  # a sweep point that raised


@functools.lru_cache(maxsize=8)
def result_record(features: tuple[RecordKeeper, ...] = ()) -> record:
    """A saved result: its own fields, and under "records" each feature's record by the feature's name
    (or null), as the feature declares it (``Feature.schema``); made once per set of features, not per line."""
    records: dict[str, Check] = {}
    for feature in features:
        check = type(feature).schema  # read on the class: a check is a plain function, never bound
        if check is not None:
            records[feature.name] = optional(check)
    fields = {**RESULT_FIELDS, "records": optional(record(records))}
    return record(fields, required=("cold", "warmup", "warm", "device"))


# Which record checks which class of the core line: tests/test_store.py holds every field of these classes
# declared here; each feature's record class (``RecordKeeper.record_class``) is checked against its own
# ``schema``, declared beside the record in the feature's folder.
RECORDS = {"Run": RUN, "Env": ENV, "Task": TASK, "Harness": HARNESS, "CpuContext": CPU_CONTEXT}


def checked_line(data: dict[str, Any], features: Iterable[RecordKeeper] = ()) -> dict[str, Any]:
    """A line's point data (``Point.from_dict``'s input), checked: a result (with the records of
    ``features``), or a failed point's task and error. Every declared record has a fixed depth
    but swept values, which ``_swept`` bounds: nothing deeper reaches ``from_dict``."""
    return result_record(tuple(features))(data) if "cold" in data else FAILED(data)
