"""The store's item reads, a part of `Store`: a run's items streamed in chunks for exports, and paged,
searched and counted for cobalt's pages. Each is one short read-only connection, so a page never holds
the file while a run in progress wants to write."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._tables import fetch, present_columns

if TYPE_CHECKING:
    from ._backend import Backend
from ._values import restore

#: A JSON object's key (`"country":`), which an item search skips: it matches values, not field names.
JSON_KEY = r'"(?:[^"\\]|\\.)*"\s*:'


class ItemReads:
    """`Store`'s reads of a run's items, a page or a chunk at a time."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        backend: Backend

        def exists(self) -> bool: ...
        def connect(self, *, read_only: bool = False) -> AbstractContextManager[Any]: ...
        @property
        def values_dir(self) -> Path: ...
        def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def item_chunk(self, run_id: str, *, after: tuple[int, int] | None = None, limit: int = 2000,
                   with_scores: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """One chunk of a streamed read of a run's items, over one short connection: up to `limit`
        `outputs` rows after the key `after` (item_index, run_index), in key order, and the `scores`
        rows of those keys (by key, then evaluator)."""
        index, repeat = after if after is not None else (-1, -1)
        with self.connect(read_only=True) as con:
            outputs = fetch(con, "SELECT * FROM outputs WHERE run_id = ? AND (item_index > ? OR "
                                  "(item_index = ? AND run_index > ?)) ORDER BY item_index, run_index LIMIT ?",
                             [run_id, index, index, repeat, int(limit)])
            if not outputs or not with_scores:
                return outputs, []
            low, high = outputs[0], outputs[-1]
            scores = fetch(con, "SELECT * FROM scores WHERE run_id = ? "
                                 "AND (item_index > ? OR (item_index = ? AND run_index >= ?)) "
                                 "AND (item_index < ? OR (item_index = ? AND run_index <= ?)) "
                                 "ORDER BY item_index, run_index, evaluator",
                            [run_id, low["item_index"], low["item_index"], low["run_index"],
                             high["item_index"], high["item_index"], high["run_index"]])
        restore(outputs, self.values_dir)
        restore(scores, self.values_dir)
        return outputs, scores

    def pair_keys(self, run_a: str, run_b: str) -> list[tuple[str, int | None, int | None]]:
        """Two runs' items paired by identity (`results._pairing`: the item's id, else `#index`, with its
        occurrence among the run's items of that identity), in one join over one short connection:
        (identity, index in A, index in B; None: not in that run), in B's order, then A's items B lacks
        in A's order. Reading the rows of each slice of these (`pair_rows`) is then a range of indexes
        in each run, where the join per slice of keys cost a pass over both runs every slice."""
        with self.connect(read_only=True) as con:
            keys = ("SELECT item_index, ident, row_number() OVER (PARTITION BY ident ORDER BY item_index) - 1 AS occ "
                    f"FROM ({self._identities(con)}) AS idents")
            cursor = con.execute(f"WITH ka AS ({keys.format(run='$1')}), kb AS ({keys.format(run='$2')}) "
                                 "SELECT ident, ka.item_index AS index_a, kb.item_index AS index_b "
                                 "FROM ka FULL OUTER JOIN kb USING (ident, occ) "
                                 "ORDER BY kb.item_index NULLS LAST, ka.item_index", [run_a, run_b])
            return [(str(ident), a, b) for ident, a, b in cursor.fetchall()]

    def pair_rows(self, runs: dict[str, list[int]]) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """Per run, the `outputs` and `scores` rows of the item indexes given (every repeat; by key,
        then evaluator), over one short connection. The bounds beside the list let the scan skip
        every row group outside the indexes' range."""
        rows: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        with self.connect(read_only=True) as con:
            for run_id, indexes in runs.items():
                if not indexes:
                    rows[run_id] = ([], [])
                    continue
                where = ("run_id = ? AND item_index BETWEEN ? AND ? AND item_index IN (SELECT unnest(?))")
                params = [run_id, min(indexes), max(indexes), indexes]
                rows[run_id] = (
                    fetch(con, f"SELECT * FROM outputs WHERE {where} ORDER BY item_index, run_index", params),
                    fetch(con, f"SELECT * FROM scores WHERE {where} ORDER BY item_index, run_index, evaluator",
                          params))
        for outputs, scores in rows.values():
            restore(outputs, self.values_dir)
            restore(scores, self.values_dir)
        return rows

    def run_scores(self, run_id: str,
                   ) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str, float | None, str]]]:
        """What ranks a run's items by their change, nothing else of them: each repeat's (item_index,
        run_index, status) and each score's (item_index, run_index, evaluator, score, status), over one
        short connection."""
        with self.connect(read_only=True) as con:
            outputs = con.execute("SELECT item_index, run_index, status FROM outputs WHERE run_id = ?",
                                  [run_id]).fetchall()
            scores = con.execute("SELECT item_index, run_index, evaluator, score, status FROM scores "
                                 "WHERE run_id = ?", [run_id]).fetchall()
        return outputs, scores

    def _identities(self, con: Any) -> str:
        """SQL (`{run}` the run id) for each item index of a run with its identity (its first repeat's)."""
        if self.backend.name == "duckdb":
            return (f"SELECT item_index, {_identity(con)} AS ident FROM outputs WHERE run_id = {{run}} "
                    "GROUP BY item_index")
        # A team store is made with every column, `item_id` among them; Postgres has no arg_min.
        return ("SELECT o.item_index, coalesce(nullif(o.item_id, ''), '#' || o.item_index) AS ident FROM outputs o "
                "JOIN (SELECT item_index, min(run_index) AS first FROM outputs WHERE run_id = {run} "
                "GROUP BY item_index) f "
                "ON o.item_index = f.item_index AND o.run_index = f.first WHERE o.run_id = {run}")

    def item_page(self, run_id: str, *, offset: int = 0, limit: int = 50, sort: str = "index",
                  descending: bool = False, search: str = "", only: str | None = None,
                  ) -> tuple[int, list[dict[str, Any]]]:
        """One page of a run's `outputs` rows, each with its `scores` rows under `scores`, and how many
        rows match. `sort`: index, status, latency, tokens, cost or `score:EVALUATOR`; `only`:
        `failures` (agent error, eval-error or a score below its pass mark) or `eval-errors`;
        `search`: a case-insensitive substring of the values in input or output, the error or a reason."""
        evaluator = sort.removeprefix("score:") if sort.startswith("score:") else ""
        order = {"status": "o.status", "latency": "o.latency_ms", "tokens": "o.tokens", "cost": "o.cost_usd",
                 }.get(sort, "s.sort_score" if evaluator else "o.item_index")
        where = {"failures": " AND (o.status <> 'ok' OR coalesce(s.eval_error OR s.below, false))",
                 "eval-errors": " AND coalesce(s.eval_error, false)"}.get(only or "", "")
        params: list[Any] = [evaluator, run_id, run_id]
        if search:
            # values, not field names: `country` must not match every item whose input has that key
            where += (" AND strpos(lower(concat_ws(' ', regexp_replace(CAST(o.input AS VARCHAR), ?, ' ', 'g'), "
                      "regexp_replace(CAST(o.output AS VARCHAR), ?, ' ', 'g'), o.error, s.reasons)), ?) > 0")
            params += [JSON_KEY, JSON_KEY]
            params.append(search.lower())
        sql = (
            "WITH s AS (SELECT item_index, run_index, bool_or(status <> 'ok') AS eval_error, "
            "bool_or(passed = false) AS below, max(score) FILTER (WHERE evaluator = ?) AS sort_score, "
            "string_agg(concat_ws(' ', reason, error), ' ') AS reasons FROM scores WHERE run_id = ? "
            "GROUP BY item_index, run_index) "
            "SELECT o.*, count(*) OVER () AS matched FROM outputs o LEFT JOIN s USING (item_index, run_index) "
            f"WHERE o.run_id = ?{where} ORDER BY {order} {'DESC' if descending else 'ASC'} NULLS LAST, "
            f"o.item_index, o.run_index LIMIT {int(limit)} OFFSET {int(offset)}")
        with self.connect(read_only=True) as con:
            rows = fetch(con, sql, params)
            keys = sorted({r["item_index"] for r in rows})
            scores = fetch(con, "SELECT * FROM scores WHERE run_id = ? AND item_index IN (SELECT unnest(?)) "
                                 "ORDER BY evaluator", [run_id, keys]) if keys else []
        by_key: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for score in scores:
            by_key.setdefault((score["item_index"], score["run_index"]), []).append(score)
        for row in rows:
            row["scores"] = by_key.get((row["item_index"], row["run_index"]), [])
        return (int(rows[0].pop("matched")) if rows else 0), [{k: v for k, v in r.items() if k != "matched"}
                                                               for r in rows]

    def item_records(self, run_id: str, index: int) -> list[dict[str, Any]]:
        """Every repeat of item `index` of a run: its `outputs` rows, each with its `scores` rows."""
        with self.connect(read_only=True) as con:
            rows = fetch(con, "SELECT * FROM outputs WHERE run_id = ? AND item_index = ? ORDER BY run_index",
                          [run_id, index])
            scores = fetch(con, "SELECT * FROM scores WHERE run_id = ? AND item_index = ? ORDER BY evaluator",
                            [run_id, index])
        restore(rows, self.values_dir)
        restore(scores, self.values_dir)
        for row in rows:
            row["scores"] = [s for s in scores if s["run_index"] == row["run_index"]]
        return rows

    def live_counts(self, run_id: str) -> dict[str, int]:
        """What a run has stored so far: agent calls done, failed and timed out; scores and eval-errors."""
        rows = self.query(
            "SELECT (SELECT count(*) FROM outputs WHERE run_id = $1) AS done, "
            "(SELECT count(*) FROM outputs WHERE run_id = $1 AND status = 'error') AS errors, "
            "(SELECT count(*) FROM outputs WHERE run_id = $1 AND status = 'timeout') AS timeouts, "
            "(SELECT count(*) FROM scores WHERE run_id = $1) AS scored, "
            "(SELECT count(*) FROM scores WHERE run_id = $1 AND status <> 'ok') AS eval_errors", [run_id])
        return {k: int(v or 0) for k, v in rows[0].items()}

    def score_bins(self, run_id: str, bins: int = 10) -> list[dict[str, Any]]:
        """Per evaluator, how many ok scores (0..1) fall in each of `bins` equal bins; with each
        evaluator's count, mean, passes and eval-errors so far (a run in progress has no aggregates yet)."""
        return self.query(
            "SELECT evaluator, least(greatest(floor(score * $2), 0), $2 - 1)::INTEGER AS bin, count(*) AS n "
            "FROM scores WHERE run_id = $1 AND status = 'ok' AND score IS NOT NULL GROUP BY evaluator, bin "
            "UNION ALL SELECT evaluator, -1, count(*) FILTER (WHERE status <> 'ok') FROM scores "
            "WHERE run_id = $1 GROUP BY evaluator ORDER BY evaluator, bin", [run_id, bins])

    def rows_of(self, table: str, run_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The `aggregates` or `verdicts` rows of several runs at once (the runs list, trends)."""
        if table not in ("aggregates", "verdicts"):
            raise ValueError(f"rows_of reads aggregates or verdicts, not {table!r}")
        if not run_ids:
            return []
        return self.query(f"SELECT * FROM {table} WHERE run_id IN (SELECT unnest(?))", [list(run_ids)])


def _identity(con: Any) -> str:
    """An item's identity in SQL, as `ItemResult` gives it (its first repeat's): its `item_id`; in a
    store from before that column, its `id`, else its `input_hash` (older still: `#index`)."""
    present = present_columns(con, "table_name = 'outputs'").get("outputs", set())
    first = [f"nullif(arg_min({expression}, run_index), '')" for column, expression in (
        ("item_id", "item_id"), ("input", "json_extract_string(input, '$.id')"), ("input_hash", "input_hash"))
        if column in present and (column != "input" or "item_id" not in present)]
    return "coalesce(" + ", ".join([*first, "'#' || item_index"]) + ")"
