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
    #: `passed`: completed with every gate passed; `failed`: gates failed, or the run did not complete.
    gates: str | None = None


class RunPages:
    """`Store`'s paginated run reads; the SQL stays in the results package, beside the store's own."""

    path: Path
    now: Callable[[], datetime]

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
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

    def row_page(self, selection: RunSelection = RunSelection(), *, offset: int = 0,
                 limit: int = 20) -> list[list[dict[str, Any]]]:
        """The runs list's rows, newest first, `limit` of them from `offset`: a run alone, or the selected
        variants of one run group together (a row where its newest variant is), each newest first."""
        where, params = self._where(selection)
        if selection.tag:
            keys = list(dict.fromkeys(key for _, key in self._tagged_ids(where, params, selection.tag, keyed=True)))
            keys = keys[offset:offset + limit]
        else:
            found = self._counted(f"SELECT {_ROW_KEY} AS row_key FROM runs{where} GROUP BY {_ROW_KEY} "
                                  "ORDER BY max(started_at) DESC, max(run_id) DESC "
                                  f"LIMIT {int(limit)} OFFSET {int(offset)}", params)
            keys = [str(r["row_key"]) for r in found]
        if not keys:
            return []
        marks = ", ".join("?" * len(keys))
        members = self._runs(f"SELECT * FROM runs{where}{' AND' if where else ' WHERE'} {_ROW_KEY} IN ({marks}) "
                             "ORDER BY started_at DESC, run_id DESC", [*params, *keys], missing_ok=True)
        rows: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
        for run in members:
            if selection.tag and selection.tag not in (run.get("tags") or []):
                continue  # a variant of a tagged run's group that is not tagged itself
            rows[str(run.get("group_id") or run["run_id"])].append(run)
        return [row for row in rows.values() if row]

    def row_count(self, selection: RunSelection = RunSelection()) -> int:
        """How many rows of the runs list `selection` selects (a run group's variants are one row)."""
        where, params = self._where(selection)
        if selection.tag:
            return len({key for _, key in self._tagged_ids(where, params, selection.tag, keyed=True)})
        rows = self._counted(f"SELECT COUNT(DISTINCT {_ROW_KEY}) AS n FROM runs{where}", params)
        return int(rows[0]["n"]) if rows else 0

    def previous_runs(self, run_ids: Sequence[str]) -> dict[str, str]:
        """`{run_id: the run before it}`: the newest completed run of the same experiment and variant that
        started before it, for each of `run_ids` that has one. One top-1 scan per run, all in one statement
        (a correlated subquery is planned as a join of every run with every run before it)."""
        if not run_ids:
            return {}
        marks = ", ".join("?" * len(run_ids))
        runs = self._counted(f"SELECT run_id, experiment, variant, started_at FROM runs WHERE run_id IN ({marks})",
                             list(run_ids))
        if not runs:
            return {}
        one = ("SELECT ? AS run_id, (SELECT run_id FROM runs WHERE experiment = ? AND coalesce(variant, '') = ? "
               "AND status = 'completed' AND (started_at < ? OR (started_at = ? AND run_id < ?)) "
               "ORDER BY started_at DESC, run_id DESC LIMIT 1) AS previous")
        params: list[Any] = []
        for r in runs:
            params += [r["run_id"], r["experiment"], r["variant"] or "", r["started_at"], r["started_at"], r["run_id"]]
        rows = self._counted(" UNION ALL ".join([one] * len(runs)), params)
        return {str(r["run_id"]): str(r["previous"]) for r in rows if r["previous"] is not None}

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
        if selection.gates:
            clause, values = self._gates_clause(selection.gates)
            clauses.append(clause)
            params += values
        if selection.tag and _verbatim(selection.tag):  # narrows only: the decoded tags decide (`_tagged_ids`)
            clauses.append("CAST(tags AS VARCHAR) LIKE ? ESCAPE '!'")
            params.append("%" + _like_escaped(selection.tag) + "%")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _status_clause(self, status: str) -> tuple[str, list[Any]]:
        """SQL for a live status: the rule of `_liveness.expired` (a lease past now; without a lease,
        `started_at` more than one lease ago; without either, expired)."""
        lapsed, values = self._lapsed()
        if status == "running":
            return f"status = 'running' AND NOT ({lapsed})", values
        if status == "incomplete":
            return f"(status = 'incomplete' OR ({lapsed}))", values
        if status == "failed-gates":
            return "(status = 'failed-gates' OR passed = FALSE)", []
        return "status = ?", [status]

    def _gates_clause(self, gates: str) -> tuple[str, list[Any]]:
        """SQL for the gates' verdict (`ops._history._passed`): passed only when completed; a run that did
        not complete (failed, incomplete, a lapsed lease) counts as failed, one running as neither."""
        if gates == "passed":
            return "(status = 'completed' AND passed = TRUE)", []
        lapsed, values = self._lapsed()
        return (f"((status = 'completed' AND passed = FALSE) OR status NOT IN ('completed', 'running') "
                f"OR ({lapsed}))"), values

    def _lapsed(self) -> tuple[str, list[Any]]:
        from ._liveness import lease_seconds

        now = self.now()
        return ("status = 'running' AND ((lease_until IS NOT NULL AND lease_until < ?) OR (lease_until IS NULL "
                "AND (started_at IS NULL OR started_at < ?)))"), [now, now - timedelta(seconds=lease_seconds())]

    def _tagged_ids(self, where: str, params: list[Any], tag: str, *, keyed: bool = False) -> list[Any]:
        """The ids of the runs carrying `tag`, newest first; `keyed`: (id, runs list row key) pairs."""
        rows = self._counted(f"SELECT run_id, {_ROW_KEY} AS row_key, CAST(tags AS VARCHAR) AS tag_text FROM runs"
                             f"{where} ORDER BY started_at DESC, run_id DESC", params)
        chosen = [r for r in rows if tag in _tags(r["tag_text"])]
        if keyed:
            return [(str(r["run_id"]), str(r["row_key"])) for r in chosen]
        return [str(r["run_id"]) for r in chosen]

    def _counted(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """`query`, with no store file (or no tables yet) read as no runs."""
        import duckdb

        if not self.path.exists():
            return []
        try:
            return self.query(sql, params)
        except duckdb.CatalogException:  # a file without the tables yet: no run was ever started in it
            return []


#: A runs list row: a run group's variants share one, a run alone is its own.
_ROW_KEY = "coalesce(group_id, run_id)"


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
