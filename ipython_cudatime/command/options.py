"""The ``%cudatime`` command line: every flag declared once, parsed into a ``Spec``.

A ``Flag`` holds all there is to know about one option; the help (``usage``), the parser (``parse``) and
the checks are made from those declarations (the core flags below, each feature's own passed in). Every
rule is checked before setup code or the cell runs; a broken one is a one-line ``OptionError``. Parsed by
hand, not with argparse, so that the statement after the options keeps its exact spacing and quotes,
and ``--sweep n=[1, 2]`` is one value (``top_level``). Text in, plain values out: no results, no IPython.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import difflib
import itertools
import keyword
import math
import os
import re
import textwrap
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Generic, Protocol, TypeVar

from ..measure.machine import usable_cores
from ..measure.runner import DEFAULT_BUDGET, MAX_RUNS, MIN_RUNS, SIZED, Plan
from ..units import inert, symbol

HELP = "`%cudatime?` for help"  # the end of every UsageError
THREADS_PER_CORE = 4  # --threads N: at most this many per usable core
MAX_GRID = 100  # points; a larger grid needs --yes-large-grid (it may run for a long time)
MAX_N = 100_000  # -n and -w: runs per call; more is a mistaken zero or a loop better timed in one cell


class OptionError(ValueError):
    """A bad command line; the magic turns it into a one-line UsageError."""


class Optioned(Protocol):
    """What the parser needs of a feature (the flags it adds, what it asks of one call), declared here
    so that the command line never knows the features above it."""

    @property
    def flags(self) -> tuple[Flag, ...]: ...

    def settings(self, values: Values) -> Any: ...


F = TypeVar("F", bound=Optioned)  # the features a Spec carries, as the magics passed them in


# The parsed flags by destination (``values.runs``), defaults included: for the rules and the features'
# ``settings`` only (what travels on is the ``Spec``).
Values = SimpleNamespace

Rule = Callable[[Values], None]  # raises OptionError when the flags given break it


@dataclass(frozen=True)
class Flag:
    """One option, declared once: its ``names``, short first (``("-n", "--runs")``); ``dest``, where its
    value goes in ``Values``; its ``help`` in ``%cudatime?``; ``metavar``, the value's name there (``N``),
    or None for a switch, which takes none and sets ``const``; ``convert(name, text)``, which reads a value,
    raising OptionError for a bad one; the ``default`` ``dest`` holds when no flag sets it; ``repeat``: each
    use appends to a list (``--sweep``); the ``rules`` between options it takes part in, run once all are read."""

    names: tuple[str, ...]
    dest: str
    help: str
    metavar: str | None = None
    convert: Callable[[str, str], Any] | None = None
    const: Any = True
    default: Any = None
    repeat: bool = False
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class Spec(Generic[F]):
    """What one ``%cudatime`` line asks for, built once by ``parse`` and passed down (nothing below the
    magic sees the flags): the runs, the (feature, settings) pairs, the sweep, how the result is shown and
    handed back (``-q``, ``--text``, ``-o``, ``-v NAME``), what to record."""

    plan: Plan
    features: tuple[tuple[F, Any], ...] = ()
    sweeps: tuple[tuple[str, list[Any]], ...] = ()
    clock: str | None = None  # -t "wall", -c "cpu"; None: the device clock where it saw the work
    quiet: bool = False
    text: bool = False
    output: bool = False
    var: str | None = None
    label: str | None = None
    save: str | None = None
    threads: int | None = None
    raise_error: bool = True
    stop_on_error: bool = False
    check: bool = False
    interleave: bool = False  # a sweep's points in rounds of one warm sample each (-n N rounds)
    timeit: bool = False  # as %timeit: the cell's names are put back afterwards, and its value is not shown


def _whole(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"{name} expects a whole number, got {text!r}") from None
    if value < 0:
        raise OptionError(f"{name} expects a number {symbol('≥')} 0, got {value}")
    return value


def count(name: str, text: str) -> int:
    value = _whole(name, text)
    if value > MAX_N:
        raise OptionError(f"{name} expects at most {MAX_N:,} runs per call, got {value:,}")
    return value


def _budget(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise OptionError(f"{name} expects seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(f"{name} expects a positive number of seconds, got {text}")
    return value


IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "_", "__", "___", "_i", "_ii", "_iii",
                           "_ih", "_oh", "_dh"})  # what IPython keeps in the user's namespace


def _own_name(flag: str, text: str, advice: str) -> str:
    """A variable name of the user's: not a keyword, nor a builtin's or IPython's (``Out``, ``_i3``), which
    binding it would shadow, breaking later cells (``-v``, and ``--sweep``'s NAME while the sweep runs)."""
    if not text.isidentifier():
        raise OptionError(f"{flag} expects a variable name, got {text!r}")
    if keyword.iskeyword(text):
        taken = "a Python keyword"
    elif hasattr(builtins, text) or text == "__builtins__":
        taken = "a builtin"
    elif text in IPYTHON_NAMES or re.fullmatch(r"_i?\d+", text):
        taken = "one of IPython's own names"
    else:
        return text
    raise OptionError(f"{flag} {text}: {text!r} is {taken}; {advice}")


def _unquoted(text: str) -> str:
    """A value may be quoted (-l "loop"); the quotes are not part of it."""
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def _label(name: str, text: str) -> str:
    """A name, with spaces between its words when quoted (-l 'bf16 fused', as ``%cudatime_compare``
    names it again): no quotes, no other whitespace, no space at either end (a table's row would hide it)."""
    text = _unquoted(text)
    if text.strip() != text or any((c.isspace() and c != " ") or c in "'\"" for c in text) or not text:
        raise OptionError(f"{name} expects a name without quotes, tabs or a space at either end (quote one "
                          f"with spaces: -l 'bf16 fused'), got {text!r}")
    return text


def writable_file(example: str) -> Callable[[str, str], str]:
    """A reader of a file to write, as an absolute path, checked before anything runs: in a folder that
    exists, not a folder itself (writing would fail, or put a file in its place); ``example`` for messages."""
    def read(name: str, text: str) -> str:
        given = _unquoted(text)
        if not given:
            raise OptionError(f"{name} expects a file name")
        if "\0" in given:  # no system takes one: open() would raise ValueError
            raise OptionError(f"{name} expects a file name without a NUL byte, got {given!r}")
        path = os.path.abspath(os.path.expanduser(given))
        if not os.path.isdir(os.path.dirname(path)):
            raise OptionError(f"{name} {text}: no such folder to write it in")
        if os.path.isdir(path):
            raise OptionError(f"{name} {text} is a folder: name a file in it, such as {os.path.join(given, example)}")
        return path
    return read


def _threads(name: str, text: str) -> int:
    """At most THREADS_PER_CORE per usable core: more only oversubscribe, and far more ends the process (libgomp)."""
    value, cores = _whole(name, text), usable_cores()
    if value == 0:
        raise OptionError(f"{name} expects a number of threads {symbol('≥')} 1, got 0")
    if value > THREADS_PER_CORE * cores:
        raise OptionError(f"{name} expects at most {THREADS_PER_CORE * cores:,} threads ({THREADS_PER_CORE} "
                          f"per core this process may use: {cores}), got {value:,}")
    return value


def _samples(name: str, text: str) -> int:
    value = count(name, text)
    if value == 0:
        raise OptionError(f"{name} expects a number of samples {symbol('≥')} 1, got 0 (-n 0 runs the cell once in all)")
    return value


def _one_run_no_warmup(values: Values) -> None:
    for flag, given in (("-w", values.warmup), ("-r", values.samples)):
        if values.runs == 0 and given:
            raise OptionError(f"-n 0 runs the cell once in all: it cannot be combined with {flag}")


def _one_clock(values: Values) -> None:
    if values.wall_clock and values.cpu_clock:
        raise OptionError("-t and -c choose the clock the statistics use: give one of them")


def _samples_of_runs(values: Values) -> None:
    if values.interleave:
        raise OptionError("--interleave makes -n N rounds of one warm sample of each point: it cannot be combined "
                          "with -r")


def _needs_sweep(flag: str) -> Rule:
    def rule(values: Values) -> None:
        if values.sweeps == []:
            raise OptionError(f"{flag} applies to sweeps: use it with --sweep NAME=V1,V2")
    return rule


def _rounds(values: Values) -> None:
    if not values.runs:
        raise OptionError("--interleave makes -n N rounds of one warm sample of each point: add -n 10 or more")


def _sweep_names_once(values: Values) -> None:
    names = [name for name, _ in values.sweeps]
    if repeated := sorted({name for name in names if names.count(name) > 1}):
        raise OptionError(f"--sweep {repeated[0]} is given twice: list all its values in one --sweep")


def _grid_size(values: Values) -> None:
    kept = 1 + (values.warmup or 0) + (MAX_RUNS if values.runs is None else values.runs)  # runs a point keeps
    size = grid_size(values.sweeps)
    largest = max(MAX_GRID, _available_memory() // 2 // (RUN_BYTES * kept))  # points whose results fit
    if size > largest:  # whatever the flag: the results alone would exhaust memory
        raise OptionError(f"the sweep grid has {size:,} points: the results of more than {largest:,} would not "
                          "fit in half the memory available now; sweep fewer values")
    if size > MAX_GRID and not values.large_grid:
        raise OptionError(f"the sweep grid has {size:,} points (more than {MAX_GRID}): "
                          "add --yes-large-grid to time them all")


CORE_FLAGS = (
    Flag(("-n", "--runs"), "runs", "make exactly N warm runs (0: the cold run only, one run in all, which is %time "
         "with synchronization), even when the cell changes state in place; with -r R: R samples of N runs each, "
         "as %timeit -r R -n N (%timeit's -n N alone means 7 samples of N: write -r 7 -n N); "
         f"at most {MAX_N:,}", "N", count, rules=(_one_run_no_warmup,)),
    Flag(("-r", "--repeat"), "samples", "make exactly R warm samples, as %timeit -r R does, even when the cell "
         "changes state in place: of N runs each with -n N (in one timed loop), else of as many runs as make "
         f"a sample long next to the harness's own cost, as %timeit sizes them; at most {MAX_N:,}", "R", _samples,
         rules=(_one_run_no_warmup, _samples_of_runs)),
    Flag(("-w", "--warmup"), "warmup", "W warm-up runs between the cold run and the warm runs (default: 1, or 0 "
         f"when the cold run alone took longer than the budget; not with -n 0; at most {MAX_N:,})", "W", count,
         rules=(_one_run_no_warmup,)),
    Flag(("-b", "--budget"), "budget", "without -n: make warm runs until S seconds have passed since the cold run "
         f"ended (default {DEFAULT_BUDGET:g})", "S", _budget, default=DEFAULT_BUDGET),
    Flag(("-t",), "wall_clock", "the statistics on the wall clock (synchronized), as %timeit -t times wall time, even "
         "where CUDA events timed every run", default=False, rules=(_one_clock,)),
    Flag(("-c",), "cpu_clock", "the statistics on the process's CPU time (user + system), as %timeit -c does on Unix: "
         "what the GPU does is not in it", default=False, rules=(_one_clock,)),
    Flag(("-o",), "output", "also return the result object (instead of the cell's value), as %timeit -o does: "
         "r = %cudatime -o stmt", default=False),
    Flag(("-v", "--var"), "var", "also store the result object in the variable NAME", "NAME",
         lambda name, text: _own_name(name, text, "store the result in a name of your own")),
    Flag(("-q", "--quiet"), "quiet", "show nothing (use with -o or -v)", default=False),
    Flag(("--text",), "text", "show the text report only, even in a notebook", default=False),
    Flag(("--timeit",), "timeit", "time the statement as %timeit does: the names it binds get their old values "
         "back afterwards (counts, edges = np.histogram(x) leaves counts as it was) and its value is not shown",
         default=False),
    Flag(("--threads",), "threads", "time with N intra-op threads in torch and in the BLAS pools threadpoolctl "
         "sees (as torch's Timer(num_threads=) does: --threads 1 for comparisons on a shared CPU); your settings "
         "come back afterwards", "N", _threads),
    Flag(("--no-raise-error",), "raise_error", "print the traceback of an error in the cell and go on, instead of "
         "raising it (which stops Run All)", const=False, default=True),
    Flag(("--sweep",), "sweeps", "time the cell once per value, with NAME bound to it (values are Python "
         "literals, e.g. [1,2],[3,4] or 'a, b', split at commas outside quotes and brackets; a plain word such "
         "as cuda:0 or #ff0000 is a string; in quotes a backslash escapes, as in Python; repeat --sweep for a "
         "grid). NAME gets its old value back afterwards. -o returns a sweep result with .rows, .to_dict() and "
         ".to_pandas()", "NAME=V1,V2", lambda _, text: parse_sweep(text), repeat=True,
         rules=(_sweep_names_once, _grid_size)),
    Flag(("--yes-large-grid",), "large_grid", f"allow a sweep grid of more than {MAX_GRID} points", default=False),
    Flag(("--stop-on-error",), "stop_on_error", "stop a sweep at the first point that fails and raise its error "
         "(default: record the error there and go on)", default=False, rules=(_needs_sweep("--stop-on-error"),)),
    Flag(("--interleave",), "interleave", "time a sweep's points in -n N rounds, one warm sample of each point per "
         "round in a rotating order (for a cell of a few microseconds a batch of runs, sized in the first round as "
         "without -n), so that slow drift (a neighbour that starts mid-sweep, a clock that ramps) hits every point "
         "alike instead of reading as a difference", default=False,
         rules=(_needs_sweep("--interleave"), _rounds)),
    Flag(("--check",), "check", "compare the cell's final value across a sweep's points (allclose, NaN equal to "
         "NaN), report the largest difference and what could not be compared", default=False,
         rules=(_needs_sweep("--check"),)),
    Flag(("-l", "--label"), "label", "record the result under NAME for %cudatime_compare (with --sweep, each "
         "point as NAME[n=256, ...])", "NAME", _label),
    Flag(("--save",), "save", "append the result (with --sweep, each point) to FILE as one JSON line, with what "
         "was timed and where, for %cudatime_compare --load FILE in another kernel or on another machine",
         "FILE", writable_file("results.jsonl")),
)


SUMMARY = """Time GPU code where you would write %time: synchronized, the cold first run kept
apart from the warm runs (whose median is the answer), and what it saw explained.
Usage: %cudatime [options] statement  or, for a whole cell: %%cudatime [options] [setup]"""


DETAILS = f"""Run 1 is the cold run: it pays for one-time setup (CUDA context, library
handles, memory pool growth, compilation) and is reported on its own, never
mixed into the statistics. Then come untimed-for-statistics warm-up runs,
then the warm runs, whose median is the answer. Each run is timed with three
clocks: host (until Python got control back: what %time prints), wall
(synchronized: every active device drained before and after) and device
(CUDA events on the current stream, where there are any). The statistics use
the device clock where every run has one and it covers at least half of the
wall time (events miss other streams), else the wall clock.

Each later run starts from the state the cold run started from: the names
the cell binds or deletes (x += 1, arr = arr * 2, del x) are put back first,
so the notebook is left as one run leaves it. A cell that changes objects in
place (x.append(..), t.add_(..), optimizer.step(), += on a list or a tensor,
%cd, pyplot drawing) runs once only, and the report says why; -n N forces N
runs anyway (the state then reflects every run). What later runs print is
discarded; the figures and widgets they make are closed. Every report states
how many times the cell ran.

How many runs, by default: one cold run, one warm-up run, then warm runs until
the budget is spent: at least {MIN_RUNS} when they fit in one more budget, at
least 1 always, at most {MAX_RUNS}. A 1 ms cell thus runs about 1,000 times in
one second; a cell slower than the budget is run twice in all (cold + one warm
run): a 30 s cell costs 60 s, never minutes more. Use -n to choose yourself.
A run shorter than 100 times the harness's own cost (measured each call on
null runs) is timed as timeit does, k runs per sample in one loop, and the
report says "each sample: k runs"; -n N always means N runs of one each.

%cudatime_compare [labels...] [--load FILE [FILE...]] shows recorded results
side by side, with results saved by --save beside them (--clear empties the
record); %cudatime_auto on|off times every following cell once, synchronized,
with a one-line summary.

With %%cudatime, code after the options on the first line is setup: it runs
once, untimed, before the cold run (with --sweep: once per point, after the
swept names are bound). What the cell prints appears once (from
the cold run); a final expression's value is returned as with %time, and a
trailing ';' hides it. {{var}} is not expanded.

Why the cold run was slow is always checked (cheaply): CUDA context creation,
memory pool growth, the cuBLAS workspace, torch.compile and JAX compilation,
cuDNN autotuning, precision settings and, with nvidia-ml-py, GPU clocks.
Peak device memory (torch CUDA) is always read too, without resetting torch's
peak counter (result.memory).

In a notebook the result is an HTML report (a one-line answer, a bar chart of
every run as an SVG image, collapsible sections) published with its text
version, so saved notebooks and terminals show it too; while a slow cell is
measured, a progress widget shows the run under way, and the report replaces it.
"""


HELP_COLUMN, HELP_WIDTH = 24, 80


def all_flags(features: Iterable[Optioned]) -> tuple[Flag, ...]:
    """The core flags, then each feature's, in the features' order."""
    return CORE_FLAGS + tuple(flag for feature in features for flag in feature.flags)


def _help_entry(flag: Flag) -> str:
    """``  -n N, --runs N        make exactly ...``, wrapped; a long spelling gets a line of its own."""
    spelled = "  " + ", ".join(f"{name} {flag.metavar}" if flag.metavar else name for name in flag.names)
    lines = [" " * HELP_COLUMN + line for line in textwrap.wrap(flag.help, HELP_WIDTH - HELP_COLUMN)]
    short = len(spelled) < HELP_COLUMN - 1  # it fits before its help's first line
    return "\n".join([spelled.ljust(HELP_COLUMN) + lines[0][HELP_COLUMN:], *lines[1:]] if short else [spelled, *lines])


def usage(features: Iterable[Optioned]) -> str:
    """``%cudatime?``: the summary, every flag from its declaration, then how it works."""
    entries = [_help_entry(flag) for flag in all_flags(features)]
    entries.append("  --".ljust(HELP_COLUMN) + "end of options (for a statement that starts with -)")
    return f"{SUMMARY}\n\nOptions:\n" + "\n".join(entries) + "\n\n" + DETAILS


_OPTION = re.compile(r"--?[A-Za-z]")


def _split_flag(token: str, table: dict[str, Flag]) -> tuple[str, str | None, str | None]:
    """``--runs=5`` → (--runs, 5); ``-n5`` → (-n, 5); ``-oq`` → (-o, None) then ``-q`` pending."""
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        return name, (value if eq else None), None
    name, rest = token[:2], token[2:]
    if not rest or (name in table and table[name].metavar is not None):
        return name, rest or None, None
    return name, None, "-" + rest


def _token(line: str, pos: int) -> tuple[str, int] | None:
    """The next whitespace-separated token from ``pos`` as (token, end), or None at the end; spaces inside
    quotes or brackets do not end one: ``--sweep s='a b',c`` and ``--sweep n=[1, 2]`` are one token each."""
    start = len(line) - len(line[pos:].lstrip())
    try:
        end = next((start + index for index, char in top_level(line[start:]) if char.isspace()), len(line))
    except ValueError:  # a quote or bracket left open or closed twice: up to the next space, for its option to refuse
        end = next((index for index in range(start, len(line)) if line[index].isspace()), len(line))
    return (line[start:end], end) if end > start else None


# %timeit's options that take a value where the same spelling here is a switch, and what the value meant
TIMEIT_VALUES = {"-p": "-p P (the digits shown) has no counterpart: figures show 3 significant digits, each "
                       "median with its interval"}


def _timeit_value(name: str, flag: Flag, pending: str | None, rest: str) -> None:
    """``-p 3 -n 5 stmt``: %timeit's value after a switch of ours, refused rather than read as the statement: a
    number glued to the switch (``-p3``), or one that starts no statement Python reads (``-p 1 + 1`` profiles)."""
    words = rest.split(maxsplit=1)
    number = pending[1:] if pending else words[0] if words else ""
    if name not in TIMEIT_VALUES or not number.isdigit():
        return
    if pending is None:
        with contextlib.suppress(SyntaxError, ValueError):
            compile(rest.strip(), "<statement>", "exec")
            return
    raise OptionError(f"{name} {number}: here {name} is {flag.names[-1]}, a switch; %timeit's {TIMEIT_VALUES[name]}")


def _read(line: str, flags: Sequence[Flag]) -> tuple[str, Values, list[Flag]]:
    """One pass over a command line, flags into ``Values`` until the statement starts: (the rest of the
    line, verbatim; the values; the flags given, in order)."""
    table = {name: flag for flag in flags for name in flag.names}
    values = {flag.dest: [] if flag.repeat else flag.default for flag in flags}
    given: list[Flag] = []
    pos = 0
    while (found := _token(line, pos)) is not None and (found[0] == "--" or _OPTION.match(found[0])):
        token: str | None
        token, pos = found
        if token == "--":
            break
        while token:
            name, value, token = _split_flag(token, table)
            if name not in table:  # the closest declared spelling, where one is close
                close = difflib.get_close_matches(name, table, n=1)
                raise OptionError(f"unknown option {name}; did you mean {close[0]}?" if close else
                                  f"unknown option {name} (put -- before a statement that starts with -)")
            flag = table[name]
            given.append(flag)
            if flag.metavar is None:  # a switch
                if value is not None:
                    raise OptionError(f"{name} takes no value")
                _timeit_value(name, flag, token, line[pos:])
                values[flag.dest] = flag.const
                continue
            if value is None:
                if (found := _token(line, pos)) is None:
                    raise OptionError(f"{name} needs a value")
                value, pos = found
            converted = flag.convert(name, value) if flag.convert is not None else value
            values[flag.dest] = [*values[flag.dest], converted] if flag.repeat else converted
    return line[pos:].strip(), Values(**values), given


def parse(line: str, features: Sequence[F]) -> tuple[Spec[F], str]:
    """(the ``Spec`` ``line`` asks for, the rest of the line, verbatim), every rule checked."""
    rest, values, given = _read(line, all_flags(features))
    for rule in dict.fromkeys(rule for flag in given for rule in flag.rules):  # each rule once
        rule(values)
    chosen = tuple((feature, settings) for feature in features
                   if (settings := feature.settings(values)) is not None)
    plan = Plan(runs=values.runs, warmup=values.warmup, budget=values.budget)
    if values.samples is not None:  # -r R [-n N]: R samples, of N runs each or as many as make one long enough
        plan = Plan(values.samples, values.warmup, values.budget, SIZED if values.runs is None else values.runs)
    clock = "cpu" if values.cpu_clock else "wall" if values.wall_clock else None
    return Spec(plan, chosen, tuple(values.sweeps), clock, values.quiet, values.text, values.output, values.var,
                values.label, values.save, values.threads, values.raise_error, values.stop_on_error, values.check,
                values.interleave, values.timeit), rest


RUN_BYTES = 256  # what a result keeps per run, rounded up (about 190 bytes, measured on 10,000 runs)
FREE_MEMORY_UNKNOWN = 4 << 30  # bytes, where the system does not say
Sweeps = Sequence[tuple[str, Sequence[Any]]]  # (name, its values) per --sweep, as ``parse_sweep`` gives them
_CLOSING = {"(": ")", "[": "]", "{": "}"}


def top_level(text: str) -> Iterator[tuple[int, str]]:
    """Yield (index, character) for each character of ``text`` outside quotes and brackets; ValueError for a
    bracket closed that was not open, or one left open. Not left to ``tokenize``, whose rules for quotes,
    backslashes and ``#`` changed in Python 3.12 (PEP 701): here ``#`` is a character like any other."""
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


def _value(name: str, text: str) -> Any:
    """A Python literal, else a plain word (``cpu``, ``cuda:0``, ``#ff0000``) as a string; with a quote in
    it, a literal, or a quoting mistake would be a string that keeps the quotes. Warnings are errors, so
    that ``'\\d'`` (an invalid escape, a warning that differs between Pythons) fails alike on each."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, Warning):
        if "'" in text or '"' in text:
            raise OptionError(f"--sweep {name}: {inert(text)} is not a Python literal (a value with quotes must be "
                              "one; a backslash in a string is written \\\\)") from None
        return text


def parse_sweep(spec: str) -> tuple[str, list[Any]]:
    """``NAME=V1,V2,...`` → (NAME, [values]): split at the commas outside brackets and quotes (``[1,2],[3,4]``
    → ``[1,2]``, ``[3,4]``), each a Python literal, else a string."""
    name, eq, values = spec.partition("=")
    if not eq or not values.strip():
        raise OptionError(f"--sweep expects NAME=V1,V2,..., got {spec!r}")
    name = _own_name("--sweep", name.strip(), "sweep a name of your own")
    try:
        cuts = [-1, *(index for index, char in top_level(values) if char == ","), len(values)]
    except ValueError:
        raise OptionError(f"--sweep {name}: unbalanced quotes or brackets in {values!r}") from None
    texts = [values[start + 1:end].strip() for start, end in zip(cuts, cuts[1:])]
    if "" in texts:
        raise OptionError(f"--sweep {name}: empty value in {values!r}")
    return name, [_value(name, text) for text in texts]


def grid_size(sweeps: Sweeps) -> int:
    """Computed without building the grid: one too large for memory is refused before it exists."""
    return math.prod(len(values) for _, values in sweeps)


def _available_memory() -> int:
    """Bytes the system could give now: Linux's MemAvailable (with the caches it can drop), else free pages."""
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # in kB
    with contextlib.suppress(AttributeError, OSError, ValueError):  # no such sysconf name here (macOS, Windows)
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return FREE_MEMORY_UNKNOWN


def grid(sweeps: Sweeps) -> list[dict[str, Any]]:
    """The product of the sweeps, in order, as a list of {name: value} dicts."""
    names = [name for name, _ in sweeps]
    return [dict(zip(names, combo)) for combo in itertools.product(*(values for _, values in sweeps))]
