"""JAX compilation during the cold run, from ``jax.monitoring`` duration events."""

_COMPILE_SECONDS = [0.0]  # module-wide: JAX listeners cannot be removed, so register once
_REGISTERED = [False]


def _listen(event, duration, **_):
    if "compile" in event or "jaxpr_trace" in event:
        _COMPILE_SECONDS[0] += duration


class JaxProbe:
    def __init__(self, jax):
        if not _REGISTERED[0]:
            jax.monitoring.register_event_duration_secs_listener(_listen)
            _REGISTERED[0] = True

    @classmethod
    def detect(cls, jax):
        monitoring = getattr(jax, "monitoring", None)
        if monitoring is None or not hasattr(monitoring, "register_event_duration_secs_listener"):
            return None
        return cls(jax)

    def state(self, moment):
        return {"compile": _COMPILE_SECONDS[0]}

    def causes(self, before, after, warm):
        compiled = after["compile"] - before["compile"]
        if compiled <= 0:
            return []
        return [("JAX compilation", compiled,
                 "jit tracing and XLA compilation of new shapes/functions; cached for later runs")]
