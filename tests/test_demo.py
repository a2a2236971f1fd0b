"""`make demo` tells the project's story: demo/demo.ipy, run by terminal IPython, shows the trap,
a named cold-run cause, a verdict and a checked sweep.

The demo runs in a fresh terminal IPython (``ipython -c "%run demo/demo.ipy"``: the same
``safe_execfile_ipy`` that ``ipython demo/demo.ipy`` uses), then prints the result objects the
demo kept with ``-v``. The facts are read from those objects, not from the report's wording.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FACTS = """
import json
from ipython_cudatime.features import FEATURES
from ipython_cudatime.render.report import Reading
print("DEMO-FACTS " + json.dumps({
    "trap": {"host": trap.cold.host, "wall": trap.cold.wall,
             "kinds": [f.kind for f in Reading.of(trap, FEATURES).findings]},
    "cold": {"median": cold.median, "cold": cold.cold_time,
             "causes": [[c.name, c.seconds] for c in cold.cold_causes]},
    "loop": {"count": loop.profile.kernel_count, "verdict": loop.profile.verdict},
    "mm": {"count": mm.profile.kernel_count},
    "sweep": {"points": [[p.params, p.result is not None] for p in sweep.points],
              "checked": sweep.check is not None and sweep.check.ok},
}))
"""

SECTIONS = ("1. The trap", "2. The cold run", "3. The verdict", "4. A comparison")


@pytest.fixture(scope="module")
def demo():
    torch = pytest.importorskip("torch", reason="the demo times torch code; torch is not installed here")
    if not torch.cuda.is_available():
        pytest.importorskip("jax", reason="without a GPU the demo shows the trap with JAX, which is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor", "-c", "%run demo/demo.ipy\n" + FACTS],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    assert done.returncode == 0 and "Traceback" not in done.stdout, done.stdout + done.stderr
    [facts] = [line for line in done.stdout.splitlines() if line.startswith("DEMO-FACTS ")]
    return done.stdout, json.loads(facts.removeprefix("DEMO-FACTS "))


def test_demo_prints_four_sections_with_the_commands_they_run(demo):
    text, _ = demo
    positions = [text.index(f"=== {title}") for title in SECTIONS]
    assert positions == sorted(positions)
    assert text.count("\n>>> %") >= 5  # each command is shown before its output


def test_the_trap_host_well_below_wall_and_the_sentence_for_it(demo):
    trap = demo[1]["trap"]
    assert trap["host"] * 4 < trap["wall"]
    assert "async" in trap["kinds"]  # "%time alone would have printed ..."


def test_the_cold_run_names_compilation_with_its_seconds(demo):
    cold = demo[1]["cold"]
    compiled = [seconds for name, seconds in cold["causes"] if "compile" in name]
    assert compiled and compiled[0] > 0
    assert cold["median"] > 0 and cold["cold"] > cold["median"]


def test_the_loop_gets_a_dispatch_or_launch_bound_verdict(demo):
    facts = demo[1]
    assert facts["loop"]["verdict"].startswith(("dispatch-bound", "launch-bound"))
    assert facts["loop"]["count"] > 100 * facts["mm"]["count"]


def test_the_sweep_covers_numpy_and_torch_at_two_sizes_and_agrees(demo):
    text, facts = demo
    points = facts["sweep"]["points"]
    assert sorted((p["n"], p["lib"]) for p, done in points if done) == [
        (128, "numpy"), (128, "torch"), (512, "numpy"), (512, "torch")]
    assert facts["sweep"]["checked"]
    assert "check:" in text


def test_the_last_line_points_where_every_option_is(demo):
    """Its files exist; docs/reference.md lists every option (tests/test_docs.py checks that)."""
    last = demo[0].split("\nMore: ", 1)[1].splitlines()[0]
    assert "docs/reference.md (every option)" in last and "%cudatime?" in last
    assert all((ROOT / path).exists() for path in ("docs/reference.md", "notebooks"))


def test_make_demo_says_what_it_installs_then_installs_only_that_with_pip_progress():
    """From a fresh clone (``make -B``: as if nothing were installed), read without running it."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed here")
    env = {key: value for key, value in os.environ.items() if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    done = subprocess.run(["make", "--no-print-directory", "-n", "-B", "demo"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env=env)  # as typed in a shell, not under `make test`
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    [install] = [index for index, line in enumerate(lines) if "pip install" in line]
    said = " ".join(lines[:install])
    assert "torch" in said and "JAX" in said and "GB" in said and "minute" in said  # what, how much, how long
    assert "'.[demo]'" in lines[install] and " -q" not in lines[install]  # pip's progress shows
    assert not any(word in lines[install] for word in ("tensorflow", ".[test]", "pytest"))
    assert lines[-1].endswith("demo/demo.ipy")
