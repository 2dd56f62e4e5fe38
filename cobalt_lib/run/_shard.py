"""One shard of a run Dagster launched: the library engine's pipelining over a range of the run's items,
its rows written to the shard's own files in the exchange instead of the store, each part with its
aggregate partial (`_partials`), so the run's aggregates need not read its items back.

A shard is a range of positions in the run's item keys (`item_keys` order), so what crosses
process boundaries is four numbers. A retried shard reads the keys its committed parts hold and
runs only the others: an item in flight when its process died runs again (its judge calls hit the
response cache when the cache directory is shared; its agent call is repeated).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ..results._report import ExperimentReport, ItemResult
from ..store._exchange import Exchange
from ._execute import Counted, full_step, stream
from ._partials import Partial
from ._plan import RunPlan
from ._stages import item_keys

#: Items per part file at most: a killed shard loses at most a part's finished items (or its time, below).
#: A smaller shard writes about `PARTS_PER_SHARD` parts, so a retry keeps most of its work.
PART_ITEMS = 2000
PARTS_PER_SHARD = 10
#: A part also closes after `PART_SECONDS` of work, or after `PART_GROWTH` of the attempt's work before it
#: when that is longer: a killed shard loses at most a tenth of its work, and a long shard of slow items
#: writes tens of parts, not one every 10 s (a 20-minute shard: 37, not 125; each part is three files
#: for `merge` to download).
PART_SECONDS = 10.0
PART_GROWTH = 0.1


def part_seconds(worked: float, minimum: float = PART_SECONDS) -> float:
    """How long a part opened `worked` seconds into the attempt stays open (at most; its items may fill it)."""
    return max(minimum, PART_GROWTH * worked)


def part_items(shard_size: int) -> int:
    """Items per part for a shard of `shard_size` items (a 25,000-item shard: 2,000; a 3-item one: 1)."""
    return max(1, min(PART_ITEMS, -(-shard_size // PARTS_PER_SHARD)))


@dataclass(frozen=True)
class Shard:
    """Positions `start` to `stop` (exclusive) of the run's item keys."""

    run_id: str
    index: int
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start


def cut(run_id: str, total: int, shard_items: int) -> list[Shard]:
    """The run's `total` item keys in shards of `shard_items` (a run no larger is one shard)."""
    return [Shard(run_id, k, start, min(start + shard_items, total))
            for k, start in enumerate(range(0, total, shard_items))]


@dataclass(frozen=True)
class ShardDone:
    """What a finished shard reports: how many items it ran now, and how many an earlier attempt had written."""

    shard: Shard
    ran: int
    resumed: int


class ShardWriter:
    """The stage's row writer and observer: rows wait until their item is whole (scored), then go out in
    parts of whole items (`Exchange.write_part`), so a part never holds an output without its scores."""

    def __init__(self, exchange: Exchange, shard: Shard, *, part_items: int = PART_ITEMS,
                 part_seconds: float = PART_SECONDS) -> None:
        self.exchange = exchange
        self.shard = shard
        self.part_items = part_items
        self.part_seconds = part_seconds
        self.attempt = uuid.uuid4().hex[:12]
        self._next = 1 + max((p.number for p in exchange.parts(shard.run_id, shard.index)), default=0)
        self._pending: dict[tuple[int, int], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        self._ready: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._keys: list[tuple[int, int]] = []
        self._partial = Partial()  # the part's aggregate partial: what `aggregates` merges (`_partials`)
        self._started = self._since = time.monotonic()

    def add(self, table: str, row: dict[str, Any]) -> None:
        self._pending[(row["item_index"], row["run_index"])][table].append(row)

    def on_item(self, item: ItemResult) -> None:
        key = (item.index, item.run_index)
        for table, rows in self._pending.pop(key, {}).items():
            self._ready[table].extend(rows)
        self._keys.append(key)
        self._partial.add(item)
        open_for = part_seconds(self._since - self._started, self.part_seconds)
        if len(self._keys) >= self.part_items or time.monotonic() - self._since >= open_for:
            self._flush()

    def on_start(self, plan: RunPlan) -> None:
        pass

    def on_finish(self, report: ExperimentReport) -> None:
        pass

    def close(self, *, work: tuple[str, float] | None = None) -> float | None:
        """Write the last part and the attempt's working time; the run's total is merge's to add up."""
        self._flush()
        if work is not None:
            self.exchange.write_work(self.shard.run_id, self.shard.index, self.attempt, work[1])
        return None

    def _flush(self) -> None:
        if self._keys:
            name = f"part-{self._next:06d}-{self.attempt}"
            self.exchange.write_part(self.shard.run_id, self.shard.index, name, self._keys, self._ready,
                                     partial=(self._partial.state(), self._partial.items_json()))
            self._next += 1
        self._ready, self._keys, self._since = defaultdict(list), [], time.monotonic()
        self._partial = Partial()


async def run_shard(plan: RunPlan, shard: Shard, exchange: Exchange) -> ShardDone:
    """Agent then evaluators over the shard's items not yet in its files, as the library path runs them."""
    done = {key for part in exchange.parts(shard.run_id, shard.index) for key in part.keys}
    writer = ShardWriter(exchange, shard, part_items=part_items(len(shard)))
    todo: Iterator[tuple[int, int]] = (k for k in islice(item_keys(plan), shard.start, shard.stop) if k not in done)
    ran = await stream(plan, todo, full_step, tables=("outputs", "scores"), observer=writer, into=Counted(),
                       writer=writer)
    return ShardDone(shard, ran=len(ran), resumed=len(done))
