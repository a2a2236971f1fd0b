"""The ``%cudatime`` command line: options first, then the statement (or setup code).

Parsed by hand rather than with getopt so that the statement after the options
keeps its exact spacing and quotes.
"""

import keyword
import math
import os
import re
from dataclasses import dataclass, field

from .compare import MAX_GRID, grid_size, parse_sweep, top_level
from .runner import DEFAULT_BUDGET, MAX_RUNS, MIN_RUNS
from .units import symbol

MAX_N = 100_000  # -n and -w: runs per call; more is a mistaken zero or a loop better timed in one cell

USAGE = f"""Time GPU code where you would write %time: synchronized, the cold first run kept
apart from the warm runs (whose median is the answer), and what it saw explained.
Usage: %cudatime [options] statement  or, for a whole cell: %%cudatime [options] [setup]

Options:
  -n N, --runs N        make exactly N warm runs (0: the cold run only, one run
                        in all, which is %time with synchronization), even
                        when the cell changes state in place; at most {MAX_N:,}
  -w W, --warmup W      W warm-up runs between the cold run and the warm runs
                        (default: 1, or 0 when the cold run alone took longer
                        than the budget; not with -n 0; at most {MAX_N:,})
  -b S, --budget S      without -n: make warm runs until S seconds have passed
                        since the cold run ended (default {DEFAULT_BUDGET:g})
  -o                    also return the result object (instead of the cell's
                        value), as %timeit -o does: r = %cudatime -o stmt
  -v NAME, --var NAME   also store the result object in the variable NAME
  -q, --quiet           show nothing (use with -o or -v)
  --text                show the text report only, even in a notebook
  -p, --profile         one more run, after the warm runs, under torch.profiler:
                        kernels (or, on the CPU, operator calls) per run, GPU
                        busy fraction, top kernels and a verdict such as
                        "launch-bound". Timed runs are not affected.
  --profile-cold        profile the cold run instead (its time is then inflated)
  --trace FILE          keep the profiled run's Chrome trace in FILE (.json, or
                        .json.gz compressed; a file, never a folder) for
                        Perfetto or chrome://tracing; implies -p. ipython_cudatime.profile_trace(FILE) reads it
                        back. -p alone keeps no file
  --roofline            one more run, after the warm runs, counting PyTorch ops'
                        FLOPs (torch's FlopCounterMode) and bytes (each op's
                        inputs and outputs: a lower bound on traffic): FLOP/s
                        and bytes/s over the warm median, against the GPU's
                        datasheet peak, and a compute- or memory-bound verdict.
                        Only PyTorch ops are counted. Timed runs are not affected.
  --peak FLOPS[,BYTES_PER_S]
                        the peaks to compare with (implies --roofline), e.g.
                        --peak 989e12,4.8e12 or --peak 989T,4.8T; without it the
                        table of common GPUs is used (none on the CPU)
  --threads N           time with N intra-op threads in torch and in the BLAS
                        pools threadpoolctl sees (as torch's Timer(num_threads=)
                        does: --threads 1 for comparisons on a shared CPU); your
                        settings come back afterwards
  --no-raise-error      print the traceback of an error in the cell and go on,
                        instead of raising it (which stops Run All)
  --sweep NAME=V1,V2    time the cell once per value, with NAME bound to it
                        (values are Python literals, e.g. [1,2],[3,4] or
                        'a, b', split at commas outside quotes and brackets;
                        a plain word such as cuda:0 or #ff0000 is a string; in
                        quotes a backslash escapes, as in Python; repeat
                        --sweep for a grid). NAME gets its old value back afterwards. -o
                        returns a sweep result with .rows, .to_dict() and
                        .to_pandas()
  --yes-large-grid      allow a sweep grid of more than {MAX_GRID} points
  --stop-on-error       stop a sweep at the first point that fails and raise
                        its error (default: record the error there and go on)
  --check               compare the cell's final value across a sweep's points
                        (allclose, NaN equal to NaN), report the largest
                        difference and what could not be compared
  -l NAME, --label NAME record the result under NAME for %cudatime_compare
                        (with --sweep, each point as NAME[n=256, ...])
  --save FILE           append the result (with --sweep, each point) to FILE as
                        one JSON line, with what was timed and where, for
                        %cudatime_compare --load FILE in another kernel or on
                        another machine
  --                    end of options (for a statement that starts with -)

Run 1 is the cold run: it pays for one-time setup (CUDA context, library
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

In a notebook the result is a widget (one-line answer, a bar chart of every
run, details), published together with an HTML and a text version, so saved
notebooks and terminals show it too.
"""

_OPTION = re.compile(r"--?[A-Za-z]")
_SPACE = re.compile(r"\s*")
_WORD = re.compile(r"\S*")

# name -> (destination, takes a value, the value a flag sets)
_SPEC = {
    "-n": ("runs", True, None), "--runs": ("runs", True, None),
    "-w": ("warmup", True, None), "--warmup": ("warmup", True, None),
    "-b": ("budget", True, None), "--budget": ("budget", True, None),
    "-v": ("var", True, None), "--var": ("var", True, None),
    "-o": ("output", False, True),
    "-q": ("quiet", False, True), "--quiet": ("quiet", False, True),
    "--text": ("text", False, True),
    "-p": ("profile", False, "warm"), "--profile": ("profile", False, "warm"),
    "--profile-cold": ("profile", False, "cold"),
    "--trace": ("trace", True, None),
    "--sweep": ("sweeps", True, None),
    "--stop-on-error": ("stop_on_error", False, True),
    "--check": ("check", False, True),
    "--no-raise-error": ("raise_error", False, False),
    "--yes-large-grid": ("large_grid", False, True),
    "-l": ("label", True, None), "--label": ("label", True, None),
    "--roofline": ("roofline", False, True),
    "--peak": ("peak", True, None),
    "--save": ("save", True, None),
    "--threads": ("threads", True, None),
}


class OptionError(ValueError):
    """A bad command line; the magic turns it into a one-line UsageError."""


@dataclass
class Options:
    runs: int = None
    warmup: int = None
    budget: float = DEFAULT_BUDGET
    var: str = None
    output: bool = False
    quiet: bool = False
    text: bool = False
    profile: str = None
    trace: str = None
    sweeps: list = field(default_factory=list)  # (name, values) per --sweep, in order
    stop_on_error: bool = False
    check: bool = False
    label: str = None
    roofline: bool = False  # --peak implies it
    peak: object = None  # explain.roofline.PeakOverride from --peak FLOPS[,BYTES_PER_S]
    raise_error: bool = True
    large_grid: bool = False
    save: str = None  # --save FILE: append the result(s) as JSON lines
    threads: int = None  # --threads N: intra-op threads in torch and the BLAS pools while timing


def _count(name, text):
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"{name} expects a whole number, got {text!r}") from None
    if value < 0:
        raise OptionError(f"{name} expects a number {symbol('≥')} 0, got {value}")
    if value > MAX_N:
        raise OptionError(f"{name} expects at most {MAX_N:,} runs per call, got {value:,}")
    return value


def _budget(name, text):
    try:
        value = float(text)
    except ValueError:
        raise OptionError(f"{name} expects seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(f"{name} expects a positive number of seconds, got {text}")
    return value


def _identifier(name, text):
    if not text.isidentifier() or keyword.iskeyword(text):
        raise OptionError(f"{name} expects a variable name, got {text!r}")
    return text


def _sweep(name, text):
    try:
        return parse_sweep(text)
    except ValueError as exc:
        raise OptionError(str(exc)) from None


def _unquoted(text):
    """A value may be quoted (-l "loop"); the quotes are not part of it."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _label(name, text):
    text = _unquoted(text)
    if not text or any(c.isspace() or c in "'\"" for c in text):
        raise OptionError(f"{name} expects a name without spaces or quotes, got {text!r}")
    return text


def _file(name, text):
    text = _unquoted(text)
    if not text:
        raise OptionError(f"{name} expects a file name")
    return text


def _save(name, text):
    """--save FILE: a file in a folder that exists (checked before anything runs)."""
    path = os.path.abspath(os.path.expanduser(_file(name, text)))
    if not os.path.isdir(os.path.dirname(path)):
        raise OptionError(f"{name} {text}: no such folder to write it in")
    return path


def _trace(name, text):
    """--trace FILE: a file in a folder that exists, never a folder (writing the trace would put a
    file in its place), checked before setup code or the cell runs."""
    path = _save(name, text)
    if os.path.isdir(path):
        raise OptionError(f"{name} {text} is a folder: name a file in it, such as "
                          f"{os.path.join(_file(name, text), 'trace.json')}")
    return _file(name, text)


_SI = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def _rate(name, text):
    """``989e12``, ``989T`` or ``4.8T``: a positive number, with an optional decimal prefix."""
    scale = _SI.get(text[-1:], 1.0)
    try:
        value = float(text[:-1] if scale != 1.0 else text) * scale
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(f"{name} expects FLOPS[,BYTES_PER_S] as positive numbers (989e12,4.8e12 or 989T,4.8T), "
                          f"got {text!r}")
    return value


def _peak(name, text):
    from .explain.roofline import PeakOverride

    parts = text.split(",")
    if len(parts) > 2:
        raise OptionError(f"{name} expects FLOPS[,BYTES_PER_S], got {text!r}")
    return PeakOverride(*(_rate(name, part.strip()) for part in parts))


def _threads(name, text):
    value = _count(name, text)
    if value == 0:
        raise OptionError(f"{name} expects a number of threads {symbol('≥')} 1, got 0")
    return value


_CONVERT = {"runs": _count, "warmup": _count, "budget": _budget, "var": _identifier, "sweeps": _sweep,
            "label": _label, "trace": _trace, "peak": _peak, "save": _save, "threads": _threads}


def _split_flag(token):
    """``--runs=5`` → (--runs, 5); ``-n5`` → (-n, 5); ``-oq`` → (-o, None) then ``-q`` pending."""
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        return name, (value if eq else None), None
    name, rest = token[:2], token[2:]
    if not rest:
        return name, None, None
    if _SPEC.get(name, (None, False, None))[1]:
        return name, rest, None
    return name, None, "-" + rest


def _token(line, pos):
    """The next whitespace-separated token from ``pos`` as (token, end), or None at the end.

    Spaces inside quotes or brackets do not end a token: ``--sweep s='a b',c`` and
    ``--sweep n=[1, 2]`` are one token each.
    """
    start = _SPACE.match(line, pos).end()
    try:
        end = next((start + index for index, char in top_level(line[start:]) if char.isspace()), len(line))
    except ValueError:  # a quote or bracket left open or closed twice: up to the next space, for its option to refuse
        end = _WORD.match(line, start).end()
    return (line[start:end], end) if end > start else None


def _check(options):
    """Rules between options: what -n 0, --check, --stop-on-error and large grids need."""
    if options.runs == 0 and options.warmup:
        raise OptionError("-n 0 runs the cell once in all: it cannot be combined with -w")
    if options.runs == 0 and options.profile == "warm":
        raise OptionError("-n 0 runs the cell once in all: use --profile-cold to profile that run")
    for flag, wanted in (("--check", options.check), ("--stop-on-error", options.stop_on_error)):
        if wanted and not options.sweeps:
            raise OptionError(f"{flag} applies to sweeps: use it with --sweep NAME=V1,V2")
    names = [name for name, _ in options.sweeps]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise OptionError(f"--sweep {repeated[0]} is given twice: list all its values in one --sweep")
    size = grid_size(options.sweeps)
    if size > MAX_GRID and not options.large_grid:
        raise OptionError(f"the sweep grid has {size:,} points (more than {MAX_GRID}): "
                          "add --yes-large-grid to time them all")


def parse(line):
    """Split ``line`` into (Options, the rest of the line, verbatim)."""
    options = Options()
    pos = 0
    while True:
        found = _token(line, pos)
        if found is None:
            break
        token, end = found
        if token == "--":
            pos = end
            break
        if not _OPTION.match(token):
            break
        pos = end
        while token:
            name, value, token = _split_flag(token)
            if name not in _SPEC:
                raise OptionError(f"unknown option {name} (put -- before a statement that starts with -)")
            dest, takes_value, constant = _SPEC[name]
            if not takes_value:
                if value is not None:
                    raise OptionError(f"{name} takes no value")
                setattr(options, dest, constant)
                continue
            if value is None:
                found = _token(line, pos)
                if found is None:
                    raise OptionError(f"{name} needs a value")
                value, pos = found
            converted = _CONVERT[dest](name, value)
            if dest == "sweeps":
                options.sweeps.append(converted)
            else:
                setattr(options, dest, converted)
    return _checked(options), line[pos:].strip()


def _checked(options):
    """Combinations: --trace profiles (-p) unless --profile-cold chose the run; one run, one file."""
    if options.trace is not None:
        if options.sweeps:
            raise OptionError("--trace keeps one run's trace: it cannot be combined with --sweep")
        options.profile = options.profile or "warm"
    _check(options)
    return options
