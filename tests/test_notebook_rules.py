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
