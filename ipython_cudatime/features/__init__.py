"""The measurement features, one module each (see ``feature.Feature``); ``FEATURES`` is the list
the magics use by default. A new feature is its own module and one line here. The order is the
order of their words in every report and of their runs: the extra runs come in this order."""

from .cold_causes import ColdCauses
from .feature import Call, Feature, Unavailable
from .memory import Memory
from .profile import Profiling
from .roofline import RooflineFeature

FEATURES = (ColdCauses(), Profiling(), RooflineFeature(), Memory())

__all__ = ["FEATURES", "Call", "Feature", "Unavailable"]
