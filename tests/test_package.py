"""Packaging promises: light import, load/reload/unload, never importing a framework."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import in_fresh_shell, run

import ipython_cudatime
from ipython_cudatime import report

HEAVY = ("torch", "matplotlib", "ipywidgets", "jax", "cupy", "IPython.core.magics")


def python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_is_light():
    loaded = python(f"import sys, ipython_cudatime; print([m for m in {HEAVY!r} if m in sys.modules])")
    assert loaded == "[]"


def test_import_loads_no_module_of_ours_until_a_name_is_used():
    """``import ipython_cudatime`` takes a couple of milliseconds (benchmarks/display.py times it):
    its modules, and numpy, json and statistics with them, load when a public name is first used."""
    code = ("import sys, ipython_cudatime\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ipython_cudatime.', 'numpy', 'typing'))))\n"
            "print(ipython_cudatime.Results.__name__, ipython_cudatime.load.__name__)")
    assert python(code).splitlines() == ["[]", "Results load"]


def test_magic_never_imports_a_framework_the_user_did_not():
    last = in_fresh_shell(
        "ip.run_cell('%cudatime -n 2 sum(range(10))')\n"
        "ip.run_cell('%%cudatime -n 2\\nx = [1] * 10')\n"
        "print([m for m in ('torch', 'jax', 'cupy', 'tensorflow', 'numba') if m in sys.modules])",
        prelude="import sys\n",
    )
    assert last == "[]"


def test_unload_and_reload(ip):
    ip.run_line_magic("unload_ext", "ipython_cudatime")
    assert "cudatime" not in ip.magics_manager.magics["line"]
    assert "cudatime" not in ip.magics_manager.magics["cell"]
    ip.run_line_magic("load_ext", "ipython_cudatime")
    ip.run_line_magic("reload_ext", "ipython_cudatime")
    assert run(ip, "%cudatime -n 1 7").value == 7
    assert run(ip, "%%cudatime -n 1\n8").value == 8


def test_works_with_cpu_only_torch(ip, seams):
    torch = pytest.importorskip("torch", reason="torch not installed")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: covered by test_gpu.py")
    from ipython_cudatime.backends import REGISTRY

    # torch's backends only: other tests may have imported jax, whose backend would also be active
    seams(registry=tuple(entry for entry in REGISTRY if entry[0] == "torch"))
    ip.run_cell("import torch\na = torch.randn(64, 64)")
    r = ip.run_line_magic("cudatime", "-o -q -n 3 a @ a")
    assert r.synchronized == [] and r.clock == "wall"
    assert "no GPU clock" in report(r)
    assert not torch.cuda.is_initialized()


def test_help_starts_with_a_three_line_summary_then_the_options(ip):
    """What ``%cudatime?`` shows: three lines that say what it is and how to call it, then the options."""
    shown = ip.object_inspect_text("%cudatime")
    doc = shown[shown.index("Docstring:") + len("Docstring:"):].strip("\n").splitlines()
    assert all(doc[:3]) and doc[3:5] == ["", "Options:"]
    assert "%cudatime [options] statement" in doc[2] and "%%cudatime" in doc[2]


ROOT = Path(__file__).resolve().parents[1]


def test_the_version_lives_in_one_place_and_the_changelog_names_it():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and ipython_cudatime.__version__ not in pyproject
    first_release = next(line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## "))
    assert first_release.split()[1] == ipython_cudatime.__version__


def lowest_python():
    """Python 3.10, the oldest supported, from pyenv or PATH (pyenv's shims may name one that is not set up)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10.*/bin/python3.10")))
    candidates.append(shutil.which("python3.10"))
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    pytest.skip("no Python 3.10 here (the oldest supported version): the fresh-venv install test needs it")


def lower_bounds():
    """``name==X`` for each ``name>=X`` in pyproject's dependencies."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [re.sub(r">=([^,]+).*", r"==\1", dependency) for dependency in dependencies]
    assert all("==" in pin for pin in pins), f"every dependency needs a lower bound: {dependencies}"
    return pins


MAGIC_ON_THE_CPU = """%load_ext ipython_cudatime
%cudatime -n 3 sum(range(1000))
r = %cudatime -o -q -n 3 sum(range(1000))
from ipython_cudatime import FEATURES
from ipython_cudatime.notebook.display import bundle
print("BUNDLE", sorted(bundle(r, FEATURES)))
s = %cudatime -o -q -n 2 --sweep n=2,3 --check [n] * n
print("SWEEP", len(s.points), "<img" in bundle(s, FEATURES)["text/html"])
import importlib.metadata, importlib.util, ipython_cudatime
print("TORCH", importlib.util.find_spec("torch") is not None)
print("VERSION", importlib.metadata.version("ipython_cudatime") == ipython_cudatime.__version__)
print("INSTALLED", "site-packages" in ipython_cudatime.__file__)
print("LICENSE", any(f.name == "LICENSE" for f in importlib.metadata.files("ipython_cudatime")))
"""


def built(dist):
    """The sdist and the wheel that ``make dist`` builds (``python -m build``: the wheel from the
    sdist), checked by ``twine check --strict`` as an index would check them."""
    for tool in ("build", "twine"):
        pytest.importorskip(tool, reason=f"{tool} not installed: the test extra brings it (pip install -e '.[test]')")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [sdist], [wheel] = dist.glob("*.tar.gz"), dist.glob("*.whl")
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return sdist, wheel


@pytest.mark.install
def test_the_built_wheel_installs_without_torch_and_gives_a_working_magic_with_the_lowest_dependencies(tmp_path):
    """What ``make dist`` builds, installed into a fresh Python 3.10 venv with each dependency at
    its lower bound and no torch: the magic times on the CPU in a real IPython shell, draws its chart
    (the static report), sweeps and checks. The sdist carries the LICENSE and the CHANGELOG, and the
    wheel the LICENSE."""
    python, pins = lowest_python(), lower_bounds()
    sdist, wheel = built(tmp_path / "dist")
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}  # the installed copy only
    venv = tmp_path / "venv"
    made = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a venv with {python}: {made.stderr.strip()}")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check"]
    installed = subprocess.run([*pip, str(wheel), *pins], capture_output=True, text=True, timeout=900, env=env)
    assert installed.returncode == 0, installed.stderr
    ran = subprocess.run([str(venv / "bin" / "ipython"), "--no-banner", "--colors=NoColor", "-c", MAGIC_ON_THE_CPU],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    out = ran.stdout
    assert ran.returncode == 0 and "Traceback" not in out, out + ran.stderr
    assert "warm     :" in out and "cpu" in out
    assert "BUNDLE ['text/html', 'text/plain']" in out  # the static report (widgets are for progress only)
    assert "SWEEP 2 True" in out and "TORCH False" in out and "VERSION True" in out and "LICENSE True" in out
    assert "INSTALLED True" in out
    with tarfile.open(sdist) as archive:
        names = {Path(name).name for name in archive.getnames()}
    assert {"LICENSE", "CHANGELOG.md", "README.md"} <= names
    with zipfile.ZipFile(wheel) as archive:
        assert any(name.endswith(".dist-info/licenses/LICENSE") for name in archive.namelist())


def test_no_module_but_the_magics_imports_ipython_at_load_time():
    """IPython 7.34's ``import IPython`` loads its whole shell, magics included: a module that
    ``import ipython_cudatime`` loads must reach IPython only inside functions, or not at all
    (a feature that cannot run says so with ``features.Unavailable``, which the magic shows)."""
    import ast
    import pathlib

    library = pathlib.Path(ipython_cudatime.__file__).parent
    top_level = []
    for path in library.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            names = [node.module] if isinstance(node, ast.ImportFrom) else [
                alias.name for alias in getattr(node, "names", [])] if isinstance(node, ast.Import) else []
            if any((name or "").split(".")[0] == "IPython" for name in names):
                top_level.append(path.relative_to(library).as_posix())
    assert sorted(set(top_level)) == ["notebook/magics.py"]
