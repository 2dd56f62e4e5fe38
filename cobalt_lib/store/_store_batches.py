"""The store's record of judge batches, a part of `Store`: which provider batches a run's judge calls went
out in (`judge_batches`), so that a resumed run waits on them instead of paying for new ones."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

#: A batch in one of these states is over: its answers were handed out, or it has none left to give.
ENDED = ("completed", "ended", "failed", "expired", "cancelled", "canceled")


class JudgeBatches:
    """`Store`'s judge-batch methods."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        def _transaction(self, *, ensure_schema: bool = False) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def note_judge_batch(self, run_id: str, batch_id: str, endpoint: str, custom_ids: Sequence[str]) -> None:
        """Write down a batch the moment it exists (`submitted`), with the ids of the requests it holds."""
        with self._transaction(ensure_schema=True) as con:
            con.execute("INSERT INTO judge_batches (run_id, batch_id, endpoint, status, requests, counts, created_at) "
                        "VALUES (?, ?, ?, 'submitted', ?, '{}', ?)",
                        [run_id, batch_id, endpoint, _json(list(custom_ids)), datetime.now(UTC)])

    def end_judge_batch(self, batch_id: str, status: str, counts: dict[str, int]) -> None:
        """The batch ended (`status` as its provider says) and its answers were handed out."""
        with self._transaction(ensure_schema=True) as con:
            con.execute("UPDATE judge_batches SET status = ?, counts = ?, ended_at = ? WHERE batch_id = ?",
                        [status, _json(counts), datetime.now(UTC), batch_id])

    def judge_batches(self, run_id: str, *, open_only: bool = False) -> list[dict[str, Any]]:
        """The run's batches, oldest first; `open_only`: those not known to have ended."""
        import duckdb

        if not self.exists():
            return []
        try:
            rows = self.query("SELECT * FROM judge_batches WHERE run_id = ? ORDER BY created_at, batch_id", [run_id])
        except duckdb.CatalogException:  # a store from before the table
            return []
        return [r for r in rows if not open_only or r["status"] not in ENDED]


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))
