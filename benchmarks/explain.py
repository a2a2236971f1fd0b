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
from common import arguments, median_ms, plain_against
from IPython.testing.globalipapp import start_ipython
from seeds import loop_and_matmul

from ipython_cudatime.features.cold_causes.probes import ColdWatch, ProbeSet

GOAL_MS = 1.0
SETUP, CELLS = loop_and_matmul()
PROBES = ProbeSet()  # made once, as the magics make theirs: probes are kept between cells


def watch_once():
    """One call's worth of cold-cause checks: find the probes, three snapshots, the causes."""
    watch = ColdWatch.detect(PROBES)
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
    figures = {"watch_ms": watch_ms, "goal_ms": GOAL_MS, "cells": plain_against(ip, CELLS, "-p", repeat)}
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
