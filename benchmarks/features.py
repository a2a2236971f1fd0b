"""The newer reports on real kernels: what ``-p``, ``--trace``, ``--roofline`` and the peak device
memory (see ``features()``) say about them, and what --roofline costs (benchmarks/roofline.py).

scripts/gpu-check's fifth step. Each feature is one ``%cudatime`` line on a cell whose
answer is known (a loop of tiny kernels is launch-bound, a large GEMM is GPU-bound); the
full text report and the figures the feature adds are kept for gpu-results.md. A feature
that fails is recorded with its error and the others still run. On a GPU each feature also
asserts its known answer (the verdict kind, the bound and a fraction of the peak within
[floor, 1], the memory peak, the cold causes), each check printing the band it used and the
figure it saw; a check that fails fails the step, as an error does. On the CPU the answers
differ (no peaks, no launches) and only the reports are kept.

    python benchmarks/features.py [--quick] [--quick-cost] [--json PATH] [--markdown PATH] [--traces DIR]

``--quick-cost`` keeps the full sizes of the features but runs the cost benchmark
(benchmarks/roofline.py) with its ``--quick`` repeats: what fits a device check's short step.
"""

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import ceilings
import torch
from common import arguments, check_line, equal, fraction_of_peak, write_outputs
from IPython.testing.globalipapp import start_ipython

from ipython_cudatime import report
from ipython_cudatime.units import format_bytes

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


@dataclass(frozen=True)
class Feature:
    name: str
    setup: str
    line: str  # %cudatime's options and statement
    expect: str  # what a right answer looks like, for the reader of gpu-results.md
    checks: object = None  # result -> [common.Check]: the right answer asserted, on a GPU


def _profile_kind(kind):
    return lambda r: [equal("the profile's verdict", kind, r.profile.kind if r.profile else None)]


def _roofline(bound, floor):
    return lambda r: [equal("the roofline's bound", bound, r.roofline.bound if r.roofline else None),
                      fraction_of_peak(r.roofline, floor)]


def _memory(size):
    return lambda r: [equal("the cold run's exact peak, bytes", size, r.memory.cold_peak if r.memory else None),
                      equal("the warm runs' exact peak, bytes", size, r.memory.warm_peak if r.memory else None)]


def features(quick, traces):
    n = 8192 if CUDA and not quick else 512
    loop = 2000 if CUDA else 200
    copy_bytes = 2**30 if CUDA and not quick else 2**24
    gemm = (f"a = torch.randn({n}, {n}, device={DEVICE!r}, dtype={'torch.bfloat16' if CUDA else 'torch.float32'})")
    copy = (f"src = torch.empty({copy_bytes}, dtype=torch.uint8, device={DEVICE!r})\ndst = torch.empty_like(src)")
    m = 4096 if CUDA else 512
    return [
        Feature("--profile: a loop of tiny kernels", f"small = torch.randn(64, device={DEVICE!r})",
                f"-p -n 3 for _ in range({loop}): small.mul_(1.0)",
                "launch-bound on a GPU (dispatch-bound on the CPU)", _profile_kind("launch-bound")),
        Feature("--profile: one large GEMM", gemm, "-p -n 3 a @ a", "GPU-bound on a GPU, most time in a GEMM kernel",
                _profile_kind("GPU-bound")),
        Feature("--trace: the loop's Chrome trace, read back with profile_trace",
                f"small = torch.randn(64, device={DEVICE!r})",
                f"--trace {traces}/loop.json.gz -n 3 for _ in range({loop}): small.mul_(1.0)",
                "the file read back gives the live run's counts and verdict"),
        Feature(f"--roofline: the {n}³ GEMM", gemm, "--roofline -n 20 a @ a",
                "compute-bound, a large share of the datasheet's bf16 peak (none known on the CPU)",
                _roofline("compute", 0.5)),
        Feature(f"--roofline: a {format_bytes(copy_bytes)} copy", copy, "--roofline -n 20 dst.copy_(src)",
                "memory-bound, a large share of the memory bandwidth (none known on the CPU)",
                _roofline("memory", 0.6)),
        Feature(f"peak device memory: one {m}² fp32 product", f"m = torch.randn({m}, {m}, device={DEVICE!r})",
                "-n 3 c = m @ m", f"cold and warm peaks of {format_bytes(4 * m * m)} on a GPU; none on the CPU",
                _memory(4 * m * m)),
    ]


def figures_of(result):
    """What a feature adds to the result, as plain data; a kept trace is read back too."""
    data = result.to_dict()
    figures = {key: data[key] for key in ("clock", "median", "profile", "roofline", "memory")
               if data.get(key) is not None}
    trace = result.profile.trace_file if result.profile is not None else None
    if trace:
        from ipython_cudatime import profile_trace

        read = profile_trace(trace)
        figures["read back"] = {"kernel_count": read.kernel_count, "kind": read.kind,
                                "busy_fraction": read.busy_fraction}
    return figures


def run_feature(ip, feature):
    row = {"name": feature.name, "command": f"%cudatime {feature.line}", "expect": feature.expect}
    ip.run_cell(feature.setup)
    try:
        result = ip.run_line_magic("cudatime", f"-o -q {feature.line}")
    except Exception as exc:
        return {**row, "error": f"{type(exc).__name__}: {exc}"}
    checks = feature.checks(result) if CUDA and feature.checks else []
    return {**row, "report": report(result), "figures": figures_of(result), "checks": [c.to_dict() for c in checks],
            **({"error": "; ".join(c.line() for c in checks if not c.ok)} if not all(c.ok for c in checks) else {})}


def ceilings_row(quick):
    """This card's achievable ceilings (benchmarks/ceilings.py), once, as a row of its own."""
    row = {"name": "Achievable ceilings: an 8192³ bf16 torch.mm and a 2 GiB device copy",
           "command": "benchmarks/ceilings.py", "expect": "within [0.5, 1] of the datasheet's peaks"}
    try:
        figures = ceilings.measure(quick)
    except Exception as exc:
        return {**row, "error": f"{type(exc).__name__}: {exc}"}
    failed = [check_line(check) for check in figures["checks"] if not check["ok"]]
    return {**row, "report": ceilings.markdown(figures).strip(), "figures": figures, "checks": figures["checks"],
            **({"error": "; ".join(failed)} if failed else {})}


def roofline_cost(quick):
    """benchmarks/roofline.py's printout (the cost of --roofline and of the peak-memory reading),
    run in a process of its own so that its first --roofline call pays the lazy imports;
    ``quick``: with its ``--quick`` repeats."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "roofline.py")
    done = subprocess.run([sys.executable, script] + (["--quick"] if quick else []), capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        return {"error": f"benchmarks/roofline.py exited {done.returncode}: {done.stderr[-1000:]}"}
    return {"report": done.stdout.strip()}


def markdown(rows, device):
    lines = ["## New features on real kernels", "", f"On {device}.", ""]
    for row in rows:
        lines += [f"### {row['name']}", "", f"`{row['command']}` (expected: {row['expect']})", ""]
        lines += [f"- {check_line(check)}" for check in row.get("checks", [])]
        lines += ["", "```", row.get("report") or f"error: {row['error']}", "```", ""]
    return "\n".join(lines)


def main():
    args = arguments(__doc__, ("--markdown", "also write the reports as Markdown here"),
                     ("--traces", "keep the Chrome traces in this folder (default: a temporary one)"),
                     ("--quick-cost", "run the cost benchmark (benchmarks/roofline.py) with --quick", "switch"))
    traces = args.traces or tempfile.mkdtemp(prefix="features-")
    os.makedirs(traces, exist_ok=True)
    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    ip.run_cell("import torch")
    rows = [run_feature(ip, feature) for feature in features(args.quick, traces)]
    rows.append(ceilings_row(args.quick))
    rows.append({"name": "The cost of --roofline and of the peak-memory reading", "command": "benchmarks/roofline.py",
                 "expect": "the peak-memory reading under 50 µs per call", **roofline_cost(args.quick or args.quick_cost)})
    device = torch.cuda.get_device_name(0) if CUDA else "cpu"
    text = markdown(rows, device)
    print(text)
    write_outputs(args, {"device": device, "features": rows}, text)
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
