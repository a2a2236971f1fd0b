"""Writes that a tensor's version counter does not see (issue #46): through ``.data``, and ``.data``
reassigned. A repeated cell leaves the state of one run: the cell stops after the probe, which is put
back, or repeats where a second run writes the same values again (real shell; the kind's own view last)."""

import warnings

import pytest
from conftest import run
from test_state import STOPPED, counts, report

torch = pytest.importorskip("torch", reason="torch not installed")

from ipython_cudatime.backends.torch_objects import SMALL_BYTES, TorchTensor  # noqa: E402

OUTSIDE = "(its values changed outside its version counter)"
PUT_BACK = "put back as the first run left it"
FORMS = ["%cudatime -b 0.02 -v r {}", "%%cudatime -b 0.02 -v r\n{}"]  # the line magic and the cell magic
SETUP = """
import torch
torch.manual_seed(0)
p = torch.nn.Parameter(torch.randn(4))
p.grad = torch.randn(4)
lr = 0.1
ema = torch.randn(4)
q = torch.randn(4)
v = p.data.view(2, 2)
model = torch.nn.Linear(3, 2)
ema_model = torch.nn.Linear(3, 2)  # other values: each update moves every one
def update_ema(decay=0.9):
    for e, m in zip(ema_model.parameters(), model.parameters()):
        e.data.mul_(decay).add_(m.data, alpha=1 - decay)
class Steps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('steps', torch.zeros(1))
counter = Steps()
before = {name: value.detach().clone() for name, value in [('p', p), ('ema', ema), ('q', q)]}
before_ema_model = [e.detach().clone() for e in ema_model.parameters()]
"""


def timed(ip, form, cell):
    """The report of timing ``cell`` after ``SETUP`` (a short budget), and its result."""
    ip.run_cell(SETUP)
    shown = run(ip, form.format(cell))
    assert shown.error is None, shown.stderr
    return report(shown), ip.user_ns["r"]


# (cell, the report's words for it, what one run leaves, computed from copies taken before it)
CHANGES = [
    ("ema.data.mul_(0.9).add_(p.data, alpha=0.1)", f"ema {OUTSIDE}",
     "torch.equal(ema, before['ema'].mul(0.9).add(before['p'], alpha=0.1))"),
    ("p.data.add_(-lr * p.grad)", f"p {OUTSIDE}", "torch.equal(p, before['p'].add(-lr * p.grad))"),
    ("p.data[0] += 1", f"p {OUTSIDE}", "torch.equal(p, before['p'] + torch.tensor([1.0, 0, 0, 0]))"),
    ("p.data[:2].mul_(2)", f"p {OUTSIDE}",  # through a view of .data
     "torch.equal(p, before['p'] * torch.tensor([2.0, 2, 1, 1]))"),
    ("v[0] += 1", "v (written in place)",  # a view of .data from an earlier cell: p, unreached, shares its memory
     "torch.equal(p, before['p'] + torch.tensor([1.0, 1, 0, 0]))"),
    ("p.data = p.data * 0.5", "p (.data replaced)", "torch.equal(p, before['p'] * 0.5)"),
    ("p.data = torch.cat([p.data, p.data])", "p (.data replaced)",  # another shape on every run
     "torch.equal(p, before['p'].repeat(2))"),
    ("update_ema()", f"(a global of update_ema()) {OUTSIDE}",  # a module's parameters, in a function of an earlier cell
     "all(torch.equal(e, b.mul(0.9).add(m.detach(), alpha=1 - 0.9))"
     " for e, b, m in zip(ema_model.parameters(), before_ema_model, model.parameters()))"),
    ("counter.steps.data += 1", f"counter.steps {OUTSIDE}", "counter.steps.tolist() == [1.0]"),  # a buffer
]


@pytest.mark.parametrize("form", FORMS, ids=["line", "cell"])
@pytest.mark.parametrize("cell, why, check", CHANGES, ids=[change[0] for change in CHANGES])
def test_a_write_the_version_counter_misses_is_put_back_after_the_probe(ip, form, cell, why, check):
    text, r = timed(ip, form, cell)
    assert STOPPED in text and why in text and PUT_BACK in text, text
    assert counts(text) == (1, 0) and r.runs == 0  # the probe run, undone
    assert ip.ev(check), text


# Writes a second run makes again with the same values: the probe sees them, and the cell repeats.
OVERWRITES = [
    ("p.data.zero_()", "torch.equal(p, torch.zeros(4))"),
    ("p.data[0] = 5", "torch.equal(p, torch.cat([torch.tensor([5.0]), before['p'][1:]]))"),
    ("p.data.copy_(q)", "torch.equal(p, q)"),
    ("p.data = torch.zeros_like(p)", "torch.equal(p, torch.zeros(4))"),
    ("torch.nn.init.zeros_(p)", "torch.equal(p, torch.zeros(4))"),  # under no_grad: its counter moves
]


@pytest.mark.parametrize("form", FORMS, ids=["line", "cell"])
@pytest.mark.parametrize("cell, check", OVERWRITES, ids=[overwrite[0] for overwrite in OVERWRITES])
def test_the_same_values_written_again_repeat_and_leave_one_runs_state(ip, form, cell, check):
    text, r = timed(ip, form, cell)
    assert r.runs and STOPPED not in text and "Ran once only" not in text, text  # warm runs after the probe
    assert ip.ev(check), text


@pytest.mark.parametrize("setup, cell", [
    ("model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))\n"
     "x = torch.randn(4, 8)", "y = model(x)"),
    ("a, b = torch.randn(16, 16), torch.randn(16, 16)", "a @ b"),
    ("x = torch.randn(1000)", "torch.relu(x)"),
    ("w = torch.randn(256, 256, requires_grad=True)\nx = torch.randn(8, 256)", "y = (x @ w).sum()"),
])
def test_ordinary_torch_cells_still_get_warm_runs(ip, setup, cell):
    ip.run_cell(f"import torch\n{setup}")
    for form in FORMS:
        text, r = report(run(ip, form.format(cell))), ip.user_ns["r"]
        assert r.runs and "Ran once only" not in text and STOPPED not in text, text


def changed(kind, tensor, write):
    """Whether ``kind``'s token of ``tensor`` moves when ``write(tensor)`` runs."""
    before = kind.token(tensor)
    write(tensor)
    return not kind.same(before, kind.token(tensor))


def test_every_dtype_and_layout_is_read_without_an_error():
    """Unit view of ``TorchTensor``: what NumPy has no dtype for is checksummed as integers of its size;
    what is no array of the host's (sparse, meta, nested, a conjugate view) is read by counter and storage."""
    kind = TorchTensor(torch)
    for dtype in (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.complex64, torch.bool, torch.int8):
        assert changed(kind, torch.zeros(3, dtype=dtype), lambda t: t.data.__setitem__(0, 1)), dtype
    assert changed(kind, torch.zeros(4, 4).t(), lambda t: t.data[0].add_(1))  # not contiguous
    assert changed(kind, torch.tensor(1.0, requires_grad=True), lambda t: t.data.add_(1))  # 0-d, with a gradient
    with warnings.catch_warnings():  # quantized dtypes are deprecated, nested tensors a prototype
        warnings.simplefilter("ignore")
        others = [torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.qint8),
                  torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])]
    others += [torch.zeros(3).to_sparse(), torch.zeros(3, device="meta"), torch.zeros(2, dtype=torch.complex64).conj()]
    for tensor in others:
        kind.token(tensor)  # no error
    assert kind.token(others[-1])[3] is None  # a conjugate view: no checksum


def test_larger_tensors_are_checksummed_within_the_allowance_first_met_first():
    """Past the allowance a host tensor is read as a device's is, by its counter and its storage; a small one
    always has a checksum; a tensor granted one keeps it (its tokens before and after a run compare)."""
    size = SMALL_BYTES // 4 + 1  # float32: just larger than small
    kind = TorchTensor(torch, allowance=2 * size * 4)
    first, second, third = (torch.zeros(size) for _ in range(3))
    for tensor in (first, first, second):
        assert changed(kind, tensor, lambda t: t.data.add_(1))
    assert not changed(kind, third, lambda t: t.data.add_(1))  # past the allowance: unseen, as on a GPU
    assert changed(kind, third, lambda t: setattr(t, "data", torch.zeros(size)))  # but its storage is read
    assert changed(kind, torch.zeros(16), lambda t: t.data.add_(1))  # small: always


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_a_cuda_tensor_is_read_without_waiting_for_the_device():
    """A CUDA tensor's token reads the host's view of it alone: it returns while a kernel still runs, and
    sees ``.data`` reassigned (never tried on a GPU where this was written: no GPU there)."""
    kind, tensor = TorchTensor(torch), torch.zeros(4, device="cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(1_000_000_000)  # about a second of the GPU's clock
    token = kind.token(tensor)
    assert not torch.cuda.current_stream().query() and token[3] is None
    torch.cuda.synchronize()
    assert changed(kind, tensor, lambda t: setattr(t, "data", torch.ones(4, device="cuda")))
