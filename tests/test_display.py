"""Choosing the display, and the chart leaving nothing behind (no kernel needed)."""

import gc
import sys

from conftest import run

from ipython_cudatime import display
from ipython_cudatime.render.chart import chart_png
from ipython_cudatime.render.widget import WIDGET_MIME
from ipython_cudatime.result import CudaTimeResult, Run


def sample(runs=20):
    return CudaTimeResult(cold=Run(0.001, 0.4, 0.39, 0.1, 0.1), warmup=[Run(0.001, 0.05, 0.049)],
                          warm=[Run(0.001, 0.05 + i * 1e-4, 0.049 + i * 1e-4) for i in range(runs)],
                          device="cuda:0 test", synchronized=["torch cuda"])


def test_frontend_detection_and_override(ip, monkeypatch):
    assert display.frontend(ip) == "terminal"  # no kernel behind this shell
    monkeypatch.setattr(display, "FRONTEND", "notebook")
    assert display.frontend(ip) == "notebook"
    cell = run(ip, "%cudatime -n 2 1")
    [data] = [out.data for out in cell.outputs]
    assert set(data) == {"text/plain", "text/html", WIDGET_MIME}
    cell = run(ip, "%cudatime --text -n 2 1")
    assert [set(out.data) for out in cell.outputs] == [{"text/plain"}]


def test_without_ipywidgets_the_bundle_is_html_and_text(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # `import ipywidgets` now fails
    data = display.bundle(sample())
    assert set(data) == {"text/plain", "text/html"}
    assert "data:image/png;base64," in data["text/html"]


def test_chart_is_a_png_and_log_scaled_when_the_cold_run_dwarfs(monkeypatch):
    png = chart_png(sample())
    assert png.startswith(b"\x89PNG")
    calls = []
    from matplotlib.axes import Axes

    original = Axes.set_yscale
    monkeypatch.setattr(Axes, "set_yscale", lambda self, value, **kw: (calls.append(value), original(self, value, **kw)))
    chart_png(sample())  # cold 0.39 s vs median ~0.05 s: linear
    big = sample()
    big.cold = Run(0.001, 20.0, 19.9, 0.1, 0.1)
    big.__dict__.pop("clock", None), big.__dict__.pop("samples", None)
    chart_png(big)
    assert calls == ["linear", "log"]


def test_no_figures_left_open_or_alive_after_a_hundred_charts():
    """Counting every object gc tracks is noisy (matplotlib fills caches); a figure kept alive is
    what a leak would keep, with all its artists: none may stay open or alive beside the reused one."""
    from matplotlib import _pylab_helpers
    from matplotlib.figure import Figure

    def figures():
        gc.collect()
        return sum(isinstance(o, Figure) for o in gc.get_objects())

    result = sample(100)
    chart_png(result)  # the first chart makes the one figure every chart reuses
    before = figures()
    for _ in range(100):
        chart_png(result)
    assert _pylab_helpers.Gcf.get_num_fig_managers() == 0
    assert figures() <= before
