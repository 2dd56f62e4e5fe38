"""The store's production side, a part of `Store`: the spans `cobalt collect` received (`trace_spans`),
read back grouped by trace. Standard SQL with `?` parameters: it runs on every backend of the store."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..results._spans import SpanRecord, span_from_row
from ._tables import fetch
from ._values import restore

#: At most this many ids bound in one `IN (...)`: well under every backend's parameter limit.
_CHUNK = 500


class TraceRows:
    """`Store`'s production trace methods."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        def connect(self, *, read_only: bool = False) -> AbstractContextManager[Any]: ...
        def _transaction(self, *, ensure_schema: bool = False) -> AbstractContextManager[Any]: ...
        def write(self, batches: dict[str, list[dict[str, Any]]], *, delete_run: str | None = None,
                  delete_tables: Sequence[str] = (), add_work: tuple[str, float] | None = None) -> float | None: ...
        @property
        def values_dir(self) -> Path: ...

    def add_trace_spans(self, rows: list[dict[str, Any]], summaries: Sequence[dict[str, Any]] = ()) -> int:
        """Store received spans (`trace_spans` rows), and the summaries of their traces (`trace_summaries`
        rows), in one transaction; returns how many spans."""
        if rows:
            self.write({"trace_spans": rows, **({"trace_summaries": list(summaries)} if summaries else {})})
        return len(rows)

    def trace_summaries_of(self, trace_ids: Sequence[str], *,
                           columns: Sequence[str] = ()) -> dict[str, list[dict[str, Any]]]:
        """The `trace_summaries` rows of these traces, by trace id (a trace whose spans came in several
        commits has several); none in a store from before the table. `columns`: those alone (with
        `trace_id`, `spans` and `cut_values`), each a JSON value fewer to decode; every one when empty."""
        if not trace_ids or not self._has_traces("trace_summaries"):
            return {}
        wanted = ", ".join(dict.fromkeys(["trace_id", "spans", "cut_values", *columns])) if columns else "*"
        with self.connect(read_only=True) as con:
            # the ids bound as one list: a query, where chunks of `IN (?, ?, ...)` cost 3x the CPU to bind
            rows = fetch(con, f"SELECT {wanted} FROM trace_summaries WHERE trace_id IN (SELECT unnest(?))",
                         [list(dict.fromkeys(trace_ids))])
        restore(rows, self.values_dir)
        found: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            found.setdefault(row["trace_id"], []).append(row)
        return found

    def trace_list(self, *, service: str | None = None, span: str | None = None, since_ns: int | None = None,
                   until_ns: int | None = None, limit: int | None = None, offset: int = 0,
                   monitor: str | None = None) -> list[dict[str, Any]]:
        """The stored traces, newest first: `{trace_id, service, start_ns, spans}` each. `service` and `span`
        keep the traces holding a span of that service (`service.name`) and name; `since_ns`/`until_ns`
        the traces that started in [since, until); `monitor` those a window of that monitor scored (its
        runs' items are trace ids); `limit` and `offset` page the list in SQL (the pages' list)."""
        if not self._has_traces():
            return []
        having: list[str] = []
        params: list[Any] = []
        if since_ns is not None:
            having.append("min(start_ns) >= ?")
            params.append(since_ns)
        if until_ns is not None:
            having.append("min(start_ns) < ?")
            params.append(until_ns)
        held = []
        for column, value in (("service", service), ("name", span)):
            if value is not None:
                held.append(f"{column} = ?")
                params.append(value)
        if held:  # a span of the trace matches: in the one pass over the spans (a subquery of them cost 2x)
            having.append(f"bool_or({' AND '.join(held)})")
        sql = ("SELECT trace_id, max(service) AS service, min(start_ns) AS start_ns, count(DISTINCT span_id) AS spans "
               "FROM trace_spans")
        where_params: list[Any] = []
        if monitor is not None:
            sql += (" WHERE trace_id IN (SELECT o.item_id FROM outputs o JOIN runs r ON r.run_id = o.run_id "
                    "WHERE r.source = 'monitor' AND r.experiment = ?)")
            where_params.append(monitor)
        sql += " GROUP BY trace_id" + (f" HAVING {' AND '.join(having)}" if having else "")
        sql += " ORDER BY start_ns DESC, trace_id" + (f" LIMIT {int(limit)}" if limit else "")
        sql += f" OFFSET {int(offset)}" if offset and limit else ""
        with self.connect(read_only=True) as con:
            return fetch(con, sql, [*where_params, *params])

    def trace_filters(self) -> dict[str, list[str]]:
        """What the traces can be filtered by: the services they came from and the monitors that scored them."""
        if not self._has_traces():
            return {"services": [], "monitors": []}
        with self.connect(read_only=True) as con:
            services = fetch(con, "SELECT DISTINCT service FROM trace_spans WHERE service IS NOT NULL", [])
            monitors = fetch(con, "SELECT DISTINCT experiment FROM runs WHERE source = 'monitor'", [])
        return {"services": sorted(str(r["service"]) for r in services),
                "monitors": sorted(str(r["experiment"]) for r in monitors)}

    def trace_spans_of(self, trace_ids: Sequence[str]) -> dict[str, list[SpanRecord]]:
        """Each trace's spans in the order they started, by trace id; a span received twice (an exporter's
        retry) once. A trace not stored has none."""
        if not trace_ids or not self._has_traces():
            return {}
        with self.connect(read_only=True) as con:  # every trace's spans in one query (the ids one list)
            rows = fetch(con, "SELECT * FROM trace_spans WHERE trace_id IN (SELECT unnest(?)) "
                              "ORDER BY trace_id, start_ns, span_id", [list(dict.fromkeys(trace_ids))])
        restore(rows, self.values_dir)
        found: dict[str, list[SpanRecord]] = {}
        seen: set[tuple[str, str]] = set()
        for row in rows:
            key = (row["trace_id"], row["span_id"])
            if key not in seen:
                seen.add(key)
                found.setdefault(row["trace_id"], []).append(span_from_row(row))
        return found

    def trace_services(self, trace_ids: Sequence[str]) -> dict[str, str | None]:
        """The service (`service.name`) each of these traces came from."""
        if not trace_ids or not self._has_traces():
            return {}
        ids = list(dict.fromkeys(trace_ids))[:_CHUNK]
        with self.connect(read_only=True) as con:
            rows = con.execute(f"SELECT trace_id, max(service) FROM trace_spans WHERE trace_id IN "
                               f"({', '.join('?' * len(ids))}) GROUP BY trace_id", ids).fetchall()
        return {str(t): s for t, s in rows}

    def window_aggregates(self, run_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The `aggregates` rows (run_id, metric, mean, stddev, count) of these runs (a monitor's windows)."""
        ids = list(dict.fromkeys(run_ids))[:_CHUNK]
        if not ids or not self.exists():
            return []
        with self.connect(read_only=True) as con:
            return fetch(con, "SELECT run_id, metric, mean, stddev, count FROM aggregates WHERE kind = ? AND run_id IN "
                              f"({', '.join('?' * len(ids))}) AND mean IS NOT NULL", ["evaluator", *ids])

    def worst_items(self, run_id: str, evaluator: str, limit: int, *,
                    lower_is_better: bool = False) -> list[dict[str, Any]]:
        """The run's `limit` worst-scored items by `evaluator`: `{item_id, score, reason}` each."""
        order = "DESC" if lower_is_better else "ASC"
        with self.connect(read_only=True) as con:
            return fetch(con, "SELECT o.item_id, s.score, s.reason FROM scores s JOIN outputs o ON o.run_id = s.run_id "
                              "AND o.item_index = s.item_index AND o.run_index = s.run_index WHERE s.run_id = ? AND "
                              f"s.evaluator = ? AND s.score IS NOT NULL ORDER BY s.score {order}, o.item_id "
                              f"LIMIT {int(limit)}", [run_id, evaluator])

    def note_run(self, run_id: str, key: str, note: str) -> None:
        """Add `{key: note}` to the run's summary under `notes` (why a monitor's window is incomplete)."""
        import json

        with self._transaction() as con:
            found = con.execute("SELECT summary FROM runs WHERE run_id = ?", [run_id]).fetchall()
            if not found:
                return
            summary = found[0][0]
            summary = json.loads(summary) if isinstance(summary, str) else dict(summary or {})
            summary["notes"] = {**(summary.get("notes") or {}), key: note}
            con.execute("UPDATE runs SET summary = ? WHERE run_id = ?", [json.dumps(summary), run_id])

    def prune_traces(self, before_ns: int) -> int:
        """Delete the traces that started before `before_ns` (every span of each); returns how many traces."""
        if not self._has_traces():
            return 0
        summaries = self._has_traces("trace_summaries")
        with self._transaction() as con:
            old = [r[0] for r in con.execute("SELECT trace_id FROM trace_spans GROUP BY trace_id "
                                             "HAVING min(start_ns) < ?", [before_ns]).fetchall()]
            for at in range(0, len(old), _CHUNK):
                chunk = old[at:at + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                con.execute(f"DELETE FROM trace_spans WHERE trace_id IN ({marks})", chunk)
                if summaries:
                    con.execute(f"DELETE FROM trace_summaries WHERE trace_id IN ({marks})", chunk)
        return len(old)

    def _has_traces(self, table: str = "trace_spans") -> bool:
        """Whether the store has the table (`trace_spans`; a store from before it, or none yet, has not)."""
        if not self.exists():
            return False
        known: set[str] = self.__dict__.setdefault("_trace_tables", set())
        if table in known:  # once made a table stays (a window's three reads asked the catalogue three times)
            return True
        with self.connect(read_only=True) as con:  # both production tables at once: a window reads both
            known.update(str(row[0]) for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_name IN (?, ?)",
                ["trace_spans", "trace_summaries"]).fetchall())
        return table in known
