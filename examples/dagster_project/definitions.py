"""A Dagster code location: cobalt's experiments plus a `deploy` asset gated by the quality check.

`deploy` runs where this file is loaded: under `cobalt serve` (schedules, `cobalt request`, the
UI's job) or `dagster dev`. `cobalt run` evaluates only (the dataset, outputs, scores and
aggregates assets), so running evals locally never deploys.

    cobalt serve                        (from this directory: it finds and loads this file)
    DAGSTER_HOME=$PWD/.cobalt/dagster dagster dev -m definitions    (same instance as `cobalt run`)
    dagster definitions validate -m definitions
"""

from pathlib import Path

import dagster as dg

from cobalt_dagster import build_definitions, dagster_name, require_gates_passed

PROJECT = Path(__file__).parent
EXPERIMENT = "support-bot"
NAME = dagster_name(EXPERIMENT)  # support_bot


@dg.asset(
    key=dg.AssetKey([NAME, "deploy"]),
    deps=[dg.AssetKey([NAME, "aggregates"])],
    group_name=NAME,  # in the experiment's group, so this code location's job runs it after the gate
    partitions_def=dg.DynamicPartitionsDefinition(name=f"{NAME}_runs"),
    description="Ships the support bot; blocked when its quality gate fails.",
)
def deploy(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    # A blocking check only stops steps of the same Dagster run: re-check the stored verdict so a
    # deploy materialised later for a failed run fails too.
    require_gates_passed(EXPERIMENT, context.partition_key, PROJECT)
    context.log.info(f"deploying the support bot evaluated in run {context.partition_key}")
    return dg.MaterializeResult(metadata={"deployed_run": dg.MetadataValue.text(context.partition_key)})


defs = dg.Definitions.merge(build_definitions(PROJECT), dg.Definitions(assets=[deploy]))
