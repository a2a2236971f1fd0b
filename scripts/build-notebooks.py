#!/usr/bin/env python3
"""Build notebooks/*.ipynb from their jupytext source, notebooks/src/*.py, and execute them.

    python scripts/build-notebooks.py               # build all four and run them on a real kernel
    python scripts/build-notebooks.py 03            # only the notebooks whose name contains "03"
    python scripts/build-notebooks.py --no-execute  # cells only, no outputs
    python scripts/build-notebooks.py --out DIR     # elsewhere (scripts/gpu-check: a GPU run's outputs)

The .py files (jupytext percent format) are the source: edit them, never the .ipynb. This adds
what every notebook shares: the Colab badge and the install cell, both pointing to the repository
named in pyproject.toml, stable cell ids, and metadata naming the device the outputs came from.
"""

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
SRC, OUT = ROOT / "notebooks" / "src", ROOT / "notebooks"
BADGE = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab}/blob/main/notebooks/{name}.ipynb)"
INSTALL = """\
try:
    import ipython_cudatime
except ImportError:  # Colab: not on PyPI, so from the repository
    %pip install -q git+{url}
%load_ext ipython_cudatime"""


def repository():
    """pyproject's [project.urls] Repository (a regex: tomllib is Python >= 3.11 only)."""
    return re.search(r'^Repository\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)


def build(name):
    """The notebook ``name`` (a stem of notebooks/src) without outputs."""
    url = repository()
    nb = jupytext.read(SRC / f"{name}.py")
    colab = url.replace("https://github.com/", "https://colab.research.google.com/github/")
    nb.cells[0].source = BADGE.format(colab=colab, name=name) + "\n\n" + nb.cells[0].source
    nb.cells.insert(1, nbformat.v4.new_code_cell(INSTALL.format(url=url), metadata={"tags": ["install"]}))
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index:02d}"
    nb.nbformat_minor = 5
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                   "language_info": {"name": "python"}, "accelerator": "GPU", "colab": {"provenance": []}}
    return nb


def execute(nb, cwd):
    """Run ``nb`` in ``cwd`` on a kernel of this interpreter (widget state saved); name the device it used."""
    sys.path.insert(0, str(ROOT / "tests"))
    import browser  # the test suite's nbclient runner
    import torch

    browser.execute_notebook(nb, cwd)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps: noise in a diff
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    nb.metadata["outputs_from"] = gpu or "CPU only (no GPU)"  # Colab's "accelerator" only asks for a GPU


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-execute", action="store_true", help="write the cells without running them")
    parser.add_argument("--out", type=Path, default=OUT, help="write the notebooks here")
    parser.add_argument("only", nargs="*", help="build only the notebooks whose name contains one of these")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in sorted(path.stem for path in SRC.glob("*.py")):
        if not args.only or any(part in name for part in args.only):
            nb = build(name)
            if not args.no_execute:
                execute(nb, args.out)
            nbformat.write(nb, str(args.out / f"{name}.ipynb"))
            print(f"wrote {args.out / name}.ipynb")


if __name__ == "__main__":
    main()
