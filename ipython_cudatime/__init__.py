"""ipython_cudatime: ``%cudatime``, a GPU-aware ``%time`` for Jupyter and IPython.

``%load_ext ipython_cudatime`` registers the magics. Importing this package
imports neither IPython's magics nor any GPU framework: the result, the collection and the
file format below are plain data (``tests/test_package.py`` checks what an import loads).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from . import store
from .compare import Results, contrast
from .display import text
from .explain.profile import profile_trace
from .features import FEATURES
from .result import CudaTimeResult, Env, Task
from .store import save

if TYPE_CHECKING:
    from os import PathLike

    from .features.feature import Feature

__version__ = "0.1.0"

__all__ = [
    "FEATURES",
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


def load_ipython_extension(ipython: Any, notebook: bool | None = None) -> None:
    """``%load_ext ipython_cudatime``. ``notebook`` forces the frontend decision (True: show
    notebook reports; False: text only) where detecting a Jupyter kernel misjudges it."""
    from .magics import CudaTimeMagics  # IPython's magic machinery loads with the extension, not the package

    magics = CudaTimeMagics(ipython, notebook=notebook)
    ipython.register_magics(magics)
    magics.display.install()


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import CudaTimeMagics  # as in load_ipython_extension

    manager = ipython.magics_manager
    instance = manager.registry.get(CudaTimeMagics.__name__)
    if instance is not None:
        instance.auto.enable(False)
        instance.display.uninstall()
    for kind, names in CudaTimeMagics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(CudaTimeMagics.__name__, None)


def report(obj: CudaTimeResult | Results) -> str:
    """The text report of a result or of results side by side (a sweep, a comparison): what terminal
    IPython shows when you echo one. Results are plain data; this is how they read as text."""
    return text(obj)


def load(paths: str | PathLike[str] | Iterable[str | PathLike[str]],
         features: Collection[Feature] = FEATURES) -> tuple[Results, list[str]]:
    """Read the results ``--save`` wrote to ``paths`` (a path, or a list; one JSON line each): (``Results``, a list of
    messages for the lines or files that did not load). Each of ``features`` reads its own record."""
    return store.load(paths, features)
