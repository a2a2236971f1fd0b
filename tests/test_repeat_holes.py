"""The last holes in repeating a cell (issue 46), in a real shell: warm runs that would time another job
than the cold run's, C objects whose state cannot be read, a second run that fails on what the first used
up. Runs under both environments of `make test` (IPython 9, and Colab's 7.34)."""

import pytest
from conftest import run

ONCE = "Ran once only"
REWOUND = "put back as the first run found"


def report(cell):
    return "\n".join(cell.displayed)


def measured(ip, line):
    """``%cudatime -o LINE``'s result and report, the cell's error raised."""
    cell = run(ip, f"r = %cudatime -o {line}")
    assert cell.error is None, cell.stderr
    return ip.user_ns["r"], report(cell)


# Comparisons counted by the items themselves: how much work a run did, with no clock (a busy machine
# changes times, never counts). Sorting n shuffled items takes about n log2 n comparisons, sorted ones n - 1.
COUNTED = """
import random
class Item:
    compared = 0
    def __init__(self, v):
        self.v = v
    def __lt__(self, other):
        Item.compared += 1
        return self.v < other.v
def shuffled():
    return [Item(v) for v in random.Random(4).sample(range(2000), 2000)]
"""


def test_each_warm_run_sorts_the_list_the_cold_run_sorted(ip):
    """``L.sort()``: the cold run sorts ``L`` in place; each later run starts from ``L`` (and the counter)
    as the cold run found them, put back outside the clock, so it does the same work. The last run's count
    is one sort of the shuffled list, and ``L`` ends sorted once."""
    ip.run_cell(COUNTED + "reference = shuffled()\nreference.sort()\nonce = Item.compared\n"
                "Item.compared = 0\nL = shuffled()")
    r, text = measured(ip, "-q L.sort()")
    assert "L and Item.compared were " + REWOUND in " ".join(r.notes) and r.runs > 1, text
    assert ip.ev("Item.compared") == ip.ev("once") > 5 * 2000  # a sorted list would have cost 1,999
    assert [item.v for item in ip.user_ns["L"]] == list(range(2000))


@pytest.mark.parametrize("setup, cell, check", [
    ("import heapq, random\nrandom.seed(1)\nH = random.sample(range(500), 500)", "heapq.heapify(H)",
     "H == sorted(H) or all(H[i] <= H[2 * i + 1] for i in range(249))"),
    ("D = {}\nK = list(range(50))", "for k in K:\n    D[k] = D.get(k, 0) + 1", "D == {k: 1 for k in K}"),
    ("Q = list(range(10))", "Q.reverse()", "Q == list(range(9, -1, -1))"),
    ("class Box:\n    pass\nb = Box()\nb.items = [3, 1, 2]", "b.items.sort()\nb.seen = True",
     "b.items == [1, 2, 3] and b.seen"),
])
def test_changed_containers_are_put_back_before_each_later_run(ip, setup, cell, check):
    ip.run_cell(setup)
    shown = run(ip, f"%%cudatime\n{cell}")
    text = report(shown)
    assert shown.error is None and REWOUND in text and ONCE not in text, text
    assert ip.ev(check), text


def test_warm_runs_on_the_state_the_first_run_left_are_said_never_unexplained(ip):
    """An array sorted in place keeps no copy of its old values: the warm runs sort a sorted array, and
    the report says so where it would have called the gap unexplained."""
    np = pytest.importorskip("numpy")
    ip.user_ns["a"] = np.random.default_rng(0).random(200_000)
    r, text = measured(ip, "a.sort()")
    assert "the warm runs started from the state it left" in text and "unexplained" not in text, text
    assert bool(np.all(np.diff(ip.user_ns["a"]) >= 0)) and r.runs > 1


@pytest.mark.parametrize("setup, cell, named, check", [
    ("import sqlite3\ncon = sqlite3.connect(':memory:')\ncur = con.cursor()\ncur.execute('create table t(x)')",
     "cur.execute('insert into t values (1)')", "sqlite3.Cursor",
     "con.execute('select count(*) from t').fetchone() == (1,)"),
    ("import sqlite3\ncon = sqlite3.connect(':memory:')\ncon.execute('create table t(x)')",
     "con.execute('insert into t values (1)')", "sqlite3.Connection",
     "con.execute('select count(*) from t').fetchone() == (1,)"),
    ("import hashlib\nh = hashlib.sha256()", "h.update(b'x')", "h",
     "h.hexdigest() == hashlib.sha256(b'x').hexdigest()"),
    ("import csv, io\nrows = csv.reader(io.StringIO('a\\nb\\nc\\n'))", "row = next(rows)", "rows",
     "row == ['a'] and next(rows) == ['b']"),
])
def test_a_c_object_whose_state_cannot_be_read_runs_once_and_is_named(ip, setup, cell, named, check):
    ip.run_cell(setup)
    text = report(run(ip, f"%cudatime {cell}"))
    assert ONCE in text and named in text, text
    assert ip.ev(check), text


@pytest.mark.parametrize("cell", ["s = sorted(xs)", "t = sum(xs) / len(xs)", "m = max(xs, key=abs)"])
def test_ordinary_cells_over_a_list_still_repeat(ip, cell):
    ip.run_cell("xs = [3, -7, 1, 4]")
    r, text = measured(ip, f"-q {cell}")
    assert r.runs > 1 and REWOUND not in text, text


LOSS = "import torch\nw = torch.ones(3, requires_grad=True)\nb = torch.zeros(1, requires_grad=True)\n"


@pytest.mark.parametrize("magic", ["%cudatime loss.backward()", "%%cudatime\nloss.backward()"])
@pytest.mark.parametrize("before, grad", [("", [2.0] * 3), ("(w * 3).sum().backward()\n", [5.0] * 3)])
def test_backward_on_a_loss_built_earlier_runs_once_with_one_runs_gradient(ip, magic, before, grad):
    """The first run frees the graph a second ``backward()`` needs: one run, the gradient one run leaves
    (set, or added to one that was there), and how to time a backward pass."""
    pytest.importorskip("torch", reason="torch not installed")
    ip.run_cell(LOSS + before + "loss = (w * 2).sum() + b.sum()")
    cell = run(ip, magic)
    text = report(cell)
    assert cell.error is None and ONCE in text and "retain_graph=True" in text, text
    assert ip.ev("w.grad.tolist()") == grad and ip.ev("b.grad.tolist()") == [1.0], text


@pytest.mark.parametrize("cell, check", [
    ("g = torch.autograd.grad(loss, w)", "g[0].tolist() == [2.0] * 3 and w.grad is None"),  # no .grad set
    ("loss.backward(inputs=[w])", "w.grad.tolist() == [2.0] * 3 and b.grad is None"),  # w's branch saved tensors
    ("out = loss * 1\nout.backward()", "w.grad.tolist() == [2.0] * 3"),  # a graph grown from the earlier one
])
def test_a_second_run_that_fails_on_what_the_first_used_up_is_a_reason(ip, cell, check):
    pytest.importorskip("torch", reason="torch not installed")
    ip.run_cell(LOSS + "loss = (w * 2).sum() + b.sum()")
    shown = run(ip, f"%%cudatime\n{cell}")
    text = report(shown)
    assert shown.error is None and ONCE in text and "a second run" in text and "raised RuntimeError" in text, text
    assert ip.ev(check), text


def test_backward_built_in_the_cell_still_times_its_runs(ip):
    """A loss built in the cell has a fresh graph each run: the runs repeat once the gradients are zeroed."""
    pytest.importorskip("torch", reason="torch not installed")
    ip.run_cell(LOSS)
    r, text = measured(ip, "-q w.grad = None\n(w * 2).sum().backward()")
    assert r.runs > 1 and ip.ev("w.grad.tolist()") == [2.0] * 3, text
