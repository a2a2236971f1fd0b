"""Decide how a result is shown, and publish it as one display bundle.

In a notebook kernel: ``text/plain`` (the text report) and self-contained ``text/html``
(the report with its chart as an SVG image), which every frontend renders the same
before and after the notebook is saved and reopened, trusted or not. Widgets are only
for the live progress view (``progress``), which this final bundle replaces through its
display id. In terminal IPython: the text report only. ``FRONTEND`` overrides the
detection (tests, or a frontend we misjudge).
"""

FRONTEND = None  # None: detect; "notebook" or "terminal": forced


def frontend(shell):
    """'notebook' under a Jupyter kernel (Lab, Notebook, VS Code, Colab), else 'terminal'."""
    if FRONTEND is not None:
        return FRONTEND
    return "notebook" if getattr(shell, "kernel", None) is not None else "terminal"


def bundle(result):
    """The mimebundle for ``result``: its text report and its HTML report with the chart."""
    from .render.chart import chart_html
    from .render.html import render_html

    return {"text/plain": str(result), "text/html": render_html(result, chart_html(result))}


def _publish(shell, text_only, text, rich, live):
    if text_only or frontend(shell) == "terminal":
        data = {"text/plain": text}
    else:
        data = rich()
    if live is not None:
        live.finish(data)  # replaces the progress view, if one is showing
    else:
        from IPython.display import display

        display(data, raw=True)


def show(result, shell, text_only=False, live=None):
    """Publish a CudaTimeResult the way this frontend reads best (the HTML report in a notebook),
    in place of ``live``'s progress view when one is given."""
    _publish(shell, text_only, str(result), lambda: bundle(result), live)


def publish(obj, shell, text_only=False, live=None):
    """Publish a sweep or comparison: its text, or in a notebook its text and HTML."""
    _publish(shell, text_only, str(obj), obj.bundle, live)


def publish_line(text, shell):
    """Publish one line (auto mode's): printed in a terminal, text and HTML in a notebook."""
    from html import escape

    if frontend(shell) == "terminal":
        print(text)
        return
    from IPython.display import display

    display({"text/plain": text, "text/html": f"<div class='cudatime-auto'>{escape(text)}</div>"}, raw=True)
