"""The newer reports on real kernels: what ``-p`` and ``--trace`` (see ``features()``) say about them.

scripts/gpu-check's fifth step. Each feature is one ``%cudatime`` line on a cell whose
answer is known (a loop of tiny kernels is launch-bound, a large GEMM is GPU-bound); the
full text report and the figures the feature adds are kept for gpu-results.md. A feature
that fails is recorded with its error and the others still run.

    python benchmarks/features.py [--quick] [--json PATH] [--markdown PATH] [--traces DIR]
"""

import os
import sys
import tempfile
from dataclasses import dataclass

import torch
from common import arguments, write_outputs
from IPython.testing.globalipapp import start_ipython

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


@dataclass(frozen=True)
class Feature:
    name: str
    setup: str
    line: str  # %cudatime's options and statement
    expect: str  # what a right answer looks like, for the reader of gpu-results.md


def features(quick, traces):
    n = 8192 if CUDA and not quick else 512
    loop = 2000 if CUDA else 200
    gemm = (f"a = torch.randn({n}, {n}, device={DEVICE!r}, dtype={'torch.bfloat16' if CUDA else 'torch.float32'})")
    return [
        Feature("--profile: a loop of tiny kernels", f"small = torch.randn(64, device={DEVICE!r})",
                f"-p -n 3 for _ in range({loop}): small.mul_(1.0)",
                "launch-bound on a GPU (dispatch-bound on the CPU)"),
        Feature("--profile: one large GEMM", gemm, "-p -n 3 a @ a", "GPU-bound on a GPU, most time in a GEMM kernel"),
        Feature("--trace: the loop's Chrome trace, read back with profile_trace",
                f"small = torch.randn(64, device={DEVICE!r})",
                f"--trace {traces}/loop.json.gz -n 3 for _ in range({loop}): small.mul_(1.0)",
                "the file read back gives the live run's counts and verdict"),
    ]


def figures_of(result):
    """What a feature adds to the result, as plain data; a kept trace is read back too."""
    data = result.to_dict()
    figures = {key: data[key] for key in ("clock", "median", "profile") if data.get(key) is not None}
    trace = result.profile.trace_file if result.profile is not None else None
    if trace:
        from ipython_cudatime import profile_trace

        read = profile_trace(trace)
        figures["read back"] = {"kernel_count": read.kernel_count, "kind": read.kind,
                                "busy_fraction": read.busy_fraction}
    return figures


def run_feature(ip, feature):
    ip.run_cell(feature.setup)
    try:
        result = ip.run_line_magic("cudatime", f"-o -q {feature.line}")
    except Exception as exc:
        return {"name": feature.name, "line": feature.line, "expect": feature.expect,
                "error": f"{type(exc).__name__}: {exc}"}
    return {"name": feature.name, "line": feature.line, "expect": feature.expect, "report": str(result),
            "figures": figures_of(result)}


def markdown(rows, device):
    lines = ["## New features on real kernels", "", f"On {device}.", ""]
    for row in rows:
        lines += [f"### {row['name']}", "", f"`%cudatime {row['line']}` (expected: {row['expect']})", ""]
        lines += ["```", row.get("report") or f"error: {row['error']}", "```", ""]
    return "\n".join(lines)


def main():
    args = arguments(__doc__, ("--markdown", "also write the reports as Markdown here"),
                     ("--traces", "keep the Chrome traces in this folder (default: a temporary one)"))
    traces = args.traces or tempfile.mkdtemp(prefix="features-")
    os.makedirs(traces, exist_ok=True)
    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    ip.run_cell("import torch")
    rows = [run_feature(ip, feature) for feature in features(args.quick, traces)]
    device = torch.cuda.get_device_name(0) if CUDA else "cpu"
    text = markdown(rows, device)
    print(text)
    write_outputs(args, {"device": device, "features": rows}, text)
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
