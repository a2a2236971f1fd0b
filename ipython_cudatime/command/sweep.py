"""The grammar of ``--sweep NAME=V1,V2``: a value list split at commas outside quotes and brackets
(the tokenizer ``top_level``, which ``options`` also reads the command line with), each value a
Python literal or a plain word, names the user may sweep, and a grid's size computed without
building it (``grid_size``, ``largest_grid``), so that a grid too large for memory is refused
before it exists. Text in, plain values out: no results, no IPython."""

from __future__ import annotations

import ast
import builtins
import itertools
import keyword
import math
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ..units import inert

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
