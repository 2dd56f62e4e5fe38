"""The store's human side, a part of `Store`: the `labels` people set on items and the `calibrations`
measured against them.

Labels are human work, not a run's output: they live in tables of their own, outside `TABLES`, so
deleting or cleaning runs never takes them. A label is keyed by (experiment, evaluator, item identity),
so it applies to every later run of the same item. Each person's label is kept beside the others': setting
a label appends a row and the newest row of a key *and person* (`who`) wins, so two people's labels of one
item are both current (the agreement between people is the ceiling a judge is measured against); earlier
rows stay as the history (who said what, when), which explains a calibration that moved. Clearing a label
appends a row whose value is NULL (for that person).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

LABEL_TABLES = {
    "labels": [
        ("seq", "BIGINT"), ("experiment", "VARCHAR"), ("evaluator", "VARCHAR"), ("item_id", "VARCHAR"),
        # The label on the evaluator's scale (pass 1 / fail 0, 0..1, -3..3); NULL clears the label.
        ("value", "DOUBLE"), ("note", "VARCHAR"), ("who", "VARCHAR"), ("set_at", "TIMESTAMPTZ"),
        # The run and item index it was set on, and a hash of the output the person saw (set in the pages).
        ("run_id", "VARCHAR"), ("item_index", "INTEGER"), ("output_hash", "VARCHAR"),
    ],
    "calibrations": [
        ("calibration_id", "VARCHAR"), ("experiment", "VARCHAR"), ("evaluator", "VARCHAR"),
        ("run_id", "VARCHAR"), ("prompt_hash", "VARCHAR"), ("model", "VARCHAR"), ("scale", "VARCHAR"),
        ("labelled", "INTEGER"), ("kappa", "DOUBLE"), ("created_at", "TIMESTAMPTZ"), ("figures", "JSON"),
    ],
}
_LABEL_COLUMNS = ", ".join(n for n, _ in LABEL_TABLES["labels"])
#: Standard SQL (it runs on Postgres too): the newest row per item and person.
_CURRENT = (f"SELECT {_LABEL_COLUMNS} FROM (SELECT *, row_number() OVER (PARTITION BY experiment, evaluator, item_id, "
            "coalesce(who, '') ORDER BY seq DESC) AS label_rank FROM labels{where}) AS newest "
            "WHERE label_rank = 1 AND value IS NOT NULL")


class LabelRows:
    """`Store`'s label and calibration methods; the SQL stays in the results package."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        @property
        def values_dir(self) -> Path: ...
        def _transaction(self, *, ensure_schema: bool = False) -> AbstractContextManager[Any]: ...
        def connect(self, *, read_only: bool = False) -> AbstractContextManager[Any]: ...

    def _label_tables(self, con: Any) -> None:
        from ._backend import dialect_of

        kind_of = dialect_of(con).column_type
        for table, cols in LABEL_TABLES.items():
            con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(f'{n} {kind_of(k)}' for n, k in cols)})")
            for name, kind in cols:  # a store made by an earlier version lacks the newer columns
                con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {name} {kind_of(kind)}")

    def add_labels(self, rows: Sequence[dict[str, Any]]) -> int:
        """Append label rows (experiment, evaluator, item_id, value, note, who, set_at, run_id?, item_index?)
        in one transaction; the newest row of each key wins. Returns how many were written."""
        from ._backend import dialect_of

        if not rows:
            return 0
        names = [n for n, _ in LABEL_TABLES["labels"]]
        with self._transaction(ensure_schema=True) as con:
            self._label_tables(con)
            dialect_of(con).serialize(con, "labels")  # many writers at once: each takes the next seqs in turn
            start = con.execute("SELECT coalesce(max(seq), 0) FROM labels").fetchone()[0]
            con.executemany(f"INSERT INTO labels ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                            [[start + i + 1 if n == "seq" else row.get(n) for n in names]
                             for i, row in enumerate(rows)])
        return len(rows)

    def labels(self, experiment: str | None = None, evaluator: str | None = None, *,
               history: bool = False) -> list[dict[str, Any]]:
        """The current labels (or, with `history`, every row ever set, clears included), oldest first."""
        conditions, params = [], []
        for column, value in (("experiment", experiment), ("evaluator", evaluator)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        sql = f"SELECT * FROM labels{where}" if history else _CURRENT.format(where=where)
        return self._label_query(sql + " ORDER BY seq", params)

    def held_identities(self, experiment: str, identities: Sequence[str]) -> set[str]:
        """Which of `identities` are items of some stored run of `experiment` (a label on any other matches
        nothing that was run)."""
        wanted, found = list(dict.fromkeys(identities)), set[str]()
        for start in range(0, len(wanted), 500):  # bounded IN lists
            chunk = wanted[start : start + 500]
            rows = self._label_query(
                "SELECT DISTINCT coalesce(o.item_id, o.input_hash) AS ident FROM outputs o JOIN runs r ON "
                f"r.run_id = o.run_id WHERE r.experiment = ? AND coalesce(o.item_id, o.input_hash) IN "
                f"({', '.join('?' for _ in chunk)})", [experiment, *chunk])
            found.update(str(r["ident"]) for r in rows)
        return found

    def item_identities(self, run_id: str) -> dict[int, str]:
        """`{item_index: identity}` of a run's items (its `id`, else its content hash), read without the
        items' values."""
        rows = self._label_query("SELECT item_index, min(coalesce(item_id, input_hash)) AS ident FROM outputs "
                                 "WHERE run_id = ? GROUP BY item_index ORDER BY item_index", [run_id])
        return {int(r["item_index"]): str(r["ident"]) for r in rows if r["ident"] is not None}

    def evaluator_scores(self, run_id: str, evaluator: str) -> list[dict[str, Any]]:
        """The first repeat's usable scores of one evaluator (item_index, score, raw_score, passed)."""
        return self._label_query("SELECT item_index, score, raw_score, passed FROM scores WHERE run_id = ? AND "
                                 "evaluator = ? AND run_index = 0 AND status = 'ok' ORDER BY item_index",
                                 [run_id, evaluator])

    def output_keys(self, run_id: str) -> list[dict[str, Any]]:
        """Every agent call of a run as (item_index, run_index, ident, status), without its values."""
        return self._label_query("SELECT item_index, run_index, coalesce(item_id, input_hash) AS ident, status "
                                 "FROM outputs WHERE run_id = ? ORDER BY item_index, run_index", [run_id])

    def outputs_of(self, run_id: str, indices: Sequence[int]) -> list[dict[str, Any]]:
        """The `outputs` rows of some items of a run (every repeat), values whole."""
        from ._tables import decode
        from ._values import restore

        if not indices:
            return []
        rows = [decode(r) for r in self._label_query(
            "SELECT * FROM outputs WHERE run_id = ? AND item_index IN (SELECT unnest(?)) ORDER BY item_index, "
            "run_index", [run_id, sorted(set(indices))])]
        restore(rows, self.values_dir)
        return rows

    def evaluator_rows(self, run_id: str, evaluator: str) -> list[dict[str, Any]]:
        """One evaluator's usable scores in a run (every repeat), without the raw judge answers."""
        return self._label_query("SELECT item_index, run_index, score, raw_score, passed, reason, judge_model FROM "
                                 "scores WHERE run_id = ? AND evaluator = ? AND status = 'ok' ORDER BY item_index, "
                                 "run_index", [run_id, evaluator])

    def save_calibration(self, row: dict[str, Any]) -> None:
        """Store one calibration (its figures as JSON), replacing one of the same id."""
        names = [n for n, _ in LABEL_TABLES["calibrations"]]
        with self._transaction(ensure_schema=True) as con:
            self._label_tables(con)
            con.execute("DELETE FROM calibrations WHERE calibration_id = ?", [row["calibration_id"]])
            con.execute(f"INSERT INTO calibrations ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                        [json.dumps(row[n], default=str) if n == "figures" else row.get(n) for n in names])

    def calibrations(self, *, experiment: str | None = None, evaluator: str | None = None,
                     prompt_hash: str | None = None) -> list[dict[str, Any]]:
        """Stored calibrations, newest first, optionally of one experiment, evaluator or prompt hash."""
        conditions, params = [], []
        for column, value in (("experiment", experiment), ("evaluator", evaluator), ("prompt_hash", prompt_hash)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        rows = self._label_query(f"SELECT * FROM calibrations{where} ORDER BY created_at DESC", params)
        for row in rows:
            if isinstance(row.get("figures"), str):
                row["figures"] = json.loads(row["figures"])
        return rows

    def _label_query(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        import duckdb

        if not self.exists():
            return []
        try:
            with self.connect(read_only=True) as con:
                cursor = con.execute(sql, list(params))
                names = [d[0] for d in cursor.description]
                return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        except duckdb.CatalogException:  # no label was ever set in this store
            return []
