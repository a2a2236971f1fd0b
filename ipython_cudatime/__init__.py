"""ipython_cudatime: ``%cudatime``, a GPU-aware ``%time`` for Jupyter and IPython.

``%load_ext ipython_cudatime`` registers the magics. Importing this package
imports neither IPython's magics nor any GPU framework: the result, the collection and the
file format below are plain data (``tests/test_package.py`` checks what an import loads).
"""

from .compare import Results, contrast
from .result import CudaTimeResult, Env, Task
from .store import load, save

__version__ = "0.1.0"

__all__ = [
    "CudaTimeResult",
    "Env",
    "Results",
    "Task",
    "contrast",
    "load",
    "load_ipython_extension",
    "profile_trace",
    "report",
    "save",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython, notebook=None):
    """``%load_ext ipython_cudatime``. ``notebook`` forces the frontend decision (True: show
    notebook reports; False: text only) where detecting a Jupyter kernel misjudges it."""
    from .magics import CudaTimeMagics

    magics = CudaTimeMagics(ipython, notebook=notebook)
    ipython.register_magics(magics)
    magics.display.install()


def unload_ipython_extension(ipython):
    from .magics import CudaTimeMagics

    manager = ipython.magics_manager
    instance = manager.registry.get(CudaTimeMagics.__name__)
    if instance is not None:
        instance.auto.enable(False)
        instance.display.uninstall()
    for kind, names in CudaTimeMagics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(CudaTimeMagics.__name__, None)


def report(obj):
    """The text report of a result or of results side by side (a sweep, a comparison): what terminal
    IPython shows when you echo one. Results are plain data; this is how they read as text."""
    from .display import text

    return text(obj)


def profile_trace(path):
    """Summarize a PyTorch profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``, as a ``Profile``:
    the object ``%cudatime -p`` puts in ``result.profile``. Kernel and copy counts, the GPU's busy
    fraction, a breakdown, top kernels, launch and synchronize costs, and a verdict."""
    from .explain.profile import profile_trace as summarize_file

    return summarize_file(path)
