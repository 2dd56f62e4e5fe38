"""The store's Dagster side, a part of `Store`: which runs Dagster holds (the `dagster_runs` table), and
the merge of a Dagster-launched run's shards."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._tables import COLUMNS
from ._tables import fetch as _fetch


class DagsterRuns:
    """`Store`'s Dagster methods; the SQL stays in the results package, beside the store's own."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        @property
        def backend(self) -> Any: ...
        def write(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
                  delete_tables: Sequence[str] = ()) -> float | None: ...
        def _transaction(self, *, ensure_schema: bool = False) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...
        def _runs(self, sql: str, params: Sequence[Any], *, missing_ok: bool) -> list[dict[str, Any]]: ...
        def connect(self, *, read_only: bool = False) -> AbstractContextManager[Any]: ...

    def mark_in_dagster(self, run_id: str, dagster_run_id: str | None, how: str) -> None:
        """Note how Dagster holds the run `run_id`: `executed` (Dagster launched it) or `recorded` (replayed
        there afterwards) as its run `dagster_run_id`, or `skipped` (never to be recorded: `--no-dagster`)."""
        from datetime import UTC, datetime

        with self._transaction(ensure_schema=True) as con:
            con.execute("DELETE FROM dagster_runs WHERE run_id = ?", [run_id])
            con.execute("INSERT INTO dagster_runs VALUES (?, ?, ?, ?)",
                        [run_id, dagster_run_id, how, datetime.now(UTC)])

    def forget_in_dagster(self, run_id: str) -> None:
        """Forget how Dagster holds the run (a resumed run is recorded again, with its new results)."""
        if self.exists():
            with self._transaction(ensure_schema=True) as con:
                con.execute("DELETE FROM dagster_runs WHERE run_id = ?", [run_id])

    def dagster_runs_of(self, run_ids: Sequence[str]) -> dict[str, str]:
        """`{run_id: dagster_run_id}` of those of `run_ids` that Dagster holds (executed or recorded)."""
        import duckdb

        if not run_ids or not self.exists():
            return {}
        try:
            rows = self.query("SELECT run_id, dagster_run_id FROM dagster_runs WHERE dagster_run_id IS NOT NULL "
                              "AND run_id IN (SELECT unnest(?))", [list(run_ids)])
        except duckdb.CatalogException:  # a store from before the table
            return {}
        return {str(r["run_id"]): str(r["dagster_run_id"]) for r in rows}

    def unrecorded_runs(self, experiments: Sequence[str], limit: int = 25, *,
                        prefix: str | None = None) -> list[dict[str, Any]]:
        """Finished library runs of `experiments` (and of every experiment named `prefix...`, such as the
        grading runs) that Dagster does not hold and that are not `skipped`, oldest first (`run_id`,
        `experiment`, `status`, `tags`): what the record sensor records. A run still `running` waits until
        it ends (or its process is gone)."""
        import duckdb

        if not (experiments or prefix) or not self.exists():
            return []
        try:
            named = "experiment IN (SELECT unnest(?))" + (" OR starts_with(experiment, ?)" if prefix else "")
            rows = self._runs(f"SELECT * FROM runs WHERE ({named}) AND coalesce(source, '') <> 'dagster' "
                              "AND run_id NOT IN (SELECT run_id FROM dagster_runs) ORDER BY started_at",
                              [list(experiments), *([prefix] if prefix else [])], missing_ok=True)
        except duckdb.CatalogException:  # no tables yet, or a store from before dagster_runs
            return []
        return [r for r in rows if r["status"] != "running"][:limit]

    def has_runs_named(self, prefix: str) -> bool:
        """Whether the store holds a run of an experiment whose name starts with `prefix`."""
        return bool(self._runs("SELECT run_id FROM runs WHERE starts_with(experiment, ?) LIMIT 1", [prefix],
                               missing_ok=True))

    # A run Dagster launched in shards: their rows meet here (the SQL is in `_merge`).

    def merge_shards(self, run_id: str, files: dict[str, list[str]], *, expected: int, runs: int,
                     shard_items: int, worked_ms: float) -> dict[str, int]:
        """In one transaction: check that the shards' Parquet `files` (`{"outputs": [...], "scores": [...]}`)
        hold each of the run's `expected` items exactly once, replace the run's rows with theirs and set
        its working time. Running it again with the same files changes nothing."""
        from . import _merge

        if self.backend.name != "duckdb":
            return self._merge_apart(run_id, files, expected=expected, runs=runs, shard_items=shard_items,
                                     worked_ms=worked_ms)
        with self._transaction(ensure_schema=True) as con:
            return _merge.merge(con, run_id, files, COLUMNS, expected=expected, runs=runs, shard_items=shard_items,
                                worked_ms=worked_ms)

    def _merge_apart(self, run_id: str, files: dict[str, list[str]], *, expected: int, runs: int,
                     shard_items: int, worked_ms: float) -> dict[str, int]:
        """`merge_shards` for a team store: the parts are chosen in an in-memory DuckDB (which reads the
        Parquet files), then the chosen rows replace the run's in one transaction of the store."""
        import duckdb

        from . import _merge
        from ._tables import make_tables

        with duckdb.connect(":memory:") as local:
            make_tables(local, {})
            local.execute("INSERT INTO runs (run_id) VALUES (?)", [run_id])
            found = _merge.merge(local, run_id, files, COLUMNS, expected=expected, runs=runs,
                                 shard_items=shard_items, worked_ms=worked_ms)
            batches = {table: _fetch(local, f"SELECT * FROM {table}", []) for table in ("outputs", "scores", "spans")}
        self.write(batches, delete_run=run_id, delete_tables=list(batches))
        with self._transaction() as con:
            con.execute("UPDATE runs SET worked_ms = ? WHERE run_id = ?", [worked_ms, run_id])
        return found

    def merged_counts(self, run_id: str) -> dict[str, Any]:
        """Items per status and per-evaluator score totals of a run, counted in SQL (`_merge.counts`)."""
        from . import _merge

        with self.connect(read_only=True) as con:
            return _merge.counts(con, run_id)

    def first_rows(self, run_id: str, limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The `outputs` and `scores` rows of the run's first `limit` items in key order."""
        first = "SELECT item_index, run_index FROM outputs WHERE run_id = ? ORDER BY item_index, run_index LIMIT ?"
        with self.connect(read_only=True) as con:
            outputs = _fetch(con, "SELECT * FROM outputs WHERE run_id = ? ORDER BY item_index, run_index LIMIT ?",
                             [run_id, limit])
            scores = _fetch(con, f"SELECT s.* FROM scores s JOIN ({first}) f USING (item_index, run_index) "
                                 "WHERE s.run_id = ? ORDER BY item_index, run_index, evaluator",
                            [run_id, limit, run_id])
        return outputs, scores

    def pass_flips(self, previous_id: str, run_id: str) -> tuple[dict[str, int], int]:
        """Items (paired by identity, each with its repeats) that passed in every repeat in one of the runs
        `previous_id` and `run_id` and not in the other: per evaluator, and for the item as a whole (every
        repeat ok and passing every evaluator). Counted in SQL, so no run's items are read into memory."""
        repeats = ("SELECT o.run_id, coalesce(o.item_id, o.input_hash) AS ident, o.item_index, o.run_index, "
                   "o.status FROM outputs o WHERE o.run_id IN ($1, $2)")
        with self.connect(read_only=True) as con:
            per = con.execute(
                f"WITH r AS ({repeats}), ev AS (SELECT r.run_id, r.ident, s.evaluator, "
                "bool_and(coalesce(s.passed, false)) AS ok FROM scores s JOIN r USING (run_id, item_index, run_index) "
                "GROUP BY r.run_id, r.ident, s.evaluator) "
                "SELECT a.evaluator, count(*) FILTER (WHERE a.ok <> b.ok) FROM ev a JOIN ev b USING (ident, evaluator) "
                "WHERE a.run_id = $2 AND b.run_id = $1 GROUP BY a.evaluator", [previous_id, run_id]).fetchall()
            whole = con.execute(
                f"WITH r AS ({repeats}), rep AS (SELECT r.run_id, r.ident, r.status = 'ok' "
                "AND coalesce(bool_and(coalesce(s.passed, false)), true) AS ok FROM r "
                "LEFT JOIN scores s USING (run_id, item_index, run_index) "
                "GROUP BY r.run_id, r.ident, r.item_index, r.run_index, r.status), "
                "items AS (SELECT run_id, ident, bool_and(ok) AS ok FROM rep GROUP BY run_id, ident) "
                "SELECT count(*) FROM items a JOIN items b USING (ident) "
                "WHERE a.run_id = $2 AND b.run_id = $1 AND a.ok <> b.ok", [previous_id, run_id]).fetchone()
        return {str(name): int(n) for name, n in per}, int(whole[0] if whole else 0)
