"""The report in live frontends, driven through their UIs in headless Chromium: JupyterLab and
Notebook 7 (ipywidgets 8), and classic Notebook 6.5 with Colab's ipywidgets 7.7.1.

One session per frontend (tests/frontends.py) runs a small notebook with Run All, saves it,
shuts the kernel down and reopens it, trusted and untrusted; the tests read what it saw.
Screenshots go to $CUDATIME_SCREENSHOTS when set (``make screenshots``), else a temporary folder.
"""

import os
from pathlib import Path

import pytest

import frontends
from ipython_cudatime.render.image import FONT_PX, REPORT_PX

pytestmark = pytest.mark.frontends


def _session(kind, tmp_path_factory):
    reason = frontends.skip_reason(kind)
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp(kind)
    root = tmp / "root"
    root.mkdir()
    shots = Path(os.environ.get("CUDATIME_SCREENSHOTS") or tmp)
    frontends.write_notebook(root / "live.ipynb")
    seen = {}
    playwright, browser = frontends.launch()
    try:
        with frontends.server(kind, root) as (url, token):
            page = frontends.Session(browser, kind, url, token)
            page.open("live.ipynb")
            seen["progress"] = page.run_all(shots / f"{kind}-progress.png")
            seen["live"], seen["prompts"] = page.reports(), page.prompts()
            page.screenshot(shots / f"{kind}-light.png")
            if kind != "classic":
                page.dark()
                page.screenshot(shots / f"{kind}-dark.png")
                page.narrow_layout()
                page.page.set_viewport_size({"width": 760, "height": 3200})
                page.page.wait_for_timeout(800)
                seen["narrow"] = page.reports()
                page.screenshot(shots / f"{kind}-760px.png")
                page.page.set_viewport_size({"width": 580, "height": 3200})
                page.page.wait_for_timeout(800)
                seen["narrowest"] = page.reports()
            page.save()
            seen["live_errors"] = page.errors
            page.shutdown_kernels()
            page.close()
            frontends.untrusted_copy(root / "live.ipynb", root / "downloaded.ipynb")
            for name, state in (("live.ipynb", "trusted"), ("downloaded.ipynb", "untrusted")):
                page = frontends.Session(browser, kind, url, token)
                page.open(name)
                page.page.wait_for_timeout(1500)
                seen[state] = page.reports()
                seen[f"{state}_probe"] = page.page.locator("svg#trust-probe").count()
                seen[f"{state}_errors"] = page.errors
                page.screenshot(shots / f"{kind}-reopened-{state}.png")
                page.shutdown_kernels()
                page.close()
    finally:
        browser.close()
        playwright.stop()
    return seen


@pytest.fixture(scope="module", params=["lab", "notebook7", "classic"])
def seen(request, tmp_path_factory):
    return _session(request.param, tmp_path_factory)


def _reports(cells):
    return [report for cell in cells for report in cell["reports"]]


def _check_reports(cells):
    reports = _reports(cells)
    assert len(reports) == frontends.REPORTS, [cell["text"][:80] for cell in cells]
    for report in reports:
        [chart] = report["charts"]
        assert chart["svg"] and chart["complete"] and chart["natural"] == REPORT_PX, report
        assert report["width"] <= REPORT_PX + 1
    assert sum(report["details"] for report in reports) >= 4  # each single report has a Details section
    assert not any(cell["widgetErrors"] for cell in cells)


def test_reports_render_with_their_chart(seen):
    _check_reports(seen["live"])


def test_progress_view_appears_for_a_long_cell_and_is_gone_at_the_end(seen):
    assert seen["progress"]
    assert not any(cell["progress"] for cell in seen["live"])


def test_run_all_stops_at_the_failing_cell(seen):
    cells = seen["live"]
    assert "boom in a warm run" in cells[frontends.FAILING]["text"]
    assert "ran after the failure" not in cells[frontends.AFTER]["output"]
    assert seen["prompts"][frontends.AFTER].strip() in ("[ ]:", "In [ ]:", "[\u00a0]:", "In\u00a0[\u00a0]:")


def test_no_console_error_from_this_package(seen):
    errors = [e for key in ("live_errors", "trusted_errors", "untrusted_errors") for e in seen[key]]
    ours = [e for e in errors if any(word in e.lower() for word in ("cudatime", "widget", "data:image", "model"))]
    assert ours == []


def test_every_report_renders_after_save_and_reopen(seen):
    _check_reports(seen["trusted"])
    assert seen["trusted_probe"] == 1  # the saved notebook was trusted...


def test_every_report_renders_untrusted(seen):
    _check_reports(seen["untrusted"])
    assert seen["untrusted_probe"] == 0  # ...and the copy was not: its inline <svg> was stripped


def test_chart_follows_the_panel_with_text_at_least_10_px_down_to_500_px(seen):
    if "narrow" not in seen:
        pytest.skip("classic Notebook has no theme or panel resizing to test")
    checked = 0
    for cells in (seen["narrow"], seen["narrowest"]):  # 760 px and 580 px wide windows
        for cell in cells:
            for report in cell["reports"]:
                chart = report["charts"][0]
                assert chart["shown"] <= chart["natural"] and report["width"] <= cell["panel"]
                if cell["panel"] >= 500:
                    assert FONT_PX * chart["shown"] / chart["natural"] >= 10, (cell["panel"], chart)
                    checked += 1
    assert checked
