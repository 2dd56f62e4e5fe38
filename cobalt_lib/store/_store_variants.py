"""The store's run groups, a part of `Store`: the runs of every variant of one `cobalt run` share a `group_id`
(a column of `runs`, with the run's `variant`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError


class VariantRuns:
    """`Store`'s run-group methods; the SQL stays in the results package, beside the store's own."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...
        def _runs(self, sql: str, params: Sequence[Any], *, missing_ok: bool) -> list[dict[str, Any]]: ...

    def group_runs(self, group_id: str) -> list[dict[str, Any]]:
        """The runs of group `group_id` (live status), in the order their variants were declared."""
        rows = self._runs("SELECT * FROM runs WHERE group_id = ? ORDER BY started_at, run_id", [group_id],
                          missing_ok=True)
        return sorted(rows, key=_declared_position)

    def previous_of_variant(self, experiment: str, run_id: str) -> str | None:
        """The experiment's newest completed run started before `run_id` and of the same variant (none for
        both: runs without variants), if any: what a run is diffed against, never another variant."""
        import duckdb

        sql = ("SELECT run_id FROM runs WHERE experiment = ? AND run_id <> ? AND status = 'completed' "
               "AND started_at < (SELECT started_at FROM runs WHERE run_id = ?) {same} "
               "ORDER BY started_at DESC LIMIT 1")
        same = "AND variant IS NOT DISTINCT FROM (SELECT variant FROM runs WHERE run_id = ?)"
        try:
            rows = self.query(sql.format(same=same), [experiment, run_id, run_id, run_id])
        except duckdb.BinderException:  # a store from before variants, read before any write added the column
            rows = self.query(sql.format(same=""), [experiment, run_id, run_id])
        return str(rows[0]["run_id"]) if rows else None

    def groups(self, experiment: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Run groups newest first: `group_id`, `experiment`, `started_at`, `runs` (how many variants ran)."""
        if not self.exists():
            return []
        where = "WHERE group_id IS NOT NULL" + (" AND experiment = ?" if experiment else "")
        return self.query(f"SELECT group_id, min(experiment) AS experiment, min(started_at) AS started_at, "
                          f"count(*) AS runs FROM runs {where} GROUP BY group_id ORDER BY started_at DESC "
                          f"LIMIT {int(limit)}", [experiment] if experiment else [])

    def resolve_group(self, ref: str, experiment: str | None = None) -> str:
        """A group id from `ref`: an id, a unique prefix, `latest`, or a run id of one of its runs."""
        groups = self.groups(experiment, limit=1_000_000)
        scope = f" of experiment {experiment!r}" if experiment else ""
        if ref == "latest":
            if not groups:
                raise ConfigError(f"No run group{scope} is stored; run an experiment with variants first.")
            return str(groups[0]["group_id"])
        ids = [str(g["group_id"]) for g in groups]
        matches = [g for g in ids if g == ref] or [g for g in ids if g.startswith(ref)]
        if not matches:
            run = self._runs("SELECT * FROM runs WHERE run_id = ? OR run_id LIKE ? ORDER BY run_id",
                             [ref, f"{ref}%"], missing_ok=True)
            matches = sorted({str(r["group_id"]) for r in run if r.get("group_id")})
        if not matches:
            raise ConfigError(f"No run group{scope} has id {ref!r}; `cobalt history` shows each run's group.")
        if len(matches) > 1:
            raise ConfigError(f"Run group {ref!r} is ambiguous ({', '.join(matches[:5])}); give more characters.")
        return matches[0]


def _declared_position(row: dict[str, Any]) -> int:
    config = row.get("config") or {}
    variant = config.get("variant") if isinstance(config, dict) else None
    position = variant.get("position") if isinstance(variant, dict) else None
    return int(position) if isinstance(position, int) else 0
