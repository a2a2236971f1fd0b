"""Results that outlive the kernel: ``--save FILE`` appends them to a JSON Lines file, and
``%cudatime_compare --load FILE`` reads them back beside the live ones.

One line per result or sweep point: its ``to_dict()`` plus ``"format": "ipython_cudatime"`` and ``"schema": SCHEMA``.
Appending never rewrites what is there, so two machines' files can simply be concatenated. A line is written as
ASCII (JSON escapes U+2028 and U+0085 too) and read back split at ``\n`` only, as JSON Lines readers do.

A line that cannot be read, or holds a value ``schema`` does not allow, is reported by file and line number and
skipped; a file of a newer schema is refused whole (its lines may mean what this version cannot tell). Nothing in
a file can make ``load`` raise.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import gc
import json
import os
import stat
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from .compare import Point, Results
from .schema import MAX_DEPTH, BadField, checked_line

if TYPE_CHECKING:
    from .result import RecordKeeper

FORMAT = "ipython_cudatime"
# Raised when a field changes meaning or goes. 2: the records moved under "records" (they stood beside the
# fields); 3: "cpu_context" became a feature's record there. Older lines are moved there (``_upgraded``).
SCHEMA = 3
MAX_LINE = 64 << 20  # bytes per line: 100,000 warm runs (the -n cap) take about 11 MiB
# A line's bytes as ``_exactly`` scans them: a digit as 0, what may stand before a number as a space, any
# other byte as "x", the brackets left out (so a number after one follows a space, or starts the line).
_SCAN = bytes(ord("0") if chr(byte).isdigit() and byte < 128 else ord(" ") if byte in b" \t\n\r:,-" else ord("x")
              for byte in range(256))
_BRACKETS = b"[{"
_DIGITS = b"0" * 19  # an integer of 19 digits or more: orjson reads one beyond 64 bits (2**64 has 20) as a float
_INTEGER = b" " + _DIGITS
_DEEP = 2 * MAX_DEPTH  # levels: more than any line --save writes; json and orjson read a line no deeper alike


def save(points: Iterable[Point], path: str | os.PathLike[str]) -> None:
    """Append one line per point to ``path`` (created if missing), in one write, flushed."""
    lines = (json.dumps({"format": FORMAT, "schema": SCHEMA, **point.to_dict()}, ensure_ascii=True) for point in points)
    data = "".join(line + "\n" for line in lines).encode("ascii")
    with open(os.path.expanduser(path), "a+b", buffering=0) as file:
        size = file.seek(0, os.SEEK_END)
        if size:
            file.seek(size - 1)
            if file.read(1) != b"\n":  # an earlier save was cut short: end its line, the fragment one bad line
                data = b"\n" + data
        try:
            view = memoryview(data)
            while view:  # an unbuffered write may take less than all; the rest follows at once
                view = view[file.write(view):]
        except BaseException:  # a full disk, a quota, Ctrl-C: the file goes back to what it was
            file.truncate(size)
            raise


def decoder() -> Callable[[bytes], Any]:
    """How ``load`` reads a line: with orjson where installed (a short line in 85,000 instructions against
    json's 212,000) through ``_exactly``, so that it reads as ``json.loads`` does; else with json."""
    try:
        import orjson
    except ImportError:
        return _standard
    return functools.partial(_exactly, orjson.loads)


def _standard(raw: bytes) -> Any:
    """``json.loads`` of the line's UTF-8 text: the reading every other decoder must give exactly."""
    return json.loads(raw.decode("utf-8"))


def _exactly(fast: Callable[[bytes], Any], raw: bytes) -> Any:
    """``_standard(raw)``, from ``fast`` (orjson) wherever that gives the same: not for an integer of 19 digits
    or more (a float to orjson), a line it refuses (NaN, a lone surrogate: json reads them, and words a bad
    line's error), nor one nested past ``_DEEP`` levels (json may run out of recursion)."""
    scan = raw.translate(_SCAN, _BRACKETS)
    if scan.rfind(_INTEGER) < 0 and not scan.startswith(_DIGITS):
        try:
            data = fast(raw)
        except Exception:  # whatever orjson refuses, json decides
            return _standard(raw)
        if len(raw) - len(scan) < _DEEP or not _deeper(data, _DEEP):  # fewer brackets than that: not that deep
            return data
    return _standard(raw)


def _deeper(value: Any, levels: int) -> bool:
    """Whether ``value`` nests more than ``levels`` deep: a level per comprehension (a call per container
    took a third of a 1,000-run line's time to load)."""
    level = [value]
    for _ in range(levels):
        level = [item for container in level for item in (container.values() if type(container) is dict else container)
                 if type(item) is dict or type(item) is list]
        if not level:
            return False
    return True


def _object(raw: bytes, decode: Callable[[bytes], Any]) -> tuple[dict[str, Any], None] | tuple[None, str]:
    """A line's bytes as our JSON object (read by ``decode``, from ``decoder``), or the reason it is not one."""
    try:
        data = decode(raw)
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 ({exc.reason} at byte {exc.start})"
    except RecursionError:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    except MemoryError:
        return None, "too large to read"
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None, f"not a line --save wrote (no \"format\": \"{FORMAT}\")"
    if type(data.get("schema")) is not int or data["schema"] < 1:
        return None, "no schema version (a whole number)"
    return data, None


def _upgraded(data: dict[str, Any], features: Collection[RecordKeeper]) -> dict[str, Any]:
    """A line as this schema writes it: each record beside the fields (every feature's in 1, the CPU facts'
    in 2) moved under "records", null where a line has none, so that ``from_dict`` never reads one there."""
    if "cold" not in data:
        return data
    beside = {feature.name for feature in features if feature.name in data} if data["schema"] < SCHEMA else ()
    if not beside:
        return data if "records" in data else {**data, "records": None}
    records = data.get("records", {}) if data["schema"] >= 2 else {}
    if not isinstance(records, dict):
        return data  # a bad "records": the check says so, with its path
    kept = {name: value for name, value in data.items() if name not in beside}
    return {**kept, "records": {**records, **{name: data[name] for name in beside}}}


def _lines(file: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(number, bytes) per line, split at ``\n`` only; a line over ``MAX_LINE`` is (number, None), unheld."""
    for number, raw in enumerate(iter(lambda: file.readline(MAX_LINE + 1), b""), 1):
        if len(raw) <= MAX_LINE or raw.endswith(b"\n"):
            yield number, raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw  # less an editor's UTF-8 mark
            continue
        while raw and not raw.endswith(b"\n"):
            raw = file.readline(1 << 20)
        yield number, None


def _read_lines(path: str | os.PathLike[str], lines: Iterable[tuple[int, bytes | None]], problems: list[str],
                features: Collection[RecordKeeper], decode: Callable[[bytes], Any]) -> list[Point]:
    """The points of one file's ``lines``; bad lines are added to ``problems``, and a newer file's lines all are."""
    points, newest = [], 0
    for number, raw in lines:
        if raw is not None and not raw.strip():
            continue
        data, why = (_object(raw, decode) if raw is not None
                     else (None, f"longer than the {MAX_LINE:,} bytes a line may hold"))
        newest = max(newest, data["schema"] if data is not None else 0)
        if data is not None and data["schema"] <= SCHEMA:  # a line of any schema this version reads
            try:
                points.append(Point.from_dict(checked_line(_upgraded(data, features), features), features))
            except BadField as exc:
                why = f"bad field: {exc}"
            except (KeyError, TypeError, ValueError) as exc:  # a checked line should never get here: say so, go on
                why = f"could not rebuild its result ({type(exc).__name__}: {exc})"
        if why:
            problems.append(f"{path}, line {number}: {why}; skipped")
    if newest > SCHEMA:
        problems.append(f"{path}: written with schema {newest}, newer than this ipython_cudatime reads "
                        f"({SCHEMA}); not loaded: upgrade ipython_cudatime to read it")
        return []
    return points


def _read(path: str | os.PathLike[str], problems: list[str], features: Collection[RecordKeeper],
          decode: Callable[[bytes], Any]) -> list[Point]:
    """The points of the file at ``path``: a regular file only (/dev/zero, a FIFO or a socket could make
    reading wait, or grow memory, without end), opened without waiting."""
    try:
        with open(os.open(os.path.expanduser(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                problems.append(f"{path}: not a regular file (a device, FIFO or socket); not read")
                return []
            return _read_lines(path, _lines(file), problems, features, decode)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        problems.append(f"{path}: cannot read it ({exc})")
        return []


def load(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
         features: Collection[RecordKeeper]) -> tuple[Results, list[str]]:
    """(Results of every good line of ``paths``, in order; one message per line or file that did not
    load). Each of ``features`` reads its own record from a line; a record none of them knows is dropped."""
    problems: list[str] = []
    points: list[Point] = []
    decode = decoder()
    with _collector_paused():
        for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:  # one path, or several
            points += _read(path, problems, features, decode)
    return Results(points, keepers=tuple(features)), problems


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cycle collector held off while lines load (each makes dozens of containers and no cycle; the
    collector would walk the growing results again and again: a third of loading 10,000 lines). Then they
    go to the oldest generation in one step (``gc.freeze``, ``gc.unfreeze``), else the next young collection
    walks them all; unless something is frozen already (a server that forks): unfreezing would thaw it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        if was_on:
            gc.enable()
