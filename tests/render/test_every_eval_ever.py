"""`cobalt export --format every-eval-ever`: a run as an Every Eval Ever 0.3.0 record (what the package's own
validator, `python -m every_eval_ever.validate`, accepted by hand: see docs/imports.md)."""

from __future__ import annotations

import json
from pathlib import Path

from cobalt_lib import Evaluator, experiment
from cobalt_lib.render._every_eval_ever import to_every_eval_ever


def test_each_evaluator_is_one_result_and_the_agents_model_the_records_model(project: Path) -> None:
    answers = {"France": "Paris", "Japan": "Kyoto"}

    def agent(ctx):
        return {"output": answers[ctx.input], "metadata": {"model": "gpt-4o-mini", "input_tokens": 5,
                                                           "output_tokens": 1}}

    items = [{"input": "France", "expected_output": "Paris"}, {"input": "Japan", "expected_output": "Tokyo"}]
    report = experiment("capitals", items, agent,
                        evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    record = json.loads(to_every_eval_ever(report))
    assert record["schema_version"] == "0.3.0"
    assert record["model_info"] == {"name": "gpt-4o-mini", "id": "openai/gpt-4o-mini", "developer": "openai",
                                    "additional_details": {"deployment_type": "unknown",
                                                           "model_availability": "unknown"}}
    assert record["evaluation_id"] == f"capitals/gpt-4o-mini/{record['retrieved_timestamp']}"
    assert record["source_metadata"]["additional_details"]["run_id"] == report.id
    [exact] = record["evaluation_results"]
    assert exact["evaluation_name"] == "exact"
    assert exact["metric_config"] == {"metric_id": "exact", "metric_name": "exact",
                                      "evaluation_description": "cobalt evaluator exact", "lower_is_better": False,
                                      "score_type": "continuous", "min_score": 0, "max_score": 1}
    assert exact["score_details"]["score"] == 0.5
    assert exact["score_details"]["uncertainty"]["num_samples"] == 2
    assert exact["score_details"]["details"] == {"errors": "0", "pass_rate": "0.5"}
