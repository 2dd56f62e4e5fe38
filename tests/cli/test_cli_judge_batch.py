"""`cobalt run --judge-batch` as a user types it: stopped at the deadline while the batch waits, then
finished with `--resume`, which waits on the same batch instead of sending a new one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import TEST_KEY, write_judge_config
from fakellm import FakeLLM, score_from_prompt
from test_cli_run import cobalt

from cobalt_lib import Store

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

items = Dataset([{"input": f"question {i} SCORE=0.{i + 5}"} for i in range(3)])
experiment("judged", items, lambda ctx: "an answer",
           evaluators=[Evaluator(name="quality", prompt="{{input}} {{output}}", threshold=0.5)])
'''


@pytest.mark.slow
def test_a_batch_past_its_deadline_stops_the_run_and_resume_finishes_it_on_the_same_batch(
        project: Path, llm: FakeLLM) -> None:
    llm.respond = score_from_prompt
    llm.batches.polls_to_end = 2
    (project / "experiments").mkdir()
    (project / "experiments" / "judged.cobalt.py").write_text(EXPERIMENT)
    write_judge_config(project, llm, extra='batch_window = "0.01s"\nbatch_deadline = "0s"\n')
    env = {"OPENAI_API_KEY": TEST_KEY, "COBALT_DAGSTER_RECORD": "off"}

    stopped = cobalt(project, "run", "--judge-batch", **env)
    assert stopped.returncode == 2, stopped.stderr
    sent = re.search(r"cobalt: judge batch (\S+): 3 requests sent to openai/gpt-4o-mini", stopped.stderr)
    assert sent, stopped.stderr
    resume = re.search(r"`cobalt run --resume (\S+)` waits on the same batch", stopped.stderr)
    assert resume, stopped.stderr
    run_id = resume.group(1)
    assert TEST_KEY not in stopped.stderr + stopped.stdout

    write_judge_config(project, llm, extra='batch_window = "0.01s"\n')  # the default deadline: 24 h
    finished = cobalt(project, "run", "--resume", run_id, **env)
    assert finished.returncode == 0, finished.stderr
    assert f"judge batch {sent.group(1)}: sent by an earlier attempt" in finished.stderr
    assert f"judge batch {sent.group(1)}: completed, 3 of 3 requests answered" in finished.stderr
    assert [p for m, p in llm.batches.calls if m == "POST"] == ["/v1/files", "/v1/batches"]  # one batch in all
    assert llm.count("chat") == 0
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    run = store.require_run(run_id)
    assert run["status"] == "completed" and run["config"]["judge_batch"] is True
    scores = sorted(r["score"] for r in store.rows("scores", run_id))
    assert scores == [0.5, 0.6, 0.7]
    assert [(b["batch_id"], b["status"]) for b in store.judge_batches(run_id)] == [(sent.group(1), "completed")]


@pytest.mark.slow
def test_a_server_without_a_batch_api_is_said_before_any_agent_call(project: Path, llm: FakeLLM) -> None:
    llm.batches.absent = True  # as vLLM, Ollama or a LiteLLM proxy without batches answer
    (project / "experiments").mkdir()
    (project / "experiments" / "judged.cobalt.py").write_text(EXPERIMENT.replace(
        'lambda ctx: "an answer"', '(lambda ctx: open("agent-called", "a").write("x") and "an answer")'))
    write_judge_config(project, llm)
    result = cobalt(project, "run", "--judge-batch", OPENAI_API_KEY=TEST_KEY, COBALT_DAGSTER_RECORD="off")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == (
        f"error: evaluator 'quality' judges with openai/gpt-4o-mini, whose server has no batch API (GET "
        f"{llm.openai_url}/batches was not found); run without batch judging ([judge] batch = false, "
        "COBALT_JUDGE_BATCH=0 or --no-judge-batch), or judge with a server that has one.")
    assert not (project / "agent-called").exists()
    assert llm.batches.calls == [("GET", "/v1/batches")] and llm.count("chat") == 0
