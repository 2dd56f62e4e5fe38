"""Pairing two runs' items by identity (`item_identity`), never by position, each item with all its repeats.

Inserting an item at index 0 keeps every other item paired; an item present in one run only is
unpaired ("input changed" when the other run has a different item at the same index). Items whose
identity occurs twice in one run pair in dataset order. A run with repeats against one without
pairs each item's repeats with the other's single result: compare uses each side's mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from ._identity import occurrence_keys
from ._repeats import by_index, flaky_text
from ._report import ItemResult


class Unpaired(BaseModel):
    """An item of one run with no item of the same identity in the other."""

    index: int
    item_id: str = ""
    reason: Literal["input changed", "only in A", "only in B"]


@dataclass(frozen=True)
class ItemPair:
    """One item in both runs: its repeats in A and in B (one each without repeats)."""

    item_id: str
    a: list[ItemResult]
    b: list[ItemResult]

    @property
    def index(self) -> int:
        """The item's index in B (the newer run)."""
        return self.b[0].index

    @property
    def index_a(self) -> int:
        return self.a[0].index

    def score(self, side: Literal["a", "b"], evaluator: str) -> float | None:
        """The mean of the side's scored repeats for `evaluator` (None: no repeat has a score)."""
        return mean_score(self.a if side == "a" else self.b, evaluator)

    def status(self, side: Literal["a", "b"]) -> str:
        """`ok`, `error`, `timeout`; with repeats that differ, `2 of 3 ok`."""
        return status_text(self.a if side == "a" else self.b)

    def flaky(self, side: Literal["a", "b"]) -> str | None:
        return flaky_text(self.a if side == "a" else self.b)


def score_of(item: ItemResult, evaluator: str) -> float | None:
    """The repeat's score, None for a failed agent call, an eval-error or an evaluator it lacks."""
    ev = item.evaluations.get(evaluator)
    if item.status != "ok" or ev is None or ev.status != "ok" or ev.score is None:
        return None
    return ev.score


def mean_score(repeats: Sequence[ItemResult], evaluator: str) -> float | None:
    scores = [s for r in repeats if (s := score_of(r, evaluator)) is not None]
    return math.fsum(scores) / len(scores) if scores else None


def status_text(repeats: Sequence[ItemResult]) -> str:
    statuses = {r.status for r in repeats}
    if len(statuses) == 1:
        return statuses.pop()
    return f"{sum(r.status == 'ok' for r in repeats)} of {len(repeats)} ok"


@dataclass
class PairChunk:
    """A part of two runs' pairing (all of it, or one chunk streamed from the store): the pairs, and the
    items of either run with no partner in this part, `{index: (identity, repeats)}`."""

    pairs: list[ItemPair]
    only_a: dict[int, tuple[str, list[ItemResult]]]
    only_b: dict[int, tuple[str, list[ItemResult]]]


def pairing(a: Sequence[ItemResult], b: Sequence[ItemResult]) -> PairChunk:
    """A's and B's items paired by identity (each with its repeats), in B's order, and the rest."""
    groups_a, groups_b = by_index(a), by_index(b)
    keys_a, keys_b = _keys(groups_a), _keys(groups_b)
    index_a = {key: index for index, key in keys_a.items()}
    pairs = [ItemPair(item_id=key[0], a=groups_a[index_a[key]], b=groups_b[index])
             for index, key in keys_b.items() if key in index_a]
    in_b = set(keys_b.values())
    return PairChunk(pairs, {index: (key[0], groups_a[index]) for index, key in keys_a.items() if key not in in_b},
                     {index: (key[0], groups_b[index]) for index, key in keys_b.items() if key not in index_a})


def unpaired_items(only_a: dict[int, str], only_b: dict[int, str]) -> list[Unpaired]:
    """The items with no partner, from their `{index: identity}` in each run: an index in both is an item
    whose input changed."""
    unpaired = [Unpaired(index=i, item_id=only_b.get(i, ""), reason="input changed") for i in only_a.keys() & only_b]
    unpaired += [Unpaired(index=i, item_id=k, reason="only in A") for i, k in only_a.items() if i not in only_b]
    unpaired += [Unpaired(index=i, item_id=k, reason="only in B") for i, k in only_b.items() if i not in only_a]
    return sorted(unpaired, key=lambda u: (u.index, u.reason))


def pair_items(a: Sequence[ItemResult], b: Sequence[ItemResult]) -> tuple[list[ItemPair], list[Unpaired]]:
    """Pairs A's and B's items by identity (each with its repeats), in B's order; the rest is unpaired."""
    chunk = pairing(a, b)
    return chunk.pairs, unpaired_items({i: k for i, (k, _) in chunk.only_a.items()},
                                       {i: k for i, (k, _) in chunk.only_b.items()})


def _keys(groups: dict[int, list[ItemResult]]) -> dict[int, tuple[str, int]]:
    return occurrence_keys((repeats[0].item_id or f"#{index}", index) for index, repeats in groups.items())
