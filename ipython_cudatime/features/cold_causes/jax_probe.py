"""JAX compilation during the cold run, from ``jax.monitoring`` duration events."""

from __future__ import annotations

from typing import Any

from .probe import Cause, Probe

# The durations JAX records for compiling (jax 0.11 ``dispatch.py``: jaxpr trace, lowering to MLIR,
# backend compile, whose span includes a persistent-cache read). Other events name "compile" without
# being time spent on it: "/jax/compilation_cache/compile_time_saved_sec" is time a cache hit *saved*.
COMPILE_EVENTS = "/jax/core/compile/"


class JaxProbe(Probe[dict[str, float]]):
    """Adds up compile and trace durations as JAX reports them. JAX listeners cannot be
    removed, so one probe is made per owner (``ProbeSet``) and listens from then on."""

    label = "JAX compile events"

    def __init__(self, jax: Any) -> None:
        self.compile_seconds = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event: str, duration: float, **_: Any) -> None:
        if event.startswith(COMPILE_EVENTS):
            self.compile_seconds += duration

    @classmethod
    def detect(cls, jax: Any) -> JaxProbe | None:
        listens = hasattr(getattr(jax, "monitoring", None), "register_event_duration_secs_listener")
        return cls(jax) if listens else None

    def state(self, moment: str) -> dict[str, float]:
        return {"compile": self.compile_seconds}

    def causes(self, before: dict[str, float], after_cold: dict[str, float], after_warm: dict[str, float] | None,
               source: str | None = None) -> list[Cause]:
        compiled = after_cold["compile"] - before["compile"]
        if compiled <= 0:
            return []
        return [Cause("JAX compilation", compiled,
                      "jit tracing and XLA compilation of new shapes/functions; cached for later runs")]
