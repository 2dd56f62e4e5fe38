"""Runs Dagster launches, spread in shards over its executors: split -> run_shard per shard -> merge.

Real components only: a real Dagster instance, the multiprocess executor's spawned step processes
(killed with SIGKILL by the agent itself), the real DuckDB store and Parquet exchange, the loopback
LLM as judge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import TEST_KEY, write_judge_config
from shardjob import EXPERIMENT, ITEMS, make_project, reconstructable

import cobalt_dagster
from cobalt_lib import Store, load_config
from cobalt_lib.run import new_run_id
from cobalt_lib.store import Exchange

SHARD_STEP = f"{EXPERIMENT}_run_shard"
CHECK = "gate_exact_min_0_75"


@pytest.fixture
def sharded(tmp_path: Path, llm: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of 8 items in shards of 3 (so 3 shards), its judge the loopback server."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    root = tmp_path / "proj"
    root.mkdir()
    write_judge_config(root, llm)
    return make_project(root, (root / "cobalt.toml").read_text())


def add_partition(instance: dg.DagsterInstance) -> str:
    partition = new_run_id()
    instance.add_dynamic_partitions(f"{EXPERIMENT}_runs", [partition])
    return partition


def steps(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> list[str]:
    records = instance.get_records_for_run(run_id=run_id, of_type=kind).records
    return sorted(str(r.event_log_entry.step_key) for r in records)


def once_each(store: Store, run_id: str) -> tuple[list[tuple[int, int]], int]:
    """The run's stored item keys (each once, or the assertion fails) and its number of score rows."""
    rows = store.query("SELECT item_index, run_index, count(*) AS n FROM outputs WHERE run_id = ? "
                       "GROUP BY ALL ORDER BY ALL", [run_id])
    assert all(r["n"] == 1 for r in rows), rows
    [scores] = store.query("SELECT count(*) AS n FROM scores WHERE run_id = ?", [run_id])
    return [(r["item_index"], r["run_index"]) for r in rows], int(scores["n"])


def gate_verdicts(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, bool]]:
    records = instance.get_records_for_run(run_id=run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
    data = [r.event_log_entry.dagster_event.asset_check_evaluation_data for r in records
            if r.event_log_entry.dagster_event is not None]
    return sorted((d.check_name, d.passed) for d in data)


@pytest.mark.slow
@pytest.mark.timeout(600)  # spawned step processes, retries and a re-execution: minutes on a loaded machine
def test_a_sharded_run_survives_a_killed_shard_and_re_executes_only_the_failed_one(
        sharded: Path, instance: dg.DagsterInstance) -> None:
    (sharded / "kill-once-4").touch()    # shard 1's process dies once, on its second item
    (sharded / "kill-always-7").touch()  # shard 2's dies on every attempt
    partition = add_partition(instance)
    job = reconstructable(sharded)
    # The run config a schedule's run of the partition gets: its steps fork from a fork server that
    # preloaded cobalt (`_step_processes`), where a SIGKILLed shard is retried as on spawn.
    run_config = cobalt_dagster.build_definitions(sharded).resolve_job_def(
        f"{EXPERIMENT}_eval").partitioned_config.get_run_config_for_partition_key(partition)
    assert "forkserver" in str(run_config["execution"])
    with dg.execute_job(job, instance=instance, tags={"dagster/partition": partition},
                        run_config=run_config) as first:
        assert not first.success
    started = steps(instance, first.run_id, dg.DagsterEventType.STEP_START)
    assert [s for s in started if s.endswith(f"{SHARD_STEP}[0]")] == [f"{EXPERIMENT}_outputs_scores.{SHARD_STEP}[0]"]
    assert sum(SHARD_STEP in s for s in set(started)) == 3  # one step per shard
    retried = steps(instance, first.run_id, dg.DagsterEventType.STEP_UP_FOR_RETRY)
    shards = [s.rsplit("[", 1)[1] for s in retried]
    # Shard 1 recovered after one retry; shard 2 was retried and failed for good. (A process killed before
    # it reported its start may be failed by the executor without another retry: one or two, then.)
    assert shards.count("1]") == 1 and 1 <= shards.count("2]") <= 2 and set(shards) == {"1]", "2]"}, shards
    store = Store.for_config(load_config(sharded))
    assert once_each(store, partition) == ([], 0)  # merge never ran: the store holds nothing of the run yet
    exchange = Exchange.for_config(load_config(sharded))
    shard1 = exchange.parts(partition, 1)
    assert [k for p in shard1 for k in p.keys] == [(3, 0), (4, 0), (5, 0)]
    assert len({p.name.rsplit("-", 1)[1] for p in shard1}) == 2  # the retry resumed after the first attempt's part

    (sharded / "kill-always-7").unlink()
    again = dg.ReexecutionOptions.from_failure(first.run_id, instance)
    # Dagster's Python re-execution API does not carry the partition tag over: pass it again.
    with dg.execute_job(job, instance=instance, reexecution_options=again,
                        tags={"dagster/partition": partition}) as second:
        assert second.success
    rerun = set(steps(instance, second.run_id, dg.DagsterEventType.STEP_START))
    assert {s for s in rerun if SHARD_STEP in s} == {f"{EXPERIMENT}_outputs_scores.{SHARD_STEP}[2]"}
    assert f"{EXPERIMENT}_outputs_scores.{EXPERIMENT}_split" not in rerun
    assert once_each(store, partition) == ([(i, 0) for i in range(ITEMS)], 2 * ITEMS)
    assert gate_verdicts(instance, second.run_id) == sorted([(CHECK, True), ("gate_every_evaluator_scored", True),
                                                             ("gate_error_rate_max_0", True)])
    assert store.run_status(partition) == "completed"


@pytest.mark.slow
def test_a_small_run_is_one_shard_and_merging_it_again_changes_nothing(sharded: Path, instance: dg.DagsterInstance,
                                                                      llm: Any) -> None:
    toml = sharded / "cobalt.toml"
    toml.write_text(toml.read_text().replace("shard_items = 3", "shard_items = 2000"))
    partition = add_partition(instance)
    job = cobalt_dagster.build_definitions(sharded).resolve_job_def(f"{EXPERIMENT}_eval")
    result = job.execute_in_process(instance=instance, partition_key=partition)
    assert result.success
    assert sum(SHARD_STEP in s for s in steps(instance, result.run_id, dg.DagsterEventType.STEP_START)) == 1
    [outputs] = [e for e in result.get_asset_materialization_events() if e.asset_key.path[-1] == "outputs"]
    assert outputs.materialization.metadata["items"].value == ITEMS
    store = Store.for_config(load_config(sharded))
    before = store.rows("outputs", partition), store.rows("scores", partition), store.get_run(partition)
    exchange = Exchange.for_config(load_config(sharded))
    with exchange.local_files(exchange.parts(partition), partition) as files:  # what merge does, once more
        counts = store.merge_shards(partition, files, expected=ITEMS, runs=1, shard_items=2000,
                                    worked_ms=exchange.worked_ms(partition))
    assert counts == {"duplicates": 0, "outputs": ITEMS, "scores": 2 * ITEMS, "spans": 0}  # the agent emits none
    after = store.rows("outputs", partition), store.rows("scores", partition), store.get_run(partition)
    assert after[:2] == before[:2] and after[2]["worked_ms"] == before[2]["worked_ms"]  # type: ignore[index]
