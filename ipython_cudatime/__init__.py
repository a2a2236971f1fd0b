"""ipython_cudatime: ``%cudatime``, a GPU-aware ``%time`` for Jupyter and IPython.

``%load_ext ipython_cudatime`` registers the magics. Importing this package
imports neither IPython's magics nor any GPU framework.
"""

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    from .magics import CudaTimeMagics

    ipython.register_magics(CudaTimeMagics)


def unload_ipython_extension(ipython):
    from .magics import CudaTimeMagics

    manager = ipython.magics_manager
    instance = manager.registry.get(CudaTimeMagics.__name__)
    if instance is not None:
        instance.auto.enable(False)
    for kind, names in CudaTimeMagics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(CudaTimeMagics.__name__, None)


def profile_trace(path):
    """Summarize a PyTorch profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``, as a ``Profile``:
    the object ``%cudatime -p`` puts in ``result.profile``. Kernel and copy counts, the GPU's busy
    fraction, a breakdown, top kernels, launch and synchronize costs, and a verdict."""
    from .explain.profile import profile_trace as summarize_file

    return summarize_file(path)
