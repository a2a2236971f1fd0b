"""The benchmarks run and print their figures (the figures themselves are not checked)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script, expected, needs_torch", [
    ("overhead.py", "goal: at most 15 µs of overhead per run", False),
    ("display.py", "goal: bundle ready within 150 ms", False),
    ("sizes.py", "-result comparison renders in under 2 s", False),
    ("progress.py", "their share of the measured time", False),
    ("explain.py", "cold-cause checks per call", True),
    ("roofline.py", "peak-memory reading per call", True),
    ("cpu_context.py", "CPU-context reading per %cudatime call", False),
])
def test_benchmark_prints_figures(tmp_path, script, expected, needs_torch):
    if needs_torch:
        pytest.importorskip("torch", reason="this benchmark times torch code; torch is not installed here")
    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert out.exists()
