"""Packaging promises: light import, load/reload/unload, never importing a framework."""

import subprocess
import sys

import pytest
from conftest import in_fresh_shell, run

HEAVY = ("torch", "matplotlib", "ipywidgets", "jax", "cupy", "IPython.core.magics")


def python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_is_light():
    loaded = python(f"import sys, ipython_cudatime; print([m for m in {HEAVY!r} if m in sys.modules])")
    assert loaded == "[]"


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


def test_works_with_cpu_only_torch(ip, monkeypatch):
    torch = pytest.importorskip("torch", reason="torch not installed (the Colab-like test environment has none)")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: covered by test_gpu.py")
    import ipython_cudatime.backends as backends

    # torch's backends only: other tests may have imported jax, whose backend would also be active
    monkeypatch.setattr(backends, "REGISTRY", [entry for entry in backends.REGISTRY if entry[0] == "torch"])
    ip.run_cell("import torch\na = torch.randn(64, 64)")
    r = ip.run_line_magic("cudatime", "-o -q -n 3 a @ a")
    assert r.synchronized == [] and r.clock == "wall"
    assert "no GPU clock" in str(r)
    assert not torch.cuda.is_initialized()
