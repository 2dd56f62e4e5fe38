"""Stored datasets as Dagster assets (docs/datasets.md): `datasets/<name>`, one materialisation per version
with the version's content hash as its data version, upstream of each experiment that reads it; cobalt's
sensor (`_sensor`) records new versions and runs the experiments set to evaluate on them (`[datasets]
evaluate_on_new_version`).

The versions are pushed outside Dagster (`cobalt dataset push`), so they are recorded as runless
materialisations, the way Dagster records work done elsewhere.
(No `from __future__ import annotations`: Dagster inspects the sensor's signature at runtime.)
"""

from collections.abc import Callable, Sequence
from typing import Any

import dagster as dg

from cobalt_lib import Config, ConfigError, Experiment, Store
from cobalt_lib.datasets import VersionInfo, list_versions

from ._assets import ExperimentDefs
from ._automation import variant_runs
from ._instance import tick_instance
from ._names import DATASETS_PREFIX, dataset_key

#: Where Dagster keeps an event's data version (its `DATA_VERSION_TAG`, not in the public namespace).
DATA_VERSION_TAG = "dagster/data_version"


def stored_name(experiment: Experiment) -> str | None:
    """The stored dataset an experiment reads (`Dataset.from_store`), else None."""
    stored = experiment.dataset.stored
    return stored.name if stored is not None else None


def dataset_specs(config: Config, experiments: Sequence[Experiment]) -> list[dg.AssetSpec]:
    """One asset per dataset in the store or read by an experiment."""
    names = {v.dataset for v in list_versions(Store.for_config(config))}
    names |= {n for e in experiments if (n := stored_name(e)) is not None}
    return [dg.AssetSpec(key=dataset_key(name), group_name=DATASETS_PREFIX, kinds={"duckdb"},
                         description=f"The stored dataset {name!r}: each materialisation is one immutable version "
                                     "(`cobalt dataset push`), its data version the content hash.")
            for name in sorted(names)]


def followers(config: Config, defs: Sequence[ExperimentDefs]) -> dict[str, list[ExperimentDefs]]:
    """`{dataset: [experiments]}` of `[datasets] evaluate_on_new_version`, each checked to follow a stored dataset."""
    by_name = {d.experiment.name: d for d in defs}
    found: dict[str, list[ExperimentDefs]] = {}
    for name in config.datasets.evaluate_on_new_version:
        target = by_name.get(name)
        if target is None:
            raise ConfigError(f"[datasets] evaluate_on_new_version names experiment {name!r}, which does not exist; "
                              f"experiments: {', '.join(sorted(by_name)) or 'none'}.")
        stored = target.experiment.dataset.stored
        if stored is None or stored.pinned:
            what = f"pins {stored.ref}" if stored is not None else "does not read a stored dataset"
            raise ConfigError(f"[datasets] evaluate_on_new_version names experiment {name!r}, which {what}; it "
                              "needs Dataset.from_store(NAME) without a version, so that it reads each new version.")
        found.setdefault(stored.name, []).append(target)
    return found


def version_materialization(v: VersionInfo) -> dg.AssetMaterialization:
    metadata: dict[str, Any] = {
        "version": dg.MetadataValue.int(v.version), "ref": dg.MetadataValue.text(v.ref),
        "items": dg.MetadataValue.int(v.items), "hash": dg.MetadataValue.text(v.hash),
        **({"splits": dg.MetadataValue.json(v.splits)} if v.splits else {}),
        **({"source": dg.MetadataValue.text(v.source)} if v.source else {}),
        **({"note": dg.MetadataValue.text(v.note)} if v.note else {}),
    }
    return dg.AssetMaterialization(asset_key=dataset_key(v.dataset), metadata=metadata,
                                   tags={DATA_VERSION_TAG: v.hash},
                                   description=f"{v.ref}: {v.items} items")


def recorded_version(instance: dg.DagsterInstance, name: str) -> int:
    """The newest version of `name` Dagster holds a materialisation of (0: none)."""
    event = instance.get_latest_materialization_event(dataset_key(name))
    if event is None or event.asset_materialization is None:
        return 0
    value = event.asset_materialization.metadata.get("version")
    return int(value.value) if isinstance(value, dg.IntMetadataValue) and value.value is not None else 0


def dataset_look(config: Config,
                 defs: Sequence[ExperimentDefs]) -> Callable[[dg.SensorEvaluationContext], dg.SensorResult]:
    """The look of cobalt's sensor (`_sensor`) that records each new version of a stored dataset as a
    materialisation of its asset, and runs the experiments that evaluate on new versions."""
    following = followers(config, defs)

    def versions(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        runs, partitions = [], []
        instance = tick_instance(context)
        for name, new in _unrecorded(instance, config).items():
            for v in new:
                instance.report_runless_asset_event(version_materialization(v))
            for target in following.get(name, []):
                started = variant_runs(target, {"cobalt/trigger": "dataset", "cobalt/dataset": new[-1].ref})
                partitions.append(target.partitions.build_add_request([key for key, _ in started]))
                runs += [dg.RunRequest(run_key=f"{new[-1].ref}:{key}", job_name=target.job.name, partition_key=key,
                                       tags=tags) for key, tags in started]
        return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=partitions)

    return versions


def _unrecorded(instance: dg.DagsterInstance, config: Config) -> dict[str, list[VersionInfo]]:
    """`{dataset: [versions]}` the store holds and Dagster does not yet, oldest first."""
    by_name: dict[str, list[VersionInfo]] = {}
    for v in list_versions(Store.for_config(config)):
        by_name.setdefault(v.dataset, []).append(v)
    new = {}
    for name, versions in by_name.items():
        held = recorded_version(instance, name)
        if unseen := [v for v in versions if v.version > held]:
            new[name] = unseen
    return new
