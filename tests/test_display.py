"""What a notebook keeps: a static bundle whose HTML survives an untrusted reopen, and the chart
leaving nothing behind (no kernel needed)."""

import base64
import gc
import re
from html.parser import HTMLParser

import chart_samples
import pytest
from conftest import run
from expected_text import FOLDER, assert_expected
from report_parts import table

from ipython_cudatime.notebook import display
from ipython_cudatime.features import FEATURES
from ipython_cudatime.results.compare import Point, Results
from ipython_cudatime.render.chart import chart_svg
from ipython_cudatime.render.comparison import results_html
from ipython_cudatime.render.report import MANY_RUNS
from ipython_cudatime.render.chart import CHART_PX, FONT_PX, MUTED, PANEL, REPORT_PX
from ipython_cudatime.results.result import CudaTimeResult, Finding, RecordKeeper, Run, Task
from ipython_cudatime.units import format_seconds as fmt

# What JupyterLab 4.6, Notebook 7.6 and classic 6.5 keep of an untrusted output (measured there).
KEPT_TAGS = {"div", "span", "table", "tr", "th", "td", "details", "summary", "img", "b", "ul", "li", "br"}


def sample(runs=20, **changes):
    """A GPU result made by hand, with ``changes`` to its fields (a result is built once)."""
    fields = dict(cold=Run(0.001, 0.4, 0.39, 0.1, 0.1), warmup=[Run(0.001, 0.05, 0.049)],
                  warm=[Run(0.001, 0.05 + i * 1e-4, 0.049 + i * 1e-4) for i in range(runs)],
                  device="cuda:0 test", synchronized=["torch cuda"], records={"cold_causes": []})
    return CudaTimeResult(**{**fields, **changes})


class CountedWords(RecordKeeper):
    """A test-only keeper that counts how often a view asks it for its findings."""

    name = "counted"

    def __init__(self):
        self.asked = 0

    def findings(self, result, record):
        self.asked += 1
        return [Finding("counted", "The counted keeper spoke.")]


def test_a_reports_text_and_html_read_its_findings_once():
    """``display.bundle`` reads one ``Reading`` of a result: its findings (the features' words, the
    noise check) are worked out once for the text and the HTML report, and both show them."""
    counted = CountedWords()
    data = display.bundle(sample(), FEATURES + (counted,))
    assert counted.asked == 1
    assert "The counted keeper spoke." in data["text/plain"] and "The counted keeper spoke." in data["text/html"]


class Tags(HTMLParser):
    def __init__(self, html):
        super().__init__()
        self.tags, self.attrs = [], []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)


def test_frontend_detection_the_decision_passed_in_and_a_static_bundle(ip, seams):
    assert not display.Display(ip, FEATURES).notebook  # no kernel behind this shell
    seams(notebook=True)
    cell = run(ip, "%cudatime -n 2 1")
    [data] = [out.data for out in cell.outputs]
    assert set(data) == {"text/plain", "text/html"}  # no widget: nothing that a reopened notebook loses
    cell = run(ip, "%cudatime --text -n 2 1")
    assert [set(out.data) for out in cell.outputs] == [{"text/plain"}]


def test_report_uses_only_what_an_untrusted_notebook_keeps():
    html = display.bundle(sample(), FEATURES)["text/html"]
    parsed = Tags(html)
    assert set(parsed.tags) <= KEPT_TAGS, set(parsed.tags) - KEPT_TAGS
    for banned in ("<svg", "<style", "var(", "currentColor", "<script", "class='jp-"):
        assert banned not in html
    assert {name for name, _ in parsed.attrs} <= {"class", "style", "alt", "src", "title"}
    sources = [value for name, value in parsed.attrs if name == "src"]
    assert len(sources) == 1 and sources[0].startswith("data:image/svg+xml;base64,")
    # collapsible sections with the browser's marker, which turns when opened (classic's stylesheet
    # hides it unless the summary is a list item again), and no fixed ▸ that would not turn
    assert parsed.tags.count("details") == parsed.tags.count("summary") >= 1
    assert len(re.findall(r"<summary style='display:list-item[^']*'><b>", html)) == parsed.tags.count("summary")
    assert "▸" not in html
    # one width for the whole report; no fixed line height
    assert f"max-width:{REPORT_PX}px" in html.split(">")[0] and "line-height:1.4" in html.split(">")[0]


def contrast(one, other):
    """WCAG 2's contrast ratio of two #rrggbb colours."""
    def luminance(colour):
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    low, high = sorted((luminance(one), luminance(other)))
    return (high + 0.05) / (low + 0.05)


def test_chart_is_a_small_svg_with_its_text_set_on_its_own_background():
    """No grey reads at 4.5:1 on both a white and a #111 page: the chart's text comes with its
    background, whatever the frontend's theme; written by hand, a few kB, text as <text>."""
    svg = chart_svg(sample()).decode()
    assert svg.startswith("<svg") and len(svg) < 3_000 and "<image" not in svg  # nothing rasterized
    assert '<text' in svg and 'font-family="sans-serif"' in svg
    greys = ["#" + f"{level:02x}" * 3 for level in range(256)]
    assert max(min(contrast(grey, "#ffffff"), contrast(grey, "#111111")) for grey in greys) < 4.5  # none serves both...
    assert f'fill="{PANEL}"' in svg and f'fill="{MUTED}"' in svg and contrast(MUTED, PANEL) >= 4.5  # ...so its own
    assert f'width="{CHART_PX}"' in svg  # shows CHART_PX CSS pixels wide at natural size
    assert FONT_PX * 200 / CHART_PX >= 11  # text >= 11 px shown 200 px wide (classic Notebook's in a 360 px window)


def test_per_run_numbers_are_in_the_details_section_as_a_flow_that_wraps():
    """Every warm run, numbered, in entries that wrap to the output's width: no table to scroll."""
    result = sample(25)
    html = display.bundle(result, FEATURES)["text/html"]
    details = html[html.index("cudatime-section-details"):]
    [runs] = re.findall(r"<div class='cudatime-warm-runs'.*?</div></div>", details)
    assert "display:grid;grid-template-columns:repeat(auto-fill," in runs
    entries = re.findall(r"<span>(\d+): ([^<]+)</span>", runs)
    assert [int(number) for number, _ in entries] == list(range(1, 26)) and "<table" not in runs
    assert [time for _, time in entries] == [fmt(s) for s in result.samples]
    assert "title=" not in html.split("cudatime-section")[0]  # no tooltips for runs


def test_empty_columns_are_hidden():
    ok = CudaTimeResult(cold=Run(0.001, 0.002), warm=[Run(0.001, 0.001)])
    html = results_html(Results([Point(Task(params={"n": 1}), ok), Point(Task(params={"n": 2}), ok)]))
    assert "speed-up" not in html and "error" not in html
    html = results_html(Results([Point(Task(params={"n": 1}), ok), Point(Task(params={"n": 2}), None, "ValueError: boom")]))
    assert "<th" in html and ">error<" in html and "speed-up" not in html


def test_chart_is_log_scaled_when_the_cold_run_dwarfs():
    assert "device time</text>" in chart_svg(sample()).decode()  # cold 0.39 s vs median ~0.05 s: linear
    assert "device time (log)</text>" in chart_svg(sample(cold=Run(0.001, 20.0, 19.9, 0.1, 0.1))).decode()


def test_a_thousand_runs_show_the_cold_run_apart_and_the_median_in_a_small_report():
    """Past MANY_RUNS, a bar per run would let the runs after the cold one cover it: the cold run is
    its own marker beside the warm runs' histogram, and the median line is drawn over it."""
    html = display.bundle(sample(1000, cold=Run(0.001, 3.5e-3, 3.5e-3)), FEATURES)["text/html"]
    assert len(html.encode()) < 60_000
    svg = svg_of(html)
    groups = re.findall(r'<path id="(cold-run|warm-runs|warm-median)"', svg)
    assert groups.index("warm-runs") < groups.index("warm-median") and "cold-run" in groups
    assert "warm runs (1,000), as a histogram" in html and "warm median" in html
    assert 'id="cold-run"' not in svg_of(display.bundle(sample(MANY_RUNS - 2), FEATURES)["text/html"])  # a bar each


def test_no_figures_left_open_or_alive_after_a_hundred_charts():
    """Counting every object gc tracks is noisy (matplotlib fills caches); a figure kept alive is
    what a leak would keep, with all its artists: none may stay open or alive after its chart."""
    from matplotlib import _pylab_helpers
    from matplotlib.figure import Figure

    def figures():
        gc.collect()
        return sum(isinstance(o, Figure) for o in gc.get_objects())

    sweep = chart_samples.log_sweep()  # matplotlib draws a sweep's chart (the run chart is written by hand)
    results_html(sweep)
    before = figures()
    for _ in range(100):
        results_html(sweep)
    assert _pylab_helpers.Gcf.get_num_fig_managers() == 0
    assert figures() <= before


def test_an_echoed_result_shows_its_report_and_terminal_ipython_draws_no_chart(ip, monkeypatch):
    import ipython_cudatime.render.chart as chart

    drawn = []
    monkeypatch.setattr(chart, "chart_html", lambda result: drawn.append(result) or "")  # a spy
    run(ip, "r = %cudatime -q -o -n 2 1 + 1")
    cell = run(ip, "r")
    assert "CPU times:" in cell.stdout and "cold/warm:" in cell.stdout
    sweep = run(ip, "s = %cudatime -q -o -n 1 --sweep n=1,2 n\ns")
    assert "n=1" in sweep.stdout and "warm median" in sweep.stdout
    assert drawn == []  # terminal IPython asks for text/plain only


def test_a_bare_dash_o_shows_the_report_once_then_its_one_line_repr(ip):
    cell = run(ip, "%cudatime -o -n 2 1 + 1")
    assert len(cell.displayed) == 1 and cell.displayed[0].startswith("CPU times:")
    assert "<CudaTimeResult cold" in cell.stdout and "CPU times:" not in cell.stdout
    again = run(ip, "_")  # a later cell: the report, since it was not shown in this one
    assert "CPU times:" in again.stdout


def test_unloading_takes_the_reprs_away(ip):
    import ipython_cudatime

    r = ip.run_line_magic("cudatime", "-q -o -n 1 1")
    assert ip.display_formatter.format(r)[0]["text/plain"].startswith("CPU times:")
    ipython_cudatime.unload_ipython_extension(ip)
    try:
        assert ip.display_formatter.format(r)[0]["text/plain"] == repr(r)
    finally:
        ipython_cudatime.load_ipython_extension(ip)


# Terminal control sequences a label or a loaded field may hold: retitle, reset, clear the screen.
ESCAPES = "\x1b]0;pwned\x07 \x1bc \x1b[2J \x9b2J \r\x08 \u202e"


def raw_controls(text):
    """The characters of ``text`` a terminal would act on (a newline between lines is not one)."""
    return [c for c in text if not c.isprintable() and c != "\n"]


def test_control_characters_in_any_field_are_escaped_in_the_text_report():
    from ipython_cudatime.features.cold_causes.probes import Cause

    r = sample(device=f"cuda:0 {ESCAPES}", synchronized=[f"torch {ESCAPES}"], notes=[f"note {ESCAPES}"],
               records={"cold_causes": [Cause(f"cause {ESCAPES}", 0.1, f"detail {ESCAPES}")]})
    text = display.text(r, FEATURES)
    assert raw_controls(text) == []
    assert "cuda:0 \\x1b]0;pwned\\x07 \\x1bc \\x1b[2J \\x9b2J \\r\\x08 \\u202e" in text  # as repr writes them
    assert text.count("\\x1b]0;pwned") >= 5  # the device, what was synchronized, the note, the cause


def test_control_characters_in_loaded_labels_stay_out_of_the_terminal(ip, tmp_path):
    from ipython_cudatime.results.store import save

    path = tmp_path / "escapes.jsonl"
    timed = sample(3, task=Task("x", f"lab{ESCAPES}"))
    points = [Point(timed.task, timed), Point(Task("y", "ok"), None, f"Error: two\nlines{ESCAPES}")]
    save(points, str(path))
    run(ip, "%cudatime_compare --clear")
    cell = run(ip, f"%cudatime_compare --load {path}")
    [text] = cell.displayed
    assert cell.error is None and raw_controls(text) == [] and len(table(text)[1]) == 2
    assert "lab\\x1b]0;pwned\\x07" in text and "Error: two\\nlines" in text


def svg_of(html):
    [source] = re.findall(r"src='data:image/svg\+xml;base64,([^']+)'", html)
    return base64.b64decode(source).decode()


def test_mathtext_and_markup_in_sweep_values_and_labels_are_drawn_as_typed(ip, seams):
    """``$\\nosuch$`` would make matplotlib's mathtext raise after the whole sweep was measured."""
    import xml.etree.ElementTree as ElementTree

    seams(notebook=True)
    values = "'$\\\\nosuch$','<img src=x onerror=alert(1)>','$x^2$'"
    cell = run(ip, f"%%cudatime -n 1 -l $\\undefinedmacro$ --sweep s={values} --sweep n=1,2\nlen(s) * n")
    assert cell.error is None
    [data] = [out.data for out in cell.outputs]
    svg = svg_of(data["text/html"])
    elements = list(ElementTree.fromstring(svg).iter())  # well-formed: no user text broke out of its place
    assert {e.tag.rsplit("}", 1)[-1] for e in elements} <= {"svg", "metadata", "RDF", "Work", "format", "type",
                                                          "creator", "Agent", "title", "defs", "style", "g",
                                                          "path", "use", "clipPath", "rect", "image"}
    assert not [name for e in elements for name in e.attrib if name.lower().startswith("on")]
    assert "<img" not in svg  # the value is in matplotlib's escaped comments, or keyed under the chart
    assert "&lt;img src=x onerror=alert(1)&gt;" in data["text/html"] and "<img src=x" not in data["text/html"]
    run(ip, "%cudatime -n 1 -l $x^$ 1")
    compare = run(ip, "%cudatime_compare '$\\undefinedmacro$' '$x^$'")  # rows named by the labels
    assert compare.error is None and "spread and the cold run per row" in compare.outputs[0].data["text/html"]


def test_a_users_tex_setting_does_not_reach_our_charts():
    import matplotlib

    labelled = Results([Point(Task("x", f"${i}\\alpha$"), sample(3)) for i in range(2)])
    with matplotlib.rc_context({"text.usetex": True}):  # no TeX is installed here: it would raise
        assert svg_of(display.bundle(sample(), FEATURES)["text/html"]) and svg_of(display.bundle(labelled, FEATURES)["text/html"])


def test_a_report_stops_growing_past_what_the_chart_can_show():
    sizes = {runs: len(display.bundle(sample(runs), FEATURES)["text/html"]) for runs in (MANY_RUNS + 1, 20_000)}
    assert abs(sizes[20_000] - sizes[MANY_RUNS + 1]) < 5_000, sizes
    html = display.bundle(sample(20_000), FEATURES)["text/html"]
    assert "20,000 warm (device) runs" in html and "p99" in html


def test_too_many_rows_for_a_chart_leave_the_table_alone():
    from ipython_cudatime.render.comparison import CHART_ROWS

    many = Results([Point(Task("x", f"l{i}"), sample(3)) for i in range(CHART_ROWS + 1)])
    html = display.bundle(many, FEATURES)["text/html"]
    assert "<img" not in html and f"no chart: {CHART_ROWS + 1} rows are more than one chart can show" in html
    assert html.count("<tr>") == CHART_ROWS + 2


UNIT = re.compile(r"^(0|[\d.]+ (ns|µs|us|ms|s))$")


def _charts(html):
    """The SVG documents of every chart ``<img>`` in ``html``."""
    return [chart_samples.svg_of(src) for src in re.findall(r"src='(data:image/svg\+xml;base64,[^']+)'", html)]


def _report(obj):
    return display.bundle(obj, FEATURES)["text/html"]


def _compare():
    a, b = chart_samples.result(0.002, 0.3), chart_samples.result(0.0001, 0.05)
    return Results([Point(Task(label="numpy"), a), Point(Task(label="a much longer label for torch"), b)])


def test_every_time_axis_is_labelled_in_units_log_or_not():
    big = sample(cold=Run(0.001, 20.0, 19.9, 0.1, 0.1))
    reports = [sample(), big, chart_samples.cpu_only(), chart_samples.log_sweep(), chart_samples.categorical_sweep(),
               _compare()]
    logs = 0
    for obj in reports:
        [svg] = _charts(_report(obj))
        ticks = chart_samples.tick_labels(svg)["x" if obj is reports[-1] else "y"]  # a comparison's rows go down
        assert len(ticks) >= 2 and all(UNIT.match(label) for label in ticks), ticks
        logs += ticks[0] != "0"
    assert logs >= 3  # the big cold run, the log sweep and the comparison are log axes


def test_minor_ticks_and_labels_are_mid_tone_not_black():
    [svg] = _charts(_report(chart_samples.log_sweep()))
    assert "#000000" not in svg and f"fill: {MUTED}" in svg


def test_a_sweep_has_its_values_as_x_ticks():
    [svg] = _charts(_report(chart_samples.log_sweep()))
    # the swept values that fit side by side in a 270 px chart, the last one within its right edge
    assert chart_samples.tick_labels(svg)["x"] == ["256", "1024", "4096"]
    ok = CudaTimeResult(cold=Run(0.001, 0.002), warm=[Run(0.001, 0.001)])
    crowded = Results([Point(Task(params={"n": n}), ok) for n in range(1000, 1060)])  # 60 values on a linear axis
    [svg] = _charts(results_html(crowded))
    ticks = chart_samples.tick_labels(svg)["x"]
    assert 3 <= len(ticks) <= 12 and ticks[0] == "1000"  # a readable subset, never run together


def test_a_sweep_over_words_draws_categories_one_series_per_other_value_and_its_cold_runs(monkeypatch):
    from matplotlib.axes import Axes

    plotted = []
    original = Axes.plot
    monkeypatch.setattr(Axes, "plot", lambda self, *a, **kw: (plotted.append((a, kw)), original(self, *a, **kw))[1])
    sweep = chart_samples.categorical_sweep()
    html = _report(sweep)
    [svg] = _charts(html)
    assert chart_samples.tick_labels(svg)["x"] == ["view", "contiguous"]  # horizontal, whole
    assert len(plotted) == 4  # two series (way=...), each its warm medians and its cold runs
    colds = sorted(y for (xs, ys), kw in plotted if kw.get("markerfacecolor") == "none" for y in ys)
    assert colds == sorted(p.result.cold_time for p in sweep.points)
    legend = html[html.index("cudatime-legend"):]
    assert "way=&#x27;broadcast&#x27;" in legend and "way=&#x27;expand&#x27;" in legend and "cold run" in legend


def test_a_comparison_is_a_dot_plot_with_names_on_the_left_and_a_titled_time_axis():
    """Dots on a log axis, never bars from an arbitrary floor; every row named in full (wrapped),
    never a number keyed below, however long one name is."""
    long = "a label long enough to wrap onto a second line, or a third, and more"
    a, b = chart_samples.result(2.74e-6, 0.3), chart_samples.result(0.002, 0.05)
    html = _report(Results([Point(Task(label="short"), a), Point(Task(label=long), b)]))
    [svg] = _charts(html)
    names = chart_samples.tick_labels(svg)["y"]
    assert names[0] == "short" and names[1].count("\n") == 2 and names[1].endswith("…")
    assert "<!-- time per run (log) -->" in svg and "1: " not in html  # a titled axis, no key
    assert "its spread as a line" in html


def test_a_sweeps_lines_carry_their_spread_and_a_grid_reads_in_one_unit_of_five_digits_at_most():
    times = {("numpy", 256): 1.2e-6, ("torch", 256): 3.93e-7, ("numpy", 16384): 6.33e-4, ("torch", 16384): 1.86e-4}
    points = [Point(r.task, r) for r in (chart_samples.result(t, 2 * t, runs=6, params={"n": n, "lib": lib})
                                          for (lib, n), t in times.items())]  # 6 runs: each ratio has its interval
    report = display.bundle(Results(points), FEATURES)
    [svg] = _charts(report["text/html"])
    assert len(re.findall(r'<g id="FillBetweenPolyCollection_\d+"', svg)) == 2  # a band along each line
    assert "its spread a shaded band" in report["text/html"]
    title, rest = report["text/plain"].split("\n", 1)
    assert title == "warm median in µs, n down, lib across"  # not ns: 633,474 would be six digits
    assert table(rest)[1] == [["256", "1.19", "0.391 *"], ["16384", "630", "185 *"]]
    once = [Point(r.task, r) for r in (chart_samples.result(t, 2 * t, runs=1, params={"n": n}) for n, t in
                                       ((1, 1e-3), (2, 2e-3)))]
    assert "FillBetween" not in _charts(_report(Results(once)))[0]  # one run has no spread to draw


def test_long_category_labels_wrap_or_become_numbers_keyed_below():
    ok = CudaTimeResult(cold=Run(0.001, 0.002), warm=[Run(0.001, 0.001)])
    names = ["broadcast over the batch", "expand then contiguous"]  # 10 characters a line in a 270 px chart
    [svg] = _charts(results_html(Results([Point(Task(params={"way": n}), ok) for n in names])))
    ticks = chart_samples.tick_labels(svg)["x"]
    assert [" ".join(t.split()) for t in ticks] == names and any("\n" in t for t in ticks)  # wrapped, not cut
    many = [f"a label that is far too long to fit under its category {i}" for i in range(8)]
    html = results_html(Results([Point(Task(params={"way": n}), ok) for n in many]))
    assert chart_samples.tick_labels(_charts(html)[0])["x"] == [str(i) for i in range(1, 9)]
    assert all(f"<div>{i + 1}: {n}</div>" in html for i, n in enumerate(many))


def test_legends_are_below_the_chart_and_list_only_what_it_draws():
    cpu = _report(chart_samples.cpu_only())
    assert "device still working" not in cpu and "host (Python" not in cpu and "warm-up run" in cpu
    assert "device still working" in _report(sample())  # a GPU cell's bars have a device part
    for obj in (chart_samples.log_sweep(), _compare()):
        [svg] = _charts(_report(obj))
        assert 'id="legend_' not in svg  # no legend drawn over the data: it is HTML below
    assert _report(_compare()).count("cudatime-legend") == 1


def test_bar_labels_live_in_a_legend_below_not_in_the_segments():
    from ipython_cudatime.features.cold_causes.probe import Cause

    result = sample(records={"cold_causes": [Cause("JAX compilation", 0.0154, "compiled 1 function")]})
    html = _report(result)
    why = html[html.index("cudatime-section-why"):html.index("cudatime-section-details")]
    legend = why[why.index("cudatime-legend"):]
    assert "JAX compilation 15.4 ms" in legend and "unexplained" in legend and "warm work" in legend
    assert "overflow:hidden" not in html  # nothing is cut to fit


def test_tables_scroll_sideways_and_long_cells_wrap():
    html = _report(chart_samples.categorical_sweep())
    assert re.search(r"<div style='overflow-x:auto;max-width:100%'><table class='cudatime-table'", html)
    # wrapped at spaces, never inside a word to squeeze the column (anywhere would: one character a line)
    assert "overflow-wrap:break-word'>layout=&#x27;contiguous&#x27;, way=&#x27;broadcast&#x27;<" in html
    assert "anywhere" not in re.sub(r"<div class='cudatime-legend'[^>]*>", "", html)


def test_a_comparisons_table_may_use_the_outputs_width_beside_text_capped_as_in_any_report():
    """At 1280 px a 600 px frame kept the device column out of view beside 500 px of empty space."""
    html = _report(_compare())
    frame = html.split(">")[0]
    assert "display:inline-block;max-width:100%" in frame and f"max-width:{REPORT_PX}px" not in frame
    table_box = html.index("<table") - len("<div style='overflow-x:auto;max-width:100%'>")
    assert html[:table_box].endswith("</div>") and html[:table_box].rfind(f"<div style='max-width:{REPORT_PX}px'>") > 0
    assert html.count(f"<div style='max-width:{REPORT_PX}px'>") == 2  # the chart with its legend, and the notes


def test_the_same_chart_is_the_same_bytes():
    assert _report(chart_samples.log_sweep()) == _report(chart_samples.log_sweep())


def _stored(name, obj):
    """The report's HTML, each chart in it a reference to its own stored SVG file; then those SVGs,
    where this is the matplotlib that drew them (glyph paths change between its versions)."""
    import matplotlib

    html = _report(obj)
    svgs = _charts(html)
    files = [f"{name}.svg" if len(svgs) == 1 else f"{name}-{index}.svg" for index in range(len(svgs))]
    for file in files:
        html = re.sub(r"data:image/svg\+xml;base64,[^']+", f"[{file}]", html, count=1)
    assert_expected(html.replace("><", ">\n<"), name, ".html")
    for file, svg in zip(files, svgs):
        stored = FOLDER / file
        drawn = stored.read_text() if stored.exists() else ""  # the run chart, written by hand, names no matplotlib
        if "Matplotlib v" in drawn and f"Matplotlib v{matplotlib.__version__}," not in drawn:
            pytest.skip(f"{file} was drawn by another matplotlib version than {matplotlib.__version__}")
        assert_expected(svg.rstrip("\n"), file.removesuffix(".svg"), ".svg")


def test_stored_log_sweep():
    _stored("log_sweep", chart_samples.log_sweep())


def test_stored_categorical_sweep():
    _stored("categorical_sweep", chart_samples.categorical_sweep())


def test_stored_cpu_only_report():
    _stored("cpu_only", chart_samples.cpu_only())


def test_a_cell_that_ran_once_gets_a_line_not_a_chart_of_one_bar():
    html = display.bundle(sample(runs=0, warmup=[]), FEATURES)["text/html"]
    assert "<img" not in html and "no chart: the cell ran once" in html
    assert "<img" in display.bundle(sample(runs=1, warmup=[]), FEATURES)["text/html"]  # two runs: a chart
