"""The interface every cold-run probe implements, and the ``Cause`` records it returns.

A probe reads a small dict of state at the runner's three moments (before the cold
run, after it, after the warm runs) and turns what changed into causes. Like a
backend, it is made only for a framework the user already imported.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    """One reason the cold run was slower: ``seconds`` when it can be measured, else None.

    ``explains`` is False for context worth showing beside the causes (precision
    settings, GPU clocks) that is not itself a one-time cost.
    """

    name: str
    seconds: float = None
    detail: str = ""
    explains: bool = True


class Probe:
    """Cheap state read around the cold run: ``state()`` must take microseconds and must
    never initialize a device (the cold run pays for that, and shows it)."""

    @classmethod
    def detect(cls, module):
        """A probe for ``module`` (the framework, already imported), or None where it has nothing to read."""
        raise NotImplementedError

    def state(self, moment):
        """A small dict (or None) read at ``moment``: "before", "after_cold" or "after_warm"."""
        raise NotImplementedError

    def initial(self):
        """The state ``state("before")`` would have read before the framework was imported, for a
        cell whose cold run imports it; None where it cannot be known (the default)."""
        return None

    def causes(self, before, after_cold, after_warm, source=None):
        """``Cause`` records for what changed; ``after_warm`` is None when no warm runs were read.
        ``source`` is the cell's code (None when unknown), for a cause that a state alone cannot
        tell from another (a block of cuBLAS's workspace size is also a tensor's)."""
        return []

    def memory(self, before, after_cold, after_warm):
        """The cell's peak device memory (``memory.DeviceMemory``), or None where this probe cannot tell."""
        return None
