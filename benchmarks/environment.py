"""What the GPU figures were measured on: versions, ``nvidia-smi``, the device and torch.cuda's facts.

scripts/gpu-check's first step, in a process of its own: whatever reading the device's
properties initializes here leaves the puzzle step's fresh process cold.

    python benchmarks/environment.py [--require-cuda] [--json PATH] [--markdown PATH]

``--require-cuda`` (the device mode of scripts/gpu-check) exits 1 when
``torch.cuda.is_available()`` is False, after printing the report.
"""

import argparse
import importlib.metadata
import platform
import shutil
import subprocess
import sys

from common import write_outputs

PACKAGES = ("torch", "triton", "cupy-cuda13x", "cupy-cuda12x", "jax", "jaxlib", "numba", "numba-cuda",
            "nvidia-ml-py", "numpy", "matplotlib", "pandas", "pytest", "ipython", "ipywidgets", "ipykernel",
            "nbclient", "nbformat", "jupyter_client")


def versions():
    """Installed distributions, by name; absent ones are left out."""
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


# nvidia-smi answers in about a second; it can hang on a wedged driver. Its limit stays inside the env
# step's 10 s minimum (scripts/gpu-check), with time left for importing torch and reading the device.
NVIDIA_SMI_SECONDS = 5


def nvidia_smi():
    """``nvidia-smi``'s own summary, or why there is none."""
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi: not found"
    try:
        done = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=NVIDIA_SMI_SECONDS)
    except subprocess.TimeoutExpired:
        return f"nvidia-smi: timed out after {NVIDIA_SMI_SECONDS} s"
    return (done.stdout + done.stderr).strip()


def cuda_facts():
    """torch.cuda's view of the machine: no kernel runs."""
    import torch

    facts = {"torch": torch.__version__, "torch.version.cuda": torch.version.cuda,
             "cuda available": torch.cuda.is_available(), "device count": torch.cuda.device_count()}
    for index in range(facts["device count"]):
        props = torch.cuda.get_device_properties(index)
        facts[f"cuda:{index}"] = (f"{props.name}, compute capability {props.major}.{props.minor}, "
                                  f"{props.multi_processor_count} SMs, {props.total_memory / 2**30:.1f} GiB")
    return facts


def markdown(report):
    device = report["cuda"].get("cuda:0", "no CUDA device")
    lines = [f"Device: {device}.", "", "| package | version |", "|---|---|"]
    lines += [f"| {name} | {version} |" for name, version in report["versions"].items()]
    lines += ["", "```", report["nvidia-smi"], "```"]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--require-cuda", action="store_true", help="exit 1 unless torch.cuda.is_available()")
    parser.add_argument("--json", metavar="PATH", help="also write the report here")
    parser.add_argument("--markdown", metavar="PATH", help="also write it as Markdown here")
    args = parser.parse_args()
    report = {"versions": versions(), "nvidia-smi": nvidia_smi(), "cuda": cuda_facts(),
              "platform": platform.platform()}
    for name, value in {**report["versions"], **report["cuda"]}.items():
        print(f"{name:<20} {value}")
    print(report["nvidia-smi"])
    write_outputs(args, report, markdown(report))
    if args.require_cuda and not report["cuda"]["cuda available"]:
        print("device mode: torch.cuda.is_available() is False: no GPU evidence can be gathered here",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
