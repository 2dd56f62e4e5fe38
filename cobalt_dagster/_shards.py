"""`outputs` and `scores` of a run Dagster launches: one graph-backed multi-asset that spreads the run
over Dagster's executor.

    split      plans the run once, clears the run's exchange, cuts its item keys into shards of
               `[dagster] shard_items` (a run no larger is one shard: no fan-out to pay for)
    run_shard  mapped, one step per shard: the library engine's pipelining (agent, then evaluators,
               per item) over the shard's items, rows to the shard's own Parquet files in the exchange;
               a `RetryPolicy` re-runs a shard whose process died, resuming from its committed parts;
               the step claims the concurrency pool of its judge provider (`_pools`)
    merge      the store's one writer: one transaction checks every item is there exactly once and
               replaces the run's rows with the shards' (running it again changes nothing)

What crosses steps is a `Shard` (run id and a range of positions) and a `ShardDone`: a few numbers,
so any IO manager carries them. A shard needs only the project and the exchange, never the store, so
it can run on another machine. In a recording (`cobalt/record`) split yields one empty shard, which
does nothing, and merge reports the stored run.
(No `from __future__ import annotations` here: Dagster reads the context annotations at runtime.)
"""

import contextlib
from collections.abc import Iterator
from typing import Any

import dagster as dg

from cobalt_lib import Experiment, Store
from cobalt_lib.run import Shard, ShardDone, cut, run_shard, start_run
from cobalt_lib.store import Exchange

from ._metadata import stored_counts_metadata
from ._private import step_key
from ._replay import EXECUTED, stored_report
from ._resource import CobaltResource, run_async
from ._stages import mode_of

#: Retries of a shard whose step failed (its process killed, its machine gone): each resumes from the
#: items the shard's files already hold. A shard starts at most `SHARD_RETRIES + 1` times in a run,
#: whether Dagster retries it or a broker hands its task out again (celery, after its worker died).
SHARD_RETRIES = 2

#: The events of a step that starts (its first attempt, a Dagster retry) and of a retry Dagster grants.
_STARTS = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_RESTARTED}
_RETRIED = dg.DagsterEventType.STEP_UP_FOR_RETRY


def shard_assets(experiment: Experiment, name: str, parts: dg.DynamicPartitionsDefinition,
                 dataset: dg.AssetKey, pool: str | None, specs: dict[str, dg.AssetSpec]) -> dg.AssetsDefinition:
    """The `outputs` and `scores` assets of one experiment, computed by split -> run_shard* -> merge."""
    split, shard_op, merge = _split(experiment, name), _run_shard(experiment, name, pool), _merge(name)

    @dg.graph_multi_asset(
        name=f"{name}_outputs_scores", partitions_def=parts,
        ins={"dataset": dg.AssetIn(key=dataset, dagster_type=dg.Nothing)},
        outs={stage: dg.AssetOut.from_spec(spec, dagster_type=dg.Nothing) for stage, spec in specs.items()})
    def outputs_scores(dataset: Any) -> Any:
        outputs, scores = merge(split(dataset).map(shard_op).collect())
        return {"outputs": outputs, "scores": scores}

    # A graph-backed multi-asset takes one group for all its outputs: each spec's own group is set after.
    groups = {spec.key: spec.group_name for spec in specs.values()}
    return outputs_scores.map_asset_specs(lambda spec: spec.replace_attributes(group_name=groups[spec.key]))


def _split(experiment: Experiment, name: str) -> dg.OpDefinition:
    @dg.op(name=f"{name}_split", ins={"dataset": dg.In(dg.Nothing)}, out=dg.DynamicOut(Shard),
           description="Plan the run once and cut its items into shards of `[dagster] shard_items`.")
    def split(context: dg.OpExecutionContext, cobalt: CobaltResource) -> Iterator[dg.DynamicOutput[Shard]]:
        run_id = context.partition_key
        if mode_of(context.run.tags) == "replay":
            yield dg.DynamicOutput(Shard(run_id, 0, 0, 0), mapping_key="0")
            return
        config = cobalt.config()
        store = Store.for_config(config)
        run = store.get_run(run_id)
        plan = cobalt.plan_for_run(experiment, run_id, context.run.tags, run, config)
        if run is None:  # `dataset` was not materialised for this run: start it here
            start_run(plan)
            store.mark_in_dagster(run_id, context.run.run_id, EXECUTED)
        Exchange.for_config(config).clear(run_id)  # a new materialisation of the run starts from nothing
        shards = cut(run_id, plan.total_items * plan.runs, config.dagster.shard_items)
        context.log.info(f"cobalt run {run_id}: {len(shards)} shard(s) of up to {config.dagster.shard_items} items, "
                         f"exchange {Exchange.for_config(config)}")
        for shard in shards:
            yield dg.DynamicOutput(shard, mapping_key=str(shard.index))

    return split


def _run_shard(experiment: Experiment, name: str, pool: str | None) -> dg.OpDefinition:
    @dg.op(name=f"{name}_run_shard", pool=pool, retry_policy=dg.RetryPolicy(max_retries=SHARD_RETRIES),
           description="The agent and the evaluators over one shard's items, rows to the shard's own files.")
    def shard_op(context: dg.OpExecutionContext, cobalt: CobaltResource, shard: Shard) -> ShardDone:
        if mode_of(context.run.tags) == "replay" or not len(shard):
            return ShardDone(shard, ran=0, resumed=0)
        config = cobalt.config()
        # The plan again, in this process (another one, maybe another machine): no store read.
        plan = cobalt.plan_for_run(experiment, shard.run_id, context.run.tags, None, config)
        starts, died = _attempt(context)
        if starts > SHARD_RETRIES + 1:  # a worker that dies never reports a failure: the broker hands it out again
            _give_up(plan.store, shard.run_id)
            raise dg.Failure(allow_retries=False, description=(
                f"shard {shard.index} of cobalt run {shard.run_id} (positions {shard.start}-{shard.stop - 1} of "
                f"its item keys) started {starts - 1} times and its worker process died in {died} of them "
                "(SIGKILL, out of memory, its machine gone): cobalt gives up on it; find what kills it, then "
                "re-execute the run from failure, which keeps the other shards' items."))
        try:
            done = run_async(run_shard(plan, shard, Exchange.for_config(config)))
        except BaseException as exc:
            if context.retry_number >= SHARD_RETRIES or not isinstance(exc, Exception):  # no retry comes
                _give_up(plan.store, shard.run_id)
            raise
        context.log.info(f"shard {shard.index}: ran {done.ran} item(s), {done.resumed} already in its files")
        return done

    return shard_op


def _attempt(context: dg.OpExecutionContext) -> tuple[int, int]:
    """How often this step has started in this run, this start included, and how many of the earlier
    starts ended in their process's death (neither a success nor a failure Dagster retried). On the
    multiprocess executor a start is an attempt; on celery, acknowledged late, a worker's death puts
    the task back on the queue, and each delivery starts the step again (its own STEP_START)."""
    key = step_key(context)
    records = context.instance.get_records_for_run(run_id=context.run_id, of_type={*_STARTS, _RETRIED}).records
    kinds = [r.event_log_entry.dagster_event_type for r in records if r.event_log_entry.step_key == key]
    starts = sum(kind in _STARTS for kind in kinds)
    return starts, starts - 1 - kinds.count(_RETRIED)


def _give_up(store: Any, run_id: str) -> None:
    """The last attempt of a shard failed: end the run's lease now, so every reader sees the run as
    `incomplete` at once (resumable; re-executing from failure finishes it) rather than when it expires.
    A shard that cannot reach the store leaves that to the lease's expiry."""
    if store.exists():
        with contextlib.suppress(Exception):  # never hide the shard's own failure
            store.renew_lease(run_id, 0)


def _merge(name: str) -> dg.OpDefinition:
    @dg.op(name=f"{name}_merge", out={"outputs": dg.Out(dg.Nothing), "scores": dg.Out(dg.Nothing)},
           description="Check every item is there exactly once and replace the run's rows, in one transaction.")
    def merge(context: dg.OpExecutionContext, cobalt: CobaltResource,
              done: list[ShardDone]) -> Iterator[dg.Output[None]]:
        store = cobalt.store()
        run_id = context.partition_key
        if mode_of(context.run.tags) == "replay":
            stored_report(store, run_id)  # a run not stored, or still running, says so
            outputs, scores = stored_counts_metadata(store, run_id)
            yield dg.Output(None, "outputs", metadata=outputs)
            yield dg.Output(None, "scores", metadata=scores)
            return
        yield from merged(store, cobalt, run_id, done)

    return merge


def merged(store: Any, cobalt: CobaltResource, run_id: str, done: list[ShardDone]) -> Iterator[dg.Output[None]]:
    """Merge the shards' parts into the store, then report both assets from the merged rows."""
    shards = sorted((d.shard for d in done), key=lambda s: s.index)
    exchange = Exchange.for_config(cobalt.config())
    parts = exchange.committed(run_id)  # one listing; the markers' keys are the shards' business
    with exchange.local_files(parts, run_id) as files:
        counts = store.merge_shards(run_id, files, expected=sum(len(s) for s in shards),
                                    runs=_runs(cobalt, run_id, store), shard_items=max(len(shards[0]), 1),
                                    worked_ms=exchange.worked_ms(run_id))
    outputs, scores = stored_counts_metadata(store, run_id)
    shared = {"shards": dg.MetadataValue.int(len(shards)), "parts": dg.MetadataValue.int(len(parts)),
              "duplicates_dropped": dg.MetadataValue.int(counts["duplicates"])}
    yield dg.Output(None, "outputs", metadata={**outputs, **shared})
    yield dg.Output(None, "scores", metadata=scores)


def _runs(cobalt: CobaltResource, run_id: str, store: Any) -> int:
    """Repetitions per item, from the run's stored plan (split wrote it)."""
    run = store.get_run(run_id)
    return int(((run or {}).get("config") or {}).get("runs") or 1)
