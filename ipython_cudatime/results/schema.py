"""What a saved line may hold: each field's type and range, checked before the line is trusted.

A line ``--load`` reads may come from another version, a hand edit or a hostile file. ``checked_line`` keeps
the declared fields only (a newer version's are dropped: an older reader still loads it); any other value raises
``BadField``, naming the field by its path (``warm[3].wall``). Each check is also compiled (``record.fast``) and
run first (``record.quick``), the check itself only where that is unsure: messages come from one place, and a
good line costs a few comparisons a field rather than a few calls (tests/test_store.py holds the two equal).
"""

from __future__ import annotations

import abc
import ast
import functools
import itertools
import json
import operator
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from .result import ASKED_CLOCKS

if TYPE_CHECKING:
    from .result import RecordKeeper

MAX_DEPTH = 32  # the deepest line --save writes is 5; a swept list of lists adds its own levels
MAX_LITERAL = 10_000  # characters; a shape or a small dict is a few dozen
_LARGEST = sys.float_info.max  # an int beyond it is no finite number: a float cannot hold it
_SCALARS = (bool, int, float, str)  # what JSON reads a swept value as, besides null and lists


class BadField(ValueError):
    """A value a saved line may not hold, named by its path (``warm[3].wall``), put together as the
    error passes up through the containers (``within``): a well-formed line builds no path at all."""

    def __init__(self, what: str, path: str = "") -> None:
        super().__init__(what, path)
        self.what, self.path = what, path

    def __str__(self) -> str:
        return f"{self.path} {self.what}" if self.path else self.what

    def within(self, part: str) -> BadField:
        """The same error one container up: ``part`` (a field's name, or ``[3]``) before its path."""
        return BadField(self.what, part + self.path if self.path[:1] in ("", "[") else f"{part}.{self.path}")


class _Unsure(Exception):
    """A compiled check cannot keep this value as it is: the check itself decides (and words it)."""


class _Code:
    """The source of a compiled check being written: its lines, and the objects it names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_Unsure": _Unsure}
        self.variables = itertools.count(1)

    def name(self, value: Any) -> str:
        """A name the code reads ``value`` by (a check, a set of keys, a type)."""
        name = f"_k{len(self.names)}"
        self.names[name] = value
        return name

    def var(self) -> str:
        """A fresh local variable: the value at one place in the line."""
        return f"_v{next(self.variables)}"

    def add(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def function(self) -> Callable[[Any], Any]:
        """``fast``, as the code defines it; for a schema nested deeper than Python compiles, one unsure of all."""
        namespace = dict(self.names)
        try:
            exec("\n".join(self.lines), namespace)  # the source is ours: names, and repr()s of declared keys
        except (SyntaxError, RecursionError, MemoryError):
            return _unsure
        fast: Callable[[Any], Any] = namespace["fast"]
        return fast


def _unsure(value: Any) -> NoReturn:
    raise _Unsure


def _emit(check: Callable[[Any], Any], code: _Code, var: str, depth: int) -> None:
    """Code that raises ``_Unsure`` unless ``check`` keeps ``var`` as it is: a ``Check`` inline, another called."""
    if isinstance(check, Check):
        check.emit(code, var, depth)
    else:
        code.add(depth, f"if {code.name(check)}({var}) is not {var}: raise _Unsure")


class Check(abc.ABC):
    """A field's check: ``check(value)`` gives back the value to keep, or raises BadField; ``emit`` compiles it."""

    @abc.abstractmethod
    def __call__(self, value: Any) -> Any:
        """The value to keep, or BadField saying what is wrong with it."""

    @abc.abstractmethod
    def emit(self, code: _Code, var: str, depth: int) -> None:
        """Code that raises ``_Unsure`` unless ``self(var)`` would give back ``var`` itself."""


def _fail(what: str, value: Any) -> NoReturn:
    """BadField naming a scalar by its JSON spelling (never a raw control character), else by its JSON type."""
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    raise BadField(f"must be {what}, got {names.get(type(value)) or json.dumps(value)}")


class number(Check):  # named, as every check is, for the value it accepts: a class only to carry ``emit``
    """A finite int or float (never a bool), at least ``least`` where given; an int a float cannot hold
    is not finite (the statistics would overflow). inf and nan fall outside every range."""

    def __init__(self, what: str, least: float | None = None) -> None:
        self.what, self.least = what, -_LARGEST if least is None else least

    def __call__(self, value: Any) -> Any:
        if type(value) not in (int, float) or not self.least <= value <= _LARGEST:
            _fail(self.what, value)
        return value

    def emit(self, code: _Code, var: str, depth: int) -> None:
        """Each type by identity, against float bounds (int with float compares exactly): half the cost."""
        code.add(depth, f"if type({var}) is not float and type({var}) is not int or not {float(self.least)!r} <= {var}"
                        f" <= {_LARGEST!r}: raise _Unsure")


class of_type(Check):
    """A value of exactly ``kind`` (a bool is no int here, an int no float), at least ``least`` where given."""

    def __init__(self, kind: type[Any], what: str, least: int | None = None) -> None:
        self.kind, self.what, self.least = kind, what, least

    def __call__(self, value: Any) -> Any:
        if type(value) is not self.kind or self.least is not None and value < self.least:
            _fail(self.what, value)
        return value

    def emit(self, code: _Code, var: str, depth: int) -> None:
        least = "" if self.least is None else f" or {var} < {self.least!r}"
        code.add(depth, f"if type({var}) is not {code.name(self.kind)}{least}: raise _Unsure")


def whole(what: str, least: int | None = None) -> of_type:
    """An int (never a bool), at least ``least`` where given."""
    return of_type(int, what, least)


SECONDS = number("a finite number of seconds, not negative", least=0)
AMOUNT = number("a finite number, not negative", least=0)
COUNT = whole("a whole number, not negative", least=0)
INTEGER = whole("a whole number")
TEXT = of_type(str, "a string")
FLAG = of_type(bool, "true or false")


class optional(Check):
    """None, or what ``check`` accepts."""

    def __init__(self, check: Callable[[Any], Any]) -> None:
        self.check = check

    def __call__(self, value: Any) -> Any:
        return None if value is None else self.check(value)

    def emit(self, code: _Code, var: str, depth: int) -> None:
        code.add(depth, f"if {var} is not None:")
        _emit(self.check, code, var, depth + 1)


def _checked(value: Any, checks: Iterable[tuple[Any, Callable[[Any], Any]]], part: Callable[[Any], str]
             ) -> dict[Any, Any]:
    """{key: what its check keeps of ``value[key]``} for each (key, check) of ``checks``; a bad value is named
    by ``part(key)`` before its own path: a field's name, an index ``[3]``, an object's key ``["name"]``."""
    kept: dict[Any, Any] = {}
    key = None
    try:
        for key, check in checks:
            kept[key] = check(value[key])
    except BadField as exc:
        raise exc.within(part(key)) from None
    return kept


def _items(checks: Iterable[Callable[[Any], Any]], value: list[Any]) -> list[Any]:
    """Each item of ``value`` checked by its check in ``checks``; a bad one is named by its index."""
    return list(_checked(value, zip(range(len(value)), checks), "[{}]".format).values())


class list_of(Check):
    """A list whose every item ``check`` accepts."""

    kind: type = list
    what, values = "a list", ""  # dict_of's: an object, its values

    def __init__(self, check: Callable[[Any], Any]) -> None:
        self.check = check

    def __call__(self, value: Any) -> Any:
        if type(value) is not self.kind:
            _fail(self.what, value)
        return self._kept(value)

    def _kept(self, value: Any) -> Any:
        return _items(itertools.repeat(self.check), value)

    def emit(self, code: _Code, var: str, depth: int) -> None:
        code.add(depth, f"if type({var}) is not {self.kind.__name__}: raise _Unsure")
        code.add(depth, f"for {(item := code.var())} in {var}{self.values}:")
        _emit(self.check, code, item, depth + 1)


class dict_of(list_of):
    """An object of any keys (JSON's are strings) whose values ``check`` accepts."""

    kind, what, values = dict, "an object", ".values()"

    def _kept(self, value: Any) -> dict[str, Any]:
        return _checked(value, zip(value, itertools.repeat(self.check)), lambda key: f"[{json.dumps(key)}]")


class row(Check):
    """A list of exactly ``len(checks)`` items, each checked by its own check."""

    def __init__(self, *checks: Callable[[Any], Any]) -> None:
        self.checks = checks

    def __call__(self, value: Any) -> list[Any]:
        if type(value) is not list or len(value) != len(self.checks):
            _fail(f"a list of {len(self.checks)} items", value)
        return _items(self.checks, value)

    def emit(self, code: _Code, var: str, depth: int) -> None:
        code.add(depth, f"if type({var}) is not list or len({var}) != {len(self.checks)}: raise _Unsure")
        items = [code.var() for _ in self.checks]
        code.add(depth, f"{', '.join(items)}, = {var}")
        for check, item in zip(self.checks, items):
            _emit(check, code, item, depth)


class record(Check):
    """An object: the ``required`` keys present, each declared field checked, any other key dropped
    (with ``others_kept``, kept unchecked: the top of a line, where copying the rest away cost 1 µs)."""

    def __init__(self, fields: Mapping[str, Callable[[Any], Any]], required: Collection[str] = (),
                 others_kept: bool = False) -> None:
        self._checks, self._required, self._others_kept = fields, required, others_kept
        self.fields = tuple(fields)

    def __call__(self, value: Any) -> dict[str, Any]:
        """The check that says what is wrong: the first bad field by its path."""
        if type(value) is not dict:
            _fail("an object", value)
        for name in self._required:
            if name not in value:
                raise BadField("is missing", name)
        kept = _checked(value, ((name, check) for name, check in self._checks.items() if name in value), str)
        return {**value, **kept} if self._others_kept else kept

    def quick(self, value: Any) -> dict[str, Any]:
        """What calling the check gives, sooner: ``fast`` first, the call only where it is unsure."""
        try:
            return self.fast(value)
        except _Unsure:
            return self(value)

    @functools.cached_property
    def fast(self) -> Callable[[Any], dict[str, Any]]:
        """The compiled check, made on first use: the call's answer for a good value, else ``_Unsure``."""
        code = _Code()
        code.add(0, f"def fast({(var := code.var())}):")
        code.add(1, "try:")
        self.emit(code, var, 2, copying=True)
        code.add(1, f"except ({code.name(BadField)}, KeyError): raise _Unsure from None")
        code.add(1, f"return {var}")
        return code.function()

    def emit(self, code: _Code, var: str, depth: int, copying: bool = False) -> None:
        """Where the record holds other keys or a field's record was copied, ``var`` is rebound to a copy of its
        declared fields at the top or in a record's field (``copying``); in a list, a row or a dict_of, unsure."""
        code.add(depth, f"if type({var}) is not dict: raise _Unsure")
        depth = self._emit_exact(code, var, depth)
        copied = self._emit_fields(code, var, depth)
        changed = [*([] if self._others_kept else [f"not {var}.keys() <= {code.name(frozenset(self.fields))}"]),
                   *(f"{item} is not {var}.get({name!r})" for name, item in copied)]
        if not changed:
            return
        code.add(depth, f"if {' or '.join(changed)}:")
        if not copying:
            code.add(depth + 1, "raise _Unsure")
            return
        copy = (f"dict({var})" if self._others_kept
                else f"{{key: {var}[key] for key in {code.name(self.fields)} if key in {var}}}")
        code.add(depth + 1, f"{var} = {copy}")
        for name, item in copied:
            code.add(depth + 1, f"if {name!r} in {var}: {var}[{name!r}] = {item}")

    def _emit_exact(self, code: _Code, var: str, depth: int) -> int:
        """For two or more plain fields, a first branch for an object of as many keys (every run of a line), read
        in one C call: the general test (in an ``else``, its depth given back) reads the keys twice."""
        checks = self._checks.values()
        inner = [check.check if isinstance(check, optional) else check for check in checks]
        if self._others_kept or len(checks) < 2 or any(isinstance(check, record) for check in inner):
            return depth
        items = [code.var() for _ in checks]
        code.add(depth, f"if len({var}) == {len(checks)}:")
        code.add(depth + 1, f"{', '.join(items)} = {code.name(operator.itemgetter(*self.fields))}({var})")
        for check, item in zip(checks, items):
            _emit(check, code, item, depth + 1)
        code.add(depth, "else:")
        return depth + 1

    def _emit_fields(self, code: _Code, var: str, depth: int) -> list[tuple[str, str]]:
        """The required keys' test, then each field's; gives (name, variable) of each field holding a record."""
        if self._required:
            code.add(depth, f"if not {code.name(frozenset(self._required))} <= {var}.keys(): raise _Unsure")
        copied = []
        for name, check in self._checks.items():
            item, inner, within = code.var(), check.check if isinstance(check, optional) else check, depth
            code.add(depth, f"{item} = {var}[{name!r}]" if name in self._required else f"{item} = {var}.get({name!r})")
            if name not in self._required and check is inner:
                code.add(depth, f"if {name!r} in {var}:")
                within += 1
            if not isinstance(inner, record):
                _emit(check, code, item, within)
                continue
            if check is not inner:
                code.add(within, f"if {item} is not None:")
                within += 1
            inner.emit(code, item, within, copying=True)
            copied.append((name, item))
        return copied


def _literal(text: str) -> dict[str, str]:
    """A literal ``ast.literal_eval`` reads without a warning (a bad escape warns on one Python, fails on another)."""
    if len(text) > MAX_LITERAL:
        raise BadField(f"is a literal of {len(text):,} characters (at most {MAX_LITERAL:,})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, Warning):
        raise BadField("is not a Python literal") from None
    return {"literal": text}


class _Swept(Check):
    """A swept value as ``params_to_json`` writes it: JSON's (inf, nan too), lists ``MAX_DEPTH`` deep, a literal."""

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if value is None or type(value) in _SCALARS:
            return value
        if type(value) is list:
            if depth >= MAX_DEPTH:
                raise BadField(f"is nested more than {MAX_DEPTH} levels deep")
            return _items(itertools.repeat(lambda item: self(item, depth + 1)), value)
        if type(value) is dict and list(value) == ["literal"] and type(value["literal"]) is str:
            return _literal(value["literal"])
        _fail('a JSON value or {"literal": "..."}', value)

    def emit(self, code: _Code, var: str, depth: int) -> None:
        """A scalar inline; a list or a literal through the check, for its error alone (the value is kept)."""
        code.add(depth, f"if {var} is not None and type({var}) not in {code.name(_SCALARS)}: {code.name(self)}({var})")


_swept = _Swept()


def _asked_clock(value: Any) -> Any:
    if value not in ASKED_CLOCKS:
        _fail(" or ".join(f'"{clock}"' for clock in ASKED_CLOCKS), value)
    return value


RUN = record({"host": SECONDS, "wall": SECONDS, "device": optional(SECONDS), "cpu_user": optional(SECONDS),
              "cpu_sys": optional(SECONDS), "batch": whole("a whole number, at least 1", least=1)},
             required=("host", "wall"))
ENV = record({"device": TEXT, "frameworks": dict_of(TEXT), "python": TEXT, "host": TEXT})
TASK = record({"stmt": TEXT, "label": optional(TEXT), "params": dict_of(_swept), "env": ENV,
               "threads": optional(whole("a whole number of threads, at least 1", least=1)),
               "clock": optional(_asked_clock)},
              required=("stmt", "label", "params", "env"))
HARNESS = record({"wall": SECONDS, "jitter": SECONDS, "device": optional(SECONDS)}, required=("wall", "jitter"))
RESULT_FIELDS: dict[str, Check] = {
    "task": optional(TASK), "cold": RUN, "warmup": list_of(RUN), "warm": list_of(RUN), "device": TEXT,
    "synchronized": list_of(TEXT), "notes": list_of(TEXT), "stopped": optional(TEXT), "extra_runs": list_of(TEXT),
    "harness": optional(HARNESS),
}
FAILED = record({"task": TASK, "error": TEXT}, required=("task", "error"))  # a sweep point that raised


@functools.lru_cache(maxsize=8)
def result_record(features: tuple[RecordKeeper, ...] = ()) -> record:
    """A saved result: its fields, and under "records" each feature's as it declares it (``schema``)."""
    # each check read on the class: a plain function, which an instance would bind
    records = {feature.name: optional(check) for feature in features if (check := type(feature).schema) is not None}
    fields = {**RESULT_FIELDS, "records": optional(record(records))}
    return record(fields, required=("cold", "warmup", "warm", "device"), others_kept=True)


def checked_line(data: dict[str, Any], features: Iterable[RecordKeeper] = ()) -> dict[str, Any]:
    """A line's point data (``Point.from_dict``'s input), checked: a result (``features``' records), or a failure."""
    return (result_record(tuple(features)) if "cold" in data else FAILED).quick(data)
