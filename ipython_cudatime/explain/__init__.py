"""Why the cold run was slow: cheap state probes read before and after it, turned into causes.

Like the backends, a probe is used only when its framework is already imported.
A probe's ``state()`` is a small dict read in microseconds; its
``causes(before, after_cold, after_warm)`` names what changed as ``Cause`` records.
"""

import sys
from dataclasses import dataclass

from .jax_probe import JaxProbe
from .nvml_probe import NvmlProbe
from .torch_probe import TorchProbe

# (module the user must have imported, probe class whose detect(module) returns a probe or None)
PROBES = [("torch", TorchProbe), ("jax", JaxProbe), ("torch", NvmlProbe)]


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


def active_probes(modules=None):
    modules = sys.modules if modules is None else modules
    found = []
    for module_name, probe_class in PROBES:
        framework = modules.get(module_name)
        probe = probe_class.detect(framework) if framework is not None else None
        if probe is not None:
            found.append(probe)
    return found


class ColdWatch:
    """Reads every active probe at the runner's three moments, then names the causes."""

    def __init__(self, probes):
        self.probes = probes
        self.states = {}

    @classmethod
    def detect(cls):
        return cls(active_probes())

    def snapshot(self, moment):
        """``moment`` is "before", "after_cold" or "after_warm"."""
        self.states[moment] = [probe.state(moment) for probe in self.probes]

    def causes(self):
        found = []
        before = self.states.get("before")
        after_cold = self.states.get("after_cold")
        if before is None or after_cold is None:
            return found
        after_warm = self.states.get("after_warm") or [None] * len(self.probes)
        for probe, b, c, w in zip(self.probes, before, after_cold, after_warm):
            found.extend(Cause(*cause) for cause in probe.causes(b, c, w))
        return found


    def memory(self):
        """The cell's peak device memory from the torch probe (``memory.DeviceMemory``), or None."""
        for index, probe in enumerate(self.probes):
            if isinstance(probe, TorchProbe):
                before, after_cold = self.states.get("before"), self.states.get("after_cold")
                if before is None or after_cold is None:
                    return None
                after_warm = self.states.get("after_warm")
                return probe.memory(before[index], after_cold[index], after_warm and after_warm[index])
        return None


def remainder(causes, cold_seconds, warm_seconds):
    """Cold time not accounted for by the warm work itself and the causes with seconds."""
    named = sum(cause.seconds for cause in causes if cause.seconds)
    return max(cold_seconds - (warm_seconds or 0.0) - named, 0.0)
