"""What the cold run changed, and whether a second run changes it again: the evidence that decides
whether a cell may repeat (docs/design.md, "Whether a cell may repeat").

The cold run happens anyway; it is the evidence. A fingerprint of everything the cell can reach
(``fingerprint.Fingerprint``) is taken before it and read again after it. Nothing changed (outside the
names the cell binds, put back between runs): the cell repeats. A change that can be put back: the
first later run is the probe; one that writes the same values again (``np.matmul(a, b, out=c)``,
``results['mm'] = a @ b``) lets the cell repeat, one that changes them again is undone and stops the
repeats. A change that cannot be put back (a generator advanced, a file's position), or something
that could not be read: one run. Unknown is never safe. After the later runs the objects are read
once more: a change the probe did not show (a cell that acts on its fifth run) is put back where it
can be and said where it cannot.

Effects that leave no trace in Python's objects (a file written, a process started) are heard through
audit events (PEP 578): a ``Watch`` writes down those of the cell's own code and, in a run that must
not repeat them, refuses them before they happen. Code made only of operators, a framework's own
functions and builtins that make new values, with no ``out=`` or ``inplace=``, is ``proven_pure``: no
list of calls can tell what a function does inside, so this only skips the costly parts of the
evidence (checksums, deep walks), never the cheap ones (a version counter sees ``inplace=True``).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import itertools
import os
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar

from ..backends.objects import Kind
from ..measure.runner import Unrepeatable, top_level_names
from ..units import failure_text
from .fingerprint import MISSING, Budget, Entry, Fingerprint, clip, nbytes

Entered = TypeVar("Entered", bound="Around")
SHOWN = 4  # changed objects named in one sentence, at most
UNVERSIONED_BYTES = 64 << 20  # unchanged tensors copied in case their version counter missed a write


def _listed(phrases: list[str]) -> str:
    """"a, b and 2 more"; a name seen both as the cell's and as a function's global once, as the global."""
    readers = {phrase.partition(" (a global of ")[0] for phrase in phrases if " (a global of " in phrase}
    phrases = [phrase for phrase in dict.fromkeys(phrases) if phrase.partition(":")[0] not in readers]
    shown, more = phrases[:SHOWN], len(phrases) - SHOWN
    if more > 0:
        return ", ".join(shown) + f" and {more} more"
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else "".join(shown)


class Evidence:
    """The fingerprints of one cell's reach (the (name, value) pairs of ``roots()``) around its runs; ``deep``
    False for ``proven_pure`` code; ``skip``: objects not the user's data. ``after_cold()`` says why the
    cell must run once (no sentence: it may repeat) and sets ``probing``."""

    def __init__(self, roots: Callable[[], list[tuple[str, Any]]], kinds: Iterable[Kind] = (), deep: bool = True,
                 budget: Budget | None = None, skip: Iterable[Any] = ()) -> None:
        self.roots, self.kinds, self.deep, self.budget, self.skip = roots, tuple(kinds), deep, budget, tuple(skip)
        self.probing = False
        self.cold: list[str] = []  # what the cold run changed, as the report names it
        self._saved: dict[int, Any] = {}
        self._found: list[Entry] = []  # what the cold run changed, to put back as it found them (``rewind``)

    def _take(self) -> Fingerprint:
        """A fingerprint of the roots; one that failed (a fault of ours, never the user's) is all unseen."""
        fingerprint = Fingerprint(self.kinds, self.deep, self.budget, self.skip)
        try:
            return fingerprint.take(self.roots())
        except Exception as exc:
            fingerprint.unseen.append(f"what the cell reaches (the check failed: {type(exc).__name__})")
            return fingerprint

    def before(self) -> None:
        self.first = self.baseline = self._take()

    def after_cold(self) -> list[str]:
        first = self.first
        if first.unseen:
            return [f"{_listed(first.unseen)} could not be checked"]
        changed = first.changed()
        if not changed:
            return []
        self.cold = [phrase for entry in changed for phrase in first.what_changed(entry, entry.token)]
        # a container's or an object's token is its state: each later run can start where the cold run did
        self._found = changed if all(entry.kind.holds_state for entry in changed) else []
        self.baseline = base = self._take()
        if base.unseen:
            return [f"the first run changed {_listed(self.cold)}, and {_listed(base.unseen)} could not be checked"]
        touched = {id(entry.obj) for entry in changed}
        fresh = [entry for entry in base.entries.values()
                 if id(entry.obj) in touched or id(entry.obj) not in first.entries]
        self._saved, lost = base.copies(fresh)
        if lost:
            self._saved = {}  # copies that would only hold memory
            return [f"the first run changed {_listed([base.path(entry) for entry in lost])}, which cannot be put back"]
        # The other objects whose token may miss a write (a tensor's version counter misses what a kernel
        # writes into its own arguments: BatchNorm's running mean), smallest first, up to UNVERSIONED_BYTES:
        # copied too, so that such a change is still seen and undone.
        seen = {id(entry.obj) for entry in fresh}
        others = sorted((entry for entry in base.entries.values()
                         if not (entry.kind.holds_state or entry.kind.costly or id(entry.obj) in seen)),
                        key=lambda entry: nbytes(entry.obj))
        sizes = itertools.accumulate(nbytes(entry.obj) for entry in others)  # smallest first: they only grow
        self._saved.update(base.copies([entry for entry, size in zip(others, sizes) if size <= UNVERSIONED_BYTES])[0])
        self.probing = True
        return []

    @property
    def rewinds(self) -> bool:
        """Whether every object the cold run changed can be put back as the cold run found it."""
        return bool(self._found)

    def rewind(self) -> None:
        """Before a later run, outside its clock: what the cold run changed, put back as it found it, so that the run
        times the cold run's job (``L.sort()`` sorts the unsorted list); a failed put-back ends it (the report says)."""
        if not all(self.first.restore(entry, entry.token) for entry in self._found):
            self._found = []

    def warm_start(self, rewound: bool) -> str | None:
        """Where the later runs started, when the cold run changed what the cell can reach (else None)."""
        if not self.cold:
            return None
        if rewound:
            listed = _listed([phrase.partition(": ")[0] for phrase in self.cold])
            many = " and " in listed
            return (f"{listed} {'were' if many else 'was'} put back as the first run found "
                    f"{'them' if many else 'it'} before each later run, outside the clock: each warm run "
                    "does the first run's job, timed alone (with the harness's own cost in it, as no loop of runs can "
                    "hold the put-backs).")
        return (f"The first run changed {_listed(self.cold)}, and the warm runs started from the state it left "
                "(a second run left it the same): they time the cell on that state, not on the one the first "
                "run found.")

    def _state(self, entry: Entry) -> Any:
        """What puts ``entry`` back as the cold run left it, or None."""
        saved = self._saved.get(id(entry.obj))
        return entry.token if saved is None and entry.kind.holds_state else saved

    def _again(self, undo: bool) -> tuple[list[str], list[Entry]]:
        """What holds other values than after the cold run, as the report names it, and the entries
        left so (all of them, or when ``undo`` those that could not be put back)."""
        base = self.baseline
        suspects = {id(entry.obj): entry for entry in base.changed()}
        suspects.update((key, base.entries[key]) for key in self._saved if key in base.entries)
        entries = [entry for entry in suspects.values()
                   if (state := self._state(entry)) is None or not base.matches(entry, state)]
        paths = [phrase for entry in entries for phrase in base.what_changed(entry, entry.token)]
        return paths, [entry for entry in entries
                       if not undo or (state := self._state(entry)) is None or not base.restore(entry, state)]

    def probe(self, undo: bool) -> list[str]:
        """After the first later run: what it changed again (nothing: the cold run's changes were an
        idempotent overwrite), put back when ``undo``; as one sentence, or none."""
        self.probing = False
        paths, kept = self._again(undo)
        if not paths:
            return []
        put_back = ""
        if undo:
            but = f", except {_listed([self.baseline.path(entry) for entry in kept])}" if kept else ""
            put_back = f" (put back as the first run left it{but})"
        hint = ("; to time backward() repeatedly, zero the gradients in the cell (model.zero_grad() or "
                "optimizer.zero_grad()) or force runs with -n") if any(".grad" in path for path in paths) else ""
        return [f"the first run changed {_listed(self.cold)}, and a second run changed {_listed(paths)} again"
                f"{put_back}{hint}"]

    def failed(self, error: BaseException) -> str:
        """Why the first later run raised ``error`` where the cold run did not: what the first run changed (a
        graph that ``backward()`` freed, its gradients set), or, where nothing seen changed, what it could not see."""
        if not self.cold:
            return (f"a second run raised {failure_text(error)}, though the first did not: the first run changed "
                    "something the cell needs that the checks cannot read")
        hint = ("; to time a backward pass, build the loss in the cell (loss = model(x).sum(); "
                "loss.backward()) or call backward(retain_graph=True)"
                ) if any(".grad" in phrase for phrase in self.cold) else ""
        return (f"the first run changed {_listed(self.cold)}, and a second run then raised {failure_text(error)}"
                f"{hint}")

    def settle(self, undo: bool) -> list[str]:
        """After the later runs: what they changed that the cold run did not leave so, put back
        where it can be when ``undo``; as one sentence, or none."""
        paths, kept = self._again(undo)
        if not paths:
            return []
        if not kept:
            return [f"Later runs changed {_listed(paths)}, which the first run left alone: put back as the "
                    "first run left it."]
        return [f"Later runs changed {_listed(paths)}, which the first run left alone; "
                f"{_listed([self.baseline.path(entry) for entry in kept])} could not be put back and "
                "reflect all the runs."]


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
IMPORT_SYSTEM = "importlib._bootstrap_external"  # writes the bytecode cache of a module it imports


def _opened(args: tuple[Any, ...]) -> str | None:
    """``open(path, mode, flags)``: "write 'log.txt'" when it opens a file for writing or appending."""
    path, mode, flags = (tuple(args) + (None, None, 0))[:3]
    writes = bool(set(mode) & set("wax+")) if isinstance(mode, str) else bool((flags or 0) & WRITE_FLAGS)
    if not writes or not isinstance(path, (str, bytes, os.PathLike)) or os.fsdecode(path) == os.devnull:
        return None
    how = "append to" if (isinstance(mode, str) and "a" in mode) or (flags or 0) & os.O_APPEND else "write"
    return f"{how} {os.fsdecode(path)!r}"


def _command(args: tuple[Any, ...]) -> str:
    """The command line of ``subprocess.Popen(executable, args, ...)``, short."""
    line = args[1] if len(args) > 1 and args[1] is not None else args[:1]
    return f"`{clip(' '.join(map(os.fsdecode, line)) if isinstance(line, (list, tuple)) else os.fsdecode(line), 60)}`"


def _first(args: tuple[Any, ...]) -> str:
    return clip(repr(args[0]) if args else "", 60)


# event -> the phrase for it: made from the event's arguments (None: not an effect after all), or
# a phrase whose "{}" is the first argument
EFFECTS: dict[str, Callable[[tuple[Any, ...]], str | None] | str] = {
    "open": _opened, "os.system": lambda args: f"run `{os.fsdecode(args[0]) if args else ''}`",
    "subprocess.Popen": lambda args: f"run {_command(args)}", "os.exec": "run the program {}",
    "os.spawn": lambda args: f"start the program {_first(args[1:])}", "os.posix_spawn": "start the program {}",
    "os.fork": "fork the process", "os.forkpty": "fork the process", "os.kill": "send a signal to a process",
    "os.putenv": "set the environment variable {}", "os.unsetenv": "unset the environment variable {}",
    "os.chdir": "change the working directory", "os.remove": "remove {}", "os.rename": "rename {}",
    "os.rmdir": "remove the folder {}", "os.mkdir": "make the folder {}", "os.truncate": "truncate {}",
    "os.link": "link {}", "os.symlink": "link {}", "os.chmod": "change the mode of {}", "os.utime": "touch {}",
    "shutil.rmtree": "remove the tree {}", "shutil.move": "move {}", "socket.connect": "open a network connection",
    "socket.sendto": "send over the network", "socket.bind": "bind a network port",
    "sqlite3.connect": "connect to the database {}", "_thread.start_new_thread": "start a thread",
    "_thread.start_joinable_thread": "start a thread",  # threading's, from Python 3.13
    "webbrowser.open": "open a web browser",
}


class Refused(Unrepeatable):
    """An effect refused in a later run, before it happened: the later runs end there."""


class Around:
    """A context manager that leaves the exception passing through untouched (contextlib's generator-based ones set
    its ``__traceback__``, which an exception with its own ``__setattr__`` refuses); subclasses write enter/leave."""

    def enter(self) -> None:
        pass

    def leave(self) -> None:
        pass

    def __enter__(self: Entered) -> Entered:
        self.enter()
        return self

    def __exit__(self, *exc_info: object) -> Literal[False]:
        self.leave()
        return False


class Watch(Around):
    """What the cell compiled under ``filename`` does that leaves no object trace: in ``with listening()``,
    each effect of its code is added to ``seen`` ("write 'log.txt'", once), or with ``refuse`` refused
    (``Refused``, whose text is the phrase) and added to ``refused``."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.seen: list[str] = []
        self.refused: list[str] = []
        self._refuse = False

    def listening(self, refuse: bool = False) -> Watch:
        self._refuse = refuse
        return self

    def enter(self) -> None:
        if not _Hook.added:
            sys.addaudithook(_Hook.hook)
            _Hook.added = True
        _Hook.listeners.append(self)

    def leave(self) -> None:
        if self in _Hook.listeners:
            _Hook.listeners.remove(self)

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
        effect = EFFECTS[event]
        phrase = effect(args) if callable(effect) else effect.format(_first(args)) if "{}" in effect else effect
        if phrase is None or not self._cells_own():
            return
        if self._refuse:
            self.refused.append(phrase)
            raise Refused(phrase)
        if phrase not in self.seen:
            self.seen.append(phrase)


class _Hook:
    """The process's one audit hook, added on first use (one cannot be removed): it calls the watches
    listening at the time."""

    listeners: list[Watch] = []
    added = False

    @staticmethod
    def hook(event: str, args: tuple[Any, ...], _effects: dict[str, Any] = EFFECTS,
             _listeners: list[Watch] = listeners) -> None:
        if not _listeners or event not in _effects:
            return
        for watch in list(_listeners):
            with contextlib.suppress(Exception):  # a hook that fails must never fail the user's code
                watch.heard(event, args)  # ``Refused``, a BaseException, goes through


Lookup = Callable[[str], Any]  # what a name holds before the cold run, MISSING where unbound
ARRAY_LIBRARIES = frozenset({"numpy", "pandas", "math", "cmath", "jax", "jaxlib"})  # besides the frameworks
# Builtins that make a new value from their arguments and change nothing.
PURE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "complex", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset",
    "hash", "int", "isinstance", "len", "list", "map", "max", "min", "pow", "print", "range", "repr", "reversed",
    "round", "set", "sorted", "str", "sum", "tuple", "type", "zip", "ord", "chr",
})
VALUES = (int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset)  # builtins' own values
WRITES = frozenset({"out", "inplace"})  # keyword arguments that write into an argument
PURE_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.Pass, ast.Import, ast.ImportFrom, ast.For, ast.If,
                   ast.With, ast.Break, ast.Continue)
PURE_EXPRESSIONS = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Tuple, ast.List,
                    ast.Set, ast.Dict, ast.JoinedStr, ast.FormattedValue, ast.Slice, ast.ListComp, ast.SetComp,
                    ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.keyword, ast.expr_context, ast.operator,
                    ast.unaryop, ast.cmpop, ast.boolop, ast.alias, ast.withitem)


def _root(name: object) -> str:
    return name.partition(".")[0] if isinstance(name, str) else ""


def _chain_root(node: ast.expr) -> ast.expr:
    """``np`` of ``np.linalg.norm``: the root of an attribute chain."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


class Purity:
    """Whether a cell's code is proven pure (see the module's doc), from what its names held (``lookup``)."""

    def __init__(self, tree: ast.Module, lookup: Lookup, frameworks: Iterable[str],
                 costly: Callable[[Any], bool] = lambda value: False) -> None:
        self.lookup = lookup
        self.modules = frozenset(frameworks) | ARRAY_LIBRARIES
        self.bound = set(top_level_names(tree))
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - self.bound
        # A value only a checksum can see (a NumPy array): a function may write into it, or into a
        # view of it, where no version counter tells; operators never do.
        self.holds_costly = any(costly(value) for value in map(self.lookup, used) if value is not MISSING)

    def allowed(self, node: ast.AST) -> bool:
        if isinstance(node, ast.stmt):  # its targets are names: attributes and items stored are refused below
            return isinstance(node, PURE_STATEMENTS)
        if isinstance(node, ast.Name):
            return isinstance(node.ctx, ast.Store) or self._known_name(node.id)
        if isinstance(node, ast.Attribute):  # ``torch.nn.functional``, ``x.T``: a chain from a known name
            root = _chain_root(node.value)
            return isinstance(node.ctx, ast.Load) and isinstance(root, ast.Name) and self._known_name(root.id)
        if isinstance(node, (ast.Subscript, ast.Starred)):  # an item stored, a starred target: refused
            return isinstance(node.ctx, ast.Load)
        if isinstance(node, ast.Call):
            return self._pure_call(node)
        return isinstance(node, PURE_EXPRESSIONS)

    def _value(self, name: str) -> Any:
        value = self.lookup(name)
        return getattr(builtins, name, MISSING) if value is MISSING else value

    def _known_name(self, name: str) -> bool:
        """A name the cell binds itself, a module or function of a framework, an array or a plain value."""
        if name in self.bound:
            return True
        value = self._value(name)
        if value is getattr(builtins, name, None):
            return name in PURE_BUILTINS
        if isinstance(value, types.ModuleType):
            return _root(value.__name__) in self.modules
        if callable(value) and _root(getattr(value, "__module__", None)) in self.modules:
            return True
        return isinstance(value, VALUES) or _root(type(value).__module__) in self.modules

    def _pure_call(self, call: ast.Call) -> bool:
        """A pure builtin, or a framework's function (not a method, which may write into its object) where
        the cell reads no value only a checksum sees; no ``out=``/``inplace=``, no function passed on."""
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        if any(keyword.arg in WRITES for keyword in call.keywords) or any(map(self._passes_code, arguments)):
            return False
        func = call.func
        if isinstance(func, ast.Name):
            value = self._value(func.id)
            if func.id in self.bound or value is MISSING:
                return False
            if value is getattr(builtins, func.id, None):
                return func.id in PURE_BUILTINS
            # A function or class itself (``np.matmul``, a NumPy ufunc), not an object that is called (a
            # module such as ``bn``, whose call may change its own state).
            function = isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)) or (
                type(value).__name__ == "ufunc")
            return function and _root(getattr(value, "__module__", None)) in self.modules and not self.holds_costly
        owner = _chain_root(func.value) if isinstance(func, ast.Attribute) else None
        return isinstance(owner, ast.Name) and isinstance(module := self._value(owner.id), types.ModuleType) and (
            _root(module.__name__) in self.modules) and owner.id not in self.bound and not self.holds_costly

    def _passes_code(self, node: ast.expr) -> bool:
        """Whether an argument is a function (a name or a module's attribute bound to one)."""
        value: Any = MISSING
        if isinstance(node, ast.Name):
            value = self._value(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self._value(node.value.id)
            value = getattr(owner, node.attr, MISSING) if isinstance(owner, types.ModuleType) else MISSING
        return value is not MISSING and callable(value) and not isinstance(value, type)


def proven_pure(tree: ast.Module, lookup: Lookup, frameworks: Iterable[str],
                costly: Callable[[Any], bool] = lambda value: False) -> bool:
    """Whether the cell's code is proven pure (see ``Purity``; ``costly(value)``: whether only a
    checksum can see a change in ``value``); unproven is not impure, only unproven."""
    try:
        return all(map(Purity(tree, lookup, frameworks, costly).allowed, list(ast.walk(ast.Module(tree.body, [])))[1:]))
    except Exception:  # a value that cannot be inspected proves nothing
        return False
