"""One transaction's worth of rows, on disk: what `Store.write` and the journal (`_journal`) hand DuckDB.

A segment is a file of rows per table (newline-delimited JSON, values over the cap cut: `_values`)
and a header, `<stem>.json`, written last, which says what else the transaction does: replace a
run's rows of some tables first, add to its working time. A segment without its header was never
sealed and holds nothing to apply.

A journal's segment has an id, recorded in the store's `segments` table in the transaction that puts
it in: a segment replayed after it went in (its process died before removing it) is skipped. A
segment of a run this process claimed carries the claim's epoch and token (its `fence`): it goes in
only while the run's row still holds them, else `LeaseLost` (another process took the run over).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import LeaseLost
from ._backend import dialect_of
from ._tables import insert_file, write_rows

#: The columns that identify a row, for the tables a replayed segment may hold again.
_KEYS = {"outputs": ("item_index", "run_index"), "scores": ("item_index", "run_index", "evaluator"),
         "spans": ("item_index", "run_index", "span_id")}


@dataclass
class Segment:
    """A sealed segment: `files` maps each table to its rows' file (in `directory`) and its longest line."""

    directory: Path
    stem: str
    files: dict[str, tuple[str, int]] = field(default_factory=dict)
    delete_run: str | None = None
    delete_tables: list[str] = field(default_factory=list)
    add_work: tuple[str, float] | None = None
    #: A journal segment's id (None for a write's own segment, which is never replayed).
    segment_id: str | None = None
    #: `{run_id: (epoch, token)}` of the claims the rows were written under (`_liveness`).
    fence: dict[str, tuple[int, str]] = field(default_factory=dict)

    @property
    def header(self) -> Path:
        return self.directory / f"{self.stem}.json"

    def rows(self, table: str) -> Path:
        return self.directory / self.files[table][0]

    def remove(self) -> None:
        """Unlink the header first: a segment half removed is one never sealed."""
        for path in [self.header, *(self.directory / name for name, _ in self.files.values())]:
            path.unlink(missing_ok=True)


def seal(directory: Path, stem: str, batches: dict[str, list[dict[str, Any]]], *, values: Path, limit: int,
         delete_run: str | None = None, delete_tables: Sequence[str] = (),
         add_work: tuple[str, float] | None = None, segment_id: str | None = None,
         fence: dict[str, tuple[int, str]] | None = None) -> Segment:
    """Write `batches` as a segment in `directory`: the rows' files, then the header (a rename)."""
    segment = Segment(directory, stem, delete_run=delete_run, delete_tables=list(delete_tables), add_work=add_work,
                      segment_id=segment_id, fence=dict(fence or {}))
    for table, rows in batches.items():
        if rows:
            name = f"{stem}.{table}.ndjson"
            segment.files[table] = (name, write_rows(directory / name, table, rows, values, limit))
    head = {"files": segment.files, "delete_run": delete_run, "delete_tables": segment.delete_tables,
            "add_work": list(add_work) if add_work else None, "segment_id": segment_id,
            "fence": {run: list(claim) for run, claim in segment.fence.items()}}
    tmp = directory / f".{stem}.json.tmp"
    tmp.write_text(json.dumps(head), encoding="utf-8")
    os.replace(tmp, segment.header)
    return segment


def read(header: Path) -> Segment:
    """The segment whose header is `header`."""
    head = json.loads(header.read_text(encoding="utf-8"))
    work = head.get("add_work")
    return Segment(header.parent, header.name.removesuffix(".json"),
                   files={t: (str(n), int(size)) for t, (n, size) in head.get("files", {}).items()},
                   delete_run=head.get("delete_run"), delete_tables=list(head.get("delete_tables") or []),
                   add_work=(str(work[0]), float(work[1])) if work else None, segment_id=head.get("segment_id"),
                   fence={str(r): (int(e), str(t)) for r, (e, t) in (head.get("fence") or {}).items()})


def run_ids(batches: dict[str, list[dict[str, Any]]], delete_run: str | None = None,
            add_work: tuple[str, float] | None = None) -> set[str]:
    """The runs whose rows a transaction writes."""
    found = {str(row["run_id"]) for rows in batches.values() for row in rows if row.get("run_id") is not None}
    return found | {r for r in (delete_run, add_work[0] if add_work else None) if r is not None}


def apply(con: Any, segment: Segment, *, replay: bool = False) -> float | None:
    """Inside the caller's transaction: do what the segment holds. A `replay` (a segment another process
    sealed, which may have gone in just before that process died) first deletes the rows it holds again.
    Returns the run's working time after `add_work`, when the segment adds some. A segment already in
    the store (its id recorded) does nothing; one whose claim another process took raises LeaseLost."""
    if segment.segment_id is not None and con.execute("SELECT 1 FROM segments WHERE segment_id = ?",
                                                      [segment.segment_id]).fetchall():
        return None
    for run_id, (epoch, token) in segment.fence.items():
        check_fence(con, run_id, epoch, token)
    if segment.segment_id is not None:
        con.execute("INSERT INTO segments (segment_id, run_id, applied_at) VALUES (?, ?, current_timestamp)",
                    [segment.segment_id, segment.delete_run or next(iter(segment.fence), None)
                     or (segment.add_work[0] if segment.add_work else None)])
    prior = None
    if "runs" in segment.delete_tables and "runs" in segment.files:
        prior = _prior_work(con, segment.delete_run)
    for table in segment.delete_tables:
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [segment.delete_run])
    for table, (name, longest) in segment.files.items():
        if replay and table in _KEYS:
            dialect_of(con).delete_again(con, table, _KEYS[table], segment.directory / name, longest)
        insert_file(con, table, segment.directory / name, longest)
    if prior is not None:
        con.execute("UPDATE runs SET worked_ms = ? WHERE run_id = ? AND worked_ms IS NULL", [prior, segment.delete_run])
    return None if segment.add_work is None else _add_work(con, *segment.add_work)


def _prior_work(con: Any, run_id: str | None) -> float:
    """A run row written again (a resume, the finish) keeps the working time already stored for the
    run; a row from a store older than the `worked_ms` column starts from its summary's duration."""
    stored = con.execute("SELECT worked_ms, summary FROM runs WHERE run_id = ?", [run_id]).fetchall()
    if not stored:
        return 0.0
    worked, summary = stored[0]
    summary = json.loads(summary) if isinstance(summary, str) else summary or {}
    return float(worked if worked is not None else summary.get("total_duration_ms") or 0.0)


def _add_work(con: Any, run_id: str, ms: float) -> float | None:
    found = con.execute("UPDATE runs SET worked_ms = coalesce(worked_ms, 0) + ? WHERE run_id = ? RETURNING worked_ms",
                        [ms, run_id]).fetchall()
    return float(found[0][0]) if found else None


def check_fence(con: Any, run_id: str, epoch: int, token: str) -> None:
    """Raise LeaseLost unless run `run_id`'s row still holds the claim (`epoch`, `token`)."""
    found = con.execute("SELECT lease_epoch, lease_token, pid, host FROM runs WHERE run_id = ?"
                        + dialect_of(con).row_lock, [run_id]).fetchall()
    if found and (found[0][0], found[0][1]) == (epoch, token):
        return
    by = f"process {found[0][2]} on {found[0][3]}" if found else "a command that removed it"
    raise LeaseLost(run_id, f"Run {run_id} was taken over by {by} while this process worked on it; this process "
                            "stops writing it, so no item runs twice.")
