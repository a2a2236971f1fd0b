"""TensorFlow: eager ops on a GPU are asynchronous; ``tf.test.experimental.sync_devices()``
(TensorFlow ≥ 2.12, eager mode only) waits for every device. Elsewhere the report says
that TensorFlow could not be synchronized, rather than guess."""

from .base import Backend


class TensorflowBackend(Backend):
    name = "tensorflow"

    def __init__(self, tf, sync):
        self._tf = tf
        self._sync = sync

    @classmethod
    def detect(cls, tf):
        if not hasattr(tf, "config"):
            return None  # a partly imported module
        sync = getattr(getattr(getattr(tf, "test", None), "experimental", None), "sync_devices", None)
        return cls(tf, sync)

    def _can_sync(self):
        return self._sync is not None and self._tf.executing_eagerly()

    def synchronize(self, outputs=None):
        if self._can_sync():
            self._sync()

    def describe(self):
        gpus = self._tf.config.list_logical_devices("GPU")
        return f"tensorflow {gpus[0].name}" if gpus else "tensorflow cpu"

    @property
    def note(self):
        if self._sync is None:
            return (f"tensorflow {self._tf.__version__} has no tf.test.experimental.sync_devices "
                    "(it came with 2.12): its GPU work was not waited for")
        if not self._tf.executing_eagerly():
            return "tensorflow is in graph mode, where devices cannot be synchronized: its work was not waited for"
        return None
