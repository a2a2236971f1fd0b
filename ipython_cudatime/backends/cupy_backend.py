"""CuPy: kernels launch asynchronously on the current stream; events time them."""

from .base import Backend, EventTimer


class CupyBackend(Backend):
    packages = ("cupy", "cupyx")

    def __init__(self, cupy):
        self._cupy = cupy
        self._timer = None

    @classmethod
    def detect(cls, cupy):
        try:
            return cls(cupy) if cupy.cuda.runtime.getDeviceCount() > 0 else None
        except Exception:  # CUDA driver missing or broken: nothing asynchronous to wait for
            return None

    @property
    def active(self):
        """A context in this thread means CuPy (or another framework) has used the GPU;
        without one there is nothing queued, and we must not create one."""
        return self._cupy.cuda.driver.ctxGetCurrent() != 0

    @property
    def name(self):
        return f"cupy cuda:{self._cupy.cuda.Device().id}"

    def synchronize(self, outputs=None):
        if self.active:
            self._cupy.cuda.Device().synchronize()

    def timer(self):
        if self._timer is None and self.active:
            self._timer = EventTimer(self._cupy.cuda.Event, self._cupy.cuda.get_elapsed_time)
        return self._timer

    def describe(self):
        device = self._cupy.cuda.Device()
        name = self._cupy.cuda.runtime.getDeviceProperties(device.id)["name"]
        return f"cuda:{device.id} {name.decode() if isinstance(name, bytes) else name}"
