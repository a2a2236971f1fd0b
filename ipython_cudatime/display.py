"""Decide how a result is shown, and publish it as one display bundle.

In a notebook kernel: the widget view, with text/plain (the text report) and
text/html (table + inline chart) beside it, so static renderers fall back to the
HTML. In terminal IPython: the text report only. ``FRONTEND`` overrides the
detection (tests, or a frontend we misjudge).
"""

FRONTEND = None  # None: detect; "notebook" or "terminal": forced


def frontend(shell):
    """'notebook' under a Jupyter kernel (Lab, Notebook, VS Code, Colab), else 'terminal'."""
    if FRONTEND is not None:
        return FRONTEND
    return "notebook" if getattr(shell, "kernel", None) is not None else "terminal"


def bundle(result, widgets=True):
    """The mimebundle for ``result``; the widget view is left out when ipywidgets can't make one."""
    from .render.chart import chart_png
    from .render.html import render_html

    png = chart_png(result)
    data = {"text/plain": str(result), "text/html": render_html(result, png)}
    if widgets:
        try:
            from .render.widget import WIDGET_MIME, build_widget, widget_view

            data[WIDGET_MIME] = widget_view(build_widget(result, png))
        except ImportError:
            pass  # no ipywidgets: the HTML still shows everything
    return data


def _publish(shell, text_only, text, rich):
    from IPython.display import display

    if text_only or frontend(shell) == "terminal":
        display({"text/plain": text}, raw=True)
    else:
        display(rich(), raw=True)


def show(result, shell, text_only=False):
    """Publish a CudaTimeResult the way this frontend reads best (the widget in a notebook)."""
    _publish(shell, text_only, str(result), lambda: bundle(result))


def publish(obj, shell, text_only=False):
    """Publish a sweep or comparison: its text, or in a notebook its text and HTML."""
    _publish(shell, text_only, str(obj), obj.bundle)
