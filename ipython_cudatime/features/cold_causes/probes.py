"""Why the cold run was slow: the probes of frameworks already imported, read around it, turned into
causes. A probe that raises (made, read or asked for its causes) is one cause saying what was not read
and why (``not_read``, in place of its state: no state is a ``Cause``): the measurement stands.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Collection, Iterable
from typing import Any

from ...measure.runner import Outcome, Watch
from ...units import failure_text
from .jax_probe import JaxProbe
from .numba_probe import NumbaProbe
from .nvml_probe import NvmlProbe
from .page_fault_probe import PageFaultProbe
from .probe import Cause, Probe
from .torch_probe import TorchProbe

__all__ = ["OTHER_INPUTS", "PROBES", "Cause", "ColdWatch", "Probe", "ProbeSet", "remainder"]

# (module the user must have imported, probe class whose detect(module) returns a probe or None).
Entry = tuple[str, type[Probe[Any]]]
# The default registry of ``ProbeSet``; a tuple, so that nobody patches it in place. The page faults
# are the process's own, whatever the framework: "os" is always imported.
PROBES: tuple[Entry, ...] = (("torch", TorchProbe), ("jax", JaxProbe), ("numba", NumbaProbe), ("torch", NvmlProbe),
                             ("os", PageFaultProbe))


OTHER_INPUTS = "warm runs on other inputs"  # a cause that is no cost of the cold run's: what the warm runs timed


def not_read(probe: Probe[Any] | type[Probe[Any]], error: Exception) -> Cause:
    """The one line for a probe that raised: "PyTorch state not read: ..." (``Probe.label``, ``failure_text``)."""
    return Cause(f"{probe.label} not read", None, failure_text(error), explains=False)


class Unmade(Probe[None]):
    """A probe whose ``detect`` raised: it reads nothing, and each report says why once."""

    def __init__(self, probe_class: type[Probe[Any]], error: Exception) -> None:
        self._cause = not_read(probe_class, error)

    def state(self, moment: str) -> None:
        return None

    def causes(self, before: None, after_cold: None, after_warm: None, source: str | None = None) -> list[Cause]:
        return [self._cause]


def _reading(probe: Probe[Any], read: Callable[[], Any]) -> Any:
    """What ``read`` (``probe``'s ``state`` or ``initial``) returns, or the ``Cause`` saying why not where it raised."""
    try:
        return read()
    except Exception as error:
        return not_read(probe, error)


def _probe_causes(probe: Probe[Any], source: str | None, before: Any, after_cold: Any, after_warm: Any) -> list[Cause]:
    """The probe's causes; where a reading or the causes themselves raised, one cause saying so."""
    unread = [state for state in (before, after_cold, after_warm) if isinstance(state, Cause)]
    if unread:
        return unread[:1]
    try:
        return probe.causes(before, after_cold, after_warm, source)
    except Exception as error:
        return [not_read(probe, error)]


class ProbeSet:
    """The probes of ``registry`` for the frameworks imported so far, each made once and kept by its
    owner (the magics): a probe may listen across cells (``JaxProbe``'s listener cannot be removed)."""

    def __init__(self, registry: Collection[Entry] = PROBES) -> None:
        self._registry = registry
        self._made: dict[Entry, Probe[Any] | None] = {}

    def active(self) -> list[Probe[Any]]:
        for entry in self._registry:
            framework = sys.modules.get(entry[0])
            if framework is not None and self._made.get(entry) is None:
                try:
                    self._made[entry] = entry[1].detect(framework)
                except Exception as error:  # a framework version the probe does not know: say so, never fail the cell
                    self._made[entry] = Unmade(entry[1], error)
        return [probe for entry in self._registry if sys.modules.get(entry[0]) is not None
                and (probe := self._made.get(entry)) is not None]


class ColdWatch(Watch):
    """Reads every active probe at the runner's three moments, then names the causes: its record."""

    def __init__(self, probes: list[Probe[Any]], source: str | None = None, probe_set: ProbeSet | None = None) -> None:
        self.probes, self._probe_set = probes, probe_set
        self.source = source  # the cell's code, for the probes' causes (see ``Probe.causes``)
        self.states: dict[str, list[Any]] = {}  # moment -> each probe's state then

    @classmethod
    def detect(cls, probes: ProbeSet, source: str | None = None) -> ColdWatch:
        return cls(probes.active(), source, probes)

    def snapshot(self, moment: str) -> None:
        self.states[moment] = [_reading(probe, functools.partial(probe.state, moment)) for probe in self.probes]

    def before(self) -> None:
        self.snapshot("before")

    def after_cold(self) -> None:
        """The probes of frameworks the cold run imported join first, each with the state it reads before
        its framework was ever used (``Probe.initial``) as its "before"; a probe with none cannot say what
        the cold run changed and stays out."""
        if self._probe_set is not None and "before" in self.states:
            for probe in self._probe_set.active():
                initial = None if probe in self.probes else _reading(probe, probe.initial)
                if initial is not None:
                    self.probes.append(probe)
                    self.states["before"].append(initial)
        self.snapshot("after_cold")

    def after_warm(self) -> None:
        self.snapshot("after_warm")

    def record(self, outcome: Outcome) -> list[Cause]:
        """The probes' causes; and where the warm runs started from other inputs than the cold run, that too:
        the gap is then no longer a mystery of the cold run's."""
        other = [Cause(OTHER_INPUTS, None, outcome.other_start)] if outcome.other_start else []
        return self.causes() + other

    def causes(self) -> list[Cause]:
        before, after_cold = self.states.get("before"), self.states.get("after_cold")
        if before is None or after_cold is None:
            return []
        after_warm = self.states.get("after_warm") or [None] * len(self.probes)
        return [cause for probe, *states in zip(self.probes, before, after_cold, after_warm)
                for cause in _probe_causes(probe, self.source, *states)]


def remainder(causes: Iterable[Cause], cold_seconds: float, warm_seconds: float | None) -> float:
    """Cold time not accounted for by the warm work itself and the causes with seconds."""
    named = sum(cause.seconds for cause in causes if cause.seconds)
    return max(cold_seconds - (warm_seconds or 0.0) - named, 0.0)
