"""The browser tools themselves: an executed notebook's widgets and HTML really render, offline."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import browser

WIDGET_CELL = """\
import io
import ipywidgets as w
from IPython.display import display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

fig = Figure(figsize=(2, 1), dpi=50)
FigureCanvasAgg(fig)
fig.add_subplot().plot([0, 1, 0])
png = io.BytesIO()
fig.savefig(png, format="png")
marker = "hello-" + "widget"  # not in the source, so only a rendered view shows it
display(w.VBox([w.HTML(f"<b>{marker}</b>"), w.Image(value=png.getvalue(), format="png")]))
"""
HTML_CELL = "from IPython.display import HTML\nHTML('<i>hello-static-html</i>')"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nb")
    nb = browser.execute_notebook(new_notebook(cells=[new_code_cell(WIDGET_CELL), new_code_cell(HTML_CELL)]), tmp)
    path = tmp / "tools.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_executed_notebook_saves_widget_state(executed):
    nb = nbformat.read(str(executed), as_version=4)
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    assert {m["model_name"] for m in state.values()} >= {"VBoxModel", "HTMLModel", "ImageModel"}


def test_widgets_render_offline(executed):
    page = browser.export_and_render(executed, widgets=True)
    assert page["errors"] == [] and page["blocked"] == []
    assert page["widget_views"] == 1
    assert "hello-widget" in page["text"] and "hello-static-html" in page["text"]
    assert "VBox(children=" not in page["text"]  # the view replaced the text/plain fallback
    [image] = page["images"]
    assert image["complete"] and image["naturalWidth"] == 100 and image["naturalHeight"] == 50
    assert not page["blank"]


def test_without_widget_state_only_static_outputs_show(executed):
    page = browser.export_and_render(executed, widgets=False)
    assert page["errors"] == [] and page["blocked"] == []
    assert page["widget_views"] == 0
    assert page["images"] == []
    assert "hello-static-html" in page["text"] and "VBox(children=" in page["text"]
    assert not page["blank"]
