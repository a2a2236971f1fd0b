"""The interface every measurement feature implements, one module each in ``features/``.

A feature (why the cold run was slow, peak memory, ``--profile``, ``--roofline``) declares in one
place all it adds: flags, ``settings`` for one call, its part in the runs (``watch``), its record
(plain data, saved as it is, read back by ``from_json``, checked by ``schema``) and its words in every
view. The runner, the store and the renderers loop over the features they are given and name none,
so a new feature is one module and one line in ``FEATURES``. A feature holds no state; what lasts
across cells (the probes) comes through ``Call``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..measure.runner import Outcome, Watch
from ..results.result import RecordKeeper, Run, frozen_from

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from ..command.options import Flag, Values
    from ..measure.machine import Clock, Machine
    from .cold_causes.probes import ProbeSet

Record = TypeVar("Record", bound="DataclassInstance")  # a feature's record class (a dataclass)


class Unavailable(Exception):
    """What a feature needs for this call is missing (torch not imported, say): the magic shows it
    as a one-line UsageError. The features raise it rather than IPython's own error, so that
    importing the package never imports IPython (7.34's loads its whole shell)."""


@dataclass(frozen=True)
class Call:
    """What a feature's watch may need of the cell being timed: its code, and what the magics keep
    across cells: the cold-run probes (a probe may listen for a whole session), the machine the CPU
    facts are read from (``machine.Machine``, None: none read) and the clock the runs are timed on."""

    source: str
    probes: ProbeSet
    machine: Machine | None = None
    clock: Clock | None = None


class Feature(RecordKeeper):
    """One measurement feature: the keeper of its record (``result.RecordKeeper``), with its flags and its
    part in the runs. Every method has a default that adds nothing: a feature overrides what it adds."""

    flags: ClassVar[tuple[Flag, ...]] = ()  # the options it declares
    # True: it watches every round of an --interleave point, whose records its ``merged`` adds up (the
    # CPU facts); False: the point's first round only, whose record the point keeps (a profile, a count)
    every_round: ClassVar[bool] = False
    # its record's fields saved as lists of rows, tuples again when read back (``plain_record``)
    record_rows: ClassVar[tuple[str, ...]] = ()

    def settings(self, values: Values) -> Any:
        """What this call asks of the feature, from the parsed flags; None: it is off. A feature with
        no flags has no way to be asked: it is always on (True)."""
        return None if self.flags else True

    def watch(self, settings: Any, call: Call) -> Watch | None:
        """Its part in one measurement (a fresh one per cell or sweep point), or None."""
        return None

    def from_json(self, data: Any) -> Any:
        """Its record, of the first class in ``record_checks``, from what ``record_json`` wrote (``plain_record``)."""
        return plain_record(self.record_checks[0][0], data, self.record_rows) if self.record_checks else None


class OneRunWatch(Watch):
    """``tool`` (a context manager: a profiler, an op counter) around the cold run, or, with an ``extra``
    name, around one more run after the warm runs; its record is ``summary(that run, outcome)``, None
    where that run was never made. ``cell`` wraps the cell as that run calls it (``Watch.mark``)."""

    def __init__(self, tool: contextlib.AbstractContextManager[Any], extra: str | None,
                 summary: Callable[[Run, Outcome], Any],
                 cell: Callable[[Callable[[], Any]], Callable[[], Any]] | None = None) -> None:
        self._tool, self.extra, self._summary, self._cell = tool, extra, summary, cell

    def around(self, run: str) -> contextlib.AbstractContextManager[Any] | None:
        return self._tool if run == ("extra" if self.extra else "cold") else None

    def mark(self, run: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        return fn if self._cell is None else self._cell(fn)

    def record(self, outcome: Outcome) -> Any:
        run = outcome.extra if self.extra else outcome.cold
        return None if run is None else self._summary(run, outcome)


def plain_record(kind: type[Record], data: dict[str, Any] | None, rows: tuple[str, ...] = ()) -> Record | None:
    """A record of dataclass ``kind`` from its saved dict: its own fields only (``to_dict`` may add
    derived ones, such as the roofline's ridge), the fields in ``rows`` back to the tuples they were."""
    if data is None:
        return None
    names = _field_names(kind)
    values = {name: value for name, value in data.items() if name in names}
    for name in rows:
        values[name] = [tuple(row) for row in values[name]]
    # filled in one go where the keys are the fields in order, as ``to_dict`` wrote them (``frozen_from``:
    # 2 of a short line's 50 µs to load by keyword); a record need not be hashable for that
    return frozen_from(kind, values)  # type: ignore[type-var]


@functools.cache
def _field_names(kind: type) -> frozenset[str]:
    return frozenset(item.name for item in dataclasses.fields(kind))
