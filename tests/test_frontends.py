"""The report in live frontends, driven through their UIs in headless Chromium: JupyterLab and
Notebook 7 (ipywidgets 8), and classic Notebook 6.5 with Colab's ipywidgets 7.7.1.

One session per frontend (tests/frontends.py) runs a small notebook with Run All, saves it,
shuts the kernel down and reopens it, trusted and untrusted; the tests read what it saw.
Screenshots go to $CUDATIME_SCREENSHOTS when set (``make screenshots``), else a temporary folder.
"""

import math
import os
import re
from pathlib import Path

import pytest

import frontends
import chart_samples
from ipython_cudatime.render.chart import CHART_PX, REPORT_PX

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
            seen["marker"] = page.marker()
            page.screenshot(shots / f"{kind}-light.png")
            seen["widths"], seen["sizes"] = _widths(page, kind, shots)
            page.save()
            if kind == "lab":  # the notebook as saved, exported by nbconvert
                seen["nbconvert"] = frontends.exported_sizes(browser, root / "live.ipynb", shots)
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


def _widths(page, kind, shots):
    """({(theme, output width): layout}, {(theme, window width): sizes}), a screenshot of each, light
    then dark where the frontend has a dark theme; JupyterLab with its file browser closed, as on a
    narrow screen."""
    layouts, sizes = {}, {}
    page.narrow_layout()
    for theme in ("light",) if kind == "classic" else ("light", "dark"):
        if theme == "dark":
            page.dark()
        for width in frontends.OUTPUT_WIDTHS:
            layouts[theme, width] = page.output_width(width)
            page.screenshot(shots / f"{kind}-{theme}-{width}px.png")
        sizes.update(_window_sizes(page, kind, theme, shots))
        if theme == "dark":
            page.page.set_viewport_size({"width": 1200, "height": 3200})
            page.page.wait_for_timeout(800)
            page.screenshot(shots / f"{kind}-dark.png")
    return layouts, sizes


def _window_sizes(page, kind, theme, shots):
    """{(theme, window width): chart text and table fit}: a phone's window holds a narrower output area
    than its width (prompts, margins), so the charts are measured at the window's width too."""
    found = {}
    for width in frontends.VIEWPORT_WIDTHS:
        page.page.set_viewport_size({"width": width, "height": 3200})
        page.page.wait_for_timeout(800)
        found[theme, width] = page.sizes()
        page.screenshot(shots / f"{kind}-{theme}-{width}px-window.png")
    return found


@pytest.fixture(scope="module", params=["lab", "notebook7", "classic"])
def seen(request, tmp_path_factory):
    return _session(request.param, tmp_path_factory)


def _reports(cells):
    return [report for cell in cells for report in cell["reports"]]


def _charted(reports):
    """The reports with a chart: every one, but a report of a cell that ran once, which says so instead."""
    charted = [report for report in reports if report["charts"]]
    for report in reports:
        assert report["charts"] or "no chart: the cell ran once" in report["text"], report["text"][:200]
    return charted


def _check_reports(cells):
    reports = _reports(cells)
    assert len(reports) == frontends.REPORTS, [cell["text"][:80] for cell in cells]
    for report in _charted(reports):
        [chart] = report["charts"]
        assert chart["svg"] and chart["complete"] and chart["natural"] == CHART_PX, report["text"][:80]
        assert report["width"] <= max(REPORT_PX, report["table"]) + 1  # a sweep's or comparison's table may be wider
    assert sum(report["details"] for report in reports) >= 4  # each single report has a Details section
    assert not any(cell["widgetErrors"] for cell in cells)


def test_reports_render_with_their_chart(seen):
    _check_reports(seen["live"])


def test_progress_view_appears_for_a_long_cell_and_is_gone_at_the_end(seen):
    assert seen["progress"]
    assert not any(cell["progress"] for cell in seen["live"])


@pytest.mark.timing  # a real 2 s run
def test_progress_moves_during_a_single_2_s_warm_run(seen):
    warm = [text for text in seen["progress"] if "warm run 1 of 1: " in text and "so far" in text]
    cold = [text for text in seen["progress"] if "cold run: " in text and "so far" in text]
    assert len(set(warm)) >= 2 and len(set(cold)) >= 2, seen["progress"]


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


def test_widths_are_the_output_widths_asked_for(seen):
    for (theme, width), layout in seen["widths"].items():
        area = layout[0]["area"]
        # classic Notebook's page stops growing at 1140 px: its widest output area is 978 px
        assert abs(area - width) <= 8 or (width > 1140 and area >= 970), (theme, width, area)


def test_no_report_text_is_clipped_at_any_width(seen):
    for (theme, width), layout in seen["widths"].items():
        assert len(layout) == frontends.REPORTS
        for report in layout:
            assert report["clipped"] == [] and report["past"] <= 1, (theme, width, report)


def test_charts_fill_the_area_up_to_their_natural_width_and_all_text_stays_at_least_10_px(seen):
    for (theme, width), layout in seen["widths"].items():
        for report in _charted(layout):
            [chart] = report["charts"]
            assert chart["shown"] >= min(chart["natural"], report["area"] - 1), (width, chart)
            assert chart["shown"] <= chart["natural"], (width, chart)
            assert report["font"] >= 10, (theme, width, report)


UNIT = re.compile(r"^(0|[\d.]+ (ns|µs|us|ms|s))$")


def test_tick_labels_carry_units(seen):
    for report in _charted(_reports(seen["live"])):
        [chart] = report["charts"]
        ticks = chart_samples.tick_labels(chart_samples.svg_of(chart["src"]))
        assert len(ticks["y"]) >= 2 and all(UNIT.match(label) for label in ticks["y"]), ticks


MIN_CHART_TEXT_PX = 11


def _measured(sizes):
    """Every measured place: {(theme, window width): reports}, each report's charts' labels."""
    return [(where, report, chart) for where, reports in sizes.items() for report in reports
            for chart in report["charts"]]


def _smallest_text(sizes):
    """{(theme, window width): (the smallest chart text in px, its label)}: the figures a failure shows."""
    smallest = {}
    for where, _, chart in _measured(sizes):
        for label in chart["labels"]:
            smallest[where] = min(smallest.get(where, (math.inf, "")), (round(label["px"], 1), label["label"]))
    return smallest


def _check_chart_text(sizes):
    """Every label of every chart at least MIN_CHART_TEXT_PX as the browser draws it: a chart drawn
    500 px wide and shrunk into a phone's output area had 6 px text, which its numbers cannot afford."""
    measured = _measured(sizes)
    assert measured and all(len(chart["labels"]) >= 3 for _, _, chart in measured), measured[:1]
    digits = [label for _, _, chart in measured for label in chart["labels"]
              if label["label"].isdigit() and not label["rotated"] and label["height"] is not None]
    # the measure is the glyphs' own (where they are paths): a digit of DejaVu Sans is 0.73 em tall as drawn
    assert digits and all(0.65 <= label["height"] / label["px"] <= 0.85 for label in digits), digits[:3]
    smallest = _smallest_text(sizes)
    assert min(px for px, _ in smallest.values()) >= MIN_CHART_TEXT_PX, smallest


def _check_tables(sizes):
    """No word broken across lines, no cell narrower than its content, and a grid that fits whole."""
    for where, reports in sizes.items():
        for report in reports:
            for table in report["tables"]:
                assert table["broken"] == [] and table["clipped"] == [], (where, report["text"], table)
            grids = [table for table in report["tables"] if table["cls"] == "cudatime-grid"]
            assert not any(table["scrolls"] for table in grids), (where, report["text"], grids)
    assert sum(table["cls"] == "cudatime-grid" for reports in sizes.values() for report in reports
               for table in report["tables"]) == len(sizes)  # the 4 x 2 sweep's grid, at every width


def test_chart_text_is_at_least_11_px_at_every_window_width(seen):
    _check_chart_text(seen["sizes"])


def test_tables_fit_at_every_window_width(seen):
    _check_tables(seen["sizes"])


def test_nbconvert_html_chart_text_and_tables_at_every_window_width(seen):
    if "nbconvert" not in seen:
        pytest.skip("the notebook saved by JupyterLab is the one exported")
    _check_chart_text(seen["nbconvert"])
    _check_tables(seen["nbconvert"])


def test_section_marker_turns_when_the_section_opens(seen):
    closed, opened = seen["marker"]["closed"], seen["marker"]["opened"]
    assert closed == {"display": "list-item", "marker": "disclosure-closed", "open": False}
    assert opened == {"display": "list-item", "marker": "disclosure-open", "open": True}
