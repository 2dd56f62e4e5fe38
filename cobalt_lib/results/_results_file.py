"""The results directory: one JSON file per run, written atomically and item by item."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from .._files import write_chunks_atomically
from .._secrets import scrubber
from ._report import ExperimentReport
from ._spill import StoredItems

#: Where the items go in `model_dump_json(indent=2)` of a report without items (fields at depth 1).
_NO_ITEMS = '\n  "items": [],\n'
_ITEM_INDENT = b"\n    "


def results_filename(report: ExperimentReport) -> str:
    """`<timestamp>_<experiment>_<run id>.json`, safe on every file system."""
    stamp = datetime.fromisoformat(report.timestamp).strftime("%Y%m%dT%H%M%SZ")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.name).strip("_") or "experiment"
    return f"{stamp}_{name}_{report.id}.json"


def write_results(report: ExperimentReport, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / results_filename(report)
    report.results_path = str(target)
    clean = scrubber()  # a message in the report (a gate's, an item's error) may quote a server's echo
    write_chunks_atomically(target, (clean(chunk.decode("utf-8")).encode("utf-8") for chunk in results_json(report)))
    return target


def results_json(report: ExperimentReport) -> Iterator[bytes]:
    """`report.model_dump_json(indent=2)`, byte for byte, one item at a time: a run's items are read
    back from disk as they are written, so writing never holds more than one of them."""
    shell = report.model_copy(update={"items": []}).model_dump_json(indent=2)
    head, found, tail = shell.partition(_NO_ITEMS)
    if not report.items or not found:
        yield (shell if found else report.model_dump_json(indent=2)).encode("utf-8")
        return
    yield (head + '\n  "items": [').encode("utf-8")
    for position, data in enumerate(_items_json(report)):
        yield (b"," if position else b"") + _ITEM_INDENT + data.replace(b"\n", _ITEM_INDENT)
    yield ("\n  ],\n" + tail).encode("utf-8")


def _items_json(report: ExperimentReport) -> Iterator[bytes]:
    """Each item's `model_dump_json(indent=2)`; a run's stored items as they were stored, unparsed."""
    items = report.items
    if isinstance(items, StoredItems):
        return (items.raw(position) for position in range(len(items)))
    return (item.model_dump_json(indent=2).encode("utf-8") for item in items)


def read_results(path: str | Path) -> ExperimentReport:
    return ExperimentReport.model_validate_json(Path(path).read_text(encoding="utf-8"))
