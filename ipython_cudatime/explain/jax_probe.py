"""JAX compilation during the cold run, from ``jax.monitoring`` duration events."""

from .probe import Cause, Probe


class JaxProbe(Probe):
    """Adds up compile and trace durations as JAX reports them. JAX listeners cannot be
    removed, so one probe is made per owner (``ProbeSet``) and listens from then on."""

    def __init__(self, jax):
        self.compile_seconds = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, duration, **_):
        if "compile" in event or "jaxpr_trace" in event:
            self.compile_seconds += duration

    @classmethod
    def detect(cls, jax):
        monitoring = getattr(jax, "monitoring", None)
        if monitoring is None or not hasattr(monitoring, "register_event_duration_secs_listener"):
            return None
        return cls(jax)

    def state(self, moment):
        return {"compile": self.compile_seconds}

    def causes(self, before, after_cold, after_warm):
        compiled = after_cold["compile"] - before["compile"]
        if compiled <= 0:
            return []
        return [Cause("JAX compilation", compiled,
                      "jit tracing and XLA compilation of new shapes/functions; cached for later runs")]
