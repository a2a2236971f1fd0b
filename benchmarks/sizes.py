"""Output that stays bounded: a 10,000-result comparison, and reports light enough to keep in a notebook.

Saves 10,000 results (a few warm runs each, as many labels and two machines) with
``store.save``, loads them back with ``ipython_cudatime.load``, and times the display bundle of the
comparison (text table, HTML table; no chart past 40 rows): the goal is under 2 s. Then runs
real ``%cudatime`` calls in a shell (-n 3, 30, 1000 and 100000, the default budget, a 10-point sweep,
every section a CPU opens) and prints what each report weighs in a saved notebook: past 2,000 runs
the report summarises the runs (merged bars, percentiles) instead of listing each, so it stops
growing. Figures are printed, not checked (``--quick``: 1,000 results and -n 10000).

    .venv/bin/python benchmarks/sizes.py [--quick] [--json PATH]
"""

import importlib.util
import json
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
REPORT_GOAL, OPEN_GOAL = 12_000, 25_000  # bytes of saved output: a default report, every section open


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
    """The saved size of real reports: ``-n`` 3, 30, 1,000 and ``runs`` warm runs, the default budget,
    a 10-point sweep, and a report with every section a CPU can open (``-p`` on a torch matmul, where
    torch is installed): the HTML a notebook keeps, beside its text, as nbformat writes them."""
    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    lines = {f"-n {count}": f"-n {count} pass" for count in (3, 30, 1000, runs)}
    lines["default budget"] = "sum(range(1000))"
    lines["10-point sweep"] = "-n 5 --sweep n=1,2,3,4,5,6,7,8,9,10 sum(range(n))"
    if importlib.util.find_spec("torch") is not None:
        ip.run_cell("import torch; a = torch.ones(64, 64)")
        lines["every section (-p)"] = "-n 30 -p a @ a"
    figures = {}
    print(f"\nsaved output per report (goal: a default one at most {REPORT_GOAL // 1000} kB, every section open "
          f"at most {OPEN_GOAL // 1000} kB)")
    for name, line in lines.items():
        started = time.perf_counter()
        result = ip.run_line_magic("cudatime", f"-o -q {line}")
        measured = time.perf_counter() - started
        started = time.perf_counter()
        data = bundle(result, FEATURES)
        rendered = time.perf_counter() - started
        saved = len(json.dumps(data, ensure_ascii=False).encode())  # as the .ipynb holds it
        figures[name] = {"saved_bytes": saved, "html_bytes": len(data["text/html"]),
                         "text_bytes": len(data["text/plain"]), "measure_s": measured, "render_s": rendered}
        print(f"{name:<20} saved {saved / 1e3:6.1f} kB (HTML {len(data['text/html']) / 1e3:6.1f} kB, text "
              f"{len(data['text/plain']) / 1e3:5.1f} kB), rendered in {rendered:.2f} s (the runs took {measured:.1f} s)")
    return figures


def main():
    args = arguments(__doc__)
    count, runs, repeat = (1000, 10_000, 1) if args.quick else (10_000, 100_000, 3)
    bundle(compared(1)[0].result, FEATURES)  # pays matplotlib's import and font cache once
    figures = {"goal_s": GOAL_S, "comparison": comparison(count, repeat), "reports": report_sizes(runs)}
    write_outputs(args, figures)


if __name__ == "__main__":
    main()
