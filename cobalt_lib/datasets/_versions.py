"""Versions of stored datasets: push a file, list, show, diff and export (docs/datasets.md).

A version is immutable and numbered from 1; it is content-addressed by the hash of its items in order and
of which split each is in, so pushing what the latest version already holds makes no new version. Items
keep their identity (`id`, else their content hash): a diff pairs by it, and a version refuses two items
of one identity.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._errors import DatasetError
from ..experiments._dataset import Dataset, parse_ref, resolve_stored
from ..results._identity import content_hash, item_identity
from ..run._identity import dataset_identity
from ..store import Store
from ._models import DatasetDiff, DiffEntry, PushOutcome, ShownVersion, VersionInfo

#: An item row as a version holds it: the item, its split and where it came from.
Row = dict[str, Any]


def push_dataset(store: Store, name: str, file: str | Path, *, split: str | None = None,
                 note: str | None = None) -> PushOutcome:
    """Store `file`'s items as the next version of `name`. `split` is a field every item has (the version is
    the file, each item in the split its field says) or, when no item has such a field, a split name: the
    version is the latest one with that split's items replaced by the file's."""
    name = _name(name)
    path = Path(file)
    if not path.is_file():
        raise DatasetError(f"Dataset file {path} does not exist; check the path.")
    items = Dataset.from_file(path.absolute()).items
    if not items:
        raise DatasetError(f"Dataset file {path} holds no items; a version needs at least one.")
    rows = _rows_with_split(items, split, path)
    if split is not None and all(row["split"] == split for row in rows):  # a split name: the rest carries over
        rows = [row for row in latest_rows(store, name) if row["split"] != split] + rows
    return write_version(store, name, rows, source=str(path), note=note, where=str(path))


def _rows_with_split(items: list[dict[str, Any]], split: str | None, path: Path) -> list[Row]:
    if split is None:
        return [{"item": item, "split": None, "origin": None} for item in items]
    having = [i for i, item in enumerate(items) if split in item]
    if not having:
        return [{"item": item, "split": split, "origin": None} for item in items]
    if len(having) < len(items):
        lacking = [i for i in range(len(items)) if split not in items[i]][:5]
        raise DatasetError(f"{path}: --split {split} is a field of some items but not of items "
                           f"{', '.join(map(str, lacking))}; give every item the field, or pass a split name no item "
                           "has as a field.")
    for i, item in enumerate(items):
        value = item[split]
        if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
            raise DatasetError(f"{path}, item {i}: field {split!r} is {value!r}; a split is a non-empty text or "
                               "number.")
    return [{"item": item, "split": str(item[split]), "origin": None} for item in items]


def latest_rows(store: Store, name: str) -> list[Row]:
    """The latest version's item rows (item, split, origin), or none when the dataset is new."""
    versions = store.dataset_versions(name)
    if not versions:
        return []
    return [{"item": r["item"], "split": r["split"], "origin": r["origin"]}
            for r in store.dataset_items(name, int(versions[-1]["version"]))]


def write_version(store: Store, name: str, rows: Sequence[Row], *, source: str | None, note: str | None,
                  where: str) -> PushOutcome:
    """Store `rows` as a new version of `name` unless the latest holds the same (then it is returned)."""
    items = [row["item"] for row in rows]
    ids = [item_identity(item) for item in items]
    _refuse_duplicates(ids, where)
    content = dataset_identity(items, None).hash
    splits = [row["split"] for row in rows]
    split_hash = hashlib.sha256(json.dumps(splits).encode()).hexdigest()[:16]
    counts: dict[str, int] = {}
    for s in splits:
        if s is not None:
            counts[s] = counts.get(s, 0) + 1
    latest = store.dataset_versions(name)[-1:]
    if latest and (latest[0]["hash"], latest[0]["split_hash"]) == (content, split_hash):
        # Unchanged: said before the item rows are built (the store checks again as it writes).
        return PushOutcome(version=VersionInfo.model_validate(latest[0]), created=False)
    version_row = {"hash": content, "items": len(items), "splits": counts, "split_hash": split_hash,
                   "source": source, "note": note}
    item_rows = [{"position": i, "item_id": ids[i], "item_hash": content_hash(item), "split": splits[i],
                  "item": item, "origin": rows[i]["origin"]} for i, item in enumerate(items)]
    version, created = store.add_dataset_version(name, version_row, item_rows, unless_hash=(content, split_hash))
    return PushOutcome(version=version_info(store, name, version), created=created)


def _refuse_duplicates(ids: list[str], where: str) -> None:
    seen: dict[str, int] = {}
    for position, key in enumerate(ids):
        if key in seen:
            raise DatasetError(f"{where}: items {seen[key]} and {position} have the same id {key!r}; a version holds "
                               "each id once (give one item another id, or drop it).")
        seen[key] = position


def _name(name: str) -> str:
    found, version, split = parse_ref(name)
    if version is not None or split is not None:
        raise DatasetError(f"Dataset name {name!r}: name the dataset alone here (no @VERSION or :SPLIT).")
    return found


def list_versions(store: Store, name: str | None = None) -> list[VersionInfo]:
    """Every version of `name` (of every dataset without one); a name the store lacks is a DatasetError."""
    rows = store.dataset_versions(name)
    if name is not None and not rows:
        resolve_stored(store, _name(name), None, None)  # raises, naming the stored datasets
    return [VersionInfo.model_validate(r) for r in rows]


def version_info(store: Store, name: str, version: int) -> VersionInfo:
    row = next(r for r in store.dataset_versions(name) if r["version"] == version)
    return VersionInfo.model_validate(row)


def resolve(store: Store, ref: str) -> tuple[VersionInfo, str | None]:
    """The version `qa`, `qa@3` or `qa@3:test` names, and its split."""
    stored = resolve_stored(store, *parse_ref(ref))
    return version_info(store, stored.name, stored.version), stored.split


def show_version(store: Store, ref: str, *, limit: int = 5) -> ShownVersion:
    """A version (its split) and its first `limit` items."""
    info, split = resolve(store, ref)
    rows = store.dataset_items(info.dataset, info.version, split)
    return ShownVersion(version=info, split=split, items=[r["item"] for r in rows[:limit]],
                        more=max(0, len(rows) - limit))


def export_version(store: Store, ref: str) -> str:
    """The version's (split's) items as JSONL, one item a line in order: pushing it back makes no new version."""
    info, split = resolve(store, ref)
    rows = store.dataset_items(info.dataset, info.version, split)
    return "".join(json.dumps(r["item"], ensure_ascii=False) + "\n" for r in rows)


def diff_versions(store: Store, ref_a: str, ref_b: str) -> DatasetDiff:
    """How `NAME@B` differs from `NAME@A`, by item identity: added, removed and changed items."""
    a, _ = resolve(store, ref_a)
    b, _ = resolve(store, ref_b)
    if a.dataset != b.dataset:
        raise DatasetError(f"Diff two versions of one dataset: {ref_a!r} is of {a.dataset!r}, {ref_b!r} of "
                           f"{b.dataset!r}.")
    return version_diff(store, a.dataset, a.version, b.version)


def version_diff(store: Store, name: str, a: int, b: int) -> DatasetDiff:
    diff = DatasetDiff(dataset=name, a=a, b=b)
    for row in store.dataset_diff(name, a, b):
        getattr(diff, row["change"]).append(DiffEntry.model_validate(row))
    return diff
