"""A schedule's `judge_batch`: its Dagster-launched runs judge through the provider's batch API."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from conftest import write_judge_config
from dagster_jobs import execute_job
from fakellm import FakeLLM, score_from_prompt

import cobalt_dagster
from cobalt_lib import Dataset, Evaluator, Store, experiment, load_config
from cobalt_lib.links import JUDGE_BATCH_TAG

pytestmark = pytest.mark.slow


def test_a_nightly_schedule_judges_its_runs_in_a_batch(judged_project: Path, llm: FakeLLM,
                                                       instance: dg.DagsterInstance) -> None:
    llm.respond = score_from_prompt
    write_judge_config(judged_project, llm, extra='batch_window = "0.01s"\n\n[schedules]\n'
                       'nightly = { cron = "0 3 * * *", judge_batch = true }\n')
    exp = experiment("nightly", Dataset([{"input": f"SCORE=0.{i + 2}"} for i in range(3)]), lambda ctx: "an answer",
                     evaluators=[Evaluator(name="quality", prompt="{{input}} {{output}}")])
    config = load_config()
    defs = cobalt_dagster.build_definitions(config.root, experiments=[exp])
    schedule = defs.resolve_schedule_def("nightly_schedule")
    context = dg.build_schedule_context(instance=instance, repository_def=defs.get_repository_def())
    tick = schedule.evaluate_tick(context)
    [request] = tick.run_requests or []
    assert request.tags[JUDGE_BATCH_TAG] == "true"

    report, result = execute_job(config, exp, run_id=request.partition_key, instance=instance,
                                 tags=dict(request.tags))
    assert result.success and report is not None
    assert sorted(i.evaluations["quality"].score for i in report.items) == [0.2, 0.3, 0.4]
    assert llm.count("chat") == 0 and llm.count("batch-chat") == 3
    assert report.config["judge_batch"] is True
    assert [b["status"] for b in Store.for_config(config).judge_batches(report.id)] == ["completed"]

    online, result = execute_job(config, exp, instance=instance)  # a run without the tag: online, all cached
    assert result.success and online is not None and "judge_batch" not in online.config
    assert llm.count("chat") == 0 and all(i.evaluations["quality"].cached for i in online.items)
