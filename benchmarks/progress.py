"""Progress costs nothing measurable: the same cell timed with and without a progress view.

A pure-Python cell of a few ms is measured several times each way, alternating, with 200 warm runs
(over half a second, so the view shows and refreshes), with the view's ticker thread awake
as in a notebook cell. The view is the terminal's stderr line
(``progress.LineView``) writing to a stand-in TTY that keeps nothing; the widget view
refreshes at the same throttled rate. Printed: the median and the best of the warm medians
each way, their differences, and the refreshes' share of the measured time (the goal is under 1%).

    .venv/bin/python benchmarks/progress.py [--quick] [--json PATH]
"""

import io
import json
import statistics
import time

from common import arguments

from ipython_cudatime.notebook import display as progress
from ipython_cudatime.backends import DeviceSet
from ipython_cudatime.results.result import Task
from ipython_cudatime.measure.runner import Cell, Plan, measure

RUNS = 200


class NullTTY(io.StringIO):
    """A terminal stand-in that keeps nothing (so 1,000 refreshes cost only their formatting)."""

    def isatty(self):
        return True

    def write(self, text):
        return len(text)


class CountingView(progress.LineView):
    def __init__(self):
        super().__init__(NullTTY())
        self.refreshes, self.seconds = 0, 0.0

    def update(self, fraction, status, finished=()):
        t0 = time.perf_counter()
        super().update(fraction, status, finished)
        self.seconds += time.perf_counter() - t0
        self.refreshes += 1


def cell():
    """Pure Python (one thread, no BLAS pool whose threads another job could stall)."""
    return Cell(lambda: sum(range(300_000)))


def main():
    args = arguments(__doc__)
    rounds = 2 if args.quick else 7
    fn, devices, plan = cell(), DeviceSet.detect(), Plan(runs=RUNS)
    plain, shown, views = [], [], []
    for _ in range(rounds):
        plain.append(measure(fn, devices, plan, Task("sum(range(300_000))")).result.median)
        view = CountingView()
        start = time.perf_counter()
        with progress.LiveProgress(view, runs=RUNS) as live:  # its ticker thread running, as in a cell
            shown.append(measure(fn, devices, plan, Task("sum(range(300_000))"), progress=live).result.median)
        views.append((view, time.perf_counter() - start))
    without, with_view = statistics.median(plain), statistics.median(shown)
    share = sum(v.seconds for v, _ in views) / sum(elapsed for _, elapsed in views)
    refreshes = statistics.median(v.refreshes for v, _ in views)
    print(f"warm median without progress {without * 1e3:.3f} ms, with progress {with_view * 1e3:.3f} ms "
          f"({100 * (with_view - without) / without:+.1f}%) over {rounds} rounds of {RUNS} runs")
    best_without, best_with = min(plain), min(shown)
    print(f"best of the rounds (what other jobs on the machine disturb least): without {best_without * 1e3:.3f} ms, "
          f"with {best_with * 1e3:.3f} ms ({100 * (best_with - best_without) / best_without:+.1f}%)")
    print(f"refreshes per measurement: {refreshes:.0f}; their share of the measured time: {100 * share:.3f}% "
          f"(goal: under 1%)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"without_s": without, "with_s": with_view, "refresh_share": share, "refreshes": refreshes},
                      out, indent=2)


if __name__ == "__main__":
    main()
