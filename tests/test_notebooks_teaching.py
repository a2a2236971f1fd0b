"""The teaching notebooks in notebooks/ run top to bottom on a real kernel and tell their story.

Each committed notebook is copied into a temporary directory, stripped of its outputs and executed
there by nbclient on a kernel of this interpreter (tests/browser.py), once per module. Without a
GPU the notebooks shrink their sizes, so each runs in seconds. The assertions check facts of each
story that do not depend on how fast this machine is.
"""

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")  # every notebook times PyTorch (the Colab-like test environment has none)
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

import browser  # (tests/browser.py: the nbclient runner shared with the display tests)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
NB01 = "01_the_349ms_puzzle.ipynb"
NB02 = "02_first_run_is_slow.ipynb"
NB03 = "03_python_loops_on_the_gpu.ipynb"
NB04 = "04_numpy_vs_torch.ipynb"


def has_module(name):
    return importlib.util.find_spec(name) is not None


def execute(name, tmp_path_factory):
    """Run a copy of the committed notebook in a temporary directory; return the executed notebook."""
    tmp = tmp_path_factory.mktemp(Path(name).stem)
    path = tmp / name
    shutil.copy(NOTEBOOKS / name, path)
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    browser.execute_notebook(nb, tmp)
    nbformat.write(nb, str(path))
    return nb


@pytest.fixture(scope="module")
def nb01(tmp_path_factory):
    return execute(NB01, tmp_path_factory)


@pytest.fixture(scope="module")
def nb02(tmp_path_factory):
    return execute(NB02, tmp_path_factory)


@pytest.fixture(scope="module")
def nb03(tmp_path_factory):
    return execute(NB03, tmp_path_factory)


@pytest.fixture(scope="module")
def nb04(tmp_path_factory):
    return execute(NB04, tmp_path_factory)


def output_text(output):
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "\n".join(output.traceback)
    return output.get("data", {}).get("text/plain", "")


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def text_of(nb, marker):
    """What the code cells whose source contains ``marker`` printed and displayed (there must be one)."""
    found = [c for c in code_cells(nb) if marker in c.source]
    assert found, f"no code cell contains {marker!r}"
    return "\n".join(output_text(output) for c in found for output in c.outputs)


def all_text(nb):
    return "\n".join(output_text(output) for c in code_cells(nb) for output in c.outputs)


@pytest.mark.parametrize("fixture", ["nb01", "nb02", "nb03", "nb04"])
def test_runs_top_to_bottom_without_errors(request, fixture):
    nb = request.getfixturevalue(fixture)
    cells = code_cells(nb)
    assert all(c.execution_count is not None for c in cells)
    errors = [output_text(o) for c in cells for o in c.outputs if o.output_type == "error"]
    assert errors == []
    stderr = [o.text for c in cells for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not any("Traceback" in text or "Error" in text for text in stderr), stderr


@pytest.mark.parametrize("fixture", ["nb01", "nb02", "nb03", "nb04"])
def test_every_cudatime_widget_has_its_state_saved(request, fixture):
    nb = request.getfixturevalue(fixture)
    views = [o.data[WIDGET_MIME]["model_id"] for c in code_cells(nb) for o in c.outputs
             if o.output_type == "display_data" and WIDGET_MIME in o.data]
    assert views, "no %cudatime widget was shown"
    state = nb.metadata.widgets[STATE_MIME]["state"]
    assert all(model_id in state for model_id in views)


def test_nb01_shows_the_three_clocks_and_the_async_trap(nb01):
    assert "Wall time:" in text_of(nb01, "%time c = torch.matmul(a, b)\nprint")
    clocks = text_of(nb01, "cold = r.cold")
    for clock in ("cold run, host", "cold run, wall", "cold run, device", "warm median"):
        assert clock in clocks
    assert "cold run :" in text_of(nb01, "%cudatime -n 3 -v r c")
    assert "warm     : no warm runs" in text_of(nb01, "%cudatime -n 0")
    if has_module("jax"):
        # JAX dispatches asynchronously on the CPU too: the seed's trap, without a GPU.
        report = text_of(nb01, "%cudatime -n 3 -v rj")
        assert "%time alone would have printed" in report
        assert "synchronized: jax" in report
        assert re.search(r"the product is [\d,]+× longer than the dispatch", text_of(nb01, "rj.cold.host"))


def test_nb02_names_torch_compile_and_its_recompile(nb02):
    assert "torch.compile compilation" in text_of(nb02, "%cudatime -n 20 -v comp ")
    assert "compilation is" in text_of(nb02, "show_causes(comp)")
    table = text_of(nb02, '("first call", comp)').splitlines()
    first, new_shape, third = (next(line for line in table if line.startswith(label))
                               for label in ("first call", "new shape", "third shape"))
    assert "compiled for 0 ns" not in first and "compiled for 0 ns" not in new_shape
    assert third.endswith("compiled for 0 ns")  # automatic dynamic shapes: no third compile
    assert "torch.compile compilation" in text_of(nb02, "torch._dynamo.reset()")


def test_nb02_tensorflow_section_runs_or_says_it_is_skipped(nb02):
    imported = text_of(nb02, "import tensorflow as tf")
    if has_module("tensorflow"):
        assert imported.startswith("TensorFlow ")
        assert "Run #0: 10 loops:" in text_of(nb02, "def time_matmul")
        assert "synchronized: tensorflow" in text_of(nb02, "-v tf_first")
    else:
        assert "the TensorFlow section is skipped" in imported


def test_nb03_shows_the_seeds_bug_and_its_fix(nb03):
    seed_lines = text_of(nb03, "startTime1 = time.time()").split()
    assert len(seed_lines) == 4 and seed_lines[:2] == seed_lines[2:]  # the first timer, printed twice
    fixed = text_of(nb03, "start1 = time.perf_counter()")
    assert "1×1 as a matmul, 100 times" in fixed and "Python loop, once on" in fixed


def test_nb03_loop_is_dispatch_bound_and_both_versions_agree(nb03):
    assert "Profile: dispatch-bound:" in text_of(nb03, "-v loop ")
    verdicts = text_of(nb03, '("Python loop", loop)')
    assert "-> dispatch-bound" in verdicts
    assert "torch.allclose: True" in text_of(nb03, "torch.allclose")
    compared = text_of(nb03, "%cudatime_compare")
    assert "matmul" in compared and "loop" in compared


def test_nb04_every_sweep_checks_its_values(nb04):
    sweeps = [c for c in code_cells(nb04) if "--sweep scale=1,4,16 --sweep lib=numpy,torch --check" in c.source]
    assert len(sweeps) == 5  # GEMM, transpose, broadcast add, reduction, SVD
    for sweep in sweeps:
        report = "\n".join(output_text(o) for o in sweep.outputs)
        assert "check: all values agree" in report, report
        assert "lib='numpy'" in report and "lib='torch'" in report
    assert "MISMATCH" not in all_text(nb04)


def test_nb04_compares_the_loop_with_bmm(nb04):
    compared = text_of(nb04, "%cudatime_compare loop batched")
    assert re.search(r"^loop\s", compared, re.MULTILINE) and re.search(r"^batched\s", compared, re.MULTILINE)
    assert "same results: True" in text_of(nb04, "torch.allclose(out_loop, out_bmm")


def _script():
    spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "scripts" / "make-notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", [NB01, NB02, NB03, NB04])
def test_committed_notebook_matches_the_script_and_carries_outputs(name):
    """notebooks/*.ipynb are generated: regenerate with scripts/make-notebooks.py --execute."""
    committed = nbformat.read(str(NOTEBOOKS / name), as_version=4)
    built = _script().build(name)
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in built.cells]
    assert committed.cells[0].source.startswith("[![Open In Colab]")
    assert committed.cells[1].cell_type == "code" and "%load_ext ipython_cudatime" in committed.cells[1].source
    assert all(c.execution_count is not None for c in code_cells(committed)), "run make-notebooks.py --execute"
