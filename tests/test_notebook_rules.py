"""A notebook's rules in a real Jupyter kernel (nbclient): an error stops Run All at its
cell, and a repeated plotting cell shows one figure. Runs under both environments."""

import re

import IPython
import nbformat
import pytest
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell, new_notebook

import browser

LOAD = "%load_ext ipython_cudatime"
AFTER = "after = 'Run All went on'"


def run_all(cells, tmp_path):
    """Execute the cells as Run All does; return the notebook and the CellExecutionError, if any."""
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    try:
        browser.execute_notebook(nb, tmp_path)
    except CellExecutionError as exc:
        return nb, exc
    return nb, None


@pytest.mark.parametrize("failing, ename", [
    ("%cudatime -n 3 1 / 0", "ZeroDivisionError"),
    ("%%cudatime -n 3 undefined_setup_name\n1 + 1", "NameError"),
    ("%%cudatime -n 2 --sweep d=1,0,2 --stop-on-error\n10 / d", "ZeroDivisionError"),
])
def test_an_error_stops_run_all_at_its_cell(tmp_path, failing, ename):
    nb, error = run_all([LOAD, failing, AFTER], tmp_path)
    assert error is not None and error.ename == ename
    outputs = nb.cells[1].outputs
    assert outputs[-1].output_type == "error" and outputs[-1].ename == ename
    assert sum(out.output_type == "error" for out in outputs) == 1  # shown once
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(outputs[-1].traceback))
    assert "ipython_cudatime" not in shown
    if IPython.version_info[0] >= 8:  # the right cell (ipykernel names cells by a hash of their code on IPython 7)
        assert f"Cell In[{nb.cells[1].execution_count}]" in shown
    assert nb.cells[2].get("execution_count") is None and not nb.cells[2].outputs  # never ran


def test_a_plotting_cell_shows_one_figure(tmp_path):
    cells = [LOAD, "%matplotlib inline\nimport matplotlib.pyplot as plt",
             "%%cudatime -n 3\nplt.figure()\nplt.plot([1, 2, 3])",
             "%cudatime plt.plot([3, 2, 1])"]
    nb, error = run_all(cells, tmp_path)
    assert error is None
    for cell in nb.cells[2:]:
        figures = [out for out in cell.outputs if "image/png" in out.get("data", {})]
        assert len(figures) == 1, cell.source
    assert "Ran once only" in str(nb.cells[3].outputs)
    nbformat.validate(nb)


KERNEL_SETUP = """
import os, sys, logging
hist = {'loss': []}
log = logging.getLogger('i20-kernel')
log.propagate = False
log.addHandler(logging.StreamHandler(sys.__stderr__))  # the process's own fd 2, not the notebook's stream
def shout():
    os.system('echo fd-shout')
    return 1
asked = 0
def who():
    global asked
    asked += 1
    return 'me' if asked == 1 else input('who? ')
"""


def _text(cell, name=None):
    """What a cell's outputs say (streams of ``name`` only, when given)."""
    outputs = [out for out in cell.outputs if name is None or out.get("name") == name]
    return "".join(out.get("text", "") + str(out.get("data", {}).get("text/plain", "")) for out in outputs)


def test_later_runs_in_a_kernel_leave_one_run_and_never_prompt(tmp_path, capfd):
    """fd-level output reaches the notebook where ipykernel forwards fds 1 and 2, else the kernel's
    own stdout/stderr, which are this process's (``capfd``): counted in both, it appears once."""
    cells = [LOAD, KERNEL_SETUP,
             "%cudatime hist['loss'].append(1)",
             "%cudatime -n 3 y = shout()",  # repeats (a kept value); the command writes to fd 1
             "%cudatime -n 3 log.warning('hi-log')",  # forced; the handler writes to fd 2
             "%cudatime -n 3 name = who()",  # forced: who() asks for input in the later runs
             "%cudatime !echo x >> f.txt",
             "print(len(hist['loss']), name, open('f.txt').read().count('x'))"]
    nb, error = run_all(cells, tmp_path)
    assert error is None
    assert "hist['loss'] was put back as the first run found it before each later run" in _text(nb.cells[2])
    out, err = capfd.readouterr()
    assert sum(_text(cell, "stdout").count("fd-shout") for cell in nb.cells) + out.count("fd-shout") == 1
    assert "each run would run `echo fd-shout`" in _text(nb.cells[3])  # forced: the report says what the runs did
    assert "3 warm" in _text(nb.cells[3])
    assert sum(_text(cell).count("hi-log") for cell in nb.cells) + err.count("hi-log") == 1
    assert "Stopped early by input() in warm run 1" in _text(nb.cells[5])
    assert _text(nb.cells[7], "stdout").strip() == "1 me 1"


def test_errors_in_a_kernel_show_the_users_lines_only(tmp_path):
    fails_later = "calls = 0\ndef g():\n    global calls\n    calls += 1\n    if calls == 30:\n        raise ValueError('30')\n    return 1"
    for cells, ename in (([LOAD, "%%cudatime -n 3\nx = 1\n1 +* 2"], "SyntaxError"),
                         ([LOAD, fails_later, "%cudatime -n 40 y = g() + 1"], "ValueError")):  # forced: g counts
        nb, error = run_all(cells, tmp_path)
        assert error is not None and error.ename == ename
        shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(nb.cells[-1].outputs[-1].traceback))
        assert "ipython_cudatime" not in shown and "_cudatime_batch" not in shown and "interactiveshell" not in shown


STATEFUL = """
import numpy as np
n = 0
def bump():
    global n
    n += 1
    return n
rng, reference = np.random.default_rng(0), np.random.default_rng(0)
class Acc:
    def __init__(self):
        self.total = 0
    def record(self, k):
        self.total += k
        return self.total
acc = Acc()
"""
TORCH_STATEFUL = """
import torch
torch.manual_seed(0)
bn = torch.nn.BatchNorm1d(4)
x = torch.randn(8, 4)
g, g_reference = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
first = torch.rand(1, generator=g_reference)  # what one run draws
"""


def test_user_functions_modules_and_generators_leave_one_run_in_a_kernel(tmp_path):
    """The issue's rows with a user function, a method writing ``self``, a private generator and a
    stateful module, in a real kernel: each leaves one run's state, and says how (put back before each
    later run, or stopped after the probe)."""
    torch = pytest.importorskip("torch", reason="torch not installed") is not None
    cells = [LOAD, STATEFUL, "%cudatime k = bump()", "%cudatime t = acc.record(3)", "%cudatime v = rng.standard_normal(2)",
             "print(n, acc.total, (v == reference.standard_normal(2)).all(), "
             "(rng.standard_normal(2) == reference.standard_normal(2)).all())"]
    if torch:
        cells += [TORCH_STATEFUL, "%cudatime y = bn(x)", "%cudatime u = torch.rand(1, generator=g)",
                  "print(int(bn.num_batches_tracked), torch.equal(u, first), torch.equal(g.get_state(), g_reference.get_state()))"]
    nb, error = run_all(cells, tmp_path)
    assert error is None
    for cell in nb.cells[2:4]:  # a global and an attribute: put back before each later run
        assert "put back as the first run found it before each later run" in _text(cell), _text(cell)
    assert "Stopped repeating after 2 runs" in _text(nb.cells[4]) and "put back as the first run left it" in _text(
        nb.cells[4])  # a generator's state: a second run draws other numbers
    assert _text(nb.cells[5], "stdout").split() == ["1", "3", "True", "True"]
    if torch:
        assert "bn.num_batches_tracked" in _text(nb.cells[7]) and "changed g" in _text(nb.cells[8])
        assert _text(nb.cells[9], "stdout").split() == ["1", "True", "True"]


HOLES = """
import random, sqlite3
L = random.Random(3).sample(range(5000), 5000)
con = sqlite3.connect(':memory:')
cur = con.cursor()
cur.execute('create table t(x)')
"""
TORCH_HOLES = """
import torch
p = torch.ones(3)
w = torch.ones(3, requires_grad=True)
loss = (w * 2).sum()
"""


def test_the_last_holes_leave_one_run_in_a_kernel(tmp_path):
    """Issue 46's kinds in a real kernel: a sort in place (each warm run sorts what the cold run sorted), a
    C object that shows no state (a database cursor: once), a write through ``.data`` (one update), a
    ``backward()`` on a loss built earlier (one gradient, a reason): each leaves one run's state."""
    torch = pytest.importorskip("torch", reason="torch not installed") is not None
    cells = [LOAD, HOLES, "%cudatime L.sort()", "%cudatime cur.execute('insert into t values (1)')",
             "print(L == sorted(L), con.execute('select count(*) from t').fetchone()[0])"]
    if torch:
        cells += [TORCH_HOLES, "%cudatime p.data.mul_(0.5).add_(1.0)", "%cudatime loss.backward()",
                  "print(p.tolist(), w.grad.tolist())"]
    nb, error = run_all(cells, tmp_path)
    assert error is None
    assert "L was put back as the first run found it" in _text(nb.cells[2]), _text(nb.cells[2])
    assert "Ran once only" in _text(nb.cells[3]) and "sqlite3.Cursor" in _text(nb.cells[3])
    assert _text(nb.cells[4], "stdout").split() == ["True", "1"]
    if torch:
        assert "outside its version counter" in _text(nb.cells[6]), _text(nb.cells[6])
        assert "retain_graph=True" in _text(nb.cells[7]), _text(nb.cells[7])
        assert _text(nb.cells[8], "stdout").strip() == "[1.5, 1.5, 1.5] [2.0, 2.0, 2.0]"
