"""The Dagster path's `aggregates` step, from the store against from the shards' partials (issue 35).

A run of `--n` items (agent answering at once, one `exact-match` and one `levenshtein` evaluator, no
judge) is run through the Dagster path's library stages in this process, without Dagster: start the
run, `run_shard` over `--shard-items` shards into the exchange, `Store.merge_shards`. Then the
`aggregates` step's work, `--rounds` times each way, interleaved so both see the same load, its CPU
seconds (`resource`, this process):

- `store`: `finish_from_store` (every item read back from the store, parsed, spilled);
- `partials`: `finish_from_exchange` (the parts' tallies merged, their items' JSON concatenated).

Both must give the same aggregates rows, value by value; the script exits non-zero otherwise.

    .venv/bin/python benchmarks/shard_partials.py --n 20000 --shard-items 5000
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from pathlib import Path
from typing import Any


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _experiment(n: int) -> Any:
    from cobalt_lib import Dataset, Evaluator, experiment

    def agent(ctx: Any) -> str:
        return str(ctx.input).upper() if ctx.index % 3 else str(ctx.input)

    return experiment("partials_bench", Dataset([{"input": f"q{i}", "expected_output": f"Q{i}"} for i in range(n)]),
                      agent, concurrency=100, evaluators=[Evaluator(name="exact", type="exact-match"),
                                                          Evaluator(name="close", type="levenshtein")])


def _sharded_run(root: Path, n: int, shard_items: int) -> Any:
    """A run of `n` items, in shards, merged into the store: the plan its `aggregates` step has."""
    from cobalt_lib import load_config
    from cobalt_lib.run import PartitionRun, cut, new_run_id, prepare, run_coroutine, run_shard, start_run
    from cobalt_lib.store import Exchange

    (root / "cobalt.toml").write_text(f"[dagster]\nshard_items = {shard_items}\n", encoding="utf-8")
    config = load_config(root)
    exp = _experiment(n)
    run_id = new_run_id()
    plan = prepare(exp, config, PartitionRun(run_id=run_id))
    start_run(plan)
    exchange = Exchange.for_config(config)
    shards = cut(run_id, n, shard_items)
    for shard in shards:
        run_coroutine(run_shard(plan, shard, exchange))
    with exchange.local_files(exchange.committed(run_id), run_id) as files:
        plan.store.merge_shards(run_id, files, expected=n, runs=1, shard_items=shard_items,
                                worked_ms=exchange.worked_ms(run_id))
    return lambda: prepare(exp, config, PartitionRun(run_id=run_id)), exchange


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--shard-items", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from cobalt_lib.run import finish_from_exchange, finish_from_store

    with tempfile.TemporaryDirectory(prefix="cobalt-partials-") as tmp:
        replan, exchange = _sharded_run(Path(tmp), args.n, args.shard_items)
        ways = {"store": lambda p: finish_from_store(p, "completed"),
                "partials": lambda p: finish_from_exchange(p, exchange, "completed")}
        spent: dict[str, list[float]] = {way: [] for way in ways}
        rows: dict[str, Any] = {}
        for _ in range(args.rounds):
            for way, finish in ways.items():
                plan = replan()
                before = _cpu()
                finish(plan)
                spent[way].append(_cpu() - before)
                rows[way] = sorted(map(str, plan.store.rows("aggregates", plan.run_id)))
        if rows["store"] != rows["partials"]:
            raise SystemExit("the aggregates differ between the two ways")
        for way, cpu in spent.items():
            best = min(cpu)
            print(f"{way:9s} CPU {', '.join(f'{c:.2f}' for c in cpu)} s; best {best:.2f} s, "
                  f"{best / args.n * 1000:.3f} ms per item")
        print(f"aggregates rows equal both ways ({len(rows['store'])} rows); {args.n} items in "
              f"{-(-args.n // args.shard_items)} shards")


if __name__ == "__main__":
    main()
