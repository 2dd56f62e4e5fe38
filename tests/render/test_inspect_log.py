"""`cobalt export --format inspect`: a run as an Inspect AI eval log (inspect_ai 0.3.285's read_eval_log and
list_eval_logs read what this writes: checked by hand, see docs/imports.md)."""

from __future__ import annotations

import json
from pathlib import Path

from cobalt_lib import Evaluator, experiment
from cobalt_lib.render._inspect_log import to_inspect_log


def test_each_item_is_a_sample_and_each_evaluator_a_scorer(project: Path) -> None:
    answers = {"France": "Paris", "Japan": "Kyoto"}

    def agent(ctx):
        return {"output": answers[ctx.input], "metadata": {"model": "claude-haiku-4-5", "input_tokens": 7,
                                                           "output_tokens": 2}}

    items = [{"id": "fr", "input": "France", "expected_output": "Paris"},
             {"input": "Japan", "expected_output": "Tokyo"}]
    report = experiment("capitals", items, agent, evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    log = json.loads(to_inspect_log(report))
    assert (log["version"], log["status"], log["eval"]["task"], log["eval"]["model"]) == (
        2, "success", "capitals", "anthropic/claude-haiku-4-5")
    assert log["eval"]["dataset"] == {"name": "capitals", "samples": 2, "sample_ids": ["fr", 2]}
    assert log["results"]["scores"] == [{"name": "exact", "scorer": "exact", "params": {}, "metrics": {
        "mean": {"name": "mean", "value": 0.5, "params": {}},
        "pass_rate": {"name": "pass_rate", "value": 0.5, "params": {}}}}]
    assert log["stats"]["model_usage"] == {"anthropic/claude-haiku-4-5": {"input_tokens": 14, "output_tokens": 4,
                                                                          "total_tokens": 18}}
    second = log["samples"][1]
    assert (second["id"], second["epoch"], second["input"], second["target"]) == (2, 1, "Japan", "Tokyo")
    assert second["output"]["choices"][0]["message"] == {"role": "assistant", "content": "Kyoto", "source": "generate"}
    assert second["scores"]["exact"] == {"value": 0.0, "explanation": "expected 'Tokyo', got 'Kyoto'",
                                         "metadata": {"passed": False, "status": "ok"}}
