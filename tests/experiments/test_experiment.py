"""Declaring and running experiments: agents, evaluators, failures, limits, repetitions."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from cobalt_lib import (
    REGISTRY,
    ConfigError,
    Dataset,
    EvalResult,
    Evaluator,
    EvaluatorError,
    Experiment,
    define_config,
    experiment,
    load_config,
    threshold,
)

DATA = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(6)])


def _echo_expected(ctx):
    return ctx.item["expected_output"]


def test_decorator_and_call_forms_declare_without_running(project: Path) -> None:
    calls: list[int] = []

    @experiment("decorated", DATA, evaluators=[Evaluator(name="exact", type="exact-match")])
    def agent(ctx):
        calls.append(ctx.index)
        return _echo_expected(ctx)

    plain = experiment("plain", DATA, _echo_expected)
    assert isinstance(agent, Experiment) and isinstance(plain, Experiment)
    assert calls == [] and set(REGISTRY) == {"decorated", "plain"}
    report = agent.run()
    assert sorted(calls) == list(range(6))
    assert report.summary.scores["exact"].avg == 1.0
    assert agent(type("Ctx", (), {"item": {"expected_output": "z"}, "index": 0})()) == "z"


def test_redeclaring_a_name_replaces_it(project: Path) -> None:
    experiment("same", DATA, _echo_expected)
    second = experiment("same", DATA.slice(0, 2), _echo_expected)
    assert REGISTRY["same"] is second


@pytest.mark.anyio
async def test_arun_inside_an_event_loop(project: Path) -> None:
    exp = experiment("async", DATA, _echo_expected, evaluators=[Evaluator(name="exact", type="exact-match")])
    report = await exp.arun()
    assert report.summary.total_runs == 6 and report.status == "completed"


def test_sync_runner_runs_in_a_worker_thread(project: Path) -> None:
    threads: set[str] = set()

    def agent(ctx):
        threads.add(threading.current_thread().name)
        return "x"

    experiment("threads", DATA, agent).run()
    assert threads and threading.main_thread().name not in threads


def test_agent_errors_and_timeouts_leave_the_rest_scored(project: Path) -> None:
    async def agent(ctx):
        if ctx.index == 1:
            raise ValueError("boom on one")
        if ctx.index == 3:
            await asyncio.sleep(30)
        return ctx.item["expected_output"]

    exp = experiment("flaky", DATA, agent, evaluators=[Evaluator(name="exact", type="exact-match")], timeout=0.3)
    report = exp.run()
    by_index = {i.index: i for i in report.items}
    assert by_index[1].status == "error" and by_index[1].error == "ValueError: boom on one"
    assert "boom on one" in (by_index[1].traceback or "") and "in agent" in (by_index[1].traceback or "")
    assert by_index[3].status == "timeout" and "300ms" in (by_index[3].error or "")
    assert by_index[1].evaluations == {} and by_index[3].evaluations == {}
    assert [i.index for i in report.items if i.status == "ok"] == [0, 2, 4, 5]
    s = report.summary
    assert (s.ok, s.errors, s.timeouts, s.scores["exact"].count, s.scores["exact"].avg) == (4, 1, 1, 4, 1.0)


def test_a_hung_sync_agent_times_out_and_the_run_finishes(project: Path) -> None:
    release = threading.Event()

    def agent(ctx):
        if ctx.index == 0:
            release.wait(60)
        return "x"

    try:
        report = experiment("hung", DATA, agent, timeout=0.3, concurrency=2).run()
    finally:
        release.set()
    assert report.items[0].status == "timeout"
    assert [i.status for i in report.items[1:]] == ["ok"] * 5


def test_a_sync_agent_stuck_forever_does_not_stall_the_run_at_concurrency_one(project: Path) -> None:
    release, returned = threading.Event(), threading.Event()

    def agent(ctx):
        if ctx.index == 0:
            release.wait(60)
            returned.set()
        return ctx.item["expected_output"]

    try:
        report = experiment("stuck", DATA, agent, timeout=0.2, concurrency=1,
                            evaluators=[Evaluator(name="exact", type="exact-match")]).run()
        # the run ended while the stuck call was still inside the agent: its slot was given up
        assert not returned.is_set()
    finally:
        release.set()
    assert report.items[0].status == "timeout"
    assert [i.evaluations["exact"].score for i in report.items[1:]] == [1.0] * 5


def test_outputs_json_cannot_hold_are_stored_as_text_everywhere(project: Path) -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque-object"

    outputs = {0: Opaque(), 1: b"caf\xc3\xa9 \xff", 2: {"nested": (1, float("nan"))}}
    exp = experiment("odd-outputs", DATA.slice(0, 3), lambda ctx: {"output": outputs[ctx.index],
                                                                   "metadata": {"obj": Opaque()}})
    report = exp.run()
    assert report.status == "completed" and report.results_path
    assert [i.output for i in report.items] == ["opaque-object", "café \ufffd", {"nested": [1, None]}]
    assert report.items[0].metadata == {"obj": "opaque-object"}
    import json

    from cobalt_lib.store._store import Store

    saved = json.loads(Path(report.results_path).read_text())
    assert [i["output"] for i in saved["items"]] == [i.output for i in report.items]
    rows = Store(project / ".cobalt" / "cobalt.duckdb").rows("outputs", report.id)
    assert [r["output"] for r in rows] == [i.output for i in report.items]


NO_OUTPUT = ('the agent returned None; return the output (a string or any JSON value) or '
             '{"output": ..., "metadata": {...}}')


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_agent_must_return_an_output(project: Path, kind: str) -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    returns = [None, {"answer": "a1", "tokens": 3}, {}, "a3", 4, ["a5"], Answer(text="a6"),
               {"output": {"answer": "a7"}, "metadata": {"tokens": 2}}, {"output": None}]
    data = Dataset([{"input": f"q{i}"} for i in range(len(returns))])

    def sync_agent(ctx):
        return returns[ctx.index]

    async def async_agent(ctx):
        return returns[ctx.index]

    exp = experiment(f"returns-{kind}", data, sync_agent if kind == "sync" else async_agent,
                     evaluators=[Evaluator(name="any", type="function", fn=lambda ctx: 1.0)])
    report = exp.run(config=define_config(ci={"fail_on_error": True}))
    assert [i.status for i in report.items] == ["error"] * 3 + ["ok"] * 6
    assert [i.error for i in report.items[:3]] == [
        NO_OUTPUT,
        'the agent returned a dict without "output" (keys: answer, tokens); return '
        '{"output": ..., "metadata": {...}}, or wrap the dict: {"output": {...}}',
        'the agent returned a dict without "output" (keys: none); return '
        '{"output": ..., "metadata": {...}}, or wrap the dict: {"output": {...}}']
    assert [i.output for i in report.items] == [None, None, None, "a3", 4, ["a5"], {"text": "a6"},
                                                 {"answer": "a7"}, None]
    assert report.items[7].tokens == 2 and not report.items[1].evaluations
    assert report.passed is False
    assert [a.name for a in report.assertions if not a.passed] == ["error rate <= 0%"]


def test_threshold_zero_is_kept_as_the_pass_mark(project: Path) -> None:
    ev = Evaluator(name="any", type="function", fn=lambda ctx: 0.3, threshold=0.0)
    assert ev.threshold == 0.0
    report = experiment("zero", DATA.slice(0, 2), _echo_expected, evaluators=[ev]).run()
    assert report.summary.scores["any"].pass_rate == 1.0


def test_spread_counts_failed_runs_as_unscored_and_not_passed(project: Path) -> None:
    def agent(ctx):
        if ctx.index == 0 and ctx.run_index > 0:
            raise RuntimeError("flaky")
        return ctx.item["expected_output"]

    exp = experiment("flaky", DATA.slice(0, 2), agent, runs=3, evaluators=[Evaluator(name="exact", type="exact-match")])
    spread = {s.index: s.evaluators["exact"] for s in exp.run().summary.per_item}
    assert (spread[0].count, spread[0].errors) == (1, 0)  # errors are eval-errors; agent failures lower coverage
    assert spread[0].pass_rate == pytest.approx(1 / 3) and spread[0].coverage == pytest.approx(1 / 3)
    assert (spread[1].pass_rate, spread[1].coverage) == (1.0, 1.0)


@pytest.mark.parametrize("limit", [1, 3])
def test_concurrency_is_a_true_bound_on_agent_calls(project: Path, limit: int) -> None:
    state = {"now": 0, "max": 0}

    async def agent(ctx):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.02)
        state["now"] -= 1
        return "x"

    experiment("bounded", Dataset([{"i": i} for i in range(12)]), agent, concurrency=limit).run()
    assert state["max"] == limit


def test_sync_agents_are_bounded_too(project: Path) -> None:
    lock = threading.Lock()
    state = {"now": 0, "max": 0}
    gate = threading.Barrier(2, timeout=5)

    def agent(ctx):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        gate.wait()  # two calls must be in flight together for any to finish
        with lock:
            state["now"] -= 1
        return "x"

    report = experiment("sync-bounded", Dataset([{"i": i} for i in range(8)]), agent, concurrency=2).run()
    assert state["max"] == 2 and report.summary.ok == 8


def test_runs_repeat_items_and_report_spread(project: Path) -> None:
    def agent(ctx):
        return ctx.item["expected_output"] if ctx.run_index != 1 or ctx.index != 0 else "wrong"

    exp = experiment("repeat", DATA.slice(0, 2), agent, runs=3,
                     evaluators=[Evaluator(name="exact", type="exact-match")])
    report = exp.run()
    assert [(i.index, i.run_index) for i in report.items] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    spread = {s.index: s.evaluators["exact"] for s in report.summary.per_item}
    assert spread[0].avg == pytest.approx(2 / 3) and spread[0].pass_rate == pytest.approx(2 / 3)
    assert spread[0].stddev == pytest.approx(0.4714, abs=1e-4) and spread[1].pass_rate == 1.0
    assert report.summary.total_runs == 6 and report.summary.total_items == 2


@pytest.mark.parametrize(
    ("returned", "score", "reason"),
    [({"score": 0.4, "reason": "dict"}, 0.4, "dict"), (0.7, 0.7, None), (True, 1.0, None), (False, 0.0, None),
     (EvalResult(score=0.2, reason="model"), 0.2, "model"), (1, 1.0, None)],
)
def test_function_evaluator_return_types(project: Path, returned, score: float, reason: str | None) -> None:
    exp = experiment("fn", DATA.slice(0, 1), _echo_expected,
                     evaluators=[Evaluator(name="f", type="function", fn=lambda ctx: returned)])
    ev = exp.run().items[0].evaluations["f"]
    assert (ev.status, ev.score, ev.reason) == ("ok", score, reason)


def test_async_function_evaluator_sees_the_context(project: Path) -> None:
    async def judge(ctx):
        await asyncio.sleep(0)
        return 1.0 if (ctx.output, ctx.index, ctx.input) == (ctx.expected_output, ctx.index, f"q{ctx.index}") else 0.0

    report = experiment("afn", DATA, _echo_expected, evaluators=[Evaluator(name="f", type="function", fn=judge)]).run()
    assert report.summary.scores["f"].avg == 1.0


@pytest.mark.parametrize(
    ("fn", "message"),
    [(lambda ctx: 1 / 0, "ZeroDivisionError"), (lambda ctx: "high", "returned str"),
     (lambda ctx: 1.5, "outside 0..1"), (lambda ctx: {"reason": "no score"}, "without 'score'"),
     (lambda ctx: float("nan"), "returned NaN")],
)
def test_function_evaluator_failures_are_eval_errors(project: Path, fn, message: str) -> None:
    exp = experiment("bad-fn", DATA.slice(0, 2), _echo_expected,
                     evaluators=[Evaluator(name="f", type="function", fn=fn),
                                 Evaluator(name="exact", type="exact-match")])
    report = exp.run()
    ev = report.items[0].evaluations["f"]
    assert ev.status == "eval-error" and message in (ev.error or "")
    assert report.items[0].evaluations["exact"].score == 1.0
    assert report.summary.scores["f"].count == 0 and report.summary.scores["f"].avg is None


def test_exact_match_normalisation(project: Path) -> None:
    data = Dataset([{"expected_output": "New  York"}])
    exp = experiment("norm", data, lambda ctx: " new york\n", evaluators=[
        Evaluator(name="strict", type="exact-match"),
        Evaluator(name="nocase", type="exact-match", ignore_case=True),
        Evaluator(name="nospace", type="exact-match", ignore_whitespace=True),
        Evaluator(name="both", type="exact-match", ignore_case=True, ignore_whitespace=True)])
    ev = exp.run().items[0].evaluations
    assert {k: v.score for k, v in ev.items()} == {"strict": 0.0, "nocase": 0.0, "nospace": 0.0, "both": 1.0}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"type": "llm-judgee", "prompt": "x"}, "did you mean 'llm-judge'"),
     ({"type": "banana"}, "use one of"),
     ({}, "needs prompt"),
     ({"type": "function"}, "needs fn"),
     ({"type": "exact-match", "threshold": 2}, "within 0..1"),
     ({"type": "exact-match", "prompt": "x"}, r"\(exact-match\) does not use prompt=; it is for llm-judge"),
     ({"type": "function", "fn": len, "ignore_case": True}, "does not use ignore_case="),
     ({"prompt": "x", "field": "answer"}, r"does not use field=; it is for exact-match, similarity")],
)
def test_evaluator_declaration_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(EvaluatorError, match=message):
        Evaluator(name="e", **kwargs)


def test_exact_match_field_missing_from_an_item_fails_before_the_run(project: Path) -> None:
    calls: list[int] = []
    exp = experiment("nofield", Dataset([{"input": "x"}]), lambda ctx: calls.append(1),
                     evaluators=[Evaluator(name="exact", type="exact-match", field="answer")])
    with pytest.raises(EvaluatorError, match=r"field 'answer'.*item 0"):
        exp.run()
    assert calls == []


@pytest.mark.parametrize(
    ("options", "message"),
    [({"concurency": 3}, "did you mean 'concurrency'"), ({"runs": 0}, "runs must be a positive"),
     ({"timeout": -1}, "timeout must be"), ({"tags": "v1"}, "tags must be a list"),
     ({"evaluators": [Evaluator(name="a", type="exact-match")] * 2}, "used twice"),
     ({"assertions": ["relevance > 0.8"]}, "assertions must come from"),
     ({"runs": 1.5}, "runs must be a positive whole number"), ({"concurrency": 2.5}, "whole number"),
     ({"evaluators": [Evaluator(name="latency", type="exact-match")]}, "taken by the run metric")],
)
def test_experiment_option_errors(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        experiment("bad", DATA, _echo_expected, **options)


def test_gate_on_unknown_metric_fails_before_any_agent_call(project: Path) -> None:
    calls: list[int] = []
    exp = experiment("gated", DATA, lambda ctx: calls.append(1),
                     evaluators=[Evaluator(name="exact", type="exact-match")],
                     assertions=[threshold("exactt", 0.5)])
    with pytest.raises(ConfigError, match=r"metric 'exactt'.*did you mean 'exact'"):
        exp.run()
    assert calls == []


def test_assertions_are_evaluated_and_stored_in_the_report(project: Path) -> None:
    exp = experiment("gates", DATA, lambda ctx: "a0", evaluators=[Evaluator(name="exact", type="exact-match")],
                     assertions=[threshold("exact", 0.5), threshold("latency.p95", 60_000)])
    report = exp.run()
    verdicts = {a.name: a for a in report.assertions}
    assert verdicts["exact >= 0.5"].passed is False and verdicts["exact >= 0.5"].actual == pytest.approx(1 / 6)
    assert verdicts["latency.p95 <= 60000"].passed is True
    assert report.passed is False


def test_overrides_at_run_time(project: Path) -> None:
    report = experiment("over", DATA, _echo_expected, concurrency=2).run(concurrency=4, tags=["nightly"], runs=2)
    assert report.config["concurrency"] == 4 and report.config["runs"] == 2
    assert report.tags == ["nightly"] and report.summary.total_runs == 12


def test_config_defaults_apply(project: Path) -> None:
    (project / "cobalt.toml").write_text("concurrency = 7\ntimeout = 12\n")
    report = experiment("cfg", DATA, _echo_expected).run(config=load_config())
    assert (report.config["concurrency"], report.config["judge_concurrency"], report.config["timeout"]) == (7, 7, 12)


@pytest.mark.anyio
async def test_run_works_inside_a_running_event_loop(project: Path) -> None:
    report = experiment("notebook", DATA, _echo_expected,
                        evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    assert report.summary.scores["exact"].avg == 1.0


def test_a_slow_sync_evaluator_does_not_stall_agent_timeouts(project: Path) -> None:
    released = threading.Event()

    def slow_judge(ctx):
        if ctx.index == 0:  # blocks its worker thread, never the event loop: item 2 sets the event
            return 1.0 if released.wait(5) else 0.0
        return 1.0

    async def agent(ctx):
        if ctx.index == 1:
            await asyncio.sleep(10)  # times out while item 0's evaluator is busy
        if ctx.index == 2:
            await asyncio.sleep(0.3)
            released.set()  # item 2 can only get here if the loop kept running
        return "x"

    try:
        report = experiment("slow-eval", DATA.slice(0, 3), agent, timeout=1.0, concurrency=3,
                            evaluators=[Evaluator(name="f", type="function", fn=slow_judge)]).run()
    finally:
        released.set()
    assert [i.status for i in report.items] == ["ok", "timeout", "ok"]
    assert report.items[0].evaluations["f"].score == 1.0


def test_a_partial_rescore_counts_carried_scores_as_reused_and_no_agent_cost(project: Path) -> None:
    from cobalt_lib.run import RescoreRun, execute, prepare, run_coroutine

    calls: list[int] = []

    def agent(ctx):
        calls.append(ctx.index)
        return {"output": ctx.item["expected_output"], "metadata": {"cost_usd": 0.01, "tokens": 5}}

    exp = experiment("rescored", DATA.slice(0, 3), agent,
                     evaluators=[Evaluator(name="exact", type="exact-match"),
                                 Evaluator(name="f", type="function", fn=lambda ctx: 0.5)])
    first = exp.run()
    plan = prepare(exp, load_config(), RescoreRun(parent_run_id=first.id, outputs=first.items, evaluators=["f"]))
    again = run_coroutine(execute(plan))
    assert calls == [0, 1, 2]  # the agent ran once, for the first run only
    s = again.summary
    assert (s.agent_cost, s.agent_tokens, s.judge_calls, s.cached_scores) == (0.0, 0, 0, 3)
    assert [i.evaluations["exact"].cached for i in again.items] == [True] * 3
    assert again.summary.scores["exact"].avg == 1.0 and again.summary.metrics["cost"].avg == 0.01


def test_timeouts_count_in_latency_coverage_and_pass_rate(project: Path) -> None:
    async def agent(ctx):
        if ctx.index == 3:
            await asyncio.sleep(5)
        return ctx.item["expected_output"]

    report = experiment("slow-tail", DATA.slice(0, 4), agent, timeout=0.3,
                        evaluators=[Evaluator(name="exact", type="exact-match")],
                        assertions=[threshold("latency.max", 250)]).run()
    exact, latency = report.summary.scores["exact"], report.summary.metrics["latency"]
    assert (exact.avg, exact.count, exact.errors) == (1.0, 3, 0)
    assert exact.coverage == pytest.approx(0.75) and exact.pass_rate == pytest.approx(0.75)
    assert latency.count == 4 and latency.max is not None and latency.max >= 300  # the timeout is in
    assert report.assertions[0].passed is False  # a latency gate sees the slow tail


def test_an_error_from_run_carries_no_unrelated_chained_exception(project: Path) -> None:
    from cobalt_lib import MissingApiKeyError

    exp = experiment("keyless", DATA.slice(0, 1), _echo_expected, evaluators=[Evaluator(name="q", prompt="{{output}}")])
    with pytest.raises(MissingApiKeyError) as caught:
        exp.run()
    assert caught.value.__context__ is None and caught.value.__cause__ is None


def test_resume_runs_only_what_is_missing_and_adds_up_working_time(project: Path) -> None:
    from cobalt_lib import Store

    state = {"stop": True}
    calls: list[int] = []

    def agent(ctx):
        calls.append(ctx.index)
        if ctx.index >= 3 and state["stop"]:
            raise KeyboardInterrupt  # as a Ctrl-C would, mid-run
        return ctx.item["expected_output"]

    exp = experiment("resumable", DATA, agent, concurrency=1, evaluators=[Evaluator(name="exact", type="exact-match")])
    with pytest.raises(KeyboardInterrupt):
        exp.run()
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    first = store.runs()[0]
    assert first["status"] == "incomplete" and first["summary"]["total_duration_ms"] > 0
    state["stop"], calls[:] = False, []
    report = exp.run(resume="latest")
    assert calls == [3, 4, 5]
    assert (report.id, report.status, len(report.items), report.passed) == (first["run_id"], "completed", 6, True)
    assert report.summary.total_duration_ms > first["summary"]["total_duration_ms"]
    with pytest.raises(ConfigError, match="already completed"):
        exp.run(resume=report.id)


def test_an_empty_dataset_is_refused_before_the_run(project: Path) -> None:
    (project / "empty.jsonl").write_text("\n\n")
    empty = experiment("empty", Dataset.from_file(project / "empty.jsonl"), _echo_expected)
    with pytest.raises(ConfigError) as caught:
        empty.run()
    assert str(caught.value) == (f"Experiment 'empty' has no items to run: its dataset ({project / 'empty.jsonl'}) "
                                 "is empty; add items, or check the file or filter that built it.")
    assert not (project / ".cobalt" / "results").exists()  # nothing was stored for it
    filtered = experiment("none-left", DATA.filter(lambda item: False), _echo_expected)
    with pytest.raises(ConfigError, match=r"'none-left' has no items to run: its dataset is empty;"):
        filtered.run()


def test_an_async_agent_that_swallows_its_cancellation_is_left_behind_and_the_run_finishes(project: Path) -> None:
    async def stubborn(ctx):
        if ctx.index == 1:
            try:
                await asyncio.sleep(30)
            except BaseException:  # the user's bare `except:` around a retry
                await asyncio.sleep(3)  # bounded, so the test ends even where the timeout cannot stop it
        return ctx.item["expected_output"]

    report = experiment("stubborn", DATA.slice(0, 3), stubborn, timeout=0.2,
                        evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    assert [i.status for i in report.items] == ["ok", "timeout", "ok"]
    assert report.items[1].error == ("the agent did not answer within 200ms; it ignored the cancellation and "
                                     "was left running")
    assert report.summary.scores["exact"].avg == 1.0


def test_an_async_agent_blocking_the_event_loop_is_a_timeout_that_says_why(project: Path) -> None:
    import time

    async def blocking(ctx):
        time.sleep(0.3)  # a blocking call inside async def: no timeout can fire meanwhile
        return ctx.item["expected_output"]

    report = experiment("blocking", DATA.slice(0, 2), blocking, timeout=0.1).run()
    assert [i.status for i in report.items] == ["timeout", "timeout"]
    assert all("the event loop was blocked" in (i.error or "") and "make it a plain def" in (i.error or "")
               for i in report.items)
    assert min(i.latency_ms or 0 for i in report.items) >= 300  # what the user waited, not what the agent claimed


def test_a_function_evaluator_past_the_timeout_is_an_eval_error_and_the_run_goes_on(project: Path) -> None:
    import time

    def slow_sync(ctx):
        time.sleep(3)  # a hung external call, bounded so the test ends even where no timeout applies
        return 1.0

    async def slow_async(ctx):
        await asyncio.sleep(3)
        return 1.0

    report = experiment("slow-evals", DATA.slice(0, 2), _echo_expected, timeout=0.3,
                        evaluators=[Evaluator(name="sync", type="function", fn=slow_sync),
                                    Evaluator(name="async", type="function", fn=slow_async),
                                    Evaluator(name="exact", type="exact-match")]).run()
    for item in report.items:
        assert item.status == "ok" and item.evaluations["exact"].score == 1.0
        for name in ("sync", "async"):
            assert item.evaluations[name].status == "eval-error"
            assert item.evaluations[name].error == "the evaluator did not answer within 300ms"
    assert report.summary.scores["sync"].count == 0 and report.summary.scores["sync"].errors == 2
