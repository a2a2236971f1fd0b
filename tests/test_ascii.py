"""Plain-ASCII output: where stdout cannot encode µ, ×, ≥ or ±, reports print us, x, >= and +/-
(as IPython's own ``%time`` prints ``us``)."""

import io
import os
import subprocess
import sys

import pytest

from ipython_cudatime.units import format_seconds, plain, ratio_text, symbol


def stdout_with(monkeypatch, encoding):
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding=encoding))


@pytest.mark.parametrize("encoding, expected", [
    ("utf-8", ("5 µs", "2.0×", "≥", "3 µs ± 1 µs")),
    ("ascii", ("5 us", "2.0x", ">=", "3 us +/- 1 us")),
    ("cp1252", ("5 µs", "2.0×", ">=", "3 µs ± 1 µs")),  # a Windows console: µ, × and ± but no ≥
])
def test_symbols_follow_what_stdout_can_encode(monkeypatch, encoding, expected):
    stdout_with(monkeypatch, encoding)
    assert (format_seconds(5e-6), ratio_text(2.0), symbol("≥"), plain("3 µs ± 1 µs")) == expected


def test_the_noise_warnings_separator_and_the_intervals_dash_have_ascii_stand_ins(monkeypatch):
    stdout_with(monkeypatch, "ascii")
    assert plain("95% CI 1.2–2.5 ms) · fix: ±5%") == "95% CI 1.2-2.5 ms) - fix: +/-5%"


def test_other_characters_stdout_cannot_write_become_question_marks(monkeypatch):
    stdout_with(monkeypatch, "ascii")
    assert plain("label café: 3 µs") == "label caf?: 3 us"
    stdout_with(monkeypatch, "cp1252")
    assert plain("label 内核: 3 µs ≥ 1 µs") == "label ??: 3 µs >= 1 µs"


def test_a_stream_without_an_encoding_keeps_the_symbols(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # %%capture: it stores any text
    assert format_seconds(5e-6) == "5 µs"


def test_terminal_ipython_with_an_ascii_stdout_prints_every_report():
    """A real terminal IPython whose stdout is ASCII: without the fallback, printing µ raises."""
    cells = "\n".join([
        "%load_ext ipython_cudatime",
        "%cudatime -n 3 sum(range(10))",
        "%cudatime -q -n 2 -l slow sum(range(30000))",
        "%cudatime -q -n 2 -l fast sum(range(10))",
        "%cudatime_compare slow fast",
        "%cudatime -n 1 --sweep n=10,20 sum(range(n))",
        "%cudatime -n -1 1",
    ])
    done = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor", "-c", cells],
                          capture_output=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    out = done.stdout.decode("ascii") + done.stderr.decode("ascii")  # raises if anything else came out
    assert "UnicodeEncodeError" not in out
    assert "warm" in out and " us" in out  # the report, with times in us
    assert "1.00x" in out  # %cudatime_compare's "vs first"
    assert "n=20" in out  # the sweep's table
    assert "expects a number >= 0" in out  # a UsageError
