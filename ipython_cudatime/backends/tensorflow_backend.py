"""TensorFlow: eager ops on a GPU are asynchronous; ``tf.test.experimental.sync_devices()`` (TensorFlow ≥ 2.12,
eager mode only) waits for every device. Elsewhere the report says it could not synchronize, rather than guess."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .base import Backend, made_by
from .objects import Kind, Leaf, Opaque, present


class TensorflowBackend(Backend):
    name = "tensorflow"
    packages = ("tensorflow", "keras", "tf_keras")

    def __init__(self, tf: Any, sync: Callable[[], None] | None) -> None:
        self._tf = tf
        self._sync = sync

    @classmethod
    def kinds(cls, tf: Any) -> tuple[Kind, ...]:
        """Tensors are immutable; a Variable's values may be on a device and keep no version counter."""
        return (Leaf(*present(tf, "Tensor", "TensorShape", "DType")),
                Opaque("a TensorFlow Variable's values may be on a device", *present(tf, "Variable")))

    @classmethod
    def detect(cls, tf: Any) -> TensorflowBackend | None:
        sync = getattr(getattr(getattr(tf, "test", None), "experimental", None), "sync_devices", None)
        return cls(tf, sync) if hasattr(tf, "config") else None  # None: a partly imported module

    @property
    def active(self) -> bool:
        """Whether TensorFlow's runtime is up. Until then there is nothing to wait for, and asking it about
        devices would start it (taking most of each GPU's memory) and freeze its configuration."""
        context = sys.modules.get("tensorflow.python.eager.context")
        return bool(getattr(context.context(), "_initialized", True)) if context is not None else False

    def touched(self, seen: list[Any]) -> bool:
        """Only where the cell used TensorFlow's objects: its runtime, once up, stays up for later cells too."""
        return made_by(seen, self.packages)

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        if self.active and self._sync is not None and self._tf.executing_eagerly():
            self._sync()

    def describe(self) -> str:
        gpus = self._tf.config.list_physical_devices("GPU")  # physical: does not start the runtime
        return "tensorflow gpu:0" if gpus else "tensorflow cpu"

    @property
    def note(self) -> str | None:
        if not self._tf.executing_eagerly():  # does not start the runtime
            return "tensorflow is in graph mode, where devices cannot be synchronized: its work was not waited for"
        if self.active and self._sync is None:
            return (f"tensorflow {self._tf.__version__} has no tf.test.experimental.sync_devices "
                    "(it came with 2.12): its GPU work was not waited for")
        return None
