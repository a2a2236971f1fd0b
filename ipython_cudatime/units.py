"""Human units for durations, the way IPython's ``%time`` prints them (3 significant figures).

Symbols fall back to ASCII (``us``, ``x``, ``>=``, ``+/-``) where ``sys.stdout``'s encoding cannot write them (a
Windows console, ``PYTHONIOENCODING=ascii``), so a report never raises UnicodeEncodeError (any other such character
prints as ``?``); a stream without an encoding (``%%capture``) stores any text. A probe, counter or view that
raises becomes one line saying what was not read and why (``failure_line``).
"""

from __future__ import annotations

import codecs
import math
import sys

ASCII = {"µ": "u", "×": "x", "≥": ">=", "±": "+/-", "…": "...", "–": "-", "·": "-"}  # every symbol the text uses


def _encoding() -> str | None:
    """stdout's codec, read each time (stdout may be swapped); None without one, ASCII for an unknown one."""
    encoding = getattr(sys.stdout, "encoding", None)
    if not encoding:
        return None
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return "ascii"


def _writable(text: str) -> bool:
    encoding = _encoding()
    try:
        return encoding is None or text.encode(encoding) is not None
    except UnicodeEncodeError:
        return False


def symbol(char: str) -> str:
    """``char`` (µ, ×, ≥ or ±) or its ASCII stand-in where stdout cannot write it."""
    return char if _writable(char) else ASCII[char]


def inert(text: str, newlines: bool = True) -> str:
    """``text`` with every character a terminal could act on (ESC, BEL, tab, C1 controls, bidirectional
    overrides: all ``str.isprintable`` refuses) written as ``repr`` does; newlines stay unless ``newlines`` is False."""
    lines = text.split("\n") if newlines else [text]
    if all(line.isprintable() for line in lines):
        return text
    return "\n".join("".join(c if c.isprintable() else repr(c)[1:-1] for c in line) for line in lines)


SHORT_TEXT = 200  # characters of a message (a failed point's error) a table shows; the result keeps it whole


def shortened(text: str, limit: int = SHORT_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: a megabyte of message stays one cell."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... (cut: {len(text):,} characters in all)"


def plain(text: str) -> str:
    """``text`` made ``inert``, each symbol stdout cannot write replaced by its ASCII stand-in, any other by ``?``."""
    text = inert(text)
    if _writable(text):
        return text
    for char in ASCII:
        text = text.replace(char, symbol(char))
    encoding = str(_encoding())  # not None: a stream without one writes any text
    return text if _writable(text) else text.encode(encoding, "replace").decode(encoding)


def format_seconds(seconds: float | None, precision: int = 3) -> str:
    """Format a duration like ``%time`` does: ``349 ms``, ``999 µs``, ``1min 5s``."""
    if seconds is None:
        return "n/a"
    if seconds >= 60.0:
        parts = []
        for suffix, length in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
            value, seconds = divmod(seconds, length)
            if value > 0:
                parts.append(f"{int(value)}{suffix}")
        return " ".join(parts)
    unit, factor = time_unit(seconds, precision)
    return f"{seconds * factor:.{precision}g} {unit}"


def time_unit(seconds: float, precision: int = 3) -> tuple[str, int]:
    """The unit ``format_seconds`` writes ``seconds`` in, and its factor: ``("ms", 1000)`` for 0.0156 (a
    table in one unit takes its smallest value's); 999.9 µs rounds up to 1 ms, not 1e+03 µs."""
    order = max(min(-int(math.floor(math.log10(seconds)) // 3), 3), 0) if seconds > 0 else 3
    if order > 0 and float(f"{seconds * 1000**order:.{precision}g}") >= 1000:
        order -= 1
    unit = ("s", "ms", None, "ns")[order] or symbol("µ") + "s"  # symbol() encodes: only where it is needed
    return unit, 1000**order


def range_text(low: float, high: float) -> str:
    """``15.6–31.2 ms``: two durations, the unit written once where they share it (``1min 5s`` has none)."""
    first, last = format_seconds(low), format_seconds(high)
    number, _, unit = first.rpartition(" ")
    shared = number.replace(".", "").isdigit() and last.endswith(" " + unit)
    return f"{number if shared else first}–{last}"


def format_bytes(count: float) -> str:
    """``8.1 MiB``, ``512 B``: binary units, 3 significant figures."""
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if abs(value) < 1024:
            return f"{value:.3g} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    return f"{value:.3g} GiB"


def format_si(value: float | None, unit: str, precision: int = 3) -> str:
    """``412 TFLOP/s``, ``4.8 TB/s``, ``33.6 MFLOP``: decimal prefixes, 3 significant figures."""
    if value is None:
        return "n/a"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.{precision}g} {prefix}{unit}"
    return f"{value:.{precision}g} {unit}"


def ratio_text(ratio: float | None) -> str:
    """``72.7×``, or ``n/a`` when there is no ratio (no warm runs, or a warm median of zero)."""
    return "n/a" if ratio is None else f"{ratio:.1f}{symbol('×')}"


def percent_text(fraction: float) -> str:
    """``98%``; more digits near the ends (``0.31%``, ``99.6%``) so that a share never rounds to 0% or 100%."""
    percent = 100 * fraction
    if 0 < percent < 1:
        return f"{percent:.2g}%"
    if 99.5 <= percent < 100:
        return f"{min(round(percent, 1), 99.9):.1f}%"
    return f"{percent:.0f}%"


def count_text(count: int, noun: str) -> str:
    """``1 operator call``, ``2 operator calls``: ``noun`` is the plural, maybe with a parenthesis (``(CPU only)``)."""
    head, paren, tail = noun.partition(" (")
    if count == 1 and head.endswith("s"):
        head = head[:-1]
    return f"{count:,} {head}{paren}{tail}"


MESSAGE_LIMIT = 160  # characters of the exception's message kept in the line


def failure_text(error: BaseException) -> str:
    """``RuntimeError: PyTorch is checking …``: the type and the message's first line, shortened (torch's are long)."""
    try:
        lines = str(error).strip().splitlines()
    except Exception:  # an exception that cannot be printed still has a type
        lines = []
    message = lines[0] if lines else ""
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT - 1].rstrip() + "…"
    return type(error).__name__ + (f": {message}" if message else "")


def failure_line(what: str, error: BaseException) -> str:
    """``roofline not recorded: RuntimeError: …``: what failed, then why (``failure_text``)."""
    return f"{what}: {failure_text(error)}"
