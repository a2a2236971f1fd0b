"""The library passes its linters: ruff's checks and mypy, with the settings in pyproject.toml.

Each runs through the current interpreter's environment, so that both of ``make test``'s
environments (this one and the Colab-like one, each installed with ``.[test]``) check the
library against the IPython, matplotlib and NumPy they hold.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def passes(tool, *args):
    """Run ``python -m tool *args`` from the repository's root; fail with its output unless it passes."""
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} not installed: the test extra brings it (pip install -e '.[test]')")
    done = subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{tool} {' '.join(args)} failed:\n{done.stdout}{done.stderr}"


def test_ruff_passes_over_the_library():
    passes("ruff", "check", "ipython_cudatime")


def test_mypy_passes_over_the_library_with_every_check():
    """``--strict`` on the command line too, so that the settings cannot quietly lose it."""
    passes("mypy", "--strict")
