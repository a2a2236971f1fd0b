"""Display overhead: from the end of the last run to the display bundle being ready; loading; importing.

Times ``ipython_cudatime.notebook.display.bundle`` (run chart as SVG, HTML report)
for results of 10, 100 and 1,000 warm runs, after one untimed call that pays
matplotlib's import. Also the chart alone, the text report alone, and the bundle's CPU time
(what other work on a shared machine barely changes). Then the default notebook report of a
real ``%cudatime sum(range(40))`` by part (chart, the HTML around it, findings, text), loading
saved lines (microseconds a line, for a 3-run line and a 1,000-run one) and
``import ipython_cudatime`` in a fresh process. Figures are printed, not checked; the goals on
a 2-core machine: the bundle within 150 ms at worst, the default report under 40 ms, loading
under 40 us a line (3 runs) and the import under 5 ms.

    .venv/bin/python benchmarks/display.py [--quick] [--json PATH]
"""

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from common import arguments, median_ms, write_outputs
from IPython.testing.globalipapp import start_ipython

from ipython_cudatime.results import store
from ipython_cudatime.results.compare import Point
from ipython_cudatime.notebook.display import bundle, text
from ipython_cudatime.features import FEATURES
from ipython_cudatime.render.report import Reading
from ipython_cudatime.render.chart import chart_html, chart_svg
from ipython_cudatime.render.report import render_html
from ipython_cudatime.results.result import CudaTimeResult, Run

GOAL_MS = 150.0
REPORT_GOAL_MS = 40.0
LOAD_GOAL_US = 40.0
IMPORT_GOAL_MS = 5.0


def synthetic(runs):
    """A result shaped like seed 000's: a slow cold run, an async gap, noisy warm runs."""
    rng = random.Random(runs)
    warm = [Run(0.001, 0.47 + rng.random() * 0.01, 0.469 + rng.random() * 0.01) for _ in range(runs)]
    return CudaTimeResult(cold=Run(0.001, 0.82, 0.8, 0.3, 0.2), warmup=[Run(0.001, 0.48, 0.479)],
                          warm=warm, device="cuda:0 (synthetic)", synchronized=["torch cuda"])


def by_runs(repeat):
    """The bundle and its parts for synthetic results of 10, 100 and 1,000 warm runs."""
    bundle(synthetic(10), FEATURES)  # pays matplotlib's import and font cache once
    figures = {}
    print(f"median of {repeat} calls, ms      text   chart  bundle (SVG chart + HTML)  bundle CPU time")
    for runs in (10, 100, 1000):
        result = synthetic(runs)
        row = {
            "text": median_ms(lambda: text(result, FEATURES), repeat),
            "chart": median_ms(lambda: chart_svg(result), repeat),
            "bundle": median_ms(lambda: bundle(result, FEATURES), repeat),
            "bundle_cpu": median_ms(lambda: bundle(result, FEATURES), repeat, clock=time.process_time),
        }
        figures[runs] = row
        print(f"{runs:>5} warm runs               {row['text']:6.2f} {row['chart']:7.1f} {row['bundle']:7.1f}"
              f"                    {row['bundle_cpu']:7.1f}")
    worst = max(row["bundle"] for row in figures.values())
    print(f"goal: bundle ready within {GOAL_MS:.0f} ms of the last run: {'met' if worst <= GOAL_MS else 'not met'} "
          f"({worst:.0f} ms at worst)")
    return figures, worst


def report_parts(result, repeat):
    """The default notebook report of a real result, by part: what a profile would attribute."""
    chart = chart_html(result)
    parts = {
        "chart": median_ms(lambda: chart_html(result), repeat),
        "html": median_ms(lambda: render_html(Reading.of(result, FEATURES), chart), repeat),
        "findings": median_ms(lambda: Reading.of(result, FEATURES).findings, repeat),
        "text": median_ms(lambda: text(result, FEATURES), repeat),
        "bundle": median_ms(lambda: bundle(result, FEATURES), repeat),
    }
    print(f"\nthe default notebook report of %cudatime sum(range(40)) ({result.runs} warm runs), median of {repeat}, ms")
    print("  ".join(f"{name} {ms:.2f}" for name, ms in parts.items())
          + "   (html: the report around the chart, findings included; bundle: all of them)")
    print(f"goal: the default report under {REPORT_GOAL_MS:.0f} ms: "
          f"{'met' if parts['bundle'] < REPORT_GOAL_MS else 'not met'} ({parts['bundle']:.1f} ms)")
    return parts


def load_per_line(result, lines, repeat):
    """Microseconds per line to load ``lines`` saved copies of ``result``: the best of ``repeat``."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "lines.jsonl")
        store.save([Point(result.task, result)] * lines, path)
        best = min(_seconds(lambda: store.load(path, FEATURES)) for _ in range(repeat))
        size = os.path.getsize(path) / lines
    return best / lines * 1e6, size


def _seconds(fn):
    """Seconds ``fn()`` took, its value kept until the clock has stopped: freeing what it made (10,000
    loaded results, say) is not part of making it."""
    start = time.perf_counter()
    kept = fn()  # noqa: F841  # held past the end of the timing
    elapsed = time.perf_counter() - start
    return elapsed


def import_ms(repeat):
    """``import ipython_cudatime`` in a fresh process (its modules' bytecode already cached): the median."""
    code = "import time; t = time.perf_counter(); import ipython_cudatime; print(time.perf_counter() - t)"
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
             for _ in range(repeat)]
    return statistics.median(times) * 1e3


def main():
    args = arguments(__doc__)
    repeat = 3 if args.quick else 15
    figures, worst = by_runs(repeat)
    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    default = ip.run_line_magic("cudatime", "-q -o sum(range(40))")
    short = ip.run_line_magic("cudatime", "-q -o -n 3 sum(range(40))")
    parts = report_parts(default, repeat)
    short_us, short_bytes = load_per_line(short, 300 if args.quick else 10_000, 3)
    long_us, long_bytes = load_per_line(default, 10 if args.quick else 300, 3)
    print(f"\nloading saved lines, best of 3: {short_us:.1f} us a line of 3 runs ({short_bytes:,.0f} bytes), "
          f"{long_us:.0f} us a line of {default.runs} runs ({long_bytes:,.0f} bytes)")
    print(f"goal: loading under {LOAD_GOAL_US:.0f} us a line (3 runs): "
          f"{'met' if short_us < LOAD_GOAL_US else 'not met'} ({short_us:.1f} us)")
    imported = import_ms(5 if args.quick else 21)
    print(f"\nimport ipython_cudatime in a fresh process, median: {imported:.2f} ms")
    print(f"goal: import under {IMPORT_GOAL_MS:.0f} ms: {'met' if imported < IMPORT_GOAL_MS else 'not met'}")
    write_outputs(args, {"goal_ms": GOAL_MS, "worst_ms": worst, "by_runs": figures, "report_ms": parts,
                         "load_us_per_line": {"3 runs": short_us, f"{default.runs} runs": long_us},
                         "import_ms": imported})


if __name__ == "__main__":
    main()
