"""No probe, cause, counter or view can sink a result: each failure is one line in the report and
the measurement stands. The failing parts here are test doubles, named as such (a probe, a watch
and a feature's words that raise); the TF32 tests use the real torch (the CPU build)."""

import contextlib

import pytest
from conftest import run

import ipython_cudatime
from ipython_cudatime.notebook.display import bundle
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.feature import Feature
from ipython_cudatime.units import MESSAGE_LIMIT, failure_text
from ipython_cudatime.measure.runner import Watch

BROKEN = "PyTorch is checking the matmul precision without a specific backend name,Current status"


class RaisingProbe:
    """A test double of a cold-run probe whose every reading raises, as torch's settings do after
    ``torch.backends.fp32_precision = 'tf32'``."""

    label = "raising test double"

    @classmethod
    def detect(cls, module):
        return cls()

    def state(self, moment):
        raise RuntimeError(BROKEN + "\nsecond line of the message")

    def initial(self):
        return None


class UnmadeProbe(RaisingProbe):
    """A test double whose ``detect`` raises (a framework version it does not know)."""

    label = "unmade test double"

    @classmethod
    def detect(cls, module):
        raise AttributeError("module has no attribute 'monitoring'")


class RaisingWatch(Watch):
    """A test double of a feature's part in the runs: its counter fails on entering the extra run."""

    extra = "raising"

    def around(self, run):
        return self._counter() if run == "extra" else None

    @contextlib.contextmanager
    def _counter(self):
        raise RuntimeError("counter could not start")
        yield

    def record(self, outcome):
        return "recorded"


class RaisingFeature(Feature):
    """A test double of a feature whose watch and words raise."""

    name = "raising"
    columns = ("raising",)

    def settings(self, values):
        return True

    def watch(self, settings, call):
        return RaisingWatch()

    def text_lines(self, result, record):
        raise KeyError("no such field")

    def findings(self, result, record):
        raise ValueError("cannot word this")

    def section_html(self, result, record):
        raise ValueError("cannot draw this")


class UnmakeableFeature(Feature):
    """A test double of a feature whose watch cannot be made (a framework version it does not know)."""

    name = "unmakeable"

    def settings(self, values):
        return True

    def watch(self, settings, call):
        raise RuntimeError("FlopCounterMode changed")


@pytest.fixture
def new_tf32_api():
    """torch 2.9+'s TF32 switch, put back after the test (the shell and torch are shared)."""
    torch = pytest.importorskip("torch", reason="torch not installed")
    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("this torch has no fp32_precision API")
    torch.backends.fp32_precision = "tf32"
    yield torch
    torch.backends.fp32_precision = "none"


def test_after_the_new_tf32_switch_cudatime_and_roofline_report_normally(ip, new_tf32_api):
    with pytest.raises(RuntimeError):  # what torch itself does: the legacy read is refused
        new_tf32_api.get_float32_matmul_precision()
    ip.run_cell("import torch\na = torch.randn(64, 64)")
    plain = ip.run_line_magic("cudatime", "-o -q -n 3 a @ a")
    counted = ip.run_line_magic("cudatime", "-o -q -n 3 --roofline a @ a")
    for r in (plain, counted):
        assert len(r.warm) == 3 and r.stopped is None and not [n for n in r.notes if "not recorded" in n]
    assert counted.roofline is not None and counted.roofline.flops == 2 * 64**3


def test_the_settings_are_read_through_fp32_precision(new_tf32_api):
    """The probe's CUDA branch (fed the states of a cold run that made a context), on the CPU build:
    the settings come from ``fp32_precision``, never from the refused legacy reads."""
    from ipython_cudatime.features.cold_causes.torch_probe import SETTINGS, TorchProbe, tf32_allowed

    causes = TorchProbe(new_tf32_api).causes({"compile": 0.0, "cuda": False},
                                              {"compile": 0.0, "cuda": True, "num_device_alloc": 0,
                                               "segment.all.current": 0, "reserved_bytes.all.current": 0}, None)
    [settings] = [c for c in causes if c.name == SETTINGS]
    assert settings.detail == "fp32_precision for matmul 'tf32': TF32 for matmul on, for cuDNN on"
    assert tf32_allowed(new_tf32_api) == {"matmul": True, "conv": True}


def test_a_probe_that_raises_is_one_line_and_the_numbers_stand(ip, fake_gpu, seams):
    seams(registry=(("fake_device", fake_gpu),), probes=(("sys", RaisingProbe), ("sys", UnmadeProbe)),
          clock=fake_gpu.clock)
    ip.user_ns.update(gpu=fake_gpu)
    cell = run(ip, "r = %cudatime -o -n 3 gpu.launch(1 / 64)")
    assert cell.error is None
    r = ip.user_ns["r"]
    assert r.median == 1 / 64 and len(r.warm) == 3
    text = ipython_cudatime.report(r).splitlines()
    assert f"why      : raising test double not read: RuntimeError: {BROKEN}" in text
    assert "why      : unmade test double not read: AttributeError: module has no attribute 'monitoring'" in text


def test_a_watch_and_words_that_raise_are_lines_and_the_numbers_stand(ip, fake_gpu, seams):
    with_raising = FEATURES + (RaisingFeature(),)
    seams(registry=(("fake_device", fake_gpu),), probes=(), clock=fake_gpu.clock, features=with_raising)
    ip.user_ns.update(gpu=fake_gpu)
    cell = run(ip, "r = %cudatime -o -n 3 gpu.launch(1 / 64)")
    assert cell.error is None
    r = ip.user_ns["r"]
    assert r.median == 1 / 64 and r.stopped is None
    assert r.records["raising"] is None  # a watch that failed records nothing...
    assert r.total_runs == 1 + 1 + 3  # ...and gets no extra run: the counts stay true
    assert "raising not recorded: RuntimeError: counter could not start" in r.notes
    text = ipython_cudatime.report(r, with_raising)
    assert "raising not shown: KeyError: 'no such field'" in text.splitlines()
    assert "raising not shown: ValueError: cannot word this" in text
    assert "raising not shown: ValueError: cannot draw this" in bundle(r, with_raising)["text/html"]


def test_a_watch_that_cannot_be_made_is_one_line_and_the_numbers_stand(ip, fake_gpu, seams):
    seams(registry=(("fake_device", fake_gpu),), probes=(), clock=fake_gpu.clock,
          features=FEATURES + (UnmakeableFeature(),))
    ip.user_ns.update(gpu=fake_gpu)
    r = ip.run_line_magic("cudatime", "-o -q -n 3 gpu.launch(1 / 64)")
    assert r.median == 1 / 64 and r.records["unmakeable"] is None
    assert "unmakeable not recorded: RuntimeError: FlopCounterMode changed" in ipython_cudatime.report(r).splitlines()


def test_the_cells_own_exception_in_a_guarded_run_is_still_the_users(ip, fake_gpu, seams):
    seams(registry=(("fake_device", fake_gpu),), probes=(("sys", RaisingProbe),), clock=fake_gpu.clock)
    cell = run(ip, "%cudatime 1 / 0")
    assert isinstance(cell.error, ZeroDivisionError)


def test_a_failure_is_one_short_line():
    text = failure_text(RuntimeError("x" * 1000 + "\nmore"))
    assert text.startswith("RuntimeError: xxx") and "\n" not in text
    assert len(text) == len("RuntimeError: ") + MESSAGE_LIMIT
    assert failure_text(KeyError()) == "KeyError"
