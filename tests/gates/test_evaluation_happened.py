"""A green run must mean the evaluation happened: eval-errors count as errors, and an evaluator that
scored none of its items fails the run whatever gates are declared (issue 15)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fakellm import FakeLLM, text

from cobalt_lib import Dataset, Evaluator, define_config, experiment, load_config
from cobalt_lib.ops._history import run_history

COBALT = str(Path(sys.executable).parent / "cobalt")


def _boom(ctx: object) -> float:
    raise RuntimeError("judge exploded")


def _data(n: int = 3) -> Dataset:
    return Dataset([{"input": f"question {i}", "expected_output": "a"} for i in range(n)])


def _failed(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {a.name: a.message for a in report.assertions if not a.passed}


def test_an_evaluator_that_always_raises_fails_the_run_with_its_first_error(project: Path) -> None:
    exp = experiment("raises", _data(), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match"),
                                 Evaluator(name="relevance", type="function", fn=_boom)])
    report = exp.run(config=define_config())
    assert report.passed is False
    assert _failed(report) == {"scored:relevance": "evaluator 'relevance' scored none of the 3 items: "
                                                   "RuntimeError: judge exploded",
                               "error rate <= 0%": "error rate 33.3% (3 of 9 attempts): 0 of 3 agent calls failed "
                                                   "or timed out, 3 of 6 evaluations were eval-errors"}
    assert {a.gate for a in report.assertions} == {"error rate <= 0%", "every evaluator scored"}
    assert [e.verdict for e in run_history(define_config(), experiment="raises")] == ["FAILED"]


def test_errors_fail_the_run_by_default_unless_max_error_rate_allows_them(project: Path) -> None:
    exp = experiment("raises", _data(), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match"),
                                 Evaluator(name="relevance", type="function",
                                           fn=lambda ctx: _boom(ctx) if ctx.index == 0 else 1.0)])
    report = exp.run(config=load_config())
    # one eval-error in 3 agent calls + 6 evaluations; every evaluator scored something
    assert _failed(report) == {"error rate <= 0%": "error rate 11.1% (1 of 9 attempts): 0 of 3 agent calls failed "
                                                  "or timed out, 1 of 6 evaluations were eval-errors"}
    [rate] = [a for a in report.assertions if a.name == "error rate <= 0%"]
    assert rate.actual == pytest.approx(1 / 9)
    (project / "cobalt.toml").write_text("[ci]\nmax_error_rate = 0.12\n")
    assert exp.run(config=load_config()).passed is True
    (project / "cobalt.toml").write_text("[ci]\nmax_error_rate = 0.11\n")
    assert _failed(exp.run(config=load_config())).keys() == {"error rate <= 11%"}


def test_a_run_whose_agent_always_fails_says_so_once(project: Path) -> None:
    def agent(ctx: object) -> str:
        raise RuntimeError("agent down")

    exp = experiment("down", _data(), agent, evaluators=[Evaluator(name="exact", type="exact-match"),
                                                         Evaluator(name="relevance", type="function", fn=_boom)])
    report = exp.run(config=define_config())
    assert _failed(report) == {"every evaluator scored": "no agent call succeeded (3 of 3 failed or timed out), "
                                                         "so no evaluator scored anything",
                               "error rate <= 0%": "error rate 100% (3 of 3 attempts): 3 of 3 agent calls failed "
                                                   "or timed out, 0 of 0 evaluations were eval-errors"}


def test_partly_scored_evaluators_pass_the_gate_and_say_their_counts(project: Path) -> None:
    exp = experiment("partly", _data(), lambda ctx: "a",
                     evaluators=[Evaluator(name="relevance", type="function",
                                           fn=lambda ctx: _boom(ctx) if ctx.index == 0 else 1.0)])
    rate, gate = exp.run(config=define_config(ci={"max_error_rate": 0.5})).assertions
    assert (gate.name, gate.passed, gate.message) == ("every evaluator scored", True, "scored: relevance 2/3")
    assert (rate.name, rate.passed) == ("error rate <= 50%", True)


def test_a_judge_on_a_closed_port_fails_the_run(project: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (project / "cobalt.toml").write_text(
        f'[judge]\nbase_url = "http://127.0.0.1:{port}/v1"\nmax_retries = 0\nretry_max_seconds = 5\n')
    exp = experiment("judged", _data(2), lambda ctx: "a",
                     evaluators=[Evaluator(name="relevance", prompt="Q: {{input}}\nA: {{output}}")])
    report = exp.run(config=load_config())
    message = _failed(report)["scored:relevance"]
    assert report.passed is False
    assert message.startswith("evaluator 'relevance' scored none of the 2 items: ") and "call failed" in message


def test_a_judge_that_never_answers_json_fails_the_run(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = lambda kind, body: text("I would rather not score this.")
    exp = experiment("judged", _data(2), lambda ctx: "a",
                     evaluators=[Evaluator(name="relevance", prompt="Q: {{input}}\nA: {{output}}")])
    report = exp.run(config=load_config())
    message = _failed(report)["scored:relevance"]
    assert message.startswith("evaluator 'relevance' scored none of the 2 items: ")
    assert "stricter retry" in message and llm.count("chat") == 4


@pytest.mark.slow
def test_cobalt_run_ci_exits_1_and_history_says_failed(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(
        "from cobalt_lib import Dataset, Evaluator, experiment\n"
        "def boom(ctx):\n    raise RuntimeError('judge exploded')\n"
        "experiment('qa', Dataset([{'input': 'q'}]), lambda ctx: 'a',\n"
        "           evaluators=[Evaluator(name='relevance', type='function', fn=boom)])\n")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    run = subprocess.run([COBALT, "run", "--ci"], cwd=project, capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "evaluator 'relevance' scored none of the 1 items: RuntimeError: judge exploded" in run.stdout
    history = subprocess.run([COBALT, "history"], cwd=project, capture_output=True, text=True, timeout=120, env=env)
    assert "FAILED" in history.stdout and "passed" not in history.stdout


def test_the_gate_reads_the_runs_own_counts_and_says_what_reading_the_items_says(project: Path) -> None:
    from cobalt_lib.gates._assertions import EvaluatorsScored

    def agent(ctx: object) -> str:
        if getattr(ctx, "index", 0) == 4:
            raise RuntimeError("agent down")  # a failed call: no evaluation at all
        return "a"

    exp = experiment("counted", _data(6), agent, evaluators=[
        Evaluator(name="exact", type="exact-match"),
        Evaluator(name="relevance", type="function", fn=lambda ctx: _boom(ctx) if ctx.index == 0 else 1.0)])
    report = exp.run(config=define_config())
    assert report.items.scored_counts == {"exact": (5, 5), "relevance": (5, 4)}  # type: ignore[attr-defined]
    counted = EvaluatorsScored().evaluate(report, define_config())
    report.items = list(report.items)  # as a report read from a file or the store: every item is read
    read = EvaluatorsScored().evaluate(report, define_config())
    assert counted == read
    assert [(a.passed, a.message) for a in counted] == [(True, "scored: exact 5/5, relevance 4/5")]
