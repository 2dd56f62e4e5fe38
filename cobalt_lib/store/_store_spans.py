"""The store's `spans` side, a part of `Store`: the OpenTelemetry spans each agent call emitted."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..results._spans import SpanRecord, span_from_row
from ._tables import fetch
from ._values import restore

#: An item's key: (item_index, run_index).
Key = tuple[int, int]


class SpanRows:
    """`Store`'s span reads; the rows themselves arrive with the run's other rows (`_writer`)."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        def connect(self, *, read_only: bool = False) -> AbstractContextManager[Any]: ...
        @property
        def values_dir(self) -> Path: ...

    def spans_of(self, run_id: str, keys: Sequence[Key] | None = None) -> dict[Key, list[SpanRecord]]:
        """The spans of the run's items `keys` (every item's when None), in the order they ended, by key;
        an item without spans (or a store from before the table) has none."""
        import duckdb

        if not self.exists() or (keys is not None and not keys):
            return {}
        sql = "SELECT * FROM spans WHERE run_id = ?"
        params: list[Any] = [run_id]
        if keys is not None:
            sql += " AND concat(item_index, ':', run_index) IN (SELECT unnest(?))"
            params.append([f"{index}:{run_index}" for index, run_index in keys])
        try:
            with self.connect(read_only=True) as con:
                rows = fetch(con, sql + " ORDER BY item_index, run_index, seq", params)
        except duckdb.CatalogException:  # a store written before spans were collected
            return {}
        restore(rows, self.values_dir)
        found: dict[Key, list[SpanRecord]] = {}
        for row in rows:
            found.setdefault((row["item_index"], row["run_index"]), []).append(span_from_row(row))
        return found
