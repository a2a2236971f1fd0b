#!/usr/bin/env python3
"""Build notebooks/*.ipynb from their jupytext source, notebooks/src/*.py, and execute them.

    python scripts/build-notebooks.py               # build all four and run them on a real kernel
    python scripts/build-notebooks.py 03            # only the notebooks whose name contains "03"
    python scripts/build-notebooks.py --no-execute  # cells only, no outputs
    python scripts/build-notebooks.py --out DIR     # elsewhere (scripts/gpu-check: a GPU run's outputs)
    python scripts/build-notebooks.py --rehearse --out DIR  # the GPU branches on this CPU (make gpu-dry-run)

`make notebooks` runs the first line in the project's .venv: the one command that rebuilds what is committed.

The .py files (jupytext percent format) are the source: edit them, never the .ipynb. This adds
what every notebook shares: the install cell (it imports the package, or says in one line how to
install it: the package is on no index yet and has no public repository, so there is no Colab
badge), stable cell ids, and metadata naming the device the outputs came from. It
keeps only the widget state that an output shows (the reports are static: none), so that a notebook
does not carry the progress widgets' closed models.

--rehearse is scripts/gpu-check --quick's way to run the GPU branches before the GPU machine's 15
minutes are spent on them. The lessons hold the real CUDA calls a student copies; the rehearsal
rewrites the code cells it executes (``rehearsed``, the ``REHEARSAL`` table): CUDA is "available",
"cuda" devices are "cpu", ``torch.cuda.synchronize()`` does nothing (the CPU's operators are done when
they return), the device is named as the rehearsal, and the seed's 10,000² matrices are an eighth of
that, seed 002's full (3, 1920, 1080) input an eighth on each side. Every other line runs as written, so a typo in a GPU branch fails here. A last cell fails the
notebook where a sweep point raised (a sweep records the error and goes on). Its outputs are no
lesson's: it never writes into notebooks/, and nothing of this is in the package.
"""

import argparse
import re
import sys
import time
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
SRC, OUT = ROOT / "notebooks" / "src", ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
INSTALL = """\
try:
    import ipython_cudatime
except ImportError:  # not on PyPI yet: README.md says how to install it
    raise ModuleNotFoundError("ipython_cudatime is not installed: `pip install .` in a clone of the project, "
                              "or upload the wheel `make dist` builds and `%pip install ipython_cudatime-*.whl`") from None
%load_ext ipython_cudatime"""
# The rehearsal's rewrites of a code cell's source: (pattern, replacement), in order. The CUDA calls
# inside a string (a label naming the call) stay as they are.
REHEARSAL = (
    (r"(?<![\"'])torch\.cuda\.is_available\(\)", "True"),
    (r"(?<![\"'])torch\.cuda\.synchronize\(\)", "None"),
    (r"(?<![\"'])torch\.cuda\.get_device_name\(\)", '"the CPU, rehearsing the GPU branch (make gpu-dry-run)"'),
    (r"([\"'])cuda(:\d+)?\1", r"\1cpu\1"),
    (r"\b10_000\b", "1_250"),
    (r"\(3, 1920, 1080\)", "(3, 240, 135)"),  # seed 002's full input: 100 convolutions a cell, 20 runs
)
# The rehearsal's last cell: a sweep records a point that raised and goes on, so without this a broken
# line in a swept cell's GPU branch would pass the rehearsal unseen.
EVERY_POINT_RAN = """\
from ipython_cudatime.results.compare import Results

failed = [f"{name} at {point.params}: {point.error}" for name, value in dict(globals()).items()
          if isinstance(value, Results) for point in value.points if point.result is None]
assert not failed, "sweep points failed in the rehearsal: " + "; ".join(failed)
print("rehearsal: every sweep point ran")"""


def build(name):
    """The notebook ``name`` (a stem of notebooks/src) without outputs."""
    nb = jupytext.read(SRC / f"{name}.py")
    nb.cells.insert(1, nbformat.v4.new_code_cell(INSTALL, metadata={"tags": ["install"]}))
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index:02d}"
    nb.nbformat_minor = 5
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                   "language_info": {"name": "python"}, "accelerator": "GPU", "colab": {"provenance": []}}
    return nb


def rehearsed(source):
    """``source`` as the rehearsal runs it on a CPU: the GPU branch's CUDA calls and sizes rewritten
    (``REHEARSAL``), everything else as written."""
    for pattern, replacement in REHEARSAL:
        source = re.sub(pattern, replacement, source)
    return source


def shown_widgets(nb):
    """The widget models that some output displays, and every model those refer to ("IPY_MODEL_<id>")."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    todo = [o["data"][WIDGET_VIEW]["model_id"] for cell in nb.cells for o in cell.get("outputs", [])
            if WIDGET_VIEW in o.get("data", {})]
    shown = set()
    while todo:
        model = todo.pop()
        if model in state and model not in shown:
            shown.add(model)
            todo.extend(re.findall(r"IPY_MODEL_([0-9a-f]+)", str(state[model])))
    return {model: state[model] for model in shown}


def drop_orphan_widgets(nb):
    """Keep the saved widget state only for models an output shows: nbclient saves the closed
    progress widgets too, hundreds of KiB that nothing renders."""
    kept = shown_widgets(nb)
    if kept:
        nb.metadata["widgets"][WIDGET_STATE]["state"] = kept
    else:
        nb.metadata.pop("widgets", None)


def execute(nb, cwd, rehearse=False):
    """Run ``nb`` in ``cwd`` on a kernel of this interpreter (widget state saved); name the device it
    used. ``rehearse``: its GPU branches on this CPU, then the check that every sweep point ran."""
    sys.path.insert(0, str(ROOT / "tests"))
    import torch

    import browser  # the test suite's nbclient runner

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    nb.metadata["outputs_from"] = gpu or "CPU only (no GPU)"  # Colab's "accelerator" only asks for a GPU
    if rehearse and not gpu:  # on a GPU the branch is real: only the sweep check is added
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = rehearsed(cell.source)
        nb.metadata["outputs_from"] = "CPU, rehearsing the GPU branches (make gpu-dry-run): no lesson's outputs"
    if rehearse:
        nb.cells.append(nbformat.v4.new_code_cell(EVERY_POINT_RAN, metadata={"tags": ["rehearsal-check"]}))
    try:
        browser.execute_notebook(nb, cwd)
    finally:  # a notebook that failed is written too, with its error: tidied the same way
        for cell in nb.cells:
            cell.metadata.pop("execution", None)  # timestamps: noise in a diff
        drop_orphan_widgets(nb)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-execute", action="store_true", help="write the cells without running them")
    parser.add_argument("--out", type=Path, default=OUT, help="write the notebooks here")
    parser.add_argument("--rehearse", action="store_true",
                        help="take the GPU branches on this CPU, inputs shrunk (the GPU dry run; needs --out)")
    parser.add_argument("only", nargs="*", help="build only the notebooks whose name contains one of these")
    args = parser.parse_args(argv)
    if args.rehearse and (args.no_execute or args.out.resolve() == OUT.resolve()):
        parser.error("--rehearse executes, and writes elsewhere than notebooks/ (--out DIR): "
                     "its outputs are no lesson's")
    args.out.mkdir(parents=True, exist_ok=True)
    failed = [name for name in sorted(path.stem for path in SRC.glob("*.py"))
              if (not args.only or any(part in name for part in args.only)) and not build_one(name, args)]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def build_one(name, args):
    """Build, execute and write one notebook; False where a cell raised. The next one still runs: on
    the GPU machine a broken notebook must not cost the others their only run. A failed one is
    written with its error under its cell, for the run's record, but never over a committed one."""
    start = time.monotonic()
    nb, error = build(name), None
    if not args.no_execute:
        try:
            execute(nb, args.out, args.rehearse)
        except Exception as raised:  # nbclient's CellExecutionError, or a kernel that died
            error = raised
    if error is None or args.out.resolve() != OUT.resolve():
        nbformat.write(nb, str(args.out / f"{name}.ipynb"))
    print(f"{'wrote' if error is None else 'FAILED'} {args.out / name}.ipynb in {time.monotonic() - start:.1f} s",
          flush=True)
    if error is not None:
        print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
    return error is None


if __name__ == "__main__":
    sys.exit(main())
