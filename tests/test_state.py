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


def assert_one_run(ip, setup, cell, why, check):
    """``cell`` (no -n) leaves the state one run leaves, no error, and the report says why it ran once."""
    ip.run_cell(setup)
    shown = run(ip, f"%%cudatime\n{cell}")
    text = report(shown)
    assert shown.error is None, shown.stderr
    assert f"{ONCE}: " in text and why in text and "-n N forces N more runs" in text, text
    assert "the cell ran 1 time: 1 cold + 0 warm-up + 0 warm" in text
    assert ip.ev(check), check


# The table: cells every training notebook has, which repeated silently before.
@pytest.mark.parametrize("setup, cell, why, check", [
    ("hist = {'loss': []}", "hist['loss'].append(1)", "hist['loss'].append() changes hist['loss'] in place",
     "hist == {'loss': [1]}"),
    ("d = {}", "d['k'] = d.get('k', 0) + 1", "d['k'] = … changes d in place", "d == {'k': 1}"),
    ("import numpy as np\nZ = np.zeros(2)", "Z[0] = Z[0] + 1", "Z[0] = … changes Z in place", "Z.tolist() == [1, 0]"),
    ("import numpy as np\nt = np.zeros(1)", "alias = t\nalias += 1", "augmented assignment to alias changes a ndarray",
     "t.tolist() == [1] and alias is t"),
    ("rows = [[], []]", "for row in rows:\n    row.append(1)", "row.append() changes row in place",
     "rows == [[1], [1]]"),
    ("gen = iter(range(3))", "v = next(gen)", "next() advances an iterator", "v == 0 and next(gen) == 1"),
])
def test_the_tables_cells_leave_one_runs_state(ip, setup, cell, why, check):
    assert_one_run(ip, setup, cell, why, check)


@pytest.mark.parametrize("cell, why, check", [
    ("Z[0] = Z[0] + 1", "Z[0] = … changes Z in place", "Z.tolist() == [1, 0]"),
    ("alias = Z\nalias += 1", "augmented assignment to alias changes a Tensor in place", "Z.tolist() == [1, 1]"),
])
def test_the_tables_tensor_cells_leave_one_runs_state(ip, cell, why, check):
    pytest.importorskip("torch", reason="torch not installed")
    assert_one_run(ip, "import torch\nZ = torch.zeros(2)", cell, why, check)


def test_a_logging_call_runs_once_and_later_runs_write_nothing_to_the_fd(ip, capfd):
    ip.run_cell("import logging, sys\nlog = logging.getLogger('i20-state')\nlog.propagate = False\n"
                "log.addHandler(logging.StreamHandler(sys.__stderr__))")  # the process's own stderr: fd 2
    assert_one_run(ip, "", "log.warning('hi-once')", "log.warning() acts on log, a Logger", "True")
    run(ip, "%cudatime -n 3 log.warning('hi-forced')")
    err = capfd.readouterr().err
    assert err.count("hi-once") == 1 and err.count("hi-forced") == 1  # the forced runs' lines went to /dev/null


def test_later_runs_are_quiet_at_the_file_descriptor_level(ip, capfd):
    ip.run_cell("import os\ndef shout():\n    os.system('echo fd-out')\n    os.write(2, b'fd-err\\n')\n    return 1")
    cell = run(ip, "%cudatime -n 3 y = shout()")  # a kept value: the cell repeats; the writes hide in shout()
    out, err = capfd.readouterr()
    assert ONCE not in report(cell) and "3 warm" in report(cell)
    assert out.count("fd-out") == 1 and err.count("fd-err") == 1


def test_a_shell_command_runs_once(ip, tmp_path):
    path = tmp_path / "f.txt"
    assert_one_run(ip, "", f"!echo x >> {path}", "the shell command `echo x >>", "True")
    assert path.read_text() == "x\n"


def test_input_in_the_cell_prompts_once(ip, monkeypatch):
    import builtins

    prompts = []
    monkeypatch.setattr(builtins, "input", lambda prompt="": prompts.append(prompt) or "me")
    assert_one_run(ip, "", "who = input('who? ')", "input() reads from the user", "who == 'me'")
    assert prompts == ["who? "]


def test_input_in_a_later_run_stops_the_repeats_and_reports_the_runs_done(ip):
    ip.run_cell("asked = 0\ndef who():\n    global asked\n    asked += 1\n    return 'me' if asked == 1 else input('who? ')")
    cell = run(ip, "%cudatime name = who()")  # a kept value: the cell may repeat; input() hides in who()
    assert cell.error is None and ip.user_ns["name"] == "me"
    assert "Stopped early by input() in warm-up run 1" in report(cell)


def test_underscore_and_out_read_as_in_one_run_batched_or_not(ip):
    numbers = [run(ip, value).result.execution_count for value in ("41", "42", "43")]
    ip.run_cell(f"%cudatime -q -b 0.02 -v r y = (_, __, ___, Out[{numbers[0]}])")
    assert ip.user_ns["r"].batch > 1 and ip.user_ns["y"] == (43, 42, 41, 41)  # batched: k runs in one loop
    cell = run(ip, "%cudatime -n 3 z = _ + 1")  # one run per sample
    assert cell.error is None and ip.user_ns["z"] == 44 and ONCE not in report(cell)


def test_categories_of_change_run_once(ip, tmp_path, monkeypatch):
    """Each way of changing state that a name restore cannot undo, in a form of its own."""
    monkeypatch.delenv("I20_VAR", raising=False)
    monkeypatch.delenv("I20_MAGIC", raising=False)
    path = tmp_path / "log.txt"
    ip.run_cell(f"import os, queue\nimport numpy as np\npath = {str(path)!r}\nclass C:\n    n = 0\nc = C()")
    cases = [
        ("c.n = c.n + 1", "c.n = … changes c in place", "c.n == 1"),  # a store into an attribute
        ("del c.n", "del c.n changes c in place", "c.n == 0"),  # the class's n shows again
        ("a = []", None, "True"),
        ("b = a\nb.append(1)", "b.append() changes b in place", "a == [1]"),  # an alias
        ("rows = [[], []]", None, "True"),
        ("for row in rows:\n    row += [1]", "augmented assignment to row changes a list", "rows == [[1], [1]]"),
        ("q = queue.Queue()\nq2 = q", None, "True"),
        ("q2.put(1)", "q2.put() acts on q2, a Queue", "q.qsize() == 1"),  # a discarded method call
        ("setattr(c, 'n', 5 + c.n)", "setattr() changes an object", "c.n == 5"),  # a builtin with an effect
        ("with open(path, 'a') as f:\n    f.write('x\\n')", "open() for writing changes a file",
         "open(path).read() == 'x\\n'"),  # a file
        ("os.environ['I20_VAR'] = os.environ.get('I20_VAR', '') + 'x'", "os.environ['I20_VAR'] = … changes os.environ",
         "os.environ['I20_VAR'] == 'x'"),  # the environment
        ("os.system(f'echo y >> {path}')", "os.system() acts outside Python's objects",
         "open(path).read() == 'x\\ny\\n'"),  # a command
        ("z = np.zeros(2)", None, "True"),
        ("np.add(z, 1, out=z)", "np.add(…, out=…) writes into its out= argument", "z.tolist() == [1, 1]"),
        ("%env I20_MAGIC=set", "the magic %env may act outside the cell's names", "os.environ['I20_MAGIC'] == 'set'"),
    ]
    for cell, why, check in cases:
        if why is None:
            ip.run_cell(cell)
        else:
            assert_one_run(ip, "", cell, why, check)


def test_a_change_hidden_in_a_function_is_seen_in_the_environment(ip, monkeypatch):
    monkeypatch.delenv("I20_VAR", raising=False)
    ip.run_cell("import os\ndef grow():\n    os.environ['I20_VAR'] = os.environ.get('I20_VAR', '') + 'x'\n    return 1")
    assert_one_run(ip, "", "y = grow()", "the cell changes the environment", "os.environ['I20_VAR'] == 'x'")


def warm_result(ip, setup, cell):
    """The result of timing ``cell`` (a short budget, no -n) after ``setup``."""
    ip.run_cell(setup)
    ip.run_cell(f"%%cudatime -q -b 0.02 -v timed_result\n{cell}")
    return ip.user_ns["timed_result"]


@pytest.mark.parametrize("setup, cell", [
    ("a = [3, 1, 2]", "sorted(a)"),
    ("a = [3, 1, 2]", "y = sum(a)"),
    ("a = [3, 1, 2]", "[v * 2 for v in a]"),
    ("import numpy as np\nx = np.ones((4, 4))", "y = x @ x\ns = y.sum()"),
    ("import numpy as xp\nx = xp.ones((4, 4))", "for loop in range(10):\n    xp.matmul(x, x)"),  # another spelling
    ("from numpy import ones, dot as mm\nx = ones((4, 4))", "mm(x, x)\nx.sum()\n(x @ x).mean()\nNone"),
    ("import numpy as np\nout = np.zeros(3)\nx = np.ones(3)", "out[:] = x * 2"),
    ("", "new = []\nnew.append(1)\nd = {}\nd['k'] = 1"),  # the cell's own new objects
    ("", "print('hi')"),
    ("", "here = %pwd"),  # a magic that only reads
])
def test_safe_cells_still_get_warm_runs(ip, setup, cell):
    r = warm_result(ip, setup, cell)
    assert r.warm and not any(ONCE in note for note in r.notes), r.notes


SEED_002 = """
import torch
def corr2d_multi_in_out_1x1(X, K):
    c_i, h, w = X.shape
    c_o = K.shape[0]
    X = X.reshape((c_i, h * w))
    K = K.reshape((c_o, c_i))
    Y = torch.matmul(K, X)
    return Y.reshape((c_o, h, w))
X = torch.normal(0, 1, (3, 19, 10))
K = torch.normal(0, 1, (2, 3, 1, 1))
batch = torch.rand(4, 8, 8)
w = torch.ones(4, requires_grad=True)
"""


@pytest.mark.parametrize("cell", [
    "Y1 = corr2d_multi_in_out_1x1(X, K)",  # seed 002
    "torch.bmm(batch, batch)",  # seed 003
    "results = torch.bmm(batch, batch)",
    "loss = (w * 2).sum()\nloss.backward()",  # a training cell's backward pass
    "for loop in range(10):\n    torch.matmul(batch, batch)",
    "out = torch.empty_like(X)\nfor i in range(len(X)):\n    out[i] = X[i] * 2",
])
def test_safe_torch_cells_still_get_warm_runs(ip, cell):
    pytest.importorskip("torch", reason="torch not installed")
    r = warm_result(ip, SEED_002, cell)
    assert r.warm and not any(ONCE in note for note in r.notes), r.notes


def test_seed_001s_loop_of_tf_matmul_still_gets_warm_runs(ip):
    pytest.importorskip("tensorflow", reason="tensorflow not installed")
    r = warm_result(ip, "import tensorflow as tf\nx = tf.random.uniform([8, 8])",
                    "for loop in range(10):\n    tf.matmul(x, x)")
    assert r.warm and not any(ONCE in note for note in r.notes), r.notes


def test_n_forces_n_more_runs_and_says_the_state_reflects_all(ip):
    ip.run_cell("hist = []")
    text = report(run(ip, "%cudatime -n 4 hist.append(1)"))
    assert ip.user_ns["hist"] == [1] * 5
    assert "the cell ran 5 times: 1 cold + 0 warm-up + 4 warm" in text
    assert "The state reflects all 5 runs, not one (-n 4 forced them): hist.append() changes hist in place" in text


def test_n_forces_runs_with_the_warm_up_asked_for(ip):
    ip.run_cell("items = []")
    text = report(run(ip, "%cudatime -n 3 -w 1 items.append(1)"))
    assert ip.user_ns["items"] == [1] * 5
    assert "The state reflects all 5 runs, not one (-n 3 forced them)" in text


@pytest.mark.parametrize("setup, draw", [
    ("import random\nrandom.seed(5)", "random.random()"),
    ("import numpy as np\nnp.random.seed(5)", "np.random.random()"),
    ("import torch\ntorch.manual_seed(5)", "torch.rand(1).item()"),
])
def test_random_streams_are_where_one_run_leaves_them(ip, setup, draw):
    if "torch" in setup:
        pytest.importorskip("torch", reason="torch not installed")
    ip.run_cell(setup)
    first, second = ip.ev(draw), ip.ev(draw)
    ip.run_cell(setup)
    cell = run(ip, f"%cudatime -b 0.02 r = {draw}")
    assert ONCE not in report(cell) and "warm-up" in report(cell)
    assert ip.user_ns["r"] == first and ip.ev(draw) == second


def test_the_rule_on_forms_it_was_not_written_for():
    """Unit view of ``repeat_rule``: other spellings and aliases of the same changes."""
    import ast

    from ipython_cudatime.repeat_rule import MISSING, repeat_reasons

    ns = {"hist": [], "d": {}, "x": 1, "os": os}

    def reasons(source, after):
        later = {**ns, **after}
        return repeat_reasons(ast.parse(source), lambda n: ns.get(n, MISSING), lambda n: later.get(n, MISSING), ())

    after = {"h": ns["hist"], "e": os.environ, "operator": __import__("operator"), "y": 2, "s": "{}"}
    for source in ("list.append(hist, 1)", "getattr(hist, 'append')(1)", "y = hist.__iadd__([1])",
                   "import operator\noperator.setitem(d, 'k', 1)", "h = hist\nh.extend([1])", "d |= {'k': 1}",
                   "e = os.environ\ne['X'] = '1'", "y = hist.pop() if hist else None", "[h.append(1) for h in [hist]]"):
        assert reasons(source, after), source
    for source in ("x += 1", "y = x * 2", "def f():\n    hist.append(1)", "y = len(hist)", "s = str(d)"):
        assert reasons(source, after) == [], source


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
