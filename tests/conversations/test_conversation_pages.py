"""A conversation in the pages, in Chromium: the item detail draws the transcript with every turn's scores (served
and in a `cobalt report` file), and compare lists where two runs' conversations diverged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from browser import screenshot
from fakellm import FakeLLM, Reply, text

from cobalt_lib import ConversationContext, Evaluator, experiment, load_config
from cobalt_lib.pages import PagesServer
from cobalt_lib.pages._report import write_report

pytestmark = pytest.mark.slow

USER = ["My parcel <b>never</b> came.", "Order 77.", "ok"]
SCENARIO = {"id": "parcel", "role": "a courier's support agent",
            "conversation": {"goal": "find the lost parcel", "persona": "a worried customer", "max_turns": 2}}


def _respond(kind: str, body: dict[str, Any]) -> Reply:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "role-playing a user" in prompt:
        return text(json.dumps({"message": USER[prompt.count("\nassistant: ")], "done": False}))
    return text(json.dumps({"verdicts": [{"turn": 1, "relevant": True, "reason": "asks for the order"},
                                         {"turn": 2, "relevant": False, "reason": "talks about the weather"}]}))


@dataclass
class Runs:
    root: Path
    url: str
    a: str
    b: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> Iterator[Runs]:
    _llm_server.reset()
    _llm_server.respond = _respond
    root = tmp_path_factory.mktemp("conversation-pages")
    (root / "cobalt.toml").write_text(f'[judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
                                      f'base_url = "{_llm_server.openai_url}"\nmax_retries = 1\ntimeout = 5\n')
    config = load_config(root)
    evaluators = [Evaluator("relevant", type="turn_relevancy"),
                  Evaluator("polite", type="contains", value="please", per_turn=True)]

    def agent(version: str) -> Any:
        def answer(ctx: ConversationContext) -> str:
            if ctx.turn == 1:
                return "Sorry to hear that, please give me the order number."
            return "It is sunny today." if version == "b" else "Order 77 is at the depot, please collect it."
        return answer

    try:
        a = experiment("courier", [SCENARIO], agent("a"), evaluators=evaluators).run(config=config).id
        b = experiment("courier", [SCENARIO], agent("b"), evaluators=evaluators).run(config=config).id
    finally:
        _llm_server.reset()
    server = PagesServer(config)
    url = server.start()
    yield Runs(root=root, url=url, a=a, b=b)
    server.stop()


def _check_transcript(page: Any) -> None:
    transcript = page.locator("#detail .transcript")
    transcript.wait_for()
    assert transcript.get_attribute("data-turns") == "2"
    first, second = transcript.locator(".turn[data-turn='1']"), transcript.locator(".turn[data-turn='2']")
    assert first.locator(".message.user .content").inner_text() == USER[0]  # the markup shows as text
    assert second.locator(".message.assistant .content").inner_text() == "It is sunny today."
    assert first.locator(".turn-score[data-evaluator='relevant']").inner_text() == "relevant 1.000"
    chip = second.locator(".turn-score[data-evaluator='relevant']")
    assert chip.inner_text() == "relevant 0.000 ✗" and "fail" in (chip.get_attribute("class") or "")
    assert chip.get_attribute("title") == "talks about the weather"
    assert second.locator(".turn-score[data-evaluator='polite']").inner_text() == "polite 0.000 ✗"
    assert "simulated user openai/gpt-4o-mini: 2 turns asked" in transcript.inner_text()
    assert page.locator("#detail pre.output").count() == 0


def test_the_item_detail_draws_a_conversation_as_its_transcript_with_per_turn_scores(runs: Runs, page: Any) -> None:
    page.goto(f"{runs.url}/runs/{runs.b}")
    row = page.locator("#item-table tr.item-row[data-index='0']")
    assert "2 turns · last answer: It is sunny today." in row.inner_text()
    row.click()
    _check_transcript(page)
    assert page.locator("#detail .evaluation[data-evaluator='relevant'] .reason").inner_text() == (
        "1/2 answers are relevant; not in turn 2")
    screenshot(page, "conversation-transcript")
    report = write_report(load_config(runs.root), runs.b, runs.root / "report.html")
    page.goto(report.as_uri() + "#item=0")  # the self-contained file: its inline script drew it under its CSP
    _check_transcript(page)


def test_compare_shows_from_which_turn_two_runs_conversations_diverged(runs: Runs, page: Any) -> None:
    page.goto(f"{runs.url}/compare?a={quote(runs.a)}&b={quote(runs.b)}")
    title = page.locator("#conversations-title")
    title.wait_for()
    assert "1 paired · 0 replayed identically · 1 diverged" in title.inner_text()
    row = page.locator("#diverged tbody tr")
    assert (row.get_attribute("data-item"), row.get_attribute("data-turn")) == ("0", "2")
    cells = row.locator("td")
    assert cells.nth(2).inner_text() == "turn 2, the assistant's answer"
    assert cells.nth(3).inner_text() == "Order 77 is at the depot, please collect it."
    assert cells.nth(4).inner_text() == "It is sunny today."
    pair = page.locator(".pair[data-index='0']")
    assert pair.locator(".badge.diverged").inner_text() == "diverged at turn 2"
    assert "sunny" in " ".join(pair.locator("pre.output.b ins").all_inner_texts())  # the changed answer, marked
    assert "turn 2\nuser: Order 77." in pair.locator("pre.output.a").inner_text()  # turns, not JSON
    screenshot(page, "conversation-compare")
