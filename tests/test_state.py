"""A repeated cell leaves the state of one run, or runs once and says why (real shell)."""

import os

import pytest
from conftest import run
from IPython.core.error import UsageError

from ipython_cudatime.repeat_rule import top_level_names
from ipython_cudatime.state import NameSnapshot

ONCE = "Ran once only"


def report(cell):
    return "\n".join(cell.displayed)


def test_rebinding_acts_once(ip):
    ip.run_cell("x = 1\ntotal = 0")
    cell = run(ip, "%cudatime -n 20 x += 1")
    assert ip.user_ns["x"] == 2 and ONCE not in report(cell)
    assert "the cell ran 22 times: 1 cold + 1 warm-up + 20 warm" in report(cell)
    run(ip, "%%cudatime -n 5\nfor i in range(3):\n    total = total + i")
    assert ip.user_ns["total"] == 3 and ip.user_ns["i"] == 2


def test_array_rebinding_doubles_once(ip):
    np = pytest.importorskip("numpy")
    ip.user_ns["arr"] = np.ones(3)
    run(ip, "%cudatime -n 50 arr = arr * 2")
    assert ip.user_ns["arr"].tolist() == [2.0, 2.0, 2.0]


def test_del_works_and_the_name_is_gone(ip):
    ip.run_cell("x = 1")
    cell = run(ip, "%cudatime -n 3 del x")
    assert cell.error is None and "x" not in ip.user_ns


def test_names_the_cell_creates_are_deleted_before_later_runs(ip):
    cell = run(ip, "%%cudatime -n 3\ntry:\n    seen = seen + 1\nexcept NameError:\n    seen = 1")
    assert cell.error is None and ip.user_ns["seen"] == 1


@pytest.mark.parametrize("setup, cell, why", [
    ("items = []", "items.append(1)", "items.append() changes items in place"),
    ("items = []", "items += [1]", "augmented assignment to items changes a list in place"),
    ("d = {}", "d.update(a=d.get('a', 0) + 1)", "d.update() changes d in place"),
    ("class T:\n    n = 0\n    def add_(self, k):\n        self.n += k\nt = T()", "t.add_(1)", "t.add_() changes t"),
    ("class Opt:\n    steps = 0\n    def step(self):\n        self.steps += 1\nopt = Opt()", "opt.step()",
     "opt.step() changes opt in place"),
    ("a = [0]", "a[0] += 1", "augmented assignment to a[0]"),
])
def test_in_place_changes_run_once_and_say_why(ip, setup, cell, why):
    ip.run_cell(setup)
    before = {k: repr(v) for k, v in ip.user_ns.items() if not k.startswith("_")}
    shown = run(ip, f"%cudatime {cell}")
    text = report(shown)
    assert ONCE in text and why in text
    assert "the cell ran 1 time: 1 cold + 0 warm-up + 0 warm" in text
    assert before != {k: repr(v) for k, v in ip.user_ns.items() if not k.startswith("_")}  # changed once


def test_n_forces_the_runs_and_says_the_state_reflects_all(ip):
    ip.run_cell("items = []")
    text = report(run(ip, "%cudatime -n 3 -w 0 items.append(1)"))
    assert ip.user_ns["items"] == [1, 1, 1, 1]
    assert "The state reflects all 4 runs, not one (-n 3 forced them)" in text


def test_what_is_not_an_in_place_change():
    import ast

    from fractions import Fraction

    ns = {"n": 1, "np": os, "out": [0], "loss": object(), "s": "x", "f": Fraction(1, 3)}
    for source in ("n += 1", "s += 'y'", "f += 1", "np.append(1)", "new = []\nnew.append(1)", "out[:] = [1]",
                   "loss.backward()", "out.copy_(1)", "def f():\n    out.append(1)", "undefined.append(1)"):
        assert in_place_changes(ast.parse(source), ns) == [], source


def test_backward_stays_timeable(ip):
    pytest.importorskip("torch", reason="torch not installed")
    ip.run_cell("import torch\nw = torch.ones(4, requires_grad=True)")
    cell = run(ip, "%%cudatime -n 3\nloss = (w * 2).sum()\nloss.backward()")
    assert ONCE not in report(cell) and "3 warm" in report(cell)


def test_cd_runs_once(ip, tmp_path):
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    here = os.getcwd()
    try:
        os.chdir(deep)
        cell = run(ip, "%cudatime %cd -q ..")
        assert os.getcwd() == str(tmp_path / "a")
        assert "the cell changes the working directory" in report(cell)
    finally:
        os.chdir(here)


@pytest.fixture
def pyplot(ip):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    ip.user_ns["plt"] = plt
    yield plt
    plt.close("all")


def test_pyplot_cells_run_once(ip, pyplot):
    cell = run(ip, "%cudatime plt.plot([1, 2])")
    assert "pyplot" in report(cell) and ONCE in report(cell)
    assert len(pyplot.gca().lines) == 1


def test_figures_of_later_runs_are_closed(ip, pyplot):
    run(ip, "%%cudatime -n 4\nplt.figure()\nplt.plot([1, 2])")
    assert len(pyplot.get_fignums()) == 1


def test_widgets_of_later_runs_are_closed(ip):
    widgets = pytest.importorskip("ipywidgets")
    from ipython_cudatime.state import _live_widgets

    before = len(_live_widgets())
    one = widgets.IntSlider()
    per_slider = len(_live_widgets()) - before  # a slider opens its layout and style widgets too
    one.close()
    ip.user_ns["widgets"] = widgets
    before = len(_live_widgets())
    run(ip, "%cudatime -n 3 w = widgets.IntSlider()")
    assert len(_live_widgets()) - before == per_slider  # the cold run's slider stays open
    assert id(ip.user_ns["w"]) in {id(w) for w in _live_widgets().values()}  # w is the open one


def test_later_runs_output_is_discarded_as_written(ip):
    ip.run_cell("import sys\nstreams = []")
    cell = run(ip, "%%cudatime -n 2 -w 0\nprint('hello')\nstreams.append(type(sys.stdout).__name__)\ndisplay('shown')")
    assert cell.stdout.count("hello") == 1
    assert sum("shown" in text for text in cell.displayed) == 1
    assert ip.user_ns["streams"][1:] == ["_Sink", "_Sink"]  # not a buffer: nothing is kept


def test_runs_zero_is_one_run_in_all(ip):
    ip.run_cell("calls = 0\ndef tick():\n    global calls\n    calls += 1")
    run(ip, "%cudatime -n 0 tick()")
    assert ip.user_ns["calls"] == 1
    for line in ("-n 0 -w 3 tick()", "-n 0 -p tick()"):
        with pytest.raises(UsageError, match="-n 0 runs the cell once in all"):
            ip.run_line_magic("cudatime", line)


def test_output_option_shows_the_report_and_returns_the_result(ip):
    cell = run(ip, "r = %cudatime -o -n 2 40 + 2")
    assert ip.user_ns["r"].runs == 2 and any(text.startswith("CPU times") for text in cell.displayed)
    bare = run(ip, "%cudatime -o -n 2 40 + 2")
    assert sum(text.startswith("CPU times") for text in bare.displayed) == 1  # the report, once
    assert repr(bare.value).count("\n") == 0 and bare.value.runs == 2
    quiet = run(ip, "r = %cudatime -o -q -n 2 40 + 2")
    assert quiet.displayed == [] and quiet.stdout == ""


def test_every_report_states_the_counts(ip):
    cell = run(ip, "%cudatime -n 0 1")
    assert "runs     : the cell ran 1 time: 1 cold + 0 warm-up + 0 warm" in report(cell)
    from ipython_cudatime.render.html import render_html

    assert "the cell ran 1 time" in render_html(ip.run_line_magic("cudatime", "-o -q -n 0 1"))


def test_snapshot_restores_and_deletes():
    ns = {"a": 1}
    snapshot = NameSnapshot(ns, ["a", "b"])
    ns.update(a=2, b=3)
    snapshot.restore()
    assert ns == {"a": 1}
    import ast

    assert top_level_names(ast.parse("del x\nimport os.path\nfrom m import *\ny: int = 1")) == ["os", "x", "y"]
