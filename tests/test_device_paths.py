"""GPU paths that printed a wrong number or failed, on the fake device (``fake_device``), each as a
real shell runs it: a framework the timed cell imports itself, device events that miss work on
other streams, and a cell that switches devices. Their hardware counterparts are in test_gpu.py."""

import sys

import fake_device
import pytest

from ipython_cudatime import report
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.cold_causes.probes import Cause, Probe
from ipython_cudatime.render.report import Reading

LATE = "late_framework"  # a framework that the timed cell itself imports


class LateProbe(Probe):
    """A stand-in cold-run probe for the late framework: it reads how many set-ups it did."""

    @classmethod
    def detect(cls, module):
        return cls()

    def initial(self):
        return {"setups": 0}

    def state(self, moment):
        return {"setups": sys.modules[LATE].setups}

    def causes(self, before, after_cold, after_warm, source=None):
        return [Cause("late framework set up")] if after_cold["setups"] > before["setups"] else []


@pytest.fixture
def late_framework(tmp_path, monkeypatch):
    """A real module, ``import late_framework``, importable only from this test."""
    (tmp_path / f"{LATE}.py").write_text("setups = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop(LATE, None)


def test_a_framework_the_cell_imports_is_synchronized_from_its_first_warm_run(ip, seams, late_framework):
    """`%%cudatime` on the cell that imports torch and uses it: the backend and the probe join after
    the cold run, which the report says was not synchronized for that framework."""
    clock = fake_device.FakeClock()
    gpu = fake_device.FakeDevice(clock)
    seams(registry=((LATE, gpu),), probes=((LATE, LateProbe),), clock=clock)
    ip.user_ns["gpu"] = gpu
    r = ip.run_cell(f"%%cudatime -o -q -n 3\nimport {LATE}\ngpu.launch(1 / 8)").result
    assert r.synchronized == ["fake device"]
    assert r.cold.wall == 0  # the cold run returned at once, and nothing was waited for then
    assert r.clock == "device" and [run.wall for run in r.warm] == [1 / 8] * 3
    assert "the cold run was not synchronized for fake device: the cell imported it" in report(r)
    assert [cause.name for cause in r.cold_causes] == ["late framework set up"]


@pytest.mark.parametrize("cell, share, clock", [
    ("gpu.launch(1 / 16); gpu.elsewhere(1 / 8)", "50%", "device"),
    ("gpu.launch(1 / 64); gpu.elsewhere(1 / 8)", "12%", "wall"),
])
def test_work_the_device_clock_missed_is_named(ip, fake_gpu, cell, share, clock):
    r = ip.run_line_magic("cudatime", f"-o -q -n 3 {cell}")
    kinds = {finding.kind: finding.text for finding in Reading.of(r, FEATURES).findings}
    assert r.clock == clock
    assert f"saw {share} of the synchronized time" in kinds["coverage"]
    assert "other streams or other devices" in kinds["coverage"]
    if clock == "wall":
        assert "The statistics use the wall clock: the device clock saw less than 50%" in kinds["clock"]
    else:
        assert "clock" not in kinds


def test_a_device_clock_that_saw_everything_says_nothing_of_it(ip, fake_gpu):
    r = ip.run_line_magic("cudatime", "-o -q -n 3 host.advance(1 / 64); gpu.launch(1 / 16)")
    assert {"coverage", "clock"}.isdisjoint(finding.kind for finding in Reading.of(r, FEATURES).findings)


SWITCHING = "gpu.set_device(1 - gpu.current)\ngpu.launch(1 / 8)"  # every run starts on the other device


def test_events_are_recorded_on_the_device_each_run_started_on(ip, fake_gpu):
    r = ip.run_cell(f"%%cudatime -o -q -n 4\n{SWITCHING}").result
    assert r.clock == "device" and [run.device for run in r.warm] == [1 / 8] * 4


class CurrentStreamOnly:
    """A registry entry: the fake device's backend with events recorded on the current stream,
    wherever the run started, as ``EventTimer`` did before it knew about devices."""

    def __init__(self, device):
        self.device = device

    def detect(self, module):
        return fake_device.FakeBackend(self.device, placed=False)


def test_the_fake_device_refuses_an_event_on_another_device_as_torch_does(ip, seams):
    clock = fake_device.FakeClock()
    gpu = fake_device.FakeDevice(clock)
    seams(registry=(("fake_device", CurrentStreamOnly(gpu)),), probes=(), clock=clock)
    ip.user_ns["gpu"] = gpu
    executed = ip.run_cell(f"%%cudatime -q -n 4\n{SWITCHING}")
    assert "Event device does not match recording stream's device" in str(executed.error_in_exec)
