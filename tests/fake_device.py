"""Stand-ins that never sleep: a fake clock, and a fake asynchronous device that runs on it.

For tests where time is not the subject (run counts, reports, findings, sweeps): every
duration is exact, so a report can be compared with stored text. Neither is a mock of
a framework; both plug into the seams the real ones use:

- ``FakeClock`` is a ``clocks.Clock`` (the magics' ``clock``): ``now()`` moves only when
  told to. A cell does host work with ``host.advance(seconds)``, which also counts as
  user CPU time. ``read_cost`` (0 unless a test sets it) is what each reading costs: the
  harness's own cost per sample, which a real clock read and call have, for tests of batching.
- ``FakeDevice`` is a registry entry (the magics' ``registry``): its ``detect`` gives a
  backend. ``launch(seconds)`` queues a kernel and returns at once, as a CUDA launch
  does; the stream runs kernels back to back; ``synchronize`` moves the clock to the
  moment the stream is empty; an event reads the time at which the stream reaches it.
  ``elsewhere(seconds)`` queues work on another stream, which only ``synchronize`` waits for.
  ``set_device(i)`` makes device i current; an event is bound to the device of the first
  stream it is recorded on and refuses another, with torch's message.

- Their objects are a framework's machinery to the repeat decision (``kinds``), as a real
  device's stream is: advancing the clock or queuing on the device is not a change of the
  user's state.
- ``FakeMachine`` is a ``machine.Machine`` (the magics' ``machine``): fixed CPU facts (cores,
  load, thread pools), and ``stall(seconds, *work)``, a wait for a core that passes on the clock
  without CPU time, as a run on a loaded machine waits. ``work`` names the objects whose framework's
  pool the stalled work ran in: a cell that passes ``tensor`` (a ``FrameworkObject`` of "torch")
  has read it, so the runner's attribution finds torch among what the cell touched, as it would
  find a real tensor, and only then may torch's (fake) pool be blamed.

The real-time counterpart is ``async_device_double`` (a thread that sleeps), kept for
the ``timing`` tests of the clocks themselves.
"""

import contextlib

from ipython_cudatime.backends import REGISTRY
from ipython_cudatime.backends.base import Backend, EventTimer
from ipython_cudatime.backends.objects import Leaf
from ipython_cudatime.measure.machine import Machine


class FakeClock:
    def __init__(self):
        self.seconds = 0.0
        self.user = 0.0
        self.ticks = 0
        self.read_cost = 0.0  # seconds each now() takes

    def tick(self):
        """How many times this was called before: a count of runs that a cell can read, kept here,
        in the stand-ins' machinery, so that counting is not a change of the user's state."""
        self.ticks += 1
        return self.ticks - 1

    def now(self):
        self.seconds += self.read_cost
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
        self.current = 0  # the current device's index
        self.elsewhere_free_at = 0.0  # when the other streams have run everything queued

    def set_device(self, index):
        """What ``torch.cuda.set_device(index)`` does: later work and events go to that device."""
        self.current = index

    def launch(self, seconds):
        """Queue a kernel of ``seconds``; return at once."""
        self.free_at = max(self.free_at, self.clock.now()) + seconds
        self.kernels += 1

    def elsewhere(self, seconds):
        """Queue a kernel of ``seconds`` on another stream or device: ``synchronize`` waits for it,
        the current stream's events do not see it."""
        self.elsewhere_free_at = max(self.elsewhere_free_at, self.clock.now()) + seconds

    def reached(self):
        """The time at which the stream reaches what is queued now."""
        return max(self.free_at, self.clock.now())

    def synchronize(self):
        self.clock.seconds = max(self.reached(), self.elsewhere_free_at)

    def detect(self, module):
        """The registry's call: this device's backend (``module`` is this module)."""
        return FakeBackend(self)

    @staticmethod
    def kinds(module):
        """The registry's call for the repeat decision: the stand-ins are a framework's machinery (a
        stream, the clock), not the user's data, as a real device's queue is not."""
        return stand_ins()


class FakeEvent:
    """An event on the fake stream, read as torch's are (milliseconds from ``elapsed_time``). Like
    ``torch.cuda.Event``, it is bound to the device of the first stream it is recorded on."""

    def __init__(self, device):
        self._device, self.time, self.bound = device, None, None

    def record(self, stream=None):
        on = self._device.current if stream is None else stream
        if self.bound is None:
            self.bound = on
        elif on != self.bound:
            raise RuntimeError("Event device does not match recording stream's device")
        self.time = self._device.reached()

    def elapsed_time(self, stop):
        return (stop.time - self.time) * 1e3


class FakeBackend(Backend):
    name = FakeDevice.name

    def __init__(self, device, placed=True):
        """``placed``: events on the fake's current device, on its "stream" (the device's index), else wherever."""
        self.device = device
        where = {"device": lambda: device.current, "stream": lambda index: index} if placed else {}
        self._timer = EventTimer(lambda: FakeEvent(device), **where)

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

    @staticmethod
    def kinds(module):
        return stand_ins()


def stand_ins():
    """How the repeat decision reads this module's objects (``backends.objects.Kind``): as a framework's
    immutable machinery."""
    return (Leaf(FakeClock, FakeDevice, FakeMachine),)


class FrameworkObject:
    """A stand-in for a framework's object (a tensor, an array), made by the module ``name``: what
    attribution (``backends.base.made_by``) reads to tell which frameworks a cell touched."""

    def __init__(self, name):
        self.framework = name


def framework_object(name):
    """An object whose class is defined in the module ``name`` (``torch``, ``numpy``)."""
    kind = type("FrameworkObject", (FrameworkObject,), {"__module__": name})
    return kind(name)


class FakeMachine(Machine):
    """A quiet machine by default (a stand-in for the facts ``machine.Machine`` reads; what
    it knows of each framework, its pools' users and the frameworks a cell touched, is the real
    Machine's, from ``registry``): ``cores`` usable, no load, no thread pool; set
    ``load_average``, ``ready`` and ``pools`` to load it. ``limit(n)`` sets every pool to n
    while it lasts."""

    def __init__(self, clock, cores=2, registry=REGISTRY):
        super().__init__(modules={}, registry=registry)
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

    def stall(self, seconds, *work):
        """The timing thread waits ``seconds`` for a core: wall time passes, CPU time does not.
        ``work``: the framework objects the stalled work used (read by the cell, nothing more)."""
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
