"""The interface every measurement feature implements, one module each in ``features/``.

A feature is what ``%cudatime`` measures or explains beyond the three clocks of each run: why
the cold run was slow, peak device memory, ``--profile``, ``--roofline``. It declares in one
place everything it adds: its flags (``options.Flag``), what it asks of one call
(``settings``), its part in the runs (``watch``: a ``runner.Watch``), the record it leaves on
the result (plain data, saved and loaded with it: ``to_json``/``from_json`` and ``schema``),
and its words in every view (text lines, findings, an HTML section, detail rows, table
columns, the extra runs it made).

The runner, the result, the store and the renderers loop over the features they are given
(``features.FEATURES`` by default, as ``backends.REGISTRY`` is for devices) and name none of
them: a new feature is its own module and one line in that list. A feature object holds no
state of its own; what lasts across cells (the probes) comes in through ``Call``.

A feature's words cannot sink a report: where one of its word methods raises, the view gets what
it shows for no record and one line saying what was not shown and why (``Feature.__init_subclass__``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any, ClassVar

from ..findings import Finding
from ..guard import failure_line

if TYPE_CHECKING:
    from ..explain import ProbeSet
    from ..options import Flag, Values
    from ..result import CudaTimeResult
    from ..runner import Watch


class Unavailable(Exception):
    """What a feature needs for this call is missing (torch not imported, say): the magic shows it
    as a one-line UsageError. The features raise it rather than IPython's own error, so that
    importing the package never imports IPython (7.34's loads its whole shell)."""


@dataclass(frozen=True)
class Call:
    """What a feature's watch may need of the cell being timed: its code, and the cold-run probes
    the magics keep across cells (a probe may listen for a whole session)."""

    source: str
    probes: ProbeSet


class Feature:
    """One measurement feature. Every method has a default that adds nothing, so a feature
    overrides only what it adds. ``record`` below is what its watch made for a result, or None:
    the feature was off for it, or the result comes from a file written before the feature
    existed; every word method must accept None."""

    name: ClassVar[str] = ""  # its record's key: ``r.<name>``, and its field in a saved line
    flags: ClassVar[tuple[Flag, ...]] = ()  # the options it declares
    # what a saved record may hold: a ``schema`` check, as a staticmethod (a plain function would bind)
    schema: ClassVar[staticmethod[[Any], Any] | None] = None
    section_title: ClassVar[str] = ""  # its collapsed section in the HTML report ("": none)
    section_class: ClassVar[str] = ""
    columns: ClassVar[tuple[str, ...]] = ()  # its columns in sweep and comparison tables

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each word method a feature defines is guarded (``_shown``): every view and table calls
        them, and none of those call sites needs to know."""
        super().__init_subclass__(**kwargs)
        for name, instead in INSTEAD.items():
            if name in cls.__dict__:
                setattr(cls, name, _shown(cls.__dict__[name], instead))

    def settings(self, values: Values) -> Any:
        """What this call asks of the feature, from the parsed flags; None: it is off."""
        return None

    def watch(self, settings: Any, call: Call) -> Watch | None:
        """Its part in one measurement (a fresh one per cell or sweep point), or None."""
        return None

    def to_json(self, record: Any) -> Any:
        """The record as JSON data for a saved line."""
        return None if record is None else record.to_dict()

    def from_json(self, data: Any) -> Any:
        """The record ``to_json`` wrote (already checked against ``schema``), or None."""
        return None

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
        """Its cells in a table row, one per ``columns``; shown where any row has a record."""
        return ()

    def table_fields(self, record: Any) -> dict[str, Any]:
        """Its columns in ``Results.to_pandas()``, where the row has a record."""
        return {}

    def extra_runs(self, record: Any) -> list[str]:
        """The runs it added out of the statistics, as the run counts name them ("1 profiled")."""
        return []


# What a view gets from a word method that raised, given the feature and the one line saying so.
INSTEAD: dict[str, Callable[[Feature, str], Any]] = {
    "text_lines": lambda feature, line: [line],
    "findings": lambda feature, line: [Finding("note", line)],
    "section_html": lambda feature, line: escape(line),
    "detail_rows": lambda feature, line: [(feature.name, line)],
    "cells": lambda feature, line: ("",) * len(feature.columns),
    "table_fields": lambda feature, line: {},
    "extra_runs": lambda feature, line: [],
}


def _shown(words: Callable[..., Any], instead: Callable[[Feature, str], Any]) -> Callable[..., Any]:
    """``words`` (a feature's word method), or where it raises, ``instead(feature, line)``."""
    @functools.wraps(words)
    def shown(feature: Feature, *args: Any) -> Any:
        try:
            return words(feature, *args)
        except Exception as error:  # a record this version cannot word: say so, keep the report
            return instead(feature, failure_line(f"{feature.name} not shown", error))

    return shown


def plain_record(kind: type, data: dict[str, Any] | None, rows: tuple[str, ...] = ()) -> Any:
    """A record of dataclass ``kind`` from its saved dict: its own fields only (``to_dict`` may add
    derived ones, such as the roofline's ridge), the fields in ``rows`` back to the tuples they were."""
    if data is None:
        return None
    names = {f.name for f in dataclasses.fields(kind)}
    values = {name: value for name, value in data.items() if name in names}
    for name in rows:
        values[name] = [tuple(row) for row in values[name]]
    return kind(**values)
