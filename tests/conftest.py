"""Shared fixtures: one real IPython shell with the extension loaded, and fresh ones in subprocesses."""

import os
import subprocess
import sys

import pytest
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

import ipython_cudatime.backends as backends

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
def async_device(monkeypatch):
    """The asynchronous device double, registered as an active backend."""
    import async_device_double

    monkeypatch.setattr(backends, "REGISTRY", [("async_device_double", async_device_double.DoubleBackend)])
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
    done = subprocess.run([sys.executable, "-c", prelude + FRESH_SHELL + code], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]
