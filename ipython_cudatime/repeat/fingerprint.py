"""What a cell can reach, and the state of each object it reaches: the evidence the repeat decision reads.

A ``Fingerprint`` follows references from a cell's roots (the values of the names it uses) and
keeps, for each object met, a token of its own state, cheap to take again (one ``Kind`` per type;
a framework's through its backend's kinds: a tensor's version counter, an array's checksum). A
container's token holds its items by identity, so it is also the shallow copy that puts it back.

Taking the tokens again after a run says which objects it changed (``changed``); a copy of what it
changed (``copies``) tells an idempotent overwrite from a change a second run would repeat, and is
what ``restore`` puts back. Libraries' code is not the user's data: it is not walked. What cannot be
read (an opaque object, device memory, past the budget) is listed in ``unseen``: unknown is never safe.
"""

from __future__ import annotations

import _thread
import array
import collections
import contextlib
import datetime
import decimal
import functools
import gc
import io
import operator
import random
import re
import sys
import sysconfig
import time
import types
import warnings
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..backends.objects import Kind, Leaf, Unseen

GLOBAL_OF = re.compile(r"^(.*?) \(a global of (.*?\(\))\)(.*)$")
MISSING = object()  # a name that is not bound, a slot that is not set
SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None), type(Ellipsis), type(NotImplemented), range})
# Objects that are code or immutable values, never the user's changing data.
IMMUTABLE = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType, types.CodeType,
             types.MethodWrapperType, types.GetSetDescriptorType, types.MemberDescriptorType, types.ModuleType,
             types.MappingProxyType, property, memoryview, slice, type(sys.flags), _thread.LockType, _thread.RLock,
             weakref.ref, re.Pattern, re.Match,  # a lock's state, a weak reference's target: not the user's data
             datetime.date, datetime.time, datetime.timedelta, datetime.tzinfo, decimal.Decimal)


@dataclass(frozen=True)
class Budget:
    """How much one fingerprint may read before the rest is ``unseen`` (checksums run at about 5 GB/s:
    4 GiB is under a second), and copy to put a change back (a copy on a GPU takes its memory)."""

    objects: int = 1_000_000
    seconds: float = 1.0
    checksum_bytes: int = 4 << 30
    copy_bytes: int = 1 << 30


@dataclass(slots=True)
class Entry:
    """One object met: how it is read, its token then, and where (the entry holding it, None for a
    root, and the suffix naming it there: ".total"), for ``Fingerprint.path`` to name it when needed."""

    obj: Any
    parent: Entry | None
    suffix: str
    kind: Kind
    token: Any


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    """Where Python's and the installed packages' code lives."""
    paths = sysconfig.get_paths()
    return tuple({paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key)})


@functools.lru_cache(maxsize=4096)
def _library_file(filename: str) -> bool:
    """Whether code from ``filename`` belongs to Python or an installed package, not to the user."""
    return filename.startswith("<frozen") or filename.startswith(_library_roots())


def nbytes(obj: Any) -> int:
    """An array's or a tensor's memory (0 for other objects, and for a sparse tensor, whose ``nbytes`` raises)."""
    try:
        return int(getattr(obj, "nbytes", 0) or 0)
    except (RuntimeError, TypeError, NotImplementedError):
        return 0


def _mutable(items: Collection[Any]) -> Iterable[tuple[int, Any]]:
    """The items of ``items`` that may change (not scalars), with their places."""
    if set(map(type, items)) <= SCALARS:  # the common case, at C speed
        return ()
    return ((place, item) for place, item in enumerate(items) if type(item) not in SCALARS)


class Frozen(Kind):
    """A tuple or frozenset: it never changes, but what it holds may."""

    types = (tuple, frozenset)

    def children(self, obj: Any) -> Iterator[tuple[str, Any]]:
        return ((f"[{place}]", item) for place, item in _mutable(obj))


class Items(Kind):
    """A list or a deque: its items, by identity; put back by assigning them all."""

    holds_state = True
    types = (list, collections.deque)

    def token(self, sequence: Any) -> tuple[Any, ...]:
        return tuple(sequence)

    def same(self, before: Any, after: Any) -> bool:
        return len(before) == len(after) and all(map(operator.is_, before, after))

    children = Frozen.children

    def restore(self, sequence: Any, saved: Any) -> None:
        sequence.clear()
        sequence.extend(saved)


class Bytes(Kind):
    """A bytearray or an ``array.array``: its bytes."""

    holds_state = True
    types = (bytearray, array.array)

    def token(self, buffer: Any) -> bytes:
        return bytes(buffer)

    def restore(self, buffer: Any, saved: Any) -> None:
        del buffer[:]
        buffer.frombytes(saved) if isinstance(buffer, array.array) else buffer.extend(saved)


class _Keyed(Kind):
    """A kind whose token is (keys, values): the same keys, and the same objects as values."""

    holds_state = True

    def same(self, before: Any, after: Any) -> bool:
        return before[0] == after[0] and all(map(operator.is_, before[1], after[1]))


class Mapping(_Keyed):
    """A dict (defaultdict, OrderedDict, Counter...): its keys and values, values by identity."""

    types = (dict,)

    def token(self, mapping: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(mapping), tuple(mapping.values())

    def children(self, mapping: Any) -> Iterator[tuple[str, Any]]:
        keys = list(mapping)
        return ((f"[{_key(keys[place])}]", value) for place, value in _mutable(mapping.values()))

    def restore(self, mapping: Any, saved: Any) -> None:
        mapping.clear()
        for key, value in zip(*saved):  # item by item: a Counter's update() adds, it does not set
            mapping[key] = value


def clip(text: str, width: int) -> str:
    """``text``, cut to ``width`` characters with "..." where longer."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _key(key: Any) -> str:
    """A key as a path writes it: a plain value's repr, else its type ("<Parameter>")."""
    return clip(repr(key) if type(key) in SCALARS else f"<{type(key).__name__}>", 40)


class Unordered(Kind):
    """A set: its members (hashable, so compared as a set)."""

    types = (set,)
    holds_state = True

    def token(self, members: Any) -> frozenset[Any]:
        return frozenset(members)

    def children(self, members: Any) -> Iterator[tuple[str, Any]]:
        return (("{…}", member) for member in members if type(member) not in SCALARS)

    def restore(self, members: Any, saved: Any) -> None:
        members.clear()
        members.update(saved)


@functools.lru_cache(maxsize=1024)
def _slots(kind: Any) -> tuple[tuple[str, Any], ...]:
    """(name, member descriptor) of every ``__slots__`` entry along ``kind``'s MRO."""
    found = []
    for klass in kind.__mro__:
        declared = vars(klass).get("__slots__", ())
        for name in (declared,) if isinstance(declared, str) else declared:
            private = name.startswith("__") and not name.endswith("__")
            mangled = f"_{klass.__name__.lstrip('_')}{name}" if private else name
            descriptor = vars(klass).get(mangled)
            if isinstance(descriptor, types.MemberDescriptorType):
                found.append((mangled, descriptor))
    return tuple(found)


class _Plain:
    """A class of Python's own making: its instances' size is what a ``__dict__`` costs here."""


OPEN_BASES = (int, float, complex, str, bytes, tuple, frozenset, BaseException)  # C state, immutable or not data


@functools.lru_cache(maxsize=1024)
def _hides_state(kind: Any) -> bool:
    """Whether instances of ``kind`` keep state in C fields that no ``__dict__`` or slot shows (pandas'
    ``BlockManager``): they are larger than a Python class with the same slots. Read as ``Opaque``."""
    open_sizes = [base.__basicsize__ + _Plain.__basicsize__ - object.__basicsize__
                  for base in kind.__mro__ if base in OPEN_BASES]
    return bool(kind.__basicsize__ > max([_Plain.__basicsize__, *open_sizes]) + 8 * len(_slots(kind)))


def _attributes(obj: Any) -> dict[str, Any] | None:
    """``obj.__dict__`` without running a ``__getattr__`` of the user's, or None."""
    try:
        found = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return None
    return found if isinstance(found, dict) else None


class Attributes(Kind):
    """An object with a ``__dict__`` or slots: its class, its attributes' and slots' values by identity."""

    holds_state = True

    def token(self, obj: Any) -> tuple[Any, ...]:
        kind: Any = type(obj)
        slots, attributes = _slots(kind), _attributes(obj) or {}
        read = tuple([_read_slot(descriptor, obj) for _, descriptor in slots]) if slots else ()
        return kind, tuple(attributes), tuple(attributes.values()), read

    def same(self, before: Any, after: Any) -> bool:
        return (before[0] is after[0] and before[1] == after[1] and all(map(operator.is_, before[2], after[2]))
                and all(map(operator.is_, before[3], after[3])))

    def children(self, obj: Any) -> list[tuple[str, Any]]:
        kind, names, values, read = self.token(obj)
        found = [(f".{name}", value) for name, value in zip(names, values) if type(value) not in SCALARS]
        found.append((f"\x00{kind.__qualname__}", kind))  # class-level state (a registry, a counter)
        return found + [(f".{name}", value) for (name, _), value in zip(_slots(kind), read)
                        if type(value) not in SCALARS and value is not MISSING]

    def restore(self, obj: Any, saved: Any) -> None:
        kind, names, values, slots = saved
        if type(obj) is not kind:
            obj.__class__ = kind
        attributes = _attributes(obj)
        if attributes is not None:
            attributes.clear()
            attributes.update(zip(names, values))
        for (_, descriptor), value in zip(_slots(kind), slots):
            if value is MISSING:
                with contextlib.suppress(AttributeError):
                    descriptor.__delete__(obj)
            else:
                descriptor.__set__(obj, value)


def _read_slot(descriptor: Any, obj: Any) -> Any:
    try:
        return descriptor.__get__(obj)
    except AttributeError:
        return MISSING


@dataclass(eq=False)
class NamesView:
    """``names`` of ``namespace`` (None: all but ``exclude``), read by ``reader`` (a function's name, or
    "" for the cell); ``walk`` False: only what they are bound to counts (names the cell does not use)."""

    namespace: MutableMapping[str, Any]
    names: tuple[str, ...] | None
    reader: str = ""
    walk: bool = True
    exclude: frozenset[str] = frozenset()
    prefix: str = ""  # "sys." for a module's names

    def bound(self) -> tuple[str, ...]:
        """``names``, or all but ``exclude`` and those with two leading underscores: the interpreter's and
        frameworks' own (``__builtins__``, ``torch.compile``'s ``__builtins_dict___0``)."""
        if self.names is not None:
            return self.names
        return tuple(name for name in self.namespace if name not in self.exclude and not name.startswith("__"))

    def label(self, name: str) -> str:
        """How a report names one of them: "n" (the cell's), "n (a global of bump())"."""
        return f"\x00{self.prefix}{name} (a global of {self.reader})" if self.reader else f"\x00{self.prefix}{name}"


class Names(_Keyed):
    """Names of a namespace (a module's, the notebook's): the names bound, and to what, by identity."""

    types = (NamesView,)

    def token(self, view: NamesView) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        names = view.bound()
        return names, tuple(view.namespace.get(name, MISSING) for name in names)

    def children(self, view: NamesView) -> Iterator[tuple[str, Any]]:
        for name in view.bound() if view.walk else ():
            value = view.namespace.get(name, MISSING)
            if value is not MISSING and type(value) not in SCALARS:
                yield view.label(name), value

    def restore(self, view: NamesView, saved: Any) -> None:
        kept = {name: value for name, value in zip(*saved) if value is not MISSING}
        for name in set(view.bound()) - kept.keys():
            view.namespace.pop(name, None)
        view.namespace.update(kept)


def module_views(namespace: MutableMapping[str, Any], used: set[str]) -> Iterator[tuple[str, NamesView]]:
    """A view of each module among ``used`` names, of its names ``used`` also holds (code names
    ``sys.path`` as "sys" and "path"): what ``sys.path.append`` reaches."""
    for name in sorted(used):
        module = namespace.get(name)
        if isinstance(module, types.ModuleType):
            attributes = vars(module)
            names = tuple(sorted(attribute for attribute in used if attribute in attributes))
            yield "", NamesView(attributes, names, prefix=f"{name}.")


def _code_names(code: types.CodeType) -> set[str]:
    """The global and attribute names a function's code (and the code nested in it) uses."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _code_names(constant)
    return names


class Function(Kind):
    """A function of the user's: its code, defaults, closure cells and the globals its code names."""

    holds_state = True

    def token(self, function: Any) -> tuple[Any, ...]:
        attributes = vars(function)
        return (function.__code__, function.__defaults__, function.__kwdefaults__, tuple(attributes),
                tuple(attributes.values()))

    def same(self, before: Any, after: Any) -> bool:
        return (all(map(operator.is_, before[:3], after[:3])) and before[3] == after[3]
                and all(map(operator.is_, before[4], after[4])))

    def restore(self, function: Any, saved: Any) -> None:
        function.__code__, function.__defaults__, function.__kwdefaults__, names, values = saved
        vars(function).clear()
        vars(function).update(zip(names, values))

    def children(self, function: Any) -> Iterator[tuple[str, Any]]:
        name = f"{function.__name__}()"
        used = _code_names(function.__code__)
        namespace = function.__globals__
        yield "", NamesView(namespace, tuple(sorted(name for name in used if name in namespace)), name)
        yield from module_views(namespace, used)
        for variable, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
            yield f"\x00{variable} (in the closure of {name})", cell
        for place, value in _mutable(function.__defaults__ or ()):
            yield f"\x00{name}'s default #{place + 1}", value
        for key, value in (function.__kwdefaults__ or {}).items():
            yield f"\x00{name}'s default {key}", value
        yield from ((f".{key}", value) for key, value in vars(function).items() if type(value) not in SCALARS)


class Closure(Kind):
    """A closure cell: what it holds, by identity (``nonlocal`` rebinds it)."""

    holds_state = True
    types = (types.CellType,)

    def token(self, cell: Any) -> Any:
        try:
            return cell.cell_contents
        except ValueError:
            return MISSING

    def same(self, before: Any, after: Any) -> bool:
        return before is after

    def children(self, cell: Any) -> Iterator[tuple[str, Any]]:
        value = self.token(cell)
        if value is not MISSING and type(value) not in SCALARS:
            yield "", value

    def restore(self, cell: Any, saved: Any) -> None:
        if saved is MISSING:
            del cell.cell_contents
        else:
            cell.cell_contents = saved


class Wrapper(Kind):
    """A bound method, a ``functools.partial``, a static or class method: what it wraps."""

    PARTS = ("__self__", "__func__", "func", "args", "keywords", "__wrapped__")

    def children(self, wrapper: Any) -> Iterator[tuple[str, Any]]:
        for part in self.PARTS:
            value = getattr(wrapper, part, MISSING)
            if value is not MISSING and not isinstance(value, types.ModuleType) and type(value) not in SCALARS:
                yield ("" if part in ("__self__", "__func__", "__wrapped__", "func") else f".{part}"), value


class Class(_Keyed):
    """A class of the user's: its attributes (class-level state such as a counter)."""

    def token(self, klass: type) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        names = tuple(name for name in vars(klass) if not name.startswith("__"))
        return names, tuple(vars(klass)[name] for name in names)

    def children(self, klass: type) -> Iterator[tuple[str, Any]]:
        names, values = self.token(klass)
        return ((f".{name}", value) for name, value in zip(names, values) if type(value) not in SCALARS)

    def restore(self, klass: type, saved: Any) -> None:
        names, values = saved
        for name in [name for name in vars(klass) if not name.startswith("__") and name not in names]:
            delattr(klass, name)
        for name, value in zip(names, values):
            setattr(klass, name, value)


class Position(Kind):
    """Where a generator, an iterator or a file stands: a second run would move it again; nothing puts it back."""

    def token(self, obj: Any) -> Any:
        if isinstance(obj, io.IOBase):
            return obj.closed, (None if obj.closed or not obj.seekable() else obj.tell())
        frame: Any = getattr(obj, "gi_frame", getattr(obj, "cr_frame", getattr(obj, "ag_frame", MISSING)))
        if frame is not MISSING:  # where it stands, and what its locals hold (a counter in a loop)
            return None if frame is None else (frame.f_lasti, _atoms(tuple(dict(frame.f_locals).values())))
        kind: Any = type(obj)
        if kind.__reduce__ is object.__reduce__ and kind.__reduce_ex__ is object.__reduce_ex__:
            return OPAQUE.token(obj)  # object's own reduce of a C type names its class, not its state (a cursor's rows)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # itertools' pickling, 3.12-3.13
            try:
                state = obj.__reduce__()
            except Exception:
                raise Unseen("an iterator whose position cannot be read") from None
        parts = state if isinstance(state, tuple) else (state,)  # flattened one level down
        return _atoms(tuple(value for part in parts for value in (part if isinstance(part, tuple) else (part,))))


def _atoms(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Plain values as they are, others by identity: a token that compares without running ``__eq__``."""
    return tuple(value if type(value) in SCALARS else id(value) for value in values)


class Generator(Kind):
    """A ``random.Random`` of the user's own, by its state (the global one is put back anyway)."""

    holds_state = True
    types = (random.Random,)

    def token(self, generator: Any) -> Any:
        return generator.getstate()

    def restore(self, generator: Any, saved: Any) -> None:
        generator.setstate(saved)


class Opaque(Kind):
    """An object whose state Python does not show (a C extension's, with no ``__dict__``)."""

    def token(self, obj: Any) -> Any:
        raise Unseen(f"a {type(obj).__module__}.{type(obj).__qualname__} shows no state")


WRAPPERS = (types.MethodType, functools.partial, staticmethod, classmethod)
LEAF, FUNCTION, WRAPPER, CLASS, POSITION, ATTRIBUTES, NAMES, OPAQUE, MAPPING = (
    Leaf(), Function(), Wrapper(), Class(), Position(), Attributes(), Names(), Opaque(), Mapping())
CORE: tuple[Kind, ...] = (Items(), Bytes(), MAPPING, Unordered(), Frozen(), Closure(), Generator(), NAMES)


class Fingerprint:
    """The objects reachable from some roots, with their tokens (see the module's doc). ``kinds``: the
    frameworks' (``backends.object_kinds``); ``deep`` False (proven pure code) reads the roots alone,
    and no costly kind; ``skip``: objects that are not the user's data (the shell that runs the cell)."""

    def __init__(self, kinds: Iterable[Kind] = (), deep: bool = True, budget: Budget | None = None,
                 skip: Iterable[Any] = ()) -> None:
        self.kinds = tuple(kinds) + CORE
        self.deep, self.budget = deep, budget or Budget()
        self.entries: dict[int, Entry] = {}
        self.unseen: list[str] = []
        # Not the user's data either: the global generators (``state.RandomStates`` puts them back) and
        # the standard streams (output, which later runs discard, not state).
        mtrand = sys.modules.get("numpy.random.mtrand")
        found = [getattr(random, "_inst", None), getattr(mtrand, "_rand", None), *skip]
        found += [sys.stdout, sys.stderr, sys.stdin, sys.__stdout__, sys.__stderr__, sys.__stdin__]
        self._skip = {id(obj) for obj in found if obj is not None}
        self._bytes = 0
        self._cache: dict[type, Kind] = {}

    def kind(self, obj: Any) -> Kind:
        """How ``obj`` is read: a framework's kind, Python's own, or ``Opaque``."""
        kind = type(obj)
        found = self._cache.get(kind)
        if found is None:
            found = self._kind_of(kind, obj)
            if not isinstance(obj, (type, types.FunctionType, types.BuiltinMethodType)):
                self._cache[kind] = found  # the others depend on the object: whose code, whose class
        return found

    def _kind_of(self, kind: type, obj: Any) -> Kind:
        for declared in self.kinds:
            if issubclass(kind, declared.types):
                return declared
        if isinstance(obj, WRAPPERS) or (isinstance(obj, types.BuiltinMethodType) and not isinstance(
                obj.__self__, (types.ModuleType, type(None)))):  # bound to an object (``items.append``), not ``len``
            return WRAPPER
        if isinstance(obj, IMMUTABLE) or kind in SCALARS:
            return LEAF
        if isinstance(obj, type):  # a class of the notebook's or of a file of the user's is state
            module = sys.modules.get(obj.__module__)  # None: a module not imported
            filename = getattr(module, "__file__", None)
            users = getattr(module, "__name__", None) == "__main__" or (
                isinstance(filename, str) and not _library_file(filename))
            return CLASS if users else LEAF
        if isinstance(obj, types.FunctionType):
            return FUNCTION if not _library_file(obj.__code__.co_filename) else LEAF
        if isinstance(obj, (io.IOBase, types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
            return POSITION
        if (_attributes(obj) is not None or _slots(kind)) and not _hides_state(kind):
            return ATTRIBUTES
        # A library's callable that is a function (its own ``__qualname__``, as NumPy's dispatchers and
        # jitted functions have) is code, not an object with state that happens to be callable (a connection).
        filename = getattr(sys.modules.get(kind.__module__), "__file__", None) or "<frozen"
        if callable(obj) and hasattr(obj, "__qualname__") and _library_file(filename):
            return LEAF
        return POSITION if hasattr(kind, "__next__") else OPAQUE

    def take(self, roots: Iterable[tuple[str, Any]]) -> Fingerprint:
        """Walk from ``roots`` ((path, object) pairs), breadth first: each object once, under its shortest
        path. The garbage collector waits, as under ``timeit``: it would scan all the walk keeps again and again."""
        pending: collections.deque[tuple[Entry | None, str, Any]] = collections.deque(
            (None, path, obj) for path, obj in roots)
        entries, skip, deep, budget = self.entries, self._skip, self.deep, self.budget
        start, next_check, collecting = time.perf_counter(), 4096, gc.isenabled()
        gc.disable()
        try:
            while pending:
                parent, suffix, obj = pending.popleft()
                if type(obj) in SCALARS or id(obj) in entries or id(obj) in skip:
                    continue
                if len(entries) >= next_check:
                    next_check += 4096
                    if len(entries) >= budget.objects or time.perf_counter() - start > budget.seconds:
                        self.unseen.append(f"{_name(self._joined(parent, suffix))} and the rest (the cell reaches "
                                           f"more than {len(entries):,} objects)")
                        return self
                try:
                    kind = self.kind(obj)
                    if kind.costly and not deep:
                        continue
                    if kind.costly:  # its memory, against the checksum budget
                        self._bytes += nbytes(obj)
                        if self._bytes > budget.checksum_bytes:
                            raise Unseen(f"more than {budget.checksum_bytes >> 30} GiB of arrays to check")
                    entry = entries[id(obj)] = Entry(obj, parent, suffix, kind, kind.token(obj))
                except Exception as exc:  # an object whose state raises when read: not evidence of anything
                    why = exc if isinstance(exc, Unseen) else (
                        f"{type(obj).__name__} could not be read: {type(exc).__name__}")
                    self.unseen.append(f"{_name(self._joined(parent, suffix))} ({why})")
                    continue
                if deep:
                    try:
                        pending.extend([(entry, label, child) for label, child in entry.kind.children(obj)])
                    except Exception as exc:
                        self.unseen.append(f"{self.path(entry)} (its contents could not be read: "
                                           f"{type(exc).__name__})")
        finally:
            if collecting:
                gc.enable()
        return self

    def _joined(self, parent: Entry | None, suffix: str) -> str:
        """Its own label when it has one (a global, a closure variable), else the parent's path and the
        suffix (``acc`` + ``.total``)."""
        if parent is None or suffix.startswith("\x00"):
            return suffix
        return self._joined(parent.parent, parent.suffix) + suffix

    def changed(self) -> list[Entry]:
        """The entries whose object's state differs from its token now."""
        found = []
        for entry in self.entries.values():
            try:
                same = entry.kind.same(entry.token, entry.kind.token(entry.obj))
            except Exception:  # it could be read before: that it cannot now is a change
                same = False
            if not same:
                found.append(entry)
        return found

    def copies(self, entries: Iterable[Entry]) -> tuple[dict[int, Any], list[Entry]]:
        """What puts each entry's object back as it is now ({id: state}), and the entries nothing can
        (a generator, a file's position, a tensor too large to copy)."""
        saved, lost, size = {}, [], 0
        for entry in entries:
            if entry.token is None and not entry.kind.holds_state:
                continue  # immutable (a tuple, a library's function): nothing to put back
            size += 0 if entry.kind.holds_state else nbytes(entry.obj)
            try:  # past the budget, or the copy itself failed (out of memory): it cannot be put back
                state = None if size > self.budget.copy_bytes else (
                    entry.kind.token(entry.obj) if entry.kind.holds_state else entry.kind.copy(entry.obj))
            except Exception:
                state = None
            if state is None:
                lost.append(entry)
            else:
                saved[id(entry.obj)] = state
        return saved, lost

    def matches(self, entry: Entry, state: Any) -> bool:
        """Whether ``entry``'s object holds the values of ``state`` (from ``copies``): an idempotent overwrite."""
        kind = entry.kind
        try:
            return self.equal_values(kind.token(entry.obj), state) if kind.holds_state else bool(
                kind.equal(entry.obj, state))
        except Exception:
            return False

    @staticmethod
    def restore(entry: Entry, state: Any) -> bool:
        """Put ``entry``'s object back to ``state`` (from ``copies``); False where that failed."""
        try:
            entry.kind.restore(entry.obj, state)
        except Exception:
            return False
        return True

    def equal_values(self, a: Any, b: Any) -> bool:
        """Whether two values are equal as data (containers item by item), else by identity."""
        if a is b:
            return True
        if type(a) is not type(b):
            return False
        if type(a) in SCALARS:
            return bool(a == b) or (a != a and b != b)  # NaN
        if isinstance(a, (tuple, list)):
            return len(a) == len(b) and all(map(self.equal_values, a, b))
        if isinstance(a, dict):
            return list(a) == list(b) and all(map(self.equal_values, a.values(), b.values()))
        if isinstance(a, (set, frozenset)):
            return bool(a == b)
        kind = self.kind(a)
        return not kind.holds_state and kind.equal(a, b)

    def path(self, entry: Entry) -> str:
        """How the report names an entry's object: "acc.total", "n (a global of bump())"."""
        return _name(self._joined(entry.parent, entry.suffix))

    def what_changed(self, entry: Entry, before: Any) -> list[str]:
        """What differs since ``before`` (a token of ``entry``'s): the names, keys or attributes rebound,
        with plain values ("n (a global of bump()): 0 → 1"), or its path alone."""
        kind = entry.kind
        try:
            now = kind.token(entry.obj)
        except Exception:
            return [self.path(entry)]
        named = {NAMES: (0, 1, "."), CLASS: (0, 1, "."), ATTRIBUTES: (1, 2, "."), MAPPING: (0, 1, "[")}.get(kind)
        if named is None:
            return [self.path(entry) + kind.change(before, now)]
        names, values, how = named
        old, new = dict(zip(before[names], before[values])), dict(zip(now[names], now[values]))
        label: Callable[[Any], str] = (lambda name: _name(entry.obj.label(name))) if kind is NAMES else (
            lambda name: f"{self.path(entry)}.{name}" if how == "." else f"{self.path(entry)}[{_key(name)}]")
        return [_change(label(name), old.get(name, MISSING), new.get(name, MISSING))
                for name in dict.fromkeys([*old, *new]) if old.get(name, MISSING) is not new.get(name, MISSING)
                ] or [self.path(entry)]


def _change(path: str, old: Any, new: Any) -> str:
    if not all(type(value) in SCALARS or value is MISSING for value in (old, new)):
        return path
    return f"{path}: " + " → ".join(clip("unbound" if value is MISSING else repr(value), 30) for value in (old, new))


def _name(path: str) -> str:
    """A path as the report writes it: labels lose their NUL mark, and whose global it is goes last
    ("model.weight.grad (a global of train_step())")."""
    path = path.replace("\x00", "") or "the cell's names"
    found = GLOBAL_OF.match(path)
    return f"{found[1]}{found[3]} (a global of {found[2]})" if found and found[3] else path


