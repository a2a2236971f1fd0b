"""The teaching notebooks as committed: built from their source, structured as lessons, and true.

notebooks/src/*.py (jupytext percent format) is the source; scripts/build-notebooks.py builds and
executes notebooks/*.ipynb from it. These tests need no kernel: they read the committed files, so
they run in every environment (tests/test_notebooks_teaching.py executes the notebooks).
"""

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from conftest import run
from report_parts import table

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("jupytext")

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))
NAMES = [path.stem for path in SOURCES]

# Claims an earlier version of the notebooks made, each with what is true instead. None may come back.
WRONG_CLAIMS = {
    r"measured the product at about 470": "the 469-492 ms were measured on Colab's GPU, not on the RTX 2070",
    r"`\.cpu\(\)`, `\.numpy\(\)`": "`.numpy()` on a CUDA tensor raises: `.cpu()` comes first",
    r"copies that made `?a`? and `?b`?": "`randn(device=...)` makes them with kernels on the device, not copies",
    r"PyTorch keeps a \**queue": "the queue is the CUDA stream's, kept by the driver, not PyTorch's",
    r"JAX dispatches asynchronously on every backend": "JAX's CPU dispatch is asynchronous from 0.4.32, for expensive computations",
    r"longer than the dispatch": "the JAX cold run was contaminated by the previous cell's product (130× was about 70×)",
    r"443 ms was that setup|loads cuBLAS and cuDNN": "the seed paid context and allocator before its timer, and a matmul never loads cuDNN",
    r"a workspace of a few MiB": "PyTorch's default cuBLAS workspace is 8.1 MiB, and 32 MiB on Hopper",
    r"each operator (also )?launches a kernel": "slices and selects are views and launch nothing",
    r"9 µs per call": "the seed's GPU loop cost 62 µs per element: two launches and a full round trip",
    r"by two orders of magnitude": "an A100 against a 24-core Xeon allows about 5-10× in FP32",
    r"its method is sound": "the article's described method is sound; its code (one loop's mean, unsynchronized) is not",
    r"gain roughly the ratio of memory bandwidths": "only once the data exceed the CPU's caches",
    r"MAGMA": "torch's CUDA SVD uses cuSOLVER's gesvdj, falling back to gesvd",
    r"may still be a little slower": "trivial CPU cold runs were 17-52× the warm run, not a little slower",
    r"32 FP32 FLOP per cycle": "two AVX-512 FMA units do 2 × 16 × 2 = 64 FP32 FLOP per cycle (32 is the FP64 figure)",
    r"about \**5[–-]10×": "an A100 against a Xeon Gold 6248R at its AVX-512 peak (4.6 TFLOP/s) is about 4× in FP32",
    r"1024 operator dispatches": "each row is 2 selects + add + copy_: 4,096 dispatches",
    r"three kernel launches per element": "a contiguous same-dtype device copy is a cudaMemcpyAsync, not a kernel",
    r"takes a batch dimension, hence": "F.conv2d runs an unbatched (C, H, W) input with the same result "
        "(nn.Conv2d documents that shape; F.conv2d's docstring documents the batched one)",
    r"\(C, H, W\) as it is \[3\]|or \(in_channels, iH, iW\) unbatched": "F.conv2d's docstring documents "
        "(minibatch, in_channels, iH, iW) only and refers to nn.Conv2d, whose Shape lists (C_in, H_in, W_in)",
    r"The first two lines are what `%time` prints": "%cudatime's Wall time line is the synchronized one",
    r"beyond that ratio means the timer is wrong": "a weak CPU baseline can honestly exceed it; the check is GPU FLOP/s <= peak",
    r"443 ms was mostly": "nothing measured the 443 ms: its cause is a hypothesis with three candidates",
    r"you cannot make that setup fast, but": "some first-run costs can be avoided (memory-pool growth, recompilation)",
    r"when the two results' spreads overlap": "contrast decides by the 95% interval of the ratio of the medians",
    r"later ones take about a tenth of a millisecond": "notebook 01's second %time printed 7.35 ms: a later Wall time can wait too",
    r"products were only queued when": "nothing measured how many of the 100 products were done when the clock was read",
    r"the article's reasoning: memory-bound": "the article makes no bandwidth-ratio argument",
    r"Count them: each row is two selects": "the article's loop, data[i] += bias, is a select and an in-place add "
        "per row: its 1,024 kernels are right; the copies belong to this notebook's version",
    r"data \+= bias +# data has shape": "the article never gives data's shape, and its two snippets add along "
        "different axes",
    r"\| the first launch of a kernel whose binary has no machine code": "under eager module loading the driver "
        "compiles PTX when modules load, at context creation (CUDA's Lazy Loading section; NVIDIA's fat binaries tip)",
    # issue #43, part 5
    r"neither waits for the queue": "empty_cache() releases cached blocks through synchronize_and_free_events and "
        "cudaFree, which can synchronize; it changed nothing because it ran outside the timed line",
    r"would have printed: the cold run's host time": "the report gives the range of every timed run's host "
        "hand-over (what %time measures), the first one named, not one cold run's host time",
    r"about a tenth of a second": "the JAX product was measured at 43-80 ms: say what is measured, or nothing",
    r"whose defaults are the method": "%cudatime's defaults are one warm-up and a one-second budget in one process, "
        "not the article's five warm-ups and 100 samples in separate processes",
    r"\{counts\}, so the claim does not hold at every size": "where NumPy won every size the runs decide, the "
        "verdict says NumPy is the faster one (the opposite of the claim), not 'does not hold at every size'",
    r"decompositions gain less \| yes": "no GPU run shows it: a prediction to check on a GPU",
    r"takes a second or more": "the 4096 product was measured at 0.66-0.77 s on two cores",
    r"it would mean 2×10¹³ FLOP/s": "the question's 1.00 ms is one ~1 ms tick (0-2 ms); at 2 ms, 10¹³ FLOP/s, "
        "within a V100's peak",
    r"a matrix product never loads it": "TensorFlow 1.x's GPU builds loaded libcudnn at import (tensorflow#20271); "
        "only the DNN handle waits for a first DNN request",
    r"time_matmul_synchronized\(0, x2\)`: it is as fast": "no GPU run shows it: a prediction to check on a GPU",
    r"so the verdict becomes \*launch-bound\*": "no GPU run shows it: a prediction to check on a GPU",
    r"The question's \"1\.00 ms\" was ten enqueues": "the question's 1.00 ms alone cannot prove it; the answer's "
        "0.36 ms on a GTX 1050 can",
    r"a good FP32 (matrix )?product (reaches|takes)": "75-85% of peak is a guess for the RTX 2070, not a measurement",
    r"also included the first product's one-time cuBLAS setup": "nothing shows these were the process's first "
        "matrix products",
    r"The likeliest source is the article's own unsynchronized": "the article's time_op, as printed, times CPU "
        "tensors; it is a likely source only if its GPU figures came from it",
}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _build_script():
    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "scripts" / "build-notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed(name):
    return nbformat.read(str(ROOT / "notebooks" / f"{name}.ipynb"), as_version=4)


def tagged(nb, tag):
    return [cell for cell in nb.cells if tag in cell.metadata.get("tags", [])]


def output_texts(nb):
    """Each output of every code cell, as text (plain, HTML and streams), one string per form."""
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.extend(value for value in output.get("data", {}).values() if isinstance(value, str))
    return parts


def outputs_text(nb):
    return "\n".join(output_texts(nb))


def test_there_are_four_notebooks():
    assert NAMES == ["01_the_349ms_puzzle", "02_first_run_is_slow", "03_python_loops_on_the_gpu",
                     "04_numpy_vs_torch"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_matches_its_source_and_keeps_its_outputs(name):
    """Rebuild with `python scripts/build-notebooks.py NAME` after editing notebooks/src/NAME.py."""
    built, saved = _build_script().build(name), committed(name)
    shape = [(c.id, c.cell_type, c.source, c.metadata.get("tags", [])) for c in built.cells]
    assert [(c.id, c.cell_type, c.source, c.metadata.get("tags", [])) for c in saved.cells] == shape
    code = [c for c in saved.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "executed: run scripts/build-notebooks.py"
    assert any(c.outputs for c in code)
    assert saved.metadata["outputs_from"]  # the device the outputs came from ("CPU only (no GPU)" here)


@pytest.mark.parametrize("name", NAMES)
def test_the_install_cell_loads_the_magic_and_names_no_address(name):
    """The package has no public repository yet: no badge, no URL, only the ways README.md gives."""
    nb = committed(name)
    [install] = tagged(nb, "install")
    assert install.source.endswith("%load_ext ipython_cudatime")
    assert not any(re.search(r"github\.com/ipython|colab\.research\.google\.com", cell.source) for cell in nb.cells)


def test_where_the_package_is_missing_the_install_cell_says_how_to_install_it_in_one_line(ip, monkeypatch):
    monkeypatch.setitem(sys.modules, "ipython_cudatime", None)  # ``import ipython_cudatime`` now fails
    cell = run(ip, _build_script().INSTALL)
    assert isinstance(cell.error, ModuleNotFoundError) and "\n" not in str(cell.error)
    assert "`pip install .` in a clone" in str(cell.error) and "%pip install ipython_cudatime-*.whl" in str(cell.error)


@pytest.mark.parametrize("name", NAMES)
def test_every_notebook_is_a_lesson(name):
    """Predict, observe, explain, practise: a prediction, a remember box, an exercise with its solution."""
    nb = committed(name)
    assert any("**Predict" in c.source for c in tagged(nb, "predict"))
    [remember] = tagged(nb, "remember")
    assert remember.source.startswith("> **Remember**")
    exercises = tagged(nb, "exercise")
    assert exercises and all("<details><summary>Solution" in c.source for c in exercises)
    [mechanics] = tagged(nb, "mechanics")
    assert mechanics.source.startswith("## Tool mechanics")
    [table] = tagged(nb, "gpu-table")
    assert "not measured yet" in table.source and "docs/gpu-results.md" in table.source


def test_notebook_01_draws_the_timeline():
    [cell] = [c for c in tagged(committed(NAMES[0]), "timeline") if c.cell_type == "code"]
    assert any("image/png" in output.get("data", {}) for output in cell.outputs)
    for clock in ("%time stops", "%cudatime stops", "torch.cuda.synchronize()"):
        assert clock in cell.source


@pytest.mark.parametrize("name", NAMES)
def test_lesson_code_imports_only_the_public_api(name):
    """A cell a student copies into a fresh notebook runs with the extension and its public API
    (``%load_ext``, ``%cudatime``, ``contrast``, ``load``), never with the project's internals."""
    source = (ROOT / "notebooks" / "src" / f"{name}.py").read_text()
    imports = re.findall(r"^\s*(?:from|import) (ipython_cudatime\S*)(?: import (.*))?$", source, re.M)
    assert all(module == "ipython_cudatime" and set(re.split(r",\s*", names)) <= {"contrast", "load"}
               for module, names in imports), imports


@pytest.mark.parametrize("name", NAMES)
def test_saved_noise_warnings_say_their_cause(name):
    """A lesson's saved report may say its warm runs were noisy (this project's machines are
    virtual and shared), but then it says why, as every report does: never a bare warning."""
    text = outputs_text(committed(name))
    warnings = text.count("the warm runs are noisy") + text.count("the warm runs were slowed down")  # before #31
    assert warnings <= text.count("Likely cause:") + text.count("Cause unknown:")
    one_line = re.findall(r"^Warning: (?:noisy \(|slowed \(|the runs fall into two groups).*$", text, re.M)
    assert all(" · fix: " in line for line in one_line)  # the cause and the fix on the warning's own line


@pytest.mark.parametrize("name", NAMES)
def test_saved_reports_warn_only_where_the_answer_is_in_doubt(name):
    """No saved report warns of noise (each lesson times enough runs), and a table's noise cell
    stands only on a row whose verdict the runs could not settle: an "inconclusive" vs first (the
    first row: where any row is), or a grid row without its fastest marked (the mark settles the
    fastest and the next)."""
    texts = output_texts(committed(name))
    assert not re.findall(r"^Warning: (?:noisy|slowed|the runs fall into two groups).*$", "\n".join(texts), re.M)
    assert [found for text in texts for found in _settled_noise_cells(text)] == []


def _params(name):
    """``n=256, lib='numpy'`` -> {"n": "256", "lib": "numpy"}."""
    return {key: value.strip("'") for key, value in re.findall(r"(\w+)=('[^']*'|[^,]+)", name)}


def _settled_noise_cells(text):
    """(row, its verdict) for each noise cell a saved table shows on a row whose verdict holds."""
    found, settled = [], []  # settled: the points a grid's marks settle, for the table that follows it
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip("\n").splitlines()
        if lines and lines[0].startswith("warm median in "):
            down, across = re.match(r"warm median in \S+, (\w+) down, (\w+) across", lines[0]).groups()
            header, rows = table("\n".join(lines[1:]))
            for row in (row for row in rows if any(cell.endswith("*") for cell in row)):
                times = sorted((float(cell.rstrip(" *").replace(",", "")), value)
                               for value, cell in zip(header[1:], row[1:]) if re.fullmatch(r"[\d,.]+( \*)?", cell))
                settled += [{down: row[0], across: value} for _, value in times[:2]]
        elif lines and re.match(r"(point|label) ", lines[0]):
            header, rows = table(block.strip("\n"))
            noise = header.index("noise") if "noise" in header else None
            verdict = header.index("vs first") if "vs first" in header else None
            undecided = verdict is not None and any(row[verdict] == "inconclusive" for row in rows)
            for row in (row for row in rows if noise is not None and row[noise]):
                holds = verdict is not None and row[verdict] not in ("", "inconclusive") and (
                    row[verdict] != "1.00×" or not undecided)
                if holds or _params(row[0]) in settled:
                    found.append((row[0], row[verdict] if holds else "its grid row's mark"))
            settled = []
    return found


def test_the_saved_table_check_finds_a_noise_cell_on_a_settled_row():
    """The check above, on tables made for it: a grid row whose fastest is marked, a comparison
    row with a ratio, each with a noise cell, are found; the same cells on undecided rows are not."""
    grid = ("warm median in ms, n down, lib across\nn    a      b\n1    1.0 *  2.0\n2    1.0    1.1\n* the fastest\n\n"
            "point         warm median  noise\nn=1, lib='a'  1 ms         noisy: varies\n"
            "n=2, lib='b'  1.1 ms       noisy: varies\n")
    compare = ("label  warm median  vs first      noise\nx      1 ms         1.00×\n"
               "y      2 ms         2.00×         noisy: varies\nz      1.1 ms       inconclusive  noisy: varies\n")
    assert _settled_noise_cells(grid) == [("n=1, lib='a'", "its grid row's mark")]
    assert _settled_noise_cells(compare) == [("y", "2.00×")]


@pytest.mark.parametrize("name", NAMES)
def test_saved_outputs_have_no_unexplained_cold_run(name):
    """The report's sentence for a slow cold run no check explains (the HTML's cold-run bar may still
    label a small remainder "unexplained" beside the causes it names)."""
    assert "is unexplained." not in outputs_text(committed(name))


@pytest.mark.parametrize("name", NAMES)
def test_known_wrong_claims_never_come_back(name):
    texts = [(ROOT / "notebooks" / "src" / f"{name}.py").read_text(),
             "\n".join(cell.source for cell in committed(name).cells)]
    for pattern, truth in WRONG_CLAIMS.items():
        for text in texts:
            match = re.search(pattern.replace(" ", r"\s+"), text, re.IGNORECASE)  # across line breaks too
            assert match is None, f"{name} says {match.group(0)!r}, but {truth}"


def test_04_gemm_verdict_names_what_its_numbers_show():
    """The saved GEMM verdict says what its counts show: where NumPy won every size the runs decide,
    that NumPy is the faster one, not that the claim 'does not hold at every size'."""
    (cell,) = tagged(committed("04_numpy_vs_torch"), "gemm-table")
    text = "".join(output.get("text", "") for output in cell.outputs)
    if "torch is faster at every size." in text:
        return
    counts = re.search(r"torch is faster at (\d+) of \d+ sizes, NumPy at (\d+)", text)
    torch_wins, numpy_wins = map(int, counts.groups())
    if numpy_wins and not torch_wins:
        assert "NumPy is the faster one" in text and "every size" not in text
    elif numpy_wins:
        assert "does not hold at every size" in text
    elif torch_wins:
        assert "torch is the faster one" in text


@pytest.mark.parametrize("name", NAMES)
def test_no_widget_state_that_no_output_shows(name):
    """nbclient saves the closed progress widgets' models; the build drops them (the reports are static)."""
    nb = committed(name)
    shown = [o for c in nb.cells for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
    assert shown == [] and "widgets" not in nb.metadata


@pytest.mark.parametrize("name", NAMES)
def test_no_stale_report_line(name):
    """The saved reports are the current library's: no memory line where no GPU framework was synchronized
    (CPU-only outputs), as the library prints none there."""
    nb = committed(name)
    if nb.metadata["outputs_from"].startswith("CPU only"):
        assert not re.search(r"^memory\s+:", outputs_text(nb), re.M), "a memory: line the library no longer prints"


def test_the_build_keeps_only_the_widgets_an_output_shows():
    build = _build_script()
    nb = nbformat.v4.new_notebook()
    shown = nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "aa", "version_major": 2}})
    nb.cells = [nbformat.v4.new_code_cell("w", outputs=[shown])]
    state = {"aa": {"state": {"children": ["IPY_MODEL_bb"]}}, "bb": {"state": {}}, "cc": {"state": {}}}
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}}
    build.drop_orphan_widgets(nb)
    assert sorted(nb.metadata["widgets"][WIDGET_STATE]["state"]) == ["aa", "bb"]  # the view and its child
    nb.cells[0].outputs = []
    build.drop_orphan_widgets(nb)
    assert "widgets" not in nb.metadata
