"""The store's pages of runs, a part of `Store`: one page of the runs a filter selects, its count, and the
names a filter offers, each from SQL over the `runs` table, so a view costs its page, not every stored run.

The SQL is plain (placeholders, `LIKE`, `COUNT`, `DISTINCT`, `CAST`): it runs on DuckDB and on Postgres.
Two filters are not plain column tests and are kept exact here:
- a run's status is its live one: a `running` row whose lease ran out reads `incomplete` (`_liveness`),
  so the lease is compared in SQL with the same rule `expired` applies;
- a tag is an element of the JSON `tags` column, whose text differs between backends: SQL narrows the
  runs to those whose tags' text holds the tag, and their decoded tags are checked here (two narrow
  columns of those runs only).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any


@dataclass(frozen=True)
class RunSelection:
    """Which runs a view lists; None (or empty) is no filter. `status` is a live status, or
    `failed-gates` (a finished run whose gates failed)."""

    experiment: str | None = None
    tag: str | None = None
    status: str | None = None
    #: First and last day (`YYYY-MM-DD`) of `started_at`, both included.
    since: str | None = None
    until: str | None = None


class RunPages:
    """`Store`'s paginated run reads; the SQL stays in the results package, beside the store's own."""

    path: Path
    now: Callable[[], datetime]

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...
        def _runs(self, sql: str, params: Sequence[Any], *, missing_ok: bool) -> list[dict[str, Any]]: ...

    def run_page(self, selection: RunSelection = RunSelection(), *, offset: int = 0,
                 limit: int = 20) -> list[dict[str, Any]]:
        """The runs `selection` selects, newest first, `limit` of them from `offset` (live status)."""
        where, params = self._where(selection)
        if selection.tag:
            ids = self._tagged_ids(where, params, selection.tag)[offset:offset + limit]
            if not ids:
                return []
            marks = ", ".join("?" * len(ids))
            return self._runs(f"SELECT * FROM runs WHERE run_id IN ({marks}) ORDER BY started_at DESC, run_id DESC",
                              ids, missing_ok=True)
        return self._runs(f"SELECT * FROM runs{where} ORDER BY started_at DESC, run_id DESC "
                          f"LIMIT {int(limit)} OFFSET {int(offset)}", params, missing_ok=True)

    def run_count(self, selection: RunSelection = RunSelection()) -> int:
        """How many runs `selection` selects."""
        where, params = self._where(selection)
        if selection.tag:
            return len(self._tagged_ids(where, params, selection.tag))
        rows = self._counted(f"SELECT COUNT(*) AS n FROM runs{where}", params)
        return int(rows[0]["n"]) if rows else 0

    def experiment_names(self) -> list[str]:
        """Every experiment with a stored run, in name order."""
        rows = self._counted("SELECT DISTINCT experiment FROM runs", [])
        return sorted(str(r["experiment"]) for r in rows)

    def newest_experiment(self) -> str | None:
        """The experiment of the newest stored run, if any."""
        rows = self._counted("SELECT experiment FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1", [])
        return str(rows[0]["experiment"]) if rows else None

    def tag_names(self, experiment: str | None = None) -> list[str]:
        """Every tag on a stored run (of `experiment`), in order: read as the distinct tag sets, which are few."""
        where, params = (" WHERE experiment = ?", [experiment]) if experiment else ("", [])
        rows = self._counted(f"SELECT DISTINCT CAST(tags AS VARCHAR) AS tag_text FROM runs{where}", params)
        return sorted({str(t) for r in rows for t in _tags(r["tag_text"])})

    def _where(self, selection: RunSelection) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if selection.experiment:
            clauses.append("experiment = ?")
            params.append(selection.experiment)
        if selection.status:
            clause, values = self._status_clause(selection.status)
            clauses.append(clause)
            params += values
        if selection.since:
            clauses.append("CAST(started_at AS DATE) >= CAST(? AS DATE)")
            params.append(selection.since)
        if selection.until:
            clauses.append("CAST(started_at AS DATE) <= CAST(? AS DATE)")
            params.append(selection.until)
        if selection.tag and _verbatim(selection.tag):  # narrows only: the decoded tags decide (`_tagged_ids`)
            clauses.append("CAST(tags AS VARCHAR) LIKE ? ESCAPE '!'")
            params.append("%" + _like_escaped(selection.tag) + "%")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _status_clause(self, status: str) -> tuple[str, list[Any]]:
        """SQL for a live status: the rule of `_liveness.expired` (a lease past now; without a lease,
        `started_at` more than one lease ago; without either, expired)."""
        from ._liveness import lease_seconds

        now = self.now()
        lapsed = ("status = 'running' AND ((lease_until IS NOT NULL AND lease_until < ?) OR (lease_until IS NULL "
                  "AND (started_at IS NULL OR started_at < ?)))")
        values = [now, now - timedelta(seconds=lease_seconds())]
        if status == "running":
            return f"status = 'running' AND NOT ({lapsed})", values
        if status == "incomplete":
            return f"(status = 'incomplete' OR ({lapsed}))", values
        if status == "failed-gates":
            return "(status = 'failed-gates' OR passed = FALSE)", []
        return "status = ?", [status]

    def _tagged_ids(self, where: str, params: list[Any], tag: str) -> list[str]:
        rows = self._counted(f"SELECT run_id, CAST(tags AS VARCHAR) AS tag_text FROM runs{where} "
                             "ORDER BY started_at DESC, run_id DESC", params)
        return [str(r["run_id"]) for r in rows if tag in _tags(r["tag_text"])]

    def _counted(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """`query`, with no store file (or no tables yet) read as no runs."""
        import duckdb

        if not self.exists():
            return []
        try:
            return self.query(sql, params)
        except duckdb.CatalogException:  # a file without the tables yet: no run was ever started in it
            return []


def _tags(text: str | None) -> list[Any]:
    found = json.loads(text) if text else None
    return found if isinstance(found, list) else []


def _verbatim(text: str) -> bool:
    """Whether every JSON encoder writes `text` as it is (printable ASCII without quote, backslash or
    slash), so the tags' text holds it literally."""
    return all(" " <= c <= "~" and c not in '"\\/' for c in text)


def _like_escaped(text: str) -> str:
    """`text` as a literal inside a LIKE pattern whose escape character is `!`."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")
