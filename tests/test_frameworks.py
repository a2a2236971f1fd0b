"""Every framework a notebook user times, without importing any of them ourselves.

JAX's CPU build dispatches asynchronously for real: it is the async trap on a
machine with no GPU. CuPy and Numba have only GPU paths (tests in test_gpu.py).
"""

import subprocess
import sys
import time

import pytest
from conftest import in_fresh_shell, run

import ipython_cudatime.backends as backends

SIZE = 1500  # a jnp.dot of this size takes tens of ms on the CPU: far above dispatch time


@pytest.fixture
def jax_ns(ip):
    jax = pytest.importorskip("jax", reason="jax not installed (the Colab-like test environment has none)")
    ip.run_cell(f"import jax, jax.numpy as jnp\nx = jnp.ones(({SIZE}, {SIZE}))\njnp.dot(x, x).block_until_ready()")
    return ip, jax


def reference_seconds(jax, x, repeat=5):
    """What a careful user measures by hand: dispatch, then block_until_ready."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.numpy.dot(x, x).block_until_ready()
        times.append(time.perf_counter() - t0)
    return sorted(times)[repeat // 2]


def test_jax_async_trap_is_caught_on_the_cpu(jax_ns):
    ip, jax = jax_ns
    r = ip.run_line_magic("cudatime", "-o -q -n 5 y = jnp.dot(x, x)")
    reference = reference_seconds(jax, ip.user_ns["x"])
    assert r.synchronized == ["jax cpu:0"]
    for one in r.warm:
        assert one.host < one.wall / 4  # jnp.dot returned long before the product was done
    assert r.median == pytest.approx(reference, rel=0.5)
    assert "%time alone would have printed" in str(r) or "a second %time would print" in str(r)


def test_without_the_jax_backend_the_work_is_missed(jax_ns, monkeypatch):
    """The same measurement with the JAX backend taken away: this is what the backend fixes."""
    ip, jax = jax_ns
    monkeypatch.setattr(backends, "REGISTRY", [entry for entry in backends.REGISTRY if entry[0] != "jax"])
    r = ip.run_line_magic("cudatime", "-o -q -n 5 y = jnp.dot(x, x)")
    reference = reference_seconds(jax, ip.user_ns["x"])
    assert r.median < reference / 4


@pytest.mark.parametrize("cell", [
    "out = {'a': [jnp.dot(x, x)], 'b': (1, jnp.dot(x, x))}",  # a bound pytree
    "jnp.dot(x, x), jnp.dot(x, x)",  # the cell's value, a tuple
])
def test_jax_waits_on_pytrees_in_values_and_bound_names(jax_ns, cell):
    ip, jax = jax_ns
    r = ip.run_line_magic("cudatime", f"-o -q -n 3 {cell}")
    reference = reference_seconds(jax, ip.user_ns["x"])
    assert r.median >= 1.5 * reference * 0.5  # two products were waited for
    assert all(one.host < one.wall / 4 for one in r.warm)


def test_jax_says_when_there_was_nothing_to_wait_on(jax_ns):
    ip, _ = jax_ns
    cell = run(ip, "%%cudatime -n 2\njnp.dot(x, x)\nNone")
    assert "JAX has no global synchronize" in cell.displayed[0]


def test_several_frameworks_at_once(jax_ns, async_device, monkeypatch):
    ip, _ = jax_ns
    import async_device_double

    monkeypatch.setattr(backends, "REGISTRY", [("async_device_double", async_device_double.DoubleBackend),
                                               ("jax", backends.JaxBackend)])
    ip.user_ns["gpu"] = async_device
    r = ip.run_line_magic("cudatime", "-o -q -n 2 gpu.launch(0.05); y = jnp.dot(x, x)")
    assert r.synchronized == ["async double", "jax cpu:0"]
    assert r.clock == "device"  # from the backend that has a device timer
    assert "synchronized: async double, jax cpu:0" in str(r)


def test_backends_never_import_their_framework():
    code = (
        "import sys\n"
        "from ipython_cudatime.backends import DeviceSet\n"
        "DeviceSet.detect().synchronize()\n"
        "print(sorted(m for m in ('torch', 'jax', 'cupy', 'tensorflow', 'numba') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_jax_imported_but_unused_is_not_started():
    """Importing jax and timing something else must not initialize JAX's backends."""
    pytest.importorskip("jax", reason="jax not installed")
    last = in_fresh_shell(
        "r = ip.run_line_magic('cudatime', '-o -q -n 2 sum(range(10))')\n"
        "print(xla_bridge.backends_are_initialized(), r.synchronized)",
        prelude="import jax\nfrom jax._src import xla_bridge\n",
    )
    assert last == "False []"


def _tensorflow(code):
    """Run ``code`` with TensorFlow in a fresh process (its import is slow and process-wide)."""
    import importlib.util

    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow not installed (make test installs tensorflow-cpu in .venv only)")
    return in_fresh_shell(code, prelude="import tensorflow as tf\n", env={"TF_CPP_MIN_LOG_LEVEL": "3"})


def test_tensorflow_eager_is_synchronized():
    out = _tensorflow(
        "ip.run_cell('import tensorflow as tf\\nx = tf.random.uniform([300, 300])')\n"
        "r = ip.run_line_magic('cudatime', '-o -q -n 3 tf.matmul(x, x)')\n"
        "print(r.synchronized, [n for n in r.notes if 'tensorflow' in n])"
    )
    assert out == "['tensorflow'] []"


def test_tensorflow_graph_mode_is_reported_as_not_synchronized():
    out = _tensorflow(
        "tf.compat.v1.disable_eager_execution()\n"
        "r = ip.run_line_magic('cudatime', '-o -q -n 1 1 + 1')\n"
        "print([n for n in r.notes if 'tensorflow' in n])"
    )
    assert "graph mode, where devices cannot be synchronized" in out


def test_tensorflow_imported_but_unused_is_not_started():
    """TensorFlow's runtime freezes its configuration once started: %cudatime must not start it."""
    out = _tensorflow(
        "ip.run_line_magic('cudatime', '-o -q -n 1 1 + 1')\n"
        "tf.config.threading.set_intra_op_parallelism_threads(2)  # raises once the runtime is up\n"
        "print('configurable')"
    )
    assert out == "configurable"


def test_jax_survives_values_it_cannot_flatten(jax_ns):
    ip, _ = jax_ns
    cell = run(ip, "%cudatime -n 2 d = {1: 2, 'a': 3}")  # mixed keys: JAX cannot sort them
    assert cell.error is None and ip.user_ns["d"] == {1: 2, "a": 3}
