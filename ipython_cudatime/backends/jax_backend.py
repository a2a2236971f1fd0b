"""JAX: dispatch is asynchronous on every platform, the CPU included, and there is no public global
synchronize (jax#4335). So this backend waits on every JAX array in what the run produced (its value and
the names it bound, pytrees included); then, on GPUs and TPUs, a tiny computation on each device, waited
for, drains its in-order compute stream (a transfer, on the transfer stream, would not). Its input is put
on each device once per process (``_tokens``), so no transfer happens inside a sample.

Before every run, outside the timed span, it also waits on every live JAX array (2-4 µs each, measured by
``benchmarks/overhead.py``): work an earlier cell queued, or the last run left outside its outputs, would
otherwise be billed to the run.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, ClassVar

from .base import Backend, made_by
from .objects import Kind, Leaf, present


class JaxBackend(Backend):
    packages = ("jax", "jaxlib")
    # device -> a scalar already on it, the drain's input: made once per process (a backend lives one call)
    _tokens: ClassVar[dict[Any, Any]] = {}

    def __init__(self, jax: Any) -> None:
        self._jax = jax
        self.blocked = 0  # JAX arrays waited on after the last run (0: nothing to wait on)
        self._live = 0  # live JAX arrays when the measurement began

    def _live_arrays(self) -> list[Any]:
        live_arrays = getattr(self._jax, "live_arrays", None)  # JAX >= 0.4
        return live_arrays() if live_arrays is not None and self.active else []

    def begin(self) -> None:
        self._live = len(self._live_arrays())

    def touched(self, seen: list[Any]) -> bool:
        """The last run produced or bound JAX arrays, the cell read JAX's objects (``jnp``, a jitted function),
        or new arrays are alive. JAX's backends, once started, stay up: an earlier JAX cell proves nothing."""
        return self.active and (self.blocked > 0 or made_by(seen, self.packages)
                                or len(self._live_arrays()) > self._live)

    @classmethod
    def kinds(cls, jax: Any) -> tuple[Kind, ...]:
        """JAX's arrays are immutable: an update makes a new array, which a name restore undoes."""
        return (Leaf(*present(jax, "Array")),)

    @classmethod
    def detect(cls, jax: Any) -> JaxBackend | None:
        return cls(jax) if hasattr(jax, "block_until_ready") else None

    @property
    def active(self) -> bool:
        """Whether JAX's backends are up. Never start them ourselves: on a GPU they preallocate most of its memory."""
        bridge = getattr(getattr(self._jax, "_src", None), "xla_bridge", None)
        check = getattr(bridge, "backends_are_initialized", None)
        return check() if check is not None else True

    @functools.cached_property
    def _devices(self) -> list[Any]:
        return list(self._jax.devices())

    @property
    def name(self) -> str:
        device = self._devices[0]
        return f"jax {device.platform}:{device.id}"

    def settle(self) -> None:
        for array in self._live_arrays():
            with contextlib.suppress(RuntimeError):  # deleted (donated) meanwhile: nothing to wait for
                array.block_until_ready()

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        if not self.active:
            return
        jax = self._jax
        if outputs is None:
            self.settle()
        else:
            produced = outputs()
            try:
                leaves = jax.tree_util.tree_leaves(produced)
            except Exception:  # e.g. a dict whose keys cannot be sorted: wait on top-level values only
                leaves = produced
            arrays = [leaf for leaf in leaves if isinstance(leaf, jax.Array)]
            jax.block_until_ready(arrays)
            self.blocked = len(arrays)
        for device in self._devices:
            if device.platform != "cpu":
                self._drain(device)

    def _drain(self, device: Any) -> None:
        """A computation on ``device``'s compute stream, waited for: it runs after everything queued there."""
        token = self._tokens.get(device)
        if token is None:
            token = self._tokens[device] = self._jax.device_put(0, device)
        (token + 0).block_until_ready()

    def describe(self) -> str:
        return f"{self.name} {self._devices[0].device_kind}"

    @property
    def note(self) -> str | None:
        if self.active and self.blocked == 0:
            return ("jax: the cell returned and bound no JAX array to wait on; JAX has no global "
                    "synchronize, so work whose results were not kept may have been missed")
        return None
