"""Side effects that leave no trace in Python's objects, seen while the cell runs: a file opened for
writing, a process started, the environment or the working directory changed, a connection opened.

Python raises an audit event before each of these (PEP 578, ``sys.addaudithook``). While a
``Watch`` listens, an event raised by the cell's own code (the cell's frame is on the stack of
the thread that raises it; the import system caching bytecode does not count) is written down,
and, in a run that must not repeat it, refused before it happens: ``Refused`` (a
``runner.StopRepeats``) ends the later runs, and the file is not written twice.

An audit hook cannot be removed once added (PEP 578), so one hook serves the whole process and
calls the watches listening at the time; with none listening it returns at once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..measure.runner import Unrepeatable

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
IMPORT_SYSTEM = "importlib._bootstrap_external"  # writes the bytecode cache of a module it imports


def _opened(args: tuple[Any, ...]) -> str | None:
    """``open(path, mode, flags)``: "write 'log.txt'" when it opens a file for writing or appending."""
    path, mode, flags = (tuple(args) + (None, None, 0))[:3]
    if not isinstance(path, (str, bytes, os.PathLike)) or os.fsdecode(path) == os.devnull:
        return None
    writes = bool(set(mode) & set("wax+")) if isinstance(mode, str) else bool((flags or 0) & WRITE_FLAGS)
    if not writes:
        return None
    how = "append to" if (isinstance(mode, str) and "a" in mode) or (flags or 0) & os.O_APPEND else "write"
    return f"{how} {os.fsdecode(path)!r}"


def _command(args: tuple[Any, ...]) -> str:
    """The command line of ``subprocess.Popen(executable, args, ...)``, short."""
    line = args[1] if len(args) > 1 and args[1] is not None else args[:1]
    text = " ".join(map(os.fsdecode, line)) if isinstance(line, (list, tuple)) else os.fsdecode(line)
    return f"`{text if len(text) <= 60 else text[:57] + '...'}`"


def _first(args: tuple[Any, ...]) -> str:
    text = repr(args[0]) if args else ""
    return text if len(text) <= 60 else text[:57] + "..."


# event -> the phrase for it, from the event's arguments (None: not an effect after all)
EFFECTS: dict[str, Callable[[tuple[Any, ...]], str | None]] = {
    "open": _opened,
    "os.system": lambda args: f"run `{os.fsdecode(args[0]) if args else ''}`",
    "subprocess.Popen": lambda args: f"run {_command(args)}",
    "os.exec": lambda args: f"run the program {_first(args)}",
    "os.spawn": lambda args: f"start the program {_first(args[1:])}",
    "os.posix_spawn": lambda args: f"start the program {_first(args)}",
    "os.fork": lambda args: "fork the process",
    "os.forkpty": lambda args: "fork the process",
    "os.kill": lambda args: "send a signal to a process",
    "os.putenv": lambda args: f"set the environment variable {_first(args)}",
    "os.unsetenv": lambda args: f"unset the environment variable {_first(args)}",
    "os.chdir": lambda args: "change the working directory",
    "os.remove": lambda args: f"remove {_first(args)}",
    "os.rename": lambda args: f"rename {_first(args)}",
    "os.rmdir": lambda args: f"remove the folder {_first(args)}",
    "os.mkdir": lambda args: f"make the folder {_first(args)}",
    "os.truncate": lambda args: f"truncate {_first(args)}",
    "os.link": lambda args: f"link {_first(args)}",
    "os.symlink": lambda args: f"link {_first(args)}",
    "os.chmod": lambda args: f"change the mode of {_first(args)}",
    "os.utime": lambda args: f"touch {_first(args)}",
    "shutil.rmtree": lambda args: f"remove the tree {_first(args)}",
    "shutil.move": lambda args: f"move {_first(args)}",
    "socket.connect": lambda args: "open a network connection",
    "socket.sendto": lambda args: "send over the network",
    "socket.bind": lambda args: "bind a network port",
    "sqlite3.connect": lambda args: f"connect to the database {_first(args)}",
    "_thread.start_new_thread": lambda args: "start a thread",
    "_thread.start_joinable_thread": lambda args: "start a thread",  # threading's, from Python 3.13
    "webbrowser.open": lambda args: "open a web browser",
}


class Refused(Unrepeatable):
    """An effect refused in a later run, before it happened: the later runs end there."""


class Watch:
    """What the cell whose code is compiled under ``filename`` does that leaves no object trace.

    ``listening(refuse=False)`` is a context manager: inside it, each effect of the cell's is
    added to ``seen`` (one phrase each, a verb in its base form: "write 'log.txt'"; in order,
    once); with ``refuse`` it is refused instead (``Refused``, whose text is the phrase), and
    added to ``refused``.
    """

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.seen: list[str] = []
        self.refused: list[str] = []
        self._refuse = False

    @contextmanager
    def listening(self, refuse: bool = False) -> Iterator[Watch]:
        self._refuse = refuse
        _Hook.listen(self)
        try:
            yield self
        finally:
            _Hook.stop(self)

    def _cells_own(self) -> bool:
        """Whether the event comes from the cell's code (its frame is on this thread's stack),
        and not from the import system writing a bytecode cache."""
        frame = sys._getframe(3)  # the hook's caller: the code that raised the event
        if frame.f_globals.get("__name__") == IMPORT_SYSTEM:
            return False
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                return True
            frame = frame.f_back  # type: ignore[assignment]
        return False

    def heard(self, event: str, args: tuple[Any, ...]) -> None:
        phrase = EFFECTS[event](args)
        if phrase is None or not self._cells_own():
            return
        if self._refuse:
            self.refused.append(phrase)
            raise Refused(phrase)
        if phrase not in self.seen:
            self.seen.append(phrase)


class _Hook:
    """The process's one audit hook (see the module's doc), added on first use."""

    listeners: list[Watch] = []
    added = False

    @classmethod
    def listen(cls, watch: Watch) -> None:
        if not cls.added:
            sys.addaudithook(cls.hook)
            cls.added = True
        cls.listeners.append(watch)

    @classmethod
    def stop(cls, watch: Watch) -> None:
        if watch in cls.listeners:
            cls.listeners.remove(watch)

    @staticmethod
    def hook(event: str, args: tuple[Any, ...], _effects: dict[str, Any] = EFFECTS,
             _listeners: list[Watch] = listeners) -> None:
        if not _listeners or event not in _effects:
            return
        for watch in list(_listeners):
            try:
                watch.heard(event, args)
            except Refused:
                raise
            except Exception:  # a hook that fails must never fail the user's code
                pass
