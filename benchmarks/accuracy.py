"""Accuracy: %cudatime's warm median against the best harnesses, on the same work.

Four workloads: a large bf16 GEMM, a memory-bound copy, a tiny elementwise op,
and seed 002's launch-bound corr2d loop. Each is timed by ``%cudatime`` (in a
real IPython shell) and by every harness that is present: ``torch.utils.benchmark.Timer``
(blocked_autorange), ``triton.testing.do_bench`` (median), and
``cupyx.profiler.benchmark`` (CUDA-event median). The ratio %cudatime / harness
is printed; 1.00 means agreement. It also reproduces seed 000's puzzle: `%time`
twice on a large matmul against `%cudatime`.

On a machine without a GPU the sizes shrink, the GPU-only harnesses are
reported as absent, and everything runs on the CPU.

    .venv/bin/python benchmarks/accuracy.py [--quick] [--json PATH] [--markdown PATH]
"""

import json
import statistics
import sys

import torch
from common import arguments
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output
from seeds import SEED_002

from ipython_cudatime.units import format_seconds as fmt

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
SETUP = SEED_002 + f"device = {DEVICE!r}\n"


def workloads(quick):
    big = 1024 if quick else (8192 if CUDA else 1024)
    copy_bytes = (2**24 if quick else 2**30) if CUDA else 2**24
    loop = 8 if quick else 16
    return {
        # bf16 where tensor cores run it; the CPU's bf16 GEMM is too slow to time quickly
        "bf16 GEMM": (f"g = torch.randn({big}, {big}, device=device, dtype={'torch.bfloat16' if CUDA else 'torch.float32'})",
                      "g @ g"),
        "memory-bound copy": (f"src = torch.empty({copy_bytes}, dtype=torch.uint8, device=device)\n"
                              "dst = torch.empty_like(src)", "dst.copy_(src)"),
        "tiny elementwise": ("t = torch.ones(16, device=device)", "t.add_(1)"),
        "seed 002 loop": (f"X = torch.randn({loop}, {loop}, device=device)\nK = torch.randn(1, 1, device=device)",
                          "corr2d(X, K)"),
    }


def harnesses(namespace):
    """(name, median seconds of stmt) for every harness present."""
    found = {}

    def torch_timer(stmt):
        from torch.utils import benchmark

        return benchmark.Timer(stmt, globals=namespace).blocked_autorange(min_run_time=0.5).median

    found["torch Timer"] = torch_timer
    if CUDA:
        try:
            from triton.testing import do_bench

            found["triton do_bench"] = lambda stmt: do_bench(lambda: eval(stmt, namespace), return_mode="median") / 1e3
        except ImportError:
            pass
        try:
            from cupyx.profiler import benchmark as cupy_benchmark

            def cupy(stmt):
                times = cupy_benchmark(lambda: eval(stmt, namespace), n_repeat=200, n_warmup=10).gpu_times
                return float(statistics.median(times[0]))

            found["cupyx benchmark"] = cupy
        except ImportError:
            pass
    return found


def puzzle(ip, quick):
    """Seed 000: `%time` twice on a large matmul, then `%cudatime` on the same product."""
    n = 2048 if quick or not CUDA else 10000
    ip.run_cell(f"a = torch.randn({n}, {n}, device=device)\nb = torch.randn({n}, {n}, device=device)")
    lines = []
    for label, cell in (("%time, first", "%time c = torch.matmul(a, b)"),
                        ("%time, second", "%time c = torch.matmul(a, b)")):
        with capture_output() as captured:
            ip.run_cell(cell)
        wall = [line for line in captured.stdout.splitlines() if line.startswith("Wall time")]
        lines.append((label, wall[0].split(":", 1)[1].strip() if wall else "?"))
    r = ip.run_line_magic("cudatime", "-o -q -n 5 c = torch.matmul(a, b)")
    return {"n": n, "time": lines, "cudatime_cold_host": r.cold.host, "cudatime_median": r.median,
            "clock": r.clock, "device": r.device}


def main():
    args = arguments(__doc__, ("--markdown", "also write a Markdown report here"))

    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    ip.run_cell(SETUP)
    rows = []
    for name, (setup, stmt) in workloads(args.quick).items():
        ip.run_cell(setup)
        r = ip.run_line_magic("cudatime", f"-o -q -b {0.3 if args.quick else 2} {stmt}")
        row = {"workload": name, "stmt": stmt, "cudatime": r.median, "clock": r.clock, "runs": r.runs}
        for harness, median in harnesses(ip.user_ns).items():
            row[harness] = median(stmt)
        rows.append(row)
    names = sorted({key for row in rows for key in row} - {"workload", "stmt", "cudatime", "clock", "runs"})
    print(f"device: {torch.cuda.get_device_name(0) if CUDA else 'cpu (no GPU: sizes shrunk)'}; torch {torch.__version__}")
    print(f"{'workload':<20} {'%cudatime':>12} " + " ".join(f"{n:>22}" for n in names))
    for row in rows:
        cells = [f"{fmt(row[n]):>12} ({row['cudatime'] / row[n]:.2f}x)" if n in row else f"{'absent':>22}"
                 for n in names]
        print(f"{row['workload']:<20} {fmt(row['cudatime']):>12} " + " ".join(cells))
    seed = puzzle(ip, args.quick)
    print(f"\nseed 000 puzzle, {seed['n']}×{seed['n']} matmul on {seed['device']}:")
    for label, wall in seed["time"]:
        print(f"  {label:<15} Wall time: {wall}")
    print(f"  %cudatime       warm median {fmt(seed['cudatime_median'])} ({seed['clock']} clock); "
          f"its cold run returned to Python after {fmt(seed['cudatime_cold_host'])}")
    figures = {"cuda": CUDA, "torch": torch.__version__, "rows": rows, "puzzle": seed, "harnesses": names}
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(markdown(figures))


def markdown(figures):
    """docs/gpu-results.md: the accuracy table and the puzzle, from one run."""
    names = figures["harnesses"]
    lines = ["# GPU results", "",
             f"From `benchmarks/accuracy.py` ({'on a GPU' if figures['cuda'] else 'CPU-only run: no GPU'}, "
             f"torch {figures['torch']}). Ratio = %cudatime warm median / harness median.", "",
             "| workload | %cudatime | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for row in figures["rows"]:
        cells = [f"{fmt(row[n])} ({row['cudatime'] / row[n]:.2f}×)" if n in row else "absent" for n in names]
        lines.append(f"| {row['workload']} | {fmt(row['cudatime'])} | " + " | ".join(cells) + " |")
    seed = figures["puzzle"]
    lines += ["", f"Seed 000's puzzle, {seed['n']}×{seed['n']} matmul on {seed['device']}:", ""]
    lines += [f"- {label}: Wall time {wall}" for label, wall in seed["time"]]
    lines.append(f"- %cudatime: warm median {fmt(seed['cudatime_median'])} ({seed['clock']} clock); its cold run "
                 f"returned to Python after {fmt(seed['cudatime_cold_host'])}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
