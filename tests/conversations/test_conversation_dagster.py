"""A conversation run Dagster executes (split -> run_shard -> merge, in process) plays the same conversation as a
library run: the simulated user replayed from the cache the library run filled, the per-turn scores stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chats import SCENARIO, USER_LINES, agent_v1, route, simulator_calls
from dagster_jobs import execute_job
from fakellm import FakeLLM

from cobalt_lib import Evaluator, experiment, load_config

pytestmark = pytest.mark.slow


def test_a_dagster_run_replays_the_library_runs_conversation(judged_project: Path, llm: FakeLLM) -> None:
    route(llm)
    config = load_config()
    short = Evaluator("short", type="function", per_turn=True, fn=lambda ctx: len(ctx.output) < 30)
    exp = experiment("billing", [SCENARIO], agent_v1, evaluators=[short])
    library = exp.run(config=config)
    assert simulator_calls(llm) == 3
    report, result = execute_job(config, exp)
    assert result.success and report is not None
    assert simulator_calls(llm) == 3  # every turn from the cache the library run filled
    [item] = report.items
    assert json.dumps(item.output) == json.dumps(library.items[0].output)
    assert [m["content"] for m in item.output if m["role"] == "user"] == USER_LINES
    assert [t.turn for t in item.evaluations["short"].turns or []] == [1, 2, 3]
