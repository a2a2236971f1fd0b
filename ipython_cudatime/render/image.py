"""Charts as ``<img src="data:image/svg+xml;base64,…">``: what every notebook frontend keeps.

An untrusted notebook (one downloaded from GitHub) loses inline ``<svg>``, ``<style>`` and
any ``var(--jp-…)`` rule when reopened in JupyterLab, Notebook 7 or classic Notebook, but
keeps an ``<img>`` with a data URI. The page's theme and fonts cannot reach inside an
image, so the chart has a transparent background, mid-tone colours that read on both the
light and the dark theme, and its text drawn as paths (matplotlib's default for SVG),
which needs no font on the reader's system.

Sizes are in CSS pixels. SVG lengths are points (1 pt = 4/3 px in a browser), so a figure
of ``width / 96`` inches shows ``width`` pixels wide. The ``<img>`` follows the panel's
width up to that natural size, so ``FONT_PX`` text stays at least 10 px tall down to a
400 px wide output area (a 500 px panel less the prompt and padding).
"""

import base64
import io
from html import escape

REPORT_PX = 600  # the width of every report and of its charts
FONT_PX = 16.0  # chart text at natural size: 10.7 px in a 400 px output area
FONT_PT = FONT_PX * 0.75  # the same in points, as matplotlib takes it (1 pt = 4/3 px)
MUTED = "#8c8c8c"  # axes, ticks and labels: 3.4:1 on white, 6:1 on JupyterLab's dark #111
COLOURS = {"cold": "#e0504a", "warm-up": "#e8a030", "warm": "#3f8fd6"}
LIGHTER = {"cold": "#f0a6a2", "warm-up": "#f3cf97", "warm": "#9fc7ea"}  # same hues, half-way to white
SERIES = ("#3f8fd6", "#e8a030", "#4bab5a", "#e0504a", "#9a75c9", "#3fb3b3")  # sweep lines
SVG_PREFIX = "data:image/svg+xml;base64,"
# Text properties for what a user wrote (labels, swept values, loaded names) in a chart: drawn as
# typed, never parsed as mathtext (``$\\nosuch$`` would raise) or sent to TeX (``text.usetex``).
USER_TEXT = {"parse_math": False, "usetex": False}
# Settings a user's own plots may change that would break ours: with TeX on (and none installed,
# or a label TeX cannot read) a report would raise. Figures are made and saved under these.
CHART_RC = {"text.usetex": False}


def figure(height_px, width_px=REPORT_PX):
    """A matplotlib Figure (object API, never pyplot: nothing is left open or shown twice)
    with one axes, styled to read on light and dark themes."""
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    with matplotlib.rc_context(CHART_RC):
        fig = Figure(figsize=(width_px / 96, height_px / 96), dpi=96)
        FigureCanvasSVG(fig)
        axes = fig.add_subplot()
    fig.patch.set_alpha(0.0)
    axes.patch.set_alpha(0.0)
    axes.tick_params(labelsize=FONT_PT, colors=MUTED, labelcolor=MUTED)
    axes.xaxis.label.set_color(MUTED)
    axes.yaxis.label.set_color(MUTED)
    for side, spine in axes.spines.items():
        spine.set_visible(side in ("left", "bottom"))
        spine.set_color(MUTED)
    return fig, axes


def svg_bytes(fig):
    """The figure as an SVG document, with no metadata that changes between calls."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context(CHART_RC):  # the ticks are made as the figure is drawn
        fig.savefig(buffer, format="svg", transparent=True, dpi=144, metadata={"Date": None})
    return buffer.getvalue()


def img_tag(svg, alt, width_px=REPORT_PX):
    """An ``<img>`` showing ``svg`` at its natural width, narrower when the panel is."""
    source = SVG_PREFIX + base64.b64encode(svg).decode("ascii")
    return (f"<img alt='{escape(alt)}' src='{source}' "
            f"style='display:block;width:100%;max-width:{width_px}px;height:auto;margin:4px 0'/>")
