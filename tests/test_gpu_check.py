"""scripts/gpu-check, its strict mode and the accuracy table, checked here without a GPU.

The CPU path (--quick) runs the same steps as the GPU machine, with small sizes; device
mode must refuse to report success here, where there is no CUDA device. The whole recipe
(wheels, a Python 3.12 stand-in for the machine's image, no registry) is `make gpu-dry-run`,
which is too slow for every test run.
"""

import ast
import importlib.util
import json
import os
import runpy
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="the check times torch code; torch is not installed here")


def has_cuda():
    return HAS_TORCH and __import__("torch").cuda.is_available()


def gpu_check(tmp_path, *args):
    env = {**os.environ, "OUT": str(tmp_path)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu-check"), *args], capture_output=True,
                          text=True, timeout=600, env=env, cwd=ROOT)


@needs_torch
def test_cpu_path_writes_every_step_and_returns_two_files(tmp_path):
    # The notebooks step is left out: tests/test_notebook.py executes the notebooks already.
    done = gpu_check(tmp_path, "--quick", "--only", "env,tests,puzzle,accuracy,features")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gpu-check.tar.gz", "gpu-results.md"]
    report = (tmp_path / "gpu-results.md").read_text()
    for step in ("env", "tests", "puzzle", "accuracy", "features"):
        assert f"| {step} | passed |" in report
    assert "| notebooks |" not in report
    assert "| seed 002 loop |" in report and "%time`, first product" in report and "dispatch-bound" in report
    assert "### --trace: the loop's Chrome trace" in report and "roofline : one extra counting run" in report
    assert "peak-memory reading per call" in report  # benchmarks/roofline.py, run by the features step
    with tarfile.open(tmp_path / "gpu-check.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"gpu-check/accuracy.json", "gpu-check/puzzle.json", "gpu-check/tests.log",
            "gpu-check/traces/loop.json.gz"} <= names


@needs_torch
@pytest.mark.skipif(has_cuda(), reason="this machine has CUDA: device mode would not refuse")
def test_device_mode_without_cuda_stops_at_once_in_one_line(tmp_path):
    done = gpu_check(tmp_path)
    assert done.returncode != 0
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1  # no step ran: one line says why
    assert "CUDA" in done.stderr and "--quick" in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gpu-results.md"]
    assert done.stderr.strip() in (tmp_path / "gpu-results.md").read_text()


def check_module():
    """scripts/gpu-check's globals (a script without .py: loaded by path, its main not run)."""
    return runpy.run_path(str(ROOT / "scripts" / "gpu-check"), run_name="gpu_check")


def test_device_mode_runs_the_gpu_tests_strictly():
    check = check_module()
    tests = next(step for step in check["STEPS"] if step.name == "tests")
    assert "--strict-gpu" in check["argv"](tests, ROOT, quick=False)
    assert "--strict-gpu" not in check["argv"](tests, ROOT, quick=True)


GPU_DOC = ROOT / "docs" / "gpu.md"


def budget_table():
    """docs/gpu.md's table of steps: {step: timeout in seconds}."""
    rows = [line.split("|")[1:-1] for line in GPU_DOC.read_text().splitlines() if line.startswith("| ")]
    return {cells[0].strip(): int(cells[-1].strip().rstrip(" s")) for cells in rows
            if len(cells) == 4 and cells[-1].strip().endswith(" s")}


def test_the_steps_minimums_are_the_docs_table_and_leave_time_for_reruns():
    check = check_module()
    steps = {step.name: step.timeout for step in check["STEPS"]}
    assert list(steps) == ["env", "tests", "puzzle", "accuracy", "features", "notebooks"]
    assert budget_table() == steps
    assert sum(steps.values()) < check["TOTAL_SECONDS"]  # the rest goes to slower steps and the reruns
    assert "--only" not in (ROOT / "scripts" / "device-command").read_text()  # the dry run and the device run all six


def steps_here(check, *specs):
    """Steps of this test's own: (name, minimum seconds, Python code run with the work folder as argv[1])."""
    return [check["Step"](name, name, minimum, ("-c", code, "{work}")) for name, minimum, code in specs]


FAILS_ONCE = ("import pathlib, sys; seen = pathlib.Path(sys.argv[1]) / 'seen'; first = not seen.exists(); "
              "seen.touch(); print('first attempt' if first else 'second attempt'); sys.exit(1 if first else 0)")


def test_a_step_made_to_fail_once_is_rerun_within_the_same_call(tmp_path):
    check = check_module()
    (tmp_path / "work").mkdir()
    steps = steps_here(check, ("flaky", 5, FAILS_ONCE), ("after", 5, "pass"))
    flaky, after = check["run_steps"](steps, tmp_path / "work", tmp_path, "a test", quick=False, cap=120)
    assert flaky.passed and flaky.first.status == "FAILED (exit 1)" and after.passed and after.first is None
    report = (tmp_path / "gpu-results.md").read_text()
    assert "| flaky | passed on the rerun (first: FAILED (exit 1)) |" in report
    assert (tmp_path / "work" / "flaky.log").read_text().endswith("first attempt\n")
    assert (tmp_path / "work" / "flaky.rerun.log").read_text().endswith("second attempt\n")


def test_an_unused_second_goes_to_a_later_step(tmp_path):
    check = check_module()
    (tmp_path / "work").mkdir()
    steps = steps_here(check, ("early", 5, "pass"), ("late", 5, "pass"))
    early, late = check["run_steps"](steps, tmp_path / "work", tmp_path, "a test", quick=False, cap=120)
    assert early.limit <= 120 - 5  # the late step's minimum is kept for it...
    assert late.limit >= 120 - early.seconds - 1 > 5  # ...and it gets what the early one left, not its own 5 s


def test_a_failed_step_is_not_rerun_without_its_minimum_left(tmp_path):
    check = check_module()
    (tmp_path / "work").mkdir()
    steps = steps_here(check, ("broken", 100, "raise SystemExit(3)"))
    [broken] = check["run_steps"](steps, tmp_path / "work", tmp_path, "a test", quick=False, cap=100)
    assert broken.status == "FAILED (exit 3)" and broken.first is None  # under its 100 s were left after it


def test_docs_give_the_one_device_command_word_for_word():
    command = (ROOT / "scripts" / "device-command").read_text().strip()
    doc = GPU_DOC.read_text()
    assert f'run(command="{command}",\n           carry=[".whl"], timeout_s=480)' in doc
    assert "--only" not in doc.split("## The time budget", 1)[0]  # one call: no rerun call to make
    assert "[docs/gpu.md](docs/gpu.md)" in (ROOT / "README.md").read_text()


def makefile_value(name):
    line = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith(f"{name} :="))
    return line.split(":=", 1)[1].split()


def device_packages():
    """docs/gpu.md's list of the image's packages: {name: version or None}."""
    text = GPU_DOC.read_text()
    listed = text.split("where one was read:", 1)[1].split(".\n", 1)[0]
    packages = {}
    for item in " ".join(listed.split()).split(", "):
        name, _, version = item.partition(" ")
        packages[name.lower()] = version or None
    return packages


def requirement(spec):
    name, _, version = spec.partition("==")
    return name.lower().replace("_", "-"), version or None


def test_the_stand_in_image_is_the_device_image_as_far_as_cpu_wheels_go():
    image = makefile_value("GPU_IMAGE")
    assert f"    GPU_IMAGE := {' '.join(image)}\n" in GPU_DOC.read_text()  # the docs quote the one list
    device = device_packages()
    assert len(device) > 150 and device["torch"] == "2.11.0"
    for name, version in map(requirement, image):
        assert name in device, f"{name} is in the stand-in, not on the GPU machine"
        assert version is None or device[name] is None or version == device[name], name
    names = {requirement(spec)[0] for spec in image}
    assert {"torch", "jax", "numpy", "matplotlib", "pandas", "pytest"} <= names
    for absent in ("tensorflow", "tensorflow-cpu", "ipython", "ipykernel", "jupyter-client", "nbclient"):
        assert absent not in device and absent not in names


def test_the_wheels_that_travel_are_what_the_device_lacks():
    script = (ROOT / "scripts" / "gpu-wheels").read_text()
    needed = script.split("NEEDED=(", 1)[1].split(")", 1)[0].split()
    device = device_packages()
    assert needed and all(requirement(name)[0] not in device for name in needed)


SKIPPING = """\
import pytest

@pytest.mark.gpu
def test_needs_a_gpu():
    pytest.skip("no device")

@pytest.mark.gpu
@pytest.mark.multi_gpu
def test_needs_two():
    pytest.skip("one device")

def test_not_gpu():
    pytest.skip("unrelated")
"""


@pytest.mark.parametrize("strict, code, summary", [
    (True, 1, "1 failed, 2 skipped"),
    (False, 0, "3 skipped"),
])
def test_strict_gpu_fails_a_skipped_gpu_test_only(tmp_path, strict, code, summary):
    (tmp_path / "test_skips.py").write_text(SKIPPING)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    multi_gpu: y\n")
    args = ["-p", "strict_gpu", "-p", "no:cacheprovider", "-q", str(tmp_path)] + (["--strict-gpu"] if strict else [])
    done = subprocess.run([sys.executable, "-m", "pytest", *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT / "tests")})
    assert done.returncode == code, done.stdout
    assert summary in done.stdout


RAISING_HARNESS = """\
import sys
sys.path.insert(0, "benchmarks")
import accuracy

def broken(fn):
    raise RuntimeError("the harness broke")

sys.exit(accuracy.main(sys.argv[1:], extra_harnesses={"broken harness": ("wall", broken)}))
"""


@needs_torch
def test_accuracy_table_is_written_when_a_harness_raises(tmp_path):
    table, figures = tmp_path / "accuracy.md", tmp_path / "accuracy.json"
    done = subprocess.run([sys.executable, "-c", RAISING_HARNESS, "--quick", "--markdown", str(table),
                           "--json", str(figures)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 1, done.stderr  # a failed harness fails the step, after the table is written
    rows = [line for line in table.read_text().splitlines() if line.startswith("| ") and "GEMM" in line
            or "seed 002 loop" in line]
    assert len(rows) == 2
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[-2] == "error: RuntimeError: the harness broke"  # the broken harness's column
        assert cells[2].endswith("(1.00×)")  # %cudatime's own cell still has its time
    data = json.loads(figures.read_text())
    assert all(row["times"]["broken harness"] == {"error": "RuntimeError: the harness broke"} for row in data["rows"])


def test_readme_and_docs_agree_on_whether_a_gpu_run_exists():
    """docs/gpu-results.md is a real device run's gpu-results.md, or absent, and README says which."""
    readme = (ROOT / "README.md").read_text()
    results = ROOT / "docs" / "gpu-results.md"
    if not results.exists():
        assert "GPU figures: not yet measured on a GPU" in readme
        return
    text = results.read_text()
    assert "`scripts/gpu-check` (device mode)" in text and "| env | passed |" in text
    assert "not yet measured on a GPU" not in readme and "docs/gpu-results.md" in readme


def unguarded_imports(source):
    """The top-level modules that ``source`` imports outside a ``try`` or an ``if``."""
    found = set()

    def visit(node, guarded):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import) and not guarded:
                found.update(alias.name.partition(".")[0] for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and not guarded and child.level == 0:
                found.add(child.module.partition(".")[0])
            visit(child, guarded or isinstance(child, (ast.Try, ast.If, ast.FunctionDef)))

    visit(ast.parse(source), False)
    return found


def test_the_notebooks_import_only_what_the_gpu_machine_has_or_guard_it():
    """Notebook 02 imported TensorFlow, which the GPU machine lacks, and stopped the notebooks step."""
    carried = (ROOT / "scripts" / "gpu-wheels").read_text().split("NEEDED=(", 1)[1].split(")", 1)[0].split()
    there = {requirement(name)[0] for name in [*device_packages(), *carried, "ipython_cudatime"]}
    for path in sorted((ROOT / "notebooks" / "src").glob("*.py")):
        missing = {name for name in unguarded_imports(path.read_text())
                   if name not in sys.stdlib_module_names and requirement(name)[0] not in there}
        assert not missing, f"{path.name} imports {sorted(missing)} unguarded; the GPU machine has none"


def test_the_roofline_check_fails_a_fraction_above_the_peak():
    """A clock that saw only the launch gives fractions far above 1: the check must fail them. The
    record here is a stand-in holding only the figure the check reads."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from types import SimpleNamespace

    from common import fraction_of_peak

    above = fraction_of_peak(SimpleNamespace(fraction_of_peak=3.0), floor=0.5)
    assert not above.ok and above.line() == "FAIL: fraction of the peak: expected 0.5 to 1, saw 3"
    assert fraction_of_peak(SimpleNamespace(fraction_of_peak=0.8), floor=0.5).ok
    assert not fraction_of_peak(None, floor=0.5).ok  # no roofline at all is no pass either


@needs_torch
def test_an_absent_harness_fails_the_accuracy_step_in_device_mode(monkeypatch):
    """triton not importable on the GPU machine is a broken install: the step fails; on the CPU,
    where both GPU harnesses are absent by design, it does not."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import accuracy

    for name in ("triton", "triton.testing"):  # importing them raises ImportError, loaded or not
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(accuracy, "CUDA", True)
    harnesses = accuracy.import_harnesses()
    assert harnesses["triton do_bench"][1].startswith("absent: ModuleNotFoundError")
    times = {"%cudatime": {"seconds": 1e-3}, "triton do_bench": {"absent": harnesses["triton do_bench"][1]}}
    figures = {"cuda": True, "rows": [{"workload": "GEMM", "times": times, "band": "pass (±5%)"}]}
    assert accuracy.failed(figures)
    assert not accuracy.failed({**figures, "cuda": False})


def test_nvidia_smi_is_limited_within_the_env_steps_minimum():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import environment

    env = next(step for step in check_module()["STEPS"] if step.name == "env")
    assert environment.NVIDIA_SMI_SECONDS <= env.timeout / 2  # half the step left for torch and the device


def test_a_clock_bound_reference_is_scaled_to_the_clock_or_set_aside():
    """torch.cuda._sleep spins a number of SM cycles: timed at 1980 MHz and compared at 1755 MHz it
    lasts 1980/1755 times longer; where the clock moved within a band, there is no fair figure."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import clock_moved, clock_scaled

    assert clock_scaled(1e-3, (1980, 1980), (1755, 1755)) == pytest.approx(1e-3 * 1980 / 1755)
    assert clock_scaled(1e-3, (345, 1980), (1980, 1980)) is None  # the reference band saw the clock ramp
    assert clock_scaled(1e-3, (None, None), (1980, 1980)) == 1e-3  # no NVML: as measured
    assert clock_moved(1980, 1800) and not clock_moved(1980, 1950) and not clock_moved(None, 1980)


@needs_torch
def test_the_ceilings_are_checked_against_the_datasheet_and_ready_for_the_peak_table():
    """Figures written here (as a device run would record them) for an H200: a ceiling above the
    datasheet's peak fails, one within [0.5, 1] passes, and the line for peaks.CEILINGS is code."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import ceilings

    from ipython_cudatime.features.roofline.peaks import Ceiling

    figures = {"device": "NVIDIA H200", "dtype": "bf16", "flops": 790e12, "bandwidth": 4.3e12, "date": "2026-12-02"}
    assert all(check.ok for check in ceilings.checks(figures))
    above = ceilings.checks({**figures, "flops": 3 * 989.5e12})
    assert not above[0].ok and above[0].line().startswith("FAIL: bf16 GEMM ceiling / the datasheet's peak: "
                                                          "expected 0.5 to 1, saw 3")
    entry = eval(ceilings.peaks_line(figures).rstrip(","), {"Ceiling": Ceiling})
    assert entry == Ceiling(("h200",), {"bf16": 7.9e14}, 4.3e12, "docs/gpu-results.md, 2026-12-02")


def test_a_step_over_its_share_of_the_limit_fails_the_dry_run(tmp_path):
    """The dry run passes --max-share 0.7: a step that took more than 70% of its limit here would
    leave too little room on the device. Outcomes written here, with their seconds."""
    check = check_module()
    step = check["Step"]("notebooks", "notebooks", 100, ())
    rerun = check["Outcome"](step, "passed", 20.0, 100, first=check["Outcome"](step, "FAILED (exit 1)", 80.0, 100))
    assert check["over_share"]([rerun], {"notebooks": 100}, 0.7) == [
        "notebooks used 80 s, over 70% of its 100 s limit"]
    assert check["over_share"]([check["Outcome"](step, "passed", 69.0, 100)], {"notebooks": 100}, 0.7) == []
    assert "--max-share 0.7" in (ROOT / "scripts" / "gpu-dry-run").read_text()
    table = check["share_table"]([rerun], {"notebooks": 100}, 0.7)  # what the check read, in the results
    assert table.startswith("## Share of each step's limit (at most 70%)") and "| notebooks | 80.0 | 100 | 80% |" in table
