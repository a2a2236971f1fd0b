"""A framework is one room: the test-only ``stand_in_framework`` (``tests/stand_in_framework.py``)
is one module, and one registry line adds it. Then every place that needs to know a framework
sees it: the versions a result records, the CPU context's pools (read, attributed to the cell
that used them, and set by ``--threads``), and the repeat decision, which reads its arrays."""

import stand_in_framework
from stand_in_framework import Array, StandInBackend

from ipython_cudatime.backends import REGISTRY

WITH_STAND_IN = REGISTRY + (("stand_in_framework", StandInBackend),)


def test_its_version_and_its_pool_are_recorded_and_threads_sets_its_pool(ip, seams):
    seams(registry=WITH_STAND_IN)
    ip.user_ns.update(x=Array([1, 2]))
    r = ip.run_line_magic("cudatime", "-o -q -n 3 --threads 1 y = x + 1")
    assert r.task.env.frameworks["stand_in_framework"] == "0.1.0"
    context = r.cpu_context
    assert context.threads["stand_in"] == 1 and stand_in_framework.threads == 4  # set, then put back
    assert context.users["stand_in"] == ["stand_in_framework"] and "stand_in_framework" in context.touched
    assert "stand_in" in context.cell_pools


def test_its_pool_is_not_blamed_for_a_cell_that_did_not_use_it(ip, seams):
    seams(registry=WITH_STAND_IN)
    r = ip.run_line_magic("cudatime", "-o -q -n 3 y = sum(range(100))")
    assert "stand_in" in r.cpu_context.threads and "stand_in" not in r.cpu_context.cell_pools


def test_without_the_registry_line_none_of_it_is_seen(ip):
    ip.user_ns.update(x=Array([1, 2]))
    r = ip.run_line_magic("cudatime", "-o -q -n 3 y = x + 1")
    assert "stand_in_framework" not in r.task.env.frameworks and "stand_in" not in r.cpu_context.threads


def test_the_repeat_decision_reads_its_arrays(ip, seams):
    """Its array shows no state to an attribute walk: without its kind the cell runs once, as an
    unreadable object must; with it, ``y = x + 1`` repeats and an in-place write is caught."""
    ip.user_ns.update(x=Array([1, 2]))
    unseen = ip.run_line_magic("cudatime", "-o -q y = x + 1")
    assert unseen.warm == []
    seams(registry=WITH_STAND_IN)
    read = ip.run_line_magic("cudatime", "-o -q y = x + 1")
    assert len(read.warm) >= 3
    ip.run_line_magic("cudatime", "-q x.add_(1)")
    assert ip.user_ns["x"].values == [2, 3]  # as one run leaves it
