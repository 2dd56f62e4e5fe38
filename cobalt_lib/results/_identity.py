"""Item identity: what pairs an item across runs (compare, flaky history, labels, PR comments).

An item's identity is its `id` field when the dataset gives one, else a hash of its content. It
is stored with every output row (`outputs.item_id`); a store written before that column existed
falls back to the stored `input_hash`, or to hashing the stored item.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any


def content_hash(item: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the item's canonical JSON: equal items, equal hashes."""
    canonical = json.dumps(item, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def item_identity(item: Mapping[str, Any]) -> str:
    """The item's `id` as text when it has one (not None or empty), else `content_hash(item)`.

    Inserting, removing or reordering items keeps every other item's identity.
    """
    given = item.get("id") if isinstance(item, Mapping) else None
    if given is not None and given != "":
        return given if isinstance(given, str) else json.dumps(given, sort_keys=True, default=str)
    return content_hash(item if isinstance(item, Mapping) else {"input": item})


def duplicate_ids(items: Iterable[Mapping[str, Any]]) -> dict[str, list[int]]:
    """`{identity: [positions]}` of the identities that more than one item has (empty: none)."""
    positions: dict[str, list[int]] = {}
    for position, item in enumerate(items):
        positions.setdefault(item_identity(item), []).append(position)
    return {key: found for key, found in positions.items() if len(found) > 1}


def duplicates_text(duplicates: Mapping[str, list[int]], shown: int = 5) -> str:
    """`id 'q1' at items 0 and 4, ...`: the first `shown` duplicated identities, for an error message."""
    parts = [f"id {key!r} at items {', '.join(map(str, found[:-1]))} and {found[-1]}"
             for key, found in list(duplicates.items())[:shown]]
    more = f" and {len(duplicates) - shown} more" if len(duplicates) > shown else ""
    return "; ".join(parts) + more


def occurrence_keys(identities: Iterable[tuple[str, int]]) -> dict[int, tuple[str, int]]:
    """`{index: (identity, occurrence)}` from (identity, index) pairs: the n-th distinct index holding
    an identity gets occurrence n, so duplicated items still pair one to one, in dataset order."""
    seen: Counter[str] = Counter()
    keys: dict[int, tuple[str, int]] = {}
    for identity, index in sorted(set(identities), key=lambda p: p[1]):
        keys[index] = (identity, seen[identity])
        seen[identity] += 1
    return keys
