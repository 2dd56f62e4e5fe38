"""The Dagster path of "an evaluator that scored nothing fails the run": a blocking asset check,
built from `experiment_gates` like any gate, that stops a downstream deploy (issue 15)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

import cobalt_dagster
from cobalt_lib import Dataset, Evaluator, Store, experiment, load_config
from cobalt_lib.run._plan import new_run_id

NAME = "nothing_scored"
AGGREGATES = dg.AssetKey([NAME, "aggregates"])
DEPLOY = dg.AssetKey([NAME, "deploy"])


def _boom(ctx: object) -> float:
    raise RuntimeError("judge exploded")


def test_an_evaluator_that_scored_nothing_fails_a_blocking_check_and_deploy(project: Path,
                                                                          instance: dg.DagsterInstance) -> None:
    exp = experiment("nothing-scored", Dataset([{"input": "q1"}, {"input": "q2"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="relevance", type="function", fn=_boom)],
                     max_error_rate=1.0)  # the eval-errors alone would fail the error-rate check: allow them

    @dg.asset(key=DEPLOY, deps=[AGGREGATES], group_name=NAME,
              partitions_def=dg.DynamicPartitionsDefinition(name=f"{NAME}_runs"))
    def deploy() -> None:
        return None

    defs = dg.Definitions.merge(cobalt_dagster.build_definitions(project, experiments=[exp]),
                                dg.Definitions(assets=[deploy]))
    check = dg.AssetCheckKey(AGGREGATES, "gate_every_evaluator_scored")
    errors = dg.AssetCheckKey(AGGREGATES, "gate_error_rate_max_100")
    assert defs.resolve_asset_graph().asset_check_keys == {check, errors}  # no gate declared: the two all have

    partition = new_run_id()
    instance.add_dynamic_partitions(f"{NAME}_runs", [partition])
    result = defs.resolve_job_def(f"{NAME}_eval").execute_in_process(
        instance=instance, partition_key=partition, raise_on_error=False)
    assert not result.success
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert evaluations[errors.name].passed is True
    evaluation = evaluations[check.name]
    assert (evaluation.check_name, evaluation.passed, evaluation.blocking) == (check.name, False, True)
    assert evaluation.metadata["message"].value == ("evaluator 'relevance' scored none of the 2 items: "
                                                    "RuntimeError: judge exploded")
    materialised = {event.asset_key for event in result.get_asset_materialization_events()}
    assert AGGREGATES in materialised and DEPLOY not in materialised  # results kept, deploy blocked
    store = Store.for_config(load_config(project))
    assert [(v["name"], v["passed"]) for v in store.rows("verdicts", partition)] == [
        ("error rate <= 100%", True), ("scored:relevance", False)]
