"""Where a run writes down its judge batches: the store's `judge_batches` table (`BatchLedger`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .._errors import StoreError
from ..llm._batch import StoredBatch
from ..store._store import Store


class StoreLedger:
    """The run `run_id`'s batches in `store`. A store too busy to take a note does not stop the run: the
    batch id is printed instead, and only the resume would miss it."""

    def __init__(self, store: Store, run_id: str, *, also: Sequence[str] = ()) -> None:
        self.store = store
        self.run_id = run_id
        #: The runs whose open batches this run's judge also waits on (the other runs of its group).
        self.runs = list(dict.fromkeys([run_id, *also]))

    def opened(self, batch: StoredBatch) -> None:
        try:
            self.store.note_judge_batch(self.run_id, batch.batch_id, batch.endpoint, batch.custom_ids)
        except StoreError as exc:
            print(f"cobalt: judge batch {batch.batch_id} ({batch.endpoint}, {len(batch.custom_ids)} requests) of run "
                  f"{self.run_id} could not be written down ({exc}); a resumed run would send its requests again.",
                  file=sys.stderr)

    def ended(self, batch_id: str, status: str, counts: dict[str, int]) -> None:
        self.store.end_judge_batch(batch_id, status, counts)

    def open_batches(self) -> list[StoredBatch]:
        try:
            rows = [row for run_id in self.runs for row in self.store.judge_batches(run_id, open_only=True)]
        except StoreError:
            return []
        return [StoredBatch(str(r["batch_id"]), str(r["endpoint"]), tuple(r["requests"] or ())) for r in rows]
