"""Conversation items end to end: a scripted and a simulated conversation (the loopback LLM server playing the
user and the judge), per-turn and per-conversation scores, the simulated user replayed from its cache, a changed
agent diverging from its first changed turn, `cobalt show` and `cobalt compare` in process."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from chats import SCENARIO, USER_LINES, agent_v1, agent_v2, route, simulator_calls
from fakellm import FakeLLM, text
from typer.testing import CliRunner

from cobalt_lib import ConversationContext, Dataset, Evaluator, SimulatedUser, Store, experiment, load_config
from cobalt_lib.cli import app
from cobalt_lib.ops import compare_runs
from cobalt_lib.store._history import stored_items


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


SCRIPTED = {"id": "refund", "role": "a polite support agent for ACME",
            "conversation": {"turns": [{"content": "Hello", "expected_output": "Hi! How can I help?"},
                                       {"content": "What is 2+2?", "expected_output": "4"}]}}


def test_a_scripted_conversation_calls_the_agent_per_turn_and_scores_per_turn_and_per_conversation(
        judged_project: Path, llm: FakeLLM) -> None:
    route(llm, {"stays in the role": {"verdicts": [{"turn": 1, "adheres": True, "reason": "polite"},
                                                   {"turn": 2, "adheres": False, "reason": "rude"}]}})
    seen: list[tuple[int, list[dict[str, Any]], str]] = []

    async def agent(ctx: ConversationContext) -> str:
        seen.append((ctx.turn, [dict(m) for m in ctx.messages], ctx.input))
        return {1: "Hi! How can I help?", 2: "5"}[ctx.turn]

    exp = experiment("support", [SCRIPTED], agent, evaluators=[
        Evaluator("exact", type="exact-match", per_turn=True),
        Evaluator("worst", type="contains", value="Hi", per_turn="min"),
        Evaluator("in-role", type="role_adherence"),
        Evaluator("turns", type="function", fn=lambda ctx: len(ctx.output) / 4)])
    report = exp.run(config=load_config())
    item = report.items[0]

    assert seen == [(1, [{"role": "user", "content": "Hello"}], "Hello"),
                    (2, [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi! How can I help?"},
                         {"role": "user", "content": "What is 2+2?"}], "What is 2+2?")]
    assert item.status == "ok"
    assert item.output == [{"role": "user", "content": "Hello"},
                           {"role": "assistant", "content": "Hi! How can I help?"},
                           {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "5"}]
    assert item.metadata["conversation"]["stopped"] == "the script ended"
    assert [r["turn"] for r in item.metadata["conversation"]["turns"]] == [1, 2]
    exact = item.evaluations["exact"]
    assert (exact.score, exact.passed) == (0.5, True)
    assert [(t.turn, t.score) for t in exact.turns or []] == [(1, 1.0), (2, 0.0)]
    worst = item.evaluations["worst"]
    assert (worst.score, worst.passed) == (0.0, False)
    role = item.evaluations["in-role"]
    assert (role.score, role.judge_calls) == (0.5, 1)
    assert role.reason == "1/2 answers stay in the role; not in turn 2"
    assert [(t.turn, t.score, t.reason) for t in role.turns or []] == [(1, 1.0, "polite"), (2, 0.0, "rude")]
    assert item.evaluations["turns"].score == 1.0 and item.evaluations["turns"].turns is None
    assert report.summary.scores["exact"].count == 1  # one conversation, one item for the gates

    stored = stored_items(Store.for_config(load_config()), report.id)[0]  # the store's rows, not the JSON
    assert stored.output == item.output
    assert stored.evaluations["in-role"].turns == role.turns

    assert "2 turns · last answer: 5" in cli("show", "latest")
    shown = cli("show", "latest", "0")
    assert "turn 2 (" in shown and "    user: What is 2+2?" in shown and "    assistant: 5" in shown
    assert "    exact: 0.000 FAIL (" in shown and "    in-role: 0.000 FAIL (rude)" in shown


def test_a_simulated_conversation_replays_from_the_cache_and_a_changed_agent_diverges_from_its_changed_turn(
        judged_project: Path, llm: FakeLLM) -> None:
    route(llm, {"reached their goal": {"score": 0.75, "reason": "refund promised"}})
    evaluators = [Evaluator("goal", type="goal_completion"),
                  Evaluator("short", type="function", per_turn=True, fn=lambda ctx: len(ctx.output) < 30)]
    first = experiment("billing", [SCENARIO], agent_v1, evaluators=evaluators).run(config=load_config())
    item = first.items[0]
    assert item.status == "ok", item.error
    assert [m["content"] for m in item.output if m["role"] == "user"] == USER_LINES
    assert item.metadata["conversation"]["stopped"] == "the turn limit (3) was reached"
    assert item.metadata["conversation"]["simulator"]["calls"] == 3
    assert simulator_calls(llm) == 3
    # the simulated user's calls are cobalt's own spend: counted with the judge's (3 turns + 1 goal judgement)
    assert (first.summary.judge_calls, first.summary.judge_tokens) == (4, 4 * 30)
    assert (item.evaluations["goal"].score, item.evaluations["goal"].reason) == (0.75, "refund promised")
    assert [t.score for t in item.evaluations["short"].turns or []] == [1.0, 1.0, 1.0]
    goal_prompt = next(m["content"] for r in llm.requests for m in r["body"]["messages"]
                       if "reached their goal" in str(m["content"]))
    assert "The user's goal: get the double charge on order 1234 refunded" in goal_prompt
    assert "Turn 2\nuser: Yes, card ending 42.\nassistant: Answer 2: noted." in goal_prompt

    again = experiment("billing", [SCENARIO], agent_v1, evaluators=evaluators).run(config=load_config())
    assert simulator_calls(llm) == 3  # not one more simulator call: every turn came from the cache
    assert again.items[0].metadata["conversation"]["simulator"] == {**item.metadata["conversation"]["simulator"],
                                                                    "calls": 0, "cached": 3, "input_tokens": 0,
                                                                    "output_tokens": 0, "cost_usd": None}
    assert json.dumps(again.items[0].output).encode() == json.dumps(item.output).encode()
    assert (again.summary.judge_calls, again.summary.judge_tokens) == (0, 0)
    store = Store.for_config(load_config())
    assert json.dumps(stored_items(store, again.id)[0].output) == json.dumps(stored_items(store, first.id)[0].output)

    changed = experiment("billing", [SCENARIO], agent_v2, evaluators=evaluators).run(config=load_config())
    assert simulator_calls(llm) == 4  # turns 1 and 2 replayed; turn 3 follows the changed answer: asked anew
    assert changed.items[0].output[:3] == item.output[:3] and changed.items[0].output[3] != item.output[3]

    outcome = compare_runs(load_config(), again.id, changed.id)
    assert outcome.comparison.conversations == 1
    [parted] = outcome.comparison.diverged
    assert (parted.item_id, parted.turn, parted.role, parted.a, parted.b) == (
        "double-charge", 2, "assistant", "Answer 2: noted.", "Answer 2: refunded!")
    assert compare_runs(load_config(), first.id, again.id).comparison.diverged == []
    printed = " ".join(cli("compare", again.id, changed.id).split())
    assert "conversations: 1 paired conversation, 0 replayed identically, 1 diverged" in printed
    assert ("item 0 (double-charge): diverged at turn 2, the assistant's answer: A 'Answer 2: noted.' → "
            "B 'Answer 2: refunded!'") in printed


def test_the_simulated_user_ends_the_conversation_when_its_goal_is_reached(judged_project: Path,
                                                                           llm: FakeLLM) -> None:
    route(llm, end_after=2)
    scenario = {"conversation": {**SCENARIO["conversation"], "max_turns": 5, "opening": "Hi, billing question."}}
    report = experiment("billing", [scenario], agent_v1).run(config=load_config())
    item = report.items[0]
    assert [m["content"] for m in item.output if m["role"] == "user"] == ["Hi, billing question.", USER_LINES[1]]
    assert item.metadata["conversation"]["stopped"] == "the simulated user ended it"
    assert simulator_calls(llm) == 2  # the opening is the item's own: asked for turn 2, then told it is done


def test_a_failing_turn_ends_the_conversation_and_is_the_items_error(judged_project: Path, llm: FakeLLM) -> None:
    def agent(ctx: ConversationContext) -> str:
        if ctx.turn == 2:
            raise ValueError("no idea")
        return "fine"

    report = experiment("support", [SCRIPTED], agent, max_error_rate=1.0).run(config=load_config())
    item = report.items[0]
    assert (item.status, item.error) == ("error", "turn 2: ValueError: no idea")
    assert len(item.output) == 3 and [r["status"] for r in item.metadata["conversation"]["turns"]] == ["ok", "error"]


def test_the_simulated_users_model_is_the_judges_unless_overridden(judged_project: Path, llm: FakeLLM) -> None:
    route(llm)
    experiment("billing", [SCENARIO], agent_v1, simulator=SimulatedUser(model="user-model")).run(config=load_config())
    models = {r["body"]["model"] for r in llm.requests if r["kind"] == "chat"}
    assert models == {"user-model"}


BAD = [
    ({"conversation": []}, "field 'conversation' must be an object with 'turns' (the user's scripted turns) or "
                           "'goal' (a simulated user's scenario), got list []."),
    ({"conversation": {"turns": ["hi"], "goal": "x"}}, "field 'conversation' has both 'turns' and 'goal'; give the "
                                                       "user's scripted turns or a simulated user's goal, not both."),
    ({"conversation": {"turns": []}}, "field 'conversation.turns' must be a non-empty list of the user's messages, "
                                      "got list []."),
    ({"conversation": {"turns": ["hi", 3]}}, "field 'conversation.turns[1]' must be the user's message (a non-empty "
                                             "string, or an object with 'content' and 'expected_output'), got int 3."),
    ({"conversation": {"goal": "refund", "max_turns": 0}}, "field 'conversation.max_turns' must be a whole number "
                                                           "from 1 to 50 (the most user turns), got 0."),
    ({"conversation": {"goal": "refund", "persona": "x", "max_turn": 3}},
     "field 'conversation' has an unknown key 'max_turn'; did you mean 'max_turns'?"),
    ({"conversation": {"persona": "x"}}, "field 'conversation' needs 'turns' (a list of the user's messages) or "
                                         "'goal' (what a simulated user wants), and has neither."),
]


@pytest.mark.parametrize(("item", "sentence"), BAD)
def test_a_bad_conversation_item_is_one_sentence_naming_the_file_line_and_field(
        tmp_path: Path, item: dict[str, Any], sentence: str) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text(json.dumps({"conversation": {"turns": ["fine"]}}) + "\n" + json.dumps(item) + "\n")
    from cobalt_lib import DatasetError

    with pytest.raises(DatasetError) as raised:
        Dataset.from_file(path)
    assert str(raised.value) == f"{path}, line 2: {sentence}"


def test_bad_conversation_items_in_a_json_file_a_csv_and_in_memory_are_refused_before_any_agent_call(
        project: Path) -> None:
    from cobalt_lib import DatasetError

    (project / "chats.json").write_text('[\n  {"conversation": {"turns": ["ok"]}},\n'
                                        '  {"conversation": {"goal": ""}}\n]')
    with pytest.raises(DatasetError, match=r"chats.json, line 3: field 'conversation.goal' must be a non-empty "):
        Dataset.from_file(project / "chats.json")
    (project / "chats.csv").write_text('id,conversation\na,"{""turns"": [""hi""]}"\nb,"{""turns"": 1}"\n')
    with pytest.raises(DatasetError, match=r"chats.csv, line 3: field 'conversation.turns' must be a non-empty list"):
        Dataset.from_file(project / "chats.csv")
    calls: list[int] = []
    exp = experiment("bad", [{"conversation": {"turns": ["ok"]}}, {"conversation": {"turn": ["x"]}}],
                     lambda ctx: calls.append(1) or "x")
    with pytest.raises(DatasetError, match=r"^dataset item 1: field 'conversation' has an unknown key 'turn'; did "
                                           r"you mean 'turns'\?$"):
        exp.run(config=load_config())
    assert calls == []


def test_a_per_turn_evaluator_that_a_turn_cannot_feed_is_an_error_before_any_agent_call(project: Path) -> None:
    from cobalt_lib import EvaluatorError

    exp = experiment("support", [{"conversation": {"turns": ["Hello", {"content": "2+2?", "expected_output": "4"}]}}],
                     lambda ctx: "x", evaluators=[Evaluator("exact", type="exact-match", per_turn=True)])
    with pytest.raises(EvaluatorError, match=r"lacks .*'exact' is per turn: this is turn 1 of item 0's conversation"):
        exp.run(config=load_config())
    with pytest.raises(EvaluatorError, match=r"scores conversations, and dataset item 0 is not one"):
        experiment("plain", [{"input": "q"}], lambda ctx: "x",
                   evaluators=[Evaluator("goal", type="goal_completion", goal="x")]).run(config=load_config())
    with pytest.raises(EvaluatorError, match=r"per_turn='max' is not valid"):
        Evaluator("exact", type="exact-match", per_turn="max")


def test_a_simulated_conversation_without_the_models_key_stops_before_any_agent_call(project: Path) -> None:
    from cobalt_lib import MissingApiKeyError

    calls: list[int] = []
    exp = experiment("billing", [{"input": "plain"}, SCENARIO], lambda ctx: calls.append(1) or "x")
    with pytest.raises(MissingApiKeyError, match=r"^The simulated user uses the openai provider but OPENAI_API_KEY is "
                                                 r"not set"):
        exp.run(config=load_config())
    assert calls == []


def test_the_simulated_users_prompt_is_the_one_documented() -> None:
    from cobalt_lib.conversations import _simulator

    doc = (Path(__file__).parents[2] / "docs" / "conversations.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- prompt: conversations._simulator.PROMPT -->\n```text\n(.*?)\n```", doc, re.DOTALL)
    assert block is not None, "docs/conversations.md must show the simulated user's prompt"
    assert block.group(1) == _simulator.PROMPT.replace("{{", "{").replace("}}", "}")
    assert f'(system prompt: "{_simulator.SYSTEM_PROMPT}")' in doc


def test_knowledge_retention_counts_the_answers_that_forget_and_a_short_verdict_list_is_an_eval_error(
        judged_project: Path, llm: FakeLLM) -> None:
    route(llm, {"remembers what the user told it": {"verdicts": [
        {"turn": 1, "forgets": False, "reason": "first answer"},
        {"turn": 2, "forgets": "yes", "reason": "asked for the order number again"}]}})
    exp = experiment("support", [SCRIPTED], lambda ctx: "What is your order number?",
                     evaluators=[Evaluator("memory", type="knowledge_retention")])
    memory = exp.run(config=load_config()).items[0].evaluations["memory"]
    assert (memory.score, memory.reason) == (0.5, "1/2 answers retain what the user said; not in turn 2")
    assert [(t.turn, t.score, t.passed, t.reason) for t in memory.turns or []] == [
        (1, 1.0, True, "first answer"), (2, 0.0, False, "asked for the order number again")]
    prompt = next(m["content"] for r in llm.requests for m in r["body"]["messages"]
                  if "remembers what the user told it" in str(m["content"]))
    assert "Turn 1\nuser: Hello\nassistant: What is your order number?\nTurn 2\nuser: What is 2+2?" in prompt
    assert "with exactly 2 verdicts" in prompt

    route(llm, {"relevant: it addresses": {"verdicts": [{"turn": 1, "relevant": True}]}})
    relevant = experiment("support", [SCRIPTED], lambda ctx: "Sure.",
                          evaluators=[Evaluator("relevant", type="turn_relevancy")]).run(config=load_config())
    ev = relevant.items[0].evaluations["relevant"]
    assert ev.status == "eval-error" and ev.judge_calls == 2  # one verdict for two answers, then the stricter retry
    assert "'verdicts' has 1 entries where 2 were asked for" in (ev.error or "")


def test_a_per_turn_llm_judge_reads_each_turns_message_and_answer(judged_project: Path, llm: FakeLLM) -> None:
    route(llm, {"Judge the answer": {"score": 0.9, "reason": "on topic"}})
    judge = Evaluator("on-topic", prompt="Judge the answer.\nUser: {{input}}\nAnswer: {{output}}", per_turn=True)
    exp = experiment("support", [SCRIPTED], lambda ctx: f"re: {ctx.input}", evaluators=[judge])
    ev = exp.run(config=load_config()).items[0].evaluations["on-topic"]
    assert (ev.score, ev.judge_calls, [t.reason for t in ev.turns or []]) == (0.9, 2, ["on topic", "on topic"])
    prompts = sorted(str(m["content"]) for r in llm.requests for m in r["body"]["messages"]
                     if "Judge the answer" in str(m["content"]))
    assert prompts == ["Judge the answer.\nUser: Hello\nAnswer: re: Hello",
                       "Judge the answer.\nUser: What is 2+2?\nAnswer: re: What is 2+2?"]
    again = exp.run(config=load_config()).items[0].evaluations["on-topic"]
    assert (again.score, again.cached, again.judge_calls) == (0.9, True, 0)


def test_an_agent_answering_with_a_json_value_is_held_as_text_and_scored_as_the_value(project: Path) -> None:
    def agent(ctx: ConversationContext) -> dict[str, Any]:
        return {"output": {"answer": ctx.turn}, "metadata": {"model": "m1", "tokens": 5}}

    exact = Evaluator("answer", type="function", per_turn=True,
                      fn=lambda ctx: ctx.output == {"answer": ctx.item["turn"]})
    item = experiment("json", [SCRIPTED], agent, evaluators=[exact]).run(config=load_config()).items[0]
    assert item.output[1] == {"role": "assistant", "content": '{"answer": 1}'}
    assert item.evaluations["answer"].score == 1.0
    assert item.tokens == 10 and item.metadata["conversation"]["turns"][0]["metadata"] == {"model": "m1", "tokens": 5}


def test_cobalt_run_on_a_bad_conversation_file_exits_2_with_the_sentence(project: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from cobalt_lib.cli import main

    (project / "chats.jsonl").write_text(json.dumps({"conversation": {"goal": "refund", "max_turns": 99}}) + "\n")
    (project / "chats.cobalt.py").write_text(
        "from cobalt_lib import Dataset, experiment\n"
        "experiment('chats', Dataset.from_file('chats.jsonl'), lambda ctx: 'x')\n")
    with pytest.raises(SystemExit) as exited:
        main(["run", "chats.cobalt.py"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().endswith(
        "chats.jsonl, line 1: field 'conversation.max_turns' must be a whole number from 1 to 50 (the most user "
        "turns), got 99.")


def test_a_run_judging_in_batches_still_asks_the_simulated_user_at_once(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from cobalt_lib.llm._cache import ResponseCache
    from cobalt_lib.llm._judge import Judge
    from cobalt_lib.run._conversation import interactive_judge

    judge = Judge(ResponseCache(tmp_path, 60.0), 2)
    session: Any = SimpleNamespace(judge=judge, plan=SimpleNamespace(judge_concurrency=2))
    assert interactive_judge(session) is judge  # no batch: the run's judge itself
    judge.batch = object()  # type: ignore[attr-defined]  # what a run with `[judge] batch` sets
    asking = interactive_judge(session)
    assert asking is not judge and getattr(asking, "batch", None) is None
    assert (asking.cache, asking.clients) == (judge.cache, judge.clients) and interactive_judge(session) is asking


def test_a_simulated_user_that_gives_no_usable_message_ends_the_conversation_as_the_items_error(
        judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = lambda kind, body: text("I would say hello, I guess.")
    report = experiment("billing", [SCENARIO], agent_v1, max_error_rate=1.0).run(config=load_config())
    item = report.items[0]
    assert (item.status, item.output) == ("error", [])
    assert item.error == ("turn 1: the simulated user gave no usable message: unusable judge answer after a stricter "
                          "retry: no JSON object with a 'message' field was found")
    assert llm.count("chat") == 2  # the answer, then the stricter retry; nothing cached
    assert item.metadata["conversation"]["simulator"]["calls"] == 2
