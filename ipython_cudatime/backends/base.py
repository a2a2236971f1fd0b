"""The one small interface every device backend implements.

The runner only ever talks to this interface, so a new framework (or a test
double of an asynchronous device) plugs in without touching the core.
"""


class DeviceTimer:
    """Device events around one run, recorded on the stream current at the time."""

    def start(self):
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def elapsed(self):
        """Seconds between start and stop; call only after the device was synchronized."""
        raise NotImplementedError


class Backend:
    """A framework that can hold queued device work.

    ``name`` is what the report calls it ("torch cuda"). A backend must never
    initialize a device on its own: ``synchronize`` and ``timer`` do nothing
    while the framework has not yet created its device context, so the cold run
    still pays for that context and shows it.
    """

    name = "backend"

    @property
    def in_use(self):
        """Whether this framework has a device at work in this process (a context, a client)."""
        return True

    def synchronize(self, outputs=None):
        """Wait until all work queued on all of this framework's devices is done.

        ``outputs``, after a run, is a zero-argument callable giving what the run
        produced (the cell's value, and the values of the names it bound), for
        frameworks that can only wait on their results (JAX); None before a run.
        """
        raise NotImplementedError

    def timer(self):
        """A DeviceTimer for the current stream, or None when there is no device clock."""
        return None

    def describe(self):
        """A readable device name, e.g. ``cuda:0 NVIDIA H200``."""
        return self.name

    def memory_stats(self):
        """A flat dict of allocator counters (empty when the framework has none)."""
        return {}
