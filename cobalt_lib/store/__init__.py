"""The store: every run's rows (DuckDB file by default), the journal that keeps them while the store is away,
the exchange of Dagster's shards, and reading stored runs back as reports."""

from __future__ import annotations

from ._exchange import Exchange
from ._history import (
    StreamedItems,
    load_report,
    resolve_run,
    stored_item_batches,
    stored_items,
    stored_pair_chunks,
    streamed_report,
)
from ._store import TABLES, Store
from ._writer import BatchWriter

__all__ = [
    "TABLES",
    "BatchWriter",
    "Exchange",
    "Store",
    "StreamedItems",
    "load_report",
    "resolve_run",
    "stored_item_batches",
    "stored_items",
    "stored_pair_chunks",
    "streamed_report",
]
