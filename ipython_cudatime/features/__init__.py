"""The measurement features, one module each (see ``feature.Feature``); ``FEATURES`` is the list
the magics use by default. A new feature is its own module and one line here. The order is the
order of their words in every report and of their runs: the extra runs come in this order. The
CPU facts come last: their noise warning closes the features' findings, and its section theirs."""

from .cold_causes import ColdCauses
from .cpu_context import CpuFacts
from .feature import Call, Feature, Unavailable
from .memory import Memory
from .profile import Profiling
from .roofline import RooflineFeature

FEATURES = (ColdCauses(), Profiling(), RooflineFeature(), Memory(), CpuFacts())

__all__ = ["FEATURES", "Call", "Feature", "Unavailable"]
