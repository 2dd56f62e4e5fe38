"""The LLM judge against the loopback server, through cobalt's own HTTP client (llm/_wire.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TEST_KEY, write_judge_config
from fakellm import FakeLLM, Reply, answer, error, score_from_prompt, text

from cobalt_lib import Dataset, Evaluator, MissingApiKeyError, TemplateError, experiment, load_config
from cobalt_lib.grading.graders import parse_grade
from cobalt_lib.llm._judge import RETRY_SEPARATOR, parse_judgement


def _items(n: int = 3) -> Dataset:
    return Dataset([{"input": f"question {i}", "expected_output": f"answer {i}"} for i in range(n)])


def _run(n: int = 3, *, evaluator: Evaluator | None = None, **options):
    evaluator = evaluator or Evaluator(name="quality", prompt="Q: {{input}}\nA: {{output}}")
    exp = experiment("judged", _items(n), lambda ctx: f"reply to {ctx.item['input']}", evaluators=[evaluator],
                     **options)
    return exp.run(config=load_config())


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"score": 0.7, "reason": "ok"}', (0.7, "ok")),
        ('```json\n{"score": 1, "reason": "fenced"}\n```', (1.0, "fenced")),
        ('Sure! Here is my verdict: {"score": 0.25, "reason": "weak"} Hope it helps.', (0.25, "weak")),
        ('{"score": "0.5"}', (0.5, None)),
        ('{"note": {"x": 1}} then {"score": 0, "reason": "zero"}', (0.0, "zero")),
    ],
)
def test_parse_judgement_accepts_usable_answers(raw: str, expected: tuple[float, str | None]) -> None:
    assert parse_judgement(raw) == expected


@pytest.mark.parametrize(
    ("raw", "problem"),
    [("I think it is good", "no JSON object"), ('{"score": 7}', "outside 0..1"),
     ('{"score": "high"}', "not a number"), ('{"score": NaN}', "not a number"), ("{broken", "no JSON object")],
)
def test_parse_judgement_explains_unusable_answers(raw: str, problem: str) -> None:
    result = parse_judgement(raw)
    assert isinstance(result, str) and problem in result



@pytest.mark.parametrize("raw", ['{"score": "inf"}', '{"score": "-Infinity"}', '```json\n{"score": "nan"}\n```'])
def test_the_judge_and_the_graders_refuse_a_non_finite_score_with_one_sentence(raw: str) -> None:
    shown = raw.split(": ", 1)[1].split("}", 1)[0].strip('"')
    assert parse_judgement(raw) == parse_grade(raw) == f"the score {shown!r} is not a number"

def test_openai_judge_scores_and_reports_tokens_and_cost(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(answer(0.9, "good"), answer(0.6, "fine"), answer(0.3, "poor"))
    report = _run(3, concurrency=1)
    scores = [item.evaluations["quality"].score for item in report.items]
    assert scores == [0.9, 0.6, 0.3]
    assert report.summary.scores["quality"].avg == pytest.approx(0.6)
    first = report.items[0].evaluations["quality"]
    assert (first.input_tokens, first.output_tokens, first.judge_model) == (20, 10, "openai/gpt-4o-mini")
    assert first.cost_usd == pytest.approx((20 * 0.15 + 10 * 0.60) / 1e6)
    assert report.summary.judge_cost == pytest.approx(3 * first.cost_usd)
    assert report.summary.judge_tokens == 90
    request = llm.requests[0]
    assert request["kind"] == "chat" and request["body"]["model"] == "gpt-4o-mini"
    assert "Q: question 0\nA: reply to question 0" in request["body"]["messages"][-1]["content"]
    assert request["headers"]["authorization"] == f"Bearer {TEST_KEY}"


def test_anthropic_judge_speaks_the_messages_api(judged_project: Path, llm: FakeLLM) -> None:
    write_judge_config(judged_project, llm, provider="anthropic")
    llm.script(text('{"score": 0.4, "reason": "meh"}'), answer(1.0))
    report = _run(2, concurrency=1,
                  evaluator=Evaluator(name="quality", prompt="{{input}} {{output}}", model="claude-haiku-4-5"))
    assert [i.evaluations["quality"].score for i in report.items] == [0.4, 1.0]
    assert llm.count("messages") == 2 and llm.count("chat") == 0
    body = llm.requests[0]["body"]
    assert body["model"] == "claude-haiku-4-5" and "temperature" not in body
    assert "score" in body["system"]
    headers = llm.requests[0]["headers"]
    assert TEST_KEY in (headers.get("x-api-key", ""), headers.get("authorization", "").removeprefix("Bearer "))
    assert report.items[0].evaluations["quality"].cost_usd == pytest.approx((20 * 1.0 + 10 * 5.0) / 1e6)


def test_an_anthropic_base_url_written_with_v1_still_reaches_the_messages_api(judged_project: Path,
                                                                              llm: FakeLLM) -> None:
    write_judge_config(judged_project, llm, provider="anthropic")
    config = judged_project / "cobalt.toml"
    config.write_text(config.read_text().replace(llm.anthropic_url, llm.anthropic_url + "/v1/"))
    llm.script(text('{"score": 0.6, "reason": "ok"}'))
    report = _run(1, evaluator=Evaluator(name="quality", prompt="{{input}} {{output}}", model="claude-haiku-4-5"))
    assert report.items[0].evaluations["quality"].score == 0.6  # not a 404 from /v1/v1/messages
    assert llm.count("messages") == 1


def test_garbage_then_valid_is_retried_once_with_a_stricter_prompt(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(text("The answer looks great to me!"), answer(0.7, "fine"))
    report = _run(1)
    ev = report.items[0].evaluations["quality"]
    assert (ev.status, ev.score, ev.judge_calls) == ("ok", 0.7, 2)
    retry = llm.requests[1]["body"]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "The answer looks great to me!"}
    assert "could not be used" in retry[-1]["content"]


def test_always_garbage_is_an_eval_error_left_out_of_the_mean(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = score_from_prompt
    ev = Evaluator(name="quality", prompt="SCORE={{score}} {{output}}")
    exp = experiment("mixed", Dataset([{"score": s} for s in ("bad", "0.9", "0.4")]), lambda ctx: "x",
                     evaluators=[ev], concurrency=1)
    report = exp.run(config=load_config())
    first = report.items[0].evaluations["quality"]
    assert first.status == "eval-error" and first.score is None
    # both answers are kept: the first one and the one after the stricter retry
    assert first.raw_response == RETRY_SEPARATOR.join(["I cannot score this (bad)."] * 2)
    assert "stricter retry" in (first.error or "")
    stats = report.summary.scores["quality"]
    assert stats.avg == pytest.approx(0.65) and stats.count == 2 and stats.errors == 1
    assert stats.coverage == pytest.approx(2 / 3)
    assert llm.count("chat") == 4


def test_score_outside_zero_to_one_is_an_eval_error(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(answer(7.0), answer(-1))
    ev = _run(1).items[0].evaluations["quality"]
    assert ev.status == "eval-error" and "outside 0..1" in (ev.error or "")


def test_429_with_retry_after_is_retried_then_succeeds(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(error(429, retry_after=0.001), answer(0.5))
    ev = _run(1).items[0].evaluations["quality"]
    assert (ev.status, ev.score) == ("ok", 0.5) and llm.count("chat") == 2


def test_500s_are_retried_then_succeed(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(error(500, retry_after=0), error(503, retry_after=0), answer(0.6))
    ev = _run(1).items[0].evaluations["quality"]
    assert (ev.status, ev.score) == ("ok", 0.6)
    assert llm.count("chat") == 3


def test_persistent_500_gives_up_after_max_retries(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(*[error(500, retry_after=0)] * 10)
    ev = _run(1).items[0].evaluations["quality"]
    assert ev.status == "eval-error" and "HTTP 500" in (ev.error or "") and "gave up after 4" in (ev.error or "")
    assert llm.count("chat") == 4  # max_retries = 3 in the test config


def test_retry_after_beyond_the_time_budget_gives_up_at_once(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(error(429, retry_after=60))
    ev = _run(1).items[0].evaluations["quality"]
    assert ev.status == "eval-error" and "HTTP 429" in (ev.error or "")
    assert llm.count("chat") == 1


def test_auth_error_is_not_retried_and_never_shows_the_key(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(error(401))
    ev = _run(1).items[0].evaluations["quality"]
    assert ev.status == "eval-error" and "OPENAI_API_KEY" in (ev.error or "")
    assert TEST_KEY not in (ev.error or "")
    assert llm.count("chat") == 1


def test_slow_answer_past_the_timeout_is_an_eval_error(judged_project: Path, llm: FakeLLM) -> None:
    write_judge_config(judged_project, llm, extra="")
    (judged_project / "cobalt.toml").write_text(
        (judged_project / "cobalt.toml").read_text().replace("timeout = 5", "timeout = 0.3")
        .replace("max_retries = 3", "max_retries = 1"))
    llm.script(answer(0.5, delay=2), answer(0.5, delay=2))
    ev = _run(1).items[0].evaluations["quality"]
    assert ev.status == "eval-error" and "Timeout" in (ev.error or "")
    assert llm.count("chat") == 2


@pytest.mark.parametrize(("provider", "path"), [("openai", "/v1/chat/completions"), ("anthropic", "/v1/messages")])
def test_connection_refused_is_an_eval_error_naming_the_cause_and_url(
        project: Path, monkeypatch: pytest.MonkeyPatch, provider: str, path: str) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    (project / "cobalt.toml").write_text(
        f'[judge]\nprovider = "{provider}"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        "max_retries = 1\nretry_max_seconds = 5\n")
    error_text = _run(1).items[0].evaluations["quality"].error or ""
    # the SDKs call this "Request timed out." (openai) or "Connection error." (anthropic)
    assert f"connection refused at http://127.0.0.1:{port}{path} (ConnectionRefusedError:" in error_text
    assert "gave up after 2 attempts" in error_text
    assert TEST_KEY not in error_text


def test_missing_key_fails_before_any_agent_call(project: Path) -> None:
    calls: list[int] = []
    exp = experiment("needs-key", _items(2), lambda ctx: calls.append(1),
                     evaluators=[Evaluator(name="q", prompt="{{output}}")])
    with pytest.raises(MissingApiKeyError, match="OPENAI_API_KEY is not set"):
        exp.run(config=load_config())
    assert calls == []


def test_anthropic_key_named_for_anthropic_judges(project: Path) -> None:
    exp = experiment("needs-key", _items(1), lambda ctx: "x",
                     evaluators=[Evaluator(name="q", prompt="{{output}}", provider="anthropic")])
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        exp.run(config=load_config())


def test_local_base_url_without_key_sends_a_placeholder(project: Path, llm: FakeLLM) -> None:
    write_judge_config(project, llm)
    report = _run(1)
    assert report.items[0].evaluations["quality"].score == 0.8
    assert llm.requests[0]["headers"]["authorization"].startswith("Bearer cobalt-local")


def test_template_variable_missing_from_an_item_fails_before_any_agent_call(judged_project: Path) -> None:
    calls: list[int] = []
    exp = experiment("bad-template", Dataset([{"input": "a", "context": "c"}, {"input": "b"}]),
                     lambda ctx: calls.append(1), evaluators=[Evaluator(name="q", prompt="{{context}} {{output}}")])
    with pytest.raises(TemplateError, match=r"\{\{context\}\}.*item 1"):
        exp.run(config=load_config())
    assert calls == []


def test_openrouter_uses_its_key_and_model_names(project: Path, llm: FakeLLM, monkeypatch) -> None:
    (project / "cobalt.toml").write_text(
        f'[judge]\nprovider = "openrouter"\nmodel = "openai/gpt-4o-mini"\nbase_url = "{llm.openai_url}"\n')
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    report = _run(1)
    assert llm.requests[0]["headers"]["authorization"] == "Bearer sk-or-test"
    assert llm.requests[0]["body"]["model"] == "openai/gpt-4o-mini"
    assert report.items[0].evaluations["quality"].cost_usd == pytest.approx((20 * 0.15 + 10 * 0.6) / 1e6)


def test_unknown_model_cost_is_unknown_until_config_prices_it(judged_project: Path, llm: FakeLLM) -> None:
    ev = Evaluator(name="quality", prompt="{{output}}", model="my-private-model")
    report = _run(2, evaluator=ev)
    assert report.items[0].evaluations["quality"].cost_usd is None
    assert report.summary.judge_cost is None and report.summary.estimated_cost is None
    write_judge_config(judged_project, llm, extra='[prices."my-private-model"]\ninput = 1.0\noutput = 2.0\n')
    with (judged_project / "cobalt.toml").open("a") as fh:
        fh.write("[cache]\nenabled = false\n")
    report = _run(2, evaluator=ev)
    assert report.summary.judge_cost == pytest.approx(2 * (20 * 1.0 + 10 * 2.0) / 1e6)


def test_agent_cost_and_judge_cost_are_reported_apart(judged_project: Path) -> None:
    exp = experiment("costed", _items(2), lambda ctx: {"output": "x", "metadata": {"cost_usd": 0.01, "tokens": 7}},
                     evaluators=[Evaluator(name="q", prompt="{{output}}")])
    s = exp.run(config=load_config()).summary
    assert s.agent_cost == pytest.approx(0.02) and s.agent_tokens == 14
    assert s.judge_cost == pytest.approx(2 * (20 * 0.15 + 10 * 0.6) / 1e6)
    assert s.estimated_cost == pytest.approx(s.agent_cost + s.judge_cost)


def test_judge_concurrency_is_a_true_bound(judged_project: Path, llm: FakeLLM) -> None:
    llm.latency = 0.05
    report = _run(12, concurrency=8, judge_concurrency=3)
    assert report.summary.scores["quality"].count == 12
    assert llm.max_inflight == 3


def test_similarity_scores_with_embeddings(judged_project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cobalt_lib.llm._judge.EMBED_BATCH_WINDOW", 0.3)  # the two items in one batch, even under load
    data = Dataset([{"input": "q", "expected_output": "The capital of France is Paris."},
                    {"input": "q", "expected_output": "Bananas are yellow fruit."}])
    exp = experiment("sim", data, lambda ctx: "The capital of France is Paris",
                     evaluators=[Evaluator(name="semantic", type="similarity", threshold=0.9)])
    report = exp.run(config=load_config())
    close, far = (i.evaluations["semantic"] for i in report.items)
    assert close.score == 1.0 and close.raw_score is not None and close.raw_score >= 0.9
    assert far.score is not None and far.score < 0.6
    assert llm.count("embeddings") == 1  # both items in one batched request


def test_fenced_json_with_prose_from_the_server_is_scored(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(text('Here is my verdict:\n```json\n{"score": 0.75, "reason": "mostly right"}\n```\nThanks!'))
    ev = _run(1).items[0].evaluations["quality"]
    assert (ev.status, ev.score, ev.reason, ev.judge_calls) == ("ok", 0.75, "mostly right", 1)


def test_unparseable_retry_after_falls_back_to_backoff(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(error(429, headers={"retry-after": "soon"}), answer(0.6))
    report = _run(2, concurrency=1)
    assert [i.evaluations["quality"].score for i in report.items] == [0.6, 0.8]
    assert report.status == "completed" and llm.count("chat") == 3


def test_retry_budget_bounds_the_calls_too(project: Path, llm: FakeLLM) -> None:
    (project / "cobalt.toml").write_text(
        f'[judge]\nbase_url = "{llm.openai_url}"\ntimeout = 30\nmax_retries = 5\nretry_max_seconds = 0.5\n')
    llm.script(Reply(text='{"score": 1}', delay=5))
    ev = _run(1).items[0].evaluations["quality"]
    assert ev.status == "eval-error" and "retry budget of 500ms" in (ev.error or "")


def test_reasoning_models_get_max_completion_tokens_and_no_temperature(judged_project: Path, llm: FakeLLM) -> None:
    _run(1, evaluator=Evaluator(name="quality", prompt="{{output}}", model="o4-mini"))
    body = llm.requests[0]["body"]
    assert body["max_completion_tokens"] >= 4096
    assert "max_tokens" not in body and "temperature" not in body
    _run(1, evaluator=Evaluator(name="quality", prompt="{{output}}", model="gpt-4o-mini"))
    assert llm.requests[1]["body"]["max_tokens"] == 512


def test_failed_embeddings_are_eval_errors_and_the_run_goes_on(judged_project: Path, llm: FakeLLM) -> None:
    llm.embeddings_reply = error(400)
    exp = experiment("sim-down", _items(3), lambda ctx: "x",
                     evaluators=[Evaluator(name="semantic", type="similarity"),
                                 Evaluator(name="exact", type="exact-match")])
    report = exp.run(config=load_config())
    assert report.status == "completed"
    assert [i.evaluations["semantic"].status for i in report.items] == ["eval-error"] * 3
    assert "HTTP 400" in (report.items[0].evaluations["semantic"].error or "")
    assert report.summary.scores["exact"].count == 3


def test_a_server_answering_html_is_an_eval_error_naming_the_url(judged_project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(status=200, body="<html>proxy login</html>"))
    report = _run(2, concurrency=1)
    ev = report.items[0].evaluations["quality"]
    assert ev.status == "eval-error" and "not a JSON object" in (ev.error or "") and llm.openai_url in (ev.error or "")
    assert report.items[1].evaluations["quality"].score == 0.8


def test_each_provider_gets_its_own_default_model(judged_project: Path, llm: FakeLLM) -> None:
    (judged_project / "cobalt.toml").write_text(f'[judge]\nbase_url = "{llm.openai_url}"\n')  # no model
    anthropic_ev = Evaluator(name="claude", prompt="{{output}}", provider="anthropic", base_url=llm.anthropic_url)
    exp = experiment("defaults", _items(1), lambda ctx: "x",
                     evaluators=[Evaluator(name="gpt", prompt="{{output}}"), anthropic_ev])
    report = exp.run(config=load_config())
    models = {r["kind"]: r["body"]["model"] for r in llm.requests}
    assert models == {"chat": "gpt-4o-mini", "messages": "claude-haiku-4-5"}
    assert report.items[0].evaluations["claude"].judge_model == "anthropic/claude-haiku-4-5"
    assert report.items[0].evaluations["claude"].cost_usd == pytest.approx((20 * 1.0 + 10 * 5.0) / 1e6)


@pytest.mark.slow
def test_the_judge_client_is_imported_before_the_first_agent_call(judged_project: Path, llm: FakeLLM) -> None:
    import subprocess
    import sys

    script = judged_project / "probe.py"
    script.write_text(
        "import sys\nfrom cobalt_lib import Dataset, Evaluator, experiment, load_config\n"
        "seen = []\n"
        "def agent(ctx):\n    seen.append(('aiohttp' in sys.modules, 'openai' in sys.modules))\n    return 'x'\n"
        "experiment('probe', Dataset([{'input': 1}]), agent,"
        " evaluators=[Evaluator(name='q', prompt='{{output}}')]).run(config=load_config())\n"
        "print(seen)\n")
    result = subprocess.run([sys.executable, str(script)], cwd=judged_project, capture_output=True, text=True,
                            timeout=60)
    # aiohttp not lazily inside the loop mid-run; the judge speaks HTTP itself, so no SDK import (0.6 s)
    assert result.stdout.strip() == "[(True, False)]", result.stderr


def test_a_server_echoing_the_api_key_does_not_get_it_stored(judged_project: Path, llm: FakeLLM) -> None:
    echo = f"I received: Authorization: Bearer {TEST_KEY}"
    llm.script(text(echo), text(echo))
    first = _run(1).items[0].evaluations["quality"]
    assert first.status == "eval-error"
    assert first.raw_response == RETRY_SEPARATOR.join(["I received: Authorization: Bearer ***"] * 2)
    llm.script(text(f'{{"score": 0.5, "reason": "your key {TEST_KEY} works"}}'))
    second = _run(1).items[0].evaluations["quality"]
    assert second.score == 0.5 and second.reason == "your key *** works"
    llm.script(Reply(body=f"<html>proxy saw key {TEST_KEY}</html>"))
    third = _run(1, evaluator=Evaluator(name="quality", prompt="Again: {{input}}")).items[0].evaluations["quality"]
    assert third.status == "eval-error" and "proxy saw key ***" in (third.error or "")
    output = judged_project / ".cobalt"
    stored = [p.read_bytes() for p in output.rglob("*") if p.is_file()]  # results, cache, the DuckDB file
    assert len(stored) >= 5 and not [b for b in stored if TEST_KEY.encode() in b]
