"""The measurement features (``feature.Feature``); ``FEATURES``, the magics' default, orders their
words in every report and their extra runs. The CPU facts come last: their noise warning closes
the features' findings, and its section theirs."""

from .cold_causes import ColdCauses
from .cpu_context import CpuFacts
from .feature import Call, Feature, Unavailable
from .memory import Memory
from .profile import Profiling
from .roofline import RooflineFeature

FEATURES = (ColdCauses(), Profiling(), RooflineFeature(), Memory(), CpuFacts())

__all__ = ["FEATURES", "Call", "Feature", "Unavailable"]
