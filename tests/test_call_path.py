"""The path of one ``%cudatime`` call through the house: the modules whose code runs, traced in a
real IPython shell with the notebook view on (the HTML report and its chart), as a newcomer
following the call would read them. The features and the backends are plug-ins the call reaches
through its seams (``features.Feature`` and ``backends.base.Backend``): each is one room a change to
it stays in, so they are listed apart. The figures are printed (``pytest -s``); the bound is on
structure, never on time."""

import sys

import ipython_cudatime
from test_layers import LAYERS, _layer

PACKAGE = ipython_cudatime.__file__.rpartition("/")[0] + "/"
PLUG_INS = ("features/", "backends/")
MAX_MODULES = 12


def _floor(module):
    """Its floor in ``test_layers.LAYERS``, 0 the top."""
    parts = ("ipython_cudatime", *module.removesuffix(".py").removesuffix("/__init__").split("/"))
    return _layer(".".join(parts))


def _traced(shell, line):
    """The package modules whose functions ran for ``line``, in the order first entered, and the
    calls that went from a module up to a higher floor (a seam's callback: the runner telling the
    live view, a feature's watch), each pair of modules once."""
    order, backs = [], set()

    def profile(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(PACKAGE):
            return
        module = frame.f_code.co_filename[len(PACKAGE):]
        if module not in order:
            order.append(module)
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(PACKAGE):
            caller = caller.f_back  # a callback through a library's frames (a generator, a context manager)
        if caller is not None:
            calling = caller.f_code.co_filename[len(PACKAGE):]
            if _floor(module) < _floor(calling):
                backs.add((calling, module))

    sys.setprofile(profile)
    try:
        shell.run_cell(line)
    finally:
        sys.setprofile(None)
    return order, backs


def test_one_call_passes_through_at_most_twelve_modules(ip, seams):
    seams(notebook=True)
    ip.run_cell("%cudatime -n 5 sum(range(100))")  # the first call imports; the traced one is a user's next
    order, backs = _traced(ip, "%cudatime -n 5 sum(range(100))")
    path = [module for module in order if not module.startswith(PLUG_INS)]
    plug_ins = [module for module in order if module.startswith(PLUG_INS)]
    print(f"\nthe path of one call, {len(path)} modules: {' > '.join(path)}")
    print(f"plug-ins reached through the seams, {len(plug_ins)}: {', '.join(plug_ins)}")
    print(f"calls up to a higher floor, {len(backs)} pairs: {sorted(backs)}")
    assert "notebook/magics.py" in path and "measure/runner.py" in path and "render/chart.py" in path
    assert len(path) <= MAX_MODULES, path
