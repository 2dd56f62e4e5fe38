"""One experiment as four partitioned assets (dataset, outputs, scores, aggregates) plus blocking checks.

`dataset` plans and starts the run; `outputs` and `scores` are one graph-backed multi-asset that runs
the items in shards over Dagster's executor (`_shards`); `aggregates` finishes the run from the store.
Each body is one line over the `cobalt` resource (`_stages` holds what it does). They write the same
DuckDB tables as the library through cobalt's store module; the partition key is the cobalt run id.
The translator (`CobaltTranslator`) names them.
(No `from __future__ import annotations` here: Dagster reads the context annotations at runtime.)
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from cobalt_lib import Experiment
from cobalt_lib.gates import Assertion
from cobalt_lib.links import dagster_tags

from ._logger import LOGGER_RUN_CONFIG
from ._names import dagster_name, dataset_key
from ._resource import CobaltResource
from ._shards import shard_assets
from ._step_processes import step_run_config
from ._translator import STAGES, CobaltTranslator, unique_check_specs


@dataclass
class ExperimentDefs:
    """Everything Dagster needs for one experiment."""

    experiment: Experiment
    name: str
    partitions: dg.DynamicPartitionsDefinition
    assets: list[dg.AssetsDefinition]
    checks: list[dg.AssetChecksDefinition]
    job: Any

    @property
    def partitions_name(self) -> str:
        return f"{self.name}_runs"


def experiment_defs(experiment: Experiment, gates: list[Assertion], pool: str | None = None,
                    translator: CobaltTranslator | None = None, *, fork_steps: bool = False) -> ExperimentDefs:
    """Build the assets, checks and job of one experiment; `gates` are its assertions plus config's, `pool`
    the concurrency pool its shards claim (`_pools.judge_pool`), `translator` their specs (default:
    `CobaltTranslator()`); `fork_steps`: the job runs on Dagster's default executor, its steps forked from
    a fork server that imported cobalt (`_step_processes`)."""
    translator = translator or CobaltTranslator()
    name = dagster_name(experiment.name)
    parts = dg.DynamicPartitionsDefinition(name=f"{name}_runs")
    specs = {stage: translator.get_asset_spec(experiment, stage) for stage in STAGES}

    stored = experiment.dataset.stored  # a stored dataset's version: its asset is upstream of the run's items
    upstream = [dataset_key(stored.name)] if stored is not None else []

    @dg.asset(partitions_def=parts, deps=upstream, **_asset_args(specs["dataset"]))
    def dataset(context: dg.AssetExecutionContext, cobalt: CobaltResource) -> Iterator[dg.MaterializeResult]:
        yield from cobalt.materialize(context, experiment, "dataset")

    stages = shard_assets(experiment, name, parts, dataset.key, pool, {s: specs[s] for s in ("outputs", "scores")})

    @dg.asset(partitions_def=parts, deps=[specs["scores"].key], **_asset_args(specs["aggregates"]))
    def aggregates(context: dg.AssetExecutionContext, cobalt: CobaltResource) -> Iterator[dg.MaterializeResult]:
        yield from cobalt.materialize(context, experiment, "aggregates")

    check_specs = unique_check_specs([translator.get_check_spec(experiment, gate) for gate in gates])
    checks = [_gate_check(gate, spec, parts) for gate, spec in zip(gates, check_specs, strict=True)]
    assets = [dataset, stages, aggregates]
    # Its default config names cobalt's console logger (`_logger`): a logger runs only when a run's config
    # names it, and a run a schedule, sensor or the launchpad starts takes the job's defaults (with, on
    # Dagster's default executor, how its step processes start).
    config = {**LOGGER_RUN_CONFIG, **(step_run_config() if fork_steps else {})}
    job = dg.define_asset_job(f"{name}_eval", selection=_job_selection(assets, specs),
                              description=f"Run the cobalt experiment {experiment.name!r}.",
                              run_tags=dagster_tags(experiment.tags) or None, config=config)
    return ExperimentDefs(experiment, name, parts, assets, checks, job)


def _job_selection(assets: list[dg.AssetsDefinition], specs: dict[str, dg.AssetSpec]) -> dg.AssetSelection:
    """The experiment's own assets, and your assets in their group downstream of `aggregates` (a deploy
    gated by the checks): never another experiment's, when a translator puts several in one group."""
    own = dg.AssetSelection.assets(*[key for asset in assets for key in asset.keys])
    groups = {spec.group_name for spec in specs.values() if spec.group_name}
    return own | (dg.AssetSelection.groups(*groups) & dg.AssetSelection.assets(specs["aggregates"].key).downstream())


def _asset_args(spec: dg.AssetSpec) -> dict[str, Any]:
    """`@dg.asset`'s arguments for a translated spec (its kinds travel in its tags)."""
    return {"key": spec.key, "group_name": spec.group_name, "description": spec.description,
            "owners": list(spec.owners) or None, "tags": dict(spec.tags) or None,
            "metadata": dict(spec.metadata) or None, "code_version": spec.code_version}


def _gate_check(gate: Assertion, spec: dg.AssetCheckSpec,
                parts: dg.DynamicPartitionsDefinition) -> dg.AssetChecksDefinition:
    # Partitioned like the asset (a preview feature in Dagster 1.13): each verdict sits on its run's
    # partition, and the check's own "Execute" in the UI re-reads the stored verdict of the partition
    # chosen there, as a job run does.
    # A generator, so the check result is recorded before the step fails (Dagster's stubs type only
    # a returned result).
    @dg.asset_check(asset=spec.asset_key, name=spec.name, blocking=spec.blocking, partitions_def=parts,  # type: ignore[arg-type]
                    description=spec.description, metadata=dict(spec.metadata) or None)
    def check(context: dg.AssetCheckExecutionContext, cobalt: CobaltResource) -> Iterator[dg.AssetCheckResult]:
        yield from cobalt.check(context, gate)

    return check
