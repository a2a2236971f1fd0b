"""Why the cold run was slow: the probes of frameworks already imported, read around it, turned into
causes. A probe that raises (made, read or asked for its causes) is one cause saying what was not read
and why (``Unread``): the measurement stands.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...measure.runner import Outcome, Watch
from ...units import failure_text
from .jax_probe import JaxProbe
from .nvml_probe import NvmlProbe
from .page_fault_probe import PageFaultProbe
from .probe import Cause, Probe
from .torch_probe import TorchProbe

__all__ = ["PROBES", "Cause", "ColdWatch", "Probe", "ProbeSet", "Unread", "remainder"]

# (module the user must have imported, probe class whose detect(module) returns a probe or None).
Entry = tuple[str, type[Probe[Any]]]
# The default registry of ``ProbeSet``; a tuple, so that nobody patches it in place. The page faults
# are the process's own, whatever the framework: "os" is always imported.
PROBES: tuple[Entry, ...] = (("torch", TorchProbe), ("jax", JaxProbe), ("torch", NvmlProbe), ("os", PageFaultProbe))


@dataclass(frozen=True)
class Unread:
    """A probe's reading that raised, in place of its state: ``text`` says why (``failure_text``)."""

    text: str

    def cause(self, label: str) -> Cause:
        """The one line for the probe of ``label`` (``Probe.label``): "PyTorch state not read: ..."."""
        return Cause(f"{label} not read", None, self.text, explains=False)


class Unmade(Probe[None]):
    """A probe whose ``detect`` raised: it reads nothing, and each report says why once."""

    def __init__(self, probe_class: type[Probe[Any]], error: Exception) -> None:
        self._cause = Unread(failure_text(error)).cause(probe_class.label)

    def state(self, moment: str) -> None:
        return None

    def causes(self, before: None, after_cold: None, after_warm: None, source: str | None = None) -> list[Cause]:
        return [self._cause]


def _made(probe_class: type[Probe[Any]], framework: Any) -> Probe[Any] | None:
    try:
        return probe_class.detect(framework)
    except Exception as error:  # a framework version the probe does not know: say so, never fail the cell
        return Unmade(probe_class, error)


def _reading(read: Callable[[], Any]) -> Any:
    """What ``read`` (a probe's ``state`` or ``initial``) returns, or an ``Unread`` where it raised."""
    try:
        return read()
    except Exception as error:
        return Unread(failure_text(error))


def _probe_causes(probe: Probe[Any], states: tuple[Any, Any, Any], source: str | None) -> list[Cause]:
    """The probe's causes; where a reading or the causes themselves raised, one cause saying so."""
    unread = [state for state in states if isinstance(state, Unread)]
    if unread:
        return [unread[0].cause(probe.label)]
    try:
        return probe.causes(*states, source=source)
    except Exception as error:
        return [Unread(failure_text(error)).cause(probe.label)]


class ProbeSet:
    """The probes of ``registry`` for the frameworks imported so far, each made once and kept
    by its owner (the magics): a probe may listen across cells (JAX's compile listener cannot
    be removed, so the one JaxProbe registers it once)."""

    def __init__(self, registry: Collection[Entry] = PROBES) -> None:
        self._registry = registry
        self._made: dict[Entry, Probe[Any] | None] = {}

    def active(self, modules: Mapping[str, Any] | None = None) -> list[Probe[Any]]:
        modules = sys.modules if modules is None else modules
        found = []
        for entry in self._registry:
            module_name, probe_class = entry
            framework = modules.get(module_name)
            if framework is None:
                continue
            if self._made.get(entry) is None:
                self._made[entry] = _made(probe_class, framework)
            probe = self._made[entry]
            if probe is not None:
                found.append(probe)
        return found


class ColdWatch(Watch):
    """Reads every active probe at the runner's three moments, then names the causes: its record."""

    def __init__(self, probes: list[Probe[Any]], source: str | None = None, probe_set: ProbeSet | None = None) -> None:
        self.probes = probes
        self.source = source  # the cell's code, for the probes' causes (see ``Probe.causes``)
        self.states: dict[str, list[Any]] = {}  # moment -> each probe's state then
        self._probe_set = probe_set

    @classmethod
    def detect(cls, probes: ProbeSet, source: str | None = None) -> ColdWatch:
        """A watch over the active probes of ``probes`` (a ``ProbeSet``) for the cell ``source``."""
        return cls(probes.active(), source, probes)

    def redetect(self) -> None:
        """After the cold run: the probes of frameworks it imported join, each with the state it
        reads before its framework was ever used (``Probe.initial``) as its "before"; a probe
        with none cannot say what the cold run changed and stays out."""
        if self._probe_set is None or "before" not in self.states:
            return
        for probe in self._probe_set.active():
            initial = None if probe in self.probes else _reading(probe.initial)
            if initial is not None:
                self.probes.append(probe)
                self.states["before"].append(initial)

    def snapshot(self, moment: str) -> None:
        """``moment`` is "before", "after_cold" or "after_warm"."""
        self.states[moment] = [_reading(functools.partial(probe.state, moment)) for probe in self.probes]

    def before(self) -> None:
        self.snapshot("before")

    def after_cold(self) -> None:
        self.redetect()
        self.snapshot("after_cold")

    def after_warm(self) -> None:
        self.snapshot("after_warm")

    def record(self, outcome: Outcome) -> list[Cause]:
        return self.causes()

    def _per_probe(self) -> list[tuple[Probe[Any], Any, Any, Any]]:
        """(probe, before, after_cold, after_warm) for each probe, or nothing before the cold run was read."""
        before, after_cold = self.states.get("before"), self.states.get("after_cold")
        if before is None or after_cold is None:
            return []
        after_warm = self.states.get("after_warm") or [None] * len(self.probes)
        return list(zip(self.probes, before, after_cold, after_warm))

    def causes(self) -> list[Cause]:
        return [cause for probe, *states in self._per_probe()
                for cause in _probe_causes(probe, (states[0], states[1], states[2]), self.source)]


def remainder(causes: Iterable[Cause], cold_seconds: float, warm_seconds: float | None) -> float:
    """Cold time not accounted for by the warm work itself and the causes with seconds."""
    named = sum(cause.seconds for cause in causes if cause.seconds)
    return max(cold_seconds - (warm_seconds or 0.0) - named, 0.0)
