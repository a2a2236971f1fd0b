"""The rehearsal of the notebooks' GPU branches on a CPU (ipython_cudatime/rehearsal.py,
scripts/build-notebooks.py --rehearse, the notebooks step of scripts/gpu-check --quick).

The GPU machine is lent for 15 minutes in all: a typo in a GPU branch found there costs the run.
Here, on real kernels, a broken line in notebook 01's GPU branch passes a plain CPU run (which
takes the JAX or PyTorch-on-CPU branch) and fails the rehearsal; a sweep point that raised (a
sweep records the error and goes on) fails it too; and nothing a user runs can turn it on.
"""

import importlib.util
import re
import runpy
from pathlib import Path

import pytest

from ipython_cudatime import rehearsal

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))
HAS_TORCH = importlib.util.find_spec("torch") is not None
CUDA = HAS_TORCH and __import__("torch").cuda.is_available()
KERNEL = all(importlib.util.find_spec(name) for name in ("torch", "nbclient", "ipykernel", "nbformat", "jupytext"))
needs_kernel = pytest.mark.skipif(not KERNEL, reason="executing a notebook needs torch, nbclient, ipykernel, "
                                                      "nbformat and jupytext")
needs_cpu_only = pytest.mark.skipif(CUDA, reason="with a CUDA device the GPU branch is real: nothing to rehearse")


def build_script():
    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "scripts" / "build-notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_the_variable_and_no_cuda_turn_it_on():
    assert not rehearsal.active({})
    assert not rehearsal.active({rehearsal.VARIABLE: "1"})  # its one value only
    if HAS_TORCH:
        assert rehearsal.active({rehearsal.VARIABLE: rehearsal.VALUE}) is not CUDA  # on a GPU the branch is real
    # this process has no variable: every name is the plain CUDA one
    assert not rehearsal.ON and rehearsal.DEVICE == "cuda" and rehearsal.shrink(10_000) == 10_000


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.stem)
def test_the_knob_is_one_visible_line_of_the_setup_cell(path):
    """A reader sees where the rehearsal enters, once: `GPU = torch.cuda.is_available() or
    rehearsal.ON`; the rest are the helpers named after the CUDA call each stands for. Notebook 02's
    GPU branch is a device string and nothing a CPU could run, so it has none."""
    source = path.read_text()
    knobs = [line for line in source.splitlines() if "rehearsal.ON" in line and not line.startswith("#")]
    if path.stem.startswith("02"):
        assert knobs == [] and "rehearsal" not in source
        return
    assert knobs == ["GPU = torch.cuda.is_available() or rehearsal.ON  # ON: only this project's CPU run of the "
                     "GPU branch (make gpu-dry-run)"]
    setup = source.split('# %% tags=["setup"]', 1)[1].split("# %%", 1)[0]
    assert knobs[0] in setup
    code = "\n".join(line.split("  #")[0] for line in source.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"(?<!\")torch\.cuda\.(synchronize|get_device_name)\(|[(=:] ?\"cuda\"", code), \
        "a CUDA-only call outside ipython_cudatime.rehearsal: the rehearsal would stop there"


def test_the_committed_notebooks_are_never_a_rehearsal():
    nbformat = pytest.importorskip("nbformat")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert "rehearsing" not in nbformat.read(str(path), as_version=4).metadata["outputs_from"], path.name


def test_the_rehearsal_never_writes_the_committed_notebooks():
    pytest.importorskip("jupytext")
    with pytest.raises(SystemExit) as refused:
        build_script().main(["--rehearse", "01"])  # --out defaults to notebooks/
    assert refused.value.code == 2


def test_the_dry_run_rehearses_and_the_device_run_does_not():
    check = runpy.run_path(str(ROOT / "scripts" / "gpu-check"), run_name="gpu_check")
    notebooks = next(step for step in check["STEPS"] if step.name == "notebooks")
    assert "--rehearse" in check["argv"](notebooks, ROOT, quick=True)
    assert "--rehearse" not in check["argv"](notebooks, ROOT, quick=False)


def setup_only(name, broken=None):
    """Notebook ``name`` built as the GPU check builds it, cut after its setup cell; ``broken``:
    (a line of the setup cell, what replaces it)."""
    nb = build_script().build(name)
    end = next(index for index, cell in enumerate(nb.cells) if "setup" in cell.metadata.get("tags", []))
    nb.cells = nb.cells[:end + 1]
    if broken:
        line, replacement = broken
        assert line in nb.cells[end].source
        nb.cells[end].source = nb.cells[end].source.replace(line, replacement)
    return nb


TYPO = ("    rehearsal.synchronize()  # torch.cuda.synchronize()", "    rehearsal.synchronise()  # a typo")


@needs_kernel
@needs_cpu_only
def test_a_broken_line_in_a_gpu_branch_passes_the_cpu_run_and_fails_the_rehearsal(tmp_path, monkeypatch):
    from nbclient.exceptions import CellExecutionError

    build = build_script()
    monkeypatch.setenv(rehearsal.VARIABLE, "")  # restored after the test: the rehearsal sets it for its kernel
    plain = setup_only("01_the_349ms_puzzle", TYPO)
    build.execute(plain, tmp_path)  # the CPU branch (JAX's, or PyTorch's): the typo unseen
    assert "on the CPU" in plain.cells[-1].outputs[-1]["text"] and plain.metadata["outputs_from"] == "CPU only (no GPU)"
    broken = setup_only("01_the_349ms_puzzle", TYPO)
    with pytest.raises(CellExecutionError, match="AttributeError.*synchronise"):
        build.execute(broken, tmp_path, rehearse=True)
    assert "rehearsing the GPU branches" in broken.metadata["outputs_from"]


@needs_kernel
def test_a_sweep_point_that_raised_fails_the_rehearsal(tmp_path, monkeypatch):
    """The sweep shows the error at its point and goes on, so the cell itself does not raise."""
    from nbclient.exceptions import CellExecutionError
    from nbformat.v4 import new_code_cell, new_notebook

    monkeypatch.setenv(rehearsal.VARIABLE, "")
    nb = new_notebook(cells=[new_code_cell("%load_ext ipython_cudatime"),
                             new_code_cell("%%cudatime -n 2 --sweep lib=cpu,gpu -v s\n1 / (lib == 'cpu')")])
    with pytest.raises(CellExecutionError, match=r"sweep points failed in the rehearsal: s at \{'lib': 'gpu'\}: "
                                                 "ZeroDivisionError"):
        build_script().execute(nb, tmp_path, rehearse=True)
