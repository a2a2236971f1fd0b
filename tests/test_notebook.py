"""The display in a real Jupyter kernel (nbclient), then in headless Chromium, offline.

Runs under both environments of `make test` (ipywidgets 8, and Colab's 7.7.1).
"""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import browser
from ipython_cudatime.render.chart import CHART_PX

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
CELLS = [
    "%load_ext ipython_cudatime\nimport time",
    "%%cudatime -n 8\ntotal = sum(range(30_000))",
    "%cudatime --text -n 2 40 + 2",
    "%cudatime -q -n 1 -v saved 'quiet-value'",
    "%%cudatime -n 6\ntime.sleep(0.15)",  # long enough for the progress view, replaced by the report
    "%%cudatime -n 2 --sweep n=10,1000 -l s\nsum(range(n))",
    "%cudatime_compare",
    "%cudatime sum(range(1000))",  # a default report, as a notebook keeps it
]
REPORT_BYTES = 12_000  # a default report's saved output, at most


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("display")
    nb = browser.execute_notebook(new_notebook(cells=[new_code_cell(c) for c in CELLS]), tmp)
    path = tmp / "display.ipynb"
    nbformat.write(nb, str(path))
    return path, nb


def outputs(nb, index):
    return nb.cells[index].outputs


def test_report_is_static_text_and_html(notebook):
    _, nb = notebook
    [out] = outputs(nb, 1)
    assert out.output_type == "display_data"
    assert set(out.data) == {"text/plain", "text/html"}
    assert out.data["text/plain"].startswith("CPU times:")
    assert "data:image/svg+xml;base64," in out.data["text/html"]
    assert "warm median" in out.data["text/html"]


def test_a_default_report_is_light_in_the_saved_notebook(notebook):
    """Notebooks live in git: a report weighs little more than the chart it shows, as nbformat saves it."""
    path, _ = notebook
    [out] = [out for out in nbformat.read(str(path), as_version=4).cells[7].outputs
             if out.output_type == "display_data"]  # the report; the cell's value follows it
    saved = len(json.dumps(out, ensure_ascii=False).encode())
    assert saved <= REPORT_BYTES, f"a default report saved as {saved:,} bytes"
    assert "data:image/svg+xml" in out.data["text/html"] and out.data["text/plain"].startswith("CPU times:")


def test_no_widget_view_is_left_in_the_saved_notebook(notebook):
    # (nbclient keeps closed models in its saved state, unlike the live frontends; test_progress
    # checks that every progress widget is closed.)
    _, nb = notebook
    views = [o for c in nb.cells for o in c.get("outputs", []) if WIDGET_MIME in o.get("data", {})]
    assert views == []


def test_long_cell_ends_with_its_report_in_place_of_the_progress_view(notebook):
    _, nb = notebook
    [out] = outputs(nb, 4)
    assert set(out.data) == {"text/plain", "text/html"} and "warm median" in out.data["text/html"]


def test_text_option_and_quiet(notebook):
    _, nb = notebook
    text, value = outputs(nb, 2)
    assert set(text.data) == {"text/plain"} and text.data["text/plain"].startswith("CPU times:")
    assert value.data["text/plain"] == "42"
    [quiet] = outputs(nb, 3)
    assert quiet.output_type == "execute_result" and quiet.data["text/plain"] == "'quiet-value'"


def _charts(page):
    return [img for img in page["images"] if img["src_prefix"].startswith("data:image/svg+xml")
            and img["naturalWidth"] == CHART_PX]


def test_reports_render_in_a_browser(notebook):
    path, _ = notebook
    page = browser.export_and_render(path, widgets=True)
    assert page["errors"] == [] and page["blocked"] == []
    assert page["widget_views"] == 0
    assert "warm median" in page["text"] and "Details" in page["text"]
    assert len(_charts(page)) == 5 and all(img["complete"] for img in _charts(page))  # 3 reports, sweep, compare
    assert not page["blank"]


def test_sweep_and_compare_show_a_table_and_a_chart(notebook):
    _, nb = notebook
    for index in (5, 6):
        [out] = outputs(nb, index)
        assert set(out.data) == {"text/plain", "text/html"}
        assert "data:image/svg+xml;base64," in out.data["text/html"] and "<table" in out.data["text/html"]
    assert "n=1000" in outputs(nb, 5)[0].data["text/plain"]
    assert outputs(nb, 6)[0].data["text/plain"].splitlines()[1].startswith("s[n=10]")
