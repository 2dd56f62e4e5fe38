"""A Dagster shard's aggregate partials, and the run's aggregates merged from them, exactly.

Each part a shard commits (`ShardWriter`) carries, beside its Parquet rows, its items' `Tally` (the
few numbers per item and per evaluation `summarise` reads: statuses, latencies, costs, tokens, and
per evaluator each verdict's kind, score and pass) and its items as the results file holds them
(each item's indented JSON, as the library path spills it). `aggregates` concatenates the parts'
tallies into the run's and their items into one spill, then finishes the run as the library path does.

Why this is exact: a `Tally` is the values themselves, not moments of them. Counts and sums are
order-free (sums by `math.fsum`, correctly rounded whatever the order), and medians, percentiles,
min, max and the standard deviation are computed from every value after the merge, sorted, so the
run's aggregates are the single-process ones value by value. A part costs about 40 bytes an item
and an evaluation in its tally file; the items file is the part's slice of the results file.

The merged items are read from the parts, not from the store: no row is read back and parsed.
When the parts cannot give the whole run exactly (a part written by a cobalt without partials, an
item in two parts, items missing), `finish_from_exchange` finishes from the store instead.
"""

from __future__ import annotations

from array import array
from typing import Any, Literal

from ..results._report import ExperimentReport, ItemResult
from ..store._exchange import Exchange
from ._aggregate import Tally, _Verdicts
from ._execute import finish
from ._lease import lease
from ._plan import RunPlan
from ._stages import FinishedItems
from ._stored import finish_from_store

_ARRAYS = ("index", "status", "latencies", "ok_costs", "ok_tokens", "judge_costs")
_COUNTS = ("ok_costs_unknown", "agent_tokens", "judge_tokens", "judge_calls", "cached_scores")
_VERDICT_ARRAYS = ("index", "kind", "score", "passed")


class Partial:
    """One part's items, as they finish: their tally, and their JSON one after another."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.keys: list[tuple[int, int]] = []
        self.lengths: list[int] = []
        self.data: list[bytes] = []

    def add(self, item: ItemResult) -> None:
        data = item.model_dump_json(indent=2).encode("utf-8")
        self.tally.add(item)
        self.keys.append((item.index, item.run_index))
        self.lengths.append(len(data))
        self.data.append(data)

    def state(self) -> dict[str, Any]:
        """The part's partial as JSON values (floats as `repr` writes them: they read back equal)."""
        tally = self.tally
        return {"keys": [list(k) for k in self.keys], "lengths": self.lengths,
                "arrays": {name: getattr(tally, name).tolist() for name in _ARRAYS},
                "counts": {name: getattr(tally, name) for name in _COUNTS},
                "judge_costs_unknown": tally.judge_costs_unknown,
                "verdicts": {name: {a: getattr(v, a).tolist() for a in _VERDICT_ARRAYS}
                             for name, v in tally.verdicts.items()}}

    def items_json(self) -> bytes:
        return b"".join(self.data)


def merge_state(tally: Tally, state: dict[str, Any]) -> None:
    """Add one part's partial (`Partial.state`) to `tally`: arrays concatenated, counts summed."""
    for name in _ARRAYS:
        getattr(tally, name).extend(state["arrays"][name])
    for name in _COUNTS:
        setattr(tally, name, getattr(tally, name) + int(state["counts"][name]))
    tally.judge_costs_unknown = tally.judge_costs_unknown or bool(state["judge_costs_unknown"])
    for name, values in state["verdicts"].items():
        verdicts = tally.verdicts.get(name) or tally.verdicts.setdefault(name, _Verdicts())
        for a in _VERDICT_ARRAYS:
            getattr(verdicts, a).extend(array(getattr(verdicts, a).typecode, values[a]))


def finish_from_exchange(plan: RunPlan, exchange: Exchange, status: Literal["completed", "incomplete"], *,
                         worked_ms: float | None = None) -> ExperimentReport:
    """Stages 3 and 4 of a run Dagster ran in shards, from its parts' partials in `exchange` (merged
    exactly), then `finish` as the library path does; from the store (`finish_from_store`) when the
    parts do not hold the whole run."""
    with lease(plan.store, plan.run_id):
        items = merged_partials(plan, exchange)
        if items is None:
            return finish_from_store(plan, status, worked_ms=worked_ms)
        return finish(plan, items, status, worked_ms=worked_ms)


def merged_partials(plan: RunPlan, exchange: Exchange) -> FinishedItems | None:
    """The run's items and tally from its parts' partials, or None when they are not the whole run,
    each item once (then the store, which `merge` checked, is the one to read)."""
    parts = exchange.committed(plan.run_id)
    if not parts or not all(p.partial for p in parts):
        return None
    items = FinishedItems(plan.config.output_path / "results")
    seen: set[tuple[int, int]] = set()
    for state, data in exchange.partials(plan.run_id, parts):
        offset = 0
        for (index, run_index), length in zip(state["keys"], state["lengths"], strict=True):
            if (index, run_index) in seen:
                return None  # an item in two parts: merge kept one of them, the store knows which
            seen.add((index, run_index))
            items.spill.append_json(data[offset:offset + length], index, run_index)
            offset += length
        merge_state(items.tally, state)
    if len(seen) != plan.total_items * plan.runs:
        return None
    return items
