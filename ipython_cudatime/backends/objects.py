"""How the repeat decision sees a framework's objects: one ``Kind`` per type of object. ``%cudatime``
repeats a cell only when its first run changed nothing the user keeps, or changed it to what a second run
writes again (``fingerprint``). A framework's objects are read through the kinds its backend declares
(``Backend.kinds``), on the host only (never synchronizing a device or creating a context); ``Unseen``
where that cannot be done."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any


class Unseen(Exception):
    """An object whose state cannot be read here (device memory, past a budget): its cell runs once, and says why."""


class Kind:
    """How to read one type of object (``types``, subclasses included); this default is immutable.

    ``token(obj)``: its state now, cheap to take again, compared with ``same``. ``children(obj)``: the
    objects it holds, each with the suffix that names it (".grad", "[0]"). ``copy(obj)``: what ``restore``
    needs to put the state back (None: it cannot be; a kind that ``holds_state`` needs none). ``equal``:
    whether ``obj`` holds the same values as ``other``, of its kind or its copy (a second run wrote them
    again). ``costly``: reading it costs time with its memory, skipped for a cell proven pure.
    """

    types: tuple[type, ...] = ()
    costly = False
    holds_state = False  # True: the token is itself what ``restore`` needs (a container's items)

    def token(self, obj: Any) -> Any:
        return None

    def same(self, before: Any, after: Any) -> bool:
        return bool(before == after)

    def children(self, obj: Any) -> Iterable[tuple[str, Any]]:
        return ()

    def copy(self, obj: Any) -> Any:
        return None

    def restore(self, obj: Any, saved: Any) -> None:
        raise Unseen(f"a {type(obj).__name__} cannot be put back")

    def equal(self, obj: Any, other: Any) -> bool:
        return False

    def change(self, before: Any, after: Any) -> str:
        """What the report writes after the object's path for a change of token: "" or " (written in place)"."""
        return ""


class Leaf(Kind):
    """Immutable objects of a framework (dtypes, devices, immutable arrays): nothing to read."""

    def __init__(self, *types: type) -> None:
        self.types = types


class Stateful(Kind):
    """A random generator of the user's own by its state (the global ones are put back anyway): ``state`` reads
    it, ``put`` sets it, ``encode`` turns it into bytes to compare."""

    def __init__(self, types: tuple[type, ...], state: Callable[[Any], Any], put: Callable[[Any, Any], None],
                 encode: Callable[[Any], bytes]) -> None:
        self.types, self._state, self._put, self._encode = types, state, put, encode

    def token(self, generator: Any) -> bytes:
        return self._encode(self._state(generator))

    def copy(self, generator: Any) -> Any:
        return self._state(generator)

    def equal(self, generator: Any, other: Any) -> bool:
        """Against another generator, or a state copied."""
        return self.token(generator) == self._encode(self._state(other) if isinstance(other, self.types) else other)

    def restore(self, generator: Any, saved: Any) -> None:
        self._put(generator, saved)


class Opaque(Kind):
    """Objects the host cannot read without synchronizing a device (a GPU array with no version counter)."""

    costly = True

    def __init__(self, why: str, *types: type) -> None:
        self.types, self.why = types, why

    def token(self, obj: Any) -> Any:
        raise Unseen(self.why)


def present(module: Any, *names: str) -> tuple[type, ...]:
    """The classes ``module.name`` (dotted) that exist in this version of the framework."""
    found = (functools.reduce(lambda value, part: getattr(value, part, None), name.split("."), module)
             for name in names)
    return tuple(value for value in found if isinstance(value, type))
