"""What reading a measurement's CPU context costs per %cudatime call.

One call reads the machine three times (before the cold run, before and after the warm runs:
``/proc/loadavg``, ``/proc/thread-self/schedstat``, ``getrusage``, the process's CPU times), the
thread pools once (torch's intra-op threads, the BLAS pools through threadpoolctl where it is
installed) and the usable cores once, then builds the ``CpuContext``. Nothing is read per warm run.
Timed in three states of the process: no framework imported, NumPy imported, NumPy and torch
imported (threadpoolctl, when installed, then has libraries to ask). The first call after a new
framework import also builds threadpoolctl's list of libraries (about 2 ms, once); it is printed
apart. Goal: under 50 µs per call (wall time; the process's CPU time is printed beside it, since
other work on a shared machine inflates the wall figure). Figures are printed, not checked.

    .venv/bin/python benchmarks/cpu_context.py [--quick] [--json PATH]
"""

import importlib
import time

from common import arguments, median_ms, write_outputs

from ipython_cudatime.features.cpu_context.context import CpuWatch
from ipython_cudatime.measure.machine import Machine
from ipython_cudatime.measure.runner import Clock

GOAL_US = 50.0


def one_call(machine, clock):
    """A call's worth of reading, as the CPU facts' watch does it around the runs."""
    watch = CpuWatch(machine, clock)
    watch.before()
    watch.before_warm()
    watch.after_warm()
    return watch.context()


def first_call_ms(machine, clock):
    t0 = time.perf_counter()
    one_call(machine, clock)
    return (time.perf_counter() - t0) * 1e3


def has_threadpoolctl():
    try:
        importlib.import_module("threadpoolctl")
    except ImportError:
        return False
    return True


def main():
    args = arguments(__doc__)
    calls = 500 if args.quick else 5000
    machine, clock = Machine(), Clock()
    figures = {"goal_us": GOAL_US, "threadpoolctl": has_threadpoolctl(), "states": {}}
    print(f"CPU-context reading per %cudatime call (threadpoolctl "
          f"{'installed' if figures['threadpoolctl'] else 'not installed: BLAS pools unseen'}), median of {calls}:")
    for state, modules in (("no framework", ()), ("numpy", ("numpy",)), ("numpy + torch", ("numpy", "torch"))):
        try:
            for name in modules:
                importlib.import_module(name)
        except ImportError:
            print(f"  {state:<14} skipped: not installed")
            continue
        first = first_call_ms(machine, clock)
        per_call = median_ms(lambda: one_call(machine, clock), calls) * 1e3
        cpu = median_ms(lambda: one_call(machine, clock), calls, clock=time.process_time) * 1e3
        figures["states"][state] = {"per_call_us": per_call, "cpu_per_call_us": cpu, "first_call_ms": first,
                                    "pools": one_call(machine, clock).threads}
        verdict = "met" if per_call < GOAL_US else "not met"
        print(f"  {state:<14} {per_call:6.1f} µs per call, {cpu:5.1f} µs of CPU time (first call after the "
              f"import: {first:.2f} ms); pools {figures['states'][state]['pools']} — goal under {GOAL_US:g} µs: "
              f"{verdict}")
    write_outputs(args, figures)


if __name__ == "__main__":
    main()
