"""Display overhead: from the end of the last run to the display bundle being ready.

Times ``ipython_cudatime.display.bundle`` (run chart as SVG, HTML report)
for results of 10, 100 and 1,000 warm runs, after one untimed call that pays
matplotlib's import. Also the chart alone, the text report alone, and the bundle's CPU time
(what other work on a shared machine barely changes). Figures are
printed, not checked; the goal is at most 150 ms on a 2-core machine.

    .venv/bin/python benchmarks/display.py [--quick] [--json PATH]
"""

import json
import random
import time

from common import arguments, median_ms

from ipython_cudatime.display import bundle, text
from ipython_cudatime.render.chart import chart_svg
from ipython_cudatime.features import FEATURES
from ipython_cudatime.result import CudaTimeResult, Run

GOAL_MS = 150.0


def synthetic(runs):
    """A result shaped like seed 000's: a slow cold run, an async gap, noisy warm runs."""
    rng = random.Random(runs)
    warm = [Run(0.001, 0.47 + rng.random() * 0.01, 0.469 + rng.random() * 0.01) for _ in range(runs)]
    return CudaTimeResult(cold=Run(0.001, 0.82, 0.8, 0.3, 0.2), warmup=[Run(0.001, 0.48, 0.479)],
                          warm=warm, device="cuda:0 (synthetic)", synchronized=["torch cuda"], features=FEATURES)


def main():
    args = arguments(__doc__)
    repeat = 3 if args.quick else 15

    bundle(synthetic(10))  # pays matplotlib's import and font cache once
    figures = {}
    print(f"median of {repeat} calls, ms      text   chart  bundle (SVG chart + HTML)  bundle CPU time")
    for runs in (10, 100, 1000):
        result = synthetic(runs)
        row = {
            "text": median_ms(lambda: text(result), repeat),
            "chart": median_ms(lambda: chart_svg(result), repeat),
            "bundle": median_ms(lambda: bundle(result), repeat),
            "bundle_cpu": median_ms(lambda: bundle(result), repeat, clock=time.process_time),
        }
        figures[runs] = row
        print(f"{runs:>5} warm runs               {row['text']:6.2f} {row['chart']:7.1f} {row['bundle']:7.1f}"
              f"                    {row['bundle_cpu']:7.1f}")
    worst = max(row["bundle"] for row in figures.values())
    verdict = "met" if worst <= GOAL_MS else "not met"
    print(f"goal: bundle ready within {GOAL_MS:.0f} ms of the last run: {verdict} ({worst:.0f} ms at worst)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"goal_ms": GOAL_MS, "worst_ms": worst, "by_runs": figures}, out, indent=2)


if __name__ == "__main__":
    main()
