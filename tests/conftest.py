"""Shared fixtures: one real IPython shell with the extension loaded, and fresh ones in subprocesses."""

import functools
import os
import subprocess
import sys
import sysconfig
import time

import pytest
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output



# Where Python's and the installed packages' code lives: their own sleeps (a subprocess's wait,
# a client's poll) are not the test's.
LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})


def _retried_once(test):
    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except AssertionError:  # a neighbour took the cores for a moment: once more, then it counts
            return test(*args, **kwargs)

    return run


def pytest_collection_modifyitems(items):
    """Tests marked ``timing`` assert on real time on a shared machine: each is retried once."""
    for item in items:
        if item.get_closest_marker("timing") is not None and hasattr(item, "obj"):
            item.obj = _retried_once(item.obj)


@pytest.fixture(autouse=True)
def no_sleep_unless_timing(request, monkeypatch):
    """A test not marked ``timing`` fails if it, a cell it runs or this package sleeps: where time
    is not the subject, a sleep only makes the test slow and its bounds flaky (use the fake clock)."""
    if request.node.get_closest_marker("timing") is not None:
        yield
        return
    real_sleep, slept = time.sleep, []

    def sleep(seconds):
        caller = sys._getframe(1).f_code.co_filename
        if caller.startswith(LIBRARIES):
            return real_sleep(seconds)
        slept.append(f"{caller}:{sys._getframe(1).f_lineno}")
        raise AssertionError(f"time.sleep({seconds}) in a test not marked timing")

    monkeypatch.setattr(time, "sleep", sleep)
    yield
    assert not slept, f"slept outside a timing test: {slept}"

pytest_plugins = ["strict_gpu"]  # --strict-gpu: scripts/gpu-check fails a skipped gpu test


@pytest.fixture(scope="session")
def shell():
    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    return ip


@pytest.fixture
def ip(shell):
    """The shell, with a fresh user namespace for each test."""
    shell.reset(new_session=False)
    return shell


class Cell:
    """What running one cell produced: its result, text out/err and rich displays."""

    def __init__(self, result, captured):
        self.result = result
        self.value = result.result
        self.error = result.error_in_exec or result.error_before_exec
        self.stdout = captured.stdout
        self.stderr = captured.stderr
        self.outputs = captured.outputs

    @property
    def displayed(self):
        """The text/plain of everything displayed with display()."""
        return [out.data.get("text/plain", "") for out in self.outputs]


def run(ip, source):
    """Run ``source`` as a cell of the real shell and capture everything it shows."""
    with capture_output() as captured:
        result = ip.run_cell(source, store_history=True)
    return Cell(result, captured)


@pytest.fixture
def seams(shell):
    """``seams(registry=..., probes=..., clock=..., notebook=...)`` registers magics built with those
    seams for this test (see ``CudaTimeMagics``), their reprs too; the shell's own instance is put
    back after it."""
    from ipython_cudatime.notebook.magics import CudaTimeMagics

    own = shell.magics_manager.registry[CudaTimeMagics.__name__]

    def use(**kwargs):
        magics = CudaTimeMagics(shell, **kwargs)
        shell.register_magics(magics)
        magics.display.install()

    yield use
    shell.register_magics(own)
    own.display.install()


def registry_without(*modules):
    """The default backend registry less the backends of ``modules``."""
    from ipython_cudatime.backends import REGISTRY

    return tuple(entry for entry in REGISTRY if entry[0] not in modules)


def _fake_time(ip, seams, with_device):
    import fake_device

    clock = fake_device.FakeClock()
    device = fake_device.FakeDevice(clock)
    machine = fake_device.FakeMachine(clock)
    seams(registry=(("fake_device", device if with_device else fake_device.NoDevice),), probes=(), clock=clock,
          machine=machine)
    ip.user_ns.update(gpu=device, host=clock, cpu=machine, tensor=fake_device.framework_object("torch"),
                      array=fake_device.framework_object("numpy"))
    return device


@pytest.fixture
def fake_gpu(ip, seams):
    """The fake clock and the fake device (``fake_device``) as the magics' clock and only backend,
    with no cold-run probes, on a quiet fake machine (``fake_device.FakeMachine``): every duration is
    exact and nothing sleeps. A cell queues device work with ``gpu.launch(seconds)``, does host work
    with ``host.advance(seconds)`` and waits for a core with ``cpu.stall(seconds)``; ``tensor`` and
    ``array`` stand in for a torch and a NumPy object (``cpu.stall(seconds, tensor)``: torch's work)."""
    return _fake_time(ip, seams, with_device=True)


@pytest.fixture
def fake_cpu(ip, seams):
    """The fake clock with no device (``fake_device.NoDevice``): a CPU-only cell, ``host.advance(seconds)``."""
    return _fake_time(ip, seams, with_device=False).clock


@pytest.fixture
def async_device(seams):
    """The asynchronous device double, registered as the only backend."""
    import async_device_double

    seams(registry=(("async_device_double", async_device_double.DoubleBackend),))
    return async_device_double.DEVICE


FRESH_SHELL = (
    "from IPython.testing.globalipapp import start_ipython\n"
    "ip = start_ipython()\n"
    "ip.run_line_magic('load_ext', 'ipython_cudatime')\n"
)


def in_fresh_shell(code, prelude="", env=None, timeout=300):
    """Run ``prelude``, then ``code`` with ``ip`` (a shell with the extension loaded), in a new
    process: for what only a fresh process shows (first CUDA use, imports). Returns the last
    line it printed."""
    # TERM=dumb: IPython 7.34's shell would write an xterm title escape onto stdout first
    done = subprocess.run([sys.executable, "-c", prelude + FRESH_SHELL + code], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "TERM": "dumb", **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]
