"""The display in a real Jupyter kernel (nbclient), then in headless Chromium, offline.

Runs under both environments of `make test` (ipywidgets 8, and Colab's 7.7.1).
"""


import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import browser
from ipython_cudatime.render.chart import CHART_PX

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
CELLS = [
    "%load_ext ipython_cudatime\nimport time",
    "%%cudatime -n 8\ntotal = sum(range(30_000))",
    "%cudatime --text -n 2 40 + 2",
    "%cudatime -q -n 1 -v saved 'quiet-value'",
    "from ipython_cudatime.render.widget import build_widget\nlen(repr(build_widget(saved, b'')))",
    "%%cudatime -n 2 --sweep n=10,1000 -l s\nsum(range(n))",
    "%cudatime_compare",
]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("display")
    nb = browser.execute_notebook(new_notebook(cells=[new_code_cell(c) for c in CELLS]), tmp)
    path = tmp / "display.ipynb"
    nbformat.write(nb, str(path))
    return path, nb


def outputs(nb, index):
    return nb.cells[index].outputs


def test_widget_bundle_has_every_part(notebook):
    _, nb = notebook
    [out] = outputs(nb, 1)
    assert out.output_type == "display_data"
    assert set(out.data) == {"text/plain", "text/html", WIDGET_MIME}
    assert out.data["text/plain"].startswith("CPU times:")
    assert "data:image/png;base64," in out.data["text/html"]  # the static fallback carries the chart
    assert "warm median" in out.data["text/html"]


def test_widget_state_is_saved_with_header_and_chart(notebook):
    _, nb = notebook
    [out] = outputs(nb, 1)
    state = nb.metadata.widgets[STATE_MIME]["state"]
    root = state[out.data[WIDGET_MIME]["model_id"]]
    assert root["model_name"] == "VBoxModel"
    children = [state[ref.replace("IPY_MODEL_", "")] for ref in root["state"]["children"]]
    names = [child["model_name"] for child in children]
    assert names[:2] == ["HTMLModel", "ImageModel"] and "AccordionModel" in names
    assert "warm median" in children[0]["state"]["value"]
    [buffer] = children[1]["buffers"]
    assert buffer["path"] == ["value"] and len(buffer["data"]) > 1000  # the PNG bytes, base64


def test_text_option_and_quiet(notebook):
    _, nb = notebook
    text, value = outputs(nb, 2)
    assert set(text.data) == {"text/plain"} and text.data["text/plain"].startswith("CPU times:")
    assert value.data["text/plain"] == "42"
    [quiet] = outputs(nb, 3)
    assert quiet.output_type == "execute_result" and quiet.data["text/plain"] == "'quiet-value'"


def _chart(page):
    return [img for img in page["images"] if (img["naturalWidth"], img["naturalHeight"]) == CHART_PX]


def test_widget_renders_in_a_browser(notebook):
    path, _ = notebook
    page = browser.export_and_render(path, widgets=True)
    assert page["errors"] == [] and page["blocked"] == []
    assert page["widget_views"] == 1
    assert "warm median" in page["text"] and "What it means" in page["text"]
    assert len(_chart(page)) == 1 and _chart(page)[0]["complete"]
    assert not page["blank"]


def test_static_fallback_renders_html_in_a_browser(notebook):
    path, _ = notebook
    page = browser.export_and_render(path, widgets=False)
    assert page["errors"] == [] and page["blocked"] == []
    assert page["widget_views"] == 0
    assert "warm median" in page["text"] and "cold run: wall" in page["text"]
    assert "VBox(" not in page["text"] and "CudaTimeWidget" not in page["text"]
    assert len(_chart(page)) == 1
    assert not page["blank"]


def test_sweep_and_compare_show_a_table_and_a_chart(notebook):
    _, nb = notebook
    for index in (5, 6):
        [out] = outputs(nb, index)
        assert set(out.data) == {"text/plain", "text/html"}
        assert "data:image/png;base64," in out.data["text/html"] and "<table" in out.data["text/html"]
    assert "n=1000" in outputs(nb, 5)[0].data["text/plain"]
    assert outputs(nb, 6)[0].data["text/plain"].splitlines()[1].startswith("s[n=10]")
