"""A test double of an asynchronous device, behind the backend interface.

Not a mock of any framework: a worker thread is the device's stream. Launching a
"kernel" (a sleep of real duration) returns at once, as a CUDA launch does; the
stream runs kernels in order; ``synchronize`` waits until the stream is empty;
an event records the time at which the stream reaches it. This makes
"host ≪ wall" and device-clock timing real on a machine with no GPU.
"""

import queue
import threading
import time

from ipython_cudatime.backends.base import Backend, DeviceTimer


class AsyncDeviceDouble:
    def __init__(self):
        self._stream = queue.Queue()
        self.kernels_run = 0
        threading.Thread(target=self._work, daemon=True, name="async-device-double").start()

    def _work(self):
        while True:
            kind, payload = self._stream.get()
            if kind == "kernel":
                time.sleep(payload)
                self.kernels_run += 1
            else:
                payload.time = time.perf_counter()
            self._stream.task_done()

    def launch(self, seconds):
        """Queue a kernel of ``seconds`` and return at once."""
        self._stream.put(("kernel", seconds))

    def record(self, event):
        self._stream.put(("event", event))

    def synchronize(self):
        self._stream.join()


class _Event:
    time = None


class DoubleTimer(DeviceTimer):
    def __init__(self, device):
        self._device, self._start, self._stop = device, _Event(), _Event()

    def start(self):
        self._device.record(self._start)

    def stop(self):
        self._device.record(self._stop)

    def elapsed(self):
        return self._stop.time - self._start.time


class DoubleBackend(Backend):
    """The double behind the real backend interface; active when this module is imported."""

    name = "async double"

    def __init__(self, device):
        self.device = device
        self._timer = DoubleTimer(device)

    def synchronize(self, outputs=None):
        self.device.synchronize()

    @classmethod
    def detect(cls, module):
        return cls(module.DEVICE)

    def timer(self):
        return self._timer

    def describe(self):
        return "double:0 asynchronous test device"


DEVICE = AsyncDeviceDouble()
