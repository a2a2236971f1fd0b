"""The rehearsal of the notebooks' GPU branches on a CPU (scripts/build-notebooks.py --rehearse, the
notebooks step of scripts/gpu-check --quick).

The GPU machine is lent for 15 minutes in all: a typo in a GPU branch found there costs the run.
The lessons hold the real CUDA calls a student copies; the rehearsal rewrites the cells it executes
(``rehearsed``). Here, on real kernels, a broken line in notebook 01's GPU branch passes a plain CPU
run (which takes the JAX or PyTorch-on-CPU branch) and fails the rehearsal; a sweep point that
raised (a sweep records the error and goes on) fails it too; and nothing of it is in the package.
"""

import importlib.util
import re
import runpy
from pathlib import Path

import pytest

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


def test_the_rehearsal_is_in_neither_the_package_nor_the_lessons():
    """Nothing a user installs or copies reads a rehearsal switch: no module, no variable, no name."""
    package = [path for path in (ROOT / "ipython_cudatime").rglob("*.py")
               if re.search(r"rehearsal|REHEARSAL", path.read_text())]
    lessons = [path.name for path in SOURCES if "rehearsal" in path.read_text()]
    assert package == [] and lessons == []


@pytest.mark.parametrize("name", ["01_the_349ms_puzzle", "04_numpy_vs_torch"])
def test_the_gpu_branch_synchronizes_with_the_real_call(name):
    """The lessons that read a clock by hand on the GPU call ``torch.cuda.synchronize()`` themselves,
    on ``"cuda"`` tensors, as a student copies them."""
    code = [line.split("  #")[0] for line in (ROOT / "notebooks" / "src" / f"{name}.py").read_text().splitlines()
            if not line.lstrip().startswith("#")]
    assert any(line.strip() == "torch.cuda.synchronize()" for line in code)
    assert any('"cuda"' in line for line in code)
    assert not any("ipython_cudatime." in line for line in code if "import" in line)  # only the public API


def test_the_rehearsal_rewrites_the_cuda_calls_and_nothing_else():
    source = ('GPU = torch.cuda.is_available()\nx = torch.randn(10_000, 3).to("cuda")\ny = x.to(device=\'cuda:0\')\n'
              'torch.cuda.synchronize()  # wait\nlabel = "torch.cuda.synchronize() returns"\n'
              'where = torch.cuda.get_device_name()\nz = torch.cuda.synchronise()\n'
              'X_full = torch.normal(0, 1, (3, 1920, 1080))\n')
    assert build_script().rehearsed(source).splitlines() == [
        "GPU = True", 'x = torch.randn(1_250, 3).to("cpu")', "y = x.to(device='cpu')", "None  # wait",
        'label = "torch.cuda.synchronize() returns"',
        'where = "the CPU, rehearsing the GPU branch (make gpu-dry-run)"', "z = torch.cuda.synchronise()",
        "X_full = torch.normal(0, 1, (3, 240, 135))"]


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


TYPO = ("    torch.cuda.synchronize()  # the copies", "    torch.cuda.synchronise()  # a typo")


@needs_kernel
@needs_cpu_only
def test_a_broken_line_in_a_gpu_branch_passes_the_cpu_run_and_fails_the_rehearsal(tmp_path):
    from nbclient.exceptions import CellExecutionError

    build = build_script()
    plain = setup_only("01_the_349ms_puzzle", TYPO)
    build.execute(plain, tmp_path)  # the CPU branch (JAX's, or PyTorch's): the typo unseen
    assert "on the CPU" in plain.cells[-1].outputs[-1]["text"] and plain.metadata["outputs_from"] == "CPU only (no GPU)"
    broken = setup_only("01_the_349ms_puzzle", TYPO)
    with pytest.raises(CellExecutionError, match="AttributeError.*synchronise"):
        build.execute(broken, tmp_path, rehearse=True)
    assert "rehearsing the GPU branches" in broken.metadata["outputs_from"]


@needs_kernel
def test_a_sweep_point_that_raised_fails_the_rehearsal(tmp_path):
    """The sweep shows the error at its point and goes on, so the cell itself does not raise."""
    from nbclient.exceptions import CellExecutionError
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("%load_ext ipython_cudatime"),
                             new_code_cell("%%cudatime -n 2 --sweep lib=cpu,gpu -v s\n1 / (lib == 'cpu')")])
    with pytest.raises(CellExecutionError, match=r"sweep points failed in the rehearsal: s at \{'lib': 'gpu'\}: "
                                                 "ZeroDivisionError"):
        build_script().execute(nb, tmp_path, rehearse=True)
