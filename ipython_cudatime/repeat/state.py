"""What running the same cell again does to the user's state, and how we undo it.

``%cudatime`` runs a cell many times; a notebook expects it to leave the state of *one* run. Names the
cell binds or deletes at top level are put back before every later run (``NameSnapshot``), so ``x += 1``
on an int, ``arr = arr * 2`` and ``del x`` act once. Everything else is judged by what its first run did
(``evidence``; ``ProcessState`` for the process's own state). ``CellRepeats`` is what the runner calls.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import ctypes
import io
import os
import random
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Iterable, MutableMapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, NoReturn, TextIO

from ..backends.objects import Kind
from ..measure.runner import Repeats, StopRepeats, Unrepeatable
from .evidence import Around, Evidence, proven_pure
from .evidence import Watch as EffectWatch
from .fingerprint import MISSING, Fingerprint, NamesView, module_views


class NameSnapshot:
    """The values some names have in a namespace now; ``restore`` puts them back (or deletes them)."""

    def __init__(self, namespace: MutableMapping[str, Any], names: Iterable[str]) -> None:
        self.namespace = namespace
        self.saved = {name: namespace.get(name, MISSING) for name in names}

    def restore(self) -> None:
        for name, value in self.saved.items():
            if value is not MISSING:
                self.namespace[name] = value
            elif name in self.namespace:
                # A function's locals (a line magic inside a function) are a FrameLocalsProxy on
                # Python 3.13: no pop(), and a real local variable cannot be deleted from it.
                with contextlib.suppress(KeyError, ValueError, TypeError):
                    del self.namespace[name]


def _pyplot_figures() -> dict[Any, tuple[int, int]]:
    """pyplot's open figures and how many artists each holds (empty when pyplot was never imported)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None or "matplotlib.pyplot" not in sys.modules:
        return {}
    figures = [(manager.num, manager.canvas.figure) for manager in helpers.Gcf.get_all_fig_managers()]
    return {number: (id(figure), sum(len(axes.get_children()) for axes in figure.axes)) for number, figure in figures}


def _live_widgets() -> dict[Any, Any]:
    """ipywidgets' registry of open widgets (ipywidgets 8: ``_instances``; 7: ``Widget.widgets``), or {}."""
    module = sys.modules.get("ipywidgets.widgets.widget")
    if module is None:
        return {}
    registry = getattr(module, "_instances", None)
    return dict(registry if registry is not None else module.Widget.widgets)


class ProcessState:
    """Process-wide state a run can change that no name snapshot restores, read before and after the
    cold run: the working directory, the environment and pyplot's figures (``plt.plot`` draws on one)."""

    def __init__(self) -> None:
        self.cwd, self.environ, self.figures = os.getcwd(), dict(os.environ), _pyplot_figures()

    def changes(self) -> list[str]:
        return [phrase for changed, phrase in (
            (os.getcwd() != self.cwd, "the cell changes the working directory"),
            (dict(os.environ) != self.environ, "the cell changes the environment (os.environ)"),
            (_pyplot_figures() != self.figures, "the cell draws with pyplot, whose current figure is shared state"),
        ) if changed]


class RandomStates:
    """The global random generators' states (of the frameworks imported; CUDA's where a context exists),
    put back by ``restore``: the next cell draws the numbers it would draw after one run."""

    def __init__(self) -> None:
        pairs: list[tuple[Callable[[], Any], Callable[[Any], object]]] = [(random.getstate, random.setstate)]
        numpy_random, torch = sys.modules.get("numpy.random"), sys.modules.get("torch")
        if numpy_random is not None:
            pairs.append((numpy_random.get_state, numpy_random.set_state))
        if torch is not None and hasattr(torch, "get_rng_state"):
            pairs.append((torch.get_rng_state, torch.set_rng_state))
            if torch.cuda.is_initialized():
                pairs.append((torch.cuda.get_rng_state_all, torch.cuda.set_rng_state_all))
        self.saved = [(put, get()) for get, put in pairs]

    def restore(self) -> None:
        for put, state in self.saved:
            put(state)


class _Sink(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` during later runs: what the thread running the cell writes is
    dropped as written; what other threads write (a training loop's log, a progress thread) goes on
    to ``through``, once, as under ``%timeit`` (or to ``after``, once ``through`` is closed)."""

    def __init__(self, through: TextIO, after: TextIO) -> None:
        super().__init__()
        self.through, self.after, self.owner = through, after, threading.get_ident()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if threading.get_ident() != self.owner:
            try:
                self.through.write(text)
            except ValueError:  # ``through`` closed with the later runs: a thread still holding us
                self.after.write(text)
        return len(text)

    def flush(self) -> None:
        if threading.get_ident() != self.owner:
            with contextlib.suppress(ValueError):
                self.through.flush()


class _DiscardOutput(Around):
    """Drop what runs print (the running thread's writes, see ``_Sink``) and display. The publisher is
    made without the shell: IPython 9's ``DisplayPublisher(shell=...)`` registers callbacks for good."""

    saved: tuple[TextIO, TextIO, Any]  # by enter(): the streams and the display publisher to put back

    def __init__(self, shell: Any, fds: _DiscardFileDescriptors) -> None:
        self.shell, self.fds = shell, fds

    def enter(self) -> None:
        from IPython.core.displaypub import DisplayPublisher

        self.saved = sys.stdout, sys.stderr, self.shell.display_pub
        publisher: Any = DisplayPublisher(shell=None)
        publisher.publish = publisher.clear_output = lambda *args, **kwargs: None  # what is displayed is dropped
        publisher.shell = self.shell
        sys.stdout, sys.stderr = (_Sink(self.fds.stream(stream), stream) for stream in self.saved[:2])
        self.shell.display_pub = publisher

    def leave(self) -> None:
        sys.stdout, sys.stderr, self.shell.display_pub = self.saved


def _flush_streams() -> None:
    """Write out what Python's and C's stdio buffers hold, before the file descriptors move."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:  # sys.__stdout__ of a process without a console
                stream.flush()
    with contextlib.suppress(Exception):  # C's stdout (printf in an extension); POSIX only
        ctypes.pythonapi.fflush(None)


class _DiscardFileDescriptors(Around):
    """Point fds 1 and 2 at an unlinked temporary file, as pytest's ``capfd`` does: output from C code, subprocesses
    (``!cmd``) and handlers of the process's own streams is dropped too, after a flush (the cold run's is kept).
    Here the cell's writes and other threads' look alike: ``dropped`` (the file's size) lets the report say so."""

    file: int  # by enter(): the temporary file's fd

    def __init__(self) -> None:
        self.saved: dict[int, int] = {}
        self.streams: list[TextIO] = []
        self.dropped = 0

    def enter(self) -> None:
        _flush_streams()
        try:
            self.file, path = tempfile.mkstemp(prefix="cudatime-quiet-")
            os.unlink(path)  # gone from the directory; the space is freed when the fd closes
        except OSError:  # no writable temporary folder: dropped uncounted (the null device's size is 0)
            self.file = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            with contextlib.suppress(OSError):  # an fd that is not open stays so
                self.saved[fd] = os.dup(fd)
                os.dup2(self.file, fd)

    def stream(self, like: TextIO) -> TextIO:
        """Where other threads' writes to ``like`` go: a line-buffered text stream on the real fd it
        wrote to (a terminal's ``sys.stdout`` writes to fd 1) while that fd is discarded, else ``like``."""
        try:
            fd = like.fileno()
        except Exception:  # a StringIO, a kernel's stream without an fd
            return like
        if fd not in self.saved:
            return like
        real = open(self.saved[fd], "w", buffering=1, closefd=False,  # noqa: SIM115  # closed by leave()
                    encoding=getattr(like, "encoding", None), errors=getattr(like, "errors", None))
        self.streams.append(real)
        return real

    def leave(self) -> None:
        _flush_streams()
        copies, self.saved = self.saved, {}
        for fd, copy in copies.items():
            os.dup2(copy, fd)
        while self.streams:  # after the fds are back: a write racing the close still reaches them
            with contextlib.suppress(Exception):
                self.streams.pop().close()
        for copy in copies.values():
            os.close(copy)
        self.dropped = os.fstat(self.file).st_size
        os.close(self.file)


def _asks(what: str) -> Callable[..., NoReturn]:
    """A stand-in for ``input``/``getpass`` that ends the later runs (``runner.StopRepeats``)."""
    def ask(*args: Any, **kwargs: Any) -> NoReturn:
        raise StopRepeats(what)

    return ask


class _NoStdin(io.TextIOBase):
    """``sys.stdin`` during later runs: reading ends the repeats instead of waiting for the user."""

    def readable(self) -> bool:
        return True

    read = readline = _asks("reading stdin")


class _NoPrompts(Around):
    """``input()``, ``getpass()`` and ``sys.stdin`` end the later runs (``runner.StopRepeats``): a
    later run never prompts (ipykernel puts its own ``input`` in builtins: it is replaced too)."""

    getpass: Any  # by enter(): the getpass module where it is imported, whose function is replaced

    def enter(self) -> None:
        self.getpass = sys.modules.get("getpass")
        self.saved = builtins.input, sys.stdin, getattr(self.getpass, "getpass", None)
        builtins.input, sys.stdin = _asks("input()"), _NoStdin()
        if self.getpass is not None:
            self.getpass.getpass = _asks("getpass()")

    def leave(self) -> None:
        builtins.input, sys.stdin = self.saved[:2]
        if self.getpass is not None:
            self.getpass.getpass = self.saved[2]


OWN_WIDGET = "_cudatime_own"  # set True on a widget of the package's own (the progress view): never closed here


class _CloseNewFiguresAndWidgets(Around):
    """Close the pyplot figures and ipywidgets created inside the block: only the cold run's stay. A
    widget marked ``OWN_WIDGET`` (the progress view, first shown during a later run) lives on."""

    def enter(self) -> None:
        self.figures, self.widgets = set(_pyplot_figures()), set(_live_widgets())

    def leave(self) -> None:
        for number in set(_pyplot_figures()) - self.figures:  # there are figures only where pyplot is imported
            sys.modules["matplotlib.pyplot"].close(number)
        registry = _live_widgets()
        for key in set(registry) - self.widgets:
            if not getattr(registry[key], OWN_WIDGET, False):
                with contextlib.suppress(Exception):
                    registry[key].close()


class InterruptHold(Around):
    """From ``start()`` to the end of the ``with`` block (main thread only), Ctrl-C is kept, not raised:
    the report of the runs done is assembled, saved and shown whole; ``caught`` says whether to raise."""

    def __init__(self) -> None:
        self.caught = False
        self._previous: Callable[[int, FrameType | None], Any] | int | None = None

    def start(self) -> None:
        if threading.current_thread() is threading.main_thread() and callable(signal.getsignal(signal.SIGINT)):
            self._previous = signal.signal(signal.SIGINT, lambda signum, frame: setattr(self, "caught", True))

    def leave(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


class _Quiet(Around):
    """The later runs' quiet: its parts entered in order and left in reverse, each left even if one
    fails, ``more`` (the effects refused) last; ``note()`` says what was dropped at the fd level."""

    def __init__(self, shell: Any, *more: Around) -> None:
        self.fds = _DiscardFileDescriptors()
        self.parts = (self.fds, _DiscardOutput(shell, self.fds), _NoPrompts(), _CloseNewFiguresAndWidgets(), *more)
        self.entered: list[Around] = []

    def enter(self) -> None:
        try:
            for part in self.parts:
                part.enter()
                self.entered.append(part)
        except BaseException:
            self.leave()
            raise

    def leave(self) -> None:
        try:
            if self.entered:
                self.entered.pop().leave()
        finally:
            if self.entered:
                self.leave()

    def note(self) -> str | None:
        if not self.fds.dropped:
            return None
        return (f"Later runs wrote {self.fds.dropped:,} bytes to the process's stdout/stderr file descriptors "
                "(C code, subprocesses, handlers of sys.__stdout__/__stderr__), not shown: at that level "
                "another thread's output cannot be told from the cell's, and any was dropped with it.")


@dataclass(frozen=True)
class CellCode:
    """What the repeat decision knows of a cell's code: its tree, the names it binds, the names and
    attribute names it uses, and the file name it is compiled under (how its ``Watch`` knows its frames)."""

    tree: ast.Module
    bound: Collection[str]
    used: Collection[str]
    attributes: Collection[str]
    filename: str


class CellRepeats(Repeats):
    """The runner's hooks for a cell of the user's (see ``runner.Repeats``): the cell's names as they were
    before the cold run, put back before each later run, and as it left them, put back by ``end`` (the
    namespace holds the cold run's objects); the evidence between. ``forced`` (``-n N``): nothing is
    refused or undone, and ``why_once`` says what the runs did to the state. ``bind`` False (``--timeit``):
    ``end`` puts back the first snapshot, as ``%timeit`` leaves the names; else a name rebound is named in
    the notes (a cell moved over from ``%timeit`` may rely on its being left alone)."""

    # by begin() (the names and the process before the cold run) and after_cold() (the random generators)
    _snapshot: NameSnapshot
    _process: ProcessState
    _random: RandomStates

    def __init__(self, shell: Any, namespace: MutableMapping[str, Any], code: CellCode,
                 frameworks: Iterable[str] = (), kinds: Iterable[Kind] = (), forced: bool = False,
                 hold: InterruptHold | None = None, bind: bool = True) -> None:
        self.shell, self.namespace, self.code, self.bind = shell, namespace, code, bind
        self.frameworks, self.kinds, self.forced, self.hold = frameworks, tuple(kinds), forced, hold
        self.reasons: list[str] = []
        self._notes: list[str] = []
        self._later = 0  # later runs begun
        self._cold: NameSnapshot | None = None  # by after_cold(): the names as the cold run left them
        self._quiet: _Quiet | None = None  # by quiet(): what the later runs ran under
        self.effects = EffectWatch(code.filename)

    def _now(self, name: str) -> Any:
        value = self.namespace.get(name, MISSING)
        return self.shell.user_ns.get(name, MISSING) if value is MISSING else value

    def _roots(self) -> list[tuple[str, Any]]:
        """What the cell can reach: the objects its names held before the cold run, and which object
        each of the notebook's other names is bound to (a function's ``global`` may rebind one)."""
        saved = self._snapshot.saved
        values = {name: saved[name] if name in saved else self._now(name) for name in self.code.used}
        found = {name: value for name, value in values.items() if value is not MISSING}
        spaces = [self.namespace] + ([self.shell.user_ns] if self.shell.user_ns is not self.namespace else [])
        views = [("", NamesView(space, None, walk=False, exclude=frozenset(self.code.bound))) for space in spaces]
        modules = list(module_views(found, {*self.code.used, *self.code.attributes}))
        return sorted(found.items()) + views + modules

    def begin(self) -> None:
        self._snapshot = NameSnapshot(self.namespace, self.code.bound)
        self._process = ProcessState()
        kind_of = Fingerprint(self.kinds).kind
        deep = not proven_pure(self.code.tree, self._now, self.frameworks, lambda value: kind_of(value).costly)
        self.evidence = Evidence(self._roots, self.kinds, deep, skip=[self.shell])  # magics, !cmd: the shell
        self.evidence.before()

    def cold(self) -> EffectWatch:
        """The cold run's effects are written down, not refused: it is the run that counts."""
        return self.effects.listening(refuse=False)

    def after_cold(self, value: Any = None) -> bool:
        self.reasons = self.evidence.after_cold() + self._process.changes()
        if self.forced:
            self.reasons += [f"each run would {effect}" for effect in self.effects.seen]
        self._cold, self._random = NameSnapshot(self.namespace, self.code.bound), RandomStates()
        rebound = [f"`{name}`" for name, old in self._snapshot.saved.items()
                   if old is not MISSING and self._cold.saved[name] is not old]
        if rebound and self.bind:
            self._notes.append(f"{', '.join(rebound)} now hold{'s' if len(rebound) == 1 else ''} what the timed "
                               "cell assigned, as with %time; %timeit would have left "
                               f"{'it' if len(rebound) == 1 else 'them'} unchanged (--timeit does too).")
        return not self.reasons and not (self.forced and self.evidence.probing)

    def why_once(self) -> list[str]:
        return self.reasons

    def notes(self) -> list[str]:
        dropped = self._quiet.note() if self._quiet is not None else None
        return self._notes + ([dropped] if dropped else [])

    def reset(self) -> None:
        self._snapshot.restore()
        if self._later == 1 and self.evidence.probing:
            self._probe()
        if self.rewinds():
            self.evidence.rewind()
        self._later += 1

    def rewinds(self) -> bool:
        """Forced runs (``-n N``) leave what all of them did; others start where the cold run did, if they can."""
        return not self.forced and self.evidence.rewinds

    def other_start(self) -> str | None:
        return None if self.rewinds() or self._later < 2 or self.reasons else self.evidence.warm_start(False)

    def failed(self, error: BaseException) -> bool:
        """The first later run raised an ``Exception`` that the cold run, on the state before it, did not: the first run
        changed what the second needs (a graph ``torch.autograd.grad`` freed, a C object's state), a reason, not the
        user's error. What the failed run changed is put back (after a probe, by ``end``) where it can be, or named."""
        if not (isinstance(error, Exception) and self._later == 1 and not self.forced):
            return False
        self.reasons.append(self.evidence.failed(error))
        if not self.evidence.probing:
            self._notes += self.evidence.settle(undo=True)
        return True

    def _probe(self) -> None:
        """After the probe run: what it changed again is a reason (undone, and the repeats end, unless forced)."""
        again = self.evidence.probe(undo=not self.forced)
        self.reasons += again
        if again and not self.forced:
            raise Unrepeatable(again[0])

    def end(self) -> None:
        try:
            if self._later and self.evidence.probing:  # the probe run was the last, or was stopped
                with contextlib.suppress(Unrepeatable):
                    self._probe()
            self.reasons += [f"a second run would {effect} again (refused before it did)"
                             for effect in self.effects.refused]
            if self._later and not self.reasons:  # a change already said is not said twice
                self._notes += self.evidence.settle(undo=not self.forced)
                if self.rewinds() and self._later > 1 and (start := self.evidence.warm_start(True)):
                    self._notes.append(start)
            if self._cold is not None:
                (self._cold if self.bind else self._snapshot).restore()
                self._random.restore()
        finally:
            if self.hold is not None:
                self.hold.start()

    def quiet(self) -> _Quiet:
        self._quiet = _Quiet(self.shell, self.effects.listening(refuse=not self.forced))
        return self._quiet
