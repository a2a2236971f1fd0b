"""The teaching notebooks run top to bottom on a real kernel and tell their story.

Each committed notebook is copied into a temporary directory, stripped of its outputs and executed
there by nbclient on a kernel of this interpreter (tests/browser.py), once per module. Without a
GPU the notebooks shrink their sizes or switch to JAX, so each runs in seconds to a minute. Cells
are found by their tags (set in notebooks/src/*.py). The assertions check facts of each story that
do not depend on how fast this machine is; tests/test_notebooks_source.py checks the saved files.

JAX and TensorFlow are optional here as they are for a student: `make test`'s main environment and
its Colab-like one both have them (Colab ships both), the GPU machine has no TensorFlow, and each
notebook says in one line what a missing one would show (the branches below for a missing one).
"""

import importlib.util
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")  # every notebook imports PyTorch (so does Colab)
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

import browser  # (tests/browser.py: the nbclient runner shared with the display tests)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
GPU = importlib.util.find_spec("torch") is not None and __import__("torch").cuda.is_available()
JAX = importlib.util.find_spec("jax") is not None
TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


def execute(name, tmp_path_factory):
    """Run a copy of the committed notebook in a temporary directory; return the executed notebook."""
    tmp = tmp_path_factory.mktemp(name)
    path = tmp / f"{name}.ipynb"
    shutil.copy(NOTEBOOKS / path.name, path)
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    browser.execute_notebook(nb, tmp)
    return nb


@pytest.fixture(scope="module")
def nb01(tmp_path_factory):
    return execute("01_the_349ms_puzzle", tmp_path_factory)


@pytest.fixture(scope="module")
def nb02(tmp_path_factory):
    return execute("02_first_run_is_slow", tmp_path_factory)


@pytest.fixture(scope="module")
def nb03(tmp_path_factory):
    return execute("03_python_loops_on_the_gpu", tmp_path_factory)


@pytest.fixture(scope="module")
def nb04(tmp_path_factory):
    return execute("04_numpy_vs_torch", tmp_path_factory)


def output_text(output):
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "\n".join(output.traceback)
    return output.get("data", {}).get("text/plain", "")


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def cell(nb, tag):
    """The one code cell tagged ``tag``."""
    [found] = [c for c in code_cells(nb) if tag in c.metadata.get("tags", [])]
    return found


def text(nb, tag):
    """What the code cell tagged ``tag`` printed and displayed."""
    return "\n".join(output_text(output) for output in cell(nb, tag).outputs)


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
def test_every_cudatime_report_is_static_and_survives_reopening(request, fixture):
    nb = request.getfixturevalue(fixture)
    shown = [o.data for c in code_cells(nb) for o in c.outputs if o.output_type == "display_data"]
    reports = [data for data in shown if "cudatime-" in data.get("text/html", "")]
    assert reports, "no %cudatime report was shown"
    assert not [data for data in shown if WIDGET_MIME in data]  # a widget view is lost on reopening


def test_nb01_shows_the_trap_live_and_its_timeline(nb01):
    assert "Wall time:" in text(nb01, "seed-first") and "Wall time:" in text(nb01, "seed-second")
    report = text(nb01, "cudatime")
    if GPU or JAX:  # torch on a GPU, JAX on a CPU: the trap, live
        assert "%time alone would have printed" in report
        assert ("synchronized: torch" if GPU else "synchronized: jax") in report
    else:  # PyTorch on the CPU: no trap to show, and the notebook says what JAX would show
        assert "JAX is not installed" in text(nb01, "setup") and "pip install jax" in text(nb01, "setup")
        assert "%time alone would have printed" not in report
    assert "longer than handing it over" in text(nb01, "rate")
    if not GPU:  # the FLOP check on the CPU run's own %time figure
        check = text(nb01, "rate")
        assert "if %time were right:" in check
        assert ("impossible" if JAX else "possible") in check
    assert any("image/png" in o.get("data", {}) for o in cell(nb01, "timeline").outputs)
    assert text(nb01, "by-hand").count("run ") == 3
    assert "warm     : no warm runs" in text(nb01, "cold-only")


def test_nb02_runs_the_question_and_names_compilation(nb02):
    assert "Run #0: 10 loops:" in text(nb02, "seed") and "Run #3: 10 loops:" in text(nb02, "seed-synchronized")
    setup = text(nb02, "tf-setup")
    if TENSORFLOW:
        assert "synchronized: tensorflow" in text(nb02, "cudatime")
        assert "oneDNN" not in setup and "absl" not in setup  # TensorFlow's start-up lines stay out
    else:
        assert "TensorFlow is not installed" in setup and "pip install tensorflow" in setup
        assert "%%cudatime" in cell(nb02, "cudatime").source and "warm" in text(nb02, "cudatime")
    compiled = text(nb02, "jax-compile")
    assert ("JAX compilation" in compiled) if JAX else ("pip install jax" in compiled)
    assert "torch.compile compilation" in text(nb02, "compile-first")
    assert "torch.compile compilation" in text(nb02, "compile-new-shape")  # a new shape fails a guard
    rows = dict(line.split(None, 2)[::2] for line in text(nb02, "compile-table").splitlines()
                if line.startswith(("first", "new", "after")))
    assert len(rows) == 3 and not any(row.endswith("compiled for 0 ns") for row in rows.values())


def test_nb03_answers_first_then_measures_each_step(nb03):
    assert "13 minutes per call" in text(nb03, "half-day") and "21.5 hours" in text(nb03, "half-day")
    assert "Profile: " in text(nb03, "loop")
    if not GPU:
        assert "Profile: dispatch-bound:" in text(nb03, "loop")
    assert "same result: True" in text(nb03, "step1") and text(nb03, "step2").strip().endswith("True")
    assert "warm" in text(nb03, "reference")  # the user's own matrix product, timed
    verdicts = text(nb03, "verdicts")
    assert verdicts.count("-> ") == 3 and "faster than the loop" in verdicts
    assert "FLOP per byte" in verdicts and "the user's own matrix product" in verdicts
    compared = text(nb03, "compare")
    assert all(label in compared for label in ("loop", "on-device"))


def test_nb04_sweeps_check_their_values_and_give_verdicts(nb04):
    for tag in ("gemm", "layout", "broadcast", "loop", "reduction", "svd"):
        assert "check: all values agree" in text(nb04, tag), tag
        assert any("text/html" in o.get("data", {}) for o in cell(nb04, tag).outputs), tag  # table and chart
    gemm = text(nb04, "gemm")
    for n in (256, 512, 1024, 2048, 4096):
        assert f"n={n}, lib='numpy'" in gemm and f"n={n}, lib='torch-cpu'" in gemm
    assert ("lib='torch-gpu'" in gemm) and (GPU or "no GPU here" in gemm)
    for tag in ("gemm-table", "layout-table", "broadcast-table", "loop-verdict", "reduction-verdict", "svd-verdict"):
        assert "Verdict: " in text(nb04, tag), tag
    assert "GFLOP/s" in text(nb04, "gemm-table") and "GB/s" in text(nb04, "broadcast-table")
    setup = text(nb04, "setup")
    assert setup.count(" threads") == 2 and "NumPy" in setup and "PyTorch" in setup  # threads and BLAS, both
    for tag in ("layout-table", "loop-verdict", "reduction-verdict"):  # a difference, or "inconclusive" and why
        assert " faster (" in text(nb04, tag) or "inconclusive: " in text(nb04, tag), tag
    assert "TFLOP/s for the GPU" in text(nb04, "peak-check")
    assert "time_op   : matmul_1024" in text(nb04, "time-op") and "%cudatime :" in text(nb04, "time-op")
