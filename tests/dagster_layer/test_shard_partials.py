"""A sharded Dagster run's aggregates, merged from its shards' partials, equal the library run's.

Real components: a real Dagster instance (in process, its shards mapped steps), the DuckDB store and
the Parquet exchange; the same experiment run on the library path and on Dagster in shards of 4.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from dagster_jobs import execute_job

from cobalt_lib import Dataset, Evaluator, Store, experiment, load_config
from cobalt_lib.store import Exchange

ITEMS = 6

#: What differs between two runs of the same items: the agent's measured time.
TIMED = {"latency"}


def _agent(ctx: Any) -> dict[str, Any]:
    i = ctx.index
    answer = ctx.item["expected_output"] if i % 3 else ctx.item["expected_output"][: 1 + i % 4] + "x" * i
    return {"output": answer, "metadata": {"tokens": 10 + 7 * i, "cost_usd": 0.001 * (i % 4) + 1e-4 / (i + 1)}}


def _aggregates(store: Store, run_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    rows = store.query("SELECT * FROM aggregates WHERE run_id = ?", [run_id])
    return {(r["kind"], r["metric"]): {k: v for k, v in r.items() if k != "run_id"} for r in rows}


@pytest.mark.slow
def test_a_sharded_runs_aggregates_merged_from_partials_equal_the_library_runs(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "cobalt.toml").write_text("[dagster]\nshard_items = 4\n", encoding="utf-8")
    config = load_config(root)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    exp = experiment("partials", Dataset([{"input": w, "expected_output": w.upper()} for w in words[:ITEMS]]),
                     _agent, runs=2, concurrency=3,
                     evaluators=[Evaluator(name="exact", type="exact-match"),
                                 Evaluator(name="close", type="levenshtein", threshold=0.5)])
    library = exp.run(config=config)
    dagster, result = execute_job(config, exp)
    assert result.success and dagster is not None
    store = Store.for_config(config)
    exchange = Exchange.for_config(config)
    parts = exchange.committed(dagster.id)
    # 12 item keys in shards of 4: 3 shards, every part with its partial (what aggregates merged).
    assert len({p.shard for p in parts}) == 3 and all(p.partial for p in parts)
    ours, theirs = _aggregates(store, dagster.id), _aggregates(store, library.id)
    assert set(ours) == set(theirs) == {("evaluator", "exact"), ("evaluator", "close"), ("metric", "latency"),
                                        ("metric", "cost"), ("metric", "tokens")}
    for key in theirs:
        if key[1] not in TIMED:
            assert ours[key] == theirs[key], key  # value by value, floats exactly
    assert ours[("metric", "tokens")]["median"] == 27.5  # between two shards' values (24 and 31, each twice)
    # Each item's spread across its runs, and the items of the results file, are the library run's too.
    assert [s.model_dump() for s in dagster.summary.per_item] == [s.model_dump() for s in library.summary.per_item]
    assert [(i.index, i.run_index, i.output, {n: e.score for n, e in i.evaluations.items()})
            for i in dagster.items] == [(i.index, i.run_index, i.output, {n: e.score for n, e in i.evaluations.items()})
                                        for i in library.items]
    # The timed metric, merged from the partials, equals the single-process aggregates of the run's stored items.
    assert ours[("metric", "latency")]["count"] == 2 * ITEMS
    stored = sorted(r["latency_ms"] for r in store.rows("outputs", dagster.id))
    latency = ours[("metric", "latency")]
    assert (latency["min"], latency["max"], latency["mean"]) == (stored[0], stored[-1], math.fsum(stored) / len(stored))
