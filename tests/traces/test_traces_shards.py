"""A run Dagster launches in shards keeps its traces: each shard's parts carry its items' spans, and the merge
puts them into the store with the outputs and scores (the library functions the Dagster ops call, in process)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from traced_agent import async_agent, per_city_replies

from cobalt_lib import Dataset, Evaluator, Store, experiment, load_config
from cobalt_lib.run._execute import start_run
from cobalt_lib.run._plan import prepare
from cobalt_lib.run._shard import cut, run_shard
from cobalt_lib.store._exchange import Exchange

CITIES = ["Paris", "Oslo", "Lima", "Rome", "Kyiv"]


def test_shards_carry_their_items_spans_into_the_merged_run(project: Path, llm: Any) -> None:
    llm.respond = per_city_replies
    exp = experiment("sharded", Dataset(items=[{"input": f"weather in {c}"} for c in CITIES]),
                     async_agent(llm.openai_url), evaluators=[Evaluator(name="cap", type="max_model_calls", n=2)],
                     concurrency=2)
    config = load_config()
    plan = prepare(exp, config)
    start_run(plan)
    exchange = Exchange.for_config(config)
    for shard in cut(plan.run_id, len(CITIES), 2):
        asyncio.run(run_shard(plan, shard, exchange))
    parts = exchange.parts(plan.run_id)
    # a part written before spans were collected: its marker names no tables, it has no spans file
    old = parts[0]
    marker = config.output_path / "exchange" / exchange.shard_dir(plan.run_id, old.shard) / f"{old.name}.json"
    marker.write_text(json.dumps({"keys": [list(k) for k in old.keys]}))
    marker.with_name(f"{old.name}.spans.parquet").unlink()
    store = Store.for_config(config)
    with exchange.local_files(exchange.parts(plan.run_id), plan.run_id) as files:
        counts = store.merge_shards(plan.run_id, files, expected=len(CITIES), runs=1, shard_items=2, worked_ms=1.0)
    assert (counts["outputs"], counts["scores"]) == (5, 5)
    spans = store.spans_of(plan.run_id)
    assert sorted(spans) == sorted((i, 0) for i in range(5) if (i, 0) not in old.keys)
    assert counts["spans"] == 4 * len(spans)
    for (index, _), found in spans.items():
        tool = next(s for s in found if s.kind == "tool")
        assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": CITIES[index]}
    # merging the same parts again changes nothing
    with exchange.local_files(exchange.parts(plan.run_id), plan.run_id) as files:
        again = store.merge_shards(plan.run_id, files, expected=len(CITIES), runs=1, shard_items=2, worked_ms=1.0)
    assert again == counts
