"""Numba compilation during the cold run, from ``numba.core.event``: a jitted function compiles on
its first call with new argument types, inside the cold run."""

from __future__ import annotations

import time
import weakref
from typing import Any

from .probe import Cause, Probe

# numba 0.68's ``compiler_lock.py``: every compile (a dispatcher's, a ufunc's) and every cache load
# holds the compiler lock, so its outermost spans are the time spent compiling. ``dispatcher.py``'s
# "numba:compile" says which function was compiled for which types; a @vectorize ufunc has no such event.
KINDS = ("numba:compiler_lock", "numba:compile")
UNNAMED = "code compiled, or loaded from Numba's disk cache, with no function named (a @vectorize ufunc, a CUDA kernel)"


class Compiles:
    """What Numba reported compiling so far: the seconds of the outermost compiler-lock spans (the
    lock is reentrant: a jitted callee compiles inside its caller's span, counted once) and the
    user's functions it compiled, by name and types (Numba's own helpers compile too, unnamed)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.compiled: list[str] = []
        self._depth, self._since = 0, 0.0

    def notify(self, event: Any) -> None:
        """``numba.core.event.Listener``'s one call, for both kinds' start and end events. It must
        not raise: Numba calls it inside the user's compile."""
        if event.kind == "numba:compile":
            function = event.data["dispatcher"].py_func
            if event.is_end and not (function.__module__ or "").startswith("numba."):
                types = ", ".join(str(arg) for arg in event.data["args"])
                self.compiled.append(f"`{function.__qualname__}` compiled for ({types})")
        elif event.is_start:
            self._depth += 1
            if self._depth == 1:
                self._since = time.perf_counter()
        elif self._depth:  # an end whose start came before this listener is not counted
            self._depth -= 1
            if not self._depth:
                self.seconds += time.perf_counter() - self._since


class NumbaProbe(Probe[dict[str, float]]):
    """Reads the compiles Numba reported between the moments. One ``Compiles`` listens per probe
    (one per owner, ``ProbeSet``), from then on, and is removed once the probe is gone."""

    label = "Numba compile events"

    def __init__(self, event: Any) -> None:
        self._compiles = Compiles()
        event.Listener.register(Compiles)  # a virtual subclass: ``event.register`` asks isinstance
        for kind in KINDS:
            event.register(kind, self._compiles)
            weakref.finalize(self, event.unregister, kind, self._compiles)

    @classmethod
    def detect(cls, numba: Any) -> NumbaProbe | None:
        event = getattr(getattr(numba, "core", None), "event", None)
        return None if event is None or not hasattr(event, "register") else cls(event)

    def state(self, moment: str) -> dict[str, float]:
        return {"seconds": self._compiles.seconds, "compiled": len(self._compiles.compiled)}

    def causes(self, before: dict[str, float], after_cold: dict[str, float], after_warm: dict[str, float] | None,
               source: str | None = None) -> list[Cause]:
        seconds = after_cold["seconds"] - before["seconds"]
        if seconds <= 0:
            return []
        compiled = self._compiles.compiled[int(before["compiled"]):int(after_cold["compiled"])]
        what = "; ".join(compiled) or UNNAMED
        return [Cause("Numba compilation", seconds, f"{what}: cached for later runs")]
