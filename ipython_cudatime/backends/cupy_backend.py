"""CuPy: kernels launch asynchronously on the current stream; events time them."""

from .base import Backend, DeviceTimer


class CupyEventTimer(DeviceTimer):
    def __init__(self, cupy):
        self._cupy = cupy
        self._start, self._stop = cupy.cuda.Event(), cupy.cuda.Event()

    def start(self):
        self._start.record()

    def stop(self):
        self._stop.record()

    def elapsed(self):
        return self._cupy.cuda.get_elapsed_time(self._start, self._stop) / 1e3


class CupyBackend(Backend):
    def __init__(self, cupy):
        self._cupy = cupy
        self._timer = None

    @classmethod
    def detect(cls, cupy):
        try:
            return cls(cupy) if cupy.cuda.runtime.getDeviceCount() > 0 else None
        except Exception:  # CUDA driver missing or broken: nothing asynchronous to wait for
            return None

    def _ready(self):
        # A context in this thread means CuPy (or another framework) has used the GPU;
        # without one there is nothing queued, and we must not create one.
        return self._cupy.cuda.driver.ctxGetCurrent() != 0

    in_use = property(_ready)

    @property
    def name(self):
        return f"cupy cuda:{self._cupy.cuda.Device().id}"

    def synchronize(self, outputs=None):
        if self._ready():
            self._cupy.cuda.Device().synchronize()

    def timer(self):
        if self._timer is None and self._ready():
            self._timer = CupyEventTimer(self._cupy)
        return self._timer

    def describe(self):
        device = self._cupy.cuda.Device()
        name = self._cupy.cuda.runtime.getDeviceProperties(device.id)["name"]
        return f"cuda:{device.id} {name.decode() if isinstance(name, bytes) else name}"
