"""Results in real Jupyter kernels (nbclient): how an echoed result looks in a notebook, and
results saved in one kernel compared in a fresh one. Runs under both environments of `make test`."""

import json

import pytest
from nbformat.v4 import new_code_cell, new_notebook

import browser

SAVING = [
    "%load_ext ipython_cudatime",
    "r = %cudatime -q -o -n 2 -l add --save {path} 40 + 2\nr",
    "%cudatime -o -n 2 -l mul --save {path} 6 * 7",
    "%%cudatime -q -n 1 -l grid --save {path} --sweep n=10,1000\nsum(range(n))",
    "%cudatime_compare",
]
LOADING = ["%load_ext ipython_cudatime", "%cudatime_compare --load {path}"]


def run_notebook(cells, tmp_path, path):
    nb = new_notebook(cells=[new_code_cell(cell.format(path=path)) for cell in cells])
    return browser.execute_notebook(nb, tmp_path)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kernels")
    path = tmp / "kept.jsonl"
    return run_notebook(SAVING, tmp, path), run_notebook(LOADING, tmp, path), path


def results(cell):
    return [out for out in cell.outputs if out.output_type == "execute_result"]


def test_an_echoed_result_is_the_html_report_in_a_notebook(kernels):
    saving, _, _ = kernels
    [echo] = results(saving.cells[1])
    assert echo.data["text/plain"].startswith("CPU times:")
    assert "<table" in echo.data["text/html"] and "data:image/svg+xml;base64," in echo.data["text/html"]


def test_a_bare_dash_o_in_a_notebook_shows_the_report_once(kernels):
    saving, _, _ = kernels
    cell = saving.cells[2]
    shown = [out for out in cell.outputs if out.output_type == "display_data"]
    [echo] = results(cell)
    assert len(shown) == 1 and "text/html" in shown[0].data
    assert set(echo.data) == {"text/plain"} and echo.data["text/plain"].startswith("<CudaTimeResult cold")


def test_saved_results_loaded_in_a_fresh_kernel_show_the_same_table(kernels):
    saving, loading, path = kernels
    [live] = [out.data for out in saving.cells[4].outputs if out.output_type == "display_data"]
    [loaded] = [out.data for out in loading.cells[1].outputs if out.output_type == "display_data"]
    assert loaded["text/plain"] == live["text/plain"]
    assert [line.split()[0] for line in live["text/plain"].splitlines()[:5]] == [
        "label", "add", "mul", "grid[n=10]", "grid[n=1000]"]
    assert live["text/plain"].splitlines()[5].startswith("mul against add: ")  # then each row in words
    assert "<svg" in loaded["text/html"] or "<img" in loaded["text/html"]  # the chart, as live
    assert len([json.loads(line) for line in path.read_text().splitlines()]) == 4
