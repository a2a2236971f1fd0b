"""A feature is one room: the test-only ``SourceLength`` (``tests/source_length.py``) is one module,
and passing ``FEATURES + (SourceLength(),)`` is the one line that adds it. Its flag, its record, its
saved field and its words in every view then work, and nothing else in the library names it."""

import ast
import json
import pathlib

import pytest
from conftest import run
from source_length import SourceLength

import ipython_cudatime
from ipython_cudatime.command import options
from ipython_cudatime.notebook.display import bundle
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.feature import Feature
from ipython_cudatime.notebook.magics import CudaTimeMagics
from ipython_cudatime.measure.runner import Watch

WITH_LENGTH = FEATURES + (SourceLength(),)
LIBRARY = pathlib.Path(ipython_cudatime.__file__).parent


def test_a_new_feature_is_one_module_and_one_line(ip, fake_gpu, seams, tmp_path):
    seams(registry=(("fake_device", fake_gpu),), probes=(), clock=fake_gpu.clock, features=WITH_LENGTH)
    ip.user_ns.update(gpu=fake_gpu)
    saved = tmp_path / "runs.jsonl"
    r = ip.run_line_magic("cudatime", f"-o -q -n 3 --source-length -l short --save {saved} gpu.launch(1 / 64)")
    assert r.source_length == len("gpu.launch(1 / 64)") == r.records["source_length"]
    text = ipython_cudatime.report(r, WITH_LENGTH)
    assert "source   : 18 characters" in text and "The cell is 18 characters long." in text
    shown = run(ip, "%cudatime -n 3 --source-length gpu.launch(1 / 64)").outputs[0].data["text/plain"]
    assert "source   : 18 characters" in shown  # the magics' own display words it: it was handed the features
    html = bundle(r, WITH_LENGTH)["text/html"]
    assert "cudatime-section-source" in html and "18 characters</div>" in html
    loaded, problems = ipython_cudatime.load([saved], WITH_LENGTH)
    assert problems == [] and loaded.points[0].result.source_length == 18
    assert "chars" in ipython_cudatime.report(loaded).splitlines()[0]  # its table column


def test_without_the_line_the_feature_is_off_and_its_flag_unknown(ip, fake_gpu):
    cell = run(ip, "%cudatime -n 1 --source-length gpu.launch(1 / 64)")
    assert "unknown option --source-length" in str(cell.error)
    r = ip.run_line_magic("cudatime", "-o -q -n 1 gpu.launch(1 / 64)")
    assert "source_length" not in r.records and not hasattr(r, "source_length")


def test_its_flag_is_in_the_help_made_from_its_declaration():
    assert "--source-length" in options.usage(WITH_LENGTH) and "--source-length" not in options.usage(FEATURES)


def test_a_saved_record_of_a_feature_this_reader_lacks_is_dropped(ip, fake_gpu, seams, tmp_path):
    seams(registry=(("fake_device", fake_gpu),), probes=(), clock=fake_gpu.clock, features=WITH_LENGTH)
    ip.user_ns.update(gpu=fake_gpu)
    saved = tmp_path / "runs.jsonl"
    ip.run_line_magic("cudatime", f"-q -n 2 --source-length --save {saved} gpu.launch(1 / 64)")
    loaded, problems = ipython_cudatime.load([saved])  # the default features: no SourceLength
    assert problems == [] and "source_length" not in loaded.points[0].result.records


def _named(name):
    """A test-only feature class whose only trait is its name."""
    return type("Named", (Feature,), {"name": name})()


@pytest.mark.parametrize("name", ["median", "clock", "cold", "device", "records", "to_dict", "stmt", "ratio"])
def test_a_feature_whose_name_the_result_answers_to_is_refused_when_the_magics_are_built(ip, name):
    """``r.<name>`` and a saved line's keys are the result's: a feature named ``median`` would
    be shadowed by the statistic (and in schema 1 would have overwritten a saved field)."""
    with pytest.raises(ValueError, match=f"name '{name}' is already the result's own r.{name}"):
        CudaTimeMagics(ip, features=FEATURES + (_named(name),))


@pytest.mark.parametrize(("names", "why"), [(("twice", "twice"), "taken by another feature"),
                                            (("not a name",), "not a public Python name"),
                                            (("_hidden",), "not a public Python name")])
def test_features_that_share_a_name_or_have_no_usable_name_are_refused(ip, names, why):
    with pytest.raises(ValueError, match=why):
        CudaTimeMagics(ip, features=tuple(_named(name) for name in names))


def test_a_saved_line_keeps_the_records_under_their_own_key(ip, fake_gpu, seams, tmp_path):
    """Since schema 2 the records sit under "records", so that no feature name meets a field of the result."""
    seams(registry=(("fake_device", fake_gpu),), probes=(), clock=fake_gpu.clock, features=WITH_LENGTH)
    ip.user_ns.update(gpu=fake_gpu)
    saved = tmp_path / "runs.jsonl"
    ip.run_line_magic("cudatime", f"-q -n 2 --source-length --save {saved} gpu.launch(1 / 64)")
    line = json.loads(saved.read_text())
    assert line["schema"] == 3 and line["records"]["source_length"] == len("gpu.launch(1 / 64)")
    assert not {feature.name for feature in WITH_LENGTH} & set(line)


def test_no_library_module_names_a_feature_outside_its_own_room():
    """The runner, the result, the store and the renderers loop over the features they are given."""
    records = {"profile", "roofline", "memory", "cold_causes", "cpu_context"}
    classes = {"Profiling", "RooflineFeature", "ColdCauses", "Memory", "CpuFacts", "ProfileWatch", "CountingWatch",
               "MemoryWatch", "CausesWatch", "CpuWatch", "CpuContext", "Noise", "TorchProfiler", "OpCounter"}
    for path in LIBRARY.rglob("*.py"):
        if path.relative_to(LIBRARY).parts[0] in ("features",):
            continue
        tree = ast.parse(path.read_text())
        used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)} & records
        used |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} & classes
        used |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names} & classes
        assert not used, f"{path.relative_to(LIBRARY)} names {sorted(used)}"


class EachRun(Watch):
    """A test-only watch that hears each later run, and spends a second of the fake clock before each."""

    def __init__(self, clock):
        self.clock, self.started, self.ended = clock, 0, []

    def before_run(self):
        self.started += 1
        self.clock.advance(1.0)  # outside the timed span: no run may show it

    def after_run(self, run):
        self.ended.append(run)


class EveryRun(Feature):
    """A test-only feature around each later run (as an L2-flushed timing would be)."""

    name = "each_run"

    def __init__(self, clock):
        self.clock, self.watches = clock, []

    def settings(self, values):
        return True

    def watch(self, settings, call):
        self.watches.append(EachRun(self.clock))
        return self.watches[-1]

    def extra_runs(self, record):
        return []


def test_a_watch_hears_each_later_run_outside_its_timed_span(ip, fake_gpu, seams):
    every = EveryRun(fake_gpu.clock)
    seams(registry=(("fake_device", fake_gpu),), probes=(), clock=fake_gpu.clock, features=FEATURES + (every,))
    ip.user_ns.update(gpu=fake_gpu)
    r = ip.run_line_magic("cudatime", "-o -q -n 4 -w 2 gpu.launch(1 / 64)")
    [watch] = every.watches
    assert watch.started == len(watch.ended) == 2 + 4  # warm-up and warm runs; never the cold run
    assert watch.ended == r.warmup + r.warm and r.median == 1 / 64  # the second before each is in none
