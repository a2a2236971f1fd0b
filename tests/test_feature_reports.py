"""Every feature's words in every view, from a saved file: two results that hold a record of each
feature (cold-run causes, --profile from a recorded A100 trace, --roofline, peak device memory),
written by ``--save`` (schema 1) before the features moved into ``features/``. Their text report,
HTML report and comparison must stay byte for byte what ``tests/expected/`` holds: the words of a
feature do not change when its code moves. Recorded data (a stand-in for a GPU run): the trace is
``tests/data/a100_simple_add.json.gz``; the other figures were written by hand."""

import base64
import pathlib
import re

import matplotlib
from expected_text import FOLDER, assert_expected

import ipython_cudatime
from ipython_cudatime.notebook.display import bundle
from ipython_cudatime.features import FEATURES

SAVED = pathlib.Path(__file__).parent / "data" / "features.jsonl"


IMAGE = re.compile(r"data:image/svg\+xml;base64,([^']+)")


def _charts(html):
    return [base64.b64decode(found).decode() for found in IMAGE.findall(html)]


def _matplotlib_charts_named(html):
    """``html`` with each chart matplotlib drew replaced by its name: glyph paths change between
    matplotlib versions, so another version's bytes are not compared (the hand-drawn roofline stays)."""
    def name(match):
        svg = base64.b64decode(match.group(1)).decode()
        return "[a matplotlib chart]" if "<dc:title>Matplotlib v" in svg else match.group(0)

    return IMAGE.sub(name, html)


def assert_same_html(html, name):
    """The HTML report as stored: byte for byte under the matplotlib that drew the stored file, and
    with its matplotlib charts named, not compared, under another."""
    stored = FOLDER / f"{name}.html"
    drawn_here = f"Matplotlib v{matplotlib.__version__},"
    if stored.exists() and any("Matplotlib v" in svg and drawn_here not in svg for svg in _charts(stored.read_text())):
        assert _matplotlib_charts_named(html) == _matplotlib_charts_named(stored.read_text().rstrip("\n"))
        return
    assert_expected(html, name, ".html")


def _loaded():
    results, problems = ipython_cudatime.load([SAVED])
    assert problems == []
    return results


def test_every_feature_reads_back_from_a_saved_line():
    first = _loaded().points[0].result
    assert [cause.name for cause in first.cold_causes][:2] == ["CUDA context created", "memory pool grew"]
    assert first.profile.kernel_count > 0 and first.roofline.bound == "compute"
    assert first.memory.cold_peak == 96 << 20


def test_a_result_with_every_feature_reads_the_same_after_the_move():
    first = _loaded().points[0].result
    assert_expected(ipython_cudatime.report(first), "features_report")
    assert_same_html(bundle(first, FEATURES)["text/html"], "features_report")


def test_a_comparison_with_rates_reads_the_same_after_the_move():
    results = _loaded()
    assert_expected(ipython_cudatime.report(results), "features_comparison")
    assert_same_html(bundle(results, FEATURES)["text/html"], "features_comparison")
