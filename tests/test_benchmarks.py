"""The benchmarks run and print their figures (the figures themselves are not checked)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_overhead_benchmark_prints_figures(tmp_path):
    out = tmp_path / "overhead.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "overhead.py"), "--quick", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "goal: at most 15 µs of overhead per run" in done.stdout
    assert out.exists()


def test_display_benchmark_prints_figures(tmp_path):
    out = tmp_path / "display.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "display.py"), "--quick", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "goal: bundle ready within 150 ms" in done.stdout
    assert out.exists()


def test_explain_benchmark_prints_figures(tmp_path):
    pytest.importorskip("torch", reason="the explain benchmark times torch code; torch is not installed here")
    out = tmp_path / "explain.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "explain.py"), "--quick", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "cold-cause checks per call" in done.stdout and "with -p" in done.stdout
    assert out.exists()
