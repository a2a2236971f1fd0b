"""Reports to draw, made by hand (no run, no clock): the stored expected charts
(tests/expected/*.svg, *.html) and the chart tests draw these.

Not a test module. Each is plain data with exact, round numbers, so its report is the same
bytes on every machine.
"""

import base64
import html
import re

from ipython_cudatime.results.compare import Point, Results
from ipython_cudatime.results.result import CudaTimeResult, Env, Run, Task


def result(median, cold, runs=5, device=None, synchronized=("torch cuda",), params=None):
    """A result whose warm runs sit around ``median`` (host time a tenth of it on a device)."""
    warm = []
    for i in range(runs):
        wall = median * (1 + 0.01 * (i - runs // 2))
        warm.append(Run(wall, wall) if device is None else Run(median / 10, wall, wall * 0.99))
    cold_run = Run(cold if device is None else cold / 4, cold, None if device is None else cold * 0.99, cold / 2, 0.0)
    return CudaTimeResult(cold=cold_run, warmup=[warm[0]], warm=warm, device=device or "cpu (12 threads)",
                          synchronized=list(synchronized), task=Task("f(n)", None, dict(params or {}), Env(host="box")), records={"cold_causes": []})


def log_sweep():
    """``--sweep n=256,512,1024,2048,4096`` of a product: sizes over a decade, times over three."""
    return Results([Point(r.task, r) for r in
                    (result(1e-5 * (n / 256) ** 2.5, 0.2 + 1e-5 * (n / 256) ** 2.5, device="cuda:0 test",
                            params={"n": n}) for n in (256, 512, 1024, 2048, 4096))])


def categorical_sweep():
    """``--sweep layout=view,contiguous way=broadcast,expand``: words only, two series."""
    points = []
    for way, scale in (("broadcast", 1.0), ("expand", 1.6)):
        for layout, slower in (("view", 1.0), ("contiguous", 2.5)):
            r = result(2e-4 * scale * slower, 9e-4 * scale * slower, params={"layout": layout, "way": way},
                       synchronized=())
            points.append(Point(r.task, r))
    return Results(points)


def cpu_only():
    """A CPU cell: nothing synchronized, no device clock, a cold run twice the warm median."""
    return result(0.0021, 0.0042, runs=12, synchronized=())


TOKEN = re.compile(r'<g(?: id="([^"]*)")?[^>]*?(/?)>|(</g>)|<!-- (.*?) -->')


def tick_labels(svg):
    """{"x": [...], "y": [...]}: the tick labels a matplotlib SVG draws (lines joined by newlines),
    read from the comment it writes beside each string's paths, within each ``xtick_N``/``ytick_N``
    group; a tick without a label (a minor tick) gives none. The run chart, written by hand, has its
    labels as ``<text>`` in an ``x-ticks`` and a ``y-ticks`` group."""
    if isinstance(svg, bytes):
        svg = svg.decode()
    if 'id="y-ticks"' in svg:
        return {axis: [html.unescape(text) for text in re.findall(r"<text[^>]*>([^<]*)</text>", group)]
                for axis, group in re.findall(r'<g id="([xy])-ticks"[^>]*>(.*?)</g>', svg)}
    labels, tick, depth = {"x": [], "y": []}, None, 0
    for group, empty, close, comment in TOKEN.findall(svg):
        if close:
            depth -= 1
            if tick is not None and depth < tick[2]:
                tick = None
        elif comment:
            if tick is not None:
                found = labels[tick[0]]
                found[tick[1]] = (found[tick[1]] + "\n" if found[tick[1]] else "") + html.unescape(comment)
        elif not empty:
            depth += 1
            if re.fullmatch(r"[xy]tick_\d+", group):
                tick = (group[0], len(labels[group[0]]), depth)
                labels[group[0]].append("")
    return {axis: [label for label in found if label] for axis, found in labels.items()}


def svg_of(img_src):
    """The SVG document of an ``<img>``'s data URI."""
    return base64.b64decode(img_src.split(",", 1)[1]).decode()
