"""pandas' tables for the repeat decision: a DataFrame, a Series or an Index keeps its values in an
extension type's C fields that no ``__dict__`` shows, so it is read by a hash of its rows.

pandas has no device to wait for: ``detect`` finds none; it joins the registry's frameworks
only through ``kinds`` (``backends.object_kinds``).
"""

from __future__ import annotations

from typing import Any

from .base import Backend
from .objects import Kind, Unseen


class PandasTable(Kind):
    """A table by its shape, labels, dtypes and a hash of every row (``pandas.util.hash_pandas_object``,
    index included): a value changed in place shows. Nothing puts one back: a change is a reason to
    run once."""

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
    def detect(cls, module: Any) -> None:
        return None

    @classmethod
    def kinds(cls, pandas: Any) -> tuple[Kind, ...]:
        return (PandasTable(pandas),)
