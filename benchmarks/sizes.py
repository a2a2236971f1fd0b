"""Output that stays bounded: a 10,000-result comparison and a -n 100000 report.

Saves 10,000 results (a few warm runs each, as many labels and two machines) with
``store.save``, loads them back with ``ipython_cudatime.load``, and times the display bundle of the
comparison (text table, HTML table; no chart past 40 rows): the goal is under 2 s. Then runs
``%cudatime -o -q -n 100000 pass`` in a real shell and prints the size of its HTML report
beside that of a ``-n 1000`` one: past 2,000 runs the report summarises the runs (merged
bars, percentiles) instead of listing each, so it stops growing. Figures are printed, not
checked (``--quick``: 1,000 results and -n 10000).

    .venv/bin/python benchmarks/sizes.py [--quick] [--json PATH]
"""

import os
import tempfile
import time

from common import arguments, median_ms, write_outputs
from IPython.testing.globalipapp import start_ipython

from ipython_cudatime.results.compare import Point
from ipython_cudatime.notebook.display import bundle
from ipython_cudatime.features import FEATURES
from ipython_cudatime.results.result import CudaTimeResult, Env, Run, Task
from ipython_cudatime import load
from ipython_cudatime.results.store import save

GOAL_S = 2.0


def compared(count):
    """``count`` results as from two machines and seven labels, each point a swept ``n``."""
    points = []
    for index in range(count):
        task = Task("a @ b", f"label{index % 7}", {"n": index}, Env("cpu", {"numpy": "2.1"}, "3.11", f"host{index % 2}"))
        warm = [Run(1e-4, 1e-3 + index * 1e-7 + k * 1e-6) for k in range(5)]
        points.append(Point(task, CudaTimeResult(Run(1e-4, 2e-3), [Run(1e-4, 1.1e-3)], warm, task=task)))
    return points


def comparison(count, repeat):
    """Seconds to save, load and render ``count`` results (the render's median of ``repeat``)."""
    points = compared(count)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "results.jsonl")
        started = time.perf_counter()
        save(points, path)
        saved = time.perf_counter() - started
        started = time.perf_counter()
        loaded, problems = load([path])
        read = time.perf_counter() - started
        size = os.path.getsize(path)
    assert not problems and len(loaded.points) == count, problems[:3]
    html = bundle(loaded, FEATURES)["text/html"]
    figures = {"results": count, "file_bytes": size, "save_s": saved, "load_s": read, "html_bytes": len(html),
               "render_s": median_ms(lambda: bundle(loaded, FEATURES), repeat) / 1e3,
               "render_cpu_s": median_ms(lambda: bundle(loaded, FEATURES), repeat, clock=time.process_time) / 1e3}
    print(f"{count:,} compared results: render (text + HTML) {figures['render_s']:.2f} s "
          f"(CPU {figures['render_cpu_s']:.2f} s), HTML {len(html) / 1e6:.1f} MB; "
          f"save {saved:.2f} s, load {read:.2f} s, file {size / 1e6:.1f} MB")
    verdict = "met" if figures["render_s"] < GOAL_S else "not met"
    print(f"goal: a {count:,}-result comparison renders in under {GOAL_S:g} s: {verdict}")
    return figures


def report_sizes(runs):
    """The HTML size of a real ``-n`` report, for ``runs`` and for 1,000 warm runs."""
    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    figures = {}
    for count in (1000, runs):
        started = time.perf_counter()
        result = ip.run_line_magic("cudatime", f"-o -q -n {count} pass")
        measured = time.perf_counter() - started
        started = time.perf_counter()
        html = bundle(result, FEATURES)["text/html"]
        figures[count] = {"html_bytes": len(html), "measure_s": measured, "render_s": time.perf_counter() - started}
        print(f"-n {count:<7} report: HTML {len(html) / 1e3:7.1f} kB, rendered in {figures[count]['render_s']:.2f} s "
              f"(the runs took {measured:.1f} s)")
    return figures


def main():
    args = arguments(__doc__)
    count, runs, repeat = (1000, 10_000, 1) if args.quick else (10_000, 100_000, 3)
    bundle(compared(1)[0].result, FEATURES)  # pays matplotlib's import and font cache once
    figures = {"goal_s": GOAL_S, "comparison": comparison(count, repeat), "reports": report_sizes(runs)}
    write_outputs(args, figures)


if __name__ == "__main__":
    main()
