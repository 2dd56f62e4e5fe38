"""Each way a run starts is a request object, and `prepare` plans each as it should."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from cobalt_lib import (
    ConfigError,
    Dataset,
    Evaluator,
    Experiment,
    ItemResult,
    define_config,
    experiment,
    no_regression,
)
from cobalt_lib.run import FreshRun, PartitionRun, RescoreRun, ResumeRun, prepare

DATA = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(3)])


def _exp(*, gated: bool = False) -> Experiment:
    """Two evaluators; `gated`: a no_regression gate whose baseline file does not exist."""
    return experiment("req", DATA, lambda ctx: ctx.item["expected_output"], tags=["base"], runs=2,
                      evaluators=[Evaluator(name="exact", type="exact-match"),
                                  Evaluator(name="f", type="function", fn=lambda ctx: 1.0)],
                      assertions=[no_regression("missing-baseline.json")] if gated else [])


def test_requests_are_frozen_and_keep_what_they_are_given_as_tuples() -> None:
    fresh = FreshRun(tags=["a", "b"], concurrency=3)
    assert fresh.tags == ("a", "b") and fresh == FreshRun(tags=("a", "b"), concurrency=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fresh.concurrency = 4  # type: ignore[misc]
    assert RescoreRun(parent_run_id="p", outputs=[], evaluators=["f"]).evaluators == ("f",)


def test_a_fresh_run_needs_its_baselines_unless_it_is_about_to_write_them(project: Path) -> None:
    config = define_config(output_dir=str(project / ".cobalt"))
    with pytest.raises(ConfigError, match=re.escape("missing-baseline.json does not exist")):
        prepare(_exp(gated=True), config)
    plan = prepare(_exp(gated=True), config, FreshRun(update_baselines=True, concurrency=7, timeout=2.5, runs=1,
                                                      tags=["extra", "base"], run_id="r-1"))
    assert (plan.run_id, plan.concurrency, plan.timeout, plan.runs, plan.tags) == ("r-1", 7, 2.5, 1, ["base", "extra"])
    # the no_regression gate is dropped; the gates every experiment has stay
    assert [a.name for a in plan.assertions] == ["error rate <= 0%", "every evaluator scored"]
    assert (plan.source, plan.parent_run_id, plan.total_items) == ("library", None, 3)
    assert isinstance(plan.request, FreshRun)


def test_a_rescore_is_a_new_run_of_the_stored_items_scoring_only_what_it_names(project: Path) -> None:
    config = define_config(output_dir=str(project / ".cobalt"))
    outputs = [ItemResult(index=i, run_index=r, input=f"q{i}", item={"input": f"q{i}", "expected_output": f"a{i}"},
                          output=f"a{i}", status="ok") for i in (0, 2) for r in (0, 1, 2)]
    plan = prepare(_exp(), config, RescoreRun(parent_run_id="old", outputs=outputs, evaluators=["f"]))
    assert (plan.parent_run_id, plan.runs, plan.total_items, plan.scored) == ("old", 3, 2, frozenset({"f"}))
    assert plan.run_id != "old" and plan.describe()["rescored"] == ["f"]
    with pytest.raises(ConfigError, match=re.escape("has no evaluator 'g'; it has exact, f.")):
        prepare(_exp(), config, RescoreRun(parent_run_id="old", outputs=outputs, evaluators=["g"]))


def test_a_resume_and_a_dagster_partition_keep_their_run_id_and_start_time(project: Path) -> None:
    config = define_config(output_dir=str(project / ".cobalt"), concurrency=4)
    exp = experiment("plain", DATA, lambda ctx: "x", evaluators=[Evaluator(name="exact", type="exact-match")])
    resumed = prepare(exp, config, ResumeRun(run_id="r-9", timestamp="2026-01-01T00:00:00+00:00", concurrency=1))
    assert (resumed.run_id, resumed.timestamp, resumed.concurrency, resumed.source) == (
        "r-9", "2026-01-01T00:00:00+00:00", 1, "library")
    partition = prepare(exp, config, PartitionRun(run_id="p-1", tags=["cli"]))
    assert (partition.run_id, partition.source, partition.concurrency, partition.tags) == ("p-1", "dagster", 4, ["cli"])
    dated = prepare(exp, config, PartitionRun(run_id="p-1", timestamp="2026-02-02T00:00:00+00:00"))
    assert dated.timestamp == "2026-02-02T00:00:00+00:00"
    with pytest.raises(TypeError, match="Not a run request"):
        prepare(exp, config, {"run_id": "r"})  # type: ignore[arg-type]


def test_a_fresh_run_of_some_items_keeps_their_indices(project: Path) -> None:
    config = define_config(output_dir=str(project / ".cobalt"))
    assert FreshRun(indices=[2, 0]).indices == (2, 0)
    plan = prepare(_exp(), config, FreshRun(indices=[0, 2]))
    assert (plan.indices, plan.total_items, plan.parent_run_id) == ((0, 2), 2, None)
    assert plan.describe()["indices"] == [0, 2] and plan.describe()["dataset"]["size"] == 3
    report = _exp().run(config=config, indices=(2,), runs=1)
    assert [(i.index, i.output) for i in report.items] == [(2, "a2")] and report.config["indices"] == [2]
