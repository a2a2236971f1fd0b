"""The interface every cold-run probe implements, and the ``Cause`` records it returns: a probe
reads a small state at the runner's three moments and turns what changed into causes. Like a
backend, it is made only for a framework the user already imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from ...results.schema import FLAG, SECONDS, TEXT, optional, record

# What one kind of probe reads at each moment (``Probe.state``): its own small dict, or None.
State = TypeVar("State")


@dataclass(frozen=True)
class Cause:
    """One reason the cold run was slower: ``seconds`` when it can be measured, else None. ``explains``
    is False for context shown beside the causes (precision settings, GPU clocks) that is no cost."""

    name: str
    seconds: float | None = None
    detail: str = ""
    explains: bool = True


CAUSE = record({"name": TEXT, "seconds": optional(SECONDS), "detail": TEXT, "explains": FLAG}, required=("name",))


class Probe(Generic[State]):
    """Cheap state read around the cold run: ``state()`` must take microseconds and must
    never initialize a device (the cold run pays for that, and shows it)."""

    label: ClassVar[str] = "probe"  # what it reads, as a report names it when reading failed ("... not read")

    @classmethod
    def detect(cls, module: Any) -> Probe[Any] | None:
        """A probe for ``module`` (the framework, already imported), or None where it has nothing to read."""
        raise NotImplementedError

    def state(self, moment: str) -> State:
        """A small dict (or None) read at ``moment``: "before", "after_cold" or "after_warm"."""
        raise NotImplementedError

    def initial(self) -> State | None:
        """The state ``state("before")`` would have read before the framework was imported, for a
        cell whose cold run imports it; None where it cannot be known (the default)."""
        return None

    def causes(self, before: State, after_cold: State, after_warm: State | None,
               source: str | None = None) -> list[Cause]:
        """``Cause`` records for what changed; ``after_warm`` is None when no warm runs were read.
        ``source`` is the cell's code (None when unknown), for a cause that a state alone cannot
        tell from another (a block of cuBLAS's workspace size is also a tensor's)."""
        return []

