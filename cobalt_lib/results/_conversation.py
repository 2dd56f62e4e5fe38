"""A conversation item's stored form, and where two runs' transcripts of one conversation part.

A conversation's output is its transcript, the OpenAI-style message list `[{"role": "user", "content":
...}, {"role": "assistant", "content": ...}, ...]`, one user and one assistant message per turn; its
metadata holds `conversation`: per turn the agent call's latency, tokens, cost, metadata (and its raw
output when that was not a string), how the conversation stopped and what the simulated user cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from ._pairing import ItemPair

#: The metadata key holding a conversation's per-turn records.
META = "conversation"


class Divergence(BaseModel):
    """Where a paired conversation's transcripts first differ: the turn (from 1), whose message it was
    (`user`: the simulated user answered differently, `assistant`: the agent did), and both versions
    (None where that run's conversation had already ended)."""

    index: int = 0
    item_id: str = ""
    turn: int
    role: str
    a: str | None = None
    b: str | None = None


def transcript_of(output: Any, metadata: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    """The item's transcript when it is a conversation's (its metadata says so), else None."""
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get(META), Mapping):
        return None
    if not isinstance(output, list) or not all(isinstance(m, Mapping) and "role" in m for m in output):
        return None
    return [dict(m) for m in output]


def turn_records(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conversation's per-turn records (`turn`, `status`, `latency_ms`, `tokens`, `cost_usd`, ...)."""
    meta = metadata.get(META)
    records = meta.get("turns") if isinstance(meta, Mapping) else None
    return [dict(r) for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []


def simulator_spend(metadata: Mapping[str, Any]) -> tuple[int, int, float | None] | None:
    """What the item's simulated user cost: (model calls, tokens, cost in dollars or None when unknown);
    None when the item had no simulated user."""
    meta = metadata.get(META) if isinstance(metadata, Mapping) else None
    spent = meta.get("simulator") if isinstance(meta, Mapping) else None
    if not isinstance(spent, Mapping):
        return None
    tokens = int(spent.get("input_tokens") or 0) + int(spent.get("output_tokens") or 0)
    cost = spent.get("cost_usd")
    return int(spent.get("calls") or 0), tokens, float(cost) if isinstance(cost, int | float) else None


def first_divergence(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> Divergence | None:
    """Where transcripts `a` and `b` first differ (None: identical). A message counts as turn
    `position // 2 + 1`: each turn is one user message and the assistant's answer."""
    for position in range(max(len(a), len(b))):
        left = a[position] if position < len(a) else None
        right = b[position] if position < len(b) else None
        if left is not None and right is not None and _same(left, right):
            continue
        role = str((left or right or {}).get("role", "user"))
        return Divergence(turn=position // 2 + 1, role=role, a=_content(left), b=_content(right))
    return None


def diverged(pairs: Sequence[ItemPair]) -> tuple[int, list[Divergence]]:
    """How many paired items are conversations in both runs, and where those that differ first part
    (each side's first repeat), in B's order."""
    count, found = 0, []
    for pair in pairs:
        a, b = pair.a[0], pair.b[0]
        left, right = transcript_of(a.output, a.metadata), transcript_of(b.output, b.metadata)
        if left is None or right is None:
            continue
        count += 1
        if (where := first_divergence(left, right)) is not None:
            found.append(where.model_copy(update={"index": pair.index, "item_id": pair.item_id}))
    return count, found


def _same(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    return left.get("role") == right.get("role") and left.get("content") == right.get("content")


def _content(message: Mapping[str, Any] | None) -> str | None:
    if message is None:
        return None
    content = message.get("content")
    return content if isinstance(content, str) else str(content)
