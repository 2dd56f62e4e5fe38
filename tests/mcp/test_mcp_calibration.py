"""`cobalt_calibration` through the SDK's client: an evaluator's figures and disagreements, computed from the
labels when nothing is stored (and then storing nothing), the stored calibration once `cobalt calibrate` ran,
and within a small budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, answer
from mcp import Client

from cobalt_lib import Evaluator, Store, experiment, load_config
from cobalt_lib.grading._calibrate import calibrate_evaluator
from cobalt_lib.grading._labels import set_label
from cobalt_lib.mcp._server import build_server

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SCORES = [0.9, 0.8, 0.1, 0.2, 0.95, 0.05]
LABELS = ["pass", "fail", "fail", "pass", "pass", "fail"]


def _judge(kind: str, body: dict[str, Any]) -> Any:
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    index = int(prompt.split("question ")[1].split()[0])
    return answer(SCORES[index], f"reason {index} " + "why " * 300)


def _project(root: Path, llm: FakeLLM) -> str:
    llm.respond = _judge
    items = [{"id": f"q{i}", "input": f"question {i} ? " + "long " * 300} for i in range(len(SCORES))]
    report = experiment("support", items, lambda ctx: "ok",
                        evaluators=[Evaluator("helpful", prompt="Rate {{output}} for {{input}}", threshold=0.5),
                                    Evaluator("says", type="contains", value="ok")]).run(config=load_config(root))
    config = load_config(root)
    for i, value in enumerate(LABELS):
        set_label(config, report.id, i, "says", value, note=f"note {i}")
    return report.id


async def test_calibration_read_through_the_client(judged_project: Path, llm: FakeLLM) -> None:
    run_id = _project(judged_project, llm)
    async with Client(build_server(judged_project)) as client:
        computed = await client.call_tool("cobalt_calibration", {"experiment": "support", "evaluator": "says"})
        data = computed.structured_content
        assert data is not None and data["scale"] == "pass/fail" and data["run_id"] == run_id
        # `says` passes every item: accuracy 3/6, precision 3/6, recall 3/3; three disagreements with notes
        figures = {f["name"]: f["value"] for f in data["figures"]}
        assert figures["accuracy"] == 0.5 and figures["precision"] == 0.5 and figures["recall"] == 1.0
        assert [d["note"] for d in data["disagreements"]] == ["note 1", "note 2", "note 5"]
        assert "accuracy: 50%" in computed.content[0].text
        assert Store.for_config(load_config(judged_project)).calibrations() == []  # reading stored nothing

        calibrate_evaluator(load_config(judged_project), "support", "says", resamples=100)
        stored = await client.call_tool("cobalt_calibration", {"experiment": "support", "evaluator": "says",
                                                               "run_id": run_id, "budget": 1000})
        size = sum(len(c.text) for c in stored.content if c.type == "text")
        assert size <= 1000 * 4 and stored.structured_content is not None
        assert stored.structured_content["created_at"]  # the stored one: it carries when it was made
        missing = await client.call_tool("cobalt_calibration", {"experiment": "support", "evaluator": "nope"})
        said = json.dumps(missing.model_dump(mode="json"))
        assert missing.is_error and "No completed run of 'support' has evaluator 'nope'" in said
