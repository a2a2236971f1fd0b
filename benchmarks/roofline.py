"""The cost of --roofline, and of the always-on peak-memory reading.

1. ``%cudatime -o -q -n 10 CELL`` with and without ``--roofline``, for one matrix
   product and seed 002's loop of ~3,400 operator calls: the whole magic call, median
   of several calls. The first --roofline call of a process also pays PyTorch's lazy
   imports for dispatch modes (seconds, once); it is printed apart.
2. The peak-memory reading: three allocator readings per %cudatime call (before the
   cold run, after it, after the warm runs) and the DeviceMemory built from them.
   On a GPU that is ``memory_stats_as_nested_dict`` three times (plus torch.compile's
   timer, read alongside); without CUDA in use only the checks that say so run.
   Goal: under 50 µs per call.
Figures are printed, not checked.

    .venv/bin/python benchmarks/roofline.py [--quick] [--json PATH]
"""

import json
import time

import torch
from common import arguments, median_ms, plain_against
from IPython.testing.globalipapp import start_ipython
from seeds import loop_and_matmul

from ipython_cudatime.features.cold_causes.torch_probe import TorchProbe
from ipython_cudatime.features.memory.record import device_memory

GOAL_US = 50.0


def memory_reading(probe):
    """One call's worth: three probe readings and the DeviceMemory built from them. "after_warm"
    readings leave out the cuBLAS workspace search, a cold-cause check timed by explain.py."""
    return device_memory(torch.cuda, *(probe.state("after_warm") for _ in range(3)))


def main():
    args = arguments(__doc__)
    repeat = 3 if args.quick else 11
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.ones(1, device="cuda")  # a context, as a cell that used the GPU leaves it
    probe = TorchProbe(torch)
    reading_us = median_ms(lambda: memory_reading(probe), 200 if args.quick else 2000) * 1e3
    what = ("three allocator readings + DeviceMemory" if device == "cuda"
            else "no CUDA in use: only the checks that say so")
    verdict = "met" if reading_us < GOAL_US else "not met"
    print(f"peak-memory reading per call ({what}; torch {torch.__version__}): {reading_us:.1f} µs "
          f"— goal under {GOAL_US:g} µs: {verdict}")

    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    setup, cells = loop_and_matmul(device)
    ip.run_cell(setup)
    t0 = time.perf_counter()
    ip.run_line_magic("cudatime", "-o -q -n 1 -w 0 --roofline a @ a")
    first_ms = (time.perf_counter() - t0) * 1e3
    print(f"first --roofline call of the process (PyTorch's lazy imports for dispatch modes): {first_ms:.0f} ms")
    print(f"\nthe whole-call cost of --roofline, on {device}:")
    figures = {"memory_reading_us": reading_us, "goal_us": GOAL_US, "first_roofline_ms": first_ms,
               "cells": plain_against(ip, cells, "--roofline", repeat)}
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
