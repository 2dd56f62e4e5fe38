"""The store: every run's rows (DuckDB file by default), the journal that keeps them while the store is away,
the exchange of Dagster's shards, and reading stored runs back as reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
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

if TYPE_CHECKING:
    from ._exchange import Exchange

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

#: A Dagster sharded run's exchange loads on first use (a library run writes none).
__getattr__, __dir__ = lazy_names(__name__, {"Exchange": "._exchange"}, __all__, globals())
