"""The host: the fallback when no device framework is active (host clocks only), and how the repeat
decision reads the host's arrays and tables (NumPy's and pandas', which have no device to wait for)."""

from __future__ import annotations

import pickle
import platform
from collections.abc import Callable
from typing import Any

from .base import Backend
from .objects import Kind, Leaf, Stateful, Unseen


class CpuBackend(Backend):
    """Nothing runs asynchronously here, so there is nothing to wait for."""

    name = "cpu"
    note = "no GPU clock was used: CPU timing with time.perf_counter"
    blas_users = ("numpy", "scipy", "sklearn")  # the host's linear algebra, through the BLAS threadpoolctl sees

    def synchronize(self, outputs: Callable[[], Any] | None = None) -> None:
        pass

    def describe(self) -> str:
        return f"cpu {platform.machine()}".strip()

    @classmethod
    def kinds(cls, numpy: Any) -> tuple[Kind, ...]:
        """NumPy's arrays by a checksum of their memory, generators by their state, scalars and dtypes immutable."""
        random = numpy.random  # a Generator's state is its bit generator's; a RandomState keeps its own
        return (NumpyArray(numpy),
                Stateful((random.Generator,), lambda generator: generator.bit_generator.state,
                         lambda generator, state: setattr(generator.bit_generator, "state", state), pickle.dumps),
                Stateful((random.RandomState,), lambda generator: generator.get_state(),
                         lambda generator, state: generator.set_state(state), pickle.dumps),
                Leaf(numpy.generic, numpy.dtype, numpy.ufunc))


BLOCK = 1 << 16  # 8-byte words weighted per block of the checksum


class NumpyArray(Kind):
    """An ndarray by a checksum of its bytes: every 8-byte word weighted by its place in a block, so that a
    swap counts, at memory speed (an integer matrix-vector product), then the blocks' sums hashed in order."""

    costly = True

    def __init__(self, numpy: Any) -> None:
        self.np, self.types = numpy, (numpy.ndarray,)
        self.weights = (numpy.arange(BLOCK, dtype=numpy.uint64) * numpy.uint64(0x9E3779B97F4A7C15)) | numpy.uint64(1)

    def token(self, array: Any) -> Any:
        if array.dtype.hasobject:  # it holds references
            raise Unseen("an array of Python objects")
        return array.shape, array.strides, array.dtype.str, self.checksum(array)

    def checksum(self, array: Any) -> int:
        np = self.np
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        words = raw[: raw.size // 8 * 8].view(np.uint64)
        whole = words.size // BLOCK * BLOCK
        sums = words[:whole].reshape(-1, BLOCK) @ self.weights
        return hash((sums.tobytes(), words[whole:].tobytes(), raw[words.size * 8:].tobytes()))

    def copy(self, array: Any) -> Any:
        return array.copy()

    def restore(self, array: Any, saved: Any) -> None:
        array[...] = saved

    def equal(self, array: Any, other: Any) -> bool:
        floats = array.dtype.kind in "fc"  # NaN equals NaN here: the same values written again
        return bool(array.dtype == other.dtype and self.np.array_equal(array, other, equal_nan=floats))

    def change(self, before: Any, after: Any) -> str:
        return " (written in place)" if before[:3] == after[:3] else " (reshaped)"


class PandasTable(Kind):
    """A DataFrame, Series or Index keeps its values in C fields no ``__dict__`` shows: read by its shape, labels,
    dtypes and a hash of every row, index included. Nothing puts one back: a change is a reason to run once."""

    costly = True

    def __init__(self, pandas: Any) -> None:
        self.pandas, self.types = pandas, (pandas.DataFrame, pandas.Series, pandas.Index)

    def token(self, table: Any) -> Any:
        try:
            rows = self.pandas.util.hash_pandas_object(table).to_numpy()
        except TypeError:  # an unhashable value (a list) in an object column
            raise Unseen("a table holding unhashable values") from None
        if isinstance(table, self.pandas.DataFrame):
            return table.shape, tuple(table.columns), tuple(map(str, table.dtypes)), hash(rows.tobytes())
        return table.shape, table.name, str(table.dtype), hash(rows.tobytes())

    def change(self, before: Any, after: Any) -> str:
        return " (written in place)" if before[:2] == after[:2] else " (reshaped)"


class PandasTables(Backend):
    """pandas in the registry's sense: never a device (``detect`` finds none), only ``kinds``."""

    @classmethod
    def kinds(cls, pandas: Any) -> tuple[Kind, ...]:
        return (PandasTable(pandas),)
