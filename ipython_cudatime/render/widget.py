"""The notebook widget: a frontend over the same parts as the HTML report.

Core widgets only (VBox, HTML, Image, Accordion), so it renders in JupyterLab,
Notebook 7, VS Code and Colab without third-party widget JavaScript. Built to
work on ipywidgets 7.7.1 (Colab) and 8.x.
"""

from .chart import CHART_PX, legend_html
from .html import details_html, findings_html, header_html, profile_html, why_html
from .roofline import roofline_html

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def build_widget(result, png):
    """Header, run chart and a details section that later sections can join."""
    import ipywidgets as widgets

    class CudaTimeWidget(widgets.VBox):
        def __repr__(self):  # ipywidgets cuts text/plain at 110 characters
            return f"CudaTimeWidget({result!r})"[:110]

    sections = [(title, html) for title, html in (
        ("What it means", findings_html(result)),
        ("Why the cold run was slow", why_html(result)),
        ("Profile", profile_html(result)),
        ("Roofline", roofline_html(result)),
        ("Details", details_html(result)),
    ) if html]
    details = widgets.Accordion(children=[widgets.HTML(html) for _, html in sections])
    for index, (title, _) in enumerate(sections):
        details.set_title(index, title)
    details.selected_index = 0
    return CudaTimeWidget([
        widgets.HTML(header_html(result)),
        # A VBox stretches its children: pin the chart to its own size, shrinking on narrow screens.
        widgets.Image(value=png, format="png", layout=widgets.Layout(width=f"{CHART_PX[0]}px", max_width="100%")),
        widgets.HTML(legend_html(result)),
        details,
    ])


def widget_view(widget):
    """The view entry of a display bundle; ipywidgets 7.7.1 has no _repr_mimebundle_."""
    return {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
