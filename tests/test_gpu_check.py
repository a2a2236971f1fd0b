"""scripts/gpu-check's CPU path: the same script the device machine runs, with small sizes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_cpu_path_writes_its_results(tmp_path):
    pytest.importorskip("torch", reason="the accuracy benchmark times torch code; torch is not installed here")
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    done = subprocess.run([str(ROOT / "scripts" / "gpu-check"), "--quick"], capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "seed 000 puzzle" in done.stdout
    assert "peak-memory reading per call" in done.stdout
    figures = json.loads((tmp_path / "accuracy.json").read_text())
    assert [row["workload"] for row in figures["rows"]] == [
        "bf16 GEMM", "memory-bound copy", "tiny elementwise", "seed 002 loop"]
    assert all(row["cudatime"] > 0 and row["torch Timer"] > 0 for row in figures["rows"])
    report = (tmp_path / "gpu-results.md").read_text()
    assert report.startswith("# GPU results") and "| seed 002 loop |" in report
    tests = (tmp_path / "gpu-tests.txt").read_text()
    assert "skipped" in tests or "passed" in tests
