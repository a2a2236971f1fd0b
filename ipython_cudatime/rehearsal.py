"""The teaching notebooks' GPU branches, run on a CPU: this project's own rehearsal, never a user's setting.

Each teaching notebook takes a GPU branch where torch sees a CUDA device. The GPU machine this
project is checked on is lent for 15 minutes in all (docs/gpu.md), so a typo in a GPU branch must
be found before that, on a CPU. ``make gpu-dry-run`` executes the notebooks with
IPYTHON_CUDATIME_REHEARSAL=gpu-branches (scripts/build-notebooks.py --rehearse sets it for the
kernel, and nothing else does); there, and only where torch sees no CUDA device, ``ON`` is True
and the notebooks take their GPU branches on the CPU with smaller inputs. Everywhere else (a user,
Colab, the GPU machine itself) ``ON`` is False and each name below is the plain CUDA one, so what
a notebook's reader runs is the code they read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

VARIABLE = "IPYTHON_CUDATIME_REHEARSAL"
VALUE = "gpu-branches"


def active(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to rehearse: the variable says so and there is no CUDA device. On a GPU the branch is
    real, so the variable can never turn a real run into a rehearsal. Torch is imported only when
    the variable is set: a notebook that reads ``ON`` has imported it already."""
    if environ.get(VARIABLE) != VALUE:
        return False
    import torch

    return not torch.cuda.is_available()


ON = active()
DEVICE = "cpu" if ON else "cuda"  # the GPU branch's device


def shrink(size: int, by: int = 8) -> int:
    """``size`` itself; ``size // by`` in the rehearsal, where the GPU branch's full sizes would take
    a CPU minutes, and the point is that every line runs, not how fast."""
    return max(1, size // by) if ON else size


def synchronize() -> None:
    """``torch.cuda.synchronize()``; nothing in the rehearsal, where the CPU's operators have finished
    when they return (and torch.cuda would refuse: there is no device)."""
    if not ON:
        import torch

        torch.cuda.synchronize()


def device_name() -> str:
    """``torch.cuda.get_device_name()``, or what the rehearsal runs on."""
    if ON:
        return "the CPU, rehearsing the GPU branch (make gpu-dry-run)"
    import torch

    return str(torch.cuda.get_device_name())
