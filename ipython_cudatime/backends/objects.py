"""How the repeat decision sees a framework's objects: one ``Kind`` per type of object. ``%cudatime``
repeats a cell only when its first run changed nothing the user keeps, or changed it to what a second run
writes again (``fingerprint``). A framework's objects are read through the kinds its backend declares
(``Backend.kinds``), on the host only (never synchronizing a device or creating a context); ``Unseen``
where that cannot be done."""

from __future__ import annotations

from collections.abc import Iterable
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


class Opaque(Kind):
    """Objects the host cannot read without synchronizing a device (a GPU array with no version counter)."""

    costly = True

    def __init__(self, why: str, *types: type) -> None:
        self.types, self.why = types, why

    def token(self, obj: Any) -> Any:
        raise Unseen(self.why)


def present(module: Any, *names: str) -> tuple[type, ...]:
    """The classes ``module.name`` (dotted) that exist in this version of the framework."""
    found = []
    for name in names:
        value = module
        for part in name.split("."):
            value = getattr(value, part, None)
        if isinstance(value, type):
            found.append(value)
    return tuple(found)
