"""The store's datasets, a part of `Store`: immutable, numbered versions of named datasets and their items
(the `dataset_versions` and `dataset_items` tables of `_tables.DATASET_TABLES`).

A version is written whole in one transaction, numbered one past the dataset's latest, and never changed
after: the use cases (`cobalt_lib.datasets`) decide what goes in, this module only speaks SQL. The SQL is
standard (joins, CASE, coalesce, `?` parameters), so another backend runs it as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._tables import DATASET_TABLES, insert

#: The item rows go in through the store's file reader (`_tables.insert`) uncut: an item is a dataset's
#: content, not an agent's output, and a version must export exactly what was pushed.
_UNCUT = 2**62
_VERSION_COLUMNS = ", ".join(n for n, _ in DATASET_TABLES["dataset_versions"])
_ITEM_COLUMNS = "position, item_id, item_hash, split, item, origin"
#: The items that differ between two versions: in B only (added), in A only (removed), or in both with
#: other content or another split (changed).
_DIFF = """
SELECT coalesce(b.item_id, a.item_id) AS item_id,
       CASE WHEN a.item_id IS NULL THEN 'added' WHEN b.item_id IS NULL THEN 'removed' ELSE 'changed' END AS change,
       a.position AS position_a, b.position AS position_b
FROM (SELECT item_id, item_hash, split, position FROM dataset_items WHERE dataset = ? AND version = ?) AS a
FULL OUTER JOIN (SELECT item_id, item_hash, split, position FROM dataset_items WHERE dataset = ? AND version = ?) AS b
  ON a.item_id = b.item_id
WHERE a.item_id IS NULL OR b.item_id IS NULL OR a.item_hash <> b.item_hash
   OR coalesce(a.split, '') <> coalesce(b.split, '')
ORDER BY coalesce(b.position, a.position), a.position
"""


class DatasetRows:
    """`Store`'s dataset methods."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def _transaction(self, *, ensure_schema: bool = False) -> AbstractContextManager[Any]: ...
        def connect(self, *, read_only: bool = False) -> AbstractContextManager[Any]: ...
        def exists(self) -> bool: ...
        now: Any
        home: Path

    def _dataset_tables(self, con: Any) -> None:
        from ._backend import dialect_of

        kind_of = dialect_of(con).column_type
        for table, cols in DATASET_TABLES.items():
            con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(f'{n} {kind_of(k)}' for n, k in cols)})")

    def add_dataset_version(self, name: str, version_row: dict[str, Any], items: Sequence[dict[str, Any]], *,
                            unless_hash: tuple[str, str] | None = None) -> tuple[int, bool]:
        """Store `items` (rows of `dataset_items` without dataset and version) as the next version of `name`,
        in one transaction. `unless_hash=(hash, split_hash)`: when the latest version has both, nothing is
        written. Returns (the version, whether it is new)."""
        from ._backend import dialect_of

        with self._transaction(ensure_schema=True) as con:
            self._dataset_tables(con)
            dialect_of(con).serialize(con, f"dataset:{name}")  # two pushes at once: each its own version number
            latest = con.execute("SELECT version, hash, split_hash FROM dataset_versions WHERE dataset = ? "
                                 "ORDER BY version DESC LIMIT 1", [name]).fetchone()
            if latest is not None and unless_hash is not None and (latest[1], latest[2]) == unless_hash:
                return int(latest[0]), False
            version = 1 + (int(latest[0]) if latest is not None else 0)
            row = {**version_row, "dataset": name, "version": version, "created_at": self.now()}
            insert(con, "dataset_versions", [row], self.home, limit=_UNCUT)
            insert(con, "dataset_items", [{**item, "dataset": name, "version": version} for item in items],
                   self.home, limit=_UNCUT)
        return version, True

    def put_dataset_version(self, version_row: dict[str, Any], items: Sequence[dict[str, Any]]) -> None:
        """Store a version as numbered elsewhere (`cobalt store copy`): the row keeps its dataset and
        version, the items their content, uncut, in one transaction."""
        with self._transaction(ensure_schema=True) as con:
            self._dataset_tables(con)
            insert(con, "dataset_versions", [version_row], self.home, limit=_UNCUT)
            insert(con, "dataset_items", [{**i, "dataset": version_row["dataset"], "version": version_row["version"]}
                                          for i in items], self.home, limit=_UNCUT)

    def dataset_versions(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every stored version (of `name`, or of every dataset), by dataset then version."""
        where, params = (" WHERE dataset = ?", [name]) if name is not None else ("", [])
        rows = self._dataset_read(f"SELECT {_VERSION_COLUMNS} FROM dataset_versions{where} "
                                  "ORDER BY dataset, version", params)
        for row in rows:
            row["splits"] = _json(row["splits"]) or {}
            if isinstance(row["created_at"], datetime):
                row["created_at"] = row["created_at"].isoformat()
        return rows

    def dataset_items(self, name: str, version: int, split: str | None = None) -> list[dict[str, Any]]:
        """The items of one version (of one split), in order: position, item_id, item_hash, split, item, origin."""
        sql = f"SELECT {_ITEM_COLUMNS} FROM dataset_items WHERE dataset = ? AND version = ?"
        params: list[Any] = [name, version]
        if split is not None:
            sql += " AND split = ?"
            params.append(split)
        rows = self._dataset_read(sql + " ORDER BY position", params)
        for row in rows:
            row["item"], row["origin"] = _json(row["item"]), _json(row["origin"])
        return rows

    def dataset_diff(self, name: str, a: int, b: int) -> list[dict[str, Any]]:
        """The items that differ from version `a` to `b` (item_id, change, position_a, position_b), in B's order."""
        return self._dataset_read(_DIFF, [name, a, name, b])

    def run_items(self, run_id: str, indices: Sequence[int]) -> list[dict[str, Any]]:
        """The stored items of run `run_id` at `indices` (its first repeat): item_index, item_id, input (the item)."""
        if not indices:
            return []
        marks = ", ".join("?" * len(indices))
        rows = self._dataset_read(f"SELECT item_index, item_id, input FROM outputs WHERE run_id = ? AND run_index = 0 "
                                  f"AND item_index IN ({marks}) ORDER BY item_index", [run_id, *indices])
        return [{**row, "input": _json(row["input"])} for row in rows]

    def items_by_id(self, experiment: str, item_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """`{item_id: {run_id, item_index, input}}`: each of `item_ids` as the experiment's newest run holding it
        stored it."""
        if not item_ids:
            return {}
        marks = ", ".join("?" * len(item_ids))
        rows = self._dataset_read(
            "SELECT o.item_id, o.run_id, o.item_index, o.input FROM outputs AS o JOIN runs AS r ON o.run_id = r.run_id "
            f"WHERE r.experiment = ? AND o.run_index = 0 AND o.item_id IN ({marks}) "
            "ORDER BY r.started_at DESC, o.run_id DESC", [experiment, *item_ids])
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            found.setdefault(row["item_id"], {**row, "input": _json(row["input"])})
        return found

    def _dataset_read(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        import duckdb

        if not self.exists():
            return []
        with self.connect(read_only=True) as con:
            try:
                cursor = con.execute(sql, list(params))
            except duckdb.CatalogException:  # a store no dataset was pushed to
                return []
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _json(value: Any) -> Any:
    import json

    return json.loads(value) if isinstance(value, str) else value
