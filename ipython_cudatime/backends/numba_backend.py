"""Numba CUDA: kernel launches are asynchronous; ``numba.cuda.synchronize()`` waits for them.

Active once the user has imported ``numba.cuda`` and a GPU is there. Numba exposes no
public "context exists" check, so the first pre-run wait may create Numba's context
before the cold run rather than inside it.
"""

from .base import Backend


class NumbaBackend(Backend):
    name = "numba cuda"

    def __init__(self, cuda):
        self._cuda = cuda

    @classmethod
    def detect(cls, cuda):
        try:
            return cls(cuda) if cuda.is_available() else None
        except Exception:  # a broken driver: nothing asynchronous to wait for
            return None

    def synchronize(self, outputs=None):
        self._cuda.synchronize()

    def describe(self):
        return f"numba cuda:{self._cuda.get_current_device().id}"
