"""Seed 000's puzzle, reproduced: `%time` prints 349 ms, then 999 µs, for one matrix product.

Each half runs in a fresh process whose first CUDA work is the seed's own: two
10000×10000 matrices made on the CPU and moved to the GPU, then the first product.
Only there can the first `%time` pay the one-time setup (the cuBLAS handle, the lazy
module loading) the seed saw. One process runs `%time` twice and then `%cudatime`;
the other runs `%cudatime` as its first product, so its cold run is the seed's first
`%time`, synchronized and explained.

    python benchmarks/puzzle.py [--quick] [--json PATH] [--markdown PATH]

Without a GPU the product is 1024×1024 on the CPU: nothing is asynchronous there, so
`%time` is already right and the puzzle does not appear.

On a GPU the answer is asserted, each check printing its band and the figure it saw (exit 1 when
one fails): the first product's cold run names the cuBLAS handle and workspace as a cause, and
is at least COLD_RATIO times a warm run (the report's "one-time setup" verdict). The CUDA context
is not among the causes: the prologue's ``.to(device)`` made it, as the seed's own cell did.
"""

import json
import os
import subprocess
import sys

from common import arguments, check_line, equal, finish, within

HALVES = ("time", "cudatime")
COLD_RATIO = 3.0  # features/cold_causes.py's: a cold run this many times a warm one paid one-time setup
CUBLAS = "cuBLAS handle and workspace created"

PROLOGUE = """\
import json, sys
import ipython_cudatime
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output
ip = start_ipython()
ip.run_line_magic("load_ext", "ipython_cudatime")
ip.run_cell('''import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
n = 10000 if device == "cuda" and not QUICK else 1024
a = torch.randn(n, n).to(device)
b = torch.randn(n, n).to(device)''')
ns = ip.user_ns
"""

TIME_HALF = """\
walls = []
for _ in range(2):
    with capture_output() as captured:
        ip.run_cell("%time c = torch.matmul(a, b)")
    walls += [line.split(":", 1)[1].strip() for line in captured.stdout.splitlines() if line.startswith("Wall time")]
r = ip.run_line_magic("cudatime", "-o -q -n 5 c = torch.matmul(a, b)")
print(json.dumps({"n": ns["n"], "time": walls, "median": r.median, "clock": r.clock, "device": r.device}))
"""

CUDATIME_HALF = """\
r = ip.run_line_magic("cudatime", "-o -q -n 5 c = torch.matmul(a, b)")
print(json.dumps({"n": ns["n"], "cuda": ns["device"] == "cuda", "cold_host": r.cold.host, "cold_wall": r.cold.wall,
                  "median": r.median,
                  "clock": r.clock, "device": r.device, "causes": [c.name for c in r.cold_causes],
                  "report": ipython_cudatime.report(r)}))
"""


def run_half(half, quick):
    """One half in a fresh interpreter; its figures (the last line it prints, JSON)."""
    code = f"QUICK = {quick}\n" + PROLOGUE + (TIME_HALF if half == "time" else CUDATIME_HALF)
    # TERM=dumb: IPython 7.34's shell would write an xterm title escape onto stdout, before the JSON
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TERM": "dumb"})
    if done.returncode != 0:
        raise RuntimeError(f"the {half} half failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def checks(first):
    """The seed's answer, asserted on a GPU (``first``: the half whose first product %cudatime timed)."""
    if not first["cuda"]:
        return []
    ratio = first["cold_wall"] / first["median"] if first["median"] else None
    return [equal(f"'{CUBLAS}' among the cold causes", True, CUBLAS in first["causes"]).to_dict(),
            within("cold run / warm median", ratio, COLD_RATIO, float("inf")).to_dict()]


def markdown(figures):
    from ipython_cudatime.units import format_seconds as fmt

    seen, first = figures["time"], figures["cudatime"]
    lines = [f"Seed 000's puzzle, {seen['n']}×{seen['n']} matmul on {seen['device']}, each half in a fresh process:",
             ""]
    lines += [f"- `%time`, {label} product: Wall time {wall}" for label, wall in zip(("first", "second"), seen["time"])]
    lines += [f"- `%cudatime` after them: warm median {fmt(seen['median'])} ({seen['clock']} clock)",
              f"- `%cudatime` as the first product: its cold run returned to Python after {fmt(first['cold_host'])}, "
              f"synchronized it took {fmt(first['cold_wall'])}; warm median {fmt(first['median'])}; "
              f"cold causes named: {', '.join(first['causes']) or 'none'}",
              *(f"- {check_line(check)}" for check in figures["checks"]),
              "", "```", first["report"], "```"]
    return "\n".join(lines) + "\n"


def main():
    args = arguments(__doc__, ("--markdown", "also write a Markdown report here"))
    figures = {half: run_half(half, args.quick) for half in HALVES}
    figures["checks"] = checks(figures["cudatime"])
    return finish(args, figures, markdown(figures))


if __name__ == "__main__":
    sys.exit(main())
