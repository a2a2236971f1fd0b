"""The cost of explaining: the always-on cold-cause checks, and --profile against a plain run.

1. ``ColdWatch``: finding the probes, three snapshots (before the cold run, after
   it, after the warm runs) and naming the causes, per %cudatime call, with torch
   (and jax, when installed) imported. Goal: under 1 ms without NVML.
2. ``%cudatime -n 10 CELL`` with and without ``-p``, for seed 002's loop and a
   single matrix product: the whole magic call, median of several calls.
Figures are printed, not checked.

    .venv/bin/python benchmarks/explain.py [--quick] [--json PATH]
"""

import json

import torch
from common import arguments, median_ms
from IPython.testing.globalipapp import start_ipython
from seeds import SEED_002

from ipython_cudatime.explain import ColdWatch

GOAL_MS = 1.0
SETUP = SEED_002 + """
X = torch.randn(24, 20)
K = torch.randn(1, 1)
a = torch.randn(256, 256)
"""
CELLS = {"seed 002 corr2d loop": "corr2d(X, K)", "256x256 matmul": "a @ a"}


def watch_once():
    """One call's worth of cold-cause checks: find the probes, three snapshots, the causes."""
    watch = ColdWatch.detect()
    for moment in ("before", "after_cold", "after_warm"):
        watch.snapshot(moment)
    watch.causes()
    return watch


def main():
    args = arguments(__doc__)
    repeat = 3 if args.quick else 11

    watch_ms = median_ms(watch_once, 20 if args.quick else 200)
    probes = [type(probe).__name__ for probe in watch_once().probes]
    verdict = "met" if watch_ms < GOAL_MS else "not met"
    print(f"cold-cause checks per call ({', '.join(probes)}; torch {torch.__version__}): "
          f"{watch_ms * 1e3:.0f} µs — goal under {GOAL_MS:g} ms: {verdict}")

    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    ip.run_cell(SETUP)
    figures = {"watch_ms": watch_ms, "goal_ms": GOAL_MS, "cells": {}}
    print(f"\n%cudatime -o -q -n 10 CELL, whole call, median of {repeat}, ms      plain   with -p   ratio")
    for label, cell in CELLS.items():
        plain = median_ms(lambda: ip.run_line_magic("cudatime", f"-o -q -n 10 -w 1 {cell}"), repeat)
        profiled = median_ms(lambda: ip.run_line_magic("cudatime", f"-o -q -n 10 -w 1 -p {cell}"), repeat)
        figures["cells"][label] = {"plain_ms": plain, "profile_ms": profiled}
        print(f"{label:<58} {plain:7.1f} {profiled:9.1f} {profiled / plain:6.2f}x")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
