"""A repeated cell leaves the state of one run, or runs once and says why (real shell)."""

import os
import random
import re
import sys
from pathlib import Path

import pytest
from conftest import run
from IPython.core.error import UsageError

from ipython_cudatime.features import FEATURES
from ipython_cudatime.render.report import Reading
from ipython_cudatime.measure.runner import top_level_names
from ipython_cudatime.repeat.state import NameSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import seeds  # noqa: E402, I001  (seed 002's code, shared with the benchmarks)

ONCE = "Ran once only"
STOPPED = "Stopped repeating after 2 runs"
REWOUND = "put back as the first run found"  # before each later run: the warm runs time the cold run's job


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


RUNS = re.compile(r"the cell ran [\d,]+ times?: 1 cold \+ (\d+) warm-up \+ (\d+) warm")


def counts(text):
    """(warm-up runs, warm runs) from a report's runs line."""
    found = RUNS.search(text)
    assert found, text
    return int(found[1]), int(found[2])


def assert_one_run(ip, setup, cell, why, check):
    """``cell`` (no -n) leaves the state one run leaves, with no error. Either it did not repeat (no warm
    statistics) and the report says why (``why``) and how to force it; or what the cold run changed could
    be put back as the cold run found it before each later run, and the report says so (``REWOUND``)."""
    ip.run_cell(setup)
    shown = run(ip, f"%%cudatime\n{cell}")
    text = report(shown)
    assert shown.error is None, shown.stderr
    if REWOUND in text:
        assert counts(text)[1] > 0 and ONCE not in text and STOPPED not in text, text
    else:
        assert (ONCE in text or STOPPED in text) and why in text and "-n N forces N more runs" in text, text
        assert counts(text)[1] == 0, text
    assert ip.ev(check), (check, text)
    return text


@pytest.mark.parametrize("setup, cell, why, check", [
    ("items = []", "items.append(1)", "the first run changed items", "items == [1]"),
    ("items = []", "items += [1]", "the first run changed items", "items == [1]"),
    ("d = {}", "d.update(a=d.get('a', 0) + 1)", "d['a']: unbound → 1", "d == {'a': 1}"),
    ("class T:\n    n = 0\n    def add_(self, k):\n        self.n += k\nt = T()", "t.add_(1)", "t.n: 1 → 2", "t.n == 1"),
    ("class Opt:\n    steps = 0\n    def step(self):\n        self.steps += 1\nopt = Opt()", "opt.step()",
     "opt.steps: 1 → 2", "opt.steps == 1"),
    ("a = [0]", "a[0] += 1", "the first run changed a", "a == [1]"),
])
def test_in_place_changes_leave_one_runs_state_and_say_why(ip, setup, cell, why, check):
    """Containers and attributes are put back as the cold run found them before each later run, so every
    warm run does the cold run's job and the state ends as one run leaves it."""
    ip.run_cell(setup)
    text = report(run(ip, f"%cudatime {cell}"))
    assert REWOUND in text and counts(text)[1] > 0, text
    assert ip.ev(check)


# The table: cells every training notebook has, which repeated silently before.
@pytest.mark.parametrize("setup, cell, why, check", [
    ("hist = {'loss': []}", "hist['loss'].append(1)", "hist['loss']", "hist == {'loss': [1]}"),
    ("d = {}", "d['k'] = d.get('k', 0) + 1", "d", "d == {'k': 1}"),
    ("import numpy as np\nZ = np.zeros(2)", "Z[0] = Z[0] + 1", "Z (written in place)", "Z.tolist() == [1, 0]"),
    ("import numpy as np\nt = np.zeros(1)", "alias = t\nalias += 1", "t (written in place)",
     "t.tolist() == [1] and alias is t"),
    ("rows = [[], []]", "for row in rows:\n    row.append(1)", "rows[0]", "rows == [[1], [1]]"),
    ("gen = iter(range(3))", "v = next(gen)", "gen, which cannot be put back", "v == 0 and next(gen) == 1"),
    ("n = 0\ndef bump():\n    global n\n    n += 1\n    return n", "k = bump()", "n (a global of bump()): 0 → 1",
     "n == 1 and k == 1"),
    ("class Acc:\n    def __init__(self):\n        self.total = 0\n    def record(self, k):\n        self.total += k\n"
     "        return self.total\nacc = Acc()", "t = acc.record(3)", "acc.total: 0 → 3", "acc.total == 3 and t == 3"),
])
def test_the_tables_cells_leave_one_runs_state(ip, setup, cell, why, check):
    assert_one_run(ip, setup, cell, why, check)


TRAIN = """
import copy, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(16, 4), torch.randn(16, 1)
def train_step(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss
reference = copy.deepcopy(model)
ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
ref_opt.zero_grad()
torch.nn.functional.mse_loss(reference(x), y).backward()
ref_opt.step()
def same_as_one_step():
    states = [(a, b) for a, b in zip(model.state_dict().values(), reference.state_dict().values())]
    momenta = [(opt.state[p]['momentum_buffer'], ref_opt.state[q]['momentum_buffer'])
               for p, q in zip(model.parameters(), reference.parameters())]
    return all(torch.equal(a, b) for a, b in states + momenta)
"""


@pytest.mark.parametrize("setup, cell, why, check", [
    (TRAIN, "loss = train_step(x, y)", "a global of train_step()", "same_as_one_step()"),
    ("import torch\nbn = torch.nn.BatchNorm1d(4)\nx = torch.randn(8, 4)", "y = bn(x)",
     "bn.num_batches_tracked", "int(bn.num_batches_tracked) == 1 and torch.allclose(bn.running_mean, x.mean(0) * 0.1)"),
    ("import torch\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\nx = torch.randn(8, 4)",
     "out = model(x)\nloss = out.sum()\nloss.backward()", "zero the gradients in the cell",
     "torch.equal(model.bias.grad, torch.full((2,), 8.0))"),
    ("import torch\nclass Cached(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.lin, self.cache = torch.nn.Linear(4, 4), []\n    def forward(self, t):\n        self.cache.append(t)\n"
     "        return self.lin(t)\nmodel = Cached()\ncalls = []\nmodel.register_forward_hook(lambda m, i, o: calls.append(1))\n"
     "tok = torch.randn(2, 4)", "logits = model(tok)", "model.cache", "len(model.cache) == 1 and calls == [1]"),
    ("import torch\ng = torch.Generator().manual_seed(0)\nref = torch.Generator().manual_seed(0)\nfirst = torch.rand(1, generator=ref)",
     "v = torch.rand(1, generator=g)", "the first run changed g",
     "torch.equal(v, first) and torch.equal(torch.rand(1, generator=g), torch.rand(1, generator=ref))"),
    ("import torch, torch.nn.functional as F\ntorch.manual_seed(0)\nref = F.dropout(torch.ones(1000), 0.5, training=True)\n"
     "torch.manual_seed(0)\nx = torch.ones(1000)", "y = F.dropout(x, 0.5, training=True, inplace=True)", "x (written in place)",
     "torch.equal(x, ref)"),
])
def test_the_tables_torch_cells_leave_one_runs_state(ip, setup, cell, why, check):
    pytest.importorskip("torch", reason="torch not installed")
    assert_one_run(ip, setup, cell, why, check)


def test_a_numpy_generator_of_the_users_is_left_as_one_draw_leaves_it(ip):
    assert_one_run(ip, "import numpy as np\nrng = np.random.default_rng(0)\nref = np.random.default_rng(0)\n"
                   "first = ref.standard_normal(3)", "v = rng.standard_normal(3)", "the first run changed rng",
                   "(v == first).all() and (rng.standard_normal(3) == ref.standard_normal(3)).all()")


@pytest.mark.parametrize("cell, why, check", [
    ("Z[0] = Z[0] + 1", "Z (written in place)", "Z.tolist() == [1, 0]"),
    ("alias = Z\nalias += 1", "Z (written in place)", "Z.tolist() == [1, 1]"),
])
def test_the_tables_tensor_cells_leave_one_runs_state(ip, cell, why, check):
    pytest.importorskip("torch", reason="torch not installed")
    assert_one_run(ip, "import torch\nZ = torch.zeros(2)", cell, why, check)


# Forms of state change that no code of the package names: the evidence sees each.
FORMS = [
    ("tally = {}\ndef count(key):\n    globals()['seen'] = globals().get('seen', 0) + 1\n    return key",
     "k = count('a')", "seen: unbound → 1", "seen == 1"),  # a global written through globals()
    ("class Box:\n    def __init__(self):\n        self.v = 0\n    def put(self, k):\n        setattr(self, 'v', self.v + k)\n"
     "        return self.v\nbox = Box()", "r = box.put(2)", "box.v: 0 → 2", "box.v == 2"),  # a method writing self
    ("def make():\n    c = 0\n    def step():\n        nonlocal c\n        c += 1\n        return c\n    return step\n"
     "step = make()", "v = step()", "c (in the closure of step())", "step() == 2"),  # a closure
    ("def remember(x, seen=[]):\n    seen.append(x)\n    return len(seen)", "k = remember(1)",
     "remember()'s default #1", "remember(2) == 2"),  # a mutable default argument
    ("class Counter:\n    made = 0\n    def __init__(self):\n        type(self).made += 1\n", "c = Counter()",
     "Counter.made: 0 → 1", "Counter.made == 1"),  # a class attribute
    ("import sys\ndef extend_path():\n    sys.path.append('/nowhere-i30')\n    return len(sys.path)", "k = extend_path()",
     "sys.path", "sys.path.count('/nowhere-i30') == 1"),  # a library's module state, through a function
    ("import heapq\nheap = []", "heapq.heappush(heap, 1)", "the first run changed heap", "heap == [1]"),
    ("import functools\nlog = []\nadd = functools.partial(list.append, log)", "add(1)", "the first run changed add.args[0]",
     "log == [1]"),
    ("def hits():\n    hits.calls = getattr(hits, 'calls', 0) + 1\n    return hits.calls", "k = hits()", "hits",
     "hits.calls == 1"),  # a function's own attribute
    ("import itertools\nit = iter(range(10))", "head = list(itertools.islice(it, 2))", "it, which cannot be put back",
     "next(it) == 2"),  # an iterator advanced by a library call
    ("import collections\nq = collections.deque([1, 2, 3])\ndef turn():\n    q.rotate(1)\n    return q[0]", "k = turn()",
     "q (a global of turn())", "list(q) == [3, 1, 2]"),
    ("import numpy as np\na = np.zeros(3)\ndef bump_all():\n    np.add(a, 1, out=a)\n    return a.sum()", "s = bump_all()",
     "a (a global of bump_all()) (written in place)", "a.tolist() == [1, 1, 1]"),  # an in-place ufunc in a function
    ("def counter():\n    i = 0\n    while True:\n        i += 1\n        yield i\ng = counter()\nnext(g)",
     "v = g.send(None)", "g, which cannot be put back", "next(g) == 3"),  # a generator at the same yield
    ("class Registry:\n    entries = []\n    def add(self):\n        Registry.entries.append(1)\nreg = Registry()",
     "reg.add()", "Registry.entries", "Registry.entries == [1]"),  # class-level state reached from an instance
    ("import sqlite3\nconn = sqlite3.connect(':memory:')\nconn.execute('create table t (x)')",
     "conn.execute('insert into t values (1)')", "conn (a sqlite3.Connection shows no state) could not be checked",
     "conn.execute('select count(*) from t').fetchone()[0] == 1"),  # a C object with state: unknown
    ("import collections\ncnt = collections.Counter()", "cnt.update('ab')", "cnt['a']: unbound → 1",
     "cnt == {'a': 1, 'b': 1}"),  # a dict whose update() adds: put back item by item
    ("import numpy as np\nnp.random.seed(0)\na = np.arange(10.0)", "np.random.shuffle(a)", "a (written in place)",
     "sorted(a.tolist()) == list(range(10)) and a.tolist() != list(range(10))"),  # a framework function that writes
]


@pytest.mark.parametrize("setup, cell, why, check", FORMS, ids=[form[1] for form in FORMS])
def test_forms_of_change_the_package_does_not_name(ip, setup, cell, why, check):
    assert_one_run(ip, setup, cell, why, check)


def test_a_write_to_an_open_file_runs_once(ip, tmp_path):
    path = tmp_path / "out.txt"
    assert_one_run(ip, f"fh = open({str(path)!r}, 'w')", "fh.write('x')", "fh, which cannot be put back",
                   "fh.close() is None")
    assert path.read_text() == "x"


def test_a_file_opened_for_appending_is_refused_in_later_runs(ip, tmp_path):
    path = tmp_path / "log.txt"
    text = assert_one_run(ip, f"path = {str(path)!r}", "with open(path, 'a') as f:\n    f.write('x')",
                          f"a second run would append to {str(path)!r} again (refused before it did)", "True")
    assert ONCE in text and "Stopped early" not in text
    assert path.read_text() == "x"


def test_a_file_written_through_a_function_the_package_never_saw(ip, tmp_path):
    ip.run_cell(f"import numpy as np\npath = {str(tmp_path / 'a.npy')!r}\na = np.arange(3)")
    text = assert_one_run(ip, "", "np.save(path, a)", "a second run would write", "np.load(path).tolist() == [0, 1, 2]")
    assert "writes into its arguments" not in text  # the reason is what happened, not a guess


@pytest.mark.parametrize("setup, cell", [
    ("import numpy as np\na, b, c = np.ones((8, 8)), np.ones((8, 8)), np.zeros((8, 8))", "np.matmul(a, b, out=c)"),
    ("import numpy as np\na = np.ones((8, 8))\nresults = {}", "results['mm'] = a @ a"),
    ("cfg = {'lr': 1.0}", "cfg['lr'] = 0.1"),
])
def test_an_idempotent_overwrite_repeats(ip, setup, cell):
    r = warm_result(ip, setup, cell)
    assert r.warm and not any(ONCE in note or STOPPED in note for note in r.notes), r.notes


def test_a_logging_call_to_the_terminal_repeats_and_later_runs_write_nothing_to_the_fd(ip, capfd):
    """A logger writing to the process's own stderr changes nothing the notebook keeps: the cell repeats,
    and only the cold run's line reaches fd 2."""
    ip.run_cell("import logging, sys\nlog = logging.getLogger('i20-state')\nlog.propagate = False\n"
                "log.addHandler(logging.StreamHandler(sys.__stderr__))")  # the process's own stderr: fd 2
    cell = run(ip, "%cudatime -n 3 log.warning('hi-once')")
    err = capfd.readouterr().err
    assert counts(report(cell))[1] == 3 and err.count("hi-once") == 1
    assert "The state reflects" not in report(cell)  # a logger's level cache, filled once, is not a change


def test_later_runs_are_quiet_at_the_file_descriptor_level(ip, capfd):
    ip.run_cell("import os\ndef shout():\n    os.system('echo fd-out')\n    os.write(2, b'fd-err\\n')\n    return 1")
    cell = run(ip, "%cudatime -n 3 y = shout()")  # a kept value: the cell repeats; the writes hide in shout()
    out, err = capfd.readouterr()
    assert ONCE not in report(cell) and "3 warm" in report(cell)
    assert out.count("fd-out") == 1 and err.count("fd-err") == 1


def test_a_shell_command_runs_once(ip, tmp_path):
    path = tmp_path / "f.txt"
    assert_one_run(ip, "", f"!echo x >> {path}", "a second run would run `", "True")
    assert path.read_text() == "x\n"


def test_input_in_the_cell_prompts_once(ip, monkeypatch):
    import builtins

    prompts = []
    monkeypatch.setattr(builtins, "input", lambda prompt="": prompts.append(prompt) or "me")
    text = report(run(ip, "%cudatime who = input('who? ')"))
    assert "Stopped early by input() in warm-up run 1" in text and counts(text) == (0, 0)
    assert prompts == ["who? "] and ip.user_ns["who"] == "me"


def test_input_in_a_later_run_stops_the_repeats_and_reports_the_runs_done(ip):
    ip.run_cell("asked = 0\ndef who():\n    global asked\n    asked += 1\n    return 'me' if asked == 1 else input('who? ')")
    cell = run(ip, "%cudatime name = who()")  # a kept value: the cell may repeat; input() hides in who()
    assert cell.error is None and ip.user_ns["name"] == "me" and ip.user_ns["asked"] == 1
    assert REWOUND in report(cell)  # `asked` put back before each later run: input() is never reached
    ip.run_cell("asked = 0\ndef who():\n    global asked\n    asked += 1\n    return 'me' if asked == 1 else input()")
    cell = run(ip, "%cudatime -n 3 name = who()")  # forced runs start where the last one left
    assert cell.error is None and "Stopped early by input() in warm run 1" in report(cell)


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
        ("c.n = c.n + 1", "the first run changed c", "c.n == 1"),  # a store into an attribute
        ("del c.n", "a second run raised AttributeError", "c.n == 0"),  # the class's n shows again
        ("a = []", None, "True"),
        ("b = a\nb.append(1)", "the first run changed a", "a == [1]"),  # an alias
        ("rows = [[], []]", None, "True"),
        ("for row in rows:\n    row += [1]", "the first run changed rows[0]", "rows == [[1], [1]]"),
        ("q = queue.Queue()\nq2 = q", None, "True"),
        ("q2.put(1)", "the first run changed q2.unfinished_tasks: 0 → 1", "q.qsize() == 1"),  # a discarded call
        ("setattr(c, 'n', 5 + c.n)", "c.n: unbound → 5", "c.n == 5"),  # a builtin with an effect
        ("with open(path, 'a') as f:\n    f.write('x\\n')", "a second run would append to",
         "open(path).read() == 'x\\n'"),  # a file
        ("os.environ['I20_VAR'] = os.environ.get('I20_VAR', '') + 'x'", "the cell changes the environment",
         "os.environ['I20_VAR'] == 'x'"),  # the environment
        ("os.system(f'echo y >> {path}')", "a second run would run `echo y >> ",
         "open(path).read() == 'x\\ny\\n'"),  # a command
        ("z = np.zeros(2)", None, "True"),
        ("np.add(z, 1, out=z)", "z (written in place)", "z.tolist() == [1, 1]"),
        ("%env I20_MAGIC=set", "the cell changes the environment", "os.environ['I20_MAGIC'] == 'set'"),
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


TIME_OP = """
def time_op(op, name):  # seed 003's helper, as the article prints it
    for _ in range(5):
        op()
    start = time.perf_counter()
    for _ in range(100):
        op()
    return name, (time.perf_counter() - start) / 100 * 1000
"""


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
    ("def f(v):\n    return [x * 2 for x in v]\nxs = [1, 2, 3]", "y = f(xs)"),  # a pure user function
    ("import time\nimport numpy as np\na = np.ones((8, 8))\n" + TIME_OP, "name, ms = time_op(lambda: a @ a, 'matmul')"),
    ("import numpy as np\na, b = np.ones((8, 8)), np.ones((8, 8))\ndef time_matmul(x):\n    for loop in range(10):\n"
     "        np.matmul(x, x)\n    print('10 loops')", "time_matmul(a)"),  # seed 001's form, called for its effect
])
def test_safe_cells_still_get_warm_runs(ip, setup, cell):
    r = warm_result(ip, setup, cell)
    assert r.warm and not any(ONCE in note or STOPPED in note for note in r.notes), r.notes


SEED_002 = seeds.SEED_002 + """
X = torch.normal(0, 1, (3, 19, 10))
K = torch.normal(0, 1, (2, 3, 1, 1))
batch = torch.rand(4, 8, 8)
w = torch.ones(4, requires_grad=True)
X2, K2 = torch.normal(0, 1, (2, 6, 6)), torch.normal(0, 1, (2, 2, 2, 2))
out_buffer = torch.empty(4, 8, 8)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5)).eval()
"""


@pytest.mark.parametrize("cell", [
    "Y1 = corr2d_multi_in_out_1x1(X, K)",  # seed 002
    "torch.bmm(batch, batch)",  # seed 003
    "results = torch.bmm(batch, batch)",
    "for loop in range(10):\n    torch.matmul(batch, batch)",
    "out = torch.empty_like(X)\nfor i in range(len(X)):\n    out[i] = X[i] * 2",
    "Y = corr2d_multi_in_out(X2, K2)",  # seed 002's loop of small kernels
    "torch.matmul(batch, batch, out=out_buffer)",  # the usual way to time without allocating
    "with torch.no_grad():\n    y = model(batch)",  # a model in eval mode
])
def test_safe_torch_cells_still_get_warm_runs(ip, cell):
    pytest.importorskip("torch", reason="torch not installed")
    r = warm_result(ip, SEED_002, cell)
    assert r.warm and not any(ONCE in note or STOPPED in note for note in r.notes), r.notes


@pytest.mark.parametrize("cell", ["for loop in range(10):\n    tf.matmul(x, x)", "time_matmul(x)"])
def test_seed_001s_loop_of_tf_matmul_still_gets_warm_runs(ip, cell):
    pytest.importorskip("tensorflow", reason="tensorflow not installed")
    r = warm_result(ip, "import time\nimport tensorflow as tf\nx = tf.random.uniform([8, 8])\ndef time_matmul(x):\n"
                    "    start = time.time()\n    for loop in range(10):\n        tf.matmul(x, x)\n"
                    "    print('10 loops: {:0.2f}ms'.format(1000 * (time.time() - start)))", cell)
    assert r.warm and not any(ONCE in note for note in r.notes), r.notes


def test_a_dataframe_groupby_still_gets_warm_runs(ip):
    pytest.importorskip("pandas", reason="pandas not installed")
    r = warm_result(ip, "import pandas as pd\ndf = pd.DataFrame({'k': [1, 1, 2], 'v': [1.0, 2.0, 3.0]})",
                    "df.groupby('k').sum()")
    assert r.warm and not any(ONCE in note or STOPPED in note for note in r.notes), r.notes


def test_n_forces_n_more_runs_and_says_the_state_reflects_all(ip):
    ip.run_cell("hist = []")
    text = report(run(ip, "%cudatime -n 4 hist.append(1)"))
    assert ip.user_ns["hist"] == [1] * 5
    assert "the cell ran 5 times: 1 cold + 0 warm-up + 4 warm" in text
    assert ("The state reflects all 5 runs, not one (-n 4 forced them): the first run changed hist, "
            "and a second run changed hist again") in text


def test_a_warm_run_that_fails_is_counted_among_the_runs_the_state_reflects(ip):
    """-n 3 forces repeats (the count lives in the user's list only because -n forces them): the
    second run appends, then raises; it ran, and the counts say so."""
    ip.run_cell("hist = []")
    text = report(run(ip, "%%cudatime -n 3 --no-raise-error\nhist.append(1)\nif len(hist) > 1: raise ValueError"))
    assert ip.user_ns["hist"] == [1, 1]
    assert "the cell ran 2 times: 1 cold + 0 warm-up + 0 warm + 1 stopped early" in text
    assert "The state reflects all 2 runs, not one (-n 3 forced them)" in text


def test_n_forces_runs_with_the_warm_up_asked_for(ip):
    ip.run_cell("items = []")
    text = report(run(ip, "%cudatime -n 3 -w 1 items.append(1)"))
    assert ip.user_ns["items"] == [1] * 5
    assert "The state reflects all 5 runs, not one (-n 3 forced them)" in text


def test_n_forces_an_effect_and_says_so(ip, tmp_path):
    path = tmp_path / "log.txt"
    ip.run_cell(f"path = {str(path)!r}")
    text = report(run(ip, "%%cudatime -n 2\nwith open(path, 'a') as f:\n    f.write('x')"))
    assert path.read_text() == "xxx"
    assert f"The state reflects all 3 runs, not one (-n 2 forced them): each run would append to {str(path)!r}" in text


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


def test_a_users_own_random_generator_is_put_back_before_each_run(ip):
    """A ``random.Random`` of the user's (not the global one) is a state its token holds: each later run
    starts from the state the cold run found, so the cell repeats and leaves what one run leaves."""
    same = random.Random(3)
    first, second = same.random(), same.random()
    ip.run_cell("import random\nrng = random.Random(3)")
    text = report(run(ip, "%cudatime -b 0.02 x = rng.random()"))
    assert ONCE not in text and f"rng was {REWOUND} it before each later run" in text
    assert ip.user_ns["x"] == first and ip.ev("rng.random()") == second


def test_only_code_made_of_framework_functions_and_operators_is_proven_pure():
    """Unit view of ``repeat_rule.proven_pure``: what it proves lets the evidence skip costly checksums;
    a call it cannot see into is never proven pure."""
    import ast

    import numpy as np

    from ipython_cudatime.repeat.evidence import MISSING, proven_pure

    class Holder:
        pass

    ns = {"np": np, "a": np.ones(3), "lst": [3, 1], "obj": Holder(), "f": lambda v: v, "x": 2}

    def pure(source):
        return proven_pure(ast.parse(source), lambda name: ns.get(name, MISSING), ["torch"])

    for source in ("c = a @ a", "a @ a", "np.matmul(a, a)", "y = sorted(lst)", "n = len(lst) + x",
                   "y = a * 2\nz = y + 1", "for i in range(3):\n    np.dot(a, a)"):
        assert pure(source), source
    for source in ("np.matmul(a, a, out=a)", "a.sort()", "f(a)", "obj.n = 1", "x += 1", "lst.append(1)",
                   "a[0] = 1", "y = obj + 1", "np.add(a, 1, out=a)", "exec('x = 1')", "del x"):
        assert not pure(source), source


def test_the_fingerprint_sees_changes_the_package_does_not_name():
    """Unit view of ``fingerprint``: a swap in an array, a nested attribute, a rebinding through a
    closure; an object that shows no state is unseen, never safe."""
    import numpy as np

    from ipython_cudatime.backends import object_kinds
    from ipython_cudatime.repeat.fingerprint import Fingerprint

    class Node:
        def __init__(self):
            self.child = {"values": [1, 2]}

    array, node = np.arange(1 << 20, dtype=np.float64), Node()
    fingerprint = Fingerprint(object_kinds()).take([("array", array), ("node", node)])
    assert fingerprint.changed() == [] and fingerprint.unseen == []
    array[[0, 1]] = array[[1, 0]]  # a swap: the sum is the same
    node.child["values"].append(3)
    assert sorted(fingerprint.path(entry) for entry in fingerprint.changed()) == ["array", "node.child['values']"]
    import hashlib

    opaque = Fingerprint().take([("h", hashlib.sha256())])
    assert not opaque.entries and opaque.unseen[0].startswith("h (a ")  # named as unseen, never taken as read


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
    from ipython_cudatime.repeat.state import _live_widgets

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
    from ipython_cudatime.render.report import render_html

    assert "the cell ran 1 time" in render_html(Reading.of(ip.run_line_magic("cudatime", "-o -q -n 0 1"), FEATURES))


def test_snapshot_restores_and_deletes():
    ns = {"a": 1}
    snapshot = NameSnapshot(ns, ["a", "b"])
    ns.update(a=2, b=3)
    snapshot.restore()
    assert ns == {"a": 1}
    import ast

    assert top_level_names(ast.parse("del x\nimport os.path\nfrom m import *\ny: int = 1")) == ["os", "x", "y"]


def test_an_object_that_shows_no_state_is_never_taken_as_safe(ip):
    """A C object with no ``__dict__`` (a hash under way) cannot be read: the cell runs once, and says what."""
    text = assert_one_run(ip, "import hashlib\nh = hashlib.sha256()", "h.update(b'x')", "could not be checked",
                          "h.hexdigest() == hashlib.sha256(b'x').hexdigest()")
    assert ONCE in text and "h (a " in text


def test_a_change_too_large_to_copy_runs_once():
    """Unit view of ``evidence``: what cannot be copied within the budget cannot be put back after a
    probe, so there is no probe: one run."""
    import numpy as np

    from ipython_cudatime.backends import object_kinds
    from ipython_cudatime.repeat.evidence import Evidence
    from ipython_cudatime.repeat.fingerprint import Budget

    array = np.zeros(1024)
    evidence = Evidence(lambda: [("array", array)], object_kinds(), budget=Budget(copy_bytes=1000))
    evidence.before()
    array += 1
    assert evidence.after_cold() == ["the first run changed array, which cannot be put back"]
    assert not evidence.probing


def test_a_failing_cold_run_leaves_no_listener_behind(ip):
    """The effects watch of a cold run that raised is gone with it: nothing accumulates across calls."""
    from ipython_cudatime.repeat.evidence import _Hook

    before = len(_Hook.listeners)
    for _ in range(3):
        assert run(ip, "%cudatime 1 / 0").error is not None
    run(ip, "%cudatime -n 2 x = 1")
    assert len(_Hook.listeners) == before


def test_a_dataframe_changed_in_place_runs_once(ip):
    """A DataFrame keeps its values in an extension type's C fields, which no ``__dict__`` shows: read by
    a hash of its rows, a change in place is seen (it would double the column on every run)."""
    pytest.importorskip("pandas", reason="pandas not installed")
    assert_one_run(ip, "import pandas as pd\ndf = pd.DataFrame({'v': [1.0, 2.0]})", "df['v'] *= 2",
                   "the first run changed df, which cannot be put back", "df['v'].tolist() == [2.0, 4.0]")


def test_an_extension_types_hidden_state_is_never_read_as_an_empty_dict():
    """Unit view of ``fingerprint``: an object whose class sits on an extension type's C fields (pandas'
    ``BlockManager``) is opaque, not an object whose ``__dict__`` says nothing changed."""
    pd = pytest.importorskip("pandas", reason="pandas not installed")
    from ipython_cudatime.repeat.fingerprint import Fingerprint

    manager = pd.DataFrame({"v": [1.0]})._mgr
    assert Fingerprint().take([("manager", manager)]).unseen


def test_what_a_probe_changed_and_cannot_put_back_is_said(ip):
    """A second run that moves something the first did not (a generator, which nothing can put back)
    leaves it moved, and the report says so plainly instead of claiming one run's state."""
    ip.run_cell("calls = []\ngen = iter(range(5))\ndef step():\n    if calls:\n        next(gen)\n    calls.append(1)")
    text = report(run(ip, "%cudatime -n 3 step()"))  # forced: each run starts where the last one left
    assert "The state reflects all 4 runs" in text, text
    assert ip.user_ns["calls"] == [1, 1, 1, 1] and next(ip.user_ns["gen"]) == 3
    ip.run_cell("calls = []\ngen = iter(range(5))")
    text = report(run(ip, "%cudatime step()"))  # `calls` put back before each later run: gen never moves
    assert REWOUND in text and ip.user_ns["calls"] == [1] and next(ip.user_ns["gen"]) == 0, text
    ip.run_cell("import numpy as np\nflag = np.zeros(1)\ngen = iter(range(5))\n"
                "def step():\n    if flag[0]:\n        next(gen)\n    flag[0] = 1")
    text = report(run(ip, "%cudatime step()"))  # an array's old values are not kept: the probe starts from 1
    assert "put back as the first run left it, except gen" in text, text
    assert ip.user_ns["flag"].tolist() == [1] and next(ip.user_ns["gen"]) == 1


@pytest.mark.skipif(sys.version_info < (3, 12), reason="Python raises no audit event for a thread's start before 3.12")
def test_a_thread_started_by_the_cell_is_not_started_again(ip):
    """Starting a thread leaves no object of the user's changed, but a thread running: refused in later runs."""
    ip.run_cell("import threading\nstarted = []\ndef work():\n    pass")
    text = assert_one_run(ip, "", "t = threading.Thread(target=work)\nt.start()\nt.join()",
                          "a second run would start a thread again", "True")
    assert ONCE in text


def test_the_evidence_never_sinks_a_measurement(ip):
    """An object the fingerprint cannot read (here a class that names a module never imported) is
    unseen, never an error of ours in the user's cell: the run stands, once."""
    ip.run_cell("Ghost = type('Ghost', (), {'__module__': 'no_such_module_i30'})\nghost = Ghost()")
    cell = run(ip, "%cudatime y = ghost")
    assert cell.error is None and "the cell ran" in report(cell)
