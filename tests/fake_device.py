"""Stand-ins that never sleep: a fake clock, and a fake asynchronous device that runs on it.

For tests where time is not the subject (run counts, reports, findings, sweeps): every
duration is exact, so a report can be compared with stored text. Neither is a mock of
a framework; both plug into the seams the real ones use:

- ``FakeClock`` is a ``runner.Clock`` (the magics' ``clock``): ``now()`` moves only when
  told to. A cell does host work with ``host.advance(seconds)``, which also counts as
  user CPU time.
- ``FakeDevice`` is a registry entry (the magics' ``registry``): its ``detect`` gives a
  backend. ``launch(seconds)`` queues a kernel and returns at once, as a CUDA launch
  does; the stream runs kernels back to back; ``synchronize`` moves the clock to the
  moment the stream is empty; an event reads the time at which the stream reaches it.

- ``FakeMachine`` is a ``cpu_context.Machine`` (the magics' ``machine``): fixed CPU facts (cores,
  load, thread pools), and ``stall(seconds)``, a wait for a core that passes on the clock
  without CPU time, as a run on a loaded machine waits.

The real-time counterpart is ``async_device_double`` (a thread that sleeps), kept for
the ``timing`` tests of the clocks themselves.
"""

import contextlib

from ipython_cudatime.backends.base import Backend, EventTimer, event_elapsed_ms


class FakeClock:
    def __init__(self):
        self.seconds = 0.0
        self.user = 0.0

    def now(self):
        return self.seconds

    def cpu(self):
        """(user, system) CPU seconds of the process: host work is user time."""
        return self.user, 0.0

    def advance(self, seconds):
        """Host work of ``seconds``: the cell's Python ran that long."""
        self.seconds += seconds
        self.user += seconds


class FakeDevice:
    """One in-order stream on ``clock``."""

    name = "fake device"

    def __init__(self, clock):
        self.clock = clock
        self.free_at = 0.0  # when the stream has run everything queued
        self.kernels = 0

    def launch(self, seconds):
        """Queue a kernel of ``seconds``; return at once."""
        self.free_at = max(self.free_at, self.clock.now()) + seconds
        self.kernels += 1

    def reached(self):
        """The time at which the stream reaches what is queued now."""
        return max(self.free_at, self.clock.now())

    def synchronize(self):
        self.clock.seconds = self.reached()

    def detect(self, module):
        """The registry's call: this device's backend (``module`` is this module)."""
        return FakeBackend(self)


class FakeEvent:
    """An event on the fake stream, read as torch's are (milliseconds from ``elapsed_time``)."""

    def __init__(self, device):
        self._device, self.time = device, None

    def record(self):
        self.time = self._device.reached()

    def elapsed_time(self, stop):
        return (stop.time - self.time) * 1e3


class FakeBackend(Backend):
    name = FakeDevice.name

    def __init__(self, device):
        self.device = device
        self._timer = EventTimer(lambda: FakeEvent(device), event_elapsed_ms)

    @classmethod
    def detect(cls, module):
        raise TypeError("register a FakeDevice, whose detect() makes its backend")

    def synchronize(self, outputs=None):
        self.device.synchronize()

    def timer(self):
        return self._timer

    def describe(self):
        return "fake:0 stand-in device"


class NoDevice:
    """A registry entry for this module that finds no device: the fake framework imported on a
    machine without its GPU, as torch is on a CPU-only one. Its objects (the clock) are still a
    framework's to the repeat rule, and nothing is synchronized."""

    @staticmethod
    def detect(module):
        return None


class FakeMachine:
    """A quiet machine by default: ``cores`` usable, no load, no thread pool; set ``load_average``,
    ``ready`` and ``pools`` to load it. ``limit(n)`` sets every pool to n while it lasts."""

    def __init__(self, clock, cores=2):
        self.clock, self._cores = clock, cores
        self.load_average, self.ready, self.pools = 0.0, 0, {}
        self.waited = 0.0

    def cores(self):
        return self._cores

    def load(self, ready=True):
        return self.load_average, self.ready if ready else None

    def waits(self):
        return self.waited, 0

    def threads(self):
        return dict(self.pools)

    def stall(self, seconds):
        """The timing thread waits ``seconds`` for a core: wall time passes, CPU time does not."""
        self.clock.seconds += seconds
        self.waited += seconds

    @contextlib.contextmanager
    def limit(self, threads):
        before = dict(self.pools)
        if threads is not None:
            self.pools = {pool: threads for pool in self.pools}
        try:
            yield
        finally:
            self.pools = before
