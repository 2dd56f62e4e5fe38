"""Batch judging (`[judge] batch`) against the loopback server's batch endpoints: OpenAI Batch and
Anthropic Message Batches, answered as the online endpoints answer the same requests."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from conftest import TEST_KEY, write_judge_config
from fakellm import FakeLLM, answer, error, score_from_prompt
from stores import project_store

from cobalt_lib import BatchPending, Dataset, Evaluator, experiment, load_config
from cobalt_lib.llm._batch import BATCH_PRICE_FACTOR, BatchJudging, PollTiming, StoredBatch
from cobalt_lib.llm._providers import Endpoint
from cobalt_lib.llm._wire import Clients
from cobalt_lib.ops import resume_run
from cobalt_lib.store import load_report

#: Every test on both backends: the project's DuckDB file, and a team store (COBALT_STORE_URL).
pytestmark = pytest.mark.usefixtures("store_url")

BATCH = 'batch = true\nbatch_window = "0.01s"\n'
ONLINE_COST = (20 * 0.15 + 10 * 0.60) / 1e6  # gpt-4o-mini, the server's 20 + 10 tokens


def _experiment(n: int = 4, name: str = "judged"):
    items = Dataset([{"input": f"question {i} SCORE=0.{i + 1}", "expected_output": f"answer {i}"} for i in range(n)])
    return experiment(name, items, lambda ctx: f"reply to {ctx.item['input']}",
                      evaluators=[Evaluator(name="quality", prompt="Q: {{input}}\nA: {{output}}")])


def _scores(report) -> list[float | None]:
    return [item.evaluations["quality"].score for item in report.items]


@pytest.fixture
def batch_project(judged_project: Path, llm: FakeLLM) -> Path:
    write_judge_config(judged_project, llm, extra=BATCH)
    llm.respond = score_from_prompt
    return judged_project


def test_an_openai_batch_judges_every_item_at_half_price(batch_project: Path, llm: FakeLLM) -> None:
    report = _experiment(4).run(config=load_config())
    assert _scores(report) == [0.1, 0.2, 0.3, 0.4]
    assert llm.count("chat") == 0 and llm.count("batch-chat") == 4  # no online call: all through the batch
    posts = [path for method, path in llm.batches.calls if method == "POST"]
    assert posts == ["/v1/files", "/v1/batches"]
    batch = next(iter(llm.batches.batches.values()))
    assert {line["body"]["model"] for line in batch.requests} == {"gpt-4o-mini"}
    first = report.items[0].evaluations["quality"]
    assert first.cost_usd == pytest.approx(ONLINE_COST * BATCH_PRICE_FACTOR)
    assert report.summary.judge_cost == pytest.approx(4 * ONLINE_COST * BATCH_PRICE_FACTOR)
    assert report.config["judge_batch"] is True
    stored = project_store(batch_project).judge_batches(report.id)
    assert [(r["batch_id"], r["status"], len(r["requests"])) for r in stored] == [(batch.batch_id, "completed", 4)]
    assert stored[0]["counts"] == {"total": 4, "completed": 4, "failed": 0}


def test_answers_from_a_batch_are_the_cache_a_later_online_run_reuses(batch_project: Path, llm: FakeLLM) -> None:
    first = _experiment(3).run(config=load_config())
    write_judge_config(batch_project, llm)  # online now
    again = _experiment(3).run(config=load_config())
    assert _scores(again) == _scores(first)
    assert llm.count("chat") == 0
    assert all(item.evaluations["quality"].cached for item in again.items)


def test_anthropic_message_batches(batch_project: Path, llm: FakeLLM) -> None:
    write_judge_config(batch_project, llm, provider="anthropic", extra=BATCH)
    exp = experiment("judged", Dataset([{"input": "SCORE=0.7"}, {"input": "SCORE=0.2"}]), lambda ctx: "x",
                     evaluators=[Evaluator(name="quality", prompt="{{input}} {{output}}", model="claude-haiku-4-5")])
    report = exp.run(config=load_config())
    assert _scores(report) == [0.7, 0.2]
    assert llm.count("messages") == 0 and llm.count("batch-messages") == 2
    batch = next(iter(llm.batches.batches.values()))
    assert batch.provider == "anthropic" and batch.requests[0]["params"]["model"] == "claude-haiku-4-5"
    assert len(batch.requests[0]["custom_id"]) == 64
    assert report.items[0].evaluations["quality"].cost_usd == pytest.approx((20 * 1.0 + 10 * 5.0) / 1e6 / 2)


def test_failed_requests_of_a_batch_are_eval_errors_and_the_rest_is_scored(batch_project: Path, llm: FakeLLM) -> None:
    llm.script(answer(0.9), error(400))  # the batch answers its requests in order: the second one fails
    report = _experiment(3).run(config=load_config())
    statuses = [item.evaluations["quality"].status for item in report.items]
    assert statuses == ["ok", "eval-error", "ok"]
    failed = report.items[1].evaluations["quality"]
    assert "the request failed with HTTP 400: scripted 400" in (failed.error or "")
    assert report.items[0].evaluations["quality"].score == 0.9


def test_one_damaged_line_of_the_results_loses_that_answer_alone(batch_project: Path, llm: FakeLLM) -> None:
    llm.batches.damaged = {2}
    report = _experiment(4).run(config=load_config())
    statuses = [item.evaluations["quality"].status for item in report.items]
    # The items are judged concurrently, so which item's request is line 2 is the scheduler's choice (under
    # load, not always item 1): the one answer lost is that line's, and every other is scored.
    assert sorted(statuses) == ["eval-error", "ok", "ok", "ok"]
    [lost] = [item for item in report.items if item.evaluations["quality"].status == "eval-error"]
    assert "line 2 of its results, this request's answer, is not valid JSON" in (
        lost.evaluations["quality"].error or "")


def test_a_results_body_larger_than_its_requests_need_is_refused_in_one_sentence(batch_project: Path,
                                                                                 llm: FakeLLM) -> None:
    llm.batches.padding = 25 * 2**20  # 2 requests: 20 MB is the most cobalt reads, as 10 MB per online answer
    report = _experiment(2).run(config=load_config())
    errors = [item.evaluations["quality"].error or "" for item in report.items]
    assert all("is larger than 20 MB" in e and "check base_url" in e for e in errors), errors


def test_an_expired_batch_scores_what_it_answered_and_says_the_rest_expired(batch_project: Path,
                                                                           llm: FakeLLM) -> None:
    llm.batches.expire_after = 2
    report = _experiment(4).run(config=load_config())
    statuses = [item.evaluations["quality"].status for item in report.items]
    assert statuses == ["ok", "ok", "eval-error", "eval-error"]
    assert "expired before this request was judged" in (report.items[3].evaluations["quality"].error or "")
    stored = project_store(batch_project).judge_batches(report.id)
    assert stored[0]["status"] == "expired"


def test_a_run_stopped_waiting_resumes_on_the_same_batch(batch_project: Path, llm: FakeLLM) -> None:
    write_judge_config(batch_project, llm, extra=BATCH + 'batch_deadline = "0s"\n')
    llm.batches.polls_to_end = 2  # the first look finds it in progress; the deadline has passed
    exp = _experiment(3)
    with pytest.raises(BatchPending, match=r"had not ended .* `cobalt run --resume \S+` waits on the same batch"):
        exp.run(config=load_config())
    store = project_store(batch_project)
    run = store.runs("judged")[0]
    assert load_report(store, run["run_id"]).status == "incomplete"
    assert run["status"] == "incomplete"
    assert len(store.rows("outputs", run["run_id"])) == 3  # the agent's answers are kept
    [open_batch] = store.judge_batches(run["run_id"], open_only=True)
    write_judge_config(batch_project, llm, extra=BATCH)
    (batch_project / "experiments").mkdir()
    (batch_project / "experiments" / "judged.cobalt.py").write_text(EXPERIMENT_FILE)
    outcome = resume_run(load_config(), run["run_id"])
    [report] = outcome.reports
    assert report.status == "completed" and _scores(report) == [0.1, 0.2, 0.3]
    assert [p for m, p in llm.batches.calls if m == "POST" and p == "/v1/batches"] == ["/v1/batches"]  # no new batch
    assert store.judge_batches(run["run_id"])[0]["batch_id"] == open_batch["batch_id"]
    assert store.judge_batches(run["run_id"], open_only=True) == []


EXPERIMENT_FILE = '''
from cobalt_lib import Dataset, Evaluator, experiment
items = Dataset([{"input": f"question {i} SCORE=0.{i + 1}", "expected_output": f"answer {i}"} for i in range(3)])
experiment("judged", items, lambda ctx: f"reply to {ctx.item['input']}",
           evaluators=[Evaluator(name="quality", prompt="Q: {{input}}\\nA: {{output}}")])
'''


def test_a_provider_without_a_batch_api_is_refused_before_any_call(batch_project: Path, llm: FakeLLM,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write_judge_config(batch_project, llm, provider="openrouter", extra=BATCH)
    monkeypatch.setenv("OPENROUTER_API_KEY", TEST_KEY)
    from cobalt_lib import ConfigError

    with pytest.raises(ConfigError, match="openrouter has no batch API"):
        _experiment(1).run(config=load_config())
    assert llm.count() == 0


def test_the_environment_turns_batch_judging_on_and_off(batch_project: Path, llm: FakeLLM,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COBALT_JUDGE_BATCH", "0")
    _experiment(2).run(config=load_config())
    assert (llm.count("chat"), llm.count("batch-chat")) == (2, 0)
    monkeypatch.setenv("COBALT_JUDGE_BATCH", "maybe")
    from cobalt_lib import ConfigError

    with pytest.raises(ConfigError, match="COBALT_JUDGE_BATCH='maybe' is not a yes or no"):
        _experiment(2, name="other").run(config=load_config())


# -- the batch's life, with an injected clock: polls back off, the deadline holds -------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


class _Ledger:
    def __init__(self, open_batches: list[StoredBatch] | None = None) -> None:
        self.notes: list[tuple[str, str]] = []
        self._open = open_batches or []

    def opened(self, batch: StoredBatch) -> None:
        self.notes.append(("opened", batch.batch_id))

    def ended(self, batch_id: str, status: str, counts: dict[str, int]) -> None:
        self.notes.append((status, batch_id))

    def open_batches(self) -> list[StoredBatch]:
        return self._open


def _endpoint(llm: FakeLLM) -> Endpoint:
    return Endpoint(provider="openai", model="gpt-4o-mini", base_url=llm.openai_url, api_key=TEST_KEY)


async def _ask(batching: BatchJudging, endpoint: Endpoint, prompts: list[str]) -> list[str]:
    try:
        answers = await asyncio.gather(*(batching.complete(endpoint, "system", [{"role": "user", "content": p}])
                                         for p in prompts))
        return [a.text for a in answers]
    finally:
        await batching.aclose()
        await batching.clients.aclose()


def test_polls_back_off_until_the_batch_ends(llm: FakeLLM) -> None:
    llm.respond = score_from_prompt
    llm.batches.polls_to_end = 5
    clock = _Clock()
    ledger = _Ledger()
    timing = PollTiming(first=10, factor=2, most=30, monotonic=clock.monotonic, sleep=clock.sleep)
    batching = BatchJudging(Clients(), deadline=3600, window=0.01, ledger=ledger, timing=timing)
    texts = asyncio.run(_ask(batching, _endpoint(llm), ["SCORE=0.5", "SCORE=0.25", "SCORE=0.5"]))
    assert [t.split(",")[0] for t in texts] == ['{"score": 0.5', '{"score": 0.25', '{"score": 0.5']
    assert clock.slept == [10, 20, 30, 30]  # four waits between five looks, growing, capped
    batch = next(iter(llm.batches.batches.values()))
    assert len(batch.requests) == 2  # the two equal requests went once
    assert ledger.notes == [("opened", batch.batch_id), ("completed", batch.batch_id)]


def test_past_the_deadline_every_waiting_call_stops_the_run(llm: FakeLLM) -> None:
    llm.batches.polls_to_end = 100
    clock = _Clock()
    timing = PollTiming(first=25, factor=1, most=25, monotonic=clock.monotonic, sleep=clock.sleep)
    batching = BatchJudging(Clients(), deadline=60, window=0.01, timing=timing)
    with pytest.raises(BatchPending, match=r"had not ended after 1m 00s \(\[judge\] batch_deadline\)"):
        asyncio.run(_ask(batching, _endpoint(llm), ["a", "b"]))
    assert clock.slept == [25, 25, 10]  # the last wait ends at the deadline, not past it


def test_a_batch_of_an_earlier_attempt_is_waited_on_not_sent_again(llm: FakeLLM) -> None:
    llm.respond = score_from_prompt
    llm.batches.polls_to_end = 3
    first = BatchJudging(Clients(), deadline=0, window=0.01)
    with pytest.raises(BatchPending):
        asyncio.run(_ask(first, _endpoint(llm), ["SCORE=0.3"]))
    [batch_id] = first.stats.created
    custom_id = llm.batches.batches[batch_id].requests[0]["custom_id"]
    stored = StoredBatch(batch_id, "openai/gpt-4o-mini @ " + llm.openai_url, (custom_id,))
    clock = _Clock()
    second = BatchJudging(Clients(), deadline=3600, window=0.01, ledger=_Ledger([stored]),
                          timing=PollTiming(monotonic=clock.monotonic, sleep=clock.sleep))
    assert asyncio.run(_ask(second, _endpoint(llm), ["SCORE=0.3"]))[0].startswith('{"score": 0.3')
    assert second.stats.adopted == [batch_id] and second.stats.created == []
    assert len(llm.batches.batches) == 1


def test_a_results_url_on_another_origin_gets_no_key(llm: FakeLLM) -> None:
    from cobalt_lib.llm import _batch_wire as wire

    endpoint = Endpoint(provider="anthropic", model="claude-haiku-4-5", base_url=llm.anthropic_url, api_key=TEST_KEY)
    state = wire.BatchState("msgbatch_x", "ended", True, {}, ["http://elsewhere.example:9/results"])

    async def read() -> None:
        clients = Clients()
        try:
            await wire.results(clients, endpoint, state)
        finally:
            await clients.aclose()

    with pytest.raises(wire.ProviderError, match="another origin") as caught:
        asyncio.run(read())
    assert TEST_KEY not in str(caught.value)
