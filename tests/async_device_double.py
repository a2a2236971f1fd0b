"""A test double of an asynchronous device, behind the backend interface.

Not a mock of any framework: the device is a stream timeline on the real clock
(``time.perf_counter``). Launching a "kernel" returns at once, as a CUDA launch does,
and queues it: it starts when the stream is free and runs for exactly its duration;
an event records the time at which the stream reaches it; ``synchronize`` blocks the
host until the stream is empty and then pays ``sync_cost`` more, as a real
synchronize's round trip does. This makes "host ≪ wall" and device-clock timing
real on a machine with no GPU, down to microseconds (a sleeping thread could not
run a 5 µs kernel: a sleep lasts 50 µs or more).
"""

import time

from ipython_cudatime.backends.base import Backend, DeviceTimer
from ipython_cudatime.backends.objects import Leaf

SPIN = 1e-3  # the last stretch of a wait is spun, not slept: a sleep overshoots by up to this


def _wait_until(moment):
    left = moment - time.perf_counter()
    if left > SPIN:
        time.sleep(left - SPIN)
    while time.perf_counter() < moment:
        pass


class AsyncDeviceDouble:
    def __init__(self):
        self._free_at = 0.0  # when the stream will have run everything queued so far
        self.sync_cost = 0.0  # seconds a synchronize costs even on an idle stream
        self.launches = 0  # kernels launched so far: what counts runs without a state of the user's

    def launch(self, seconds):
        """Queue a kernel of ``seconds`` and return at once."""
        self._free_at = max(self._free_at, time.perf_counter()) + seconds
        self.launches += 1

    def record(self, event):
        event.time = max(self._free_at, time.perf_counter())

    def synchronize(self):
        _wait_until(self._free_at)
        _wait_until(time.perf_counter() + self.sync_cost)


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

    @classmethod
    def kinds(cls, module):
        """The device is the framework's machinery, not the user's data (as a CUDA stream is)."""
        return (Leaf(AsyncDeviceDouble),)

    def timer(self):
        return self._timer

    def describe(self):
        return "double:0 asynchronous test device"


DEVICE = AsyncDeviceDouble()
