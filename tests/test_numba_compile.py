"""Numba's first-call compiles named as cold-run causes, with real Numba in the real shell."""

import gc

import pytest

from ipython_cudatime import report
from ipython_cudatime.features.cold_causes.numba_probe import KINDS, UNNAMED, NumbaProbe

numba = pytest.importorskip("numba", reason="numba not installed (the test extra installs it: make test)")

DOT = """
import numpy as np
from numba import njit

@njit
def dot(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total

a, b = np.ones(1000), np.ones(1000)
"""
FLOAT64 = "array(float64, 1d, C)"


def timed(ip, line):
    return ip.run_line_magic("cudatime", "-o -q -n 3 " + line)


def compiles(result):
    return [cause for cause in result.cold_causes if cause.name == "Numba compilation"]


def test_a_first_call_names_its_compile_and_the_remainder_shrinks(ip):
    ip.run_cell(DOT)
    r = timed(ip, "dot(a, b)")
    [cause] = compiles(r)
    assert cause.seconds > 0 and cause.explains
    assert f"`dot` compiled for ({FLOAT64}, {FLOAT64})" in cause.detail
    text = report(r)
    assert "It paid one-time setup: Numba compilation" in text
    assert "none of the checks" not in text and "is unexplained" not in text


def test_a_function_already_compiled_names_no_compile(ip):
    ip.run_cell(DOT + "dot(a, b)")
    assert not compiles(timed(ip, "dot(a, b)"))


def test_new_argument_types_compile_again_and_are_named(ip):
    ip.run_cell(DOT + "dot(a, b)\nx, y = a.astype(np.float32), b.astype(np.float32)")
    [cause] = compiles(timed(ip, "dot(x, y)"))
    assert cause.seconds > 0
    assert "`dot` compiled for (array(float32, 1d, C), array(float32, 1d, C))" in cause.detail
    assert FLOAT64 not in cause.detail  # compiled in the setup cell, not in this cold run


def test_a_jitted_callee_compiles_inside_its_caller_counted_once(ip):
    ip.run_cell("import numpy as np\nfrom numba import njit\n"
                "@njit\ndef twice(v):\n    return 2 * v\n"
                "@njit\ndef total(a):\n    s = 0.0\n    for v in a:\n        s += twice(v)\n    return s\n"
                "a = np.ones(100)")
    r = timed(ip, "total(a)")
    [cause] = compiles(r)  # one cause: the callee's seconds are inside the caller's
    assert cause.seconds > 0
    assert f"`total` compiled for ({FLOAT64})" in cause.detail and "`twice` compiled for (float64)" in cause.detail
    assert "`impl`" not in cause.detail  # Numba's own helpers compile too, unnamed


def test_a_vectorize_ufunc_compiles_without_a_dispatcher_event_and_is_named(ip):
    ip.run_cell("import numpy as np\nfrom numba import vectorize\n"
                "@vectorize\ndef plus_one(v):\n    return v + 1\n"
                "a = np.ones(100)")
    [cause] = compiles(timed(ip, "plus_one(a)"))
    assert cause.seconds > 0 and cause.detail.startswith(UNNAMED)


def test_each_owner_counts_a_compile_once_and_a_probe_gone_stops_listening():
    registered = numba.core.event._registered  # numba's listeners, by kind
    first, second = NumbaProbe.detect(numba), NumbaProbe.detect(numba)
    before = first.state("before"), second.state("before")
    numba.njit(lambda v: v + 1)(1.0)
    for probe, start in zip((first, second), before):
        [cause] = probe.causes(start, probe.state("after_cold"), None)
        assert cause.seconds > 0 and cause.detail.count("compiled for") == 1
        assert "<lambda>` compiled for (float64)" in cause.detail
    listener = first._compiles
    del first
    gc.collect()
    assert all(listener not in registered[kind] for kind in KINDS)
    assert all(second._compiles in registered[kind] for kind in KINDS)
