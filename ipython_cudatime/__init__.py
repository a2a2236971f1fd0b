"""ipython_cudatime: ``%cudatime``, a GPU-aware ``%time`` for Jupyter and IPython.

``%load_ext ipython_cudatime`` registers the magics. Importing this package imports neither IPython's magics nor
any GPU framework: the result, the collection and the file format below are plain data (tests/test_package.py).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # as typing's, without importing typing (6 ms) at the package's import
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence
    from os import PathLike
    from typing import Any

    from .features import FEATURES
    from .features.feature import Feature
    from .features.profile.summary import profile_trace
    from .results.compare import Point, Results
    from .results.ratios import Contrast
    from .results.result import CudaTimeResult, Env, Task
    from .results.store import save

__version__ = "0.1.0"

__all__ = ["FEATURES", "CudaTimeResult", "Env", "Results", "Task", "contrast", "load", "load_ipython_extension",
           "profile_trace", "report", "save", "unload_ipython_extension"]


# Each public name's module, imported when the name is first used: ``import ipython_cudatime``
# then takes about a millisecond, not the 100 ms its modules (and numpy, json, statistics) take.
_MODULES = {"FEATURES": "features", "CudaTimeResult": "results.result", "Env": "results.result",
            "Task": "results.result", "Results": "results.compare", "profile_trace": "features.profile.summary",
            "save": "results.store"}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next use is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_ipython_extension(ipython: Any, notebook: bool | None = None) -> None:
    """``%load_ext ipython_cudatime``. ``notebook`` forces the frontend decision (True: show
    notebook reports; False: text only) where detecting a Jupyter kernel misjudges it."""
    from .notebook.magics import CudaTimeMagics  # IPython's magic machinery loads with the extension, not the package

    magics = CudaTimeMagics(ipython, notebook=notebook)
    ipython.register_magics(magics)
    magics.display.install()


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook.magics import CudaTimeMagics  # as in load_ipython_extension

    manager = ipython.magics_manager
    instance = manager.registry.get(CudaTimeMagics.__name__)
    if instance is not None:
        instance.auto.enable(False)
        instance.display.uninstall()
    for kind, names in CudaTimeMagics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(CudaTimeMagics.__name__, None)


def report(obj: CudaTimeResult | Results, features: Collection[Feature] | None = None) -> str:
    """The text report of a result or of results side by side (a sweep, a comparison), as terminal IPython
    echoes one: results are plain data, each of ``features`` (default: ``FEATURES``) wording its own record."""
    from .features import FEATURES
    from .notebook.display import text

    return text(obj, FEATURES if features is None else features)


def contrast(a: CudaTimeResult | Point | None, b: CudaTimeResult | Point | None, names: Sequence[str] | None = None,
             features: Collection[Feature] | None = None) -> Contrast:
    """Which of two results is faster, and can the runs tell (``ratios.contrast``: a winner only where the ratio
    of their medians has a 95% interval without 1); what else differs, ``features`` (default: all) naming theirs."""
    from .features import FEATURES
    from .results.ratios import contrast as between

    return between(a, b, names, FEATURES if features is None else features)


def load(paths: str | PathLike[str] | Iterable[str | PathLike[str]],
         features: Collection[Feature] | None = None) -> tuple[Results, list[str]]:
    """Read the results ``--save`` wrote to ``paths`` (a path, or a list; one JSON line each): (``Results``,
    messages for the lines or files that did not load), each of ``features`` (default: all) reading its record."""
    from .features import FEATURES
    from .results import store

    return store.load(paths, FEATURES if features is None else features)
